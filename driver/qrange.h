/* qrange.h: the calibration statistics of one tensor and the range each method picks from
 * them (kiln calibrate, docs/int8.md). Streaming and bounded: a first pass over the samples
 * keeps the minimum and maximum, a second fills a histogram of QRANGE_BINS bins over
 * [min(lo, 0), max(hi, 0)]; memory does not grow with the number of samples.
 * Methods: minmax (the whole range), percentile P (each tail cut at (100 - P)% of the
 * values), entropy (the clipping that minimizes the KL divergence between the histogram and
 * its 256-level quantization, as TensorRT's calibrator), mse (the clipping that minimizes
 * the expected squared error of quantize-then-dequantize). The result is a uint8 scale and
 * zero point; a tensor whose range is zero gets scale 1 and zero point 0. */
#ifndef KILN_DRIVER_QRANGE_H
#define KILN_DRIVER_QRANGE_H

#include <stdbool.h>
#include <stdint.h>

#define QRANGE_BINS 2048

typedef enum QRangeMethod { QRANGE_MINMAX, QRANGE_PERCENTILE, QRANGE_ENTROPY, QRANGE_MSE } QRangeMethod;

typedef struct QRange {
    double lo, hi;            /* pass 1: running min and max (start at +inf, -inf) */
    double hist_lo, hist_hi;  /* pass 2: the histogram's span, fixed by qrange_begin_hist */
    uint64_t hist[QRANGE_BINS];
    uint64_t count;
} QRange;

void qrange_init(QRange *r);
/* Pass 1: the values x[0..n). */
void qrange_add_minmax(QRange *r, const float *x, int64_t n);
/* Whether the method needs pass 2 (all but minmax). */
bool qrange_needs_hist(QRangeMethod m);
void qrange_begin_hist(QRange *r);
/* Pass 2: the values x[0..n) into the histogram. */
void qrange_add_hist(QRange *r, const float *x, int64_t n);
/* The chosen uint8 parameters (percentile in (50, 100], used by QRANGE_PERCENTILE). */
void qrange_params(const QRange *r, QRangeMethod m, double percentile, float *scale,
                   int32_t *zero_point);
/* "minmax", "percentile:99.99"... -> method and percentile; false when malformed. */
bool qrange_parse_method(const char *s, QRangeMethod *m, double *percentile);

#endif
