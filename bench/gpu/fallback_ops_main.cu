/* bench/gpu/fallback_ops.sh's harness: loads seg_weights.bin, runs the bundle once with
 * seeded inputs, writes the outputs to a file, then prints each node's median time over
 * PROFILE_RUNS runs of seg_cuda_profile. */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "seg.h"

#define PROFILE_RUNS 5

int main(int argc, char **argv) {
    if (argc != 3) return fprintf(stderr, "usage: prof WEIGHTS OUTFILE\n"), 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f) return perror(argv[1]), 1;
    std::vector<unsigned char> w(SEG_WEIGHTS_SIZE + 1);
    size_t got = fread(w.data(), 1, w.size(), f);
    fclose(f);
    if (got != SEG_WEIGHTS_SIZE) return fprintf(stderr, "weights: %zu bytes\n", got), 1;
    int st = 0;
    seg_cuda_ctx *ctx = seg_cuda_init(w.data(), &st);
    if (!ctx) return fprintf(stderr, "init: status %d\n", st), 1;
    std::vector<float> x(1 * 64 * 64 * 64), mean(1 * 1 * 258 * 258);
    std::vector<int64_t> label(1 * 1 * 258 * 258);
    unsigned s = 1;
    for (float &v : x) s = s * 1103515245u + 12345u, v = (float)((s >> 9) & 0xffff) / 32768.0f - 1;
    seg_inputs in = {x.data()};
    seg_outputs out = {mean.data(), label.data()};
    if ((st = seg_cuda_run_host(ctx, &in, &out)) != 0) return fprintf(stderr, "run: %d\n", st), 1;
    FILE *o = fopen(argv[2], "wb");
    fwrite(mean.data(), sizeof(float), mean.size(), o);
    fwrite(label.data(), sizeof(int64_t), label.size(), o);
    fclose(o);
    std::vector<std::vector<float>> ms(SEG_PROFILE_NODES);
    for (int r = 0; r < PROFILE_RUNS; r++) {
        float t[SEG_PROFILE_NODES];
        if ((st = seg_cuda_profile(ctx, t)) != 0) return fprintf(stderr, "profile: %d\n", st), 1;
        for (int i = 0; i < SEG_PROFILE_NODES; i++) ms[i].push_back(t[i]);
    }
    double total = 0;
    for (int i = 0; i < SEG_PROFILE_NODES; i++) {
        std::sort(ms[i].begin(), ms[i].end());
        float med = ms[i][PROFILE_RUNS / 2];
        total += med;
        printf("  %-40s %-8s %10.3f ms\n", seg_profile_nodes[i], seg_profile_kinds[i], med);
    }
    printf("  total %.3f ms\n", total);
    seg_cuda_free(ctx);
    return 0;
}
