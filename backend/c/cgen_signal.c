/* C backend emitters of the signal/geometry family: the spectral ops DFT, STFT, the
 * Hann/Hamming/Blackman windows and MelWeightMatrix (runtime/rt_signal.h), and the geometry
 * ops GridSample, AffineGrid, RoiAlign, MaxRoiPool, Col2Im, MaxUnpool, NonMaxSuppression and
 * Det (runtime/rt_geom.h). Scalars and shapes that arrive as tensors are read at run time and
 * checked against the compiled static shapes (RT_ERR_SHAPE when they disagree). float32 and
 * float64 data; windows and the mel matrix write any numeric output type. */
#include <string.h>

#include "backend/c/cgen.h"
#include "backend/c/cgen_count.h"

#define SIG_MAX_SPATIAL 3 /* = RT_GEOM_MAX_SPATIAL */
/* Det's LU scratch lives on the stack: 64 KiB holds a 90x90 matrix of doubles. */
#define SIG_DET_MAX_STACK_BYTES (64 * 1024)

static bool sig_has_in(const IrNode *n, uint32_t i) {
    return i < n->n_inputs && n->inputs[i] != IR_NONE;
}

static IrDType sig_dtype(const CgenCtx *cx, uint32_t v) { return (IrDType)cgen_type(cx, v)->dtype; }

/* Runtime suffix of a float element type the kernels take, or NULL. */
/* The signal kernels take float32 and float64. */
static const char *sig_sfx(IrDType t) {
    return t == IR_DTYPE_F32 || t == IR_DTYPE_F64 ? cgen_sfx(t) : NULL;
}

static bool sig_static(CgenCtx *cx, const IrNode *n) {
    for (uint32_t i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] != IR_NONE && !ir_type_is_static(cgen_type(cx, n->inputs[i])))
            return cgen_unsupported(cx, n, "an input of non-static shape");
    for (uint32_t i = 0; i < n->n_outputs; i++)
        if (n->outputs[i] != IR_NONE && !ir_type_is_static(cgen_type(cx, n->outputs[i])))
            return cgen_unsupported(cx, n, "an output of non-static shape");
    return true;
}

static bool sig_is_int(IrDType t) {
    return t == IR_DTYPE_I8 || t == IR_DTYPE_I16 || t == IR_DTYPE_I32 || t == IR_DTYPE_I64 ||
           t == IR_DTYPE_U8 || t == IR_DTYPE_U16 || t == IR_DTYPE_U32 || t == IR_DTYPE_U64;
}

/* C expression of element 0 of value v as int64_t (v: an integer tensor of one element). */
static const char *sig_int0(CgenCtx *cx, const IrNode *n, uint32_t v, const char *what) {
    if (!sig_is_int(sig_dtype(cx, v)) || cgen_numel(cx, v) != 1) {
        cgen_unsupported(cx, n, "a %s that is not one integer", what);
        return NULL;
    }
    return cgen_fmt(cx, "(int64_t)%s[0]", cgen_ptr(cx, v));
}

/* C expression of element 0 of value v as float (v: a float tensor of one element). */
static const char *sig_float0(CgenCtx *cx, const IrNode *n, uint32_t v, const char *what) {
    IrDType t = sig_dtype(cx, v);
    if (cgen_numel(cx, v) != 1) {
        cgen_unsupported(cx, n, "a %s that is not one value", what);
        return NULL;
    }
    if (t == IR_DTYPE_F32 || t == IR_DTYPE_F64 || sig_is_int(t))
        return cgen_fmt(cx, "(float)%s[0]", cgen_ptr(cx, v));
    if (t == IR_DTYPE_F16) return cgen_fmt(cx, "rt_f16_to_f32(%s[0])", cgen_ptr(cx, v));
    if (t == IR_DTYPE_BF16) return cgen_fmt(cx, "rt_bf16_to_f32(%s[0])", cgen_ptr(cx, v));
    cgen_unsupported(cx, n, "a %s of type %s", what, ir_dtype_name(t));
    return NULL;
}

static void sig_open(CWriter *w) {
    cw_line(w, "{");
    w->indent++;
}

static void sig_close(CWriter *w) {
    w->indent--;
    cw_line(w, "}");
}

/* Emits `if (EXPR[i] != dims[i] || ...) return RT_ERR_SHAPE;` for a shape tensor read at
 * run time (it must have exactly n entries). */
