/* kiln compile: loads a model and writes a bundle (the compile driver, driver/kiln.c, does
 * the work; this file parses the command line and reports the memory plan). The output
 * folder is written atomically (cli/outdir.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "driver/kiln.h"
#include "driver/qparams.h"
#include "progress.h"
#include "report.h"

const char cli_compile_help[] =
    "usage: kiln compile MODEL -o DIR [--name NAME] [--target c|cuda]\n"
    "                    [--precision fp32|fp16] [--conv auto|im2col|implicit]\n"
    "                    [--fp16-io] [--no-winograd] [--workers N] [--dim NAME=VALUE]...\n"
    "                    [--shape INPUT=DIMS]... [--weights bin|embed] [--test-main]\n"
    "                    [--no-pass=NAME]... [--passes=LIST|none] [--dump-after=NAME]\n"
    "                    [--seq NAME=SPEC]... [--io-layout nchw|nhwc] [--report FILE.html]\n"
    "                    [--quiet] [--int8 MODEL.qparams [--keep-float NODE,...]]\n"
    "       kiln compile --list-passes\n"
    "\n"
    "Compiles MODEL (an .onnx file) into a standalone C99 bundle in DIR: NAME.h (the API),\n"
    "NAME.c, the runtime files it uses, the weights (NAME_weights.bin, or NAME_weights.c\n"
    "with --weights embed), CMakeLists.txt and README.md. Prints the arena size against its\n"
    "lower bound (the most bytes live at once) and the naive sum of all intermediates.\n"
    "\n"
    "options:\n"
    "  -o, --output DIR      the bundle's folder: written whole or not at all (created if\n"
    "                        missing, with its parents; an existing one is replaced on\n"
    "                        success, when it is empty or a Kiln bundle)\n"
    "  --name NAME           a C identifier prefixing every symbol (default: from MODEL)\n"
    "  --target c|cuda       the backend: C99 (default) or CUDA (.cu, cuBLASLt, CUDA graph)\n"
    "  --precision fp32|fp16 CUDA matrix products in fp32 (default, no TF32) or on fp16\n"
    "                        tensor cores with fp32 accumulation\n"
    "  --fp16-io             float16 graph inputs and outputs (with --precision fp16)\n"
    "  --conv auto|im2col|implicit  CUDA convolutions other than 1x1: im2col + cuBLASLt, or\n"
    "                        an implicit GEMM (fp16, channels-last, channels in 8s; others\n"
    "                        stay im2col); auto (default) picks per convolution by shape\n"
    "  --dim NAME=VALUE      fix the symbolic dimension NAME to VALUE (repeatable)\n"
    "  --shape INPUT=DIMS    give input INPUT the shape DIMS, as in x=1x3x224x224 (also\n"
    "                        x:1x3x224x224): its symbolic and unnamed dims take those\n"
    "                        values (repeatable; a comma list a=..,b=.. gives several)\n"
    "  --seq NAME=SPEC       the elements of sequence or optional input NAME, which become\n"
    "                        fields NAME_0, NAME_1...: shapes [d,..][d,..] (one group per\n"
    "                        element), a count N of the declared shape, or none (an absent\n"
    "                        optional) (repeatable)\n"
    "  --weights bin|embed   weights in a binary file (default) or as a const C array\n"
    "  --workers N           workers of NAME_run_parallel's hook (C; default 1)\n"
    "  --test-main           also write NAME_test_main.c, a harness that reads raw inputs\n"
    "                        from files and writes raw outputs (used by the test suites)\n"
    "  --no-winograd         C: 3x3 convolutions without Winograd\n";
const char cli_compile_help2[] = /* the rest of the options */
    "  --no-pass=NAME        skip the optional pass NAME (repeatable)\n"
    "  --passes=LIST         run only these optional passes (comma list); none: no optional\n"
    "                        pass (the required ones always run)\n"
    "  --dump-after=NAME     print the IR text after pass NAME to stdout\n"
    "  --int8 FILE.qparams   run the tensors FILE names on int8 kernels (C and CUDA;\n"
    "                        docs/int8.md); ops without one stay float\n"
    "  --keep-float NODES    with --int8: these nodes (comma list) stay float\n"
    "  --io-layout nchw|nhwc the layout of 4-D inputs and outputs (default nchw, as the\n"
    "                        model states them); nhwc: channels-last fields (N,H,W,C), and\n"
    "                        no transposes at the boundary of the layout pass's region\n"
    "  --report FILE.html    also write a self-contained page on the compile (model, passes,\n"
    "                        nodes with shapes, MACs and offsets, the memory plan)\n"
    "  --quiet               no progress line (shown on stderr when it is a terminal) and\n"
    "                        no summary; only diagnostics\n"
    "  --list-passes         print the pipeline in order and exit\n"
    "  -h, --help            print this help\n"
    "\n"
    "exit status: 0 ok, 1 bad or unsupported model, 2 usage error.\n";

