/* C backend emitters of the miscellaneous ops no other family owns: Shrink, TensorScatter,
 * RotaryEmbedding, CausalConvWithState, DeformConv, LinearAttention, Unique, TfIdfVectorizer,
 * the training optimizers of ai.onnx.preview.training (Adagrad, Adam, Momentum), the numeric
 * ai.onnx.ml ops (Binarizer, ArrayFeatureExtractor, Scaler, TreeEnsemble, LabelEncoder) and
 * the random ops (seeded generator of runtime/rt_misc.h). Elementwise ops become inline loops;
 * the rest call rt_misc.h with attribute tables baked in as static const arrays. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/c/cgen.h"
#include "backend/c/cgen_count.h"

#define MISC_MAX_SCRATCH 65536 /* elements of a stack scratch array in NAME_run (256 KiB f32) */

static bool m_has_output(const IrNode *n, uint32_t k) {
    return n->n_outputs > k && n->outputs[k] != IR_NONE;
}

static IrDType m_dtype(const CgenCtx *cx, uint32_t v) { return (IrDType)cgen_type(cx, v)->dtype; }

static bool m_static(CgenCtx *cx, const IrNode *n, uint32_t v) {
    if (!ir_type_is_static(cgen_type(cx, v)))
        return cgen_unsupported(cx, n, "a tensor of non-static shape");
    return true;
}

static bool m_is_int(IrDType t) {
    switch (t) {
    case IR_DTYPE_I8:
    case IR_DTYPE_U8:
    case IR_DTYPE_I16:
    case IR_DTYPE_U16:
    case IR_DTYPE_I32:
    case IR_DTYPE_U32:
    case IR_DTYPE_I64:
    case IR_DTYPE_U64:
        return true;
    default:
        return false;
    }
}

/* C expression loading element `e` of type t as double. */
static const char *m_ld(CgenCtx *cx, IrDType t, const char *e) {
    if (t == IR_DTYPE_F16) return cgen_fmt(cx, "(double)rt_f16_to_f32(%s)", e);
    if (t == IR_DTYPE_BF16) return cgen_fmt(cx, "(double)rt_bf16_to_f32(%s)", e);
    return cgen_fmt(cx, "(double)%s", e);
}

/* C expression converting double expression `e` to type t. */
static const char *m_st(CgenCtx *cx, IrDType t, const char *e) {
    if (t == IR_DTYPE_F16) return cgen_fmt(cx, "rt_f32_to_f16((float)(%s))", e);
    if (t == IR_DTYPE_BF16) return cgen_fmt(cx, "rt_f32_to_bf16((float)(%s))", e);
    return cgen_fmt(cx, "(%s)(%s)", bundle_ctype(t), e);
}

/* A double literal that reads back exactly. */
static const char *m_dlit(CgenCtx *cx, double v) { return cgen_flit(cx, v, true); }

/* Opens "{ int64_t i; for (i = 0; i < n; i++) {"; closed by m_loop_close. */
static void m_loop_open(CgenCtx *cx, int64_t n) {
    CWriter *w = cx->w;
    cw_line(w, "{");
    w->indent++;
    cw_line(w, "int64_t i;");
    cw_open(w, "for (i = 0; i < %lld; i++)", (long long)n);
}

static void m_loop_close(CgenCtx *cx) {
    cw_close(cx->w, NULL);
    cx->w->indent--;
    cw_line(cx->w, "}");
}

/* ---- Shrink, Binarizer, Scaler: inline elementwise ------------------------------------ */

static bool emit_shrink(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    IrDType t = m_dtype(cx, x);
    if (!cgen_float_sfx(t) && !m_is_int(t))
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    if (!m_static(cx, n, x)) return false;
    double lambd = ir_attr_f(n, IR_ATTR_SHRINK_LAMBD), bias = ir_attr_f(n, IR_ATTR_SHRINK_BIAS);
    if (cgen_numel(cx, x) == 0) return true;
    m_loop_open(cx, cgen_numel(cx, x));
    cw_line(cx->w, "double v = %s;", m_ld(cx, t, cgen_fmt(cx, "%s[i]", cgen_ptr(cx, x))));
    cw_line(cx->w, "%s[i] = %s;", cgen_ptr(cx, y),
            m_st(cx, t,
                 cgen_fmt(cx, "v < -%s ? v + %s : v > %s ? v - %s : 0.0", m_dlit(cx, lambd),
                          m_dlit(cx, bias), m_dlit(cx, lambd), m_dlit(cx, bias))));
    m_loop_close(cx);
    return true;
}

static bool emit_binarizer(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    IrDType t = m_dtype(cx, x);
    if (!cgen_float_sfx(t) && !m_is_int(t))
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    if (!m_static(cx, n, x)) return false;
    double th = ir_attr_f(n, IR_ATTR_BINARIZER_THRESHOLD);
    if (cgen_numel(cx, x) == 0) return true;
    m_loop_open(cx, cgen_numel(cx, x));
    cw_line(cx->w, "%s[i] = %s;", cgen_ptr(cx, y),
            m_st(cx, t,
                 cgen_fmt(cx, "%s > %s ? 1.0 : 0.0",
                          m_ld(cx, t, cgen_fmt(cx, "%s[i]", cgen_ptr(cx, x))), m_dlit(cx, th))));
    m_loop_close(cx);
    return true;
}

/* Scaler: y = (x - offset[c]) * scale[c] over the last dimension, float output. */
static bool emit_scaler(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    IrDType t = m_dtype(cx, x);
    if ((!cgen_float_sfx(t) && !m_is_int(t)) || m_dtype(cx, y) != IR_DTYPE_F32)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    if (!m_static(cx, n, x)) return false;
    const IrType *tx = cgen_type(cx, x);
    int64_t C = tx->rank > 0 ? tx->dims[tx->rank - 1] : 1;
    const IrAttr *off = ir_node_attr(n, IR_ATTR_SCALER_OFFSET);
    const IrAttr *sc = ir_node_attr(n, IR_ATTR_SCALER_SCALE);
    uint32_t no = off->present ? off->n : 0, ns = sc->present ? sc->n : 0;
    if ((no != 1 && no != (uint64_t)C) || (ns != 1 && ns != (uint64_t)C))
        return cgen_unsupported(cx, n, "offset/scale of %u/%u entries for %lld features", no, ns,
                                (long long)C);
    if (cgen_numel(cx, x) == 0) return true;
    CWriter *w = cx->w;
    cw_line(w, "{");
    w->indent++;
    cw_indent(w);
    cw_raw(w, "static const float off[%u] = {", no);
    for (uint32_t i = 0; i < no; i++)
        cw_raw(w, "%s%.9gf", i ? ", " : "", off->floats[i]);
    cw_raw(w, "};\n");
    cw_indent(w);
    cw_raw(w, "static const float sc[%u] = {", ns);
    for (uint32_t i = 0; i < ns; i++)
        cw_raw(w, "%s%.9gf", i ? ", " : "", sc->floats[i]);
    cw_raw(w, "};\n");
    m_loop_open(cx, cgen_numel(cx, x));
    cw_line(w, "int64_t c = i %% %lld;", (long long)C);
    cw_line(w, "%s[i] = (float)((%s - off[%s]) * sc[%s]);", cgen_ptr(cx, y),
            m_ld(cx, t, cgen_fmt(cx, "%s[i]", cgen_ptr(cx, x))), no == 1 ? "0" : "c",
            ns == 1 ? "0" : "c");
    m_loop_close(cx);
    w->indent--;
    cw_line(w, "}");
    return true;
}

/* ---- training optimizers (ai.onnx.preview.training) ----------------------------------- */

/* Inputs R (scalar), T (scalar int64), then n_groups groups of n tensors; outputs
 * n_out groups of n tensors. Computes in double, stores in each tensor's type. */
