// One graph replay of bench/gpu/pair's bundle bb0 (BERT-base b1) between cudaProfilerStart and
// cudaProfilerStop, for `ncu --profile-from-start off --metrics gpu__time_duration.sum`: each
// kernel of the replay timed alone, against the replay's own time (median of 500, printed
// first), whose difference is the graph's gaps. Built beside pair_timing.cu (bench/gpu/pair).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_profiler_api.h>
#include "bb0/bb0.h"

int main() {
    FILE *f = fopen("bb0/bb0_weights.bin", "rb");
    if (!f) return 1;
    void *w = malloc(BB0_WEIGHTS_SIZE);
    if (fread(w, 1, BB0_WEIGHTS_SIZE, f) != BB0_WEIGHTS_SIZE) return 1;
    fclose(f);
    int st;
    bb0_cuda_ctx *c = bb0_cuda_init(w, &st);
    if (!c) { printf("init failed %d\n", st); return 1; }
    bb0_inputs in; bb0_outputs out;
    bb0_cuda_io(c, &in, &out);
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaEvent_t a, b;
    cudaEventCreate(&a), cudaEventCreate(&b);
    int rc = 0;
    std::vector<float> t;
    for (int i = 0; i < 520 && !rc; i++) {
        cudaEventRecord(a, s);
        rc = bb0_cuda_run(c, &in, &out, s);
        cudaEventRecord(b, s);
        cudaEventSynchronize(b);
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        if (i >= 20) t.push_back(ms);
    }
    if (rc) { printf("run rc %d\n", rc); return 1; }
    std::sort(t.begin(), t.end());
    printf("graph replay: median %.4f ms, min %.4f ms (500 runs)\n", t[t.size() / 2], t[0]);
    cudaProfilerStart();
    rc = bb0_cuda_run(c, &in, &out, s);
    cudaStreamSynchronize(s);
    cudaProfilerStop();
    bb0_cuda_free(c);
    return rc;
}
