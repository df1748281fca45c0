/* rt_cast.h: element-type conversion for Cast, CastLike, QuantizeLinear, DequantizeLinear
 * and DynamicQuantizeLinear, covering the types C has no arithmetic for: the float8
 * variants (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0), float4 E2M1, and packed 4- and 2-bit
 * integers (two or four per byte, lowest bits first). Elements are read and written by
 * index through one generic accessor per direction, in double: correct first. The pairs
 * that convert through float alone have typed loops (rt_cast_X_Y, below). Type codes are
 * ONNX's. */
#ifndef KILN_RT_CAST_H
#define KILN_RT_CAST_H

#include "rt_common.h"

/* E8M0 rounding modes (Cast's round_mode attribute). */
enum { RT_ROUND_UP = 0, RT_ROUND_DOWN = 1, RT_ROUND_NEAREST = 2 };

/* A small float format: exponent and mantissa bits, bias, the largest finite value and how
 * it spells NaN and infinity. */
typedef struct RtMinifloat {
    int ebits, mbits, bias;
    double maxv;
    int fnuz;    /* NaN is 0x80, no negative zero, no infinity */
    int has_inf; /* E5M2: exponent all ones, mantissa 0 */
    int has_nan; /* F4E2M1 has none */
} RtMinifloat;

RT_API const RtMinifloat *rt_minifloat(int dt) {
    static const RtMinifloat e4m3fn = {4, 3, 7, 448.0, 0, 0, 1};
    static const RtMinifloat e4m3fnuz = {4, 3, 8, 240.0, 1, 0, 1};
    static const RtMinifloat e5m2 = {5, 2, 15, 57344.0, 0, 1, 1};
    static const RtMinifloat e5m2fnuz = {5, 2, 16, 57344.0, 1, 0, 1};
    static const RtMinifloat e2m1 = {2, 1, 1, 6.0, 0, 0, 0};
    switch (dt) {
    case RT_DT_F8E4M3FN: return &e4m3fn;
    case RT_DT_F8E4M3FNUZ: return &e4m3fnuz;
    case RT_DT_F8E5M2: return &e5m2;
    case RT_DT_F8E5M2FNUZ: return &e5m2fnuz;
    default: return &e2m1;
    }
}

RT_API double rt_minifloat_decode(const RtMinifloat *f, unsigned code) {
    unsigned bits = 1u + (unsigned)f->ebits + (unsigned)f->mbits;
    unsigned sign = (code >> (bits - 1)) & 1u;
    unsigned e = (code >> f->mbits) & ((1u << f->ebits) - 1u);
    unsigned m = code & ((1u << f->mbits) - 1u);
    double v;
    if (f->fnuz && code == 0x80u) return (double)NAN;
    if (!f->fnuz && f->has_nan && e == (1u << f->ebits) - 1u) {
        if (f->has_inf) return m == 0 ? (sign ? -(double)INFINITY : (double)INFINITY) : (double)NAN;
        if (m == (1u << f->mbits) - 1u) return (double)NAN; /* E4M3FN: only S.1111.111 */
    }
    if (e == 0) v = ldexp((double)m, 1 - f->bias - f->mbits);
    else v = ldexp(1.0 + ldexp((double)m, -f->mbits), (int)e - f->bias);
    return sign ? -v : v;
}

/* Round to nearest even into the format; saturate clamps out-of-range values (infinities
 * too) to the largest finite value, otherwise they become infinity or NaN. */