static bool emit_optimizer(CgenCtx *cx, const IrNode *n) {
    int in_groups = n->op == IR_OP_ADAM ? 4 : 3, out_groups = n->op == IR_OP_ADAM ? 3 : 2;
    if (n->n_inputs < 2 || (n->n_inputs - 2) % (uint32_t)in_groups != 0)
        return cgen_unsupported(cx, n, "%u inputs", n->n_inputs);
    uint32_t k = (n->n_inputs - 2) / (uint32_t)in_groups;
    if (n->n_outputs != k * (uint32_t)out_groups)
        return cgen_unsupported(cx, n, "%u outputs for %u tensors", n->n_outputs, k);
    uint32_t r = n->inputs[0], tt = n->inputs[1];
    IrDType tr = m_dtype(cx, r), tT = m_dtype(cx, tt);
    if (!cgen_float_sfx(tr) || !m_is_int(tT)) return cgen_unsupported(cx, n, "R or T of that type");
    for (uint32_t i = 2; i < n->n_inputs; i++) {
        if (!cgen_float_sfx(m_dtype(cx, n->inputs[i])) || !m_static(cx, n, n->inputs[i]))
            return cgen_unsupported(cx, n, "a non-float or non-static tensor");
        if (cgen_numel(cx, n->inputs[i]) != cgen_numel(cx, n->inputs[2 + (i - 2) % k]))
            return cgen_unsupported(cx, n, "tensors of a group that differ in size");
    }
    CWriter *w = cx->w;
    cw_line(w, "{");
    w->indent++;
    cw_line(w, "double r = %s;", m_ld(cx, tr, cgen_fmt(cx, "%s[0]", cgen_ptr(cx, r))));
    cw_line(w, "double t = (double)%s[0];", cgen_ptr(cx, tt));
    if (n->op == IR_OP_ADAGRAD) {
        cw_line(w, "double rr = r / (1.0 + t * %s);",
                m_dlit(cx, ir_attr_f(n, IR_ATTR_ADAGRAD_DECAY_FACTOR)));
    } else if (n->op == IR_OP_ADAM) {
        double alpha = ir_attr_f(n, IR_ATTR_ADAM_ALPHA), beta = ir_attr_f(n, IR_ATTR_ADAM_BETA);
        cw_line(w, "double rr = t > 0 ? r * sqrt(1.0 - pow(%s, t)) / (1.0 - pow(%s, t)) : r;",
                m_dlit(cx, beta), m_dlit(cx, alpha));
    } else {
        const char *mode = ir_attr_s(n, IR_ATTR_MOMENTUM_MODE);
        if (!mode || (strcmp(mode, "standard") != 0 && strcmp(mode, "nesterov") != 0))
            return cgen_unsupported(cx, n, "momentum mode '%s'", mode ? mode : "");
        cw_line(w, "double beta_t = t > 0 ? %s : 1.0;",
                m_dlit(cx, ir_attr_f(n, IR_ATTR_MOMENTUM_BETA)));
    }
    for (uint32_t j = 0; j < k; j++) {
        int64_t cnt = cgen_numel(cx, n->inputs[2 + j]);
        if (cnt == 0) continue;
        const char *in[4], *out[3];
        IrDType ti[4], to[3];
        for (int gi = 0; gi < in_groups; gi++) {
            uint32_t v = n->inputs[2 + (uint32_t)gi * k + j];
            ti[gi] = m_dtype(cx, v);
            in[gi] = m_ld(cx, ti[gi], cgen_fmt(cx, "%s[i]", cgen_ptr(cx, v)));
        }
        for (int go = 0; go < out_groups; go++) {
            uint32_t v = n->outputs[(uint32_t)go * k + j];
            to[go] = m_dtype(cx, v);
            out[go] = cgen_fmt(cx, "%s[i]", cgen_ptr(cx, v));
        }
        m_loop_open(cx, cnt);
        if (n->op == IR_OP_ADAGRAD) {
            cw_line(w, "double x = %s, g = %s * x + %s;", in[0],
                    m_dlit(cx, ir_attr_f(n, IR_ATTR_ADAGRAD_NORM_COEFFICIENT)), in[1]);
            cw_line(w, "double h = %s + g * g;", in[2]);
            cw_line(w, "%s = %s;", out[0],
                    m_st(cx, to[0],
                         cgen_fmt(cx, "x - rr * g / (sqrt(h) + %s)",
                                  m_dlit(cx, ir_attr_f(n, IR_ATTR_ADAGRAD_EPSILON)))));
            cw_line(w, "%s = %s;", out[1], m_st(cx, to[1], "h"));
        } else if (n->op == IR_OP_ADAM) {
            double alpha = ir_attr_f(n, IR_ATTR_ADAM_ALPHA), beta = ir_attr_f(n, IR_ATTR_ADAM_BETA);
            cw_line(w, "double x = %s, g = %s * x + %s;", in[0],
                    m_dlit(cx, ir_attr_f(n, IR_ATTR_ADAM_NORM_COEFFICIENT)), in[1]);
            cw_line(w, "double v = %s * %s + (1.0 - %s) * g;", m_dlit(cx, alpha), in[2],
                    m_dlit(cx, alpha));
            cw_line(w, "double h = %s * %s + (1.0 - %s) * (g * g);", m_dlit(cx, beta), in[3],
                    m_dlit(cx, beta));
            cw_line(w, "double xn = x - rr * (v / (sqrt(h) + %s));",
                    m_dlit(cx, ir_attr_f(n, IR_ATTR_ADAM_EPSILON)));
            cw_line(w, "%s = %s;", out[0],
                    m_st(cx, to[0],
                         cgen_fmt(cx, "(1.0 - %s) * xn",
                                  m_dlit(cx, ir_attr_f(n, IR_ATTR_ADAM_NORM_COEFFICIENT_POST)))));
            cw_line(w, "%s = %s;", out[1], m_st(cx, to[1], "v"));
            cw_line(w, "%s = %s;", out[2], m_st(cx, to[2], "h"));
        } else {
            bool nesterov = strcmp(ir_attr_s(n, IR_ATTR_MOMENTUM_MODE), "nesterov") == 0;
            double alpha = ir_attr_f(n, IR_ATTR_MOMENTUM_ALPHA);
            cw_line(w, "double x = %s, g = %s * x + %s;", in[0],
                    m_dlit(cx, ir_attr_f(n, IR_ATTR_MOMENTUM_NORM_COEFFICIENT)), in[1]);
            cw_line(w, "double v = %s * %s + beta_t * g;", m_dlit(cx, alpha), in[2]);
            cw_line(w, "%s = %s;", out[0],
                    m_st(cx, to[0],
                         nesterov ? cgen_fmt(cx, "x - r * (g + %s * v)", m_dlit(cx, alpha))
                                  : "x - r * v"));
            cw_line(w, "%s = %s;", out[1], m_st(cx, to[1], "v"));
        }
        m_loop_close(cx);
    }
    w->indent--;
    cw_line(w, "}");
    return true;
}

/* ---- TensorScatter -------------------------------------------------------------------- */

static bool emit_tensor_scatter(CgenCtx *cx, const IrNode *n) {
    uint32_t past = n->inputs[0], upd = n->inputs[1], y = n->outputs[0];
    if (!m_static(cx, n, past) || !m_static(cx, n, upd)) return false;
    const IrType *tp = cgen_type(cx, past), *tu = cgen_type(cx, upd);
    int64_t axis = ir_attr_i(n, IR_ATTR_TENSOR_SCATTER_AXIS);
    if (axis < 0) axis += tp->rank;
    if (axis < 1 || axis >= tp->rank || tu->rank != tp->rank || tu->dtype != tp->dtype)
        return cgen_unsupported(cx, n, "axis %lld of a rank-%d cache", (long long)axis, tp->rank);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < tp->rank; d++) {
        if (d != axis && tp->dims[d] != tu->dims[d])
            return cgen_unsupported(cx, n, "an update whose shape disagrees with the cache");
        if (d > 0 && d < axis) outer *= tp->dims[d];
        if (d > axis) inner *= tp->dims[d];
    }
    if (tu->dims[axis] > tp->dims[axis])
        return cgen_unsupported(cx, n, "an update longer than the cache");
    const char *mode = ir_attr_s(n, IR_ATTR_TENSOR_SCATTER_MODE);
    bool circular = strcmp(mode, "circular") == 0;
    if (!circular && strcmp(mode, "linear") != 0) return cgen_unsupported(cx, n, "mode '%s'", mode);
    const char *wi = "NULL";
    if (ir_has_input(n, 2)) {
        uint32_t v = n->inputs[2];
        if (m_dtype(cx, v) != IR_DTYPE_I64 || cgen_numel(cx, v) != tp->dims[0])
            return cgen_unsupported(cx, n, "write_indices that are not (batch) int64");
        wi = cgen_ptr(cx, v);
    }
    if (cgen_numel(cx, past) == 0) return true;
    cgen_use_runtime(cx, "rt_misc.h");
    int64_t esz = (int64_t)ir_dtype_size_bytes((IrDType)tp->dtype, 1);
    cgen_call_checked(cx,
                      "rt_tensor_scatter((const uint8_t *)%s, (const uint8_t *)%s, %s, "
                      "(uint8_t *)%s, %lld, %lld, %lld, %lld, %lld, %d)",
                      cgen_ptr(cx, past), cgen_ptr(cx, upd), wi, cgen_ptr(cx, y),
                      (long long)tp->dims[0], (long long)outer, (long long)tp->dims[axis],
                      (long long)tu->dims[axis], (long long)(inner * esz), circular ? 1 : 0);
    return true;
}

/* ---- ArrayFeatureExtractor ------------------------------------------------------------ */