static bool sig_check_shape_input(CgenCtx *cx, const IrNode *n, uint32_t v, const int64_t *dims,
                                  int count, const char *what) {
    if (!sig_is_int(sig_dtype(cx, v)) || cgen_numel(cx, v) != count)
        return cgen_unsupported(cx, n, "a %s that is not %d integers", what, count);
    const char *p = cgen_ptr(cx, v);
    CWriter *w = cx->w;
    cw_indent(w);
    cw_raw(w, "if (");
    for (int i = 0; i < count; i++)
        cw_raw(w, "%s(int64_t)%s[%d] != %lld", i ? " || " : "", p, i, (long long)dims[i]);
    cw_raw(w, ") return RT_ERR_SHAPE;\n");
    return true;
}

/* ---- windows and MelWeightMatrix ---- */

/* Store expression of a double `expr` into an element of type t. */
static const char *sig_store(CgenCtx *cx, IrDType t, const char *expr) {
    if (t == IR_DTYPE_F16) return cgen_fmt(cx, "rt_f32_to_f16((float)(%s))", expr);
    if (t == IR_DTYPE_BF16) return cgen_fmt(cx, "rt_f32_to_bf16((float)(%s))", expr);
    return cgen_fmt(cx, "(%s)(%s)", bundle_ctype(t), expr);
}

static bool sig_numeric_out(IrDType t) {
    return t == IR_DTYPE_F32 || t == IR_DTYPE_F64 || t == IR_DTYPE_F16 || t == IR_DTYPE_BF16 ||
           sig_is_int(t);
}

static bool emit_window(CgenCtx *cx, const IrNode *n) {
    if (!sig_static(cx, n)) return false;
    uint32_t y = n->outputs[0];
    IrDType t = sig_dtype(cx, y);
    int kind = n->op == IR_OP_HANN_WINDOW ? 0 : n->op == IR_OP_HAMMING_WINDOW ? 1 : 2;
    IrAttrId periodic_id = n->op == IR_OP_HANN_WINDOW      ? IR_ATTR_HANN_WINDOW_PERIODIC
                           : n->op == IR_OP_HAMMING_WINDOW ? IR_ATTR_HAMMING_WINDOW_PERIODIC
                                                           : IR_ATTR_BLACKMAN_WINDOW_PERIODIC;
    if (!sig_numeric_out(t) || cgen_type(cx, y)->rank != 1)
        return cgen_unsupported(cx, n, "an output of type %s", ir_dtype_name(t));
    int64_t len = cgen_type(cx, y)->dims[0];
    const char *size = sig_int0(cx, n, n->inputs[0], "size");
    if (!size) return false;
    cgen_use_runtime(cx, "rt_signal.h");
    CWriter *w = cx->w;
    sig_open(w);
    cw_line(w, "%s *y = %s;", bundle_ctype(t), cgen_ptr(cx, y));
    cw_line(w, "int64_t i;");
    cw_line(w, "if (%s != %lld) return RT_ERR_SHAPE;", size, (long long)len);
    cw_line(w, "for (i = 0; i < %lld; i++)", (long long)len);
    w->indent++;
    cw_line(w, "y[i] = %s;",
            sig_store(cx, t,
                      cgen_fmt(cx, "rt_window_value(%d, i, %lld, %d)", kind, (long long)len,
                               ir_attr_i(n, periodic_id) != 0)));
    w->indent--;
    sig_close(w);
    return true;
}

static bool emit_mel(CgenCtx *cx, const IrNode *n) {
    if (!sig_static(cx, n)) return false;
    uint32_t y = n->outputs[0];
    const IrType *ty = cgen_type(cx, y);
    const char *sfx = sig_sfx((IrDType)ty->dtype);
    if (!sfx || ty->rank != 2)
        return cgen_unsupported(cx, n, "an output of type %s", ir_dtype_name((IrDType)ty->dtype));
    const char *mel = sig_int0(cx, n, n->inputs[0], "num_mel_bins");
    const char *dft = mel ? sig_int0(cx, n, n->inputs[1], "dft_length") : NULL;
    const char *rate = dft ? sig_int0(cx, n, n->inputs[2], "sample_rate") : NULL;
    const char *lo = rate ? sig_float0(cx, n, n->inputs[3], "lower_edge_hertz") : NULL;
    const char *hi = lo ? sig_float0(cx, n, n->inputs[4], "upper_edge_hertz") : NULL;
    if (!hi) return false;
    cgen_use_runtime(cx, "rt_signal.h");
    cgen_call_checked(cx, "rt_mel_%s(%s, %lld, %lld, %s, %s, %s, %s, %s)", sfx, cgen_ptr(cx, y),
                      (long long)ty->dims[0], (long long)ty->dims[1], mel, dft, rate, lo, hi);
    return true;
}

