/* bench/gpu/bundle_main.h: what the one-bundle harnesses of bench/gpu (int8_time.cu,
 * pdl_same.cu) share: F(x), the bundle's NAME##x for a build with -DB=NAME -include NAME.h,
 * the weights file read whole (64 spare bytes after it), the bundle opened on it, the seeded
 * input values and the graph's timing. */
#ifndef KILN_BENCH_BUNDLE_MAIN_H
#define KILN_BENCH_BUNDLE_MAIN_H
#include <algorithm>
#include <cstdio>
#include <vector>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define F(x) CAT(B, x)

/* false when path cannot be read */
static bool read_weights(const char *path, std::vector<unsigned char> &w) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    w.assign(n < 0 ? 64 : (size_t)n + 64, 0);
    bool ok = n >= 0 && fread(w.data(), 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    return ok;
}

/* the bundle's context on the weights file's bytes (kept in w), its own device buffers in
 * *in and *out; NULL, with a message, on failure */
static F(_cuda_ctx) *open_bundle(const char *path, std::vector<unsigned char> &w, F(_inputs) *in,
                                 F(_outputs) *out) {
    int st = 0;
    if (!read_weights(path, w)) {
        fprintf(stderr, "cannot read %s\n", path);
        return NULL;
    }
    F(_cuda_ctx) *ctx = F(_cuda_init)(w.data(), &st);
    if (!ctx) {
        fprintf(stderr, "init failed: %d\n", st);
        return NULL;
    }
    F(_cuda_io)(ctx, in, out);
    return ctx;
}

/* seeded pseudo-random inputs: seed_state(seed), then each next_bits(&s) a step; as a float
 * value in [-1, 1) (next_unit) */
static unsigned seed_state(unsigned seed) { return seed * 2654435761u + 12345u; }
static unsigned next_bits(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}
static float next_unit(unsigned *s) { return (float)(next_bits(s) & 0xffff) / 32768.0f - 1.0f; }

/* the graph's milliseconds: warmup launches, then runs, each between two events on stream,
 * sorted; empty (with a message) when a run fails */
static std::vector<float> time_graph(F(_cuda_ctx) *ctx, F(_inputs) *in, F(_outputs) *out,
                                     cudaStream_t stream, int warmup, int runs) {
    std::vector<float> ms;
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int i = 0; i < warmup; i++) F(_cuda_run)(ctx, in, out, stream);
    cudaStreamSynchronize(stream);
    for (int i = 0; i < runs; i++) {
        cudaEventRecord(a, stream);
        int rc = F(_cuda_run)(ctx, in, out, stream);
        cudaEventRecord(b, stream);
        cudaEventSynchronize(b);
        if (rc != 0 || F(_cuda_status)(ctx) != 0) {
            fprintf(stderr, "run failed: %d\n", rc);
            ms.clear();
            break;
        }
        float t;
        cudaEventElapsedTime(&t, a, b);
        ms.push_back(t);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(ms.begin(), ms.end());
    return ms;
}
#endif
