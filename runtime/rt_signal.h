/* rt_signal.h: spectral ops of the signal/geometry family: DFT (forward, inverse, one-sided
 * and its inverse irfft, zero-padded or truncated to dft_length, on any axis), STFT, the
 * Hann/Hamming/Blackman windows and MelWeightMatrix. Lengths and axes may be read from the
 * data at run time: a value that disagrees with the compiled shapes returns RT_ERR_SHAPE.
 * Transforms are direct sums in double with the twiddle advanced by rotation (O(n^2) per
 * transform, no scratch). C99. */
#ifndef KILN_RT_SIGNAL_H
#define KILN_RT_SIGNAL_H

#include "rt_common.h"

#define RT_PI 3.14159265358979323846

#define RT_WIN_HANN 0
#define RT_WIN_HAMMING 1
#define RT_WIN_BLACKMAN 2

/* Value i of a window of length size; periodic windows use the period size, symmetric
 * ones size - 1 (as the ONNX reference does). */
RT_API double rt_window_value(int kind, int64_t i, int64_t size, int periodic) {
    double N = (double)(periodic ? size : size - 1), a = 2 * RT_PI * (double)i / N;
    switch (kind) {
    case RT_WIN_HANN:
        return 0.5 - 0.5 * cos(a);
    case RT_WIN_HAMMING:
        return 25.0 / 46.0 - 21.0 / 46.0 * cos(a);
    default:
        return 0.42 - 0.5 * cos(a) + 0.08 * cos(2 * a);
    }
}

/* Defines the kernels of element type T:
 * rt_dft_SFX: x: in_dims (rank dims, the last 1 = real or 2 = complex), y: out_dims. axis:
 *   the signal axis (negative counts from the back), n: dft_length or -1. The output along
 *   axis has n entries (n/2+1 one-sided forward); irfft (inverse one-sided) writes real
 *   values (last dim 1) and its n defaults to 2*(len-1).
 * rt_stft_SFX: x: (B, L, cin), window: (flen) or NULL, y: (B, frames, bins, 2).
 * rt_mel_SFX: y: (dft_length/2+1, mel_bins). */
