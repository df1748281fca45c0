#!/usr/bin/env python3
"""The GPU benchmark, run on the GPU machine (python3 with torch + torchvision, nvcc): builds
each Kiln CUDA bundle that bench/gpu/prepare.py wrote (nvcc -O3 -arch=sm_90a, as a shared library
with a small generated shim), and times Kiln (NAME_cuda_run on the context's own device buffers:
one CUDA-graph launch), PyTorch eager and torch.compile on the same models and weights
(models.py, BatchNorm statistics from BENCHDIR/bn_stats.npz), FP32 without TF32 and FP16, with
CUDA events after warm-up, medians; every Kiln row is timed before any PyTorch model runs in
the process (a batch-1 graph reads ~8 % slower after PyTorch's heavy GPU work earlier in the
process; notes.md, bench/gpu/b1_bias.py). Then, per Kiln row, where the time goes: NAME_cuda_profile
(one eager run with an event pair per node) 3 times, per-node medians summed by kind and op type,
the ten most expensive nodes with their flops and bytes (NAME_profile_flops/_bytes; report.py
rates them against the GPU's ceilings, measured after Kiln's timings: an 8192^3 fp16
product and a 1 GiB device copy), and the gap to the graph replay (for models with a second
convolution lowering, prepare.py's CONV_VARIANTS, also each convolution node's time, to
compare the lowerings layer by layer; those rows time Kiln alone). Also checks Kiln's outputs against PyTorch FP32 (fp16: cosine
and top-1 agreement over 100 random inputs). A row that fails or runs out of time records why
and the run goes on. Results go to OUTDIR/results.json (merged with an existing one) and a
table to stdout.
torch.compile: reduce-overhead at batch 1; at batch 32/256 each mode of --large-mode (a comma
list) is compiled and timed in the call, and the row keeps the fastest as the peer (the others
in compile_modes, a failure's reason in compile_err).
--tune: each Kiln row is timed untuned, then with NAME_cuda_tune's cuBLASLt algorithms, then
both again (the untuned choice reloaded from a cache saved before tuning): untuned_ms and
tuned_ms hold the four medians, kiln_ms the better tuned one, "tuned": true.
usage: python3 bench/gpu/run.py BENCHDIR OUTDIR [--deadline S] [--skip-kiln] [--skip-eager]
           [--compile none|b1|large|all] [--large-mode MODE[,MODE..]]
           [--models M,..] [--compile-keys KEY,..] [--tune]"""
import argparse
import concurrent.futures as cf
import ctypes
import lzma
import json
import os
import pathlib
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import models  # noqa: E402

WARMUP, ITERS = 20, 100               # per measurement: warm-up runs, timed runs (median)
ITERS_LARGE = 30                      # batch 256: fewer timed runs (each is long)
ACC_INPUTS = 100                      # fp16 accuracy: 100 inputs through the batch-32 bundles
EXTRA_NVCC = os.environ.get("BENCH_NVCC_FLAGS", "").split()  # e.g. -DKC_PDL=1, for an A/B
ACC_BATCH = int(os.environ.get("BENCH_ACC_BATCH", "32"))  # (another batch's, when it alone is)
COMPILE_BUDGET_S = 75                 # a torch.compile row is skipped if less than this is left
PROFILE_RUNS = 3                      # NAME_cuda_profile runs per row (per-node median)
TOP_OPS, TOP_NODES = 8, 10            # op types and nodes kept per row in results.json
PROFILE_KINDS = ("cublaslt", "kernel", "generic", "none")  # none: launches nothing, 0 ms
T0 = time.time()


