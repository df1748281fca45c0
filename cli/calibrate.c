/* kiln calibrate: the activation ranges of a model over a calibration set, written as a
 * .qparams file for `kiln compile --int8` (docs/int8.md). No Python and no ONNX Runtime:
 * Kiln compiles the float model itself, every intermediate exposed as an output
 * (passes/debug_outputs.h), builds it with the system C compiler, and runs it on each
 * sample; the statistics stream (driver/qrange.h), two passes over the samples for the
 * histogram methods. Samples (cli/samples.c): .npy/.npz files, one sample each or a batch
 * along a first axis; a model of several inputs (token ids and a mask, say) takes .npz files
 * with a member per input. Float32 inputs get ranges; other inputs are only fed. Errors
 * name the file and the tensor; the .qparams appears only when everything succeeded. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "driver/kiln.h"
#include "driver/qrange.h"
#include "passes/debug_outputs.h"
#include "progress.h"


const char cli_calibrate_help[] =
    "usage: kiln calibrate MODEL --data DIR -o FILE.qparams\n"
    "                      [--method minmax|percentile[:P]|entropy|mse] [--samples N]\n"
    "                      [--cc CC] [--dim NAME=VALUE]... [--shape INPUT=DIMS]... [--quiet]\n"
    "\n"
    "Runs MODEL (float) on the samples in DIR and writes the quantization parameters of\n"
    "its input and every computed float tensor to FILE.qparams, for kiln compile --int8.\n"
    "Kiln runs the model itself: it compiles it with every intermediate exposed and builds\n"
    "that with the C compiler. DIR is a folder of .npy or .npz files (name order) or one\n"
    "such file: a .npy holds one sample (of the input's type and shape) or N along a first\n"
    "axis; a .npz (numpy.savez) the same under each input's name (a model of one input:\n"
    "or as its only member). A model of several inputs takes .npz files.\n"
    "\n"
    "options:\n"
    "  --data DIR|FILE       the calibration samples\n"
    "  -o, --output FILE     the .qparams file (written only on success)\n"
    "  --method M            minmax (default), percentile[:P] (each tail cut at 100-P %,\n"
    "                        default 99.99), entropy (least KL divergence, as TensorRT),\n"
    "                        mse (least squared quantization error)\n"
    "  --samples N           use the first N samples only\n"
    "  --cc CC               the C compiler (default cc)\n"
    "  --dim, --shape        as for kiln compile\n"
    "  --quiet               no progress line\n";

typedef struct Cal {
    const char *model, *data, *out, *cc;
    QRangeMethod method;
    double percentile;
    int64_t max_samples;
    char work[64];
    int64_t n_samples; /* used: the set's, or the first --samples of them */
    /* the compiled program's outputs: names, element counts, which are calibrated */
    uint32_t n_out;
    char **out_name;
    int64_t *out_numel;
    bool *tracked;
    QRange *ranges; /* per output */
    CliFeed feed;
    QRange *in_ranges; /* per input (float32 ones only are used) */
    CliProgress progress;
} Cal;