/* ---- DFT, STFT ---- */

static bool emit_dft(CgenCtx *cx, const IrNode *n) {
    if (!sig_static(cx, n)) return false;
    uint32_t x = n->inputs[0], y = n->outputs[0];
    const IrType *tx = cgen_type(cx, x), *ty = cgen_type(cx, y);
    const char *sfx = sig_sfx((IrDType)tx->dtype);
    if (!sfx || ty->dtype != tx->dtype)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name((IrDType)tx->dtype));
    if (tx->rank < 2 || ty->rank != tx->rank)
        return cgen_unsupported(cx, n, "input and output ranks %d and %d", tx->rank, ty->rank);
    const char *len = "-1", *axis;
    if (sig_has_in(n, 1) && !(len = sig_int0(cx, n, n->inputs[1], "dft_length"))) return false;
    if (n->opset >= 20) {
        axis = "-2";
        if (sig_has_in(n, 2) && !(axis = sig_int0(cx, n, n->inputs[2], "axis"))) return false;
    } else {
        axis = cgen_fmt(cx, "%lld", (long long)ir_attr_i(n, IR_ATTR_DFT_AXIS));
    }
    cgen_use_runtime(cx, "rt_signal.h");
    CWriter *w = cx->w;
    sig_open(w);
    cw_line(w, "static const int64_t in_dims[] = %s;", cgen_dims(cx, tx));
    cw_line(w, "static const int64_t out_dims[] = %s;", cgen_dims(cx, ty));
    cgen_call_checked(cx, "rt_dft_%s(%s, %s, %d, in_dims, out_dims, %s, %s, %d, %d)", sfx,
                      cgen_ptr(cx, x), cgen_ptr(cx, y), tx->rank, axis, len,
                      ir_attr_i(n, IR_ATTR_DFT_INVERSE) != 0,
                      ir_attr_i(n, IR_ATTR_DFT_ONESIDED) != 0);
    sig_close(w);
    return true;
}

static bool emit_stft(CgenCtx *cx, const IrNode *n) {
    if (!sig_static(cx, n)) return false;
    uint32_t x = n->inputs[0], y = n->outputs[0];
    const IrType *tx = cgen_type(cx, x), *ty = cgen_type(cx, y);
    const char *sfx = sig_sfx((IrDType)tx->dtype);
    if (!sfx || ty->dtype != tx->dtype)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name((IrDType)tx->dtype));
    if (tx->rank != 3 || ty->rank != 4 || ty->dims[0] != tx->dims[0] || ty->dims[3] != 2 ||
        (tx->dims[2] != 1 && tx->dims[2] != 2))
        return cgen_unsupported(cx, n, "these signal and output shapes");
    const char *step = sig_int0(cx, n, n->inputs[1], "frame_step");
    if (!step) return false;
    uint32_t win = sig_has_in(n, 2) ? n->inputs[2] : IR_NONE;
    int64_t wlen = -1;
    if (win != IR_NONE) {
        const IrType *tw = cgen_type(cx, win);
        if (tw->rank != 1 || tw->dtype != tx->dtype)
            return cgen_unsupported(cx, n, "a window that is not a vector of the signal's type");
        wlen = tw->dims[0];
    }
    const char *flen;
    if (sig_has_in(n, 3)) {
        if (!(flen = sig_int0(cx, n, n->inputs[3], "frame_length"))) return false;
    } else {
        flen = cgen_fmt(cx, "%lld", (long long)(wlen >= 0 ? wlen : tx->dims[1]));
    }
    cgen_use_runtime(cx, "rt_signal.h");
    cgen_call_checked(cx, "rt_stft_%s(%s, %s, %lld, %s, %lld, %lld, %lld, %lld, %lld, %s, %s, %d)",
                      sfx, cgen_ptr(cx, x),
                      win != IR_NONE
                          ? cgen_ptr(cx, win)
                          : cgen_fmt(cx, "(const %s *)NULL", bundle_ctype((IrDType)tx->dtype)),
                      (long long)wlen, cgen_ptr(cx, y), (long long)tx->dims[0],
                      (long long)tx->dims[1], (long long)tx->dims[2], (long long)ty->dims[1],
                      (long long)ty->dims[2], step, flen, ir_attr_i(n, IR_ATTR_STFT_ONESIDED) != 0);
    return true;
}

