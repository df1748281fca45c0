/* C backend emitters of the nn op family: Conv, ConvTranspose and FusedConv (runtime/rt_conv.h,
 * the fused bias/residual/activation epilogue in runtime/rt_act.h), the
 * pools (runtime/rt_pool.h) and the normalizations (runtime/rt_norm.h). Geometry is resolved
 * here, once, from the static shapes: auto_pad and output_shape become explicit leading pads,
 * 1D/2D become 3D with leading sizes of 1, and each node emits one kernel call with its
 * geometry as a static const struct. float32/float64/float16/bfloat16 (pools: also int8 and
 * uint8 for MaxPool). Values that passes/layout.c stores channels-last (IrType.layout NHWC,
 * dims (N,H,W,C)) dispatch to the NHWC kernels (runtime/rt_conv_nhwc.h, rt_pool.h): a Conv
 * or FusedConv reading NHWC X takes its weights as (KH,KW,C/group,M) and writes NHWC Y. */
#include <math.h>
#include <string.h>

#include "backend/c/cgen.h"
#include "backend/plan.h"
#include "ir/geom.h"
#include "passes/passes.h"
#include "runtime/rt_wino.h" /* rt_wino_ws_floats: the workspace a Winograd block needs */

#define NN_SPATIAL 3 /* = RT_CONV_SPATIAL: spatial dims the runtime kernels take */

static bool nn_has_output(const IrNode *n, uint32_t i) {
    return i < n->n_outputs && n->outputs[i] != IR_NONE;
}

/* True when every input in ins (IR_NONE skipped) has element type t. */
static bool nn_same_dtype(CgenCtx *cx, const IrNode *n, IrDType t) {
    for (uint32_t i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] != IR_NONE && cgen_type(cx, n->inputs[i])->dtype != t) return false;
    return true;
}

/* Product of dims [from, to) of t. */
static int64_t nn_prod(const IrType *t, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= t->dims[i];
    return p;
}

/* ---- convolution and pooling geometry ---- */

/* Spatial geometry of one node, padded to NN_SPATIAL dims with leading 1s. */
typedef struct NnGeom {
    int ns; /* spatial dims of the model's tensors */
    int64_t group;
    int64_t in[NN_SPATIAL], out[NN_SPATIAL], k[NN_SPATIAL], s[NN_SPATIAL], d[NN_SPATIAL];
    int64_t pad[NN_SPATIAL];     /* leading pads */
    int64_t pad_end[NN_SPATIAL]; /* trailing pads as the model states them (pools) */
} NnGeom;

/* Whether v is stored channels-last (passes/layout.c). */
static bool nn_nhwc(const CgenCtx *cx, uint32_t v) {
    return cgen_type(cx, v)->layout == IR_LAYOUT_NHWC;
}

/* The (N,C,H,W) view of an NHWC type (N,H,W,C), and the (M,C/group,KH,KW) view of NHWC
 * convolution weights (KH,KW,C/group,M): the geometry code reads ONNX's order. */
static IrType nn_nchw_view(const IrType *t, bool weights) {
    IrType v = *t;
    if (t->rank != 4) return v;
    static const int act_perm[4] = {0, 3, 1, 2}, w_perm[4] = {3, 2, 0, 1};
    const int *p = weights ? w_perm : act_perm;
    for (int i = 0; i < 4; i++) v.dims[i] = t->dims[p[i]];
    v.layout = IR_LAYOUT_PLAIN;
    return v;
}

/* Fills g for a conv-like node with input type tx (N,C,spatial...) and output type ty
 * (ir/geom.c decodes the attributes and resolves auto_pad). The kernel comes from
 * kernel_shape, else from tw's dims 2.. (tw may be NULL for pools). */