static bool emit_array_feature_extractor(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], idx = n->inputs[1], y = n->outputs[0];
    if (!m_static(cx, n, x) || !m_static(cx, n, idx) || !m_static(cx, n, y)) return false;
    const IrType *tx = cgen_type(cx, x);
    IrDType t = m_dtype(cx, x);
    if (m_dtype(cx, idx) != IR_DTYPE_I64 || tx->rank < 1 || ir_dtype_bits(t) < 8 ||
        ir_dtype_bits(t) % 8 != 0)
        return cgen_unsupported(cx, n, "data of type %s with these indices", ir_dtype_name(t));
    int64_t L = tx->dims[tx->rank - 1], ni = cgen_numel(cx, idx);
    int64_t outer = L > 0 ? cgen_numel(cx, x) / L : 0;
    if (cgen_numel(cx, y) != outer * ni)
        return cgen_unsupported(cx, n, "an output of %lld elements", (long long)cgen_numel(cx, y));
    if (cgen_numel(cx, y) == 0) return true;
    cgen_use_runtime(cx, "rt_misc.h");
    cgen_call_checked(cx,
                      "rt_gather_last((const uint8_t *)%s, %s, %lld, (uint8_t *)%s, %lld, "
                      "%lld, %u)",
                      cgen_ptr(cx, x), cgen_ptr(cx, idx), (long long)ni, cgen_ptr(cx, y),
                      (long long)outer, (long long)L, ir_dtype_bits(t) / 8);
    return true;
}

/* ---- RotaryEmbedding ------------------------------------------------------------------ */

static bool emit_rotary(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], cs = n->inputs[1], sn = n->inputs[2], y = n->outputs[0];
    IrDType t = m_dtype(cx, x);
    const char *sfx = cgen_float_sfx(t);
    if (!sfx || m_dtype(cx, cs) != t || m_dtype(cx, sn) != t)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    if (!m_static(cx, n, x) || !m_static(cx, n, cs) || !m_static(cx, n, sn)) return false;
    const IrType *tx = cgen_type(cx, x), *tc = cgen_type(cx, cs);
    int64_t B, S, H, D, sb, ss, sh;
    if (tx->rank == 4) {
        B = tx->dims[0], H = tx->dims[1], S = tx->dims[2], D = tx->dims[3];
        sb = H * S * D, ss = D, sh = S * D;
    } else if (tx->rank == 3) {
        int64_t nh = ir_attr_i(n, IR_ATTR_ROTARY_EMBEDDING_NUM_HEADS);
        if (nh < 1 || tx->dims[2] % nh != 0)
            return cgen_unsupported(cx, n, "a 3-D input without a fitting num_heads");
        B = tx->dims[0], S = tx->dims[1], H = nh, D = tx->dims[2] / nh;
        sb = S * H * D, ss = H * D, sh = D;
    } else {
        return cgen_unsupported(cx, n, "an input of rank %d", tx->rank);
    }
    int64_t rot = ir_attr_i(n, IR_ATTR_ROTARY_EMBEDDING_ROTARY_EMBEDDING_DIM);
    if (rot == 0) rot = D;
    if (rot < 0 || rot > D || rot % 2 != 0 || tc->rank < 2 || tc->dims[tc->rank - 1] != rot / 2 ||
        cgen_numel(cx, sn) != cgen_numel(cx, cs))
        return cgen_unsupported(cx, n, "caches that do not match rotary_embedding_dim %lld",
                                (long long)rot);
    const char *pos = "NULL";
    int64_t max_pos = 0;
    if (ir_has_input(n, 3)) {
        uint32_t p = n->inputs[3];
        if (m_dtype(cx, p) != IR_DTYPE_I64 || cgen_numel(cx, p) != B * S || tc->rank != 2)
            return cgen_unsupported(cx, n, "position_ids that are not (batch, sequence) int64");
        pos = cgen_ptr(cx, p);
        max_pos = tc->dims[0];
    } else if (cgen_numel(cx, cs) != B * S * (rot / 2)) {
        return cgen_unsupported(cx, n, "caches that are not (batch, sequence, rot/2)");
    }
    if (cgen_numel(cx, x) == 0) return true;
    cgen_use_runtime(cx, "rt_misc.h");
    cgen_call_checked(cx,
                      "rt_rotary_%s(%s, %s, %s, %s, %lld, %s, %lld, %lld, %lld, %lld, %lld, "
                      "%d, %lld, %lld, %lld)",
                      sfx, cgen_ptr(cx, x), cgen_ptr(cx, cs), cgen_ptr(cx, sn), pos,
                      (long long)max_pos, cgen_ptr(cx, y), (long long)B, (long long)S, (long long)H,
                      (long long)D, (long long)rot,
                      ir_attr_i(n, IR_ATTR_ROTARY_EMBEDDING_INTERLEAVED) ? 1 : 0, (long long)sb,
                      (long long)ss, (long long)sh);
    return true;
}

/* ---- CausalConvWithState -------------------------------------------------------------- */

static bool emit_causal_conv(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], w = n->inputs[1];
    IrDType t = m_dtype(cx, x);
    const char *sfx = cgen_float_sfx(t);
    if (!sfx || m_dtype(cx, w) != t)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    if (!m_static(cx, n, x) || !m_static(cx, n, w)) return false;
    const IrType *tx = cgen_type(cx, x), *tw = cgen_type(cx, w);
    if (tx->rank != 3 || tw->rank != 3 || tw->dims[0] != tx->dims[1] || tw->dims[1] != 1 ||
        tw->dims[2] < 1)
        return cgen_unsupported(cx, n, "shapes other than x (B,C,L), w (C,1,K)");
    int64_t B = tx->dims[0], C = tx->dims[1], L = tx->dims[2], K = tw->dims[2];
    const char *act = ir_attr_s(n, IR_ATTR_CAUSAL_CONV_WITH_STATE_ACTIVATION);
    bool silu = strcmp(act, "silu") == 0 || strcmp(act, "swish") == 0;
    if (!silu && strcmp(act, "none") != 0) return cgen_unsupported(cx, n, "activation '%s'", act);
    const char *bias = "NULL", *past = "NULL";
    if (ir_has_input(n, 2)) {
        if (m_dtype(cx, n->inputs[2]) != t || cgen_numel(cx, n->inputs[2]) != C)
            return cgen_unsupported(cx, n, "a bias that is not (C)");
        bias = cgen_ptr(cx, n->inputs[2]);
    }
    if (ir_has_input(n, 3)) {
        if (m_dtype(cx, n->inputs[3]) != t || cgen_numel(cx, n->inputs[3]) != B * C * (K - 1))
            return cgen_unsupported(cx, n, "a past_state that is not (B,C,K-1)");
        past = cgen_ptr(cx, n->inputs[3]);
    }
    if (!m_has_output(n, 1)) return cgen_unsupported(cx, n, "a missing present_state output");
    if (cgen_numel(cx, x) == 0) return true;
    cgen_use_runtime(cx, "rt_misc.h");
    const char *ct = bundle_ctype(t);
    cw_line(cx->w, "rt_causal_conv_%s(%s, %s, %s, %s, %s, %s, %lld, %lld, %lld, %lld, %d);", sfx,
            cgen_ptr(cx, x), cgen_ptr(cx, w),
            strcmp(bias, "NULL") ? bias : cgen_fmt(cx, "(const %s *)NULL", ct),
            strcmp(past, "NULL") ? past : cgen_fmt(cx, "(const %s *)NULL", ct),
            cgen_ptr(cx, n->outputs[0]), cgen_ptr(cx, n->outputs[1]), (long long)B, (long long)C,
            (long long)L, (long long)K, silu ? 1 : 0);
    return true;
}

/* ---- DeformConv ----------------------------------------------------------------------- */

