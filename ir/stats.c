/* Graph statistics: op histogram, parameter count, MAC estimate and unsupported ops (see
 * stats.h). MACs are counted from the shapes on the graph's values (declared or inferred):
 * a multiply-accumulate is one multiply and one add; bias adds, activations and softmax
 * are not counted, as in most published model tables. */
#include "stats.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small growable array of op counts ---- */

typedef struct OpCountList {
    IrOpCount *items;
    uint32_t n, cap;
    bool oom;
} OpCountList;

static void count_add(OpCountList *l, const IrNode *n, const char *reason) {
    const char *domain = n->domain ? n->domain : "";
    const char *op_type = n->op_type ? n->op_type : "";
    for (uint32_t i = 0; i < l->n; i++) {
        IrOpCount *c = &l->items[i];
        if (strcmp(c->op_type, op_type) == 0 && strcmp(c->domain, domain) == 0 &&
            (c->reason == reason || (c->reason && reason && strcmp(c->reason, reason) == 0))) {
            c->count++;
            return;
        }
    }
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? l->cap * 2 : 16;
        IrOpCount *p = realloc(l->items, cap * sizeof *p);
        if (!p) {
            l->oom = true;
            return;
        }
        l->items = p;
        l->cap = cap;
    }
    l->items[l->n++] = (IrOpCount){domain, op_type, n->op, 1, reason};
}

static int count_cmp(const void *a, const void *b) {
    const IrOpCount *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    int c = strcmp(x->op_type, y->op_type);
    if (c) return c;
    c = strcmp(x->domain, y->domain);
    if (c) return c;
    return strcmp(x->reason ? x->reason : "", y->reason ? y->reason : "");
}

static void count_sort(OpCountList *l) {
    if (l->n > 1) qsort(l->items, l->n, sizeof *l->items, count_cmp);
}

/* ---- checked arithmetic on terms ---- */

static bool mul_i64(int64_t a, int64_t b, int64_t *out) {
    if (a < 0 || b < 0) return false;
    if (a != 0 && b > INT64_MAX / a) return false;
    *out = a * b;
    return true;
}

static bool add_i64(int64_t a, int64_t b, int64_t *out) {
    if (a < 0 || b < 0 || a > INT64_MAX - b) return false;
    *out = a + b;
    return true;
}