def shim_source(name, header):
    """A C ABI over one bundle: init from a weights file, device I/O pointers, timed runs."""
    def fields(kind):
        m = re.search(r"typedef struct %s_%s \{(.*?)\}" % (name, kind), header, re.S)
        return re.findall(r"\*\s*(\w+);", m.group(1))
    ins, outs = fields("inputs"), fields("outputs")
    count = re.search(r"#define\s+\w+_PROFILE_NODES\s+(\d+)", header)   # NAME upper-cased
    if count and re.search(r"\b%s_cuda_profile\s*\(" % name, header):   # per-node profile
        prof = f"""int kb_prof_n(void) {{ return {int(count.group(1))}; }}
const char *kb_prof_node(int i) {{ return {name}_profile_nodes[i]; }}
const char *kb_prof_kind(int i) {{ return {name}_profile_kinds[i]; }}
int kb_profile(void *ctx, float *ms) {{ return {name}_cuda_profile(({name}_cuda_ctx *)ctx, ms); }}
"""
    else:                                   # an older bundle: no profile
        prof = """int kb_prof_n(void) { return -1; }
const char *kb_prof_node(int i) { (void)i; return ""; }
const char *kb_prof_kind(int i) { (void)i; return ""; }
int kb_profile(void *ctx, float *ms) { (void)ctx; (void)ms; return -1; }
"""
    if re.search(r"\b%s_profile_flops\[" % name, header):   # per-node flops and bytes
        prof += f"""double kb_prof_flops(int i) {{ return {name}_profile_flops[i]; }}
double kb_prof_bytes(int i) {{ return {name}_profile_bytes[i]; }}
"""
    else:
        prof += """double kb_prof_flops(int i) { (void)i; return -1.0; }
double kb_prof_bytes(int i) { (void)i; return -1.0; }
"""
    if re.search(r"\b%s_cuda_tune\s*\(" % name, header):   # cuBLASLt algorithm tuning
        prof += f"""int kb_tune(void *ctx) {{ return {name}_cuda_tune(({name}_cuda_ctx *)ctx); }}
size_t kb_tuning(void *ctx, void *buf, size_t n) {{ return {name}_cuda_tuning(({name}_cuda_ctx *)ctx, buf, n); }}
int kb_load_tuning(void *ctx, const void *buf, size_t n) {{ return {name}_cuda_load_tuning(({name}_cuda_ctx *)ctx, buf, n); }}
"""
    else:
        prof += """int kb_tune(void *ctx) { (void)ctx; return -1; }
size_t kb_tuning(void *ctx, void *buf, size_t n) { (void)ctx; (void)buf; (void)n; return 0; }
int kb_load_tuning(void *ctx, const void *buf, size_t n) { (void)ctx; (void)buf; (void)n; return -1; }
"""
    set_in = "".join(f"    p[{i}] = (void *)in.{f};\n" for i, f in enumerate(ins))
    set_out = "".join(f"    p[{len(ins) + i}] = (void *)out.{f};\n" for i, f in enumerate(outs))
    return f"""#include <stdio.h>
#include <stdlib.h>
#include "{name}.h"
extern "C" {{
void *kb_init(const char *path, int *st) {{
    FILE *f = fopen(path, "rb"); if (!f) {{ *st = -1; return NULL; }}
    fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
    void *buf = malloc(n > 0 ? n : 1);
    if (fread(buf, 1, n, f) != (size_t)n) {{ fclose(f); free(buf); *st = -2; return NULL; }}
    fclose(f);
    void *ctx = {name}_cuda_init(buf, st); free(buf); return ctx;
}}
int kb_nio(void) {{ return {len(ins) + len(outs)}; }}
void kb_ptrs(void *ctx, void **p) {{
    {name}_inputs in; {name}_outputs out; {name}_cuda_io(({name}_cuda_ctx *)ctx, &in, &out);
{set_in}{set_out}}}
int kb_copy(void *dst, const void *src, size_t n) {{ return (int)cudaMemcpy(dst, src, n, cudaMemcpyDefault); }}
int kb_time(void *ctx, int warm, int iters, float *ms) {{
    {name}_inputs in; {name}_outputs out; {name}_cuda_io(({name}_cuda_ctx *)ctx, &in, &out);
    cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    int rc = 0;
    for (int i = 0; i < warm && !rc; i++) rc = {name}_cuda_run(({name}_cuda_ctx *)ctx, &in, &out, s);
    cudaEvent_t *ev = (cudaEvent_t *)malloc(sizeof(cudaEvent_t) * 2 * iters);
    for (int i = 0; i < 2 * iters; i++) cudaEventCreate(&ev[i]);
    cudaStreamSynchronize(s);
    for (int i = 0; i < iters && !rc; i++) {{
        cudaEventRecord(ev[2 * i], s);
        rc = {name}_cuda_run(({name}_cuda_ctx *)ctx, &in, &out, s);
        cudaEventRecord(ev[2 * i + 1], s);
    }}
    if (cudaStreamSynchronize(s) != cudaSuccess && !rc) rc = 100;
    for (int i = 0; i < iters && !rc; i++) cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]);
    for (int i = 0; i < 2 * iters; i++) cudaEventDestroy(ev[i]);
    free(ev); cudaStreamDestroy(s);
    return rc ? rc : {name}_cuda_status(({name}_cuda_ctx *)ctx);
}}
int kb_run(void *ctx) {{
    {name}_inputs in; {name}_outputs out; {name}_cuda_io(({name}_cuda_ctx *)ctx, &in, &out);
    int rc = {name}_cuda_run(({name}_cuda_ctx *)ctx, &in, &out, 0);
    if (!rc) rc = (int)cudaDeviceSynchronize();
    return rc ? rc : {name}_cuda_status(({name}_cuda_ctx *)ctx);
}}
void kb_free(void *ctx) {{ {name}_cuda_free(({name}_cuda_ctx *)ctx); }}
{prof}}}
"""


