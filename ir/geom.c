/* Convolution and pooling geometry (geom.h): one decoder of the attributes of every
 * conv-like op, the output-size rule of shape inference, and the pads auto_pad resolves to
 * that the backends lay out. */
#include <string.h>

#include "ir/geom.h"

/* Attribute ids of a conv-like op; IR_ATTR_COUNT where the op has no such attribute. */
typedef struct ConvIds {
    IrAttrId auto_pad, dilations, kernel_shape, pads, strides, ceil_mode, group;
    IrAttrId output_padding, output_shape;
} ConvIds;

static bool conv_ids(IrOp op, ConvIds *ids) {
#define IDS(OP, CEIL, GROUP, OPAD, OSHAPE)                                                  \
    *ids = (ConvIds){IR_ATTR_##OP##_AUTO_PAD, IR_ATTR_##OP##_DILATIONS,                     \
                     IR_ATTR_##OP##_KERNEL_SHAPE, IR_ATTR_##OP##_PADS,                      \
                     IR_ATTR_##OP##_STRIDES, CEIL, GROUP, OPAD, OSHAPE};                    \
    return true
    const IrAttrId none = IR_ATTR_COUNT;
    switch (op) {
    case IR_OP_CONV: IDS(CONV, none, IR_ATTR_CONV_GROUP, none, none);
    case IR_OP_FUSED_CONV: IDS(FUSED_CONV, none, IR_ATTR_FUSED_CONV_GROUP, none, none);
    case IR_OP_CONV_INTEGER: IDS(CONV_INTEGER, none, IR_ATTR_CONV_INTEGER_GROUP, none, none);
    case IR_OP_QLINEAR_CONV: IDS(QLINEAR_CONV, none, IR_ATTR_QLINEAR_CONV_GROUP, none, none);
    case IR_OP_QCONV: IDS(QCONV, none, IR_ATTR_QCONV_GROUP, none, none);
    case IR_OP_QMAX_POOL: IDS(QMAX_POOL, IR_ATTR_QMAX_POOL_CEIL_MODE, none, none, none);
    case IR_OP_CONV_TRANSPOSE:
        IDS(CONV_TRANSPOSE, none, IR_ATTR_CONV_TRANSPOSE_GROUP,
            IR_ATTR_CONV_TRANSPOSE_OUTPUT_PADDING, IR_ATTR_CONV_TRANSPOSE_OUTPUT_SHAPE);
    case IR_OP_MAX_POOL: IDS(MAX_POOL, IR_ATTR_MAX_POOL_CEIL_MODE, none, none, none);
    case IR_OP_AVERAGE_POOL: IDS(AVERAGE_POOL, IR_ATTR_AVERAGE_POOL_CEIL_MODE, none, none, none);
    case IR_OP_LP_POOL: IDS(LP_POOL, IR_ATTR_LP_POOL_CEIL_MODE, none, none, none);
    default: return false;
    }
#undef IDS
}

bool ir_conv_like(IrOp op) {
    ConvIds ids;
    return conv_ids(op, &ids);
}

/* An ints attribute of exactly want entries into v (v keeps its defaults when absent);
 * false when it has another length. */
static bool read_ints(const IrNode *n, IrAttrId id, uint32_t want, int64_t *v) {
    uint32_t cnt;
    const int64_t *p = ir_attr_ints(n, id, &cnt);
    if (!p || cnt == 0) return true;
    if (cnt != want) return false;
    memcpy(v, p, want * sizeof *v);
    return true;
}

static IrAutoPad auto_pad_of(const char *s) {
    if (strcmp(s, "SAME_UPPER") == 0) return IR_AUTO_PAD_SAME_UPPER;
    if (strcmp(s, "SAME_LOWER") == 0) return IR_AUTO_PAD_SAME_LOWER;
    if (strcmp(s, "VALID") == 0) return IR_AUTO_PAD_VALID;
    return IR_AUTO_PAD_NOTSET;
}

bool ir_conv_attrs(const IrNode *n, int ns, const IrType *w, IrConvAttrs *a, const char **why) {
    ConvIds ids;
    *why = NULL;
    if (!conv_ids((IrOp)n->op, &ids)) {
        *why = "this op as a convolution or pool";
        return false;
    }
    if (ns < 0 || ns > IR_GEOM_SPATIAL) {
        *why = "more spatial dims than a tensor can have";
        return false;
    }
    memset(a, 0, sizeof *a);
    a->ns = ns;
    for (int i = 0; i < IR_GEOM_SPATIAL; i++) a->k[i] = -1, a->s[i] = 1, a->d[i] = 1;
    uint32_t un = (uint32_t)ns;
    if (!read_ints(n, ids.kernel_shape, un, a->k)) *why = "a kernel_shape of the wrong length";
    else if (!read_ints(n, ids.strides, un, a->s)) *why = "strides of the wrong length";
    else if (!read_ints(n, ids.dilations, un, a->d)) *why = "dilations of the wrong length";
    else if (!read_ints(n, ids.pads, 2 * un, a->pads)) *why = "pads of the wrong length";
    else if (ids.output_padding != IR_ATTR_COUNT &&
             !read_ints(n, ids.output_padding, un, a->output_padding))
        *why = "an output_padding of the wrong length";
    if (*why) return false;
    for (int i = 0; i < ns; i++) {
        if (a->k[i] < 0 && w && w->rank == ns + 2) a->k[i] = w->dims[i + 2];
        if (a->s[i] < 1 || a->d[i] < 1) {
            *why = "strides and dilations must be positive";
            return false;
        }
    }
    a->pads_given = ir_attr_present(n, ids.pads);
    a->auto_pad = auto_pad_of(ir_attr_s(n, ids.auto_pad));
    a->ceil_mode = ids.ceil_mode != IR_ATTR_COUNT && ir_attr_i(n, ids.ceil_mode);
    a->group = ids.group != IR_ATTR_COUNT ? ir_attr_i(n, ids.group) : 1;
    a->transpose = ids.output_shape != IR_ATTR_COUNT;
    if (a->transpose) {
        a->output_shape = ir_attr_ints(n, ids.output_shape, &a->n_output_shape);
        if (a->n_output_shape != un && a->n_output_shape != un + 2) a->output_shape = NULL;
    }
    return true;
}

static int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -ceil_div(-a, b); }