/* ---- GridSample, AffineGrid ---- */

static bool emit_grid_sample(CgenCtx *cx, const IrNode *n) {
    if (!sig_static(cx, n)) return false;
    uint32_t x = n->inputs[0], g = n->inputs[1], y = n->outputs[0];
    const IrType *tx = cgen_type(cx, x), *tg = cgen_type(cx, g), *ty = cgen_type(cx, y);
    const char *sfx = sig_sfx((IrDType)tx->dtype);
    if (!sfx || tg->dtype != tx->dtype || ty->dtype != tx->dtype)
        return cgen_unsupported(cx, n, "element types %s and %s", ir_dtype_name((IrDType)tx->dtype),
                                ir_dtype_name((IrDType)tg->dtype));
    int ns = tx->rank - 2;
    if (ns < 1 || ns > SIG_MAX_SPATIAL || tg->rank != tx->rank || ty->rank != tx->rank ||
        tg->dims[tg->rank - 1] != ns || tg->dims[0] != tx->dims[0] || ty->dims[1] != tx->dims[1])
        return cgen_unsupported(cx, n, "these input, grid and output shapes");
    const char *mode = ir_attr_s(n, IR_ATTR_GRID_SAMPLE_MODE);
    const char *pad = ir_attr_s(n, IR_ATTR_GRID_SAMPLE_PADDING_MODE);
    int m, p;
    if (strcmp(mode, "nearest") == 0)
        m = 0;
    else if (strcmp(mode, "linear") == 0 || strcmp(mode, "bilinear") == 0)
        m = 1;
    else if (strcmp(mode, "cubic") == 0 || strcmp(mode, "bicubic") == 0)
        m = 2;
    else
        return cgen_unsupported(cx, n, "mode '%s'", mode);
    if (strcmp(pad, "zeros") == 0)
        p = 0;
    else if (strcmp(pad, "border") == 0)
        p = 1;
    else if (strcmp(pad, "reflection") == 0)
        p = 2;
    else
        return cgen_unsupported(cx, n, "padding_mode '%s'", pad);
    int64_t in[SIG_MAX_SPATIAL] = {1, 1, 1}, points = 1;
    for (int i = 0; i < ns; i++) {
        in[i] = tx->dims[2 + i];
        if (ty->dims[2 + i] != tg->dims[1 + i])
            return cgen_unsupported(cx, n, "an output that does not match the grid");
        points *= ty->dims[2 + i];
    }
    cgen_use_runtime(cx, "rt_geom.h");
    CWriter *w = cx->w;
    sig_open(w);
    cw_line(w, "static const RtGridSample p = {%lld, %lld, %d, %s, %lld, %d, %d, %d};",
            (long long)tx->dims[0], (long long)tx->dims[1], ns,
            cgen_i64_list(cx, in, SIG_MAX_SPATIAL), (long long)points, m, p,
            ir_attr_i(n, IR_ATTR_GRID_SAMPLE_ALIGN_CORNERS) != 0);
    cw_line(w, "rt_grid_sample_%s(&p, %s, %s, %s);", sfx, cgen_ptr(cx, x), cgen_ptr(cx, g),
            cgen_ptr(cx, y));
    sig_close(w);
    return true;
}