def build_bundle(bench, work, key, e, nvcc, arch):
    src, d = bench / e["dir"], work / key
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(src, d)
    name = e["name"]
    if (d / "libkb.so").exists():          # prebuilt by prepare.py (nvcc there too)
        return key, 0, "prebuilt", 0.0
    (d / "kb_shim.cu").write_text(shim_source(name, (d / f"{name}.h").read_text()))
    t = time.time()
    r = subprocess.run([nvcc, "-O3", f"-arch={arch}", *EXTRA_NVCC, "-shared", "-Xcompiler", "-fPIC",
                        "-o", str(d / "libkb.so"), str(d / f"{name}.cu"), str(d / "kb_shim.cu"),
                        "-lcublasLt", "-lcudart"], capture_output=True, text=True)
    return key, r.returncode, r.stderr[-600:], time.time() - t


def prebuild(bench, nvcc, arch):
    """Builds every bundle's libkb.so inside BENCHDIR (run where prepare.py runs, if it has
    nvcc: saves the GPU machine's time; the libraries are small)."""
    index = json.loads((bench / "index.json").read_text())
    keys = [k for k in sorted(index) if "dir" in index[k]]
    tmp = pathlib.Path("/tmp/kiln-gpu-bench-prebuild")
    with cf.ThreadPoolExecutor(8) as ex:
        for key, rc, err, s in ex.map(
                lambda k: build_bundle(bench, tmp, k, index[k], nvcc, arch), keys):
            print(f"nvcc {key}: {'ok' if rc == 0 else 'FAIL ' + err} {s:.0f}s", flush=True)
            if rc == 0 and (tmp / key / "libkb.so").exists():
                shutil.copy(tmp / key / "libkb.so", bench / index[key]["dir"] / "libkb.so")


def bundle_note(bench, e):
    cu = (bench / e["dir"] / f"{e['name']}.cu").read_text()
    nodes = re.search(r"\* (\d+) nodes;", cu)
    gen = re.search(r"(\d+) node\(s\) run the C backend's code", cu)
    return (f"{nodes.group(1) if nodes else '?'} nodes, "
            f"{gen.group(1) if gen else 0} on the 1-thread generic path")


