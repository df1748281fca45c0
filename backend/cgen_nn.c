/* C backend emitters of the nn op family: Conv and ConvTranspose (runtime/rt_conv.h), the
 * pools (runtime/rt_pool.h) and the normalizations (runtime/rt_norm.h). Geometry is resolved
 * here, once, from the static shapes: auto_pad and output_shape become explicit leading pads,
 * 1D/2D become 3D with leading sizes of 1, and each node emits one kernel call with its
 * geometry as a static const struct. float32/float64/float16/bfloat16 (pools: also int8 and
 * uint8 for MaxPool). */
#include <string.h>

#include "backend/cgen.h"

#define NN_SPATIAL 3 /* = RT_CONV_SPATIAL: spatial dims the runtime kernels take */

/* Runtime name suffix of a float element type, or NULL. */
static const char *nn_float_sfx(IrDType t) {
    switch (t) {
    case IR_DTYPE_F32: return "f32";
    case IR_DTYPE_F64: return "f64";
    case IR_DTYPE_F16: return "f16";
    case IR_DTYPE_BF16: return "bf16";
    default: return NULL;
    }
}

static bool nn_has_input(const IrNode *n, uint32_t i) {
    return i < n->n_inputs && n->inputs[i] != IR_NONE;
}

static bool nn_has_output(const IrNode *n, uint32_t i) {
    return i < n->n_outputs && n->outputs[i] != IR_NONE;
}

/* A C float literal that reads back to exactly v. */
static inline const char *nn_flit(CgenCtx *cx, double v) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", v);
    if (!strpbrk(buf, ".eni")) strcat(buf, ".0");
    return cgen_fmt(cx, "%s", buf);
}

/* ---- convolution and pooling geometry ---- */

/* Attribute ids of a conv-like op; ceil_mode is IR_ATTR_COUNT where the op has none. */
typedef struct NnGeomIds {
    IrAttrId auto_pad, dilations, kernel_shape, pads, strides, ceil_mode;
} NnGeomIds;

