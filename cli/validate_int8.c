/* kiln validate MODEL --int8 FILE.qparams --per-layer: how much each quantized layer of the
 * int8 bundle loses against float (docs/int8.md). No Python and no ONNX Runtime: Kiln
 * builds the float model with every intermediate exposed (as kiln calibrate does) and the
 * int8 model as kiln compile --int8 builds it, exposing, after the quantize pass, each
 * uint8 tensor it made (a layer's output, "v.q") as an extra output; both run on the same
 * samples (.npy/.npz files, cli/samples.c, or seeded uniform [0,1) ones for models whose
 * inputs are all float32) and each int8 tensor, dequantized, is
 * compared with its float twin: SQNR = 10 log10(sum f^2 / sum (f - q)^2), cosine, the
 * largest error in quantization steps. The table lists the worst layer first. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "driver/kiln.h"
#include "driver/qparams.h"
#include "passes/debug_outputs.h"
#include "progress.h"


#define PL_MAX_RANK 8
#define PL_DEFAULT_SAMPLES 8 /* random samples when no --inputs folder is given */
#define PL_MAX_INPUTS 4      /* int8 inputs of a layer: QConv's x and residual, QAdd's two */

typedef struct PlLayer {
    const char *tensor; /* the float tensor's name (the model's) */
    const char *node, *op; /* the int8 node that writes it */
    uint32_t f_out, q_out; /* output indices in the float and int8 bundles */
    float scale;
    int32_t zero_point;
    bool nhwc; /* the int8 tensor is stored (N,H,W,C), the float one (N,C,H,W) */
    int64_t dims[PL_MAX_RANK], numel; /* the float tensor's */
    int rank;
    double sff, sqq, sfq, see, max_err; /* sums over every sample */
    uint32_t value;                       /* the int8 tensor in the int8 graph */
    int32_t inputs[PL_MAX_INPUTS];        /* the layers it reads (through views), -1: none */
} PlLayer;

typedef struct Pl {
    const char *model, *qparams, *inputs, *cc, *keep;
    int64_t samples, seed;
    bool quiet;
    char work[64];
    CliFeed feed;
    uint32_t f_n_out, q_n_out;
    const IrGraph *f_graph; /* for the float names */
    PlLayer *layers;
    uint32_t n_layers;
    CliProgress progress;
} Pl;

/* Builds bundle work/NAME (NAME.c + its test main) into work/NAME/run. */
static bool build(Pl *p, const char *name) {
    char *dir = cli_cat3(p->work, "/", name);
    char *src = cli_cat3(dir, "/", "pl.c"), *main_src = cli_cat3(dir, "/", "pl_test_main.c");
    char *exe = cli_cat3(dir, "/", "run"), *log = cli_cat3(dir, "/", "cc.log");
    char *argv[] = {(char *)p->cc, "-O2", "-std=c99", "-march=native", "-o", exe, src, main_src, "-lm", NULL};
    cli_progress_show(&p->progress, "building the %s bundle with %s", name, p->cc);
    int st = dir && src && main_src && exe && log ? cli_run_logged(argv, log) : -1;
    cli_progress_end(&p->progress);
    if (st != 0)
        fprintf(stderr, "kiln validate: error: '%s' could not build the %s bundle (exit %d; log: %s)\n",
                p->cc, name, st, log ? log : "?");
    free(dir), free(src), free(main_src), free(exe), free(log);
    return st == 0;
}

static bool is_view(IrOp op) {
    return op == IR_OP_RESHAPE || op == IR_OP_FLATTEN || op == IR_OP_SQUEEZE ||
           op == IR_OP_UNSQUEEZE || op == IR_OP_TRANSPOSE || op == IR_OP_IDENTITY;
}

/* The layer whose tensor v is, looking through views; -1 when none. */
static int32_t layer_of(const Pl *p, const IrGraph *g, uint32_t v) {
    for (int hops = 0; hops < 8 && v != IR_NONE; hops++) {
        for (uint32_t k = 0; k < p->n_layers; k++)
            if (p->layers[k].value == v) return (int32_t)k;
        uint32_t pr = g->values[v].producer;
        if (g->values[v].kind != IR_VALUE_NODE || pr == IR_NONE || !is_view((IrOp)g->nodes[pr].op))
            return -1;
        v = g->nodes[pr].inputs[0];
    }
    return -1;
}

/* After the int8 graph's passes: every uint8 tensor with parameters that an int8 kernel of
 * the quantize pass writes for a float tensor the float bundle exposes ("v.q" for v)
 * becomes an output (views of one are the same numbers: left out). */