class Kiln:
    def __init__(self, lib_path, weights):
        self.lib = ctypes.CDLL(str(lib_path))
        self.lib.kb_init.restype = ctypes.c_void_p
        self.lib.kb_init.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
        for f in ("kb_ptrs", "kb_time", "kb_run", "kb_free"):
            getattr(self.lib, f).argtypes = [ctypes.c_void_p] + \
                {"kb_ptrs": [ctypes.POINTER(ctypes.c_void_p)],
                 "kb_time": [ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_float)],
                 "kb_run": [], "kb_free": []}[f]
        self.lib.kb_copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        self.lib.kb_prof_n.restype = ctypes.c_int
        self.lib.kb_prof_n.argtypes = []
        for f in ("kb_prof_node", "kb_prof_kind"):
            getattr(self.lib, f).restype = ctypes.c_char_p
            getattr(self.lib, f).argtypes = [ctypes.c_int]
        for f in ("kb_prof_flops", "kb_prof_bytes"):
            getattr(self.lib, f).restype = ctypes.c_double
            getattr(self.lib, f).argtypes = [ctypes.c_int]
        self.lib.kb_profile.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float)]
        self.lib.kb_tune.argtypes = [ctypes.c_void_p]
        self.lib.kb_tuning.restype = ctypes.c_size_t
        self.lib.kb_tuning.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        self.lib.kb_load_tuning.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        st = ctypes.c_int(0)
        self.ctx = self.lib.kb_init(str(weights).encode(), ctypes.byref(st))
        if not self.ctx:
            raise RuntimeError(f"init failed, status {st.value}")
        n = self.lib.kb_nio()
        arr = (ctypes.c_void_p * n)()
        self.lib.kb_ptrs(self.ctx, arr)
        self.ptrs = list(arr)

    def set_inputs(self, xs):
        """Copies xs to the bundle's input buffers. Kiln's bundles take float32 inputs in every
        precision (--precision fp16 changes only the storage inside), so float tensors go in
        as float32 whatever the caller gave; integer ones (BERT's ids and mask) as they are."""
        for p, x in zip(self.ptrs, xs):
            if x.is_floating_point():
                x = x.float()
            x = x.contiguous()
            rc = self.lib.kb_copy(p, x.data_ptr(), x.numel() * x.element_size())
            if rc:
                raise RuntimeError(f"copy in: cuda error {rc}")

    def run(self, out_like):
        rc = self.lib.kb_run(self.ctx)
        if rc:
            raise RuntimeError(f"run: status {rc}")
        y = torch.empty_like(out_like)
        self.lib.kb_copy(y.data_ptr(), self.ptrs[-1], y.numel() * y.element_size())
        return y

    def time(self, iters):
        ms = (ctypes.c_float * iters)()
        rc = self.lib.kb_time(self.ctx, WARMUP, iters, ms)
        if rc:
            raise RuntimeError(f"timed run: status {rc}")
        return statistics.median(list(ms))

    def profile(self, runs):
        """NAME_cuda_profile run `runs` times: (node strings, kinds, per-node median ms,
        per-node flops and bytes: None for a bundle without them); raises RuntimeError when
        the bundle has no profile or a run fails."""
        n = self.lib.kb_prof_n()
        if n < 0:
            raise RuntimeError("the bundle has no NAME_cuda_profile")
        nodes = [self.lib.kb_prof_node(i).decode(errors="replace") for i in range(n)]
        kinds = [self.lib.kb_prof_kind(i).decode(errors="replace") for i in range(n)]
        per_run = []
        for _ in range(runs):
            ms = (ctypes.c_float * max(n, 1))()
            rc = self.lib.kb_profile(self.ctx, ms)
            if rc:
                raise RuntimeError(f"profile: status {rc}")
            per_run.append(list(ms)[:n])
        med = [statistics.median(r[i] for r in per_run) for i in range(n)]
        flops = [self.lib.kb_prof_flops(i) for i in range(n)]
        nbytes = [self.lib.kb_prof_bytes(i) for i in range(n)]
        if n and flops[0] < 0:
            flops = nbytes = None
        return nodes, kinds, med, flops, nbytes

    def tune(self):
        """NAME_cuda_tune; raises RuntimeError when the bundle has none or it fails."""
        rc = self.lib.kb_tune(self.ctx)
        if rc:
            raise RuntimeError(f"tune: status {rc}")

    def tuning(self):
        """The context's tuning cache (NAME_cuda_tuning) as bytes."""
        n = self.lib.kb_tuning(self.ctx, None, 0)
        buf = ctypes.create_string_buffer(max(n, 1))
        if n == 0 or self.lib.kb_tuning(self.ctx, buf, n) != n:
            raise RuntimeError("tuning: no cache")
        return buf.raw[:n]

    def load_tuning(self, data):
        rc = self.lib.kb_load_tuning(self.ctx, data, len(data))
        if rc:
            raise RuntimeError(f"load_tuning: status {rc}")

    def free(self):
        self.lib.kb_free(self.ctx)


