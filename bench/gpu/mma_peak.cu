/* bench/gpu/mma_peak.cu: the tensor-core ceiling that kc_qconv.cuh's kernel works under:
 * mma.sync m16n8k32 u8 x s8 -> s32 (the int8 convolutions) against m16n8k16 f16 x f16 -> f32
 * (the peer's tensor-core shape), each issued back to back from registers by 8 warps a
 * block, 4 blocks per SM, no memory traffic; prints achieved TOPS / TFLOPS.
 * usage: mma_peak (nvcc -arch=sm_90 -O3) */
#include <cstdio>
#include <cuda_runtime.h>

#define ITERS 4096
__global__ void imma(int *out) {
    unsigned a[4] = {threadIdx.x, 1u, 2u, 3u}, b[2] = {5u, 7u};
    int d[8][4] = {};
    for (int it = 0; it < ITERS; it++)
#pragma unroll
        for (int j = 0; j < 8; j++)
            asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                         : "+r"(d[j][0]), "+r"(d[j][1]), "+r"(d[j][2]), "+r"(d[j][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    int s = 0;
    for (int j = 0; j < 8; j++) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];
    if (s == 12345) out[0] = s;
}
__global__ void hmma(float *out) {
    unsigned a[4] = {threadIdx.x, 1u, 2u, 3u}, b[2] = {5u, 7u};
    float d[8][4] = {};
    for (int it = 0; it < ITERS; it++)
#pragma unroll
        for (int j = 0; j < 8; j++)
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                         : "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    float s = 0;
    for (int j = 0; j < 8; j++) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];
    if (s == 12345.f) out[0] = s;
}
int main() {
    int sms;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    void *buf;
    cudaMalloc(&buf, 64);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    dim3 grid(sms * 4), block(256);
    for (int k = 0; k < 2; k++) {
        float ms = 0;
        for (int r = 0; r < 3; r++) {
            cudaEventRecord(a);
            if (k == 0) imma<<<grid, block>>>((int *)buf);
            else hmma<<<grid, block>>>((float *)buf);
            cudaEventRecord(b);
            cudaEventSynchronize(b);
            cudaEventElapsedTime(&ms, a, b);
        }
        double macs = (double)grid.x * (block.x / 32) * ITERS * 8 * (k == 0 ? 16 * 8 * 32 : 16 * 8 * 16);
        printf("%s: %.1f %s\n", k == 0 ? "mma.sync m16n8k32 u8.s8 (int8)" : "mma.sync m16n8k16 f16 (fp32 acc)",
               2 * macs / (ms * 1e-3) / 1e12, k == 0 ? "TOPS" : "TFLOPS");
    }
    return 0;
}