RT_API unsigned rt_minifloat_encode(const RtMinifloat *f, double x, int saturate) {
    unsigned bits = 1u + (unsigned)f->ebits + (unsigned)f->mbits;
    unsigned sign_bit = 1u << (bits - 1);
    unsigned nan_code = f->fnuz ? 0x80u : f->has_nan ? (sign_bit - 1u) : sign_bit;
    unsigned sign = signbit(x) ? sign_bit : 0u;
    double a = fabs(x), q;
    unsigned code;
    int e;
    if (x != x) return nan_code;
    if (a > f->maxv) {
        if (saturate || !f->has_nan) a = f->maxv;
        else if (f->has_inf) return sign | (((1u << f->ebits) - 1u) << f->mbits);
        else return nan_code;
    }
    if (a < ldexp(1.0, 1 - f->bias)) { /* subnormal range */
        q = nearbyint(ldexp(a, f->bias - 1 + f->mbits));
        code = (unsigned)q;
    } else {
        frexp(a, &e);
        e -= 1; /* a in [2^e, 2^(e+1)) */
        q = nearbyint(ldexp(a, f->mbits - e));
        if (q >= ldexp(1.0, f->mbits + 1)) {
            q /= 2;
            e += 1;
        }
        code = ((unsigned)(e + f->bias) << f->mbits) | ((unsigned)q - (1u << f->mbits));
    }
    if (rt_minifloat_decode(f, code) > f->maxv || rt_minifloat_decode(f, code) != rt_minifloat_decode(f, code)) {
        if (saturate || !f->has_nan) return sign | rt_minifloat_encode(f, f->maxv, 1);
        return f->has_inf ? (sign | (((1u << f->ebits) - 1u) << f->mbits)) : nan_code;
    }
    if (code == 0 && f->fnuz) return 0; /* no negative zero */
    return sign | code;
}

RT_API unsigned rt_e8m0_encode(float x, int saturate, int round_mode) {
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    unsigned e = (b >> 23) & 0xffu;
    if (e == 0xffu) return 0xffu;
    int up = 0;
    if (round_mode == RT_ROUND_UP) {
        up = (b & 0x7fffffu) != 0;
    } else if (round_mode == RT_ROUND_NEAREST) {
        unsigned g = (b & 0x400000u) != 0, r = (b & 0x200000u) != 0, s = (b & 0x1fffffu) != 0;
        up = g && (r || s || e > 0);
    }
    if (saturate && e == 0xfeu) up = 0;
    return (e + (unsigned)up) & 0xffu;
}

RT_API double rt_e8m0_decode(unsigned code) {
    return code == 0xffu ? (double)NAN : ldexp(1.0, (int)code - 127);
}

/* float -> integer as numpy does on x86-64: truncation; NaN and out of range give INT64_MIN. */
RT_API int64_t rt_f2i(double v) {
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
    return (int64_t)v;
}

RT_API int rt_dt_is_float(int dt) {
    return dt == RT_DT_F32 || dt == RT_DT_F64 || dt == RT_DT_F16 || dt == RT_DT_BF16 ||
           (dt >= RT_DT_F8E4M3FN && dt <= RT_DT_F8E5M2FNUZ) || dt == RT_DT_F4E2M1 ||
           dt == RT_DT_F8E8M0;
}

RT_API unsigned rt_subbyte_get(const uint8_t *p, size_t i, unsigned bits) {
    unsigned per = 8u / bits;
    return (p[i / per] >> ((i % per) * bits)) & ((1u << bits) - 1u);
}

RT_API void rt_subbyte_set(uint8_t *p, size_t i, unsigned bits, unsigned v) {
    unsigned per = 8u / bits, sh = (unsigned)(i % per) * bits, mask = ((1u << bits) - 1u) << sh;
    p[i / per] = (uint8_t)((p[i / per] & ~mask) | ((v << sh) & mask));
}

/* Element i of x as a double (floats) -- exact for every type but 64-bit integers above 2^53,
 * which go through rt_load_i64. */
