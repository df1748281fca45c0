/* floor.c: the multiply-add throughput that bounds the int8 and fp32 kernels on an x86 CPU
 * with AVX2 (bench/int8/floor.sh builds and runs it). Twelve independent accumulators per
 * loop, so only throughput counts; each figure is in nanoseconds of the thread's CPU time
 * per instruction (CLOCK_THREAD_CPUTIME_ID: on a shared, loaded machine the time the
 * thread waits for a core is not counted, as it was with the time-stamp counter), all
 * measured in the same run, and the ratios to vfmadd231ps (8 fp32 MACs) are what to read:
 *   vpmaddwd            16 int16 MACs (the exact int8 sums of rt_qgemm.h's AVX2 path)
 *   vpmaddwd + vpaddd   the same with the int32 accumulation it needs (VNNI fuses the two)
 *   vpmaddubsw + vpmaddwd(ones) + vpaddd   32 u8 x s8 MACs with int16 saturation (what
 *                       int8 GEMMs without VNNI commonly use; not exact, not used here)
 *   vfmadd231ps         8 fp32 MACs (the fp32 GEMM, rt_pgemm.h)
 * and, built with AVX-512 VNNI (floor.sh does so where the CPU has it):
 *   vpdpbusd ymm, zmm   32, 64 exact u8 x s8 MACs into int32 (rt_qgemm.h's VNNI tile)
 *   vfmadd231ps zmm     16 fp32 MACs
 * Then the copy bandwidth (bytes read + bytes written per second, 32-byte loads and stores)
 * of buffers that stay in L2 and of ones that spill to L3: the floor of a memory-bound
 * layer (a depthwise convolution reads its input and writes its output once).
 * GNU C (inline assembly); x86-64 with AVX2 and FMA. */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define R12(op) op(0) op(1) op(2) op(3) op(4) op(5) op(6) op(7) op(8) op(9) op(10) op(11)
#define MADD(i) "vpmaddwd %%ymm14, %%ymm15, %%ymm" #i "\n\t"
#define MADDADD(i) "vpmaddwd %%ymm14, %%ymm15, %%ymm12\n\tvpaddd %%ymm12, %%ymm" #i ", %%ymm" #i "\n\t"
#define UBS(i)                                                                               \
    "vpmaddubsw %%ymm14, %%ymm15, %%ymm12\n\tvpmaddwd %%ymm13, %%ymm12, %%ymm12\n\t"         \
    "vpaddd %%ymm12, %%ymm" #i ", %%ymm" #i "\n\t"
#define FMA(i) "vfmadd231ps %%ymm14, %%ymm15, %%ymm" #i "\n\t"
#define DPY(i) "vpdpbusd %%ymm14, %%ymm15, %%ymm" #i "\n\t"
#define DPZ(i) "vpdpbusd %%zmm14, %%zmm15, %%zmm" #i "\n\t"
#define FMAZ(i) "vfmadd231ps %%zmm14, %%zmm15, %%zmm" #i "\n\t"
#define CLOB "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", \
             "xmm10", "xmm11", "xmm12", "memory"

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static double ns_per(int which) {
    const long n = 2000000;
    double t0 = now_ns();
    for (long k = 0; k < n; k++) switch (which) {
        case 0: __asm__ volatile(R12(MADD)::: CLOB); break;
        case 1: __asm__ volatile(R12(MADDADD)::: CLOB); break;
        case 2: __asm__ volatile(R12(UBS)::: CLOB); break;
        case 3: __asm__ volatile(R12(FMA)::: CLOB); break;
#if defined(__AVX512VNNI__)
        case 4: __asm__ volatile(R12(DPY)::: CLOB); break;
        case 5: __asm__ volatile(R12(DPZ)::: CLOB); break;
        default: __asm__ volatile(R12(FMAZ)::: CLOB); break;
#endif
        }
    return (now_ns() - t0) / (double)(n * 12);
}

/* GB/s of bytes in + out copying `bytes` (two buffers of that size), best of 40 */
static double copy_gbs(size_t bytes) {
    void *a, *b;
    double best = 1e30;
    int rep;
    if (posix_memalign(&a, 64, bytes) || posix_memalign(&b, 64, bytes)) return 0;
    for (size_t i = 0; i < bytes; i++) ((unsigned char *)a)[i] = (unsigned char)i;
    for (rep = 0; rep < 40; rep++) {
        double t0 = now_ns(), t;
        for (size_t i = 0; i < bytes; i += 32)
            _mm256_store_si256((__m256i *)(void *)((char *)b + i), _mm256_load_si256((const __m256i *)(const void *)((char *)a + i)));
        t = now_ns() - t0;
        if (t < best) best = t;
    }
    free(a);
    free(b);
    return 2.0 * (double)bytes / best;
}

int main(void) {
    static const char *name[] = {"vpmaddwd", "vpmaddwd+vpaddd", "vpmaddubsw+vpmaddwd+vpaddd",
                                 "vfmadd231ps", "vpdpbusd ymm", "vpdpbusd zmm", "vfmadd231ps zmm"};
    static const double macs[] = {16, 16, 32, 8, 32, 64, 16};
    double best[7] = {1e30, 1e30, 1e30, 1e30, 1e30, 1e30, 1e30};
#if defined(__AVX512VNNI__)
    const int kinds = 7;
#else
    const int kinds = 4;
#endif
    int rep, i;
    for (rep = 0; rep < 60; rep++) /* interleaved, best of 60 short runs: the least disturbed */
        for (i = 0; i < kinds; i++) {
            double t = ns_per(i);
            if (t < best[i]) best[i] = t;
        }
    printf("| sequence | MACs | ns per sequence | GMAC/s | / fp32 FMA |\n|---|---|---|---|---|\n");
    for (i = 0; i < kinds; i++)
        printf("| %s | %.0f | %.3f | %.2f | %.2fx |\n", name[i], macs[i], best[i], macs[i] / best[i],
               (macs[i] / best[i]) / (macs[3] / best[3]));
    printf("\n| copy (in + out) | GB/s |\n|---|---|\n");
    printf("| 2 x 256 KB (L2) | %.1f |\n", copy_gbs((size_t)256 << 10));
    printf("| 2 x 4 MB (L3) | %.1f |\n", copy_gbs((size_t)4 << 20));
    return 0;
}