static bool emit_affine_grid(CgenCtx *cx, const IrNode *n) {
    if (!sig_static(cx, n)) return false;
    uint32_t th = n->inputs[0], y = n->outputs[0];
    const IrType *tt = cgen_type(cx, th), *ty = cgen_type(cx, y);
    const char *sfx = sig_sfx((IrDType)tt->dtype);
    if (!sfx || ty->dtype != tt->dtype)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name((IrDType)tt->dtype));
    int ns = ty->rank - 2;
    if ((ns != 2 && ns != 3) || tt->rank != 3 || tt->dims[1] != ns || tt->dims[2] != ns + 1 ||
        ty->dims[0] != tt->dims[0] || ty->dims[ty->rank - 1] != ns)
        return cgen_unsupported(cx, n, "these theta and output shapes");
    /* size is (N, C, spatial...): C does not show in the output and is not checked */
    int64_t want[SIG_MAX_SPATIAL + 2];
    want[0] = ty->dims[0], want[1] = 0;
    for (int i = 0; i < ns; i++)
        want[2 + i] = ty->dims[1 + i];
    uint32_t sz = n->inputs[1];
    if (!sig_is_int(sig_dtype(cx, sz)) || cgen_numel(cx, sz) != ns + 2)
        return cgen_unsupported(cx, n, "a size that is not %d integers", ns + 2);
    cgen_use_runtime(cx, "rt_geom.h");
    CWriter *w = cx->w;
    sig_open(w);
    cw_line(w, "static const int64_t grid_dims[] = %s;", cgen_i64_list(cx, want + 2, (uint32_t)ns));
    const char *ps = cgen_ptr(cx, sz);
    cw_indent(w);
    cw_raw(w, "if ((int64_t)%s[0] != %lld", ps, (long long)want[0]);
    for (int i = 0; i < ns; i++)
        cw_raw(w, " || (int64_t)%s[%d] != %lld", ps, 2 + i, (long long)want[2 + i]);
    cw_raw(w, ") return RT_ERR_SHAPE;\n");
    cw_line(w, "rt_affine_grid_%s(%s, %s, %lld, %d, grid_dims, %d);", sfx, cgen_ptr(cx, th),
            cgen_ptr(cx, y), (long long)ty->dims[0], ns,
            ir_attr_i(n, IR_ATTR_AFFINE_GRID_ALIGN_CORNERS) != 0);
    sig_close(w);
    return true;
}

/* ---- RoiAlign, MaxRoiPool ---- */

static bool emit_roi_align(CgenCtx *cx, const IrNode *n) {
    if (!sig_static(cx, n)) return false;
    uint32_t x = n->inputs[0], rois = n->inputs[1], bi = n->inputs[2], y = n->outputs[0];
    const IrType *tx = cgen_type(cx, x), *tr = cgen_type(cx, rois), *ty = cgen_type(cx, y);
    const char *sfx = sig_sfx((IrDType)tx->dtype);
    if (!sfx || tr->dtype != tx->dtype || sig_dtype(cx, bi) != IR_DTYPE_I64)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name((IrDType)tx->dtype));
    if (tx->rank != 4 || tr->rank != 2 || tr->dims[1] != 4 || ty->rank != 4 ||
        ty->dims[0] != tr->dims[0] || ty->dims[1] != tx->dims[1] ||
        cgen_numel(cx, bi) != tr->dims[0])
        return cgen_unsupported(cx, n, "these input, rois and output shapes");
    /* opset 10 has no coordinate_transformation_mode: it behaves as output_half_pixel */
    bool half =
        n->opset >= 16 &&
        strcmp(ir_attr_s(n, IR_ATTR_ROI_ALIGN_COORDINATE_TRANSFORMATION_MODE), "half_pixel") == 0;
    const char *mode = ir_attr_s(n, IR_ATTR_ROI_ALIGN_MODE);
    bool max_mode = strcmp(mode, "max") == 0;
    if (!max_mode && strcmp(mode, "avg") != 0) return cgen_unsupported(cx, n, "mode '%s'", mode);
    cgen_use_runtime(cx, "rt_geom.h");
    cgen_call_checked(cx,
                      "rt_roi_align_%s(%s, %s, %s, %s, %lld, %lld, %lld, %lld, %lld, %lld, "
                      "%lld, %lld, %s, %d, %d)",
                      sfx, cgen_ptr(cx, x), cgen_ptr(cx, rois), cgen_ptr(cx, bi), cgen_ptr(cx, y),
                      (long long)tx->dims[0], (long long)tx->dims[1], (long long)tx->dims[2],
                      (long long)tx->dims[3], (long long)tr->dims[0], (long long)ty->dims[2],
                      (long long)ty->dims[3],
                      (long long)ir_attr_i(n, IR_ATTR_ROI_ALIGN_SAMPLING_RATIO),
                      cgen_flit(cx, ir_attr_f(n, IR_ATTR_ROI_ALIGN_SPATIAL_SCALE), true), half ? 1 : 0,
                      max_mode ? 1 : 0);
    return true;
}