static int u32_cmp(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static bool term_mul(IrMacTerm *t, const IrMacTerm *by) {
    if (t->n_syms + by->n_syms > IR_STATS_MAX_TERM_SYMS) return false;
    if (!mul_i64(t->coeff, by->coeff, &t->coeff)) return false;
    memcpy(t->syms + t->n_syms, by->syms, by->n_syms * sizeof *by->syms);
    t->n_syms += by->n_syms;
    qsort(t->syms, t->n_syms, sizeof *t->syms, u32_cmp);
    return true;
}

static bool term_same_syms(const IrMacTerm *a, const IrMacTerm *b) {
    if (a->n_syms != b->n_syms) return false;
    return memcmp(a->syms, b->syms, a->n_syms * sizeof *a->syms) == 0;
}

/* a += b when both have the same symbolic factors. */
static bool term_add(IrMacTerm *a, const IrMacTerm *b) {
    if (!term_same_syms(a, b)) return false;
    return add_i64(a->coeff, b->coeff, &a->coeff);
}

/* Multiplies t by dim axis of type. */
static bool term_mul_dim(IrMacTerm *t, const IrType *type, int axis) {
    if (!type || type->kind != IR_TYPE_TENSOR || axis < 0 || axis >= type->rank) return false;
    IrMacTerm d = {1, {0}, 0};
    if (type->dims[axis] >= 0)
        d.coeff = type->dims[axis];
    else if (type->syms[axis])
        d.syms[d.n_syms++] = type->syms[axis];
    else
        return false;
    return term_mul(t, &d);
}

bool ir_type_numel_term(const IrType *t, IrMacTerm *term) {
    *term = (IrMacTerm){1, {0}, 0};
    if (!t || t->kind != IR_TYPE_TENSOR || t->rank < 0) return false;
    for (int i = 0; i < t->rank; i++)
        if (!term_mul_dim(term, t, i)) return false;
    return true;
}

/* ---- MACs per op ---- */

static const IrType *input_type(const IrGraph *g, const IrNode *n, uint32_t i) {
    if (i >= n->n_inputs || n->inputs[i] == IR_NONE || n->inputs[i] >= g->n_values) return NULL;
    return &g->values[n->inputs[i]].type;
}

static const IrType *output_type(const IrGraph *g, const IrNode *n, uint32_t i) {
    if (i >= n->n_outputs || n->outputs[i] == IR_NONE || n->outputs[i] >= g->n_values) return NULL;
    return &g->values[n->outputs[i]].type;
}

/* numel(counted) times the product of dims 1.. of the weight w (rank >= 3): convolutions,
 * where w is (M, C/group, k...) and counted is Y, or (C, M/group, k...) and counted is X. */
static int conv_macs(const IrType *counted, const IrType *w, IrMacTerm *term) {
    if (!w || w->rank < 3) return -1;
    if (!ir_type_numel_term(counted, term)) return -1;
    for (int i = 1; i < w->rank; i++)
        if (!term_mul_dim(term, w, i)) return -1;
    return 1;
}

/* numel(Y) times the reduced dimension k_axis of a. */
static int matmul_macs(const IrType *y, const IrType *a, int k_axis, IrMacTerm *term) {
    if (!ir_type_numel_term(y, term)) return -1;
    return term_mul_dim(term, a, k_axis) ? 1 : -1;
}

/* (numel(Q) + numel(Y)) * L: Q K^T is B*Hq*S*D*L, attention times V is B*Hq*S*Dv*L,
 * for both the 3-D (B, S, H*D) and the 4-D (B, H, S, D) forms. L is the total key length. */
static int attention_macs(const IrGraph *g, const IrNode *n, IrMacTerm *term) {
    const IrType *q = input_type(g, n, 0), *k = input_type(g, n, 1);
    const IrType *past_k = input_type(g, n, 4), *present_k = output_type(g, n, 1);
    IrMacTerm len = {1, {0}, 0}, y_numel;
    if (present_k && present_k->rank == 4) {
        if (!term_mul_dim(&len, present_k, 2)) return -1;
    } else {
        if (!k || (k->rank != 3 && k->rank != 4)) return -1;
        if (!term_mul_dim(&len, k, k->rank == 4 ? 2 : 1)) return -1;
        if (past_k) {
            IrMacTerm past = {1, {0}, 0};
            if (past_k->rank != 4 || !term_mul_dim(&past, past_k, 2)) return -1;
            if (!term_add(&len, &past)) return -1;
        }
    }
    if (!ir_type_numel_term(q, term) || !ir_type_numel_term(output_type(g, n, 0), &y_numel))
        return -1;
    if (!term_add(term, &y_numel)) return -1;
    return term_mul(term, &len) ? 1 : -1;
}

/* seq * batch * (numel(W) + numel(R)): per step and batch row, every gate multiplies the
 * input by W and the hidden state by R; W is (dirs, gates*H, I), R is (dirs, gates*H, H). */
static int recurrent_macs(const IrGraph *g, const IrNode *n, IrMacTerm *term) {
    const IrType *x = input_type(g, n, 0);
    IrMacTerm w, r;
    if (!x || x->rank != 3) return -1;
    if (!ir_type_numel_term(input_type(g, n, 1), &w) ||
        !ir_type_numel_term(input_type(g, n, 2), &r) || !term_add(&w, &r))
        return -1;
    *term = w;
    return term_mul_dim(term, x, 0) && term_mul_dim(term, x, 1) ? 1 : -1;
}

int ir_node_macs(const IrGraph *g, const IrNode *n, IrMacTerm *term) {
    *term = (IrMacTerm){0, {0}, 0};
    switch ((IrOp)n->op) {
    case IR_OP_CONV:
    case IR_OP_CONV_INTEGER:
        return conv_macs(output_type(g, n, 0), input_type(g, n, 1), term);
    case IR_OP_QLINEAR_CONV:
        return conv_macs(output_type(g, n, 0), input_type(g, n, 3), term);
    case IR_OP_CONV_TRANSPOSE:
        return conv_macs(input_type(g, n, 0), input_type(g, n, 1), term);
    case IR_OP_GEMM: {
        const IrType *a = input_type(g, n, 0);
        if (!a || a->rank != 2) return -1;
        return matmul_macs(output_type(g, n, 0), a, ir_attr_i(n, IR_ATTR_GEMM_TRANS_A) ? 0 : 1,
                           term);
    }
    case IR_OP_MAT_MUL:
    case IR_OP_MAT_MUL_INTEGER:
    case IR_OP_QLINEAR_MAT_MUL: {
        const IrType *a = input_type(g, n, 0);
        if (!a || a->rank < 1) return -1;
        return matmul_macs(output_type(g, n, 0), a, a->rank - 1, term);
    }
    case IR_OP_ATTENTION:
        return attention_macs(g, n, term);
    case IR_OP_LSTM:
    case IR_OP_GRU:
    case IR_OP_RNN:
        return recurrent_macs(g, n, term);
    default:
        return 0;
    }
}

/* ---- MAC sums ---- */

static int term_order(const void *a, const void *b) {
    const IrMacTerm *x = a, *y = b;
    if (x->n_syms != y->n_syms) return x->n_syms > y->n_syms ? -1 : 1;
    for (uint32_t i = 0; i < x->n_syms; i++)
        if (x->syms[i] != y->syms[i]) return x->syms[i] < y->syms[i] ? -1 : 1;
    return 0;
}

/* Adds t to m; false when out of memory. An overflowing sum makes the node unknown. */
static bool macs_add(IrMacs *m, const IrMacTerm *t, uint32_t *cap) {
    for (uint32_t i = 0; i < m->n_terms; i++)
        if (term_same_syms(&m->terms[i], t)) {
            if (!add_i64(m->terms[i].coeff, t->coeff, &m->terms[i].coeff)) m->n_unknown_nodes++;
            return true;
        }
    if (m->n_terms == *cap) {
        uint32_t new_cap = *cap ? *cap * 2 : 4;
        IrMacTerm *p = realloc(m->terms, new_cap * sizeof *p);
        if (!p) return false;
        m->terms = p;
        *cap = new_cap;
    }
    m->terms[m->n_terms++] = *t;
    return true;
}

/* A growable string for ir_macs_format. */
typedef struct MacsText {
    char *p;
    size_t len, cap;
    bool oom;
} MacsText;

static void text_add(MacsText *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0 || t->oom) return;
    if (t->len + (size_t)k + 1 > t->cap) {
        size_t cap = (t->cap ? t->cap * 2 : 64) + (size_t)k;
        char *p = realloc(t->p, cap);
        if (!p) {
            t->oom = true;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)k;
}

/* A symbol name that is an expression itself ("s0 + 1", "2*s1", as exporters name derived
 * dims) must be bracketed to be a factor; names, "x[2]" and "a.b:0" need no brackets. */
static bool needs_brackets(const char *name) {
    if (!name[0]) return true;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              strchr("_.:[]", *c)))
            return true;
    return false;
}