static bool nn_geom_types(CgenCtx *cx, const IrNode *n, const IrType *tx, const IrType *tw,
                          const IrType *ty, NnGeom *g) {
    int ns = tx->rank - 2;
    if (ns < 0 || ns > NN_SPATIAL || ty->rank != tx->rank)
        return cgen_unsupported(cx, n, "inputs of rank %d (spatial dims 0..%d are supported)",
                                tx->rank, NN_SPATIAL);
    IrConvAttrs a;
    IrConvGeom cg;
    const char *why;
    if (!ir_conv_attrs(n, ns, tw, &a, &why) ||
        !ir_conv_geom(&a, tx->dims + 2, ty->dims + 2, &cg, &why))
        return cgen_unsupported(cx, n, "%s", why);
    memset(g, 0, sizeof *g);
    g->ns = ns;
    g->group = cg.group;
    int lead = NN_SPATIAL - ns;
    for (int i = 0; i < NN_SPATIAL; i++) g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
    for (int i = 0; i < ns; i++) {
        int b = lead + i;
        g->in[b] = cg.in[i], g->out[b] = cg.out[i], g->k[b] = cg.k[i];
        g->s[b] = cg.s[i], g->d[b] = cg.d[i], g->pad[b] = cg.pad[i], g->pad_end[b] = cg.pad_end[i];
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

/* ---- Conv, ConvTranspose, FusedConv ---- */


/* FusedConv's epilogue as an RtAct initializer, or NULL (after a diagnostic). */
static const char *nn_act_init(CgenCtx *cx, const IrNode *n) {
    const char *kind = pass_act_c_name(ir_attr_s(n, IR_ATTR_FUSED_CONV_ACTIVATION));
    if (!kind) {
        cgen_unsupported(cx, n, "activation '%s'", ir_attr_s(n, IR_ATTR_FUSED_CONV_ACTIVATION));
        return NULL;
    }
    return cgen_fmt(cx, "{%s, %s, %s}", kind,
                    cgen_flit(cx, ir_attr_f(n, IR_ATTR_FUSED_CONV_ACT_ALPHA), false),
                    cgen_flit(cx, ir_attr_f(n, IR_ATTR_FUSED_CONV_ACT_BETA), false));
}

static bool emit_conv(CgenCtx *cx, const IrNode *n) {
    bool tr = n->op == IR_OP_CONV_TRANSPOSE, fused = n->op == IR_OP_FUSED_CONV;
    uint32_t x = n->inputs[0], w = n->inputs[1], y = n->outputs[0];
    bool nhwc = nn_nhwc(cx, x);
    /* weights packed for runtime/rt_pgemm.h (backend/plan.c): (G, NP, KH, KW, C/group, 16),
     * read here as the (KH, KW, C/group, M) they came from */
    bool packed = nhwc && cgen_type(cx, w)->rank == PLAN_PGEMM_RANK;
    /* or transformed for runtime/rt_wino.h: (6, 6, NP, C, 16), from (3, 3, C, M); (4, 4, NP,
     * C, 16): F(2x2, 3x3), rt_wino2_* */
    bool wino = nhwc && cgen_type(cx, w)->rank == PLAN_WINO_RANK;
    bool wino2 = wino && cgen_type(cx, w)->dims[0] == 4;
    bool winos2 = wino && cgen_type(cx, w)->dims[0] == 16; /* stride 2: (16, 1, NP, C, 16) */
    IrType rsck = *cgen_type(cx, w);
    if (wino) {
        int64_t rd[4] = {3, 3, cgen_type(cx, w)->dims[3], cgen_type(cx, y)->dims[3]};
        rsck = ir_type_tensor((IrDType)rsck.dtype, 4, rd);
    } else if (packed) {
        const int64_t *pd = cgen_type(cx, w)->dims;
        int64_t rd[4] = {pd[2], pd[3], pd[4], cgen_type(cx, y)->dims[3]};
        rsck = ir_type_tensor((IrDType)rsck.dtype, 4, rd);
    }
    IrType vx = nn_nchw_view(cgen_type(cx, x), false), vw = nn_nchw_view(&rsck, true);
    IrType vy = nn_nchw_view(cgen_type(cx, y), false);
    const IrType *tx = nhwc ? &vx : cgen_type(cx, x), *tw = nhwc ? &vw : cgen_type(cx, w);
    const IrType *ty = nhwc ? &vy : cgen_type(cx, y);
    const char *sfx = cgen_float_sfx((IrDType)tx->dtype);
    if (!sfx || tw->dtype != tx->dtype)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name((IrDType)tx->dtype));
    if (nhwc != nn_nhwc(cx, y) ||
        (nhwc && (tr || tx->rank != 4 || (tx->dtype != IR_DTYPE_F32 && tx->dtype != IR_DTYPE_F64))))
        return cgen_unsupported(cx, n, "this channels-last form (NHWC: 2-D Conv, f32/f64)");
    NnGeom g;
    if (!nn_geom_types(cx, n, tx, tw, ty, &g)) return false;
    int64_t group = g.group;
    int64_t N = tx->dims[0], C = tx->dims[1], M = ty->dims[1];
    /* a second operand (ops.def): packed weights of C + C2 rows, a 1x1 of unit stride */
    bool has_x2 = fused && packed && ir_has_input(n, 4);
    const IrType *tx2 = has_x2 ? cgen_type(cx, n->inputs[4]) : NULL;
    int64_t C2 = has_x2 ? tx2->dims[3] : 0;
    if (has_x2 && (group != 1 || tx2->rank != 4 || tx2->dims[0] != N || g.out[1] < 1 ||
                   g.out[2] < 1 || tx2->dims[1] % g.out[1] != 0 || tx2->dims[2] % g.out[2] != 0))
        return cgen_unsupported(cx, n, "a second operand that is not a strided (N,H,W,C) 1x1");
    if (group < 1 || C % group != 0 || M % group != 0 || tw->rank != tx->rank ||
        tw->dims[0] != (tr ? C : M) || tw->dims[1] != (tr ? M / group : C / group + C2))
        return cgen_unsupported(cx, n, "channel counts that disagree with group %lld",
                                (long long)group);
    for (int i = 0; i < g.ns; i++)
        if (tw->dims[i + 2] != g.k[NN_SPATIAL - g.ns + i])
            return cgen_unsupported(cx, n, "kernel_shape that disagrees with the weights");
    bool has_b = ir_has_input(n, 2);
    if (has_b &&
        (cgen_numel(cx, n->inputs[2]) != M || cgen_type(cx, n->inputs[2])->dtype != tx->dtype))
        return cgen_unsupported(cx, n, "a bias that is not (M) of the input's type");
    bool has_r = fused && ir_has_input(n, 3);
    if (has_r && (!ir_type_equal(cgen_type(cx, n->inputs[3]), cgen_type(cx, y))))
        return cgen_unsupported(cx, n, "a residual whose type is not the output's");
    const char *act = NULL;
    if (fused) {
        if (tx->dtype != IR_DTYPE_F32 && tx->dtype != IR_DTYPE_F64)
            return cgen_unsupported(cx, n, "a fused element type %s",
                                    ir_dtype_name((IrDType)tx->dtype));
        if (!(act = nn_act_init(cx, n))) return false;
    }
    /* A pointwise convolution with unit strides and no padding is one flat row per plane;
     * except a packed one (rt_pgemm.h reads its pixels as one run either way), which keeps
     * the image's rows: its parallel split cuts them as the depthwise layers around it cut
     * theirs (rt_pconv_nhwc_par_f32), so that each worker reads the rows it wrote. */
    bool pointwise = !tr && !packed;
    for (int i = 0; i < NN_SPATIAL && pointwise; i++)
        pointwise = g.k[i] == 1 && g.s[i] == 1 && g.pad[i] == 0 && g.in[i] == g.out[i];
    if (pointwise) {
        int64_t plane = g.in[0] * g.in[1] * g.in[2];
        g.in[0] = g.in[1] = g.out[0] = g.out[1] = 1;
        g.in[2] = g.out[2] = plane;
    }
    cgen_use_runtime(cx, "rt_act.h");
    cgen_use_runtime(cx, "rt_conv.h");
    if (nhwc) cgen_use_runtime(cx, wino ? "rt_wino.h" : packed ? "rt_pgemm.h" : "rt_conv_nhwc.h");
    const char *nhwc_sfx = nhwc ? "_nhwc" : "";
    CWriter *wr = cx->w;
    nn_open_block(wr);
    cw_open(wr, "static const RtConvGeom geom =");
    cw_line(wr, ".n = %lld, .c = %lld, .m = %lld, .group = %lld,", (long long)N, (long long)C,
            (long long)M, (long long)group);
    cw_line(wr, ".in = %s, .out = %s,", nn_list3(cx, g.in), nn_list3(cx, g.out));
    cw_line(wr, ".k = %s, .s = %s,", nn_list3(cx, g.k), nn_list3(cx, g.s));
    cw_line(wr, ".d = %s, .pad = %s", nn_list3(cx, g.d), nn_list3(cx, g.pad));
    cw_close(wr, ";");
    if (has_x2) { /* its 1x1: the stride is the ratio of the sides (ops.def) */
        int64_t in2[3] = {1, tx2->dims[1], tx2->dims[2]}, one[3] = {1, 1, 1}, zero[3] = {0};
        int64_t s2[3] = {1, tx2->dims[1] / g.out[1], tx2->dims[2] / g.out[2]};
        cw_open(wr, "static const RtConvGeom geom2 =");
        cw_line(wr, ".n = %lld, .c = %lld, .m = %lld, .group = 1,", (long long)N,
                (long long)C2, (long long)M);
        cw_line(wr, ".in = %s, .out = %s,", nn_list3(cx, in2), nn_list3(cx, g.out));
        cw_line(wr, ".k = %s, .s = %s,", nn_list3(cx, one), nn_list3(cx, s2));
        cw_line(wr, ".d = %s, .pad = %s", nn_list3(cx, one), nn_list3(cx, zero));
        cw_close(wr, ";");
    }
    /* channels-last convolutions share their tiles among the workers (rt_par.h) */
    double macs = (double)cgen_numel(cx, y) * (double)(C / group + C2);
    for (int i = 0; i < NN_SPATIAL; i++) macs *= (double)g.k[i];
    /* one output pixel an image (an SE block's two 1x1s): a vector times the weights, each
     * weight read once for one multiply-add, at ~2.2 GMAC/s (EfficientNet-B0's 48 -> 1152:
     * 25 us for 55 Ki MACs) against the ~5 that CGEN_PAR_MIN_MACS assumes */
    if (packed && g.out[0] * g.out[1] * g.out[2] == 1) macs *= 2.0;
    const char *par = nhwc ? cgen_par(cx, macs) : "NULL";
    bool split = strcmp(par, "NULL") != 0;
    if (has_x2) {
        cw_line(wr, "static const RtAct act = %s;", act);
        cw_line(wr, "rt_pconv2_nhwc%s_f32(%s, %s, %s, %s, %s, %s, &geom, &geom2, &act%s%s);",
                split ? "_par" : "", cgen_ptr(cx, x), cgen_ptr(cx, n->inputs[4]),
                cgen_ptr(cx, w), has_b ? cgen_ptr(cx, n->inputs[2]) : "NULL",
                has_r ? cgen_ptr(cx, n->inputs[3]) : "NULL", cgen_ptr(cx, y),
                split ? ", " : "", split ? par : "");
    } else if (packed || wino) {
        if (fused) cw_line(wr, "static const RtAct act = %s;", act);
        /* Winograd's transformed input goes to the workers' scratch: a block of tiles as
         * tall as the microkernel, where the stack holds fewer at 128 channels */
        if (wino && split)
            cgen_par_scratch(cx, rt_wino_x_ws_floats(C, winos2 ? RT_WINOS2 : wino2 ? 2
                                                                  : RT_WINO_M) *
                                     (int64_t)sizeof(float));
        /* rows 4 KiB apart (C x the stride across a multiple of 1024: ResNet-50's last
         * stages) are copied to the workers' scratch, a pixel block at a time */
        if (packed && split)
            cgen_par_scratch(cx, rt_pgemm_apk_bytes(g.out[1] * g.out[2], C, g.s[2]));
        cw_line(wr, "%s%s_f32(%s, %s, %s, %s, %s, &geom, %s%s%s);",
                winos2 ? "rt_winos2_nhwc" : wino2 ? "rt_wino2_nhwc"
                : wino ? "rt_wino_nhwc" : "rt_pconv_nhwc",
                split ? "_par" : "", cgen_ptr(cx, x),
                cgen_ptr(cx, w), has_b ? cgen_ptr(cx, n->inputs[2]) : "NULL",
                has_r ? cgen_ptr(cx, n->inputs[3]) : "NULL", cgen_ptr(cx, y),
                fused ? "&act" : "NULL", split ? ", " : "", split ? par : "");
    } else if (split) {
        if (fused) cw_line(wr, "static const RtAct act = %s;", act);
        cw_line(wr, "rt_conv_nhwc_fused_par_%s(%s, %s, %s, %s, %s, &geom, %s, par);", sfx,
                cgen_ptr(cx, x), cgen_ptr(cx, w), has_b ? cgen_ptr(cx, n->inputs[2]) : "NULL",
                has_r ? cgen_ptr(cx, n->inputs[3]) : "NULL", cgen_ptr(cx, y),
                fused ? "&act" : "NULL");
    } else if (fused) {
        cw_line(wr, "static const RtAct act = %s;", act);
        cw_line(wr, "rt_conv%s_fused_%s(%s, %s, %s, %s, %s, &geom, &act);", nhwc_sfx, sfx,
                cgen_ptr(cx, x),
                cgen_ptr(cx, w), has_b ? cgen_ptr(cx, n->inputs[2]) : "NULL",
                has_r ? cgen_ptr(cx, n->inputs[3]) : "NULL", cgen_ptr(cx, y));
    } else {
        cw_line(wr, "rt_conv%s_%s(%s, %s, %s, %s, &geom);", tr ? "_transpose" : nhwc_sfx, sfx,
                cgen_ptr(cx, x), cgen_ptr(cx, w), has_b ? cgen_ptr(cx, n->inputs[2]) : "NULL",
                cgen_ptr(cx, y));
    }
    cw_close(wr, NULL);
    return true;
}

/* ---- pools ---- */

/* Runtime suffix of a MaxPool element type (floats, int8, uint8), or NULL. */
static const char *nn_max_sfx(IrDType t) {
    if (t == IR_DTYPE_I8) return "i8";
    if (t == IR_DTYPE_U8) return "u8";
    return cgen_float_sfx(t);
}

static bool emit_pool(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    bool nhwc = nn_nhwc(cx, x);
    IrType vx = nn_nchw_view(cgen_type(cx, x), false), vy = nn_nchw_view(cgen_type(cx, y), false);
    const IrType *tx = nhwc ? &vx : cgen_type(cx, x), *ty = nhwc ? &vy : cgen_type(cx, y);
    IrDType dt = (IrDType)tx->dtype;
    bool is_max = n->op == IR_OP_MAX_POOL;
    const char *sfx = is_max ? nn_max_sfx(dt) : cgen_float_sfx(dt);
    if (!sfx) return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(dt));
    if (nhwc != nn_nhwc(cx, y) ||
        (nhwc && (n->op == IR_OP_LP_POOL || nn_has_output(n, 1) || tx->rank != 4 ||
                  (dt != IR_DTYPE_F32 && dt != IR_DTYPE_F64))))
        return cgen_unsupported(cx, n, "this channels-last form (NHWC: 2-D f32/f64 max or "
                                       "average pool without indices)");
    NnGeom g;
    if (!nn_geom_types(cx, n, tx, NULL, ty, &g)) return false;
    if (!ir_attr_present(n, is_max                        ? IR_ATTR_MAX_POOL_KERNEL_SHAPE
                            : n->op == IR_OP_AVERAGE_POOL ? IR_ATTR_AVERAGE_POOL_KERNEL_SHAPE
                                                          : IR_ATTR_LP_POOL_KERNEL_SHAPE))
        return cgen_unsupported(cx, n, "a pool without kernel_shape");
    cgen_use_runtime(cx, "rt_pool.h");
    CWriter *wr = cx->w;
    nn_open_block(wr);
    cw_open(wr, "static const RtPoolGeom geom =");
    cw_line(wr, ".nc = %lld,%s", (long long)(nhwc ? tx->dims[0] : tx->dims[0] * tx->dims[1]),
            nhwc ? " /* batch: channels-last, the channels are the kernel's argument */" : "");
    cw_line(wr, ".in = %s, .out = %s,", nn_list3(cx, g.in), nn_list3(cx, g.out));
    cw_line(wr, ".k = %s, .s = %s, .d = %s,", nn_list3(cx, g.k), nn_list3(cx, g.s),
            nn_list3(cx, g.d));
    cw_line(wr, ".pad = %s, .pad_end = %s", nn_list3(cx, g.pad), nn_list3(cx, g.pad_end));
    cw_close(wr, ";");
    const char *px = cgen_ptr(cx, x), *py = cgen_ptr(cx, y);
    if (nhwc) {
        /* a compare an element of each window: shared by output rows from 64 Ki up */
        const char *par = is_max ? cgen_par(cx, (double)cgen_numel(cx, y) *
                                                    (double)(g.k[0] * g.k[1] * g.k[2]))
                                 : "NULL";
        if (strcmp(par, "NULL") != 0)
            cw_line(wr, "rt_maxpool_nhwc_par_%s(%s, %s, &geom, %lld, par);", sfx, px, py,
                    (long long)tx->dims[1]);
        else if (is_max)
            cw_line(wr, "rt_maxpool_nhwc_%s(%s, %s, &geom, %lld);", sfx, px, py,
                    (long long)tx->dims[1]);
        else
            cw_line(wr, "rt_avgpool_nhwc_%s(%s, %s, &geom, %lld, %d);", sfx, px, py,
                    (long long)tx->dims[1],
                    ir_attr_i(n, IR_ATTR_AVERAGE_POOL_COUNT_INCLUDE_PAD) ? 1 : 0);
        cw_close(wr, NULL);
        return true;
    }
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
    const char *sfx = is_max ? nn_max_sfx(dt) : cgen_float_sfx(dt);
    if (!sfx) return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(dt));
    if (tx->rank < 2) return cgen_unsupported(cx, n, "inputs of rank below 2");
    bool nhwc = nn_nhwc(cx, x);
    if (nhwc != nn_nhwc(cx, y) ||
        (nhwc && (tx->rank != 4 || n->op == IR_OP_GLOBAL_LP_POOL ||
                  (dt != IR_DTYPE_F32 && dt != IR_DTYPE_F64))))
        return cgen_unsupported(cx, n, "this channels-last form (NHWC: 2-D f32/f64 max or "
                                       "average)");
    int64_t ch = nhwc ? tx->dims[3] : tx->dims[1];
    int64_t nc = tx->dims[0] * ch, size = cgen_numel(cx, x) / (nc > 0 ? nc : 1);
    if (nc == 0) return true; /* nothing to compute; an empty map still gives NaN or -inf */
    cgen_use_runtime(cx, "rt_pool.h");
    const char *px = cgen_ptr(cx, x), *py = cgen_ptr(cx, y);
    if (nhwc) { /* one add or compare an element: shared by channel blocks from 64 Ki up */
        const char *par = cgen_par(cx, (double)tx->dims[0] * (double)size * (double)ch);
        if (strcmp(par, "NULL") != 0)
            cw_line(cx->w, "rt_global_pool_nhwc_par_%s(%s, %s, %lld, %lld, %lld, %d, par); "
                           "/* (N,H,W,C) */", sfx, px, py, (long long)tx->dims[0],
                    (long long)size, (long long)ch, is_max ? 1 : 0);
        else
            cw_line(cx->w, "rt_global_pool_nhwc_%s(%s, %s, %lld, %lld, %lld, %d); /* (N,H,W,C) */",
                    sfx, px, py, (long long)tx->dims[0], (long long)size, (long long)ch,
                    is_max ? 1 : 0);
        return true;
    }
    if (n->op == IR_OP_GLOBAL_LP_POOL)
        cw_line(cx->w, "rt_global_lppool_%s(%s, %s, %lld, %lld, %lld);", sfx, px, py, (long long)nc,
                (long long)size, (long long)ir_attr_i(n, IR_ATTR_GLOBAL_LP_POOL_P));
    else
        cw_line(cx->w, "rt_global_%spool_%s(%s, %s, %lld, %lld);", is_max ? "max" : "avg", sfx, px,
                py, (long long)nc, (long long)size);
    return true;
}