static bool emit_max_roi_pool(CgenCtx *cx, const IrNode *n) {
    if (!sig_static(cx, n)) return false;
    uint32_t x = n->inputs[0], rois = n->inputs[1], y = n->outputs[0];
    const IrType *tx = cgen_type(cx, x), *tr = cgen_type(cx, rois), *ty = cgen_type(cx, y);
    const char *sfx = sig_sfx((IrDType)tx->dtype);
    if (!sfx || tr->dtype != tx->dtype)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name((IrDType)tx->dtype));
    if (tx->rank != 4 || tr->rank != 2 || tr->dims[1] != 5 || ty->rank != 4 ||
        ty->dims[0] != tr->dims[0] || ty->dims[1] != tx->dims[1] || ty->dims[2] < 1 ||
        ty->dims[3] < 1)
        return cgen_unsupported(cx, n, "these input, rois and output shapes");
    cgen_use_runtime(cx, "rt_geom.h");
    cgen_call_checked(cx,
                      "rt_max_roi_pool_%s(%s, %s, %s, %lld, %lld, %lld, %lld, %lld, %lld, "
                      "%lld, %s)",
                      sfx, cgen_ptr(cx, x), cgen_ptr(cx, rois), cgen_ptr(cx, y),
                      (long long)tx->dims[0], (long long)tx->dims[1], (long long)tx->dims[2],
                      (long long)tx->dims[3], (long long)tr->dims[0], (long long)ty->dims[2],
                      (long long)ty->dims[3],
                      cgen_flit(cx, ir_attr_f(n, IR_ATTR_MAX_ROI_POOL_SPATIAL_SCALE), true));
    return true;
}

/* ---- Col2Im, MaxUnpool ---- */

/* Reads an ints attribute of want entries into v (keeping v's defaults when absent). */
static bool sig_ints(CgenCtx *cx, const IrNode *n, IrAttrId id, uint32_t want, int64_t *v,
                     const char *what) {
    uint32_t cnt;
    const int64_t *a = ir_attr_ints(n, id, &cnt);
    if (!a || cnt == 0) return true;
    if (cnt != want)
        return cgen_unsupported(cx, n, "%s with %u entries (want %u)", what, cnt, want);
    memcpy(v, a, want * sizeof *v);
    return true;
}

static bool emit_col2im(CgenCtx *cx, const IrNode *n) {
    if (!sig_static(cx, n)) return false;
    uint32_t x = n->inputs[0], img = n->inputs[1], blk = n->inputs[2], y = n->outputs[0];
    const IrType *tx = cgen_type(cx, x), *ty = cgen_type(cx, y);
    const char *sfx = sig_sfx((IrDType)tx->dtype);
    if (!sfx || ty->dtype != tx->dtype)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name((IrDType)tx->dtype));
    int ns = ty->rank - 2;
    if (ns < 1 || ns > IR_MAX_RANK - 2 || tx->rank != 3 || ty->dims[0] != tx->dims[0] ||
        ty->dims[1] < 1 || tx->dims[1] % ty->dims[1] != 0 || cgen_numel(cx, blk) != ns ||
        sig_dtype(cx, blk) != IR_DTYPE_I64)
        return cgen_unsupported(cx, n, "these input, block and output shapes");
    int64_t dil[IR_MAX_RANK], str[IR_MAX_RANK], pads[2 * IR_MAX_RANK];
    for (int i = 0; i < ns; i++)
        dil[i] = str[i] = 1, pads[i] = pads[i + ns] = 0;
    uint32_t un = (uint32_t)ns;
    if (!sig_ints(cx, n, IR_ATTR_COL2_IM_DILATIONS, un, dil, "dilations") ||
        !sig_ints(cx, n, IR_ATTR_COL2_IM_STRIDES, un, str, "strides") ||
        !sig_ints(cx, n, IR_ATTR_COL2_IM_PADS, 2 * un, pads, "pads"))
        return false;
    for (int i = 0; i < ns; i++)
        if (dil[i] < 1 || str[i] < 1 || pads[i] < 0 || pads[i + ns] < 0)
            return cgen_unsupported(cx, n, "dilations or strides below 1, or negative pads");
    cgen_use_runtime(cx, "rt_geom.h");
    CWriter *w = cx->w;
    sig_open(w);
    cw_line(w, "static const int64_t img[] = %s;", cgen_i64_list(cx, ty->dims + 2, un));
    cw_line(w, "static const int64_t dil[] = %s;", cgen_i64_list(cx, dil, un));
    cw_line(w, "static const int64_t pads[] = %s;", cgen_i64_list(cx, pads, 2 * un));
    cw_line(w, "static const int64_t str[] = %s;", cgen_i64_list(cx, str, un));
    if (!sig_check_shape_input(cx, n, img, ty->dims + 2, ns, "image_shape")) return false;
    cgen_call_checked(cx,
                      "rt_col2im_%s(%s, %s, %lld, %lld, %d, img, %s, dil, pads, str, %lld, "
                      "%lld)",
                      sfx, cgen_ptr(cx, x), cgen_ptr(cx, y), (long long)ty->dims[0],
                      (long long)ty->dims[1], ns, cgen_ptr(cx, blk),
                      (long long)(tx->dims[1] / ty->dims[1]), (long long)tx->dims[2]);
    sig_close(w);
    return true;
}