/* Runs the program on sample k and feeds the outputs to the ranges (pass 1 or 2). */
static bool run_sample(Cal *c, const char *exe, int64_t k, float *buf, bool hist) {
    char *log = cli_cat3(c->work, "/", "run.log");
    bool ok = log && cli_feed_write("calibrate", &c->feed, k, c->work);
    for (uint32_t i = 0; ok && i < c->feed.n; i++) {
        const IrValue *in = &c->feed.in[i];
        if (in->type.dtype != IR_DTYPE_F32) continue;
        if (hist) qrange_add_hist(&c->in_ranges[i], c->feed.buf[i], ir_type_numel(&in->type));
        else qrange_add_minmax(&c->in_ranges[i], c->feed.buf[i], ir_type_numel(&in->type));
    }
    char **argv = calloc(c->n_out + c->feed.n + 3, sizeof *argv);
    uint32_t a = 0;
    if (ok && argv) {
        argv[a++] = (char *)exe;
        argv[a++] = cli_cat3(c->work, "/", "bundle/calib_weights.bin");
        for (uint32_t i = 0; i < c->feed.n; i++) argv[a++] = cli_feed_arg(c->work, i);
        for (uint32_t o = 0; o < c->n_out; o++) {
            char file[32];
            snprintf(file, sizeof file, "out_%u.bin", o);
            argv[a++] = cli_cat3(c->work, "/", file);
        }
        int st = cli_run_logged(argv, log);
        if (st != 0) {
            fprintf(stderr, "kiln calibrate: error: %s: the compiled model failed on this sample "
                    "(exit %d)\n", c->feed.sets[0].v[k].path, st);
            ok = false;
        }
        for (uint32_t o = 0; ok && o < c->n_out; o++) {
            if (!c->tracked[o]) continue;
            FILE *f = fopen(argv[2 + c->feed.n + o], "rb");
            ok = f && fread(buf, sizeof *buf, (size_t)c->out_numel[o], f) == (size_t)c->out_numel[o];
            if (f) fclose(f);
            if (!ok) {
                fprintf(stderr, "kiln calibrate: error: tensor '%s': the program's output is short\n",
                        c->out_name[o]);
                break;
            }
            if (hist) qrange_add_hist(&c->ranges[o], buf, c->out_numel[o]);
            else qrange_add_minmax(&c->ranges[o], buf, c->out_numel[o]);
        }
    } else {
        ok = false;
    }
    for (uint32_t i = 1; argv && i < a; i++) free(argv[i]);
    free(argv);
    free(log);
    return ok;
}

/* Compiles g (every intermediate exposed) into work/bundle and builds it. */
static bool build(Cal *c, IrGraph *g, char **exe) {
    pass_expose_intermediates(g);
    c->n_out = g->n_outputs;
    c->out_name = calloc(c->n_out ? c->n_out : 1, sizeof *c->out_name);
    c->out_numel = calloc(c->n_out ? c->n_out : 1, sizeof *c->out_numel);
    c->tracked = calloc(c->n_out ? c->n_out : 1, 1);
    c->ranges = malloc((c->n_out ? c->n_out : 1) * sizeof *c->ranges);
    if (!c->out_name || !c->out_numel || !c->tracked || !c->ranges) return false;
    for (uint32_t o = 0; o < c->n_out; o++) {
        const IrValue *v = &g->values[g->outputs[o]];
        c->out_name[o] = cli_cat3(v->name ? v->name : "", "", "");
        c->out_numel[o] = ir_type_numel(&v->type);
        c->tracked[o] = v->type.dtype == IR_DTYPE_F32 && v->name && !strpbrk(v->name, " \t\n");
        qrange_init(&c->ranges[o]);
    }
    char *bundle = cli_cat3(c->work, "/", "bundle");
    BundleOptions bo = {.name = "calib", .test_main = true, .model_path = c->model};
    Diag d;
    diag_init(&d);
    cli_progress_show(&c->progress, "compiling the float model");
    bool ok = bundle && kiln_compile_graph(g, "c", &bo, bundle, &d);
    cli_progress_end(&c->progress);
    diag_print(&d, stderr, c->model);
    diag_free(&d);
    if (!ok) {
        free(bundle);
        return false;
    }
    char *src = cli_cat3(bundle, "/", "calib.c");
    char *main_src = cli_cat3(bundle, "/", "calib_test_main.c");
    char *log = cli_cat3(c->work, "/", "cc.log");
    *exe = cli_cat3(bundle, "/", "calib_test");
    cli_progress_show(&c->progress, "building it with %s", c->cc);
    char *argv[] = {(char *)c->cc, "-O2", "-std=c99", "-o", *exe, src, main_src, "-lm", NULL};
    int st = src && main_src && log && *exe ? cli_run_logged(argv, log) : -1;
    cli_progress_end(&c->progress);
    if (st != 0)
        fprintf(stderr, "kiln calibrate: error: '%s' could not build the float model (exit %d)\n",
                c->cc, st);
    free(src);
    free(main_src);
    free(log);
    free(bundle);
    return st == 0;
}

