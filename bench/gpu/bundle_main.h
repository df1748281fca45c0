/* bench/gpu/bundle_main.h: what the one-bundle harnesses of bench/gpu (int8_time.cu,
 * pdl_same.cu) share: F(x), the bundle's NAME##x for a build with -DB=NAME -include NAME.h,
 * the weights file read whole (64 spare bytes after it) and the bundle opened on it. */
#ifndef KILN_BENCH_BUNDLE_MAIN_H
#define KILN_BENCH_BUNDLE_MAIN_H
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
#endif