static void expose_int8(IrGraph *g, void *arg) {
    Pl *p = arg;
    const IrGraph *f = p->f_graph;
    p->layers = calloc(g->n_values ? g->n_values : 1, sizeof *p->layers);
    if (!p->layers) return;
    for (uint32_t v = 0; v < g->n_values; v++) {
        const IrValue *val = &g->values[v];
        size_t len = val->name ? strlen(val->name) : 0;
        if (val->kind != IR_VALUE_NODE || val->producer == IR_NONE || val->type.dtype != IR_DTYPE_U8 ||
            !val->quant || val->quant->n != 1 || len < 3 || strcmp(val->name + len - 2, ".q") != 0 ||
            g->nodes[val->producer].dead || !ir_type_is_static(&val->type) ||
            val->type.rank > PL_MAX_RANK || is_view((IrOp)g->nodes[val->producer].op))
            continue;
        uint32_t fo = IR_NONE;
        for (uint32_t o = 0; o < f->n_outputs && fo == IR_NONE; o++) {
            const char *fn = f->values[f->outputs[o]].name;
            if (fn && strlen(fn) == len - 2 && strncmp(fn, val->name, len - 2) == 0) fo = o;
        }
        if (fo == IR_NONE) continue;
        const IrType *ft = &f->values[f->outputs[fo]].type;
        if (ft->dtype != IR_DTYPE_F32 || ir_type_numel(ft) != ir_type_numel(&val->type)) continue;
        bool nhwc = val->type.layout == IR_LAYOUT_NHWC;
        if (nhwc && ft->rank != 4) continue;
        PlLayer *l = &p->layers[p->n_layers++];
        l->tensor = f->values[f->outputs[fo]].name;
        l->node = g->nodes[val->producer].name ? g->nodes[val->producer].name : "";
        l->op = ir_op_name((IrOp)g->nodes[val->producer].op);
        l->f_out = fo;
        l->q_out = g->n_outputs;
        l->scale = val->quant->scales[0];
        l->zero_point = val->quant->zero_points ? val->quant->zero_points[0] : 0;
        l->nhwc = nhwc;
        l->rank = ft->rank;
        for (int i = 0; i < ft->rank; i++) l->dims[i] = ft->dims[i];
        l->numel = ir_type_numel(ft);
        l->value = v;
        ir_graph_add_output(g, v);
    }
    for (uint32_t k = 0; k < p->n_layers; k++) {
        const IrNode *n = &g->nodes[g->values[p->layers[k].value].producer];
        int m = 0;
        for (uint32_t i = 0; i < PL_MAX_INPUTS; i++) p->layers[k].inputs[i] = -1;
        for (uint32_t i = 0; i < n->n_inputs && m < PL_MAX_INPUTS; i++) {
            int32_t from = n->inputs[i] != IR_NONE ? layer_of(p, g, n->inputs[i]) : -1;
            if (from >= 0) p->layers[k].inputs[m++] = from;
        }
    }
}

static bool compile_both(Pl *p, IrGraph *gf, IrGraph *gq) {
    Diag d;
    diag_init(&d);
    BundleOptions bo = {.name = "pl", .test_main = true, .model_path = p->model};
    pass_expose_intermediates(gf);
    char *fdir = cli_cat3(p->work, "/", "float"), *qdir = cli_cat3(p->work, "/", "int8");
    cli_progress_show(&p->progress, "compiling the float model");
    bool ok = fdir && qdir && kiln_compile_graph(gf, "c", &bo, fdir, &d);
    p->f_graph = gf;
    if (ok) {
        cli_progress_show(&p->progress, "compiling the int8 model");
        ok = kiln_compile_graph_then(gq, "c", &bo, qdir, &d, expose_int8, p);
    }
    cli_progress_end(&p->progress);
    if (!ok || diag_has_errors(&d)) diag_print(&d, stderr, p->model);
    diag_free(&d);
    free(fdir);
    free(qdir);
    if (!ok) return false;
    if (!p->n_layers) {
        fprintf(stderr, "kiln validate: error: %s: no layer runs in int8 with %s\n", p->model, p->qparams);
        return false;
    }
    p->f_n_out = gf->n_outputs;
    p->q_n_out = gq->n_outputs;
    return build(p, "float") && build(p, "int8");
}

