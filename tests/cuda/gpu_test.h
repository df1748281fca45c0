/* gpu_test.h: what the GPU kernel tests (tests/cuda/*_gpu.cu, run by scripts/gpu-kernel-tests)
 * share: CK, which stops the test with exit status 2 and the CUDA error where a runtime call
 * fails (a broken run, not a failed check); the pass/fail counts each test prints last ("N
 * passed, N failed"); gpu_report and gpu_compare, a check by relative error against a double
 * reference; time_ms, the median of 20 timed calls of f after 5 untimed ones (CUDA events). */
#ifndef KILN_TESTS_GPU_TEST_H
#define KILN_TESTS_GPU_TEST_H

#include <algorithm>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#include <cuda_runtime.h>

#define CK(call)                                                                            \
    do {                                                                                    \
        cudaError_t e_ = (call);                                                            \
        if (e_ != cudaSuccess) {                                                            \
            printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__);  \
            exit(2);                                                                        \
        }                                                                                   \
    } while (0)

static int passed, failed;

/* One check: ok when no element was bad and the worst error is within tol. */
static inline void gpu_report(const char *what, double worst, double tol, long bad) {
    if (bad == 0 && worst <= tol) {
        printf("ok   %s (max err %.3g)\n", what, worst), passed++;
    } else {
        printf("FAIL %s: max err %.3g > %.3g, %ld bad\n", what, worst, tol, bad), failed++;
    }
}

/* err of got against want: |got - want| / (1 + |want|); NaN counts as bad */
static inline void gpu_compare(const std::vector<double> &got, const std::vector<double> &want,
                               double *worst, long *bad, double tol) {
    for (size_t i = 0; i < want.size(); i++) {
        double e = fabs(got[i] - want[i]) / (1.0 + fabs(want[i]));
        if (!(e <= tol)) (*bad)++;
        if (e > *worst || e != e) *worst = e != e ? INFINITY : e;
    }
}

template <typename F>
static inline float time_ms(F f) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < 5; i++) f();
    std::vector<float> ts;
    for (int i = 0; i < 20; i++) {
        CK(cudaEventRecord(e0));
        f();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        ts.push_back(ms);
    }
    CK(cudaGetLastError());
    std::sort(ts.begin(), ts.end());
    return ts[ts.size() / 2];
}

#endif
