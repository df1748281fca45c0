/* rt_eltwise.h: scalar helpers of inline elementwise code (Max/Min with numpy's NaN rule), and
 * the float Add/Sub/Mul/Div maps that the C backend hands to the workers (rt_par.h) instead
 * of writing them inline: BERT's residual Adds, EfficientNet's squeeze-excitation scale Muls. */
#ifndef KILN_RT_ELTWISE_H
#define KILN_RT_ELTWISE_H

#include "rt_common.h"

RT_API float rt_nan_maxf(float a, float b) { return (a != a || b != b) ? NAN : (a > b ? a : b); }
RT_API float rt_nan_minf(float a, float b) { return (a != a || b != b) ? NAN : (a < b ? a : b); }
RT_API double rt_nan_max(double a, double b) {
    return (a != a || b != b) ? (double)NAN : (a > b ? a : b);
}
RT_API double rt_nan_min(double a, double b) {
    return (a != a || b != b) ? (double)NAN : (a < b ? a : b);
}
RT_API int64_t rt_max_i(int64_t a, int64_t b) { return a > b ? a : b; }
RT_API int64_t rt_min_i(int64_t a, int64_t b) { return a < b ? a : b; }
RT_API uint64_t rt_max_u(uint64_t a, uint64_t b) { return a > b ? a : b; }
RT_API uint64_t rt_min_u(uint64_t a, uint64_t b) { return a < b ? a : b; }

#if !defined(__CUDACC__) /* the CUDA backend writes its own kernels for these */
#include "rt_par.h"

#define RT_BIN_ADD 0
#define RT_BIN_SUB 1
#define RT_BIN_MUL 2
#define RT_BIN_DIV 3
#define RT_BIN_COLS 16 /* columns a unit when the columns split: a cache line of floats */

/* One binary map as the C backend merged its broadcast (cgen_bcast_loop) into at most two
 * loops: y[i * cols + j] = x0[i * rs0 + j * cs0] OP x1[i * rs1 + j * cs1], the column steps
 * 0 (broadcast) or 1. */
typedef struct RtBinaryTask {
    const float *x0, *x1;
    float *y;
    int64_t rows, cols, rs0, cs0, rs1, cs1;
    int64_t rows_per, cols_per, n_cc; /* a task: rows_per rows by cols_per columns; n_cc
                                         column blocks a row block */
    int op;
} RtBinaryTask;

/* One row's columns [j0, j1): a loop per op and column steps, which the compiler vectorizes. */
#define RT_BIN_ROW(OP)                                                                        \
    do {                                                                                      \
        if (cs0 && cs1)                                                                       \
            for (j = j0; j < j1; j++) yr[j] = a[j] OP b[j];                                   \
        else if (cs0)                                                                         \
            for (j = j0; j < j1; j++) yr[j] = a[j] OP b[0];                                   \
        else if (cs1)                                                                         \
            for (j = j0; j < j1; j++) yr[j] = a[0] OP b[j];                                   \
        else                                                                                  \
            for (j = j0; j < j1; j++) yr[j] = a[0] OP b[0];                                   \
    } while (0)

RT_API void rt_binary_block_f32(const RtBinaryTask *t, int64_t i0, int64_t i1, int64_t j0,
                                int64_t j1) {
    const int64_t cs0 = t->cs0, cs1 = t->cs1;
    int64_t i, j;
    for (i = i0; i < i1; i++) {
        const float *a = t->x0 + i * t->rs0, *b = t->x1 + i * t->rs1;
        float *yr = t->y + i * t->cols;
        switch (t->op) {
        case RT_BIN_ADD: RT_BIN_ROW(+); break;
        case RT_BIN_SUB: RT_BIN_ROW(-); break;
        case RT_BIN_MUL: RT_BIN_ROW(*); break;
        default: RT_BIN_ROW(/); break;
        }
    }
}
#undef RT_BIN_ROW

RT_API void rt_binary_task_f32(void *arg, int64_t task, int worker) {
    const RtBinaryTask *t = (const RtBinaryTask *)arg;
    const int64_t i0 = task / t->n_cc * t->rows_per, j0 = task % t->n_cc * t->cols_per;
    (void)worker;
    rt_binary_block_f32(t, i0, i0 + t->rows_per < t->rows ? i0 + t->rows_per : t->rows, j0,
                        j0 + t->cols_per < t->cols ? j0 + t->cols_per : t->cols);
}

/* The map above with its output shared among par's workers (NULL: serial): blocks of rows,
 * or of RT_BIN_COLS columns where the rows are fewer than the tasks wanted (a map of one
 * loop: rows 1). Every element is one operation whichever task computes it. */
RT_API void rt_binary_par_f32(int op, const float *x0, int64_t rs0, int64_t cs0,
                              const float *x1, int64_t rs1, int64_t cs1, float *y, int64_t rows,
                              int64_t cols, const RtPar *par) {
    const int64_t col_units = (cols + RT_BIN_COLS - 1) / RT_BIN_COLS;
    const int64_t want = rt_par_chunks(par, rows * col_units, 1);
    RtBinaryTask t;
    if (rows <= 0 || cols <= 0) return;
    t.x0 = x0;
    t.x1 = x1;
    t.y = y;
    t.rows = rows;
    t.cols = cols;
    t.rs0 = rs0;
    t.cs0 = cs0;
    t.rs1 = rs1;
    t.cs1 = cs1;
    t.op = op;
    if (rows >= want) { /* whole rows */
        t.rows_per = (rows + want - 1) / want;
        t.cols_per = cols;
    } else { /* one row a task, its columns in blocks */
        const int64_t per_row = (want + rows - 1) / rows;
        t.rows_per = 1;
        t.cols_per = (col_units + per_row - 1) / per_row * RT_BIN_COLS;
    }
    t.n_cc = (cols + t.cols_per - 1) / t.cols_per;
    rt_par_run(par, (rows + t.rows_per - 1) / t.rows_per * t.n_cc, rt_binary_task_f32, &t);
}
#endif

#endif