RT_API double rt_load_f64(const void *x, int dt, size_t i) {
    switch (dt) {
    case RT_DT_F32: return (double)((const float *)x)[i];
    case RT_DT_F64: return ((const double *)x)[i];
    case RT_DT_F16: return (double)rt_f16_to_f32(((const uint16_t *)x)[i]);
    case RT_DT_BF16: return (double)rt_bf16_to_f32(((const uint16_t *)x)[i]);
    case RT_DT_F8E4M3FN: case RT_DT_F8E4M3FNUZ: case RT_DT_F8E5M2: case RT_DT_F8E5M2FNUZ:
        return rt_minifloat_decode(rt_minifloat(dt), ((const uint8_t *)x)[i]);
    case RT_DT_F4E2M1: return rt_minifloat_decode(rt_minifloat(dt), rt_subbyte_get((const uint8_t *)x, i, 4));
    case RT_DT_F8E8M0: return rt_e8m0_decode(((const uint8_t *)x)[i]);
    case RT_DT_U8: case RT_DT_BOOL: return ((const uint8_t *)x)[i];
    case RT_DT_I8: return ((const int8_t *)x)[i];
    case RT_DT_U16: return ((const uint16_t *)x)[i];
    case RT_DT_I16: return ((const int16_t *)x)[i];
    case RT_DT_U32: return ((const uint32_t *)x)[i];
    case RT_DT_I32: return ((const int32_t *)x)[i];
    case RT_DT_U64: return (double)((const uint64_t *)x)[i];
    case RT_DT_I64: return (double)((const int64_t *)x)[i];
    case RT_DT_U4: return rt_subbyte_get((const uint8_t *)x, i, 4);
    case RT_DT_I4: return (double)(((int)rt_subbyte_get((const uint8_t *)x, i, 4) ^ 8) - 8);
    case RT_DT_U2: return rt_subbyte_get((const uint8_t *)x, i, 2);
    case RT_DT_I2: return (double)(((int)rt_subbyte_get((const uint8_t *)x, i, 2) ^ 2) - 2);
    default: return 0;
    }
}

/* Element i of an integer or bool tensor, exactly. */
RT_API int64_t rt_load_i64(const void *x, int dt, size_t i) {
    switch (dt) {
    case RT_DT_U64: return (int64_t)((const uint64_t *)x)[i];
    case RT_DT_I64: return ((const int64_t *)x)[i];
    default: {
        double v = rt_load_f64(x, dt, i); /* narrow types: exact in a double */
        return (int64_t)v;
    }
    }
}

RT_API void rt_store_i64(void *y, int dt, size_t i, int64_t v) {
    switch (dt) {
    case RT_DT_BOOL: ((uint8_t *)y)[i] = v != 0; break;
    case RT_DT_U8: ((uint8_t *)y)[i] = (uint8_t)v; break;
    case RT_DT_I8: ((int8_t *)y)[i] = (int8_t)v; break;
    case RT_DT_U16: ((uint16_t *)y)[i] = (uint16_t)v; break;
    case RT_DT_I16: ((int16_t *)y)[i] = (int16_t)v; break;
    case RT_DT_U32: ((uint32_t *)y)[i] = (uint32_t)v; break;
    case RT_DT_I32: ((int32_t *)y)[i] = (int32_t)v; break;
    case RT_DT_U64: ((uint64_t *)y)[i] = (uint64_t)v; break;
    case RT_DT_I64: ((int64_t *)y)[i] = v; break;
    case RT_DT_U4: case RT_DT_I4: rt_subbyte_set((uint8_t *)y, i, 4, (unsigned)(v & 15)); break;
    case RT_DT_U2: case RT_DT_I2: rt_subbyte_set((uint8_t *)y, i, 2, (unsigned)(v & 3)); break;
    default: break;
    }
}

RT_API void rt_store_f64(void *y, int dt, size_t i, double v, int saturate, int round_mode) {
    switch (dt) {
    case RT_DT_F32: ((float *)y)[i] = (float)v; break;
    case RT_DT_F64: ((double *)y)[i] = v; break;
    case RT_DT_F16: ((uint16_t *)y)[i] = rt_f32_to_f16((float)v); break; /* see note below */
    case RT_DT_BF16: ((uint16_t *)y)[i] = rt_f32_to_bf16((float)v); break;
    case RT_DT_F8E4M3FN: case RT_DT_F8E4M3FNUZ: case RT_DT_F8E5M2: case RT_DT_F8E5M2FNUZ:
        ((uint8_t *)y)[i] = (uint8_t)rt_minifloat_encode(rt_minifloat(dt), v, saturate);
        break;
    case RT_DT_F4E2M1:
        rt_subbyte_set((uint8_t *)y, i, 4, rt_minifloat_encode(rt_minifloat(dt), v, saturate));
        break;
    case RT_DT_F8E8M0: ((uint8_t *)y)[i] = (uint8_t)rt_e8m0_encode((float)v, saturate, round_mode); break;
    case RT_DT_BOOL: ((uint8_t *)y)[i] = v != 0; break;
    default: rt_store_i64(y, dt, i, rt_f2i(v)); break;
    }
}

