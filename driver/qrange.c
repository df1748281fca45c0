/* Calibration ranges (qrange.h). */
#include "driver/qrange.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define QR_LEVELS 256
#define QR_STEPS 128 /* candidate clippings: k/QR_STEPS of the full span, k = QR_MIN_STEP.. */
#define QR_MIN_STEP 16

void qrange_init(QRange *r) {
    memset(r, 0, sizeof *r);
    r->lo = INFINITY;
    r->hi = -INFINITY;
}

void qrange_add_minmax(QRange *r, const float *x, int64_t n) {
    double lo = r->lo, hi = r->hi;
    for (int64_t i = 0; i < n; i++) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
    }
    r->lo = lo, r->hi = hi;
}

bool qrange_needs_hist(QRangeMethod m) { return m != QRANGE_MINMAX; }

void qrange_begin_hist(QRange *r) {
    r->hist_lo = r->lo < 0.0 ? r->lo : 0.0;
    r->hist_hi = r->hi > 0.0 ? r->hi : 0.0;
    memset(r->hist, 0, sizeof r->hist);
    r->count = 0;
}

void qrange_add_hist(QRange *r, const float *x, int64_t n) {
    double span = r->hist_hi - r->hist_lo;
    if (!(span > 0.0)) {
        r->hist[0] += (uint64_t)n;
        r->count += (uint64_t)n;
        return;
    }
    double k = QRANGE_BINS / span;
    for (int64_t i = 0; i < n; i++) {
        double b = (x[i] - r->hist_lo) * k;
        int64_t bi = b < 0 ? 0 : b >= QRANGE_BINS ? QRANGE_BINS - 1 : (int64_t)b;
        r->hist[bi]++;
    }
    r->count += (uint64_t)n;
}

/* [a, b] (a <= 0 <= b) -> scale and zero point */
static void to_params(double a, double b, float *scale, int32_t *zp) {
    if (a > 0.0) a = 0.0;
    if (b < 0.0) b = 0.0;
    double s = (b - a) / (QR_LEVELS - 1);
    if (!(s > 0.0) || !isfinite(s) || (float)s == 0.0f) {
        *scale = 1.0f, *zp = 0; /* a zero range: everything is 0 */
        return;
    }
    double z = nearbyint(-a / s);
    *scale = (float)s;
    *zp = (int32_t)(z < 0 ? 0 : z > QR_LEVELS - 1 ? QR_LEVELS - 1 : z);
}

static double bin_center(const QRange *r, int64_t i) {
    return r->hist_lo + (i + 0.5) * (r->hist_hi - r->hist_lo) / QRANGE_BINS;
}

/* The value below which a fraction q of the histogram's mass lies. */
static double quantile(const QRange *r, double q) {
    double target = q * (double)r->count, acc = 0.0;
    for (int64_t i = 0; i < QRANGE_BINS; i++) {
        acc += (double)r->hist[i];
        if (acc >= target) return bin_center(r, i);
    }
    return r->hist_hi;
}

static double mse_cost(const QRange *r, double a, double b) {
    float s;
    int32_t z;
    to_params(a, b, &s, &z);
    double cost = 0.0;
    for (int64_t i = 0; i < QRANGE_BINS; i++) {
        if (!r->hist[i]) continue;
        double x = bin_center(r, i), q = nearbyint(x / s) + z;
        q = q < 0 ? 0 : q > QR_LEVELS - 1 ? QR_LEVELS - 1 : q;
        double e = x - (q - z) * s;
        cost += (double)r->hist[i] * e * e;
    }
    return cost;
}

/* KL(P || Q) as TensorRT's calibrator: P the histogram clipped to [a, b] with the outliers
 * added to the edge bins, Q the in-range bins alone quantized to 256 levels (each level's
 * mass spread over its nonzero bins), so clipping pays for the mass it moves. h is the
 * histogram with the bin that holds 0 given its neighbour's count (kl_hist). */