static bool nn_geom_ids(IrOp op, NnGeomIds *ids) {
#define IDS(OP, CEIL)                                                                     \
    *ids = (NnGeomIds){IR_ATTR_##OP##_AUTO_PAD, IR_ATTR_##OP##_DILATIONS,                 \
                       IR_ATTR_##OP##_KERNEL_SHAPE, IR_ATTR_##OP##_PADS,                  \
                       IR_ATTR_##OP##_STRIDES, CEIL};                                     \
    return true
    switch (op) {
    case IR_OP_CONV: IDS(CONV, IR_ATTR_COUNT);
    case IR_OP_CONV_TRANSPOSE: IDS(CONV_TRANSPOSE, IR_ATTR_COUNT);
    case IR_OP_MAX_POOL: IDS(MAX_POOL, IR_ATTR_MAX_POOL_CEIL_MODE);
    case IR_OP_AVERAGE_POOL: IDS(AVERAGE_POOL, IR_ATTR_AVERAGE_POOL_CEIL_MODE);
    case IR_OP_LP_POOL: IDS(LP_POOL, IR_ATTR_LP_POOL_CEIL_MODE);
    default: return false;
    }
#undef IDS
}

/* Spatial geometry of one node, padded to NN_SPATIAL dims with leading 1s. */
typedef struct NnGeom {
    int ns; /* spatial dims of the model's tensors */
    int64_t in[NN_SPATIAL], out[NN_SPATIAL], k[NN_SPATIAL], s[NN_SPATIAL], d[NN_SPATIAL];
    int64_t pad[NN_SPATIAL];     /* leading pads */
    int64_t pad_end[NN_SPATIAL]; /* trailing pads as the model states them (pools) */
} NnGeom;

/* Reads an ints attribute of exactly want entries into v, keeping v's defaults when it
 * is absent; false (after a diagnostic) when it has another length. */
static bool nn_ints(CgenCtx *cx, const IrNode *n, IrAttrId id, uint32_t want, int64_t *v,
                    const char *what) {
    uint32_t cnt;
    const int64_t *a = ir_attr_ints(n, id, &cnt);
    if (!a || cnt == 0) return true;
    if (cnt != want) return cgen_unsupported(cx, n, "%s with %u entries (want %u)", what, cnt, want);
    memcpy(v, a, want * sizeof *v);
    return true;
}

/* Fills g for a conv-like node with input x (N,C,spatial...) and output y. The kernel comes
 * from kernel_shape, else from w's dims 2.. (w may be IR_NONE for pools). transpose: the
 * ConvTranspose rules for auto_pad and output_shape. */
static bool nn_geom(CgenCtx *cx, const IrNode *n, uint32_t x, uint32_t w, uint32_t y,
                    bool transpose, NnGeom *g) {
    NnGeomIds ids;
    const IrType *tx = cgen_type(cx, x), *ty = cgen_type(cx, y);
    if (!nn_geom_ids((IrOp)n->op, &ids)) return cgen_unsupported(cx, n, "this op as a pool");
    int ns = tx->rank - 2;
    if (ns < 0 || ns > NN_SPATIAL || ty->rank != tx->rank)
        return cgen_unsupported(cx, n, "inputs of rank %d (spatial dims 0..%d are supported)",
                                tx->rank, NN_SPATIAL);
    int64_t k[NN_SPATIAL], s[NN_SPATIAL], d[NN_SPATIAL], pads[2 * NN_SPATIAL];
    for (int i = 0; i < NN_SPATIAL; i++) k[i] = -1, s[i] = 1, d[i] = 1;
    memset(pads, 0, sizeof pads);
    uint32_t un = (uint32_t)ns;
    if (!nn_ints(cx, n, ids.kernel_shape, un, k, "kernel_shape") ||
        !nn_ints(cx, n, ids.strides, un, s, "strides") ||
        !nn_ints(cx, n, ids.dilations, un, d, "dilations") ||
        !nn_ints(cx, n, ids.pads, 2 * un, pads, "pads"))
        return false;
    const IrType *tw = w != IR_NONE ? cgen_type(cx, w) : NULL;
    const char *auto_pad = ir_attr_s(n, ids.auto_pad);
    bool same_upper = strcmp(auto_pad, "SAME_UPPER") == 0;
    bool same = same_upper || strcmp(auto_pad, "SAME_LOWER") == 0;
    bool valid = strcmp(auto_pad, "VALID") == 0;
    uint32_t n_os = 0;
    if (transpose) (void)ir_attr_ints(n, IR_ATTR_CONV_TRANSPOSE_OUTPUT_SHAPE, &n_os);
    bool pads_given = ir_attr_present(n, ids.pads);
    memset(g, 0, sizeof *g);
    g->ns = ns;
    int lead = NN_SPATIAL - ns;
    for (int i = 0; i < NN_SPATIAL; i++) {
        g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
    }
    for (int i = 0; i < ns; i++) {
        int a = lead + i;
        int64_t kk = k[i] >= 0 ? k[i] : tw && tw->rank == tx->rank ? tw->dims[i + 2] : -1;
        if (kk < 1 || s[i] < 1 || d[i] < 1)
            return cgen_unsupported(cx, n, "a kernel, stride or dilation below 1");
        g->in[a] = tx->dims[i + 2];
        g->out[a] = ty->dims[i + 2];
        g->k[a] = kk;
        g->s[a] = s[i];
        g->d[a] = d[i];
        int64_t ek = (kk - 1) * d[i] + 1;
        int64_t pb = pads[i], pe = pads[i + ns];
        if (transpose) {
            uint32_t n_op;
            const int64_t *op = ir_attr_ints(n, IR_ATTR_CONV_TRANSPOSE_OUTPUT_PADDING, &n_op);
            int64_t outpad = op && n_op == un ? op[i] : 0;
            if (same || (n_os > 0 && !pads_given)) {
                int64_t total = s[i] * (g->in[a] - 1) + outpad + ek - g->out[a];
                if (total < 0) total = 0;
                pb = same_upper ? total / 2 : total - total / 2;
                pe = total - pb;
            } else if (valid) {
                pb = pe = 0;
            }
        } else if (same) {
            int64_t total = (g->out[a] - 1) * s[i] + ek - g->in[a];
            if (total < 0) total = 0;
            pb = same_upper ? total / 2 : total - total / 2;
            pe = total - pb;
        } else if (valid) {
            pb = pe = 0;
        }
        if (pb < 0 || pe < 0) return cgen_unsupported(cx, n, "negative pads");
        g->pad[a] = pb;
        g->pad_end[a] = pe;
    }
    return true;
}

static const char *nn_list3(CgenCtx *cx, const int64_t *v) {
    return cgen_i64_list(cx, v, NN_SPATIAL);
}

/* Opens the node's own block ("{" alone on its line); closed with cw_close(w, NULL). */
static void nn_open_block(CWriter *w) {
    cw_line(w, "{");
    w->indent++;
}

/* ---- Conv, ConvTranspose ---- */

static bool emit_conv(CgenCtx *cx, const IrNode *n) {
    bool tr = n->op == IR_OP_CONV_TRANSPOSE;
    uint32_t x = n->inputs[0], w = n->inputs[1], y = n->outputs[0];
    const IrType *tx = cgen_type(cx, x), *tw = cgen_type(cx, w), *ty = cgen_type(cx, y);
    const char *sfx = nn_float_sfx((IrDType)tx->dtype);
    if (!sfx || tw->dtype != tx->dtype)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name((IrDType)tx->dtype));
    NnGeom g;
    if (!nn_geom(cx, n, x, w, y, tr, &g)) return false;
    int64_t group = ir_attr_i(n, tr ? IR_ATTR_CONV_TRANSPOSE_GROUP : IR_ATTR_CONV_GROUP);
    int64_t N = tx->dims[0], C = tx->dims[1], M = ty->dims[1];
    if (group < 1 || C % group != 0 || M % group != 0 || tw->rank != tx->rank ||
        tw->dims[0] != (tr ? C : M) || tw->dims[1] != (tr ? M / group : C / group))
        return cgen_unsupported(cx, n, "channel counts that disagree with group %lld",
                                (long long)group);
    for (int i = 0; i < g.ns; i++)
        if (tw->dims[i + 2] != g.k[NN_SPATIAL - g.ns + i])
            return cgen_unsupported(cx, n, "kernel_shape that disagrees with the weights");
    bool has_b = nn_has_input(n, 2);
    if (has_b && (cgen_numel(cx, n->inputs[2]) != M || cgen_type(cx, n->inputs[2])->dtype != tx->dtype))
        return cgen_unsupported(cx, n, "a bias that is not (M) of the input's type");
    /* A pointwise convolution with unit strides and no padding is one flat row per plane. */
    bool pointwise = !tr;
    for (int i = 0; i < NN_SPATIAL && pointwise; i++)
        pointwise = g.k[i] == 1 && g.s[i] == 1 && g.pad[i] == 0 && g.in[i] == g.out[i];
    if (pointwise) {
        int64_t plane = g.in[0] * g.in[1] * g.in[2];
        g.in[0] = g.in[1] = g.out[0] = g.out[1] = 1;
        g.in[2] = g.out[2] = plane;
    }
    cgen_use_runtime(cx, "rt_conv.h");
    CWriter *wr = cx->w;
    nn_open_block(wr);
    cw_open(wr, "static const RtConvGeom geom =");
    cw_line(wr, ".n = %lld, .c = %lld, .m = %lld, .group = %lld,", (long long)N, (long long)C,
            (long long)M, (long long)group);
    cw_line(wr, ".in = %s, .out = %s,", nn_list3(cx, g.in), nn_list3(cx, g.out));
    cw_line(wr, ".k = %s, .s = %s,", nn_list3(cx, g.k), nn_list3(cx, g.s));
    cw_line(wr, ".d = %s, .pad = %s", nn_list3(cx, g.d), nn_list3(cx, g.pad));
    cw_close(wr, ";");
    cw_line(wr, "rt_conv%s_%s(%s, %s, %s, %s, &geom);", tr ? "_transpose" : "", sfx,
            cgen_ptr(cx, x), cgen_ptr(cx, w), has_b ? cgen_ptr(cx, n->inputs[2]) : "NULL",
            cgen_ptr(cx, y));
    cw_close(wr, NULL);
    return true;
}

