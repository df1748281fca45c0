/* kiln inspect: loads a model (with shape inference and --dim overrides) and prints its
 * header, inputs and outputs, op histogram, parameter count, MAC estimate and unsupported
 * ops, as text, as one JSON object (--json), or as the Kiln IR text (--ir). The numbers
 * come from ir/stats.h; this file only formats them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "backend/c/cgen.h"
#include "ir/stats.h"
#include "json.h"

#define TYPE_TEXT_MAX 512 /* longest type text printed; longer ones end in "..." */
#define NAME_COLUMN_MAX 24 /* names longer than this do not widen the column */

const char cli_inspect_help[] =
    "usage: kiln inspect [--json | --ir] [--dim NAME=VALUE]... [--shape INPUT=DIMS]... MODEL\n"
    "\n"
    "Loads MODEL (an .onnx file), infers shapes and prints the model header, the inputs and\n"
    "outputs with their types, a histogram of ops, the parameter count, an estimate of the\n"
    "multiply-accumulates (MACs) and the ops Kiln does not support.\n"
    "\n"
    "options:\n"
    "  --json            print the same as one JSON object (schema in docs/cli.md)\n"
    "  --ir              print the Kiln IR text after loading and shape inference\n"
    "  --dim NAME=VALUE  fix the symbolic dimension NAME to VALUE (repeatable)\n"
    "  --shape INPUT=DIMS  give input INPUT the shape DIMS, as in x=1x3x224x224: its\n"
    "                    symbolic and unnamed dims take those values (repeatable; a comma\n"
    "                    list a=..,b=.. gives several)\n"
    "  -h, --help        print this help\n"
    "\n"
    "exit status: 0 ok, 1 bad or unsupported model, 2 usage error.\n";

/* An op is unsupported when it is not in the op table or the C backend has no kernel. */
static const char *unsupported_reason(const IrGraph *g, const IrNode *n, void *ctx) {
    const char *why = ir_node_unsupported_reason(g, n, ctx);
    if (why) return why;
    if (n->op == IR_OP_CONSTANT) return NULL; /* lowered to weights by pass lower-constants */
    return cgen_op_supported((IrOp)n->op) ? NULL : "no kernel in the C backend";
}

/* ---- text helpers ---- */

typedef struct Buf {
    char *p;
    size_t size, used;
} Buf;

static void buf_add(Buf *b, const char *s) {
    size_t len = strlen(s), room = b->size - 1 - b->used;
    bool truncated = len > room;
    if (truncated) len = room;
    memcpy(b->p + b->used, s, len);
    b->used += len;
    b->p[b->used] = '\0';
    if (truncated && b->size >= 4) memcpy(b->p + b->size - 4, "...", 3);
}

static const char *domain_name(const char *domain) {
    return domain && domain[0] ? domain : "ai.onnx";
}

/* One type as text: f32[batch,1,8,8]; ? for an unknown dim, [...] for an unknown rank. */
static void format_type(const IrGraph *g, const IrType *t, Buf *b, int depth) {
    char num[32];
    if (!t || depth > IR_MAX_RANK) {
        buf_add(b, "?");
        return;
    }
    switch (t->kind) {
    case IR_TYPE_TENSOR:
    case IR_TYPE_SPARSE_TENSOR:
        if (t->kind == IR_TYPE_SPARSE_TENSOR) buf_add(b, "sparse ");
        buf_add(b, t->dtype ? ir_dtype_name((IrDType)t->dtype) : "?");
        if (t->rank < 0) {
            buf_add(b, "[...]");
            return;
        }
        buf_add(b, "[");
        for (int i = 0; i < t->rank; i++) {
            if (i) buf_add(b, ",");
            if (t->dims[i] >= 0) {
                snprintf(num, sizeof num, "%lld", (long long)t->dims[i]);
                buf_add(b, num);
            } else if (t->syms[i]) {
                buf_add(b, ir_graph_sym_name(g, t->syms[i]));
            } else {
                buf_add(b, "?");
            }
        }
        buf_add(b, "]");
        return;
    case IR_TYPE_SEQUENCE:
    case IR_TYPE_OPTIONAL:
        buf_add(b, t->kind == IR_TYPE_SEQUENCE ? "seq<" : "optional<");
        format_type(g, t->elem, b, depth + 1);
        buf_add(b, ">");
        return;
    case IR_TYPE_MAP:
        buf_add(b, "map<");
        buf_add(b, ir_dtype_name((IrDType)t->key_dtype));
        buf_add(b, ",");
        format_type(g, t->elem, b, depth + 1);
        buf_add(b, ">");
        return;
    default:
        buf_add(b, "?");
    }
}