/* ---- normalizations ---- */

/* Checks the input types of a normalization whose inputs all share x's float type; returns
 * the runtime suffix or NULL after a diagnostic. */
static const char *nn_norm_sfx(CgenCtx *cx, const IrNode *n, int min_rank) {
    const IrType *tx = cgen_type(cx, n->inputs[0]);
    IrDType dt = (IrDType)tx->dtype;
    const char *sfx = cgen_float_sfx(dt);
    if (!sfx) {
        cgen_unsupported(cx, n, "element type %s", ir_dtype_name(dt));
        return NULL;
    }
    if (!nn_same_dtype(cx, n, dt)) {
        cgen_unsupported(cx, n, "inputs of mixed element types");
        return NULL;
    }
    if (tx->rank < min_rank) {
        cgen_unsupported(cx, n, "inputs of rank %d (at least %d)", tx->rank, min_rank);
        return NULL;
    }
    return sfx;
}

/* Whether every input from `from` on has exactly `want` elements. */
static bool nn_params_are(CgenCtx *cx, const IrNode *n, uint32_t from, int64_t want) {
    for (uint32_t i = from; i < n->n_inputs; i++)
        if (n->inputs[i] != IR_NONE && cgen_numel(cx, n->inputs[i]) != want) return false;
    return true;
}