/* Runs bundle NAME on work/in_I.bin; its outputs to work/NAME_K.bin. */
static bool run_bundle(Pl *p, const char *name, uint32_t n_out, const char *sample) {
    char **argv = calloc(n_out + p->feed.n + 3, sizeof *argv);
    char *dir = cli_cat3(p->work, "/", name), *log = cli_cat3(p->work, "/", "run.log");
    bool ok = argv && dir && log;
    uint32_t a = 0;
    if (ok) {
        argv[a++] = cli_cat3(dir, "/", "run");
        argv[a++] = cli_cat3(dir, "/", "pl_weights.bin");
        for (uint32_t i = 0; i < p->feed.n; i++) argv[a++] = cli_feed_arg(p->work, i);
        for (uint32_t o = 0; o < n_out; o++) {
            char file[48];
            snprintf(file, sizeof file, "%s_%u.bin", name, o);
            argv[a++] = cli_cat3(p->work, "/", file);
        }
        int st = cli_run_logged(argv, log);
        if (st != 0) {
            fprintf(stderr, "kiln validate: error: %s: the %s bundle failed (exit %d)\n", sample, name, st);
            ok = false;
        }
    }
    for (uint32_t i = 0; argv && i < a; i++) free(argv[i]);
    free(argv);
    free(dir);
    free(log);
    return ok;
}

static bool read_file(const char *work, const char *name, uint32_t o, void *buf, size_t bytes) {
    char file[48];
    snprintf(file, sizeof file, "/%s_%u.bin", name, o);
    char *path = cli_cat3(work, file, "");
    FILE *f = path ? fopen(path, "rb") : NULL;
    bool ok = f && fread(buf, 1, bytes, f) == bytes;
    if (f) fclose(f);
    free(path);
    return ok;
}

static void add_sample(Pl *p, float *fbuf, uint8_t *qbuf) {
    for (uint32_t k = 0; k < p->n_layers; k++) {
        PlLayer *l = &p->layers[k];
        if (!read_file(p->work, "float", l->f_out, fbuf, (size_t)l->numel * sizeof *fbuf) ||
            !read_file(p->work, "int8", l->q_out, qbuf, (size_t)l->numel))
            continue;
        int64_t C = l->nhwc ? l->dims[1] : 1, HW = l->nhwc ? l->dims[2] * l->dims[3] : 1;
        for (int64_t i = 0; i < l->numel; i++) {
            int64_t qi = i;
            if (l->nhwc) { /* float index (n, c, hw) -> int8 index (n, hw, c) */
                int64_t n = i / (C * HW), c = i / HW % C, s = i % HW;
                qi = (n * HW + s) * C + c;
            }
            double f = fbuf[i], q = ((double)qbuf[qi] - l->zero_point) * l->scale, e = f - q;
            l->sff += f * f, l->sqq += q * q, l->sfq += f * q, l->see += e * e;
            if (fabs(e) > l->max_err) l->max_err = fabs(e);
        }
    }
}

static double sqnr_db(const PlLayer *l) {
    if (l->see == 0.0) return INFINITY;
    if (l->sff == 0.0) return -INFINITY;
    return 10.0 * log10(l->sff / l->see);
}

static int cmp_layer(const void *a, const void *b) {
    double x = sqnr_db(a), y = sqnr_db(b);
    return x < y ? -1 : x > y ? 1 : 0;
}

/* How many dB layer l loses against the int8 layers it reads (the worst of them): its own
 * share of the error; NaN when it reads none (the input's quantization only). */
static double drop_db(const Pl *p, const PlLayer *l) {
    double in = INFINITY;
    bool any = false;
    for (int i = 0; i < PL_MAX_INPUTS && l->inputs[i] >= 0; i++) {
        double s = sqnr_db(&p->layers[l->inputs[i]]);
        if (s < in) in = s;
        any = true;
    }
    double out = sqnr_db(l);
    if (!any || isinf(in) || isinf(out)) return NAN;
    return in - out;
}