static bool emit_max_unpool(CgenCtx *cx, const IrNode *n) {
    if (!sig_static(cx, n)) return false;
    uint32_t x = n->inputs[0], ix = n->inputs[1], y = n->outputs[0];
    const IrType *tx = cgen_type(cx, x), *ti = cgen_type(cx, ix), *ty = cgen_type(cx, y);
    const char *sfx = sig_sfx((IrDType)tx->dtype);
    if (!sfx || ty->dtype != tx->dtype || ti->dtype != IR_DTYPE_I64)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name((IrDType)tx->dtype));
    int ns = tx->rank - 2;
    bool same = ti->rank == tx->rank;
    for (int i = 0; same && i < tx->rank; i++)
        same = ti->dims[i] == tx->dims[i];
    if (ns < 1 || ty->rank != tx->rank || !same || ty->dims[0] != tx->dims[0] ||
        ty->dims[1] != tx->dims[1])
        return cgen_unsupported(cx, n, "these input, indices and output shapes");
    uint32_t un = (uint32_t)ns, nk;
    int64_t k[IR_MAX_RANK], s[IR_MAX_RANK], pads[2 * IR_MAX_RANK], inf[IR_MAX_RANK];
    const int64_t *ka = ir_attr_ints(n, IR_ATTR_MAX_UNPOOL_KERNEL_SHAPE, &nk);
    if (!ka || nk != un) return cgen_unsupported(cx, n, "a kernel_shape of another rank");
    for (int i = 0; i < ns; i++)
        k[i] = ka[i], s[i] = 1, pads[i] = pads[i + ns] = 0;
    if (!sig_ints(cx, n, IR_ATTR_MAX_UNPOOL_STRIDES, un, s, "strides") ||
        !sig_ints(cx, n, IR_ATTR_MAX_UNPOOL_PADS, 2 * un, pads, "pads"))
        return false;
    inf[0] = tx->dims[0], inf[1] = tx->dims[1];
    for (int i = 0; i < ns; i++) {
        inf[2 + i] = (tx->dims[2 + i] - 1) * s[i] - (pads[i] + pads[i + ns]) + k[i];
        if (inf[2 + i] < 0 || inf[2 + i] > ty->dims[2 + i])
            return cgen_unsupported(cx, n, "an output smaller than the unpooled shape");
    }
    cgen_use_runtime(cx, "rt_geom.h");
    CWriter *w = cx->w;
    sig_open(w);
    cw_line(w, "static const int64_t in_dims[] = %s;", cgen_dims(cx, tx));
    cw_line(w, "static const int64_t inf_dims[] = %s;", cgen_i64_list(cx, inf, (uint32_t)tx->rank));
    cw_line(w, "static const int64_t out_dims[] = %s;", cgen_dims(cx, ty));
    if (sig_has_in(n, 2) &&
        !sig_check_shape_input(cx, n, n->inputs[2], ty->dims, ty->rank, "output_shape"))
        return false;
    cgen_call_checked(cx, "rt_max_unpool_%s(%s, %s, %s, %d, in_dims, inf_dims, out_dims)", sfx,
                      cgen_ptr(cx, x), cgen_ptr(cx, ix), cgen_ptr(cx, y), tx->rank);
    sig_close(w);
    return true;
}

/* ---- NonMaxSuppression, Det ---- */

/* The compiled output (cap, 3) bounds the selections: fewer rows found leave the rest at -1,
 * more return RT_ERR_SHAPE (see rt_nms); cgen_emit_count hands the count on. */
