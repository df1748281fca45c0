/* gpu_test.h: what the GPU kernel tests (tests/cuda/*_gpu.cu, run by scripts/gpu-kernel-tests)
 * share: CK, which stops the test with exit status 2 and the CUDA error where a runtime call
 * fails (a broken run, not a failed check). */
#ifndef KILN_TESTS_GPU_TEST_H
#define KILN_TESTS_GPU_TEST_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#define CK(call)                                                                            \
    do {                                                                                    \
        cudaError_t e_ = (call);                                                            \
        if (e_ != cudaSuccess) {                                                            \
            printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__);  \
            exit(2);                                                                        \
        }                                                                                   \
    } while (0)

#endif