static bool write_qparams(const Cal *c, const char *sha) {
    char *tmp = cli_cat3(c->out, "", ".tmp");
    FILE *f = tmp ? fopen(tmp, "w") : NULL;
    if (!f) {
        fprintf(stderr, "kiln calibrate: error: %s: cannot write: %s\n", c->out, strerror(errno));
        free(tmp);
        return false;
    }
    static const char *const names[] = {"minmax", "percentile", "entropy", "mse"};
    fprintf(f, "kiln-qparams 1\n");
    if (sha) fprintf(f, "model %s\n", sha);
    fprintf(f, "# kiln calibrate, method %s", names[c->method]);
    if (c->method == QRANGE_PERCENTILE) fprintf(f, ":%g", c->percentile);
    fprintf(f, ", %lld samples; per tensor: scale, uint8 zero point\n", (long long)c->n_samples);
    float s;
    int32_t z;
    /* the float inputs first, then the computed tensors in graph order */
    for (uint32_t i = 0; i < c->feed.n; i++) {
        const IrValue *in = &c->feed.in[i];
        if (in->type.dtype != IR_DTYPE_F32 || !in->name || strpbrk(in->name, " \t\n")) continue;
        qrange_params(&c->in_ranges[i], c->method, c->percentile, &s, &z);
        fprintf(f, "tensor %s scale=%.9g zero_point=%d\n", in->name, (double)s, (int)z);
    }
    for (uint32_t o = 0; o < c->n_out; o++) {
        if (!c->tracked[o]) continue;
        bool dup = false;
        for (uint32_t p = 0; p < o && !dup; p++) dup = c->tracked[p] && strcmp(c->out_name[p], c->out_name[o]) == 0;
        if (dup) continue;
        qrange_params(&c->ranges[o], c->method, c->percentile, &s, &z);
        fprintf(f, "tensor %s scale=%.9g zero_point=%d\n", c->out_name[o], (double)s, (int)z);
    }
    bool ok = fclose(f) == 0 && rename(tmp, c->out) == 0;
    if (!ok) {
        fprintf(stderr, "kiln calibrate: error: %s: cannot write: %s\n", c->out, strerror(errno));
        remove(tmp);
    }
    free(tmp);
    return ok;
}