static bool emit_nms(CgenCtx *cx, const IrNode *n) {
    if (!sig_static(cx, n)) return false;
    uint32_t bx = n->inputs[0], sc = n->inputs[1], y = n->outputs[0];
    const IrType *tb = cgen_type(cx, bx), *ts = cgen_type(cx, sc), *ty = cgen_type(cx, y);
    if (tb->dtype != IR_DTYPE_F32 || ts->dtype != IR_DTYPE_F32 || ty->dtype != IR_DTYPE_I64)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name((IrDType)tb->dtype));
    if (tb->rank != 3 || tb->dims[2] != 4 || ts->rank != 3 || ts->dims[0] != tb->dims[0] ||
        ts->dims[2] != tb->dims[1] || ty->rank != 2 || ty->dims[1] != 3)
        return cgen_unsupported(cx, n, "these boxes, scores and output shapes");
    const char *maxo = "0", *iou = "0.0f", *sthr = "0.0f";
    if (sig_has_in(n, 2) && !(maxo = sig_int0(cx, n, n->inputs[2], "max_output_boxes_per_class")))
        return false;
    if (sig_has_in(n, 3) && !(iou = sig_float0(cx, n, n->inputs[3], "iou_threshold"))) return false;
    if (sig_has_in(n, 4) && !(sthr = sig_float0(cx, n, n->inputs[4], "score_threshold")))
        return false;
    cgen_use_runtime(cx, "rt_geom.h");
    CWriter *w = cx->w;
    sig_open(w);
    cw_line(w, "int64_t count; /* selections found, <= %lld */", (long long)ty->dims[0]);
    cgen_call_checked(cx, "rt_nms(%s, %s, %s, %lld, %lld, %lld, %lld, %s, %s, %d, %s, %d)",
                      cgen_ptr(cx, bx), cgen_ptr(cx, sc), cgen_ptr(cx, y), (long long)tb->dims[0],
                      (long long)ts->dims[1], (long long)tb->dims[1], (long long)ty->dims[0], maxo,
                      iou, sig_has_in(n, 4) ? 1 : 0, sthr,
                      ir_attr_i(n, IR_ATTR_NON_MAX_SUPPRESSION_CENTER_POINT_BOX) != 0);
    cw_line(w, "count = rt_nms_count(%s, %lld);", cgen_ptr(cx, y), (long long)ty->dims[0]);
    cgen_emit_count(cx, &y, 1, "count", ty->dims[0]);
    sig_close(w);
    return true;
}

static bool emit_det(CgenCtx *cx, const IrNode *n) {
    if (!sig_static(cx, n)) return false;
    uint32_t x = n->inputs[0], y = n->outputs[0];
    const IrType *tx = cgen_type(cx, x);
    const char *sfx = sig_sfx((IrDType)tx->dtype);
    if (!sfx || sig_dtype(cx, y) != tx->dtype)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name((IrDType)tx->dtype));
    if (tx->rank < 2 || tx->dims[tx->rank - 1] != tx->dims[tx->rank - 2])
        return cgen_unsupported(cx, n, "a non-square input");
    int64_t m = tx->dims[tx->rank - 1];
    if (m < 1 || m * m * 8 > SIG_DET_MAX_STACK_BYTES)
        return cgen_unsupported(cx, n, "matrices of size %lld", (long long)m);
    cgen_use_runtime(cx, "rt_geom.h");
    CWriter *w = cx->w;
    sig_open(w);
    cw_line(w, "double ws[%lld]; /* LU scratch: one %lldx%lld matrix */", (long long)(m * m),
            (long long)m, (long long)m);
    cw_line(w, "rt_det_%s(%s, %s, %lld, %lld, ws);", sfx, cgen_ptr(cx, x), cgen_ptr(cx, y),
            (long long)(cgen_numel(cx, x) / (m * m)), (long long)m);
    sig_close(w);
    return true;
}

void cgen_register_signal(CgenEmitFn *table) {
    table[IR_OP_HANN_WINDOW] = emit_window;
    table[IR_OP_HAMMING_WINDOW] = emit_window;
    table[IR_OP_BLACKMAN_WINDOW] = emit_window;
    table[IR_OP_MEL_WEIGHT_MATRIX] = emit_mel;
    table[IR_OP_DFT] = emit_dft;
    table[IR_OP_STFT] = emit_stft;
    table[IR_OP_GRID_SAMPLE] = emit_grid_sample;
    table[IR_OP_AFFINE_GRID] = emit_affine_grid;
    table[IR_OP_ROI_ALIGN] = emit_roi_align;
    table[IR_OP_MAX_ROI_POOL] = emit_max_roi_pool;
    table[IR_OP_COL2_IM] = emit_col2im;
    table[IR_OP_MAX_UNPOOL] = emit_max_unpool;
    table[IR_OP_NON_MAX_SUPPRESSION] = emit_nms;
    table[IR_OP_DET] = emit_det;
}