static const char *type_text(const IrGraph *g, const IrType *t, char *out, size_t size) {
    Buf b = {out, size, 0};
    out[0] = '\0';
    format_type(g, t, &b, 0);
    return out;
}

/* Names come from the model: control characters would reach the user's terminal. */
static void print_clean(FILE *out, const char *s) {
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++)
        fputc(*p < 0x20 || *p == 0x7F ? '?' : *p, out);
}

/* Writes v scaled by powers of step with its unit, e.g. " (5.5 KiB)"; nothing below step. */
static void print_human(FILE *out, double v, const char *const *units, double step) {
    int u = 0;
    while (v >= step && units[u + 1]) {
        v /= step;
        u++;
    }
    if (u > 0) fprintf(out, " (%.1f %s)", v, units[u]);
}

/* The graph inputs a caller feeds: initializers listed as inputs (old exporters) are
 * parameters and are left out. */
static bool is_fed_input(const IrGraph *g, uint32_t v) {
    return v < g->n_values && !g->values[v].tensor && g->values[v].kind != IR_VALUE_CONST;
}

static int digits(uint64_t v) {
    int d = 1;
    while (v >= 10)
        v /= 10, d++;
    return d;
}

/* ---- text ---- */

static void print_values(FILE *out, const IrGraph *g, const uint32_t *ids, uint32_t n,
                         bool inputs) {
    char type[TYPE_TEXT_MAX];
    int width = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (inputs && !is_fed_input(g, ids[i])) continue;
        int len = (int)strlen(g->values[ids[i]].name);
        if (len > width && len <= NAME_COLUMN_MAX) width = len;
    }
    uint32_t shown = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (inputs && !is_fed_input(g, ids[i])) continue;
        const IrValue *v = &g->values[ids[i]];
        fputs("  ", out);
        print_clean(out, v->name);
        fprintf(out, "%*s  %s\n", width - (int)strlen(v->name), "",
                type_text(g, &v->type, type, sizeof type));
        shown++;
    }
    if (!shown) fputs("  (none)\n", out);
}

static void print_counts(FILE *out, const IrOpCount *c, uint32_t n, bool reasons) {
    int width = n ? digits(c[0].count) : 1; /* sorted: the first count is the largest */
    for (uint32_t i = 0; i < n; i++) {
        fprintf(out, "  %*u  ", width, c[i].count);
        print_clean(out, c[i].op_type);
        if (c[i].domain[0] || reasons) {
            fputs(" [", out);
            print_clean(out, domain_name(c[i].domain));
            fputs("]", out);
        }
        if (reasons) fprintf(out, "  %s", c[i].reason);
        fputc('\n', out);
    }
}

static bool macs_total(const IrMacs *m, int64_t *total) {
    if (m->n_unknown_nodes) return false;
    *total = 0;
    for (uint32_t i = 0; i < m->n_terms; i++) {
        if (m->terms[i].n_syms && m->terms[i].coeff) return false;
        if (!m->terms[i].n_syms) *total = m->terms[i].coeff;
    }
    return true;
}

static void print_text(FILE *out, const char *path, const IrGraph *g, const IrStats *s) {
    static const char *const si[] = {"", "K", "M", "G", "T", "P", NULL};
    static const char *const iec[] = {"B", "KiB", "MiB", "GiB", "TiB", NULL};
    fputs("model: ", out);
    print_clean(out, path);
    fprintf(out, "\nir_version: %lld\nproducer: ", (long long)g->ir_version);
    if (g->producer_name && g->producer_name[0]) {
        print_clean(out, g->producer_name);
        if (g->producer_version && g->producer_version[0]) {
            fputc(' ', out);
            print_clean(out, g->producer_version);
        }
    } else {
        fputs("(none)", out);
    }
    fputs("\nopsets:", out);
    for (uint32_t i = 0; i < g->n_opsets; i++) {
        fputs(i ? ", " : " ", out);
        print_clean(out, domain_name(g->opsets[i].domain));
        fprintf(out, " %lld", (long long)g->opsets[i].version);
    }
    fputs("\ninputs:\n", out);
    print_values(out, g, g->inputs, g->n_inputs, true);
    fputs("outputs:\n", out);
    print_values(out, g, g->outputs, g->n_outputs, false);

    fprintf(out, "ops (%u nodes):\n", s->n_nodes);
    print_counts(out, s->ops, s->n_ops, false);

    fprintf(out, "parameters: %lld in %u tensors, %llu bytes", (long long)s->n_params,
            s->n_param_tensors, (unsigned long long)s->param_bytes);
    print_human(out, (double)s->param_bytes, iec, 1024.0);
    fputc('\n', out);

    int64_t total;
    fputs("macs: ", out);
    if (s->macs.n_terms || !s->macs.n_unknown_nodes) {
        char *macs = ir_macs_format(g, &s->macs);
        print_clean(out, macs ? macs : "(out of memory)");
        free(macs);
        if (macs_total(&s->macs, &total)) print_human(out, (double)total, si, 1000.0);
        if (s->macs.n_unknown_nodes) fputs(" + ", out);
    }
    if (s->macs.n_unknown_nodes)
        fprintf(out, "unknown for %u node%s (shapes not known, or inside a subgraph)",
                s->macs.n_unknown_nodes, s->macs.n_unknown_nodes == 1 ? "" : "s");
    fputc('\n', out);

    if (!s->n_unsupported) {
        fputs("unsupported ops: none\n", out);
        return;
    }
    uint32_t nodes = 0;
    for (uint32_t i = 0; i < s->n_unsupported; i++)
        nodes += s->unsupported[i].count;
    fprintf(out, "unsupported ops (%u nodes):\n", nodes);
    print_counts(out, s->unsupported, s->n_unsupported, true);
}

