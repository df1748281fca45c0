// Two CUDA bundles of bench/gpu's BERT-base at batch 1 (bench/gpu/pair/prepare.sh: bb0 and
// bb1, e.g. without and with a pass), timed in one process in interleaved rounds: per-run
// CUDA-event times of NAME_cuda_run (one graph launch) on the contexts' own buffers,
// medians; both outputs on one input (they should agree); per op type, the sum of the
// per-node medians of 5 NAME_cuda_profile runs. Built and run by bench/gpu/pair/run.sh.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>
#include "bb0/bb0.h"
#include "bb1/bb1.h"

static void *slurp(const char *p, size_t n) {
    FILE *f = fopen(p, "rb");
    if (!f) { perror(p); exit(1); }
    void *b = malloc(n);
    if (fread(b, 1, n, f) != n) { fprintf(stderr, "short %s\n", p); exit(1); }
    fclose(f);
    return b;
}

template <class Ctx, class In, class Out>
static float time_one(Ctx *ctx, int (*run)(Ctx *, const In *, Out *, cudaStream_t), In *in,
                      Out *out, cudaStream_t s, cudaEvent_t a, cudaEvent_t b) {
    cudaEventRecord(a, s);
    run(ctx, in, out, s);
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    return ms;
}

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main() {
    int st0, st1;
    void *w0 = slurp("bb0/bb0_weights.bin", BB0_WEIGHTS_SIZE);
    void *w1 = slurp("bb1/bb1_weights.bin", BB1_WEIGHTS_SIZE);
    bb0_cuda_ctx *c0 = bb0_cuda_init(w0, &st0);
    bb1_cuda_ctx *c1 = bb1_cuda_init(w1, &st1);
    if (!c0 || !c1) { printf("init failed %d %d\n", st0, st1); return 1; }
    int64_t ids[128], mask[128];
    unsigned s = 12345;
    for (int i = 0; i < 128; i++) {
        s = s * 1103515245u + 12345u;
        ids[i] = (s >> 8) % 30522;
        mask[i] = i < 100;
    }
    float o0[2], o1[2];
    bb0_inputs hi0 = {ids, mask};
    bb1_inputs hi1 = {ids, mask};
    bb0_outputs ho0 = {o0};
    bb1_outputs ho1 = {o1};
    int r0 = bb0_cuda_run_host(c0, &hi0, &ho0), r1 = bb1_cuda_run_host(c1, &hi1, &ho1);
    double dot = o0[0] * o1[0] + o0[1] * o1[1];
    double n0 = o0[0] * o0[0] + o0[1] * o0[1], n1 = o1[0] * o1[0] + o1[1] * o1[1];
    printf("status %d %d; outputs bb0 [%.6f %.6f] bb1 [%.6f %.6f]; max abs diff %.3g; cosine %.7f\n",
           r0, r1, o0[0], o0[1], o1[0], o1[1],
           std::max(fabs(o0[0] - o1[0]), fabs(o0[1] - o1[1])), dot / sqrt(n0 * n1));
    bb0_inputs di0; bb0_outputs do0; bb1_inputs di1; bb1_outputs do1;
    bb0_cuda_io(c0, &di0, &do0);
    bb1_cuda_io(c1, &di1, &do1);
    cudaStream_t st;
    cudaStreamCreate(&st);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    std::vector<float> t0, t1;
    const int ROUNDS = 7, WARM = 20, ITERS = 100;
    for (int r = 0; r < ROUNDS; r++) {
        std::vector<float> x0, x1;
        for (int i = 0; i < WARM; i++) time_one(c0, bb0_cuda_run, &di0, &do0, st, a, b);
        for (int i = 0; i < ITERS; i++) x0.push_back(time_one(c0, bb0_cuda_run, &di0, &do0, st, a, b));
        for (int i = 0; i < WARM; i++) time_one(c1, bb1_cuda_run, &di1, &do1, st, a, b);
        for (int i = 0; i < ITERS; i++) x1.push_back(time_one(c1, bb1_cuda_run, &di1, &do1, st, a, b));
        printf("round %d: bb0 %.4f ms, bb1 %.4f ms, ratio %.3f\n", r, median(x0), median(x1),
               median(x0) / median(x1));
        t0.insert(t0.end(), x0.begin(), x0.end());
        t1.insert(t1.end(), x1.begin(), x1.end());
    }
    printf("median over %d runs each: bb0 (no fuse-horizontal) %.4f ms, bb1 (all passes) %.4f ms, "
           "bb0/bb1 %.3f\n", ROUNDS * ITERS, median(t0), median(t1), median(t0) / median(t1));
    // where the time goes: per op type, the per-node median of 5 profile runs
    for (int which = 0; which < 2; which++) {
        int n = which ? BB1_PROFILE_NODES : BB0_PROFILE_NODES;
        const char *const *names = which ? bb1_profile_nodes : bb0_profile_nodes;
        std::vector<std::vector<float>> per(n);
        std::vector<float> ms(n);
        for (int k = 0; k < 5; k++) {
            int rc = which ? bb1_cuda_profile(c1, ms.data()) : bb0_cuda_profile(c0, ms.data());
            if (rc) { printf("profile rc %d\n", rc); break; }
            for (int i = 0; i < n; i++) per[i].push_back(ms[i]);
        }
        std::map<std::string, std::pair<float, int>> by;
        float total = 0;
        for (int i = 0; i < n; i++) {
            if (per[i].empty()) continue;
            std::string op(names[i]);
            op = op.substr(0, op.find(' '));
            float m = median(per[i]);
            by[op].first += m;
            by[op].second++;
            total += m;
        }
        printf("profile bb%d: %d nodes, total %.4f ms:", which, n, total);
        for (auto &kv : by) printf(" %s %.4f (%d)", kv.first.c_str(), kv.second.first, kv.second.second);
        printf("\n");
    }
    bb0_cuda_free(c0);
    bb1_cuda_free(c1);
    return 0;
}