static bool emit_deform_conv(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], w = n->inputs[1], off = n->inputs[2], y = n->outputs[0];
    IrDType t = m_dtype(cx, x);
    const char *sfx = cgen_float_sfx(t);
    if (!sfx || t == IR_DTYPE_BF16 || m_dtype(cx, w) != t || m_dtype(cx, off) != t)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    if (!m_static(cx, n, x) || !m_static(cx, n, w) || !m_static(cx, n, off) || !m_static(cx, n, y))
        return false;
    const IrType *tx = cgen_type(cx, x), *tw = cgen_type(cx, w), *ty = cgen_type(cx, y);
    if (tx->rank != 4 || tw->rank != 4 || ty->rank != 4)
        return cgen_unsupported(cx, n, "a rank-%d input (2-D DeformConv only)", tx->rank);
    int64_t group = ir_attr_i(n, IR_ATTR_DEFORM_CONV_GROUP);
    int64_t og = ir_attr_i(n, IR_ATTR_DEFORM_CONV_OFFSET_GROUP);
    int64_t s[2] = {1, 1}, d[2] = {1, 1}, p[4] = {0, 0, 0, 0};
    uint32_t cnt;
    const int64_t *a = ir_attr_ints(n, IR_ATTR_DEFORM_CONV_STRIDES, &cnt);
    if (a && cnt == 2) s[0] = a[0], s[1] = a[1];
    a = ir_attr_ints(n, IR_ATTR_DEFORM_CONV_DILATIONS, &cnt);
    if (a && cnt == 2) d[0] = a[0], d[1] = a[1];
    a = ir_attr_ints(n, IR_ATTR_DEFORM_CONV_PADS, &cnt);
    if (a && cnt == 4) memcpy(p, a, sizeof p);
    int64_t C = tx->dims[1], M = tw->dims[0], kh = tw->dims[2], kw = tw->dims[3];
    int64_t oh = ty->dims[2], ow = ty->dims[3];
    if (group < 1 || og < 1 || C % group != 0 || M % group != 0 || tw->dims[1] != C / group ||
        C % og != 0 || cgen_numel(cx, off) != tx->dims[0] * og * kh * kw * 2 * oh * ow ||
        ty->dims[1] != M)
        return cgen_unsupported(cx, n, "shapes that disagree with group/offset_group");
    const char *ct = bundle_ctype(t), *bias = cgen_fmt(cx, "(const %s *)NULL", ct), *mask = bias;
    if (ir_has_input(n, 3)) {
        if (cgen_numel(cx, n->inputs[3]) != M) return cgen_unsupported(cx, n, "a bias not (M)");
        bias = cgen_ptr(cx, n->inputs[3]);
    }
    if (ir_has_input(n, 4)) {
        if (cgen_numel(cx, n->inputs[4]) != tx->dims[0] * og * kh * kw * oh * ow)
            return cgen_unsupported(cx, n, "a mask of another shape");
        mask = cgen_ptr(cx, n->inputs[4]);
    }
    if (cgen_numel(cx, y) == 0) return true;
    cgen_use_runtime(cx, "rt_misc.h");
    CWriter *wr = cx->w;
    cw_line(wr, "{");
    wr->indent++;
    cw_open(wr, "static const RtDeformGeom geom =");
    cw_line(wr, "%lld, %lld, %lld, %lld, %lld,", (long long)tx->dims[0], (long long)C, (long long)M,
            (long long)group, (long long)og);
    cw_line(wr, "%lld, %lld, %lld, %lld, %lld, %lld,", (long long)tx->dims[2],
            (long long)tx->dims[3], (long long)oh, (long long)ow, (long long)kh, (long long)kw);
    cw_line(wr, "%lld, %lld, %lld, %lld, %lld, %lld", (long long)s[0], (long long)s[1],
            (long long)d[0], (long long)d[1], (long long)p[0], (long long)p[1]);
    cw_close(wr, ";");
    cw_line(wr, "rt_deform_conv_%s(%s, %s, %s, %s, %s, %s, &geom);", sfx, cgen_ptr(cx, x),
            cgen_ptr(cx, w), cgen_ptr(cx, off), bias, mask, cgen_ptr(cx, y));
    wr->indent--;
    cw_line(wr, "}");
    return true;
}

/* ---- LinearAttention ------------------------------------------------------------------ */

static bool emit_linear_attention(CgenCtx *cx, const IrNode *n) {
    uint32_t q = n->inputs[0], k = n->inputs[1], v = n->inputs[2];
    IrDType t = m_dtype(cx, q);
    const char *sfx = cgen_float_sfx(t);
    if (!sfx || t == IR_DTYPE_F64 || m_dtype(cx, k) != t || m_dtype(cx, v) != t)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    if (!m_static(cx, n, q) || !m_static(cx, n, k) || !m_static(cx, n, v)) return false;
    if (!m_has_output(n, 1)) return cgen_unsupported(cx, n, "a missing present_state output");
    const IrType *tq = cgen_type(cx, q), *tk = cgen_type(cx, k), *tv = cgen_type(cx, v);
    int64_t hq = ir_attr_i(n, IR_ATTR_LINEAR_ATTENTION_Q_NUM_HEADS);
    int64_t hkv = ir_attr_i(n, IR_ATTR_LINEAR_ATTENTION_KV_NUM_HEADS);
    if (tq->rank != 3 || tk->rank != 3 || tv->rank != 3 || hq < 1 || hkv < 1 || hq % hkv != 0 ||
        tq->dims[2] % hq != 0 || tv->dims[2] % hkv != 0)
        return cgen_unsupported(cx, n, "shapes or head counts that do not fit");
    int64_t B = tq->dims[0], T = tq->dims[1], dk = tq->dims[2] / hq, dv = tv->dims[2] / hkv;
    if (tk->dims[2] != hkv * dk || tk->dims[0] != B || tv->dims[0] != B || tk->dims[1] != T ||
        tv->dims[1] != T)
        return cgen_unsupported(cx, n, "key/value shapes that disagree with the query");
    const char *rule = ir_attr_s(n, IR_ATTR_LINEAR_ATTENTION_UPDATE_RULE);
    bool gating = strcmp(rule, "gated") == 0 || strcmp(rule, "gated_delta") == 0;
    bool delta = strcmp(rule, "delta") == 0 || strcmp(rule, "gated_delta") == 0;
    if (!gating && !delta && strcmp(rule, "linear") != 0)
        return cgen_unsupported(cx, n, "update_rule '%s'", rule);
    const char *ct = bundle_ctype(t), *null = cgen_fmt(cx, "(const %s *)NULL", ct);
    const char *past = null, *decay = null, *beta = null;
    int64_t decay_w = 1, beta_w = 1;
    if (ir_has_input(n, 3)) {
        if (m_dtype(cx, n->inputs[3]) != t || cgen_numel(cx, n->inputs[3]) != B * hkv * dk * dv)
            return cgen_unsupported(cx, n, "a past_state that is not (B,Hkv,dk,dv)");
        past = cgen_ptr(cx, n->inputs[3]);
    }
    if (gating != ir_has_input(n, 4) || delta != ir_has_input(n, 5))
        return cgen_unsupported(cx, n, "decay/beta inputs that disagree with update_rule");
    if (gating) {
        int64_t nd = cgen_numel(cx, n->inputs[4]);
        decay_w = nd == B * T * hkv ? 1 : nd == B * T * hkv * dk ? dk : -1;
        if (decay_w < 0 || m_dtype(cx, n->inputs[4]) != t)
            return cgen_unsupported(cx, n, "a decay that is not (B,T,Hkv) or (B,T,Hkv*dk)");
        decay = cgen_ptr(cx, n->inputs[4]);
    }
    if (delta) {
        int64_t nb = cgen_numel(cx, n->inputs[5]);
        beta_w = nb == B * T * hkv ? hkv : nb == B * T ? 1 : -1;
        if (beta_w < 0 || m_dtype(cx, n->inputs[5]) != t)
            return cgen_unsupported(cx, n, "a beta that is not (B,T,Hkv) or (B,T,1)");
        beta = cgen_ptr(cx, n->inputs[5]);
    }
    if (dk * dv > MISC_MAX_SCRATCH)
        return cgen_unsupported(cx, n, "a state of %lld elements per head (at most %d)",
                                (long long)(dk * dv), MISC_MAX_SCRATCH);
    double scale = ir_attr_f(n, IR_ATTR_LINEAR_ATTENTION_SCALE);
    if (scale == 0.0) scale = 1.0 / sqrt((double)dk);
    if (cgen_numel(cx, q) == 0) return true;
    cgen_use_runtime(cx, "rt_misc.h");
    CWriter *w = cx->w;
    cw_line(w, "{");
    w->indent++;
    cw_line(w, "float state[%lld]; /* one head's (dk, dv) state */", (long long)(dk * dv));
    cw_line(w,
            "rt_linear_attention_%s(%s, %s, %s, %s, %s, %lld, %s, %lld, %s, %s, state, %lld, "
            "%lld, %lld, %lld, %lld, %lld, %sf);",
            sfx, cgen_ptr(cx, q), cgen_ptr(cx, k), cgen_ptr(cx, v), past, decay, (long long)decay_w,
            beta, (long long)beta_w, cgen_ptr(cx, n->outputs[0]), cgen_ptr(cx, n->outputs[1]),
            (long long)B, (long long)T, (long long)hq, (long long)hkv, (long long)dk, (long long)dv,
            cgen_fmt(cx, "%.9g", (double)(float)scale));
    w->indent--;
    cw_line(w, "}");
    return true;
}

/* ---- Unique --------------------------------------------------------------------------- */

static const char *m_unique_sfx(IrDType t) { /* Unique's kernels: no 16-bit floats, no bool */
    return t == IR_DTYPE_F16 || t == IR_DTYPE_BF16 || t == IR_DTYPE_BOOL ? NULL : cgen_sfx(t);
}