def profile_summary(nodes, kinds, med, flops, nbytes, kiln_ms, conv_nodes=False):
    """The row's "where the time goes" fields from per-node medians (ms); the TOP_NODES most
    expensive nodes as [node, kind, ms, flops, bytes] (the last two None for a bundle without
    them); conv_nodes: also every convolution node's [node, kind, ms]."""
    by_kind = {k: 0.0 for k in PROFILE_KINDS}
    by_op = {}
    for node, kind, ms in zip(nodes, kinds, med):
        by_kind[kind] = by_kind.get(kind, 0.0) + ms
        op = node.split(" ", 1)[0] or "?"
        by_op[op] = by_op.get(op, 0.0) + ms
    total = sum(med)
    top_ops = sorted(by_op.items(), key=lambda kv: -kv[1])[:TOP_OPS]
    flops = flops or [None] * len(nodes)
    nbytes = nbytes or [None] * len(nodes)
    top_nodes = sorted(zip(nodes, kinds, med, flops, nbytes), key=lambda t: -t[2])[:TOP_NODES]
    out = {"prof_nodes": len(nodes), "prof_total_ms": total, "prof_by_kind": by_kind,
           "prof_by_op": [[op, ms] for op, ms in top_ops],
           "prof_top_nodes": [list(t) for t in top_nodes]}
    if kiln_ms is not None:
        out["gap_ms"] = kiln_ms - total    # < 0: the eager profile is slower than the graph
    if conv_nodes:
        out["prof_conv_nodes"] = [[nd, kd, ms] for nd, kd, ms in zip(nodes, kinds, med)
                                  if nd.split(" ", 1)[0] in ("Conv", "FusedConv")]
    return out


class Deadline(Exception):
    pass


def _alarm(signum, frame):
    raise Deadline()


def run_with_alarm(seconds, fn):
    """fn() in the main thread, interrupted with Deadline after `seconds` (SIGALRM)."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(max(1, int(seconds)))
    try:
        return fn()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def time_torch(fn, args, iters):
    with torch.inference_mode():
        for _ in range(WARMUP):
            fn(*args)
        torch.cuda.synchronize()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(iters)]
        for a, b in ev:
            a.record()
            fn(*args)
            b.record()
        torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ev)


_CPU, _GPU = {}, {}
BN_STATS = {}   # BENCHDIR/bn_stats.npz: the BatchNorm statistics prepare.py measured


def torch_model(name, prec):
    """The model on the GPU in the precision asked; the CPU float32 build (slow for BERT: the
    weight formula runs in numpy) is kept for every model, GPU copies for the current model only."""
    import copy
    if name not in _CPU:
        _CPU[name] = models.build(name, BN_STATS or None)
    if (name, prec) not in _GPU:
        for k in [k for k in _GPU if k[0] != name]:
            del _GPU[k]
        torch.cuda.empty_cache()
        m = copy.deepcopy(_CPU[name]).cuda()
        _GPU[(name, prec)] = m.half() if prec == "fp16" else m
    return _GPU[(name, prec)]


def torch_inputs(name, batch, prec, seed=0):
    xs = models.inputs(name, batch, seed, "cuda")
    return tuple(x.half() if prec == "fp16" and x.is_floating_point() else x for x in xs)


def torch_inputs_from(xs):
    """xs as PyTorch's fp16 model takes them (float inputs in half)."""
    return tuple(x.half() if x.is_floating_point() else x for x in xs)


def agreement(y, r):
    """Kiln's (or a peer's) outputs y against the reference r, per row: the minimum cosine,
    top-1 agreement and the relative L2 error of the whole."""
    cos = [cosine(y[i], r[i]) for i in range(y.shape[0])]
    return {"n": int(y.shape[0]), "min_cosine": min(cos),
            "top1_agree": float((y.argmax(1) == r.argmax(1)).float().mean()),
            "max_rel_err": float((y - r).norm() / r.norm())}


def cosine(a, b):
    a, b = a.double().flatten(), b.double().flatten()
    return float(a @ b / (a.norm() * b.norm() + 1e-300))