static bool emit_batch_norm(CgenCtx *cx, const IrNode *n) {
    const char *sfx = nn_norm_sfx(cx, n, 2);
    if (!sfx) return false;
    const IrType *tx = cgen_type(cx, n->inputs[0]);
    IrDType dt = (IrDType)tx->dtype;
    int64_t N = tx->dims[0], C = tx->dims[1], S = nn_prod(tx, 2, tx->rank);
    if (n->opset < 9 && ir_attr_present(n, IR_ATTR_BATCH_NORMALIZATION_SPATIAL) &&
        ir_attr_i(n, IR_ATTR_BATCH_NORMALIZATION_SPATIAL) == 0)
        return cgen_unsupported(cx, n, "spatial=0");
    if (n->n_inputs < 5 || !nn_params_are(cx, n, 1, C))
        return cgen_unsupported(cx, n, "scale, B, mean or var that is not (C)");
    bool training = n->opset >= 14 && ir_attr_i(n, IR_ATTR_BATCH_NORMALIZATION_TRAINING_MODE);
    if (!training &&
        (nn_has_output(n, 1) || nn_has_output(n, 2) || nn_has_output(n, 3) || nn_has_output(n, 4)))
        return cgen_unsupported(cx, n, "the training outputs of opset %d", n->opset);
    cgen_use_runtime(cx, "rt_norm.h");
    const char *eps = cgen_flit(cx, ir_attr_f(n, IR_ATTR_BATCH_NORMALIZATION_EPSILON), dt == IR_DTYPE_F64);
    const char *p[5];
    for (int i = 0; i < 5; i++)
        p[i] = cgen_ptr(cx, n->inputs[i]);
    if (training) {
        const char *fn = cgen_fmt(cx, "rt_batchnorm_train_%s(", sfx);
        cw_line(cx->w, "%s%s, %s, %s, %s, %s, %s, %s, %s,", fn, p[0], p[1], p[2], p[3], p[4],
                cgen_ptr(cx, n->outputs[0]),
                nn_has_output(n, 1) ? cgen_ptr(cx, n->outputs[1]) : "NULL",
                nn_has_output(n, 2) ? cgen_ptr(cx, n->outputs[2]) : "NULL");
        cw_line(cx->w, "%*s%lld, %lld, %lld, %s, %s);", (int)strlen(fn), "", (long long)N,
                (long long)C, (long long)S, eps,
                cgen_flit(cx, ir_attr_f(n, IR_ATTR_BATCH_NORMALIZATION_MOMENTUM), dt == IR_DTYPE_F64));
    } else {
        cw_line(cx->w, "rt_batchnorm_%s(%s, %s, %s, %s, %s, %s, %lld, %lld, %lld, %s);", sfx, p[0],
                p[1], p[2], p[3], p[4], cgen_ptr(cx, n->outputs[0]), (long long)N, (long long)C,
                (long long)S, eps);
    }
    return true;
}