static bool emit_unique(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    IrDType t = m_dtype(cx, x);
    const char *sfx = m_unique_sfx(t);
    if (!sfx) return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    if (!m_static(cx, n, x) || !m_static(cx, n, y)) return false;
    const IrType *tx = cgen_type(cx, x), *ty = cgen_type(cx, y);
    int64_t A = 1, L = cgen_numel(cx, x), I = 1, U = cgen_numel(cx, y);
    if (ir_attr_present(n, IR_ATTR_UNIQUE_AXIS)) {
        int64_t axis = ir_attr_i(n, IR_ATTR_UNIQUE_AXIS);
        if (axis < 0) axis += tx->rank;
        if (axis < 0 || axis >= tx->rank || ty->rank != tx->rank)
            return cgen_unsupported(cx, n, "axis %lld", (long long)axis);
        A = 1, I = 1;
        for (int d = 0; d < tx->rank; d++) {
            if (d < axis) A *= tx->dims[d];
            if (d > axis) I *= tx->dims[d];
        }
        L = tx->dims[axis];
        U = ty->dims[axis];
    }
    const char *out[3];
    int64_t len[3] = {U, L, U};
    for (uint32_t k = 0; k < 3; k++) {
        if (m_has_output(n, k + 1)) {
            uint32_t o = n->outputs[k + 1];
            if (m_dtype(cx, o) != IR_DTYPE_I64 || cgen_numel(cx, o) != len[k])
                return cgen_unsupported(cx, n, "output %u of another type or size", k + 1);
            out[k] = cgen_ptr(cx, o);
        } else if (len[k] > MISC_MAX_SCRATCH) {
            return cgen_unsupported(cx, n, "%lld elements without output %u", (long long)len[k],
                                    k + 1);
        } else {
            out[k] = NULL;
        }
    }
    CWriter *w = cx->w;
    cw_line(w, "{");
    w->indent++;
    cw_line(w, "int64_t count; /* unique slices found, <= %lld */", (long long)U);
    for (uint32_t k = 0; k < 3; k++) { /* the kernel needs all three: stack arrays stand in */
        if (out[k]) continue;
        cw_line(w, "int64_t scratch%u[%lld];", k, (long long)(len[k] > 0 ? len[k] : 1));
        out[k] = cgen_fmt(cx, "scratch%u", k);
    }
    cgen_use_runtime(cx, "rt_misc.h");
    cgen_call_checked(cx,
                      "rt_unique_upto_%s(%s, %lld, %lld, %lld, %d, %lld, %s, %s, %s, %s, &count)",
                      sfx, cgen_ptr(cx, x), (long long)A, (long long)L, (long long)I,
                      ir_attr_i(n, IR_ATTR_UNIQUE_SORTED) ? 1 : 0, (long long)U, cgen_ptr(cx, y),
                      out[0], out[1], out[2]);
    /* y, indices and counts share the count; inverse_indices (output 2) is always full */
    uint32_t counted[3] = {y, m_has_output(n, 1) ? n->outputs[1] : IR_NONE,
                           m_has_output(n, 3) ? n->outputs[3] : IR_NONE};
    cgen_emit_count(cx, counted, 3, "count", U);
    w->indent--;
    cw_line(w, "}");
    return true;
}

/* ---- TfIdfVectorizer ------------------------------------------------------------------ */

/* Writes "static const int64_t name[] = {...};" */
static void m_static_i64(CgenCtx *cx, const char *name, const int64_t *v, uint32_t n) {
    cw_line(cx->w, "static const int64_t %s[%u] = %s;", name, n ? n : 1, cgen_i64_list(cx, v, n));
}

static bool emit_tfidf(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    IrDType t = m_dtype(cx, x);
    if ((t != IR_DTYPE_I32 && t != IR_DTYPE_I64) || m_dtype(cx, y) != IR_DTYPE_F32)
        return cgen_unsupported(cx, n, "input type %s (integer tokens only)", ir_dtype_name(t));
    if (!m_static(cx, n, x) || !m_static(cx, n, y)) return false;
    const IrType *tx = cgen_type(cx, x), *ty = cgen_type(cx, y);
    if (tx->rank < 1 || tx->rank > 2 || ty->rank != tx->rank)
        return cgen_unsupported(cx, n, "an input of rank %d", tx->rank);
    int64_t rows = tx->rank == 2 ? tx->dims[0] : 1, C = tx->dims[tx->rank - 1];
    int64_t out_size = ty->dims[ty->rank - 1];
    uint32_t n_pool, n_sizes, n_idx;
    const int64_t *pool = ir_attr_ints(n, IR_ATTR_TF_IDF_VECTORIZER_POOL_INT64S, &n_pool);
    const int64_t *start = ir_attr_ints(n, IR_ATTR_TF_IDF_VECTORIZER_NGRAM_COUNTS, &n_sizes);
    const int64_t *idx = ir_attr_ints(n, IR_ATTR_TF_IDF_VECTORIZER_NGRAM_INDEXES, &n_idx);
    int64_t min_g = ir_attr_i(n, IR_ATTR_TF_IDF_VECTORIZER_MIN_GRAM_LENGTH);
    int64_t max_g = ir_attr_i(n, IR_ATTR_TF_IDF_VECTORIZER_MAX_GRAM_LENGTH);
    int64_t max_skip = ir_attr_i(n, IR_ATTR_TF_IDF_VECTORIZER_MAX_SKIP_COUNT);
    const char *mode = ir_attr_s(n, IR_ATTR_TF_IDF_VECTORIZER_MODE);
    int imode = !mode                        ? -1
                : strcmp(mode, "TF") == 0    ? 0
                : strcmp(mode, "IDF") == 0   ? 1
                : strcmp(mode, "TFIDF") == 0 ? 2
                                             : -1;
    if (imode < 0 || !pool || !start || !idx || min_g < 1 || max_g < min_g || max_skip < 0)
        return cgen_unsupported(cx, n, "a vectorizer without an integer pool or a known mode");
    /* the pool's n-gram count must match ngram_indexes, and every index fit the output */
    int64_t ids = 0;
    for (uint32_t k = 0; k < n_sizes; k++) {
        int64_t to = k + 1 < n_sizes ? start[k + 1] : (int64_t)n_pool;
        if (start[k] < 0 || to < start[k] || to > (int64_t)n_pool || (to - start[k]) % (k + 1))
            return cgen_unsupported(cx, n, "ngram_counts that do not split the pool");
        ids += (to - start[k]) / (k + 1);
    }
    if (ids != (int64_t)n_idx) return cgen_unsupported(cx, n, "ngram_indexes of another count");
    for (uint32_t k = 0; k < n_idx; k++)
        if (idx[k] < 0 || idx[k] >= out_size)
            return cgen_unsupported(cx, n, "an n-gram index outside the output");
    const IrAttr *wa = ir_node_attr(n, IR_ATTR_TF_IDF_VECTORIZER_WEIGHTS);
    bool has_w = wa->present && wa->n > 0;
    if (has_w && wa->n < (uint64_t)out_size)
        return cgen_unsupported(cx, n, "fewer weights than output columns");
    if (cgen_numel(cx, y) == 0) return true;
    cgen_use_runtime(cx, "rt_misc.h");
    CWriter *w = cx->w;
    cw_line(w, "{");
    w->indent++;
    m_static_i64(cx, "pool", pool, n_pool);
    m_static_i64(cx, "start", start, n_sizes);
    m_static_i64(cx, "out_index", idx, n_idx);
    if (has_w) {
        cw_indent(w);
        cw_raw(w, "static const float weights[%u] = {", wa->n);
        for (uint32_t i = 0; i < wa->n; i++)
            cw_raw(w, "%s%.9gf", i ? ", " : "", wa->floats[i]);
        cw_raw(w, "};\n");
    }
    cw_line(w,
            "rt_tfidf_%s(%s, %lld, %lld, pool, %u, start, %u, out_index, %s, %d, %lld, %lld, "
            "%lld, %s, %lld);",
            t == IR_DTYPE_I32 ? "i32" : "i64", cgen_ptr(cx, x), (long long)rows, (long long)C,
            n_pool, n_sizes, has_w ? "weights" : "(const float *)NULL", imode, (long long)min_g,
            (long long)max_g, (long long)max_skip, cgen_ptr(cx, y), (long long)out_size);
    w->indent--;
    cw_line(w, "}");
    return true;
}

/* ---- TreeEnsemble (ai.onnx.ml) -------------------------------------------------------- */

#define MISC_TREE_MAX_TARGETS 1024 /* = RT_TREE_MAX_TARGETS */

/* Element k of a float tensor attribute as double. */
static double m_tensor_f(const IrTensor *t, int64_t k) {
    const char *p = (const char *)t->data;
    if (t->dtype == IR_DTYPE_F64) {
        double v;
        memcpy(&v, p + 8 * k, 8);
        return v;
    }
    if (t->dtype == IR_DTYPE_F32) {
        float v;
        memcpy(&v, p + 4 * k, 4);
        return v;
    }
    uint16_t h; /* f16: widened through the same rule as rt_f16_to_f32 */
    memcpy(&h, p + 2 * k, 2);
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 0x400, e - 25);
    return (h & 0x8000) ? -v : v;
}

static const IrTensor *m_tensor_attr(const IrNode *n, IrAttrId id) {
    const IrAttr *a = ir_node_attr(n, id);
    if (!a->present || !a->tensors) return NULL;
    const IrTensor *t = &a->tensors[0];
    bool ok = t->dtype == IR_DTYPE_F32 || t->dtype == IR_DTYPE_F64 || t->dtype == IR_DTYPE_F16 ||
              t->dtype == IR_DTYPE_U8;
    return ok && t->data ? t : NULL;
}

