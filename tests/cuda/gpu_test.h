/* gpu_test.h: what the GPU kernel tests (tests/cuda/*_gpu.cu, run by scripts/gpu-kernel-tests)
 * share: CK, which stops the test with exit status 2 and the CUDA error where a runtime call
 * fails (a broken run, not a failed check); the pass/fail counts each test prints last ("N
 * passed, N failed"); gpu_report and gpu_compare, a check by relative error against a double
 * reference; time_ms, the median of 20 timed calls of f after 5 untimed ones (CUDA events);
 * LateInputs, inputs written by the kernel launched just before (programmatic dependent launch). */
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

/* Copies n1 bytes of s1 to d1 and n2 of s2 to d2 after a spin of about 20 us (at 2 GHz),
 * having told the GPU at its start that the next kernel may launch
 * (griddepcontrol.launch_dependents): a kernel launched after it with programmatic dependent
 * launch runs beside the spin, and reads the poison in d1 and d2 unless it waits for this
 * grid. */
__global__ void late_copy2(const unsigned char *s1, unsigned char *d1, size_t n1,
                           const unsigned char *s2, unsigned char *d2, size_t n2) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
    long long t0 = clock64();
    while (clock64() - t0 < 40000) {
    }
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n1 + n2;
         i += (size_t)gridDim.x * blockDim.x) {
        if (i < n1)
            d1[i] = s1[i];
        else
            d2[i - n1] = s2[i - n1];
    }
}

/* the stream the late cases run on (created on first use, non-blocking) */
static inline cudaStream_t late_stream(void) {
    static cudaStream_t s;
    if (!s) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
}

/* Inputs written by the kernel launched just before (on): d1 (n1 bytes) and d2 (n2, or none)
 * poisoned, then written back by late_copy2 on late_stream(), the stream the kernel under test
 * takes (s: 0 when off). The staging copy goes with the object, after a device sync. */
struct LateInputs {
    cudaStream_t s = 0;
    unsigned char *stage = NULL;
    LateInputs(bool on, void *d1, size_t n1, void *d2 = NULL, size_t n2 = 0) {
        if (!on) return;
        CK(cudaMalloc(&stage, n1 + n2 + 1));
        CK(cudaMemcpy(stage, d1, n1, cudaMemcpyDeviceToDevice));
        if (n2) CK(cudaMemcpy(stage + n1, d2, n2, cudaMemcpyDeviceToDevice));
        CK(cudaMemset(d1, 0x5a, n1));
        if (n2) CK(cudaMemset(d2, 0x5a, n2));
        CK(cudaDeviceSynchronize());
        s = late_stream();
        late_copy2<<<8, 256, 0, s>>>(stage, (unsigned char *)d1, n1, stage + n1,
                                     (unsigned char *)d2, n2);
    }
    ~LateInputs() {
        if (stage) cudaDeviceSynchronize(), cudaFree(stage);
    }
    LateInputs(const LateInputs &) = delete;
    LateInputs &operator=(const LateInputs &) = delete;
};

#endif