static bool is_identifier(const char *s) {
    if (!s[0] || (s[0] >= '0' && s[0] <= '9')) return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return false;
    return true;
}

/* "models/tiny-cnn.onnx" -> "tiny_cnn" */
static char *name_from_path(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strcspn(base, ".");
    char *s = malloc(len + 2);
    size_t k = 0;
    if (len == 0 || (base[0] >= '0' && base[0] <= '9')) s[k++] = 'm';
    for (size_t i = 0; i < len; i++) {
        char c = base[i];
        s[k++] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
                     ? c : '_';
    }
    s[k] = 0;
    return s;
}

#define COMPILE_MAX_PASS_NAMES 64 /* more names than the pipeline has passes is a mistake */
#define COMPILE_MAX_SEQ_INPUTS 256 /* --seq options; a model with more container inputs is odd */
#define COMPILE_MAX_WORKERS 1024 /* more worker scratch than any machine has cores is a typo */

static void list_passes(void) {
    for (unsigned i = 0; i < pass_count(); i++) {
        bool optional;
        const char *summary;
        const char *name = pass_name(i, &optional, &summary);
        printf("%-16s %-9s %s\n", name, optional ? "optional" : "required", summary);
    }
}

/* Checks that name is a known pass (optional ones only when want_optional). */
static bool check_pass_name(const char *flag, const char *name, bool want_optional) {
    for (unsigned i = 0; i < pass_count(); i++) {
        bool optional;
        if (strcmp(pass_name(i, &optional, NULL), name) != 0) continue;
        if (want_optional && !optional) {
            cli_usage_error("compile", "%s: pass '%s' is required and always runs", flag, name);
            return false;
        }
        return true;
    }
    cli_usage_error("compile", "%s: unknown pass '%s' (see --list-passes)", flag, name);
    return false;
}

/* Splits the comma list of --passes into names (pointers into buf). */
static bool parse_pass_list(char *buf, const char **names, unsigned *n) {
    *n = 0;
    if (strcmp(buf, "none") == 0) return true;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (*n == COMPILE_MAX_PASS_NAMES) {
            cli_usage_error("compile", "--passes: too many names");
            return false;
        }
        if (!check_pass_name("--passes", tok, true)) return false;
        names[(*n)++] = tok;
    }
    return true;
}

/* The CUDA options' values, in the order of CudaPrecision and CudaConvLowering. */
static const char *const precision_names[] = {"fp32", "fp16", NULL};
static const char *const conv_names[] = {"auto", "im2col", "implicit", NULL};

/* The index of v in the NULL-terminated names, or -1. */
static int choice(const char *v, const char *const *names) {
    for (int i = 0; names[i]; i++)
        if (strcmp(v, names[i]) == 0) return i;
    return -1;
}

/* What follows the pipeline (PassOptions.observe): the progress line and the report. */
typedef struct CompileWatch {
    CliProgress progress;
    CliReport *report; /* NULL without --report */
} CompileWatch;

static void watch_pass(void *arg, const IrGraph *g, unsigned pass, bool after) {
    CompileWatch *w = arg;
    if (w->report) cli_report_observe(w->report, g, pass, after);
    if (!after)
        cli_progress_show(&w->progress, "pass %u/%u %s, %u nodes", pass + 1, pass_count(),
                          pass_name(pass, NULL, NULL), g->n_nodes);
    else if (pass + 1 == pass_count())
        cli_progress_show(&w->progress, "writing the bundle, %u nodes", g->n_nodes);
}