static void m_static_f64(CgenCtx *cx, const char *name, const double *v, int64_t n) {
    CWriter *w = cx->w;
    cw_indent(w);
    cw_raw(w, "static const double %s[%lld] = {", name, (long long)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++)
        cw_raw(w, "%s%s", i ? ", " : "", m_dlit(cx, v[i]));
    cw_raw(w, "%s};\n", n > 0 ? "" : "0");
}

static void m_static_u8(CgenCtx *cx, const char *name, const int64_t *v, int64_t n) {
    CWriter *w = cx->w;
    cw_indent(w);
    cw_raw(w, "static const uint8_t %s[%lld] = {", name, (long long)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++)
        cw_raw(w, "%s%d", i ? ", " : "", v[i] ? 1 : 0);
    cw_raw(w, "%s};\n", n > 0 ? "" : "0");
}

static bool emit_tree_ensemble(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    IrDType t = m_dtype(cx, x);
    if ((t != IR_DTYPE_F32 && t != IR_DTYPE_F64 && t != IR_DTYPE_F16) || m_dtype(cx, y) != t)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    if (!m_static(cx, n, x) || !m_static(cx, n, y)) return false;
    const IrType *tx = cgen_type(cx, x);
    if (tx->rank != 2) return cgen_unsupported(cx, n, "an input of rank %d", tx->rank);
    int64_t rows = tx->dims[0], F = tx->dims[1];
    if (ir_attr_i(n, IR_ATTR_TREE_ENSEMBLE_POST_TRANSFORM) != 0)
        return cgen_unsupported(cx, n, "a post_transform other than NONE");
    int64_t agg = ir_attr_i(n, IR_ATTR_TREE_ENSEMBLE_AGGREGATE_FUNCTION);
    int64_t n_targets = ir_attr_i(n, IR_ATTR_TREE_ENSEMBLE_N_TARGETS);
    if (agg < 0 || agg > 3 || n_targets < 1 || n_targets > MISC_TREE_MAX_TARGETS ||
        cgen_numel(cx, y) != rows * n_targets)
        return cgen_unsupported(cx, n, "aggregate_function %lld with %lld targets", (long long)agg,
                                (long long)n_targets);
    uint32_t nn, nf, nt, nfa, ntl, nfl, nlt, nr, nmt;
    const int64_t *feat = ir_attr_ints(n, IR_ATTR_TREE_ENSEMBLE_NODES_FEATUREIDS, &nf);
    const int64_t *tid = ir_attr_ints(n, IR_ATTR_TREE_ENSEMBLE_NODES_TRUENODEIDS, &nt);
    const int64_t *fid = ir_attr_ints(n, IR_ATTR_TREE_ENSEMBLE_NODES_FALSENODEIDS, &nfa);
    const int64_t *tl = ir_attr_ints(n, IR_ATTR_TREE_ENSEMBLE_NODES_TRUELEAFS, &ntl);
    const int64_t *fl = ir_attr_ints(n, IR_ATTR_TREE_ENSEMBLE_NODES_FALSELEAFS, &nfl);
    const int64_t *ltarget = ir_attr_ints(n, IR_ATTR_TREE_ENSEMBLE_LEAF_TARGETIDS, &nlt);
    const int64_t *roots = ir_attr_ints(n, IR_ATTR_TREE_ENSEMBLE_TREE_ROOTS, &nr);
    const int64_t *mtrue =
        ir_attr_ints(n, IR_ATTR_TREE_ENSEMBLE_NODES_MISSING_VALUE_TRACKS_TRUE, &nmt);
    const IrTensor *modes = m_tensor_attr(n, IR_ATTR_TREE_ENSEMBLE_NODES_MODES);
    const IrTensor *splits = m_tensor_attr(n, IR_ATTR_TREE_ENSEMBLE_NODES_SPLITS);
    const IrTensor *lw = m_tensor_attr(n, IR_ATTR_TREE_ENSEMBLE_LEAF_WEIGHTS);
    const IrTensor *mem = m_tensor_attr(n, IR_ATTR_TREE_ENSEMBLE_MEMBERSHIP_VALUES);
    nn = nf;
    if (!feat || !tid || !fid || !tl || !fl || !ltarget || !roots || !modes || !splits || !lw ||
        modes->dtype != IR_DTYPE_U8 || nt != nn || nfa != nn || ntl != nn || nfl != nn ||
        modes->n_elems != nn || splits->n_elems != nn || lw->n_elems != nlt ||
        (mtrue && nmt != nn) || splits->dtype == IR_DTYPE_U8 || lw->dtype == IR_DTYPE_U8)
        return cgen_unsupported(cx, n, "node or leaf tables of inconsistent lengths");
    const uint8_t *mode = (const uint8_t *)modes->data;
    /* bounds of every id, feature and target are checked here, once */
    for (uint32_t k = 0; k < nn; k++) {
        bool ok = mode[k] <= 6 && feat[k] >= 0 && feat[k] < F;
        ok = ok && tid[k] >= 0 && tid[k] < (tl[k] ? (int64_t)nlt : (int64_t)nn);
        ok = ok && fid[k] >= 0 && fid[k] < (fl[k] ? (int64_t)nlt : (int64_t)nn);
        if (!ok) return cgen_unsupported(cx, n, "node %u with an id or feature out of range", k);
    }
    for (uint32_t k = 0; k < nlt; k++)
        if (ltarget[k] < 0 || ltarget[k] >= n_targets)
            return cgen_unsupported(cx, n, "leaf %u with a target out of range", k);
    int64_t *root_leaf = ir_arena_alloc(&cx->b.scratch, (nr + 1) * sizeof(int64_t));
    for (uint32_t k = 0; k < nr; k++) {
        int64_t r = roots[k];
        if (r < 0 || r >= (int64_t)nn) return cgen_unsupported(cx, n, "a root out of range");
        root_leaf[k] = tl[r] && fl[r] && tid[r] == fid[r];
        if (root_leaf[k] && r >= (int64_t)nlt) return cgen_unsupported(cx, n, "a leaf root");
    }
    /* membership sets, NaN-delimited, in the order of the member nodes */
    int64_t *mstart = ir_arena_alloc(&cx->b.scratch, (nn + 1) * sizeof(int64_t));
    int64_t *mcount = ir_arena_alloc(&cx->b.scratch, (nn + 1) * sizeof(int64_t));
    int64_t n_mem = mem ? mem->n_elems : 0, pos = 0;
    double *members = ir_arena_alloc(&cx->b.scratch, (size_t)(n_mem + 1) * sizeof(double));
    double *split_d = ir_arena_alloc(&cx->b.scratch, (nn + 1) * sizeof(double));
    double *weight_d = ir_arena_alloc(&cx->b.scratch, (nlt + 1) * sizeof(double));
    for (int64_t i = 0; i < n_mem; i++)
        members[i] = m_tensor_f(mem, i);
    for (uint32_t k = 0; k < nn; k++) {
        split_d[k] = m_tensor_f(splits, k);
        mstart[k] = pos, mcount[k] = 0;
        if (mode[k] != 6) continue;
        while (pos < n_mem && !isnan(members[pos]))
            pos++, mcount[k]++;
        if (pos >= n_mem) return cgen_unsupported(cx, n, "membership_values missing a set");
        pos++; /* the NaN */
    }
    for (uint32_t k = 0; k < nlt; k++)
        weight_d[k] = m_tensor_f(lw, k);
    int64_t *mode64 = ir_arena_alloc(&cx->b.scratch, (nn + 1) * sizeof(int64_t));
    int64_t *mt64 = ir_arena_alloc(&cx->b.scratch, (nn + 1) * sizeof(int64_t));
    for (uint32_t k = 0; k < nn; k++)
        mode64[k] = mode[k], mt64[k] = mtrue ? mtrue[k] : 0;
    if (rows == 0) return true;
    cgen_use_runtime(cx, "rt_misc.h");
    CWriter *w = cx->w;
    cw_line(w, "{");
    w->indent++;
    m_static_i64(cx, "root", roots, nr);
    m_static_u8(cx, "root_leaf", root_leaf, nr);
    cw_indent(w);
    cw_raw(w, "static const uint8_t mode[%u] = {", nn ? nn : 1);
    for (uint32_t k = 0; k < nn; k++)
        cw_raw(w, "%s%d", k ? ", " : "", (int)mode64[k]);
    cw_raw(w, "%s};\n", nn ? "" : "0");
    m_static_i64(cx, "feature", feat, nn);
    m_static_f64(cx, "split", split_d, nn);
    m_static_i64(cx, "next_true", tid, nn);
    m_static_i64(cx, "next_false", fid, nn);
    m_static_u8(cx, "leaf_true", tl, nn);
    m_static_u8(cx, "leaf_false", fl, nn);
    m_static_u8(cx, "missing_true", mt64, nn);
    m_static_i64(cx, "member_start", mstart, nn);
    m_static_i64(cx, "member_count", mcount, nn);
    m_static_f64(cx, "members", members, n_mem);
    m_static_i64(cx, "target", ltarget, nlt);
    m_static_f64(cx, "weight", weight_d, nlt);
    cw_open(w, "static const RtTreeEnsemble ens =");
    cw_line(w, "%u, %u, %lld, %lld, root, root_leaf, mode, feature, split,", nr, nn,
            (long long)n_targets, (long long)agg);
    cw_line(w, "{next_true, next_false}, {leaf_true, leaf_false}, missing_true,");
    cw_line(w, "member_start, member_count, members, target, weight");
    cw_close(w, ";");
    cgen_call_checked(cx, "rt_tree_ensemble_%s(%s, %lld, %lld, &ens, %s)", cgen_float_sfx(t),
                      cgen_ptr(cx, x), (long long)rows, (long long)F, cgen_ptr(cx, y));
    w->indent--;
    cw_line(w, "}");
    return true;
}