int cli_calibrate_run(int argc, char **argv) {
    Cal c = {.cc = "cc", .method = QRANGE_MINMAX, .percentile = 99.99};
    CliDims dims = {0};
    bool quiet = false;
    const char *method = NULL;
    int rc = CLI_EXIT_MODEL;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int m;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(cli_calibrate_help, stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(argv[i], "--quiet") == 0) {
            quiet = true;
        } else if ((m = cli_flag_value("calibrate", argc, argv, &i, "-o", &v)) != 0 ||
                   (m = cli_flag_value("calibrate", argc, argv, &i, "--output", &v)) != 0) {
            if (m < 0) goto usage;
            c.out = v;
        } else if ((m = cli_flag_value("calibrate", argc, argv, &i, "--data", &v)) != 0) {
            if (m < 0) goto usage;
            c.data = v;
        } else if ((m = cli_flag_value("calibrate", argc, argv, &i, "--method", &v)) != 0) {
            if (m < 0) goto usage;
            method = v;
        } else if ((m = cli_flag_value("calibrate", argc, argv, &i, "--cc", &v)) != 0) {
            if (m < 0) goto usage;
            c.cc = v;
        } else if ((m = cli_flag_value("calibrate", argc, argv, &i, "--samples", &v)) != 0) {
            char *end;
            if (m < 0) goto usage;
            c.max_samples = strtoll(v, &end, 10);
            if (*end || c.max_samples < 1) {
                cli_usage_error("calibrate", "--samples wants a positive count, not '%s'", v);
                goto usage;
            }
        } else if ((m = cli_flag_value("calibrate", argc, argv, &i, "--dim", &v)) != 0) {
            if (m < 0 || !cli_dims_add("calibrate", &dims, v)) goto usage;
        } else if ((m = cli_flag_value("calibrate", argc, argv, &i, "--shape", &v)) != 0) {
            if (m < 0 || !cli_shape_add("calibrate", &dims, v)) goto usage;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            cli_usage_error("calibrate", "unknown option '%s'", argv[i]);
            goto usage;
        } else if (!c.model) {
            c.model = argv[i];
        } else {
            cli_usage_error("calibrate", "more than one model given ('%s')", argv[i]);
            goto usage;
        }
    }
    if (!c.model || !c.data || !c.out) {
        cli_usage_error("calibrate", "%s", !c.model ? "no MODEL given" : !c.data ? "no --data DIR given"
                                                                     : "no output file given (-o FILE.qparams)");
        goto usage;
    }
    if (method && !qrange_parse_method(method, &c.method, &c.percentile)) {
        cli_usage_error("calibrate", "--method takes minmax, percentile[:P] (50 < P <= 100), "
                        "entropy or mse, not '%s'", method);
        goto usage;
    }
    IrGraph *g = cli_load_model("calibrate", c.model, &dims, &rc);
    cli_dims_free(&dims);
    if (!g) return rc;
    rc = CLI_EXIT_MODEL;
    char *exe = NULL;
    float *buf = NULL;
    cli_progress_init(&c.progress, "calibrate", quiet);
    if (!cli_feed_open("calibrate", c.data, g, c.model, &c.feed)) goto done;
    c.in_ranges = malloc(c.feed.n * sizeof *c.in_ranges);
    if (!c.in_ranges) goto done;
    for (uint32_t i = 0; i < c.feed.n; i++) qrange_init(&c.in_ranges[i]);
    c.n_samples = c.max_samples > 0 && c.max_samples < c.feed.n_samples ? c.max_samples
                                                                         : c.feed.n_samples;
    snprintf(c.work, sizeof c.work, "/tmp/kiln-calibrate-XXXXXX");
    if (!mkdtemp(c.work)) {
        fprintf(stderr, "kiln calibrate: error: cannot make a work folder: %s\n", strerror(errno));
        c.work[0] = 0;
        goto done;
    }
    if (!build(&c, g, &exe)) goto done;
    int64_t biggest = 1;
    for (uint32_t o = 0; o < c.n_out; o++)
        if (c.tracked[o] && c.out_numel[o] > biggest) biggest = c.out_numel[o];
    buf = malloc((size_t)biggest * sizeof *buf);
    if (!buf) goto done;
    bool hist = qrange_needs_hist(c.method);
    for (int pass = 0; pass < (hist ? 2 : 1); pass++) {
        if (pass == 1)
            for (uint32_t o = 0; o < c.n_out; o++) qrange_begin_hist(&c.ranges[o]);
        for (uint32_t i = 0; pass == 1 && i < c.feed.n; i++) qrange_begin_hist(&c.in_ranges[i]);
        for (int64_t k = 0; k < c.n_samples; k++) {
            cli_progress_show(&c.progress, "%s sample %lld of %lld", pass ? "histograms," : "ranges,",
                              (long long)k + 1, (long long)c.n_samples);
            if (!run_sample(&c, exe, k, buf, pass == 1)) {
                cli_progress_end(&c.progress);
                goto done;
            }
        }
    }
    cli_progress_end(&c.progress);
    char sha[65];
    if (write_qparams(&c, kiln_file_sha256(c.model, sha) ? sha : NULL)) {
        rc = CLI_EXIT_OK;
        if (!quiet)
            printf("%s: %lld samples -> %s\n", c.model, (long long)c.n_samples, c.out);
    }
done:
    cli_progress_end(&c.progress);
    if (c.work[0]) cli_remove_work(c.work);
    cli_feed_free(&c.feed);
    free(c.in_ranges);
    for (uint32_t o = 0; c.out_name && o < c.n_out; o++) free(c.out_name[o]);
    free(c.out_name), free(c.out_numel), free(c.tracked), free(c.ranges);
    free(exe), free(buf);
    ir_graph_free(g);
    return rc;
usage:
    cli_dims_free(&dims);
    return CLI_EXIT_USAGE;
}
