"""A lab, not the compiler: rewrites a generated CUDA bundle's NAME.cu so that each cuBLASLt
product's weights are prefetched into L2 by a kernel on a side stream forked from the bundle's
stream AHEAD products earlier (the first AHEAD at the start, the branch joined before the
enqueue returns; inside the capture this is a side branch of the graph). MODE bulk: one
cp.async.bulk.prefetch.L2 per 16 KiB (8 blocks of 128 threads); line: prefetch.global.L2::evict_last
per 128-byte line (32 blocks). The arithmetic is untouched, so the output bytes must equal the
bundle's own (bench/gpu/pdl_same.cu with PDL_SAME_DUMP compares them). docs/cuda.md, session 24,
has the H200 figures (BERT-base batch 1 -2 % at AHEAD 2 bulk, ResNet-50 batch 1 +1-7 %: not kept).
usage: l2_prefetch_lab.py SRC.cu OUT.cu AHEAD MODE"""
import re, sys
src, out, ahead, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
t = open(src).read()
name = re.search(r"static int (\w+)_enqueue\(", t).group(1)
prods = []  # (weights offset in w or -1, bytes) of each kc_lt_matmul call, in order
for c in (m.start() for m in re.finditer(r"if \(\(rc = kc_lt_matmul\(", t)):
    blk = t[t.rindex("\n    {\n", 0, c):c]
    get = lambda f: int(re.search(r"\b[pm]\.%s = (\d+);" % f, blk).group(1))
    w = re.search(r"(?:p\.A|wt) = \(\(const \w+ \*\)\(w \+ (\d+)\)\);", blk)
    ta = re.search(r"\b[pm]\.trans_a = 1;", blk) is not None
    off = int(w.group(1)) if w else -1
    cols = get("m") if ta else get("k")
    prods.append((off, cols * get("lda") * 2))
n = len(prods)
helper = r'''
/* ---- lab: L2 prefetch of the products' weights on a side branch ---- */
__global__ void lab_pf_kernel(const unsigned char *p, unsigned long long bytes) {
    const unsigned long long CH = %(ch)d;
    for (unsigned long long o = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) * CH; o < bytes;
         o += (unsigned long long)gridDim.x * blockDim.x * CH) {
        unsigned long long n = bytes - o < CH ? bytes - o : CH;
%(body)s
    }
}
static const long long lab_off[%(n)d] = {%(offs)s};
static const long long lab_bytes[%(n)d] = {%(bytes)s};
static cudaStream_t lab_s2;
static cudaEvent_t lab_ev[%(n)d + 2];
static void lab_init(void) {
    if (lab_s2) return;
    cudaStreamCreateWithFlags(&lab_s2, cudaStreamNonBlocking);
    for (int i = 0; i < %(n)d + 2; i++) cudaEventCreateWithFlags(&lab_ev[i], cudaEventDisableTiming);
}
/* fork from s: prefetch product j's weights */
static void lab_pf(cudaStream_t s, const unsigned char *w, int i, int j) {
    if (j >= %(n)d || lab_off[j] < 0) return;
    cudaEventRecord(lab_ev[i], s);
    cudaStreamWaitEvent(lab_s2, lab_ev[i], 0);
    long long o = lab_off[j] & ~15ll, b = (lab_bytes[j] + (lab_off[j] - o) + 15) & ~15ll;
    lab_pf_kernel<<<%(grid)d, 128, 0, lab_s2>>>(w + o, (unsigned long long)b);
}
static void lab_join(cudaStream_t s) {
    cudaEventRecord(lab_ev[%(n)d + 1], lab_s2);
    cudaStreamWaitEvent(s, lab_ev[%(n)d + 1], 0);
}
'''
if mode == "bulk":
    body = '        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(p + o), "r"((unsigned)n) : "memory");'
    ch, grid = 16384, 8
else:
    body = '        for (unsigned long long q = 0; q < n; q += 128) asm volatile("prefetch.global.L2::evict_last [%0];" :: "l"(p + o + q));'
    ch, grid = 1024, 32
helper = helper % dict(n=n, offs=", ".join(str(o) for o, _ in prods),
                       bytes=", ".join(str(b) for _, b in prods), body=body, ch=ch, grid=grid)
t = t.replace('#define KC_PROF(i)', helper + '\n#define KC_PROF(i)', 1)
capture = "    KC_CUDA(cudaStreamBeginCapture(ctx->stream"
t = t.replace(capture, "    lab_init();\n" + capture)
# product i forks the prefetch of product i + AHEAD just before its own call
parts = re.split(r"(?=if \(\(rc = kc_lt_matmul\()", t)
assert len(parts) == n + 1, (len(parts), n)
t = parts[0] + "".join("lab_pf(s, w, %d, %d);\n        %s" % (i, i + ahead, p)
                       for i, p in enumerate(parts[1:]))
# the first AHEAD products at the enqueue's start (event n), the join before its return
e = t.index("static int %s_enqueue(" % name)
locals_end = r"    int rc;\n(    KC_CUDA\(cudaMemsetAsync\(status, 0, sizeof\(int\), s\)\);\n)?"
start = e + re.search(locals_end, t[e:]).end()
first = "".join("    lab_pf(s, w, %d, %d);\n" % (n, j) for j in range(min(ahead, n)))
t = t[:start] + first + t[start:]
r = t.index("\n    return KC_OK;\n}", e)
t = t[:r] + "\n    lab_join(s);" + t[r:]
open(out, "w").write(t)
print(name, n, "products", sum(b for o, b in prods if o >= 0) / 1e6, "MB of weights")