/* ---- random ops ----------------------------------------------------------------------- */

/* Bernoulli, RandomUniform(Like), RandomNormal(Like): one seeded generator per node (see
 * RtRng in rt_misc.h); the node tests cannot match values drawn by another generator. */
static bool emit_random(CgenCtx *cx, const IrNode *n) {
    uint32_t y = n->outputs[0];
    IrDType t = m_dtype(cx, y);
    if (!cgen_float_sfx(t) && !m_is_int(t) && t != IR_DTYPE_BOOL)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    if (!m_static(cx, n, y)) return false;
    IrAttrId seed_id;
    const char *draw;
    switch (n->op) {
    case IR_OP_BERNOULLI: {
        uint32_t x = n->inputs[0];
        IrDType tx = m_dtype(cx, x);
        if (!cgen_float_sfx(tx) || cgen_numel(cx, x) != cgen_numel(cx, y))
            return cgen_unsupported(cx, n, "probabilities of type %s", ir_dtype_name(tx));
        seed_id = IR_ATTR_BERNOULLI_SEED;
        draw = cgen_fmt(cx, "rt_rng_uniform(&rng) < %s ? 1.0 : 0.0",
                        m_ld(cx, tx, cgen_fmt(cx, "%s[i]", cgen_ptr(cx, x))));
        break;
    }
    case IR_OP_RANDOM_UNIFORM:
    case IR_OP_RANDOM_UNIFORM_LIKE: {
        bool like = n->op == IR_OP_RANDOM_UNIFORM_LIKE;
        double lo =
            ir_attr_f(n, like ? IR_ATTR_RANDOM_UNIFORM_LIKE_LOW : IR_ATTR_RANDOM_UNIFORM_LOW);
        double hi =
            ir_attr_f(n, like ? IR_ATTR_RANDOM_UNIFORM_LIKE_HIGH : IR_ATTR_RANDOM_UNIFORM_HIGH);
        seed_id = like ? IR_ATTR_RANDOM_UNIFORM_LIKE_SEED : IR_ATTR_RANDOM_UNIFORM_SEED;
        draw =
            cgen_fmt(cx, "%s + (%s) * rt_rng_uniform(&rng)", m_dlit(cx, lo), m_dlit(cx, hi - lo));
        break;
    }
    case IR_OP_RANDOM_NORMAL:
    case IR_OP_RANDOM_NORMAL_LIKE: {
        bool like = n->op == IR_OP_RANDOM_NORMAL_LIKE;
        double mean =
            ir_attr_f(n, like ? IR_ATTR_RANDOM_NORMAL_LIKE_MEAN : IR_ATTR_RANDOM_NORMAL_MEAN);
        double sc =
            ir_attr_f(n, like ? IR_ATTR_RANDOM_NORMAL_LIKE_SCALE : IR_ATTR_RANDOM_NORMAL_SCALE);
        seed_id = like ? IR_ATTR_RANDOM_NORMAL_LIKE_SEED : IR_ATTR_RANDOM_NORMAL_SEED;
        draw = cgen_fmt(cx, "%s + %s * rt_rng_normal(&rng)", m_dlit(cx, mean), m_dlit(cx, sc));
        break;
    }
    default:
        return cgen_unsupported(cx, n, "this random op");
    }
    if (cgen_numel(cx, y) == 0) return true;
    cgen_use_runtime(cx, "rt_misc.h");
    const char *seed =
        ir_attr_present(n, seed_id)
            ? cgen_fmt(cx, "%lluULL", (unsigned long long)(int64_t)ir_attr_f(n, seed_id))
            : "RT_RNG_DEFAULT_SEED";
    CWriter *w = cx->w;
    cw_line(w, "{");
    w->indent++;
    cw_line(w, "RtRng rng;");
    cw_line(w, "int64_t i;");
    cw_line(w, "rt_rng_seed(&rng, %s);", seed);
    cw_line(w, "for (i = 0; i < %lld; i++)", (long long)cgen_numel(cx, y));
    w->indent++;
    cw_line(w, "%s[i] = %s;", cgen_ptr(cx, y),
            t == IR_DTYPE_BOOL ? cgen_fmt(cx, "(uint8_t)((%s) != 0.0)", draw) : m_st(cx, t, draw));
    w->indent -= 2;
    cw_line(w, "}");
    return true;
}

/* ---- LabelEncoder (ai.onnx.ml) --------------------------------------------------------- */

/* One key or value list of a LabelEncoder: keys_int64s/values_int64s (int64),
 * keys_floats/values_floats (float) or keys_tensor/values_tensor (its element type). */
typedef struct MLabelList {
    IrDType t;
    int64_t n;
    const int64_t *ints;    /* the INTS attribute, or NULL */
    const float *floats;    /* the FLOATS attribute, or NULL */
    const IrTensor *tensor; /* the TENSOR attribute, or NULL */
} MLabelList;

/* A key of the sorted table: its value as int64 or double (by the key type) and its position
 * in the attribute (the last of repeated keys wins). */
typedef struct MLabelKey {
    int64_t i;
    double f;
    int64_t pos;
    bool is_float;
} MLabelKey;

static bool m_label_type(IrDType t) {
    return t == IR_DTYPE_I64 || t == IR_DTYPE_I32 || t == IR_DTYPE_I16 || t == IR_DTYPE_F32 ||
           t == IR_DTYPE_F64;
}

static bool m_label_is_float(IrDType t) { return t == IR_DTYPE_F32 || t == IR_DTYPE_F64; }

static int64_t m_label_i(const MLabelList *l, int64_t k) {
    if (l->ints) return l->ints[k];
    const char *p = (const char *)l->tensor->data;
    if (l->t == IR_DTYPE_I32) {
        int32_t v;
        memcpy(&v, p + 4 * k, 4);
        return v;
    }
    if (l->t == IR_DTYPE_I16) {
        int16_t v;
        memcpy(&v, p + 2 * k, 2);
        return v;
    }
    int64_t v;
    memcpy(&v, p + 8 * k, 8);
    return v;
}

static double m_label_f(const MLabelList *l, int64_t k) {
    if (l->floats) return l->floats[k];
    const char *p = (const char *)l->tensor->data;
    if (l->t == IR_DTYPE_F32) {
        float v;
        memcpy(&v, p + 4 * k, 4);
        return v;
    }
    double v;
    memcpy(&v, p + 8 * k, 8);
    return v;
}

/* A literal of type t (a LabelEncoder type) for integer i or float f, reading back exactly. */
static const char *m_label_lit(CgenCtx *cx, IrDType t, int64_t i, double f) {
    if (t == IR_DTYPE_F64) return m_dlit(cx, f);
    if (t == IR_DTYPE_F32) {
        if (isnan(f) || isinf(f)) return m_dlit(cx, f);
        char buf[64];
        snprintf(buf, sizeof buf, "%.9g", f);
        if (!strpbrk(buf, ".en")) strcat(buf, ".0");
        return cgen_fmt(cx, "%sf", buf);
    }
    if (i == INT64_MIN) return "(-9223372036854775807LL - 1)";
    return cgen_fmt(cx, t == IR_DTYPE_I64 ? "%lldLL" : "%lld", (long long)i);
}