static bool emit_instance_norm(CgenCtx *cx, const IrNode *n) {
    const char *sfx = nn_norm_sfx(cx, n, 2);
    if (!sfx) return false;
    const IrType *tx = cgen_type(cx, n->inputs[0]);
    int64_t N = tx->dims[0], C = tx->dims[1], S = nn_prod(tx, 2, tx->rank);
    if (!nn_params_are(cx, n, 1, C)) return cgen_unsupported(cx, n, "scale or B that is not (C)");
    cgen_use_runtime(cx, "rt_norm.h");
    cw_line(cx->w, "rt_instancenorm_%s(%s, %s, %s, %s, %lld, %lld, %lld, %s);", sfx,
            cgen_ptr(cx, n->inputs[0]), cgen_ptr(cx, n->inputs[1]), cgen_ptr(cx, n->inputs[2]),
            cgen_ptr(cx, n->outputs[0]), (long long)N, (long long)C, (long long)S,
            cgen_flit(cx, ir_attr_f(n, IR_ATTR_INSTANCE_NORMALIZATION_EPSILON), (IrDType)tx->dtype == IR_DTYPE_F64));
    return true;
}

static bool emit_group_norm(CgenCtx *cx, const IrNode *n) {
    const char *sfx = nn_norm_sfx(cx, n, 2);
    if (!sfx) return false;
    const IrType *tx = cgen_type(cx, n->inputs[0]);
    int64_t N = tx->dims[0], C = tx->dims[1], S = nn_prod(tx, 2, tx->rank);
    int64_t G = ir_attr_i(n, IR_ATTR_GROUP_NORMALIZATION_NUM_GROUPS);
    if (G < 1 || C % G != 0)
        return cgen_unsupported(cx, n, "num_groups %lld for %lld channels", (long long)G,
                                (long long)C);
    bool per_channel = nn_params_are(cx, n, 1, C);
    if (!per_channel && !nn_params_are(cx, n, 1, G))
        return cgen_unsupported(cx, n, "scale or bias that is neither (C) nor (num_groups)");
    cgen_use_runtime(cx, "rt_norm.h");
    cw_line(cx->w, "rt_groupnorm_%s(%s, %s, %s, %s, %lld, %lld, %lld, %lld, %d, %s);", sfx,
            cgen_ptr(cx, n->inputs[0]), cgen_ptr(cx, n->inputs[1]), cgen_ptr(cx, n->inputs[2]),
            cgen_ptr(cx, n->outputs[0]), (long long)N, (long long)C, (long long)S, (long long)G,
            per_channel ? 1 : 0,
            cgen_flit(cx, ir_attr_f(n, IR_ATTR_GROUP_NORMALIZATION_EPSILON), (IrDType)tx->dtype == IR_DTYPE_F64));
    return true;
}