/* ---- pools ---- */

/* Runtime suffix of a MaxPool element type (floats, int8, uint8), or NULL. */
static const char *nn_max_sfx(IrDType t) {
    if (t == IR_DTYPE_I8) return "i8";
    if (t == IR_DTYPE_U8) return "u8";
    return nn_float_sfx(t);
}

static bool emit_pool(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    const IrType *tx = cgen_type(cx, x);
    IrDType dt = (IrDType)tx->dtype;
    bool is_max = n->op == IR_OP_MAX_POOL;
    const char *sfx = is_max ? nn_max_sfx(dt) : nn_float_sfx(dt);
    if (!sfx) return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(dt));
    NnGeom g;
    if (!nn_geom(cx, n, x, IR_NONE, y, false, &g)) return false;
    if (!ir_attr_present(n, is_max ? IR_ATTR_MAX_POOL_KERNEL_SHAPE
                         : n->op == IR_OP_AVERAGE_POOL ? IR_ATTR_AVERAGE_POOL_KERNEL_SHAPE
                                                       : IR_ATTR_LP_POOL_KERNEL_SHAPE))
        return cgen_unsupported(cx, n, "a pool without kernel_shape");
    cgen_use_runtime(cx, "rt_pool.h");
    CWriter *wr = cx->w;
    nn_open_block(wr);
    cw_open(wr, "static const RtPoolGeom geom =");
    cw_line(wr, ".nc = %lld,", (long long)(tx->dims[0] * tx->dims[1]));
    cw_line(wr, ".in = %s, .out = %s,", nn_list3(cx, g.in), nn_list3(cx, g.out));
    cw_line(wr, ".k = %s, .s = %s, .d = %s,", nn_list3(cx, g.k), nn_list3(cx, g.s),
            nn_list3(cx, g.d));
    cw_line(wr, ".pad = %s, .pad_end = %s", nn_list3(cx, g.pad), nn_list3(cx, g.pad_end));
    cw_close(wr, ";");
    const char *px = cgen_ptr(cx, x), *py = cgen_ptr(cx, y);
    switch ((IrOp)n->op) {
    case IR_OP_MAX_POOL: {
        bool with_idx = nn_has_output(n, 1);
        cw_line(wr, "rt_maxpool_%s(%s, %s, %s, &geom, %d);", sfx, px, py,
                with_idx ? cgen_ptr(cx, n->outputs[1]) : "NULL",
                ir_attr_i(n, IR_ATTR_MAX_POOL_STORAGE_ORDER) ? 1 : 0);
        break;
    }
    case IR_OP_AVERAGE_POOL:
        cw_line(wr, "rt_avgpool_%s(%s, %s, &geom, %d);", sfx, px, py,
                ir_attr_i(n, IR_ATTR_AVERAGE_POOL_COUNT_INCLUDE_PAD) ? 1 : 0);
        break;
    default:
        cw_line(wr, "rt_lppool_%s(%s, %s, &geom, %lld);", sfx, px, py,
                (long long)ir_attr_i(n, IR_ATTR_LP_POOL_P));
        break;
    }
    cw_close(wr, NULL);
    return true;
}