/* --keep-float NAME,...: the nodes of g with those names, into g->keep_float; a usage
 * error naming a name no node has. */
static bool keep_float_nodes(IrGraph *g, const char *list) {
    size_t n = 1;
    for (const char *p = list; *p; p++) n += *p == ',';
    g->keep_float = ir_arena_alloc(g->arena, n * sizeof *g->keep_float);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        char *name = ir_arena_alloc(g->arena, len + 1);
        memcpy(name, p, len);
        bool found = false;
        for (uint32_t i = 0; i < g->n_nodes && !found; i++)
            found = g->nodes[i].name && strcmp(g->nodes[i].name, name) == 0;
        if (!found) {
            cli_usage_error("compile", "--keep-float: the model has no node named '%s'", name);
            return false;
        }
        g->keep_float[g->n_keep_float++] = name;
        p += len + (p[len] == ',');
    }
    return true;
}

int cli_compile_run(int argc, char **argv) {
    const char *model = NULL, *out_dir = NULL, *name = NULL, *target = "c", *weights = "bin";
    const char *precision = "fp32", *conv = "auto", *report = NULL, *qparams = NULL;
    const char *keep_float = NULL;
    bool test_main = false, quiet = false, io16 = false, no_winograd = false;
    int workers = 1;
    CliDims dims = {0};
    int rc = CLI_EXIT_OK;
    const char *disabled[COMPILE_MAX_PASS_NAMES], *enabled[COMPILE_MAX_PASS_NAMES];
    const char *seqs[COMPILE_MAX_SEQ_INPUTS];
    char *pass_list = NULL;
    PassOptions popts = {.disabled = disabled, .enabled = enabled, .dump_to = stdout,
                         .seq_inputs = seqs};
    for (int i = 1; i < argc; i++) {
        const char *v;
        int m;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(cli_compile_help, stdout);
            fputs(cli_compile_help2, stdout);
            cli_dims_free(&dims);
            return CLI_EXIT_OK;
        }
        if (strcmp(argv[i], "--no-winograd") == 0) {
            no_winograd = true;
            continue;
        }
        if (strcmp(argv[i], "--test-main") == 0) {
            test_main = true;
            continue;
        }
        if (strcmp(argv[i], "--fp16-io") == 0) {
            io16 = true;
            continue;
        }
        if (strcmp(argv[i], "--quiet") == 0) {
            quiet = true;
            continue;
        }
        if (strcmp(argv[i], "--list-passes") == 0) {
            list_passes();
            cli_dims_free(&dims);
            free(pass_list);
            return CLI_EXIT_OK;
        }
        if ((m = cli_flag_value("compile", argc, argv, &i, "-o", &v)) != 0 ||
            (m = cli_flag_value("compile", argc, argv, &i, "--output", &v)) != 0) {
            if (m < 0) goto usage;
            out_dir = v;
        } else if ((m = cli_flag_value("compile", argc, argv, &i, "--name", &v)) != 0) {
            if (m < 0) goto usage;
            name = v;
        } else if ((m = cli_flag_value("compile", argc, argv, &i, "--target", &v)) != 0) {
            if (m < 0) goto usage;
            target = v;
        } else if ((m = cli_flag_value("compile", argc, argv, &i, "--precision", &v)) != 0) {
            if (m < 0) goto usage;
            precision = v;
        } else if ((m = cli_flag_value("compile", argc, argv, &i, "--conv", &v)) != 0) {
            if (m < 0) goto usage;
            conv = v;
        } else if ((m = cli_flag_value("compile", argc, argv, &i, "--int8", &v)) != 0) {
            if (m < 0) goto usage;
            qparams = v;
        } else if ((m = cli_flag_value("compile", argc, argv, &i, "--keep-float", &v)) != 0) {
            if (m < 0) goto usage;
            keep_float = v;
        } else if ((m = cli_flag_value("compile", argc, argv, &i, "--report", &v)) != 0) {
            if (m < 0) goto usage;
            report = v;
        } else if ((m = cli_flag_value("compile", argc, argv, &i, "--weights", &v)) != 0) {
            if (m < 0) goto usage;
            weights = v;
        } else if ((m = cli_flag_value("compile", argc, argv, &i, "--workers", &v)) != 0) {
            char *end;
            long long nw;
            if (m < 0) goto usage;
            nw = strtoll(v, &end, 10);
            if (*end || nw < 1 || nw > COMPILE_MAX_WORKERS) {
                cli_usage_error("compile", "--workers wants a count from 1 to %d, not '%s'",
                                COMPILE_MAX_WORKERS, v);
                goto usage;
            }
            workers = (int)nw;
        } else if ((m = cli_flag_value("compile", argc, argv, &i, "--no-pass", &v)) != 0) {
            if (m < 0 || !check_pass_name("--no-pass", v, true)) goto usage;
            if (popts.n_disabled == COMPILE_MAX_PASS_NAMES) {
                cli_usage_error("compile", "--no-pass given too often");
                goto usage;
            }
            disabled[popts.n_disabled++] = v;
        } else if ((m = cli_flag_value("compile", argc, argv, &i, "--passes", &v)) != 0) {
            if (m < 0) goto usage;
            free(pass_list);
            pass_list = malloc(strlen(v) + 1);
            if (!pass_list) goto usage;
            strcpy(pass_list, v);
            popts.only_listed = true;
            if (!parse_pass_list(pass_list, enabled, &popts.n_enabled)) goto usage;
        } else if ((m = cli_flag_value("compile", argc, argv, &i, "--dump-after", &v)) != 0) {
            if (m < 0 || !check_pass_name("--dump-after", v, false)) goto usage;
            popts.dump_after = v;
        } else if ((m = cli_flag_value("compile", argc, argv, &i, "--io-layout", &v)) != 0) {
            if (m < 0) goto usage;
            if (strcmp(v, "nchw") != 0 && strcmp(v, "nhwc") != 0) {
                cli_usage_error("compile", "--io-layout takes nchw or nhwc, not '%s'", v);
                goto usage;
            }
            popts.io_nhwc = strcmp(v, "nhwc") == 0;
        } else if ((m = cli_flag_value("compile", argc, argv, &i, "--dim", &v)) != 0) {
            if (m < 0 || !cli_dims_add("compile", &dims, v)) goto usage;
        } else if ((m = cli_flag_value("compile", argc, argv, &i, "--shape", &v)) != 0) {
            if (m < 0 || !cli_shape_add("compile", &dims, v)) goto usage;
        } else if ((m = cli_flag_value("compile", argc, argv, &i, "--seq", &v)) != 0) {
            if (m < 0) goto usage;
            if (popts.n_seq_inputs == COMPILE_MAX_SEQ_INPUTS) {
                cli_usage_error("compile", "--seq given too often");
                goto usage;
            }
            seqs[popts.n_seq_inputs++] = v;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            cli_usage_error("compile", "unknown option '%s'", argv[i]);
            goto usage;
        } else if (!model) {
            model = argv[i];
        } else {
            cli_usage_error("compile", "more than one model given ('%s')", argv[i]);
            goto usage;
        }
    }
    if (!model) {
        cli_usage_error("compile", "no MODEL given");
        goto usage;
    }
    if (!out_dir) {
        cli_usage_error("compile", "no output folder given (-o DIR)");
        goto usage;
    }
    if (!kiln_target_known(target)) {
        cli_usage_error("compile", "unknown target '%s' (supported: %s)", target, kiln_targets());
        goto usage;
    }
    bool cuda = strcmp(target, "cuda") == 0;
    int prec_i = choice(precision, precision_names), conv_i = choice(conv, conv_names);
    if (prec_i < 0) {
        cli_usage_error("compile", "--precision takes fp32 or fp16, not '%s'", precision);
        goto usage;
    }
    if (!cuda && prec_i != CUDA_PREC_FP32) {
        cli_usage_error("compile", "--precision fp16 is for --target cuda");
        goto usage;
    }
    if (io16 && prec_i != CUDA_PREC_FP16) {
        cli_usage_error("compile", "--fp16-io is for --target cuda --precision fp16");
        goto usage;
    }
    if (conv_i < 0) {
        cli_usage_error("compile", "--conv takes auto, im2col or implicit, not '%s'", conv);
        goto usage;
    }
    if (!cuda && conv_i != CUDA_CONV_AUTO) {
        cli_usage_error("compile", "--conv is for --target cuda");
        goto usage;
    }
    if (strcmp(weights, "bin") != 0 && strcmp(weights, "embed") != 0) {
        cli_usage_error("compile", "--weights takes bin or embed, not '%s'", weights);
        goto usage;
    }
    if (name && !is_identifier(name)) {
        cli_usage_error("compile", "--name '%s' is not a C identifier", name);
        goto usage;
    }
    if (keep_float && !qparams) {
        cli_usage_error("compile", "--keep-float goes with --int8");
        goto usage;
    }
    IrGraph *g = cli_load_model("compile", model, &dims, &rc);
    if (!g) {
        cli_dims_free(&dims);
        free(pass_list);
        return rc;
    }
    if (keep_float && !keep_float_nodes(g, keep_float)) {
        ir_graph_free(g);
        goto usage;
    }
    if (qparams) {
        char qsha[65];
        Diag qd;
        diag_init(&qd);
        bool qok = qparams_apply_file(g, qparams, kiln_file_sha256(model, qsha) ? qsha : NULL, &qd);
        diag_print(&qd, stderr, NULL);
        diag_free(&qd);
        if (!qok) {
            ir_graph_free(g);
            cli_dims_free(&dims);
            free(pass_list);
            return CLI_EXIT_MODEL;
        }
    }
    if (!cli_mkdir_parents(out_dir)) {
        ir_graph_free(g);
        cli_dims_free(&dims);
        free(pass_list);
        return CLI_EXIT_MODEL;
    }
    char *auto_name = name ? NULL : name_from_path(model);
    CudaOptions co = {(CudaPrecision)prec_i, (CudaConvLowering)conv_i, io16};
    char sha[65];
    char *command = cli_command_line("compile", argc, argv, model);
    BundleOptions opts = {.name = name ? name : auto_name,
                          .embed_weights = strcmp(weights, "embed") == 0,
                          .test_main = test_main,
                          .no_winograd = no_winograd,
                          .workers = workers,
                          .model_path = model,
                          .model_sha256 = kiln_file_sha256(model, sha) ? sha : NULL,
                          .command_line = command,
                          .passes = &popts,
                          .cuda = &co};
    uint32_t nodes_before = g->n_nodes;
    CompileWatch watch = {.report = report ? cli_report_new(g) : NULL};
    cli_progress_init(&watch.progress, "compile", quiet);
    popts.observe = watch_pass;
    popts.observe_arg = &watch;
    Diag d;
    diag_init(&d);
    /* the bundle goes into a sibling folder and takes DIR's place only once complete */
    CliOutDir od = {0};
    bool ok = (!report || watch.report) && cli_outdir_begin(out_dir, &od, &d);
    if (ok) ok = kiln_compile_graph(g, target, &opts, od.tmp, &d);
    if (ok) ok = cli_outdir_commit(&od, &d);
    cli_outdir_end(&od);
    cli_progress_end(&watch.progress);
    if (report && !watch.report) fprintf(stderr, "%s: error: out of memory\n", report);
    diag_print(&d, stderr, model);
    if (ok && watch.report) {
        CliReportInfo info = {model, opts.name, target, out_dir, argc, argv};
        ok = cli_report_write(watch.report, g, &info, report);
    }
    cli_report_free(watch.report);
    if (!ok) rc = CLI_EXIT_MODEL;
    if (ok && !quiet) {
        printf("%s: %u nodes (%u before the passes) -> %s/%s.%s\n", model, g->n_nodes,
               nodes_before, out_dir, opts.name, cuda ? "cu" : "c");
        printf("arena: %lld bytes (lower bound %lld, naive sum %lld)\n",
               (long long)g->arena_size_bytes, (long long)g->arena_lower_bound_bytes,
               (long long)g->arena_naive_bytes);
    }
    diag_free(&d);
    free(command);
    free(auto_name);
    ir_graph_free(g);
    cli_dims_free(&dims);
    free(pass_list);
    return rc;
usage:
    cli_dims_free(&dims);
    free(pass_list);
    return CLI_EXIT_USAGE;
}