char *ir_macs_format(const IrGraph *g, const IrMacs *m) {
    MacsText t = {0};
    uint32_t shown = 0;
    for (uint32_t i = 0; i < m->n_terms; i++) {
        const IrMacTerm *term = &m->terms[i];
        if (term->coeff == 0) continue;
        text_add(&t, "%s", shown++ ? " + " : "");
        bool need_star = false;
        if (term->coeff != 1 || term->n_syms == 0) {
            text_add(&t, "%lld", (long long)term->coeff);
            need_star = true;
        }
        for (uint32_t s = 0; s < term->n_syms;) {
            uint32_t power = 1;
            while (s + power < term->n_syms && term->syms[s + power] == term->syms[s]) power++;
            const char *name = ir_graph_sym_name(g, term->syms[s]);
            text_add(&t, needs_brackets(name) ? "%s(%s)" : "%s%s", need_star ? "*" : "", name);
            if (power > 1) text_add(&t, "^%u", power);
            need_star = true;
            s += power;
        }
    }
    if (!shown) text_add(&t, "0");
    if (t.oom) {
        free(t.p);
        return NULL;
    }
    return t.p;
}

/* ---- the walk ---- */

typedef struct StatsWalk {
    IrStats *s;
    OpCountList ops, unsupported;
    IrUnsupportedFn fn;
    void *ctx;
    uint32_t macs_cap;
    bool oom;
} StatsWalk;

static uint64_t strings_bytes(const IrStr *strs, int64_t n) {
    uint64_t b = 0;
    for (int64_t i = 0; strs && i < n; i++)
        b += strs[i].len;
    return b;
}

static void add_tensor(IrStats *s, const IrTensor *t) {
    if (!t) return;
    s->n_params += t->n_elems;
    s->param_bytes += t->dtype == IR_DTYPE_STRING ? strings_bytes(t->strings, t->n_elems)
                                                  : (uint64_t)t->size_bytes;
    s->n_param_tensors++;
}