static void print_table(Pl *p, int64_t n_samples) {
    /* the drops first: sorting renumbers the layers the inputs point at */
    double *drop = malloc((p->n_layers ? p->n_layers : 1) * sizeof *drop);
    if (!drop) return;
    for (uint32_t k = 0; k < p->n_layers; k++) drop[k] = drop_db(p, &p->layers[k]);
    uint32_t *order = malloc((p->n_layers ? p->n_layers : 1) * sizeof *order);
    if (!order) {
        free(drop);
        return;
    }
    for (uint32_t k = 0; k < p->n_layers; k++) order[k] = k;
    for (uint32_t a = 1; a < p->n_layers; a++) /* insertion sort by SQNR: a few hundred layers */
        for (uint32_t b = a; b > 0 && cmp_layer(&p->layers[order[b]], &p->layers[order[b - 1]]) < 0; b--) {
            uint32_t t = order[b];
            order[b] = order[b - 1], order[b - 1] = t;
        }
    int wl = 5;
    for (uint32_t k = 0; k < p->n_layers; k++) {
        int a = (int)(strlen(p->layers[k].node) + strlen(p->layers[k].op) + 3);
        if (a > wl) wl = a;
    }
    if (wl > 48) wl = 48;
    printf("int8 against float, per layer, worst first (%u layers, %lld sample%s; SQNR = 10 "
           "log10(sum f^2 / sum (f - q)^2))\n\n", p->n_layers, (long long)n_samples,
           n_samples == 1 ? "" : "s");
    printf("%4s  %8s  %8s  %9s  %12s  %-*s  %s\n", "rank", "SQNR dB", "own dB", "cosine",
           "max err/step", wl, "layer", "tensor");
    for (uint32_t r = 0; r < p->n_layers; r++) {
        uint32_t k = order[r];
        const PlLayer *l = &p->layers[k];
        char layer[256], sq[16], own[16];
        if (isnan(drop[k])) snprintf(own, sizeof own, "-");
        else snprintf(own, sizeof own, "%.2f", drop[k]);
        snprintf(layer, sizeof layer, "%s (%s)", l->node, l->op);
        double s = sqnr_db(l), den = sqrt(l->sff * l->sqq);
        double cosine = den > 0 ? l->sfq / den : (l->sff == l->sqq ? 1.0 : 0.0);
        if (isinf(s)) snprintf(sq, sizeof sq, "%s", s > 0 ? "exact" : "-inf");
        else snprintf(sq, sizeof sq, "%.2f", s);
        printf("%4u  %8s  %8s  %9.6f  %12.2f  %-*s  %s\n", r + 1, sq, own, cosine,
               l->max_err / l->scale, wl, layer, l->tensor);
    }
    printf("\nSQNR: the tensor against float, every error before it included; own: the dB this "
           "layer loses against the int8 layers it reads (its own rounding and clipping).\n");
    free(order);
    free(drop);
}

/* Writes sample k of every input to work/in_I.bin: from the sets, or seeded uniform [0,1)
 * values (float32 inputs only; checked before). */
static bool make_sample(Pl *p, int64_t k) {
    for (uint32_t in = 0; !p->feed.sets && in < p->feed.n; in++) {
        float *x = p->feed.buf[in];
        uint64_t s = (uint64_t)p->seed * 0x9E3779B97F4A7C15ull + (uint64_t)k + 1 + ((uint64_t)in << 32);
        for (int64_t i = 0; i < ir_type_numel(&p->feed.in[in].type); i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull; /* PCG's LCG step */
            x[i] = (float)((s >> 40) * (1.0 / 16777216.0));
        }
    }
    return cli_feed_write("validate", &p->feed, k, p->work);
}