/* y = Cast(x) for n elements. (f64 -> f16 rounds twice through f32, as numpy does not;
 * the difference is below half an f16 ulp except at exact float32 ties.) */
RT_API void rt_cast(const void *x, int xt, void *y, int yt, size_t n, int saturate, int round_mode) {
    size_t i;
    if (!rt_dt_is_float(xt) && !rt_dt_is_float(yt)) {
        for (i = 0; i < n; i++) rt_store_i64(y, yt, i, rt_load_i64(x, xt, i));
    } else {
        for (i = 0; i < n; i++) rt_store_f64(y, yt, i, rt_load_f64(x, xt, i), saturate, round_mode);
    }
}

/* Typed loops for the pairs that the generic conversion above gives exactly with one float
 * conversion: float32 from float16, bfloat16, bool and the integers up to 32 bits (a double
 * holds those exactly, so going through one rounds once either way), and float32 to float16
 * and bfloat16. They compute in float only (a Cortex-M4F has no double unit). */
#define RT_CAST_DEFINE(NAME, TX, TY, CONV)                                                     \
    RT_API void rt_cast_##NAME(const TX *x, TY *y, size_t n) {                                 \
        size_t i;                                                                              \
        for (i = 0; i < n; i++) y[i] = CONV(x[i]);                                             \
    }
RT_CAST_DEFINE(f16_f32, uint16_t, float, rt_f16_to_f32)
RT_CAST_DEFINE(bf16_f32, uint16_t, float, rt_bf16_to_f32)
RT_CAST_DEFINE(f32_f16, float, uint16_t, rt_f32_to_f16)
RT_CAST_DEFINE(f32_bf16, float, uint16_t, rt_f32_to_bf16)
RT_CAST_DEFINE(u8_f32, uint8_t, float, (float))
RT_CAST_DEFINE(i8_f32, int8_t, float, (float))
RT_CAST_DEFINE(u16_f32, uint16_t, float, (float))
RT_CAST_DEFINE(i16_f32, int16_t, float, (float))
RT_CAST_DEFINE(u32_f32, uint32_t, float, (float))
RT_CAST_DEFINE(i32_f32, int32_t, float, (float))

/* Quantization layout: x viewed as (outer, dim, inner) around the axis; the scale and zero
 * point are one value (per tensor), dim values (per axis), or (outer, ceil(dim/block),
 * inner) values (blocked). */
typedef struct RtQuantLayout {
    size_t outer, dim, inner;
    size_t block; /* 0: not blocked */
    int per_axis;
} RtQuantLayout;

RT_API size_t rt_quant_index(const RtQuantLayout *q, size_t i) {
    size_t k = i % q->inner, a = (i / q->inner) % q->dim, o = i / (q->inner * q->dim);
    if (q->block) return (o * ((q->dim + q->block - 1) / q->block) + a / q->block) * q->inner + k;
    return q->per_axis ? a : 0;
}

/* Integer range of a quantized type, for saturation. */
RT_API void rt_int_range(int dt, double *lo, double *hi) {
    switch (dt) {
    case RT_DT_I8: *lo = -128; *hi = 127; break;
    case RT_DT_U16: *lo = 0; *hi = 65535; break;
    case RT_DT_I16: *lo = -32768; *hi = 32767; break;
    case RT_DT_I32: *lo = -2147483648.0; *hi = 2147483647.0; break;
    case RT_DT_U4: *lo = 0; *hi = 15; break;
    case RT_DT_I4: *lo = -8; *hi = 7; break;
    case RT_DT_U2: *lo = 0; *hi = 3; break;
    case RT_DT_I2: *lo = -2; *hi = 1; break;
    default: *lo = 0; *hi = 255; break;
    }
}

/* rt_quantize's most common case, a float32 tensor to 8-bit integers with one float32 scale
 * (an int8 bundle's graph inputs): the same double arithmetic as the general loop below, in a
 * loop of one type that compilers vectorize (the general one dispatches on types and divides
 * out each element's scale index: ~2x slower on MobileNetV2's input). */