/* LayerNormalization and RMSNormalization: x viewed as (rows, cols) split at axis. */
static bool emit_layer_norm(CgenCtx *cx, const IrNode *n) {
    bool rms = n->op == IR_OP_RMSNORMALIZATION;
    const char *sfx = nn_norm_sfx(cx, n, 1);
    if (!sfx) return false;
    const IrType *tx = cgen_type(cx, n->inputs[0]);
    IrDType dt = (IrDType)tx->dtype;
    int64_t axis =
        ir_attr_i(n, rms ? IR_ATTR_RMSNORMALIZATION_AXIS : IR_ATTR_LAYER_NORMALIZATION_AXIS);
    if (axis < 0) axis += tx->rank;
    if (axis < 0 || axis >= tx->rank) return cgen_unsupported(cx, n, "axis out of range");
    int64_t rows = nn_prod(tx, 0, (int)axis), cols = nn_prod(tx, (int)axis, tx->rank);
    int64_t step[2] = {1, 1};
    for (uint32_t i = 1; i < n->n_inputs && i < 3; i++) {
        if (n->inputs[i] == IR_NONE) continue;
        int64_t ne = cgen_numel(cx, n->inputs[i]);
        if (ne != cols && ne != 1)
            return cgen_unsupported(cx, n,
                                    "a scale or bias that is neither X[axis:] nor one value");
        step[i - 1] = ne == cols ? 1 : 0;
    }
    for (uint32_t i = 1; i < n->n_outputs; i++)
        if (nn_has_output(n, i) && cgen_type(cx, n->outputs[i])->dtype != IR_DTYPE_F32)
            return cgen_unsupported(cx, n, "Mean or InvStdDev outputs other than float");
    cgen_use_runtime(cx, "rt_norm.h");
    float eps =
        ir_attr_f(n, rms ? IR_ATTR_RMSNORMALIZATION_EPSILON : IR_ATTR_LAYER_NORMALIZATION_EPSILON);
    if (rms) {
        cw_line(cx->w, "rt_rmsnorm_%s(%s, %s, %s, %lld, %lld, %lld, %s);", sfx,
                cgen_ptr(cx, n->inputs[0]), cgen_ptr(cx, n->inputs[1]), cgen_ptr(cx, n->outputs[0]),
                (long long)rows, (long long)cols, (long long)step[0], cgen_flit(cx, eps, dt == IR_DTYPE_F64));
        return true;
    }
    /* float rows are shared among the workers (a row's statistics stay in one task); an
     * element counts as a multiply-add against CGEN_PAR_MIN_MACS (two passes over the row) */
    const char *par =
        dt == IR_DTYPE_F32 && rows > 1 ? cgen_par(cx, (double)rows * (double)cols) : "NULL";
    bool split = strcmp(par, "NULL") != 0;
    const char *fn = cgen_fmt(cx, "rt_layernorm_%s%s(", split ? "par_" : "", sfx);
    cw_line(cx->w, "%s%s, %s, %s, %s, %s, %s,", fn, cgen_ptr(cx, n->inputs[0]),
            cgen_ptr(cx, n->inputs[1]), ir_has_input(n, 2) ? cgen_ptr(cx, n->inputs[2]) : "NULL",
            cgen_ptr(cx, n->outputs[0]), nn_has_output(n, 1) ? cgen_ptr(cx, n->outputs[1]) : "NULL",
            nn_has_output(n, 2) ? cgen_ptr(cx, n->outputs[2]) : "NULL");
    cw_line(cx->w, "%*s%lld, %lld, %lld, %lld, %s%s);", (int)strlen(fn), "", (long long)rows,
            (long long)cols, (long long)step[0], (long long)step[1],
            cgen_flit(cx, eps, dt == IR_DTYPE_F64), split ? ", par" : "");
    return true;
}