static bool same(const IrConvAttrs *a) {
    return a->auto_pad == IR_AUTO_PAD_SAME_UPPER || a->auto_pad == IR_AUTO_PAD_SAME_LOWER;
}

int64_t ir_conv_out_dim(const IrConvAttrs *a, int i, int64_t in) {
    int n = a->ns;
    if (a->transpose && a->output_shape)
        return a->output_shape[a->n_output_shape - (uint32_t)n + (uint32_t)i];
    if (in < 0) return -1;
    int64_t s = a->s[i];
    if (!a->transpose && same(a)) return ceil_div(in, s);
    if (a->k[i] < 0) return -1;
    int64_t ek = (a->k[i] - 1) * a->d[i] + 1;
    int64_t pb = a->auto_pad == IR_AUTO_PAD_VALID ? 0 : a->pads[i];
    int64_t pe = a->auto_pad == IR_AUTO_PAD_VALID ? 0 : a->pads[i + n];
    if (a->transpose) {
        if (same(a)) return in * s;
        return s * (in - 1) + a->output_padding[i] + ek - pb - pe;
    }
    int64_t span = in + pb + pe - ek;
    if (span < 0) return 0;
    int64_t out = (a->ceil_mode ? ceil_div(span, s) : floor_div(span, s)) + 1;
    /* With ceil_mode, a last window that would start inside the end padding is dropped. */
    if (a->ceil_mode && (out - 1) * s >= in + pb) out--;
    return out;
}

bool ir_conv_geom(const IrConvAttrs *a, const int64_t *in, const int64_t *out, IrConvGeom *g,
                  const char **why) {
    int n = a->ns;
    memset(g, 0, sizeof *g);
    g->ns = n;
    g->group = a->group;
    *why = NULL;
    for (int i = 0; i < n; i++) {
        int64_t k = a->k[i], s = a->s[i], d = a->d[i];
        if (k < 1) {
            *why = "a kernel below 1";
            return false;
        }
        g->in[i] = in[i], g->out[i] = out[i], g->k[i] = k, g->s[i] = s, g->d[i] = d;
        int64_t ek = (k - 1) * d + 1, pb = a->pads[i], pe = a->pads[i + n];
        /* SAME splits the padding it needs in two, the odd one at the end (UPPER); a
         * ConvTranspose with output_shape and no pads works out its padding the same way */
        bool split = same(a) || (a->transpose && a->n_output_shape > 0 && !a->pads_given);
        if (split) {
            int64_t total = a->transpose ? s * (in[i] - 1) + a->output_padding[i] + ek - out[i]
                                         : (out[i] - 1) * s + ek - in[i];
            if (total < 0) total = 0;
            pb = a->auto_pad == IR_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
            pe = total - pb;
        } else if (a->auto_pad == IR_AUTO_PAD_VALID) {
            pb = pe = 0;
        }
        if (pb < 0 || pe < 0) {
            *why = "negative pads";
            return false;
        }
        g->pad[i] = pb, g->pad_end[i] = pe;
    }
    return true;
}

bool ir_bcast_run(const IrType *b, const IrType *y, int64_t *outer, int64_t *mid, int64_t *inner) {
    if (!ir_type_is_static(b) || !ir_type_is_static(y) || b->rank > y->rank ||
        b->layout != y->layout)
        return false;
    int off = y->rank - b->rank;
    bool seen = false, closed = false; /* the run began; a dim of b's own came after it */
    *outer = *mid = *inner = 1;
    for (int i = 0; i < y->rank; i++) {
        int64_t bd = i < off ? 1 : b->dims[i - off], yd = y->dims[i];
        if (bd != yd && bd != 1) return false;
        if (yd == 1) continue; /* belongs to either side */
        if (bd == 1) {
            if (closed) return false; /* a second run */
            seen = true;
            *mid *= yd;
        } else if (seen) {
            closed = true;
            *inner *= yd;
        } else {
            *outer *= yd;
        }
    }
    return seen;
}