int cli_validate_int8_run(int argc, char **argv) {
    Pl p = {.cc = "cc", .samples = 0, .seed = 0};
    CliDims dims = {0};
    bool per_layer = false;
    int rc = CLI_EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int m;
        char *end;
        if (strcmp(argv[i], "--per-layer") == 0) {
            per_layer = true;
        } else if (strcmp(argv[i], "--quiet") == 0) {
            p.quiet = true;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--int8", &v)) != 0) {
            if (m < 0) goto out;
            p.qparams = v;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--inputs", &v)) != 0) {
            if (m < 0) goto out;
            p.inputs = v;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--cc", &v)) != 0) {
            if (m < 0) goto out;
            p.cc = v;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--keep", &v)) != 0) {
            if (m < 0) goto out;
            p.keep = v;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--samples", &v)) != 0) {
            if (m < 0) goto out;
            p.samples = strtoll(v, &end, 10);
            if (*end || p.samples < 1) {
                cli_usage_error("validate", "--samples wants a positive count, not '%s'", v);
                goto out;
            }
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--seed", &v)) != 0) {
            if (m < 0) goto out;
            p.seed = strtoll(v, &end, 10);
            if (*end || p.seed < 0) {
                cli_usage_error("validate", "--seed wants a non-negative number, not '%s'", v);
                goto out;
            }
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--dim", &v)) != 0) {
            if (m < 0 || !cli_dims_add("validate", &dims, v)) goto out;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--shape", &v)) != 0) {
            if (m < 0 || !cli_shape_add("validate", &dims, v)) goto out;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            cli_usage_error("validate", "'%s' does not go with --int8 (it takes --per-layer, "
                            "--inputs, --samples, --seed, --cc, --keep, --dim, --shape, --quiet)", argv[i]);
            goto out;
        } else if (!p.model) {
            p.model = argv[i];
        } else {
            cli_usage_error("validate", "more than one model given ('%s')", argv[i]);
            goto out;
        }
    }
    if (!p.model || !p.qparams || !per_layer) {
        cli_usage_error("validate", "%s", !p.model ? "no MODEL given" : !p.qparams ? "--int8 wants a FILE.qparams"
                                          : "--int8 goes with --per-layer (the per-layer int8 report)");
        goto out;
    }
    rc = CLI_EXIT_MODEL;
    IrGraph *gf = cli_load_model("validate", p.model, &dims, &rc);
    IrGraph *gq = gf ? cli_load_model("validate", p.model, &dims, &rc) : NULL;
    int64_t n_files = 0;
    float *fbuf = NULL;
    uint8_t *qbuf = NULL;
    if (!gq) goto done;
    rc = CLI_EXIT_MODEL;
    for (uint32_t i = 0; !p.inputs && i < gf->n_inputs; i++)
        if (gf->values[gf->inputs[i]].type.dtype != IR_DTYPE_F32) {
            fprintf(stderr, "kiln validate: error: %s: input '%s' is not float32: --per-layer takes "
                    "its samples from --inputs\n", p.model, gf->values[gf->inputs[i]].name);
            goto done;
        }
    {
        Diag d;
        diag_init(&d);
        char sha[65];
        bool qok = qparams_apply_file(gq, p.qparams, kiln_file_sha256(p.model, sha) ? sha : NULL, &d);
        diag_print(&d, stderr, p.model);
        diag_free(&d);
        if (!qok) goto done;
    }
    if (!cli_feed_open("validate", p.inputs, gf, p.model, &p.feed)) goto done;
    if (p.inputs) n_files = p.samples && p.samples < p.feed.n_samples ? p.samples : p.feed.n_samples;
    else n_files = p.samples ? p.samples : PL_DEFAULT_SAMPLES;
    if (p.keep) {
        snprintf(p.work, sizeof p.work, "%s", p.keep);
        if (!cli_mkdir_parents(p.keep) || (mkdir(p.keep, 0777) != 0 && errno != EEXIST)) {
            fprintf(stderr, "kiln validate: error: cannot create %s: %s\n", p.keep, strerror(errno));
            p.work[0] = 0;
            goto done;
        }
    } else {
        snprintf(p.work, sizeof p.work, "/tmp/kiln-validate-XXXXXX");
        if (!mkdtemp(p.work)) {
            fprintf(stderr, "kiln validate: error: cannot make a work folder: %s\n", strerror(errno));
            p.work[0] = 0;
            goto done;
        }
    }
    cli_progress_init(&p.progress, "validate", p.quiet);
    if (!compile_both(&p, gf, gq)) goto done;
    int64_t biggest = 1;
    for (uint32_t k = 0; k < p.n_layers; k++)
        if (p.layers[k].numel > biggest) biggest = p.layers[k].numel;
    fbuf = malloc((size_t)biggest * sizeof *fbuf);
    qbuf = malloc((size_t)biggest);
    if (!fbuf || !qbuf) goto done;
    bool ok = true;
    for (int64_t k = 0; ok && k < n_files; k++) {
        cli_progress_show(&p.progress, "sample %lld of %lld", (long long)k + 1, (long long)n_files);
        const char *name = p.feed.sets ? p.feed.sets[0].v[k].path : "a random sample";
        ok = make_sample(&p, k);
        ok = ok && run_bundle(&p, "float", p.f_n_out, name) && run_bundle(&p, "int8", p.q_n_out, name);
        if (ok) add_sample(&p, fbuf, qbuf);
    }
    cli_progress_end(&p.progress);
    if (!ok) goto done;
    print_table(&p, n_files);
    rc = CLI_EXIT_OK;
done:
    if (p.work[0] && !p.keep) cli_remove_work(p.work);
    cli_feed_free(&p.feed);
    free(fbuf), free(qbuf);
    free(p.layers);
    if (gf) ir_graph_free(gf);
    if (gq) ir_graph_free(gq);
out:
    cli_dims_free(&dims);
    return rc;
}