static bool emit_lrn(CgenCtx *cx, const IrNode *n) {
    const char *sfx = nn_norm_sfx(cx, n, 2);
    if (!sfx) return false;
    const IrType *tx = cgen_type(cx, n->inputs[0]);
    IrDType dt = (IrDType)tx->dtype;
    int64_t size = ir_attr_i(n, IR_ATTR_LRN_SIZE);
    if (size < 1) return cgen_unsupported(cx, n, "size %lld", (long long)size);
    cgen_use_runtime(cx, "rt_norm.h");
    cw_line(cx->w, "rt_lrn_%s(%s, %s, %lld, %lld, %lld, %lld, %s, %s, %s);", sfx,
            cgen_ptr(cx, n->inputs[0]), cgen_ptr(cx, n->outputs[0]), (long long)tx->dims[0],
            (long long)tx->dims[1], (long long)nn_prod(tx, 2, tx->rank), (long long)size,
            cgen_flit(cx, ir_attr_f(n, IR_ATTR_LRN_ALPHA), dt == IR_DTYPE_F64),
            cgen_flit(cx, ir_attr_f(n, IR_ATTR_LRN_BETA), dt == IR_DTYPE_F64),
            cgen_flit(cx, ir_attr_f(n, IR_ATTR_LRN_BIAS), dt == IR_DTYPE_F64));
    return true;
}