/* ---- JSON ---- */

static void json_values(CliJson *j, const IrGraph *g, const uint32_t *ids, uint32_t n,
                        bool inputs) {
    char type[TYPE_TEXT_MAX];
    cli_json_array_begin(j, false);
    for (uint32_t i = 0; i < n; i++) {
        if (inputs && !is_fed_input(g, ids[i])) continue;
        const IrValue *v = &g->values[ids[i]];
        const IrType *t = &v->type;
        cli_json_object_begin(j, true);
        cli_json_key(j, "name");
        cli_json_string(j, v->name);
        cli_json_key(j, "type");
        cli_json_string(j, type_text(g, t, type, sizeof type));
        if (t->kind == IR_TYPE_TENSOR) {
            cli_json_key(j, "dtype");
            cli_json_string(j, t->dtype ? ir_dtype_name((IrDType)t->dtype) : NULL);
            cli_json_key(j, "shape");
            if (t->rank < 0) {
                cli_json_null(j);
            } else {
                cli_json_array_begin(j, true);
                for (int d = 0; d < t->rank; d++) {
                    if (t->dims[d] >= 0)
                        cli_json_int(j, t->dims[d]);
                    else if (t->syms[d])
                        cli_json_string(j, ir_graph_sym_name(g, t->syms[d]));
                    else
                        cli_json_null(j);
                }
                cli_json_array_end(j);
            }
        }
        cli_json_object_end(j);
    }
    cli_json_array_end(j);
}

static void json_counts(CliJson *j, const IrOpCount *c, uint32_t n, bool reasons) {
    cli_json_array_begin(j, false);
    for (uint32_t i = 0; i < n; i++) {
        cli_json_object_begin(j, true);
        cli_json_key(j, "op");
        cli_json_string(j, c[i].op_type);
        cli_json_key(j, "domain");
        cli_json_string(j, domain_name(c[i].domain));
        cli_json_key(j, "count");
        cli_json_uint(j, c[i].count);
        if (reasons) {
            cli_json_key(j, "reason");
            cli_json_string(j, c[i].reason);
        }
        cli_json_object_end(j);
    }
    cli_json_array_end(j);
}

