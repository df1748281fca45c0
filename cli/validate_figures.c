/* kiln validate's figures: the comparison of each value, kiln's bundle against ONNX
 * Runtime, accumulated over every sample (max abs/rel error, cosine, the elements out of
 * tolerance with the worst of them, top-1/top-5 agreement for class scores, warnings when
 * the comparison proves little), the per-node error growth that points at the node that
 * made the error, and the text report and JSON of it all. docs/validate.md defines every
 * figure; cli/validate.c runs the bundle and ONNX Runtime. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "runtime/rt_common.h"
#include "validate.h"

#define VALIDATE_GROWTH_FLOOR (FLT_EPSILON / 2) /* an input's error counted as at least one
                                                   float rounding: growth over exact inputs
                                                   is in units of it */
#define VALIDATE_GROWTH_LIST 5    /* nodes listed by error growth */
#define VALIDATE_GROWTH_NOTABLE 4 /* growth below this is not called a likely cause */

/* ---- the comparison ------------------------------------------------------------------ */

static bool is_float_dtype(IrDType t) {
    return t == IR_DTYPE_F32 || t == IR_DTYPE_F64 || t == IR_DTYPE_F16 || t == IR_DTYPE_BF16;
}

/* Element i of raw little-endian data of type t, as a double. */
static double element(const unsigned char *p, IrDType t, int64_t i) {
    switch (t) {
    case IR_DTYPE_F32: { float v; memcpy(&v, p + 4 * i, 4); return v; }
    case IR_DTYPE_F64: { double v; memcpy(&v, p + 8 * i, 8); return v; }
    case IR_DTYPE_F16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return rt_f16_to_f32(v); }
    case IR_DTYPE_BF16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return rt_bf16_to_f32(v); }
    case IR_DTYPE_I8: return (int8_t)p[i];
    case IR_DTYPE_U8: return p[i];
    case IR_DTYPE_BOOL: return p[i] != 0;
    case IR_DTYPE_I16: { int16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    case IR_DTYPE_U16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    case IR_DTYPE_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case IR_DTYPE_U32: { uint32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case IR_DTYPE_I64: { int64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
    case IR_DTYPE_U64: { uint64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
    default: return NAN;
    }
}

/* Class scores: a float tensor of rank >= 2 whose dims after the first are all 1 but one,
 * and that one is >= 2: [N, C], [N, C, 1, 1], [N, 1, C]. Rows are the first dim. */
static bool classifier_shape(const IrType *t, int64_t *rows, int64_t *classes) {
    if (!is_float_dtype((IrDType)t->dtype) || t->rank < 2) return false;
    int64_t c = 1;
    int wide = 0;
    for (int i = 1; i < t->rank; i++)
        if (t->dims[i] > 1) {
            wide++;
            c = t->dims[i];
        }
    if (wide != 1 || c < 2 || t->dims[0] < 1) return false;
    *rows = t->dims[0];
    *classes = c;
    return true;
}

/* The indices of the k largest of row[0..c) into top (ties: the lower index first). */
static void top_k(const double *row, int64_t c, int k, int64_t *top) {
    int n = 0;
    for (int64_t i = 0; i < c; i++) {
        if (isnan(row[i])) continue;
        int at = n;
        while (at > 0 && row[i] > row[top[at - 1]]) at--;
        if (at >= k) continue;
        for (int j = (n < k ? n : k - 1); j > at; j--) top[j] = top[j - 1];
        top[at] = i;
        if (n < k) n++;
    }
    for (; n < k; n++) top[n] = -1;
}

static bool same_set(const int64_t *a, const int64_t *b, int k) {
    for (int i = 0; i < k; i++) {
        bool found = false;
        for (int j = 0; j < k && !found; j++) found = a[i] == b[j];
        if (!found) return false;
    }
    return true;
}

void validate_figures_init(ValidateFigures *f) {
    memset(f, 0, sizeof *f);
    f->min_cosine = 1;
    f->max_sample = f->max_index = -1;
    f->ref_min = INFINITY;
    f->ref_max = -INFINITY;
    f->pass = true;
}

/* Keeps e among the VALIDATE_WORST worst failing elements: the largest ratio first, then
 * the largest error; on ties the earlier element. */
static void keep_worst(ValidateFigures *f, const ValidateFailing *e) {
    int at = f->n_worst;
    while (at > 0 && (e->ratio > f->worst[at - 1].ratio ||
                      (e->ratio == f->worst[at - 1].ratio && e->err > f->worst[at - 1].err)))
        at--;
    if (at >= VALIDATE_WORST) return;
    int last = f->n_worst < VALIDATE_WORST ? f->n_worst : VALIDATE_WORST - 1;
    for (int j = last; j > at; j--) f->worst[j] = f->worst[j - 1];
    f->worst[at] = *e;
    if (f->n_worst < VALIDATE_WORST) f->n_worst++;
}

void validate_compare(const IrType *type, const unsigned char *ra, const unsigned char *rb,
                      int64_t s, const ValidateOpts *o, bool scores, ValidateFigures *f) {
    IrDType t = (IrDType)type->dtype;
    int64_t n = ir_type_numel(type);
    double dot = 0, na = 0, nb = 0, sample_abs = 0, sample_ref = 0;
    int64_t bad_before = f->n_bad;
    double *a = malloc((size_t)(n ? n : 1) * sizeof *a);
    double *b = malloc((size_t)(n ? n : 1) * sizeof *b);
    if (!a || !b) {
        snprintf(f->error, sizeof f->error, "out of memory");
        free(a);
        free(b);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        a[i] = element(ra, t, i);
        b[i] = element(rb, t, i);
        /* NaN matches NaN and an infinity the same infinity; otherwise they are errors of
         * infinite size. */
        double err, allowed = o->atol + o->rtol * fabs(b[i]);
        bool ok;
        if (isnan(a[i]) || isnan(b[i])) {
            ok = isnan(a[i]) && isnan(b[i]);
            err = ok ? 0 : INFINITY;
        } else if (a[i] == b[i]) {
            ok = true;
            err = 0;
        } else if (isinf(a[i]) || isinf(b[i])) {
            ok = false;
            err = INFINITY;
        } else {
            err = fabs(a[i] - b[i]);
            ok = err <= allowed;
        }
        if (!ok) {
            ValidateFailing e = {s, i, a[i], b[i], err,
                                 allowed > 0 && isfinite(err) ? err / allowed : INFINITY};
            f->n_bad++;
            keep_worst(f, &e);
        }
        if (f->max_index < 0 || err > f->max_abs) {
            f->max_abs = err;
            f->max_sample = s;
            f->max_index = i;
            f->max_kiln = a[i];
            f->max_ort = b[i];
        }
        if (b[i] != 0 && !isnan(b[i]) && err > 0) {
            double rel = isinf(b[i]) ? INFINITY : err / fabs(b[i]);
            if (rel > f->max_rel) f->max_rel = rel;
        }
        if (isfinite(a[i]) && isfinite(b[i])) {
            dot += a[i] * b[i];
            na += a[i] * a[i];
            nb += b[i] * b[i];
        }
        if (!isnan(b[i])) {
            if (b[i] < f->ref_min) f->ref_min = b[i];
            if (b[i] > f->ref_max) f->ref_max = b[i];
            if (fabs(b[i]) > f->ref_abs_max) f->ref_abs_max = fabs(b[i]);
            if (fabs(b[i]) > sample_ref) sample_ref = fabs(b[i]);
        }
        if (!isnan(a[i]) && fabs(a[i]) > f->kiln_abs_max) f->kiln_abs_max = fabs(a[i]);
        if (err > sample_abs) sample_abs = err;
    }
    double cosine = na == 0 && nb == 0 ? 1 : na == 0 || nb == 0 ? 0
                                                            : dot / (sqrt(na) * sqrt(nb));
    if (cosine < f->min_cosine || f->samples == 0) f->min_cosine = cosine;
    /* the error at the value's scale; a value of zeros: the error itself */
    double scaled = sample_ref > 0 ? sample_abs / sample_ref : sample_abs;
    if (scaled > f->scale_err || isnan(scaled)) f->scale_err = scaled;
    int64_t rows, classes;
    if (scores && classifier_shape(type, &rows, &classes)) {
        f->classifier = true;
        f->has_topk = classes > VALIDATE_TOP_K;
        for (int64_t r = 0; r < rows; r++) {
            int64_t ta[VALIDATE_TOP_K], tb[VALIDATE_TOP_K];
            int k = f->has_topk ? VALIDATE_TOP_K : 1;
            top_k(a + r * classes, classes, k, ta);
            top_k(b + r * classes, classes, k, tb);
            f->top1 += ta[0] == tb[0];
            f->topk += f->has_topk && same_set(ta, tb, k);
        }
        f->rows += rows;
    }
    f->n += n;
    f->samples++;
    f->samples_bad += f->n_bad > bad_before;
    f->pass = f->n_bad == 0;
    free(a);
    free(b);
}

const char *validate_vacuous(const ValidateFigures *f, const ValidateOpts *o, char *buf,
                             size_t cap) {
    if (f->error[0]) return NULL;
    if (f->n == 0)
        snprintf(buf, cap, "the output has no elements: nothing was compared");
    else if (f->ref_abs_max == 0 && f->kiln_abs_max == 0)
        snprintf(buf, cap, "every element is 0 on both sides: the comparison proves little");
    else if (f->ref_abs_max <= o->atol && f->kiln_abs_max <= o->atol)
        snprintf(buf, cap, "every element is within atol %g of 0 on both sides (largest "
                 "|ort| %.3g, |kiln| %.3g): any such values pass; lower --atol", o->atol,
                 f->ref_abs_max, f->kiln_abs_max);
    else if (f->n > 1 && f->ref_min == f->ref_max)
        snprintf(buf, cap, "ONNX Runtime's output is constant (every element %.9g): the "
                 "comparison proves little about the model", f->ref_min);
    else
        return NULL;
    return buf;
}

/* ---- per-node error growth ------------------------------------------------------------ */

static int find_compared(const ValidateRun *r, uint32_t v) {
    for (uint32_t i = 0; i < r->n_cmp; i++)
        if (r->values[i] == v) return (int)i;
    return -1;
}

static bool fig_ok(const ValidateFigures *f) { return !f->error[0] && f->pass; }

void validate_rank_nodes(ValidateRun *r) {
    r->first = r->likely = -1;
    bool outputs_fail = false;
    for (uint32_t i = 0; i < r->n_orig; i++) outputs_fail |= !fig_ok(&r->fig[i]);
    for (uint32_t i = 0; i < r->n_nodes; i++) {
        ValidateNode *nd = &r->nodes[i];
        nd->err_in = nd->err_out = nd->growth = 0;
        bool any_out = false;
        for (uint32_t k = 0; k < nd->n_outputs; k++) {
            int c = nd->outputs[k] == IR_NONE ? -1 : find_compared(r, nd->outputs[k]);
            if (c < 0 || r->fig[c].error[0]) continue;
            any_out = true;
            if (r->fig[c].scale_err > nd->err_out) nd->err_out = r->fig[c].scale_err;
            if (!r->fig[c].pass && r->first < 0) r->first = (int)i;
        }
        for (uint32_t k = 0; k < nd->n_inputs; k++) {
            int c = nd->inputs[k] == IR_NONE ? -1 : find_compared(r, nd->inputs[k]);
            if (c >= 0 && !r->fig[c].error[0] && r->fig[c].scale_err > nd->err_in)
                nd->err_in = r->fig[c].scale_err;
        }
        if (any_out && nd->err_out > 0)
            nd->growth = nd->err_out / (nd->err_in > VALIDATE_GROWTH_FLOOR ? nd->err_in
                                                                          : VALIDATE_GROWTH_FLOOR);
    }
    /* the likely cause: the largest growth up to the first divergence (or anywhere, when
     * only a graph output fails) */
    uint32_t end = r->first >= 0 ? (uint32_t)r->first + 1 : outputs_fail ? r->n_nodes : 0;
    double best = 0;
    for (uint32_t i = 0; i < end; i++)
        if (r->nodes[i].growth > best) {
            best = r->nodes[i].growth;
            r->likely = (int)i;
        }
    if (best < VALIDATE_GROWTH_NOTABLE) r->likely = r->first;
}

/* ---- the report ---------------------------------------------------------------------- */

static void type_text(char *buf, size_t cap, const IrType *t) {
    size_t k = (size_t)snprintf(buf, cap, "%s[", ir_dtype_name((IrDType)t->dtype));
    for (int i = 0; i < t->rank && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

static void print_index(FILE *f, const IrType *t, int64_t flat) {
    int64_t idx[IR_MAX_RANK];
    for (int i = t->rank - 1; i >= 0; i--) {
        int64_t d = t->dims[i] > 0 ? t->dims[i] : 1;
        idx[i] = flat % d;
        flat /= d;
    }
    fputc('[', f);
    for (int i = 0; i < t->rank; i++) fprintf(f, "%s%lld", i ? "," : "", (long long)idx[i]);
    fputc(']', f);
}

static void print_figures(FILE *f, const IrType *t, const ValidateFigures *st) {
    if (st->error[0]) {
        fprintf(f, "not compared: %s", st->error);
        return;
    }
    fprintf(f, "max abs %.3g, max rel %.3g, cosine %.7f", st->max_abs, st->max_rel,
            st->min_cosine);
    if (st->classifier) {
        fprintf(f, ", top-1 %lld/%lld", (long long)st->top1, (long long)st->rows);
        if (st->has_topk)
            fprintf(f, ", top-%d %lld/%lld", VALIDATE_TOP_K, (long long)st->topk,
                    (long long)st->rows);
    }
    if (!st->pass)
        fprintf(f, "; %lld of %lld elements out of tolerance", (long long)st->n_bad,
                (long long)st->n);
    (void)t;
}

/* The worst failing elements, one a line: where, both values, the error against the
 * tolerance. */
static void print_worst(FILE *f, const IrType *t, const ValidateFigures *st, int64_t samples,
                        const char *indent) {
    for (int i = 0; i < st->n_worst; i++) {
        const ValidateFailing *e = &st->worst[i];
        fprintf(f, "%s%s ", indent, i == 0 ? "worst:" : "      ");
        if (samples > 1) fprintf(f, "sample %lld ", (long long)e->sample);
        print_index(f, t, e->index);
        fprintf(f, " kiln %.9g, ort %.9g, error %.3g", e->kiln, e->ort, e->err);
        if (isfinite(e->ratio)) fprintf(f, " = %.3gx the tolerance\n", e->ratio);
        else fprintf(f, "%s\n", isfinite(e->err) ? " (tolerance 0)" : "");
    }
    if (st->n_bad > st->n_worst)
        fprintf(f, "%s       ... and %lld more\n", indent, (long long)(st->n_bad - st->n_worst));
}

static const char *node_name(const ValidateNode *nd, char *buf, size_t cap) {
    snprintf(buf, cap, "%s%s%s%s", nd->op_type, nd->name[0] ? " '" : "", nd->name,
             nd->name[0] ? "'" : "");
    return buf;
}

static void describe_input(FILE *f, const ValidateRun *r, uint32_t v) {
    const IrValue *val = &r->g->values[v];
    int k = find_compared(r, v);
    fprintf(f, "    input '%s': ", val->name);
    if (k >= 0) {
        fprintf(f, "%s", fig_ok(&r->fig[k]) ? "within tolerance, " : "");
        print_figures(f, &val->type, &r->fig[k]);
    } else if (val->kind == IR_VALUE_INPUT) {
        fprintf(f, "a graph input (the same data on both sides)");
    } else if (val->kind == IR_VALUE_CONST) {
        fprintf(f, "a constant of the model");
    } else {
        fprintf(f, "not compared (no static numeric type)");
    }
    fprintf(f, "\n");
}

static void report_nodes(FILE *out, const ValidateRun *r) {
    char type[128], nm[256];
    fprintf(out, "\nper node (graph order; error: max |kiln - ort| / max |ort| of the output, "
                 "growth: over the inputs' error):\n");
    for (uint32_t i = 0; i < r->n_nodes; i++) {
        const ValidateNode *nd = &r->nodes[i];
        bool any = false;
        for (uint32_t o = 0; o < nd->n_outputs; o++) {
            int k = nd->outputs[o] == IR_NONE ? -1 : find_compared(r, nd->outputs[o]);
            if (k < 0) continue;
            const ValidateFigures *st = &r->fig[k];
            const IrValue *val = &r->g->values[nd->outputs[o]];
            type_text(type, sizeof type, &val->type);
            const char *verdict = st->error[0] ? "??  " : st->pass ? "ok  " : "DIFF";
            fprintf(out, "%s node %u %s -> '%s' %s: ", verdict, i, node_name(nd, nm, sizeof nm),
                    val->name, type);
            print_figures(out, &val->type, st);
            if (!st->error[0]) fprintf(out, "; error %.3g (x%.3g)", st->scale_err, nd->growth);
            fprintf(out, "%s\n", (int)i == r->likely ? "  <- likely cause" : "");
            any = true;
        }
        if (!any)
            fprintf(out, "--   node %u %s: no output with a static numeric type to compare\n", i,
                    node_name(nd, nm, sizeof nm));
    }
    /* the nodes that grow the error most */
    int order[VALIDATE_GROWTH_LIST], n_order = 0;
    for (uint32_t i = 0; i < r->n_nodes; i++) {
        double g = r->nodes[i].growth;
        if (g <= 0) continue;
        int at = n_order;
        while (at > 0 && g > r->nodes[order[at - 1]].growth) at--;
        if (at >= VALIDATE_GROWTH_LIST) continue;
        for (int j = n_order < VALIDATE_GROWTH_LIST ? n_order : VALIDATE_GROWTH_LIST - 1; j > at;
             j--)
            order[j] = order[j - 1];
        order[at] = (int)i;
        if (n_order < VALIDATE_GROWTH_LIST) n_order++;
    }
    if (n_order) fprintf(out, "\nthe nodes that grow the error most:\n");
    for (int j = 0; j < n_order; j++) {
        const ValidateNode *nd = &r->nodes[order[j]];
        fprintf(out, "  x%-9.3g node %d %s (opset %d): error %.3g in, %.3g out%s\n", nd->growth,
                order[j], node_name(nd, nm, sizeof nm), nd->opset, nd->err_in, nd->err_out,
                order[j] == r->likely ? "  <- likely cause" : "");
    }
    if (r->first < 0) {
        fprintf(out, "no node diverges beyond the tolerance\n");
        return;
    }
    const ValidateNode *nd = &r->nodes[r->first];
    fprintf(out, "\nfirst divergence: node %d%s%s%s (%s%s%s, opset %d)\n", r->first,
            nd->name[0] ? " '" : "", nd->name, nd->name[0] ? "'" : "",
            nd->domain[0] ? nd->domain : "", nd->domain[0] ? "." : "", nd->op_type, nd->opset);
    for (uint32_t o = 0; o < nd->n_outputs; o++) {
        int k = nd->outputs[o] == IR_NONE ? -1 : find_compared(r, nd->outputs[o]);
        if (k < 0) continue;
        const IrValue *val = &r->g->values[nd->outputs[o]];
        fprintf(out, "    output '%s': ", val->name);
        print_figures(out, &val->type, &r->fig[k]);
        fprintf(out, "\n");
        print_worst(out, &val->type, &r->fig[k], r->n_samples, "    ");
    }
    for (uint32_t i = 0; i < nd->n_inputs; i++)
        if (nd->inputs[i] != IR_NONE) describe_input(out, r, nd->inputs[i]);
    if (r->likely >= 0 && r->likely != r->first) {
        const ValidateNode *lk = &r->nodes[r->likely];
        fprintf(out, "likely cause: node %d %s (opset %d), before it: it grows the error "
                     "x%.3g (%.3g in, %.3g out) while staying within the tolerance\n",
                r->likely, node_name(lk, nm, sizeof nm), lk->opset, lk->growth, lk->err_in,
                lk->err_out);
    }
}

uint32_t validate_report(FILE *out, const ValidateRun *r) {
    uint32_t failed = 0;
    char type[128], warn[VALIDATE_MSG_MAX];
    for (uint32_t i = 0; i < r->n_orig; i++) {
        const ValidateFigures *st = &r->fig[i];
        const IrValue *val = &r->g->values[r->values[i]];
        bool pass = fig_ok(st);
        failed += !pass;
        type_text(type, sizeof type, &val->type);
        fprintf(out, "%s output '%s' %s: ", pass ? "PASS" : "FAIL", val->name, type);
        print_figures(out, &val->type, st);
        if (!st->error[0] && r->n_samples > 1)
            fprintf(out, "; %lld of %lld samples %s", (long long)(st->samples - st->samples_bad),
                    (long long)st->samples, "within tolerance");
        fprintf(out, "\n");
        if (!pass && !st->error[0]) print_worst(out, &val->type, st, r->n_samples, "    ");
        if (validate_vacuous(st, r->o, warn, sizeof warn))
            fprintf(out, "    warning: %s\n", warn);
    }
    if (r->o->per_node) report_nodes(out, r);
    return failed;
}

/* ---- JSON ------------------------------------------------------------------------------ */

static void json_double(CliJson *j, const char *key, double v) {
    cli_json_key(j, key);
    cli_json_double(j, v);
}

static void json_dims(CliJson *j, const IrType *t) {
    cli_json_array_begin(j, true);
    for (int i = 0; i < t->rank; i++) cli_json_int(j, t->dims[i]);
    cli_json_array_end(j);
}

static void json_index(CliJson *j, const IrType *t, int64_t flat) {
    int64_t idx[IR_MAX_RANK];
    for (int i = t->rank - 1; i >= 0; i--) {
        int64_t d = t->dims[i] > 0 ? t->dims[i] : 1;
        idx[i] = flat % d;
        flat /= d;
    }
    cli_json_array_begin(j, true);
    for (int i = 0; i < t->rank; i++) cli_json_int(j, idx[i]);
    cli_json_array_end(j);
}

static void json_figures(CliJson *j, const ValidateRun *r, uint32_t v, const ValidateFigures *st) {
    const IrValue *val = &r->g->values[v];
    char warn[VALIDATE_MSG_MAX];
    cli_json_key(j, "name");
    cli_json_string(j, val->name);
    cli_json_key(j, "dtype");
    cli_json_string(j, ir_dtype_name((IrDType)val->type.dtype));
    cli_json_key(j, "shape");
    json_dims(j, &val->type);
    cli_json_key(j, "pass");
    cli_json_bool(j, fig_ok(st));
    if (st->error[0]) {
        cli_json_key(j, "error");
        cli_json_string(j, st->error);
        return;
    }
    cli_json_key(j, "elements");
    cli_json_int(j, st->n);
    cli_json_key(j, "out_of_tolerance");
    cli_json_int(j, st->n_bad);
    cli_json_key(j, "samples");
    cli_json_int(j, st->samples);
    cli_json_key(j, "samples_out_of_tolerance");
    cli_json_int(j, st->samples_bad);
    json_double(j, "max_abs", st->max_abs);
    json_double(j, "max_rel", st->max_rel);
    json_double(j, "cosine", st->min_cosine);
    json_double(j, "error", st->scale_err);
    if (st->classifier) {
        cli_json_key(j, "rows");
        cli_json_int(j, st->rows);
        json_double(j, "top1", (double)st->top1 / (double)st->rows);
        if (st->has_topk) json_double(j, "top5", (double)st->topk / (double)st->rows);
    }
    /* worst_*: the worst element out of tolerance, else the largest error */
    bool failing = st->n_worst > 0;
    if (failing || (st->max_index >= 0 && st->max_abs > 0)) {
        cli_json_key(j, "worst_sample");
        cli_json_int(j, failing ? st->worst[0].sample : st->max_sample);
        cli_json_key(j, "worst_index");
        cli_json_int(j, failing ? st->worst[0].index : st->max_index);
        json_double(j, "worst_kiln", failing ? st->worst[0].kiln : st->max_kiln);
        json_double(j, "worst_ort", failing ? st->worst[0].ort : st->max_ort);
    }
    cli_json_key(j, "failing");
    cli_json_array_begin(j, false);
    for (int i = 0; i < st->n_worst; i++) {
        const ValidateFailing *e = &st->worst[i];
        cli_json_object_begin(j, true);
        cli_json_key(j, "sample");
        cli_json_int(j, e->sample);
        cli_json_key(j, "index");
        cli_json_int(j, e->index);
        cli_json_key(j, "coords");
        json_index(j, &val->type, e->index);
        json_double(j, "kiln", e->kiln);
        json_double(j, "ort", e->ort);
        json_double(j, "error", e->err);
        json_double(j, "tolerance_ratio", e->ratio);
        cli_json_object_end(j);
    }
    cli_json_array_end(j);
    if (validate_vacuous(st, r->o, warn, sizeof warn)) {
        cli_json_key(j, "warning");
        cli_json_string(j, warn);
    }
}

/* A value next to a node: its figures when compared, else what it is. */
static void json_value_of(CliJson *j, const ValidateRun *r, uint32_t v) {
    cli_json_object_begin(j, false);
    int k = find_compared(r, v);
    if (k >= 0) {
        json_figures(j, r, v, &r->fig[k]);
    } else {
        cli_json_key(j, "name");
        cli_json_string(j, r->g->values[v].name);
        cli_json_key(j, "kind");
        cli_json_string(j, r->g->values[v].kind == IR_VALUE_INPUT   ? "graph input"
                           : r->g->values[v].kind == IR_VALUE_CONST ? "constant"
                                                                    : "not compared");
    }
    cli_json_object_end(j);
}

static void json_node_ref(CliJson *j, const ValidateRun *r, int i, bool detail) {
    if (i < 0) {
        cli_json_null(j);
        return;
    }
    const ValidateNode *nd = &r->nodes[i];
    cli_json_object_begin(j, false);
    cli_json_key(j, "index");
    cli_json_int(j, i);
    cli_json_key(j, "name");
    cli_json_string(j, nd->name);
    cli_json_key(j, "op");
    cli_json_string(j, nd->op_type);
    cli_json_key(j, "domain");
    cli_json_string(j, nd->domain);
    cli_json_key(j, "opset");
    cli_json_int(j, nd->opset);
    json_double(j, "error_in", nd->err_in);
    json_double(j, "error_out", nd->err_out);
    json_double(j, "growth", nd->growth);
    if (detail) {
        cli_json_key(j, "outputs");
        cli_json_array_begin(j, false);
        for (uint32_t k = 0; k < nd->n_outputs; k++)
            if (nd->outputs[k] != IR_NONE && find_compared(r, nd->outputs[k]) >= 0)
                json_value_of(j, r, nd->outputs[k]);
        cli_json_array_end(j);
        cli_json_key(j, "inputs");
        cli_json_array_begin(j, false);
        for (uint32_t k = 0; k < nd->n_inputs; k++)
            if (nd->inputs[k] != IR_NONE) json_value_of(j, r, nd->inputs[k]);
        cli_json_array_end(j);
    }
    cli_json_object_end(j);
}

bool validate_write_json(const ValidateRun *r, bool pass) {
    const ValidateOpts *o = r->o;
    bool to_stdout = strcmp(o->json_path, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(o->json_path, "wb");
    if (!f) {
        fprintf(stderr, "kiln validate: error: %s: %s\n", o->json_path, strerror(errno));
        return false;
    }
    CliJson j;
    cli_json_init(&j, f);
    cli_json_object_begin(&j, false);
    cli_json_key(&j, "model");
    cli_json_string(&j, o->model);
    cli_json_key(&j, "target");
    cli_json_string(&j, "c");
    cli_json_key(&j, "reference");
    cli_json_string(&j, r->reference);
    cli_json_key(&j, "inputs");
    if (o->inputs_path) {
        cli_json_string(&j, o->inputs_path);
    } else {
        cli_json_object_begin(&j, true);
        cli_json_key(&j, "seed");
        cli_json_int(&j, o->seed);
        cli_json_key(&j, "dist");
        cli_json_string(&j, o->dist);
        cli_json_object_end(&j);
    }
    cli_json_key(&j, "samples");
    cli_json_int(&j, r->n_samples);
    json_double(&j, "rtol", o->rtol);
    json_double(&j, "atol", o->atol);
    cli_json_key(&j, "pass");
    cli_json_bool(&j, pass);
    cli_json_key(&j, "outputs");
    cli_json_array_begin(&j, false);
    for (uint32_t i = 0; i < r->n_orig; i++) {
        cli_json_object_begin(&j, false);
        json_figures(&j, r, r->values[i], &r->fig[i]);
        cli_json_object_end(&j);
    }
    cli_json_array_end(&j);
    if (o->per_node) {
        cli_json_key(&j, "nodes");
        cli_json_array_begin(&j, false);
        for (uint32_t i = 0; i < r->n_nodes; i++) {
            const ValidateNode *nd = &r->nodes[i];
            cli_json_object_begin(&j, false);
            cli_json_key(&j, "index");
            cli_json_uint(&j, i);
            cli_json_key(&j, "name");
            cli_json_string(&j, nd->name);
            cli_json_key(&j, "op");
            cli_json_string(&j, nd->op_type);
            cli_json_key(&j, "opset");
            cli_json_int(&j, nd->opset);
            json_double(&j, "error_in", nd->err_in);
            json_double(&j, "error_out", nd->err_out);
            json_double(&j, "growth", nd->growth);
            cli_json_key(&j, "outputs");
            cli_json_array_begin(&j, false);
            for (uint32_t k = 0; k < nd->n_outputs; k++) {
                uint32_t v = nd->outputs[k];
                int c = v == IR_NONE ? -1 : find_compared(r, v);
                if (c < 0) continue;
                cli_json_object_begin(&j, false);
                json_figures(&j, r, v, &r->fig[c]);
                cli_json_object_end(&j);
            }
            cli_json_array_end(&j);
            cli_json_key(&j, "inputs");
            cli_json_array_begin(&j, true);
            for (uint32_t k = 0; k < nd->n_inputs; k++)
                if (nd->inputs[k] != IR_NONE)
                    cli_json_string(&j, r->g->values[nd->inputs[k]].name);
            cli_json_array_end(&j);
            cli_json_object_end(&j);
        }
        cli_json_array_end(&j);
        cli_json_key(&j, "first_divergence");
        json_node_ref(&j, r, r->first, true);
        cli_json_key(&j, "likely_cause");
        json_node_ref(&j, r, r->likely, false);
    }
    cli_json_object_end(&j);
    cli_json_finish(&j);
    if (to_stdout) return fflush(stdout) == 0;
    if (fclose(f) != 0) {
        fprintf(stderr, "kiln validate: error: cannot write %s\n", o->json_path);
        return false;
    }
    return true;
}