def ceilings():
    """The GPU's measured ceilings, for the profile's achieved rates: the fp16 tensor-core
    rate (an 8192^3 half product, fp32 accumulation as Kiln's: TF32 off does not touch half)
    and the memory bandwidth (a 1 GiB device-to-device copy, bytes read plus written);
    medians of 10 after 3 warm-ups."""
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.half)
    b = torch.randn(n, n, device="cuda", dtype=torch.half)
    mm = time_torch(lambda: torch.matmul(a, b), (), 10)
    del a, b
    src = torch.empty(1 << 29, device="cuda", dtype=torch.half)   # 1 GiB
    dst = torch.empty_like(src)
    cp = time_torch(lambda: dst.copy_(src), (), 10)
    del src, dst
    torch.cuda.empty_cache()
    return {"fp16_tflops": 2 * n ** 3 / (mm * 1e-3) / 1e12,
            "dram_tbs": 2 * (1 << 30) / (cp * 1e-3) / 1e12}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench")
    ap.add_argument("out")
    ap.add_argument("--deadline", type=float, default=500)
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--skip-kiln", action="store_true")
    ap.add_argument("--skip-eager", action="store_true")
    ap.add_argument("--compile", default="all", choices=["none", "b1", "large", "all"])
    ap.add_argument("--large-mode", default="default",
                    help="torch.compile modes at batch 32 and 256, comma list (default, "
                         "reduce-overhead, max-autotune, max-autotune-no-cudagraphs; batch 1: "
                         "reduce-overhead); with several, each is timed and the row keeps the "
                         "fastest as the peer, the others in compile_modes")
    ap.add_argument("--models", default=",".join(models.MODELS))
    ap.add_argument("--compile-keys", default="",
                    help="comma list: torch.compile only these rows (e.g. resnet50_b256_fp16)")
    ap.add_argument("--prebuild", action="store_true", help="only build the libraries")
    ap.add_argument("--tune", action="store_true",
                    help="Kiln rows: time the untuned graph, NAME_cuda_tune, time the tuned one, "
                         "then both again (the untuned choice reloaded from a cache); kiln_ms "
                         "is the tuned time")
    a = ap.parse_args()
    if a.prebuild:
        prebuild(pathlib.Path(a.bench), shutil.which("nvcc") or "nvcc", a.arch)
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    bench, out = pathlib.Path(a.bench).resolve(), pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    res_path = out / "results.json"
    prev = bench / "results.json"          # an earlier call's results, carried back: merged
    res = json.loads(prev.read_text()) if prev.exists() else {"rows": {}, "accuracy": {}}
    res["device"] = torch.cuda.get_device_name(0)
    res["torch"] = torch.__version__
    BN_STATS.update(models.load_stats(bench / "bn_stats.npz"))
    res["bn_stats"] = "calibrated" if BN_STATS else "identity (no bn_stats.npz)"
    if not BN_STATS:
        print("warning: no BENCHDIR/bn_stats.npz: PyTorch runs identity BatchNorm statistics; "
              "rerun bench/gpu/prepare.py", flush=True)

    def save():
        res_path.write_text(json.dumps(res, indent=1, sort_keys=True))

    index = json.loads((bench / "index.json").read_text())
    want = a.models.split(",")
    keys = [k for k in sorted(index) if "dir" in index[k] and index[k]["model"] in want]
    work = pathlib.Path("/tmp/kiln-gpu-bench")
    work.mkdir(exist_ok=True)
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    libs = {}
    if not a.skip_kiln:
        wdir = work / "weights"
        wdir.mkdir(exist_ok=True)
        for gz in sorted({index[k]["weights"] for k in keys}):
            with lzma.open(bench / "weights" / gz) as f, open(wdir / gz[:-3], "wb") as g:
                shutil.copyfileobj(f, g, 1 << 24)
        with cf.ThreadPoolExecutor(16) as ex:
            for key, rc, err, s in ex.map(
                    lambda k: build_bundle(bench, work, k, index[k], nvcc, a.arch), keys):
                print(f"nvcc {key}: {'ok' if rc == 0 else 'FAIL'} {s:.0f}s {err if rc else ''}",
                      flush=True)
                if rc == 0:
                    libs[key] = work / key / "libkb.so"
        print(f"[{time.time() - T0:.0f}s] bundles built", flush=True)

    order = sorted(keys, key=lambda k: (want.index(index[k]["model"]), index[k]["batch"],
                                        index[k]["precision"], index[k].get("conv", "")))
    lowered = {index[k]["model"] for k in keys if index[k].get("conv", "auto") != "auto"}
    # Kiln's timings first, every row, then PyTorch eager, Kiln's profile and the accuracy
    # (batch-32 bundles): PyTorch's heavy GPU work earlier in the process can leave Kiln's
    # batch-1 graphs about 8 % slower for the rest of it (notes.md, bench/gpu/b1_bias.py)
    rows_todo = order if not (a.skip_kiln and a.skip_eager) else []
    kilns = {}
    for key in rows_todo:
        e = index[key]
        name, b, prec = e["model"], e["batch"], e["precision"]
        row = res["rows"].setdefault(key, {"model": name, "batch": b, "precision": prec})
        row["conv"] = e.get("conv", "auto")
        row["note"] = bundle_note(bench, e)
        if key not in libs:
            continue
        iters = ITERS_LARGE if b >= 256 else ITERS
        try:
            k = Kiln(libs[key], work / "weights" / e["weights"][:-3])
            kilns[key] = k
            k.set_inputs(models.inputs(name, b, 0, "cuda"))
            row["kiln_ms"] = k.time(iters)
            for f in ("tuned", "tune_s", "untuned_ms", "tuned_ms", "kiln_err"):
                row.pop(f, None)
            if a.tune and not k.lib.kb_tuning(k.ctx, None, 0):
                row["tuned"] = False     # a bundle from before NAME_cuda_tune
            elif a.tune:   # A/B in this call: untuned, tuned, untuned again, tuned again
                plain = k.tuning()       # no site set: the heuristic's first everywhere
                t = time.time()
                k.tune()
                row["tune_s"] = round(time.time() - t, 2)
                tuned = k.tuning()
                row["untuned_ms"], row["tuned_ms"] = [row["kiln_ms"]], [k.time(iters)]
                k.load_tuning(plain)
                row["untuned_ms"].append(k.time(iters))
                k.load_tuning(tuned)
                row["tuned_ms"].append(k.time(iters))
                row["kiln_ms"] = min(row["tuned_ms"])
                row["tuned"] = True
        except Exception as ex:  # noqa: BLE001
            row["kiln_err"] = str(ex)[:300]
        print(f"[{time.time() - T0:.0f}s] {key}: Kiln {row.get('kiln_ms')}", flush=True)
    if not a.skip_kiln:   # after Kiln's timings: its 8192^3 product is PyTorch's heavy work
        res["ceilings"] = ceilings()
        print(f"ceilings: {res['ceilings']}", flush=True)
    for key in rows_todo:
        e = index[key]
        name, b, prec = e["model"], e["batch"], e["precision"]
        conv = e.get("conv", "auto")
        row = res["rows"][key]
        iters = ITERS_LARGE if b >= 256 else ITERS
        m = torch_model(name, prec)
        if not a.skip_eager and conv == "auto":   # a variant's PyTorch row is the base row's
            try:
                row["eager_ms"] = time_torch(m, torch_inputs(name, b, prec), iters)
            except Exception as ex:  # noqa: BLE001
                row["eager_err"] = str(ex)[:200]
        k = kilns.pop(key, None)
        if k is not None:
            try:
                for f in [f for f in row if f.startswith("prof_")] + ["gap_ms"]:
                    row.pop(f, None)
                try:
                    row.update(profile_summary(*k.profile(PROFILE_RUNS), row["kiln_ms"],
                                               name in lowered))
                    row["ceilings"] = res["ceilings"]   # this call's: the rates' reference
                except Exception as ex:  # noqa: BLE001
                    row["prof_err"] = str(ex)[:200]
                if b == ACC_BATCH or b == 1:
                    m32 = torch_model(name, "fp32")
                    ys, refs, peers = [], [], []
                    n_runs = -(-ACC_INPUTS // b) if b == ACC_BATCH else 1
                    with torch.inference_mode():
                        for s in range(n_runs):
                            xs = models.inputs(name, b, 1000 + s, "cuda")
                            k.set_inputs(xs)
                            r = m32(*xs).float()
                            ys.append(k.run(r))
                            refs.append(r)
                            if prec == "fp16":  # the peer: PyTorch's own fp16 on these inputs
                                peers.append(m(*torch_inputs_from(xs)).float())
                    y, r = torch.cat(ys)[:ACC_INPUTS], torch.cat(refs)[:ACC_INPUTS]
                    acc = agreement(y, r)
                    if peers:
                        pa = agreement(torch.cat(peers)[:ACC_INPUTS], r)
                        acc.update({"torch_fp16_" + f: v for f, v in pa.items() if f != "n"})
                    res["accuracy"][key] = acc
            except Exception as ex:  # noqa: BLE001
                row["kiln_err"] = str(ex)[:300]
            k.free()
        print(f"[{time.time() - T0:.0f}s] {key}: {row}", flush=True)
        save()

    # torch.compile rows, while the deadline allows
    if a.compile != "none":
        import torch._dynamo as dynamo
        # batch 1 first (the latency rows), then 32, then 256; a later call with
        # results.json in BENCHDIR runs only the rows still missing
        for key in sorted(order, key=lambda k: (index[k]["batch"], order.index(k))):
            e = index[key]
            name, b, prec = e["model"], e["batch"], e["precision"]
            if (b == 1) != (a.compile in ("b1", "all")) and a.compile != "all":
                continue
            if e.get("conv", "auto") != "auto":
                continue
            if a.compile_keys and key not in a.compile_keys.split(","):
                continue
            row = res["rows"][key] if key in res["rows"] else res["rows"].setdefault(
                key, {"model": name, "batch": b, "precision": prec})
            modes = ["reduce-overhead"] if b == 1 else a.large_mode.split(",")
            asked = bool(a.compile_keys)   # rows named in --compile-keys are measured again
            if not asked and (all(m in row.get("compile_modes", {}) for m in modes) or
                              (len(modes) == 1 and row.get("compile_mode") == modes[0])):
                continue
            row["compile_modes"] = {}   # this call's modes: the peer is measured in this call
            for mode in modes:
                left = a.deadline - (time.time() - T0)
                if left < COMPILE_BUDGET_S:
                    row["compile_modes"][mode] = f"not run ({mode}): {left:.0f}s left of the call"
                    continue
                t = time.time()

                def compile_and_time():
                    dynamo.reset()
                    m = torch_model(name, prec)
                    c = torch.compile(m, mode=mode, dynamic=False)
                    with torch.inference_mode():
                        c(*torch_inputs(name, b, prec))
                        c(*torch_inputs(name, b, prec))
                    torch.cuda.synchronize()
                    compile_s = time.time() - t
                    return time_torch(c, torch_inputs(name, b, prec),
                                      ITERS_LARGE if b >= 256 else ITERS), compile_s
                err = None
                try:
                    # the alarm leaves a few seconds of the call for saving the results
                    ms, compile_s = run_with_alarm(left - 10, compile_and_time)
                    row["compile_modes"][mode] = ms
                    row.setdefault("compile_s_modes", {})[mode] = compile_s
                except Deadline:
                    err = f"timed out ({mode}): {time.time() - t:.0f}s, the call's deadline"
                except Exception as ex:  # noqa: BLE001
                    if "Deadline" in f"{type(ex).__name__}: {ex}":   # the alarm, via Inductor
                        err = f"timed out ({mode}): {time.time() - t:.0f}s, the call's deadline"
                    else:
                        err = f"failed ({mode}): {type(ex).__name__}: {str(ex)[:200]}"
                if err:
                    row["compile_modes"][mode] = err
                    try:
                        dynamo.reset()
                        torch.cuda.synchronize()
                        torch.cuda.empty_cache()
                    except Exception:  # noqa: BLE001
                        pass
            # the peer: the fastest mode of this call; an earlier call's row stays only when
            # none landed, with this call's reasons
            got = {m: v for m, v in row["compile_modes"].items() if not isinstance(v, str)}
            errs = [v for v in row["compile_modes"].values() if isinstance(v, str)]
            if got:
                best = min(got, key=got.get)
                row.update(compile_ms=got[best], compile_mode=best,
                           compile_s=row["compile_s_modes"][best])
                row.pop("compile_err", None)
            if errs:
                row["compile_err"] = "; ".join(errs)
            print(f"[{time.time() - T0:.0f}s] compile {key}: {row}", flush=True)
            save()
    save()
    sys.path.insert(0, str(HERE))
    import report
    print(report.table(res))


if __name__ == "__main__":
    main()