static void print_json(FILE *out, const char *path, const IrGraph *g, const IrStats *s) {
    CliJson j;
    cli_json_init(&j, out);
    cli_json_object_begin(&j, false);
    cli_json_key(&j, "model");
    cli_json_string(&j, path);
    cli_json_key(&j, "ir_version");
    cli_json_int(&j, g->ir_version);
    cli_json_key(&j, "producer");
    cli_json_object_begin(&j, true);
    cli_json_key(&j, "name");
    cli_json_string(&j, g->producer_name);
    cli_json_key(&j, "version");
    cli_json_string(&j, g->producer_version);
    cli_json_object_end(&j);

    cli_json_key(&j, "opsets");
    cli_json_array_begin(&j, false);
    for (uint32_t i = 0; i < g->n_opsets; i++) {
        cli_json_object_begin(&j, true);
        cli_json_key(&j, "domain");
        cli_json_string(&j, domain_name(g->opsets[i].domain));
        cli_json_key(&j, "version");
        cli_json_int(&j, g->opsets[i].version);
        cli_json_object_end(&j);
    }
    cli_json_array_end(&j);

    cli_json_key(&j, "inputs");
    json_values(&j, g, g->inputs, g->n_inputs, true);
    cli_json_key(&j, "outputs");
    json_values(&j, g, g->outputs, g->n_outputs, false);
    cli_json_key(&j, "nodes");
    cli_json_uint(&j, s->n_nodes);
    cli_json_key(&j, "ops");
    json_counts(&j, s->ops, s->n_ops, false);

    cli_json_key(&j, "parameters");
    cli_json_object_begin(&j, true);
    cli_json_key(&j, "count");
    cli_json_int(&j, s->n_params);
    cli_json_key(&j, "bytes");
    cli_json_uint(&j, s->param_bytes);
    cli_json_key(&j, "tensors");
    cli_json_uint(&j, s->n_param_tensors);
    cli_json_object_end(&j);

    int64_t total;
    cli_json_key(&j, "macs");
    cli_json_object_begin(&j, false);
    cli_json_key(&j, "total");
    if (macs_total(&s->macs, &total))
        cli_json_int(&j, total);
    else
        cli_json_null(&j);
    cli_json_key(&j, "expr");
    char *macs = ir_macs_format(g, &s->macs);
    cli_json_string(&j, macs ? macs : "(out of memory)");
    free(macs);
    cli_json_key(&j, "terms");
    cli_json_array_begin(&j, false);
    for (uint32_t i = 0; i < s->macs.n_terms; i++) {
        const IrMacTerm *t = &s->macs.terms[i];
        cli_json_object_begin(&j, true);
        cli_json_key(&j, "coeff");
        cli_json_int(&j, t->coeff);
        cli_json_key(&j, "dims");
        cli_json_array_begin(&j, true);
        for (uint32_t k = 0; k < t->n_syms; k++)
            cli_json_string(&j, ir_graph_sym_name(g, t->syms[k]));
        cli_json_array_end(&j);
        cli_json_object_end(&j);
    }
    cli_json_array_end(&j);
    cli_json_key(&j, "unknown_nodes");
    cli_json_uint(&j, s->macs.n_unknown_nodes);
    cli_json_object_end(&j);

    cli_json_key(&j, "unsupported");
    json_counts(&j, s->unsupported, s->n_unsupported, true);
    cli_json_object_end(&j);
    cli_json_finish(&j);
}

/* ---- the command ---- */

int cli_inspect_run(int argc, char **argv) {
    const char *cmd = "inspect";
    const char *model = NULL;
    bool json = false, ir = false, options_done = false;
    CliDims dims = {0};
    int rc = CLI_EXIT_OK;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = NULL;
        int got;
        if (options_done || arg[0] != '-' || strcmp(arg, "-") == 0) {
            if (model) {
                rc = cli_usage_error(cmd, "more than one MODEL ('%s', '%s')", model, arg);
                goto done;
            }
            model = arg;
        } else if (strcmp(arg, "--") == 0) {
            options_done = true;
        } else if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(cli_inspect_help, stdout);
            goto done;
        } else if (strcmp(arg, "--json") == 0) {
            json = true;
        } else if (strcmp(arg, "--ir") == 0) {
            ir = true;
        } else if ((got = cli_flag_value(cmd, argc, argv, &i, "--dim", &value)) != 0) {
            if (got < 0 || !cli_dims_add(cmd, &dims, value)) {
                rc = CLI_EXIT_USAGE;
                goto done;
            }
        } else if ((got = cli_flag_value(cmd, argc, argv, &i, "--shape", &value)) != 0) {
            if (got < 0 || !cli_shape_add(cmd, &dims, value)) {
                rc = CLI_EXIT_USAGE;
                goto done;
            }
        } else {
            rc = cli_usage_error(cmd, "unknown option '%s'", arg);
            goto done;
        }
    }
    if (!model) {
        rc = cli_usage_error(cmd, "missing MODEL");
        goto done;
    }
    if (json && ir) {
        rc = cli_usage_error(cmd, "--json and --ir exclude each other");
        goto done;
    }

    IrGraph *g = cli_load_model(cmd, model, &dims, &rc);
    if (!g) goto done;
    if (ir) {
        ir_print(stdout, g, &(IrPrintOpts){.full_data = false});
    } else {
        IrStats s;
        if (!ir_stats_compute(g, unsupported_reason, NULL, &s)) {
            fprintf(stderr, "%s: error: out of memory\n", model);
            rc = CLI_EXIT_MODEL;
        } else {
            if (json)
                print_json(stdout, model, g, &s);
            else
                print_text(stdout, model, g, &s);
            ir_stats_free(&s);
        }
    }
    ir_graph_free(g);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "kiln inspect: error writing the output\n");
        rc = CLI_EXIT_MODEL;
    }
done:
    cli_dims_free(&dims);
    return rc;
}
