/* bench/gpu/pdl_same.cu: whether a CUDA bundle's graph gives the bytes of its eager run when
 * its inputs change from one run to the next: a check of programmatic dependent launch (a
 * kernel that reads its producer's output before the producer has written it reads the
 * previous run's values, which differ when the input does). Two seeded input sets; for each,
 * the reference is NAME_cuda_profile's output (eager: one kernel after another, products
 * launched the plain way); then RUNS graph launches alternating the two sets, each output
 * compared byte for byte with its set's reference. Built as int8_time.cu is (-DB=NAME
 * -DPN=UPPER_NAME_PROFILE_NODES -include NAME.h). Then the graph's median time over RUNS
 * launches on one input set. Prints one JSON line; exit 1 on a mismatch. PDL_SAME_DUMP=FILE
 * also writes the first set's reference output there (to compare two builds' outputs).
 * usage: pdl_same WEIGHTS RUNS OUT_FLOATS SPEC...  (SPEC per input, in order: f:COUNT for
 * float32 values in [-1, 1), i:COUNT:HIGH for int64 values in [0, HIGH)) */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bundle_main.h"

struct Input {
    char kind;
    size_t count;
    long high;
};

static std::vector<unsigned char> fill(const Input &in, unsigned seed) {
    size_t es = in.kind == 'f' ? 4 : 8;
    std::vector<unsigned char> v(in.count * es);
    unsigned s = seed_state(seed);
    for (size_t i = 0; i < in.count; i++) {
        if (in.kind == 'f') {
            float x = next_unit(&s);
            memcpy(&v[i * 4], &x, 4);
        } else {
            long long x = (long long)(next_bits(&s) % (unsigned)in.high);
            memcpy(&v[i * 8], &x, 8);
        }
    }
    return v;
}

int main(int argc, char **argv) {
    if (argc < 5) return 2;
    std::vector<unsigned char> w;
    int runs = atoi(argv[2]);
    size_t out_n = strtoull(argv[3], NULL, 10);
    std::vector<Input> ins;
    for (int a = 4; a < argc; a++) {
        Input in = {argv[a][0], 0, 0};
        char *e;
        in.count = strtoull(argv[a] + 2, &e, 10);
        if (in.kind == 'i') in.high = strtol(e + 1, NULL, 10);
        if ((in.kind != 'f' && in.kind != 'i') || in.count == 0 || (in.kind == 'i' && in.high <= 0))
            return 2;
        ins.push_back(in);
    }
    F(_inputs) in;
    F(_outputs) out;
    F(_cuda_ctx) *ctx = open_bundle(argv[1], w, &in, &out);
    if (!ctx) return 1;
    if (sizeof in != ins.size() * sizeof(void *)) {
        fprintf(stderr, "the bundle has %zu inputs, %zu specs given\n", sizeof in / sizeof(void *),
                ins.size());
        return 2;
    }
    void *dptr[16], *dout;
    memcpy(dptr, &in, sizeof in);
    memcpy(&dout, &out, sizeof dout); /* the first output */
    std::vector<std::vector<unsigned char>> data[2];
    std::vector<unsigned char> ref[2], got(out_n * 4);
    std::vector<float> node(PN);
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    for (int v = 0; v < 2; v++) {
        for (size_t i = 0; i < ins.size(); i++) {
            data[v].push_back(fill(ins[i], (unsigned)(v * 16 + i)));
            cudaMemcpy(dptr[i], data[v][i].data(), data[v][i].size(), cudaMemcpyHostToDevice);
        }
        if (F(_cuda_profile)(ctx, node.data()) != 0) {
            fprintf(stderr, "eager run failed\n");
            return 1;
        }
        ref[v].resize(out_n * 4);
        cudaMemcpy(ref[v].data(), dout, out_n * 4, cudaMemcpyDeviceToHost);
    }
    if (const char *dump = getenv("PDL_SAME_DUMP")) { /* the first set's reference, to compare builds */
        FILE *f = fopen(dump, "wb");
        if (!f || fwrite(ref[0].data(), 1, ref[0].size(), f) != ref[0].size()) return 1;
        fclose(f);
    }
    int bad = 0, first_bad = -1;
    double worst = 0.0;
    for (int r = 0; r < runs; r++) {
        int v = r % 2;
        for (size_t i = 0; i < ins.size(); i++)
            cudaMemcpyAsync(dptr[i], data[v][i].data(), data[v][i].size(), cudaMemcpyHostToDevice,
                            stream);
        int rc = F(_cuda_run)(ctx, &in, &out, stream);
        cudaMemcpyAsync(got.data(), dout, out_n * 4, cudaMemcpyDeviceToHost, stream);
        if (rc != 0 || cudaStreamSynchronize(stream) != cudaSuccess || F(_cuda_status)(ctx) != 0) {
            fprintf(stderr, "run %d failed: %d\n", r, rc);
            return 1;
        }
        if (memcmp(got.data(), ref[v].data(), got.size()) != 0) {
            if (bad++ == 0) first_bad = r;
            for (size_t k = 0; k < out_n; k++) {
                float a, b;
                memcpy(&a, &got[k * 4], 4);
                memcpy(&b, &ref[v][k * 4], 4);
                double d = a > b ? a - b : b - a;
                if (d > worst || d != d) worst = d;
            }
        }
    }
    /* then the graph's time on one input set: median of RUNS launches */
    std::vector<float> ms = time_graph(ctx, &in, &out, stream, 20, runs);
    if (ms.empty()) return 1;
    bool differ = memcmp(ref[0].data(), ref[1].data(), ref[0].size()) != 0;
    printf("{\"runs\": %d, \"mismatched\": %d, \"first\": %d, \"max_abs_diff\": %g, "
           "\"references_differ\": %s, \"median_ms\": %.4f, \"min_ms\": %.4f}\n",
           runs, bad, first_bad, worst, differ ? "true" : "false", ms[ms.size() / 2], ms[0]);
    F(_cuda_free)(ctx);
    return bad || !differ ? 1 : 0;
}