static bool emit_lp_norm(CgenCtx *cx, const IrNode *n) {
    const char *sfx = nn_norm_sfx(cx, n, 1);
    if (!sfx) return false;
    const IrType *tx = cgen_type(cx, n->inputs[0]);
    int64_t axis = ir_attr_i(n, IR_ATTR_LP_NORMALIZATION_AXIS);
    int64_t p = ir_attr_i(n, IR_ATTR_LP_NORMALIZATION_P);
    if (axis < 0) axis += tx->rank;
    if (axis < 0 || axis >= tx->rank) return cgen_unsupported(cx, n, "axis out of range");
    if (p != 1 && p != 2) return cgen_unsupported(cx, n, "p = %lld (1 or 2)", (long long)p);
    cgen_use_runtime(cx, "rt_norm.h");
    cw_line(cx->w, "rt_lpnorm_%s(%s, %s, %lld, %lld, %lld, %lld);", sfx, cgen_ptr(cx, n->inputs[0]),
            cgen_ptr(cx, n->outputs[0]), (long long)nn_prod(tx, 0, (int)axis),
            (long long)tx->dims[axis], (long long)nn_prod(tx, (int)axis + 1, tx->rank),
            (long long)p);
    return true;
}

#define NN_MVN_EPSILON 1e-9 /* the constant of the op's function body in the ONNX schema */

static bool emit_mvn(CgenCtx *cx, const IrNode *n) {
    const char *sfx = nn_norm_sfx(cx, n, 1);
    if (!sfx) return false;
    const IrType *tx = cgen_type(cx, n->inputs[0]);
    static const int64_t default_axes[] = {0, 2, 3};
    uint32_t n_axes;
    const int64_t *axes = ir_attr_ints(n, IR_ATTR_MEAN_VARIANCE_NORMALIZATION_AXES, &n_axes);
    if (!axes) axes = default_axes, n_axes = 3;
    unsigned mask = 0;
    for (uint32_t i = 0; i < n_axes; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + tx->rank : axes[i];
        if (a < 0 || a >= tx->rank) return cgen_unsupported(cx, n, "axes out of range");
        mask |= 1u << a;
    }
    if (cgen_numel(cx, n->inputs[0]) == 0) return true;
    cgen_use_runtime(cx, "rt_norm.h");
    nn_open_block(cx->w);
    cw_line(cx->w, "static const int64_t dims[] = %s;", cgen_dims(cx, tx));
    cw_line(cx->w, "rt_mvn_%s(%s, %s, %d, dims, 0x%xu, %s);", sfx, cgen_ptr(cx, n->inputs[0]),
            cgen_ptr(cx, n->outputs[0]), tx->rank, mask,
            cgen_flit(cx, NN_MVN_EPSILON, (IrDType)tx->dtype == IR_DTYPE_F64));
    cw_close(cx->w, NULL);
    return true;
}

void cgen_register_nn(CgenEmitFn *table) {
    table[IR_OP_CONV] = emit_conv;
    table[IR_OP_CONV_TRANSPOSE] = emit_conv;
    table[IR_OP_FUSED_CONV] = emit_conv;
    table[IR_OP_MAX_POOL] = emit_pool;
    table[IR_OP_AVERAGE_POOL] = emit_pool;
    table[IR_OP_LP_POOL] = emit_pool;
    table[IR_OP_GLOBAL_AVERAGE_POOL] = emit_global_pool;
    table[IR_OP_GLOBAL_MAX_POOL] = emit_global_pool;
    table[IR_OP_GLOBAL_LP_POOL] = emit_global_pool;
    table[IR_OP_BATCH_NORMALIZATION] = emit_batch_norm;
    table[IR_OP_INSTANCE_NORMALIZATION] = emit_instance_norm;
    table[IR_OP_GROUP_NORMALIZATION] = emit_group_norm;
    table[IR_OP_LAYER_NORMALIZATION] = emit_layer_norm;
    table[IR_OP_RMSNORMALIZATION] = emit_layer_norm;
    table[IR_OP_LRN] = emit_lrn;
    table[IR_OP_LP_NORMALIZATION] = emit_lp_norm;
    table[IR_OP_MEAN_VARIANCE_NORMALIZATION] = emit_mvn;
}