RT_API void rt_quantize_f32_8bit(const float *x, double scale, double z, double lo, double hi,
                                 int is_signed, void *y, size_t n) {
    size_t i;
    if (is_signed) {
        int8_t *yi = (int8_t *)y;
        for (i = 0; i < n; i++) {
            double v = nearbyint((double)x[i] / scale) + z;
            yi[i] = (int8_t)(int32_t)(v < lo ? lo : v > hi ? hi : v);
        }
    } else {
        uint8_t *yu = (uint8_t *)y;
        for (i = 0; i < n; i++) {
            double v = nearbyint((double)x[i] / scale) + z;
            yu[i] = (uint8_t)(int32_t)(v < lo ? lo : v > hi ? hi : v);
        }
    }
}

/* y = saturate(round_half_even(x / scale) + zero_point); zp may be NULL (0). */
RT_API void rt_quantize(const void *x, int xt, const void *scale, int st, const void *zp,
                        int yt, void *y, size_t n, const RtQuantLayout *q, int saturate) {
    size_t i;
    double lo, hi;
    rt_int_range(yt, &lo, &hi);
    if (xt == RT_DT_F32 && st == RT_DT_F32 && (yt == RT_DT_U8 || yt == RT_DT_I8) &&
        !q->per_axis && !q->block) {
        int64_t z = zp ? rt_load_i64(zp, yt, 0) : 0;
        rt_quantize_f32_8bit((const float *)x, rt_load_f64(scale, st, 0), (double)z, lo, hi,
                             yt == RT_DT_I8, y, n);
        return;
    }
    for (i = 0; i < n; i++) {
        size_t s = rt_quant_index(q, i);
        double v = rt_load_f64(x, xt, i) / rt_load_f64(scale, st, s);
        if (rt_dt_is_float(yt)) {
            if (zp) v += rt_load_f64(zp, yt, s);
            rt_store_f64(y, yt, i, v, saturate, RT_ROUND_NEAREST);
        } else {
            int64_t z = zp ? rt_load_i64(zp, yt, s) : 0;
            v = nearbyint(v) + (double)z;
            v = v < lo ? lo : v > hi ? hi : v;
            rt_store_i64(y, yt, i, (int64_t)v);
        }
    }
}

/* y = (x - zero_point) * scale */
RT_API void rt_dequantize(const void *x, int xt, const void *scale, int st, const void *zp,
                          void *y, int yt, size_t n, const RtQuantLayout *q) {
    size_t i;
    for (i = 0; i < n; i++) {
        size_t s = rt_quant_index(q, i);
        double v;
        if (rt_dt_is_float(xt)) v = rt_load_f64(x, xt, i) - (zp ? rt_load_f64(zp, xt, s) : 0.0);
        else v = (double)(rt_load_i64(x, xt, i) - (zp ? rt_load_i64(zp, xt, s) : 0));
        /* in the scale's precision, as the reference does */
        if (st == RT_DT_F32) v = (double)((float)v * (float)rt_load_f64(scale, st, s));
        else v = v * rt_load_f64(scale, st, s);
        rt_store_f64(y, yt, i, v, 1, RT_ROUND_NEAREST);
    }
}

/* DynamicQuantizeLinear: uint8 with a scale and zero point computed from x's range. */
RT_API void rt_dynamic_quantize(const float *x, size_t n, uint8_t *y, float *y_scale, uint8_t *y_zp) {
    float lo = 0, hi = 0, scale, zpf;
    size_t i;
    for (i = 0; i < n; i++) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
    }
    scale = (hi - lo) / 255.0f;
    zpf = scale == 0 ? 0 : nearbyintf(-lo / scale);
    zpf = zpf < 0 ? 0 : zpf > 255 ? 255 : zpf;
    *y_scale = scale;
    *y_zp = (uint8_t)zpf;
    for (i = 0; i < n; i++) {
        float v = scale == 0 ? zpf : nearbyintf(x[i] / scale) + zpf;
        y[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
}

#endif