/* Reads the keys_* (keys) or values_* attributes of n into *l; false after a diagnostic. */
static bool m_label_list(CgenCtx *cx, const IrNode *n, bool keys, MLabelList *l) {
    const char *what = keys ? "keys" : "values";
    IrAttrId ii = keys ? IR_ATTR_LABEL_ENCODER_KEYS_INT64S : IR_ATTR_LABEL_ENCODER_VALUES_INT64S;
    IrAttrId fi = keys ? IR_ATTR_LABEL_ENCODER_KEYS_FLOATS : IR_ATTR_LABEL_ENCODER_VALUES_FLOATS;
    IrAttrId si = keys ? IR_ATTR_LABEL_ENCODER_KEYS_STRINGS : IR_ATTR_LABEL_ENCODER_VALUES_STRINGS;
    IrAttrId ti = keys ? IR_ATTR_LABEL_ENCODER_KEYS_TENSOR : IR_ATTR_LABEL_ENCODER_VALUES_TENSOR;
    const IrAttr *ta = ir_node_attr(n, ti);
    const IrTensor *tt = ta->present && ta->tensors ? &ta->tensors[0] : NULL;
    if (ir_attr_present(n, si) || (tt && tt->dtype == IR_DTYPE_STRING))
        return cgen_unsupported(cx, n, "string %s (the C backend has no string tensors; "
                                "numeric %s_int64s, %s_floats or %s_tensor only)", what, what,
                                what, what);
    int n_forms = ir_attr_present(n, ii) + ir_attr_present(n, fi) + (tt != NULL);
    if (n_forms != 1)
        return cgen_unsupported(cx, n, "%d forms of %s (exactly one of %s_int64s, %s_floats, "
                                "%s_tensor expected)", n_forms, what, what, what, what);
    memset(l, 0, sizeof *l);
    if (ir_attr_present(n, ii)) {
        uint32_t cnt;
        l->ints = ir_attr_ints(n, ii, &cnt);
        l->t = IR_DTYPE_I64;
        l->n = cnt;
    } else if (ir_attr_present(n, fi)) {
        const IrAttr *a = ir_node_attr(n, fi);
        l->floats = a->floats;
        l->t = IR_DTYPE_F32;
        l->n = a->n;
    } else {
        if (!m_label_type((IrDType)tt->dtype) || (!tt->data && tt->n_elems > 0))
            return cgen_unsupported(cx, n, "%s_tensor of type %s", what,
                                    ir_dtype_name((IrDType)tt->dtype));
        l->tensor = tt;
        l->t = (IrDType)tt->dtype;
        l->n = tt->n_elems;
    }
    return true;
}

static int m_label_cmp(const void *pa, const void *pb) {
    const MLabelKey *a = pa, *b = pb;
    if (a->is_float ? a->f < b->f : a->i < b->i) return -1;
    if (a->is_float ? a->f > b->f : a->i > b->i) return 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* LabelEncoder with numeric keys and values: the keys are sorted at compile time (the last
 * of repeated keys kept, NaN keys set apart: any NaN input matches them) and each element is
 * looked up by binary search (rt_label_find_*); a miss takes the default. */
static bool emit_label_encoder(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    MLabelList k, v;
    if (!m_label_list(cx, n, true, &k) || !m_label_list(cx, n, false, &v)) return false;
    if (k.n != v.n)
        return cgen_unsupported(cx, n, "%lld keys for %lld values", (long long)k.n,
                                (long long)v.n);
    if (m_dtype(cx, x) != k.t || m_dtype(cx, y) != v.t)
        return cgen_unsupported(cx, n, "input %s and output %s for keys of %s and values of %s",
                                ir_dtype_name(m_dtype(cx, x)), ir_dtype_name(m_dtype(cx, y)),
                                ir_dtype_name(k.t), ir_dtype_name(v.t));
    if (!m_static(cx, n, x) || !m_static(cx, n, y)) return false;
    /* the default: default_int64 / default_float, or default_tensor's element (-1 or -0.0
     * when absent, as the schema says) */
    int64_t di = -1;
    double df = -0.0;
    if (v.ints) di = ir_attr_i(n, IR_ATTR_LABEL_ENCODER_DEFAULT_INT64);
    else if (v.floats) df = ir_attr_f(n, IR_ATTR_LABEL_ENCODER_DEFAULT_FLOAT);
    else {
        const IrAttr *a = ir_node_attr(n, IR_ATTR_LABEL_ENCODER_DEFAULT_TENSOR);
        if (a->present && a->tensors) {
            const IrTensor *dt = &a->tensors[0];
            if (dt->dtype != v.t || dt->n_elems != 1 || !dt->data)
                return cgen_unsupported(cx, n, "a default_tensor of type %s and %lld elements "
                                        "for values of %s", ir_dtype_name((IrDType)dt->dtype),
                                        (long long)dt->n_elems, ir_dtype_name(v.t));
            MLabelList d1 = {v.t, 1, NULL, NULL, dt};
            if (m_label_is_float(v.t)) df = m_label_f(&d1, 0);
            else di = m_label_i(&d1, 0);
        }
    }
    const char *def = m_label_lit(cx, v.t, di, df);
    int64_t len = cgen_numel(cx, x);
    if (len == 0) return true;
    /* sorted, deduplicated keys; the value slot of NaN keys after them */
    bool kf = m_label_is_float(k.t);
    MLabelKey *keys = malloc((size_t)(k.n > 0 ? k.n : 1) * sizeof *keys);
    IR_ASSERT(keys);
    int64_t m = 0, nan_pos = -1;
    for (int64_t i = 0; i < k.n; i++) {
        MLabelKey e = {kf ? 0 : m_label_i(&k, i), kf ? m_label_f(&k, i) : 0, i, kf};
        if (kf && isnan(e.f)) nan_pos = i;
        else keys[m++] = e;
    }
    qsort(keys, (size_t)m, sizeof *keys, m_label_cmp);
    int64_t u = 0;
    for (int64_t i = 0; i < m; i++) {
        if (u > 0 && (kf ? keys[u - 1].f == keys[i].f : keys[u - 1].i == keys[i].i))
            keys[u - 1] = keys[i]; /* a repeat: the later one wins */
        else
            keys[u++] = keys[i];
    }
    CWriter *w = cx->w;
    const char *px = cgen_ptr(cx, x), *py = cgen_ptr(cx, y);
    if (u == 0 && nan_pos < 0) { /* no key: every element takes the default */
        m_loop_open(cx, len);
        cw_line(w, "%s[i] = %s;", py, def);
        m_loop_close(cx);
        free(keys);
        return true;
    }
    static const char *const sfx[] = {[IR_DTYPE_I64] = "i64", [IR_DTYPE_I32] = "i32",
                                      [IR_DTYPE_I16] = "i16", [IR_DTYPE_F32] = "f32",
                                      [IR_DTYPE_F64] = "f64"};
    cgen_use_runtime(cx, "rt_misc.h");
    cw_line(w, "{");
    w->indent++;
    cw_indent(w);
    cw_raw(w, "static const %s keys[%lld] = {", bundle_ctype(k.t), (long long)(u > 0 ? u : 1));
    for (int64_t i = 0; i < u; i++)
        cw_raw(w, "%s%s", i ? ", " : "", m_label_lit(cx, k.t, keys[i].i, keys[i].f));
    cw_raw(w, "%s};\n", u > 0 ? "" : "0");
    cw_indent(w);
    cw_raw(w, "static const %s vals[%lld] = {", bundle_ctype(v.t),
           (long long)(u + (nan_pos >= 0)));
    for (int64_t i = 0; i <= u; i++) {
        int64_t pos = i < u ? keys[i].pos : nan_pos;
        if (pos < 0) break;
        cw_raw(w, "%s%s", i ? ", " : "",
               m_label_lit(cx, v.t, m_label_is_float(v.t) ? 0 : m_label_i(&v, pos),
                           m_label_is_float(v.t) ? m_label_f(&v, pos) : 0));
    }
    cw_raw(w, "};\n");
    cw_line(w, "int64_t i;");
    cw_open(w, "for (i = 0; i < %lld; i++)", (long long)len);
    cw_line(w, "const int64_t s = rt_label_find_%s(keys, %lld, %s[i], %lld);", sfx[k.t],
            (long long)u, px, (long long)(nan_pos >= 0 ? u : -1));
    cw_line(w, "%s[i] = s >= 0 ? vals[s] : %s;", py, def);
    cw_close(w, NULL);
    w->indent--;
    cw_line(w, "}");
    free(keys);
    return true;
}

void cgen_register_misc(CgenEmitFn *table) {
    table[IR_OP_SHRINK] = emit_shrink;
    table[IR_OP_BINARIZER] = emit_binarizer;
    table[IR_OP_SCALER] = emit_scaler;
    table[IR_OP_ADAGRAD] = emit_optimizer;
    table[IR_OP_ADAM] = emit_optimizer;
    table[IR_OP_MOMENTUM] = emit_optimizer;
    table[IR_OP_TENSOR_SCATTER] = emit_tensor_scatter;
    table[IR_OP_ARRAY_FEATURE_EXTRACTOR] = emit_array_feature_extractor;
    table[IR_OP_ROTARY_EMBEDDING] = emit_rotary;
    table[IR_OP_CAUSAL_CONV_WITH_STATE] = emit_causal_conv;
    table[IR_OP_DEFORM_CONV] = emit_deform_conv;
    table[IR_OP_LINEAR_ATTENTION] = emit_linear_attention;
    table[IR_OP_UNIQUE] = emit_unique;
    table[IR_OP_TF_IDF_VECTORIZER] = emit_tfidf;
    table[IR_OP_TREE_ENSEMBLE] = emit_tree_ensemble;
    table[IR_OP_BERNOULLI] = emit_random;
    table[IR_OP_RANDOM_UNIFORM] = emit_random;
    table[IR_OP_RANDOM_UNIFORM_LIKE] = emit_random;
    table[IR_OP_RANDOM_NORMAL] = emit_random;
    table[IR_OP_RANDOM_NORMAL_LIKE] = emit_random;
    table[IR_OP_LABEL_ENCODER] = emit_label_encoder;
}