#define RT_SIGNAL_DEFINE(SFX, T)                                                                   \
    RT_API int rt_dft_##SFX(const T *x, T *y, int rank, const int64_t *in_dims,                    \
                            const int64_t *out_dims, int64_t axis, int64_t n, int inverse,         \
                            int onesided) {                                                        \
        int64_t outer = 1, inner = 1, L, Lout, cin = in_dims[rank - 1], cout, k, o, i, t, m;       \
        int irfft = inverse && onesided;                                                           \
        if (axis < 0) axis += rank;                                                                \
        if (axis < 0 || axis >= rank - 1 || (cin != 1 && cin != 2)) return RT_ERR_SHAPE;           \
        L = in_dims[axis];                                                                         \
        if (n < 0) n = irfft ? 2 * (L - 1) : L;                                                    \
        if (n < 1) return RT_ERR_SHAPE;                                                            \
        Lout = inverse ? n : onesided ? n / 2 + 1 : n;                                             \
        cout = irfft ? 1 : 2;                                                                      \
        for (i = 0; i < rank - 1; i++) {                                                           \
            if (i == axis) continue;                                                               \
            if (in_dims[i] != out_dims[i]) return RT_ERR_SHAPE;                                    \
            if (i < axis)                                                                          \
                outer *= in_dims[i];                                                               \
            else                                                                                   \
                inner *= in_dims[i];                                                               \
        }                                                                                          \
        if (out_dims[axis] != Lout || out_dims[rank - 1] != cout) return RT_ERR_SHAPE;             \
        m = L < n ? L : n; /* input entries that take part; the rest is zero padding */            \
        if (irfft && m > n / 2 + 1) m = n / 2 + 1;                                                 \
        for (o = 0; o < outer; o++)                                                                \
            for (i = 0; i < inner; i++) {                                                          \
                const T *xs = x + (o * L * inner + i) * cin;                                       \
                T *ys = y + (o * Lout * inner + i) * cout;                                         \
                for (k = 0; k < Lout; k++) {                                                       \
                    double ang = (inverse ? 2 : -2) * RT_PI * (double)k / (double)n;               \
                    double sr = cos(ang), si = sin(ang), wr = 1, wi = 0, ar = 0, ai = 0;           \
                    for (t = 0; t < m; t++) {                                                      \
                        double xr = (double)xs[t * inner * cin];                                   \
                        double xi = cin == 2 ? (double)xs[t * inner * cin + 1] : 0, nw;            \
                        if (irfft) {                                                               \
                            /* Hermitian: bins 1.. count twice, except n/2 for even n */           \
                            double wgt = t == 0 || 2 * t == n ? 1 : 2;                             \
                            ar += wgt * (xr * wr - xi * wi);                                       \
                        } else {                                                                   \
                            ar += xr * wr - xi * wi, ai += xr * wi + xi * wr;                      \
                        }                                                                          \
                        nw = wr * sr - wi * si, wi = wr * si + wi * sr, wr = nw;                   \
                    }                                                                              \
                    if (inverse) ar /= (double)n, ai /= (double)n;                                 \
                    ys[k * inner * cout] = (T)ar;                                                  \
                    if (!irfft) ys[k * inner * cout + 1] = (T)ai;                                  \
                }                                                                                  \
            }                                                                                      \
        return RT_OK;                                                                              \
    }                                                                                              \
    RT_API int rt_stft_##SFX(const T *x, const T *window, int64_t wlen, T *y, int64_t B,           \
                             int64_t L, int64_t cin, int64_t frames, int64_t bins, int64_t step,   \
                             int64_t flen, int onesided) {                                         \
        int64_t b, f, k, t;                                                                        \
        if (flen < 1 || flen > L || step < 1 || (window && wlen != flen) ||                        \
            frames != 1 + (L - flen) / step || bins != (onesided ? flen / 2 + 1 : flen))           \
            return RT_ERR_SHAPE;                                                                   \
        for (b = 0; b < B; b++)                                                                    \
            for (f = 0; f < frames; f++) {                                                         \
                const T *xs = x + (b * L + f * step) * cin;                                        \
                T *ys = y + ((b * frames + f) * bins) * 2;                                         \
                for (k = 0; k < bins; k++) {                                                       \
                    double ang = -2 * RT_PI * (double)k / (double)flen;                            \
                    double sr = cos(ang), si = sin(ang), wr = 1, wi = 0, ar = 0, ai = 0, nw;       \
                    for (t = 0; t < flen; t++) {                                                   \
                        double g = window ? (double)window[t] : 1;                                 \
                        double xr = g * (double)xs[t * cin];                                       \
                        double xi = cin == 2 ? g * (double)xs[t * cin + 1] : 0;                    \
                        ar += xr * wr - xi * wi, ai += xr * wi + xi * wr;                          \
                        nw = wr * sr - wi * si, wi = wr * si + wi * sr, wr = nw;                   \
                    }                                                                              \
                    ys[k * 2] = (T)ar, ys[k * 2 + 1] = (T)ai;                                      \
                }                                                                                  \
            }                                                                                      \
        return RT_OK;                                                                              \
    }                                                                                              \
    RT_API int rt_mel_##SFX(T *y, int64_t rows, int64_t cols, int64_t mel_bins,                    \
                            int64_t dft_length, int64_t sample_rate, float lower, float upper) {   \
        /* mel edges in float, bin positions in double: the reference's numpy promotions */        \
        float lo_mel = 2595.0f * log10f(1.0f + lower / 700.0f);                                    \
        float hi_mel = 2595.0f * log10f(1.0f + upper / 700.0f);                                    \
        float step = (hi_mel - lo_mel) / (float)(mel_bins + 2);                                    \
        int64_t i, j, f[3];                                                                        \
        if (mel_bins < 1 || dft_length < 1 || sample_rate < 1 || rows != dft_length / 2 + 1 ||     \
            cols != mel_bins)                                                                      \
            return RT_ERR_SHAPE;                                                                   \
        for (i = 0; i < rows * cols; i++)                                                          \
            y[i] = 0;                                                                              \
        for (i = 0; i < mel_bins; i++) {                                                           \
            for (j = 0; j < 3; j++) {                                                              \
                double hz = (double)(i + j) * (double)step + (double)lo_mel;                       \
                hz = 700 * (pow(10, hz / 2595) - 1);                                               \
                f[j] = rt_floor_i64((double)(dft_length + 1) * hz / (double)sample_rate);          \
                if (f[j] < 0 || f[j] >= rows) return RT_ERR_VALUE;                                 \
            }                                                                                      \
            if (f[1] == f[0])                                                                      \
                y[f[1] * cols + i] = 1;                                                            \
            else                                                                                   \
                for (j = f[0]; j <= f[1]; j++)                                                     \
                    y[j * cols + i] = (T)((double)(j - f[0]) / (double)(f[1] - f[0]));             \
            for (j = f[1]; j < f[2]; j++)                                                          \
                y[j * cols + i] = (T)((double)(f[2] - j) / (double)(f[2] - f[1]));                 \
        }                                                                                          \
        return RT_OK;                                                                              \
    }

RT_SIGNAL_DEFINE(f32, float)
RT_SIGNAL_DEFINE(f64, double)

#endif