static double kl_cost(const QRange *r, const double *h, double a, double b) {
    float s;
    int32_t z;
    to_params(a, b, &s, &z);
    double p[QRANGE_BINS];
    int32_t level[QRANGE_BINS];
    double mass[QR_LEVELS] = {0}, nz[QR_LEVELS] = {0}, tp = 0.0, tq = 0.0;
    int64_t first = -1, last = -1;
    for (int64_t i = 0; i < QRANGE_BINS; i++) {
        double x = bin_center(r, i);
        if (x >= a && x <= b) {
            if (first < 0) first = i;
            last = i;
        }
    }
    if (first < 0) return INFINITY;
    for (int64_t i = 0; i < QRANGE_BINS; i++) p[i] = 0.0;
    for (int64_t i = 0; i < QRANGE_BINS; i++) {
        int64_t j = i < first ? first : i > last ? last : i;
        p[j] += h[i];
    }
    for (int64_t i = first; i <= last; i++) {
        double q = nearbyint(bin_center(r, i) / s) + z;
        level[i] = (int32_t)(q < 0 ? 0 : q > QR_LEVELS - 1 ? QR_LEVELS - 1 : q);
        mass[level[i]] += h[i];
        nz[level[i]] += h[i] > 0;
        tp += p[i];
        tq += h[i];
    }
    if (!(tp > 0.0) || !(tq > 0.0)) return INFINITY;
    double kl = 0.0;
    for (int64_t i = first; i <= last; i++) {
        if (p[i] <= 0.0) continue;
        double pi = p[i] / tp;
        double qi = h[i] > 0 ? mass[level[i]] / nz[level[i]] / tq : 0.0;
        if (qi < 1e-12) qi = 1e-12; /* a bin only outliers reach */
        kl += pi * log(pi / qi);
    }
    return kl;
}

/* The histogram for the KL search, with the bin that holds 0 given the count of its
 * neighbour (away from the range's edge). Zero is a quantization level at every clipping (the
 * zero point is an integer), so the values at exactly 0 -- after a ReLU often half of
 * all -- carry no error whatever the range; counted in Q, where a level's mass is spread over
 * its bins, that spike would charge every wide range for an error that does not exist and
 * push the search to the narrowest clipping (on a trained MNIST CNN: its first ReLU clipped to
 * 1/7 of its range, 2.9 points of top-1 lost). NVIDIA's calibrator flattens the same bin. */
static void kl_hist(const QRange *r, double *h) {
    for (int64_t i = 0; i < QRANGE_BINS; i++) h[i] = (double)r->hist[i];
    int64_t zb = (int64_t)((0.0 - r->hist_lo) * QRANGE_BINS / (r->hist_hi - r->hist_lo));
    if (zb >= QRANGE_BINS) zb = QRANGE_BINS - 1;
    if (zb < 0) zb = 0;
    int64_t nb = zb + 1 < QRANGE_BINS ? zb + 1 : zb - 1;
    if (nb >= 0 && h[nb] < h[zb]) h[zb] = h[nb];
}

void qrange_params(const QRange *r, QRangeMethod m, double percentile, float *scale,
                   int32_t *zero_point) {
    double lo = isfinite(r->lo) ? r->lo : 0.0, hi = isfinite(r->hi) ? r->hi : 0.0;
    if (m == QRANGE_MINMAX || r->count == 0 || !(r->hist_hi > r->hist_lo)) {
        to_params(lo, hi, scale, zero_point);
        return;
    }
    if (m == QRANGE_PERCENTILE) {
        double tail = (100.0 - percentile) / 100.0;
        double a = r->hist_lo < 0.0 ? quantile(r, tail) : 0.0, b = quantile(r, 1.0 - tail);
        to_params(a < lo ? lo : a, b > hi ? hi : b, scale, zero_point);
        return;
    }
    /* each end on its own: the upper with the lower at its extreme, then the lower */
    double ba = r->hist_lo, bb = r->hist_hi;
    double h[QRANGE_BINS]; /* kl_cost's histogram (16 KiB, as its own p) */
    if (m == QRANGE_ENTROPY) kl_hist(r, h);
    for (int side = 0; side < 2; side++) {
        double best = INFINITY, pick = side ? ba : bb;
        if ((side ? r->hist_lo : r->hist_hi) == 0.0) continue;
        for (int k = QR_STEPS; k >= QR_MIN_STEP; k--) { /* ties keep the wider range */
            double f = (double)k / QR_STEPS;
            double a = side ? r->hist_lo * f : ba, b = side ? bb : r->hist_hi * f;
            double c = m == QRANGE_MSE ? mse_cost(r, a, b) : kl_cost(r, h, a, b);
            if (c < best) best = c, pick = side ? a : b;
        }
        if (side) ba = pick;
        else bb = pick;
    }
    to_params(ba, bb, scale, zero_point);
}

bool qrange_parse_method(const char *s, QRangeMethod *m, double *percentile) {
    *percentile = 99.99;
    if (strcmp(s, "minmax") == 0) return *m = QRANGE_MINMAX, true;
    if (strcmp(s, "entropy") == 0) return *m = QRANGE_ENTROPY, true;
    if (strcmp(s, "mse") == 0) return *m = QRANGE_MSE, true;
    if (strncmp(s, "percentile", 10) == 0 && (s[10] == 0 || s[10] == ':')) {
        *m = QRANGE_PERCENTILE;
        if (s[10] == ':') {
            char *end;
            double p = strtod(s + 11, &end);
            if (*end || end == s + 11 || !(p > 50.0 && p <= 100.0)) return false;
            *percentile = p;
        }
        return true;
    }
    return false;
}