static bool emit_global_pool(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    const IrType *tx = cgen_type(cx, x);
    IrDType dt = (IrDType)tx->dtype;
    bool is_max = n->op == IR_OP_GLOBAL_MAX_POOL;
    const char *sfx = is_max ? nn_max_sfx(dt) : nn_float_sfx(dt);
    if (!sfx) return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(dt));
    if (tx->rank < 2) return cgen_unsupported(cx, n, "inputs of rank below 2");
    int64_t nc = tx->dims[0] * tx->dims[1], size = cgen_numel(cx, x) / (nc > 0 ? nc : 1);
    if (nc == 0 || size == 0) return true; /* nothing to compute */
    cgen_use_runtime(cx, "rt_pool.h");
    const char *px = cgen_ptr(cx, x), *py = cgen_ptr(cx, y);
    if (n->op == IR_OP_GLOBAL_LP_POOL)
        cw_line(cx->w, "rt_global_lppool_%s(%s, %s, %lld, %lld, %lld);", sfx, px, py,
                (long long)nc, (long long)size, (long long)ir_attr_i(n, IR_ATTR_GLOBAL_LP_POOL_P));
    else
        cw_line(cx->w, "rt_global_%spool_%s(%s, %s, %lld, %lld);", is_max ? "max" : "avg", sfx,
                px, py, (long long)nc, (long long)size);
    return true;
}

void cgen_register_nn(CgenEmitFn *table) {
    table[IR_OP_CONV] = emit_conv;
    table[IR_OP_CONV_TRANSPOSE] = emit_conv;
    table[IR_OP_MAX_POOL] = emit_pool;
    table[IR_OP_AVERAGE_POOL] = emit_pool;
    table[IR_OP_LP_POOL] = emit_pool;
    table[IR_OP_GLOBAL_AVERAGE_POOL] = emit_global_pool;
    table[IR_OP_GLOBAL_MAX_POOL] = emit_global_pool;
    table[IR_OP_GLOBAL_LP_POOL] = emit_global_pool;
}