/* The one value attribute a Constant node carries, counted as a tensor. */
static void add_constant_node(IrStats *s, const IrNode *n) {
    for (uint32_t i = 0; i < n->n_attrs; i++) {
        const IrAttr *a = &n->attrs[i];
        if (!a->present) continue;
        int64_t elems = 0;
        uint64_t bytes = 0;
        switch (a->id) {
        case IR_ATTR_CONSTANT_VALUE:
        case IR_ATTR_CONSTANT_SPARSE_VALUE:
            add_tensor(s, a->tensors);
            continue;
        case IR_ATTR_CONSTANT_VALUE_FLOAT:
            elems = 1, bytes = sizeof(float);
            break;
        case IR_ATTR_CONSTANT_VALUE_FLOATS:
            elems = a->n, bytes = a->n * sizeof(float);
            break;
        case IR_ATTR_CONSTANT_VALUE_INT:
            elems = 1, bytes = sizeof(int64_t);
            break;
        case IR_ATTR_CONSTANT_VALUE_INTS:
            elems = a->n, bytes = a->n * sizeof(int64_t);
            break;
        case IR_ATTR_CONSTANT_VALUE_STRING:
            elems = 1, bytes = a->s.len;
            break;
        case IR_ATTR_CONSTANT_VALUE_STRINGS:
            elems = a->n, bytes = strings_bytes(a->strings, a->n);
            break;
        default:
            continue;
        }
        s->n_params += elems;
        s->param_bytes += bytes;
        s->n_param_tensors++;
    }
}

static void walk(StatsWalk *w, const IrGraph *g, bool in_subgraph) {
    IrStats *s = w->s;
    for (uint32_t v = 0; v < g->n_values; v++)
        if (g->values[v].kind == IR_VALUE_CONST) add_tensor(s, g->values[v].tensor);
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead) continue;
        s->n_nodes++;
        count_add(&w->ops, n, NULL);
        const char *why = w->fn(g, n, w->ctx);
        if (why) count_add(&w->unsupported, n, why);
        if (n->op == IR_OP_CONSTANT) add_constant_node(s, n);
        IrMacTerm t;
        int known = ir_node_macs(g, n, &t);
        /* A subgraph runs an unknown number of times (Loop, Scan) or maybe not (If). */
        if (known < 0 || (known > 0 && in_subgraph))
            s->macs.n_unknown_nodes++;
        else if (known > 0 && !macs_add(&s->macs, &t, &w->macs_cap))
            w->oom = true;
    }
    for (uint32_t i = 0; i < g->n_subgraphs; i++)
        walk(w, g->subgraphs[i], true);
}

bool ir_stats_compute(const IrGraph *g, IrUnsupportedFn unsupported, void *ctx, IrStats *s) {
    memset(s, 0, sizeof *s);
    StatsWalk w = {
        .s = s, .fn = unsupported ? unsupported : ir_node_unsupported_reason, .ctx = ctx};
    walk(&w, g, g->parent != NULL);
    count_sort(&w.ops);
    count_sort(&w.unsupported);
    if (s->macs.n_terms > 1)
        qsort(s->macs.terms, s->macs.n_terms, sizeof *s->macs.terms, term_order);
    s->ops = w.ops.items;
    s->n_ops = w.ops.n;
    s->unsupported = w.unsupported.items;
    s->n_unsupported = w.unsupported.n;
    if (w.oom || w.ops.oom || w.unsupported.oom) {
        ir_stats_free(s);
        return false;
    }
    return true;
}

void ir_stats_free(IrStats *s) {
    free(s->ops);
    free(s->unsupported);
    free(s->macs.terms);
    memset(s, 0, sizeof *s);
}

const char *ir_node_unsupported_reason(const IrGraph *g, const IrNode *n, void *ctx) {
    (void)g;
    (void)ctx;
    return n->op == IR_OP_UNKNOWN ? "not in the op table" : NULL;
}

static void walk_unsupported(OpCountList *l, const IrGraph *g, IrUnsupportedFn fn, void *ctx) {
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead) continue;
        const char *why = fn(g, n, ctx);
        if (why) count_add(l, n, why);
    }
    for (uint32_t i = 0; i < g->n_subgraphs; i++)
        walk_unsupported(l, g->subgraphs[i], fn, ctx);
}

bool ir_stats_unsupported(const IrGraph *g, IrUnsupportedFn fn, void *ctx, IrOpCount **out,
                          uint32_t *n_out) {
    OpCountList l = {0};
    walk_unsupported(&l, g, fn ? fn : ir_node_unsupported_reason, ctx);
    count_sort(&l);
    if (l.oom) {
        free(l.items);
        *out = NULL;
        *n_out = 0;
        return false;
    }
    *out = l.items;
    *n_out = l.n;
    return true;
}
