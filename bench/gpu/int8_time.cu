/* bench/gpu/int8_time.cu: times one CUDA bundle of bench/gpu/int8_prepare.py (built with
 * -DB=NAME -DPN=UPPER_NAME_PROFILE_NODES -include NAME.h): median milliseconds of NAME_cuda_run on the context's own
 * buffers (no host copies), the input filled with one seeded pattern, plus the sum of the
 * per-node profile grouped by op. usage: int8_time WEIGHTS INPUT_FLOATS RUNS */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "bundle_main.h"

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    std::vector<unsigned char> w;
    size_t count = strtoull(argv[2], NULL, 10);
    int runs = atoi(argv[3]);
    F(_inputs) in;
    F(_outputs) out;
    F(_cuda_ctx) *ctx = open_bundle(argv[1], w, &in, &out);
    if (!ctx) return 1;
    std::vector<float> x(count);
    unsigned s = seed_state(0);
    for (size_t i = 0; i < count; i++) x[i] = next_unit(&s);
    float *dx;
    memcpy(&dx, &in, sizeof dx); /* the first (only) input's device buffer */
    cudaMemcpy(dx, x.data(), count * sizeof(float), cudaMemcpyHostToDevice);
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    std::vector<float> ms = time_graph(ctx, &in, &out, stream, 3, runs);
    if (ms.empty()) return 1;
    std::vector<float> node(PN);
    F(_cuda_profile)(ctx, node.data());
    std::map<std::string, double> byop;
    for (int i = 0; i < PN; i++) {
        std::string op = F(_profile_nodes)[i];
        op = op.substr(0, op.find(' '));
        byop[op] += node[i];
    }
    printf("{\"median_ms\": %.4f, \"min_ms\": %.4f, \"runs\": %d, \"profile_ms\": {", ms[ms.size() / 2],
           ms[0], runs);
    bool first = true;
    for (auto &kv : byop) {
        printf("%s\"%s\": %.4f", first ? "" : ", ", kv.first.c_str(), kv.second);
        first = false;
    }
    printf("}");
    if (getenv("INT8_TIME_NODES")) { /* the N slowest nodes (12 for a value below 2), for the docs' breakdown */
        int top = atoi(getenv("INT8_TIME_NODES"));
        top = top < 2 ? 12 : top;
        std::vector<int> idx(PN);
        for (int i = 0; i < PN; i++) idx[i] = i;
        std::sort(idx.begin(), idx.end(), [&](int a, int b) { return node[a] > node[b]; });
        printf(", \"slowest\": [");
        for (int i = 0; i < PN && i < top; i++)
            printf("%s[\"%s\", %.4f]", i ? ", " : "", F(_profile_nodes)[idx[i]], node[idx[i]]);
        printf("]");
    }
    printf("}\n");
    F(_cuda_free)(ctx);
    return 0;
}
