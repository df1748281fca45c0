"""The CPU benchmark's driver (bench/cpu/run.sh runs it in the bench venv): per model, one
set of seeded inputs, then on this machine in one run
  - the Kiln C bundle: `kiln compile --workers ALL_CORES`, its generated CMakeLists.txt
    built Release with -march=native, and a small C harness (written here) that loads the
    weights and inputs, runs the model WARMUP times, then times each of REPS calls alone with
    CLOCK_MONOTONIC: NAME_run on one thread, then NAME_run_parallel through
    examples/parallel's pthreads pool (kiln_pool) of ALL_CORES threads (the pool started
    before the timed calls; its outputs must be NAME_run's bytes);
  - ONNX Runtime (CPU execution provider, all graph optimizations, intra_op_num_threads 1,
    then all cores);
  - OpenVINO (CPU, f32 inference precision, latency hint, INFERENCE_NUM_THREADS 1, then all
    cores; each in a child process of its own, whose threads end with it);
each with WARMUP untimed runs and REPS timed ones (median and minimum). Every timing on
several threads runs between two probes of bench/cpu/vcpu_probe.c (row tN.vcpus: per side,
"one L3", "two L3s" or "moved", and the two round trips in ns): the host moves the two vCPUs
between one L3 and two every 20-60 s, and every two-thread time follows. The bundle's output
is compared with ONNX Runtime's (max |diff| / max |ref|). GFLOP = 2 x the multiply-accumulates
of `kiln inspect --json`. The machine's one-core peak is measured by bench/cpu/peak.c (FMA
chains at the widest vector the compiler targets with -march=native). A model that Kiln
cannot compile, build or run gets a row that says why. Writes one JSON (bench/cpu/report.py
turns it into docs/cpu-bench.md).

With --kiln-variant NAME=FLAGS (repeatable) the run also builds and times the bundle that
`kiln compile FLAGS` makes (row key kiln_NAME), right after the default one: e.g.
--kiln-variant no_winograd=--no-winograd for the 3x3 convolutions on the packed GEMM.

usage: python bench/cpu/bench.py [--kiln PATH] [--reps N] [--warmup N] [--models A,B]
                               [--out FILE] [--work DIR] [--kiln-variant NAME=FLAGS]...
"""
import argparse
import hashlib
import json
import multiprocessing
import os
import pathlib
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
import openvino as ov

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "models"))
import run as suite  # noqa: E402  (the model suite's runner: its export cache)

SYSTEM_PY = "/usr/bin/python3"   # Debian's, with PyTorch 1.13: the suite's exporter
SEED = 20261125
BERT_MASK_TOKENS = 128           # attention_mask: all tokens present

# name -> (where the export comes from: "suite" (tests/models/export.py) or "bench"
# (bench/cpu/export.py), what the row says about its weights)
MODELS = {
    "resnet50": ("suite", "torchvision ResNet-50, random weights"),
    "mobilenet_v2": ("suite", "torchvision MobileNetV2, random weights"),
    "efficientnet_b0": ("suite", "torchvision EfficientNet-B0, random weights"),
    "bert_base": ("bench", "BERT-base shapes (12 layers, 768, 12 heads), sequence 128, "
                           "random weights"),
    "vit_b16": ("bench", "torchvision ViT-B/16 (224x224), random weights"),
    "lstm": ("bench", "2-layer LSTM, input 256, hidden 512, sequence 64, random weights"),
    "bert_tiny": ("suite", "the model suite's BERT-tiny (2 layers, 64 wide, sequence 32)"),
}
DEFAULT = ["resnet50", "mobilenet_v2", "efficientnet_b0", "bert_base", "vit_b16", "lstm"]


def bench_cache():
    """The bench exports' cache folder, named by a hash of both export scripts."""
    h = hashlib.sha256()
    for f in (HERE / "export.py", ROOT / "tests" / "models" / "export.py"):
        h.update(f.read_bytes())
    base = pathlib.Path(os.environ.get("KILN_MODEL_CACHE",
                                       pathlib.Path.home() / ".cache" / "kiln" / "models"))
    return base / f"bench-cpu-{h.hexdigest()[:16]}"


def model_path(name, log):
    """The model's ONNX file, exported when the cache lacks it; None (and why) on failure."""
    src = MODELS[name][0]
    if src == "suite":
        cache, script = suite.cache_dir("export"), ROOT / "tests" / "models" / "export.py"
    else:
        cache, script = bench_cache(), HERE / "export.py"
    path = cache / f"{name}.onnx"
    if not path.exists():
        print(f"exporting {name} into {cache} ...", flush=True)
        r = subprocess.run([SYSTEM_PY, str(script), str(cache), name], capture_output=True,
                           text=True)
        (log / f"export_{name}.log").write_text(r.stdout + r.stderr)
        if r.returncode != 0 or not path.exists():
            return None, f"export failed (see {log}/export_{name}.log)"
    return path, ""


def make_inputs(model):
    """Seeded inputs by the model's declared input types and shapes."""
    rng = np.random.default_rng(SEED)
    feeds = {}
    for vi in model.graph.input:
        t = vi.type.tensor_type
        shape = [d.dim_value for d in t.shape.dim]
        if t.elem_type == onnx.TensorProto.FLOAT:
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
        elif t.elem_type == onnx.TensorProto.INT64 and "mask" in vi.name:
            m = np.zeros(shape, np.int64)
            m[..., :BERT_MASK_TOKENS] = 1
            feeds[vi.name] = m
        elif t.elem_type == onnx.TensorProto.INT64:
            feeds[vi.name] = rng.integers(0, 1000, shape).astype(np.int64)
        else:
            raise ValueError(f"input {vi.name}: element type {t.elem_type} not drawn here")
    return feeds


def stats(times_ms):
    return {"median_ms": statistics.median(times_ms), "min_ms": min(times_ms),
            "runs": len(times_ms)}


def time_calls(fn, reps, warmup):
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def run_ort(path, feeds, threads, reps, warmup):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    result = s.run(None, feeds)
    r = stats(time_calls(lambda: s.run(None, feeds), reps, warmup))
    return r, result


def run_ov(core, path, feeds, threads, reps, warmup):
    core = core or ov.Core()
    cfg = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
           "INFERENCE_PRECISION_HINT": "f32", "NUM_STREAMS": 1}
    cm = core.compile_model(str(path), "CPU", cfg)
    req = cm.create_infer_request()
    return stats(time_calls(lambda: req.infer(feeds), reps, warmup))


def run_ov_alone(path, feeds, threads, reps, warmup):
    """run_ov in a child process of its own. Inside one process OpenVINO's worker threads
    outlive its models, and while that process lived (idle, its model deleted) the runs after
    it lost a core: Kiln's EfficientNet-B0 on two threads took 14.2 ms beside it against
    7.5-8.1 ms alone, and ONNX Runtime's two-thread rows, timed after OpenVINO's one-thread
    ones, gained nothing from the second core. The child's threads end with it."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(run_ov, (None, str(path), feeds, threads, reps, warmup))


HARNESS = r"""/* bench harness, written by bench/cpu/bench.py: loads the weights and the inputs, runs
 * the model WARMUP times, then prints the milliseconds of each of REPS calls alone
 * (CLOCK_MONOTONIC), and writes the outputs of the last run. THREADS 1: NAME_run; more:
 * NAME_run_parallel on a kiln_pool of THREADS threads (examples/parallel).
 * usage: bench WEIGHTS REPS WARMUP THREADS IN... OUT... */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kiln_pool.h"
#include "net.h"

#ifndef NET_WORKERS /* a bundle of a kiln before NAME_run_parallel: one thread only */
#define NET_WORKERS 1
#define net_run_parallel(in, out, weights, arena, pfor, ctx) net_run(in, out, weights, arena)
#endif

static KilnPool pool;
static int threads;

static int run(const net_inputs *in, net_outputs *out, const void *weights, void *arena) {
    if (threads == 1) return net_run(in, out, weights, arena);
    return net_run_parallel(in, out, weights, arena, kiln_pool_for, &pool);
}

static void *block(size_t n) {
    void *p = aligned_alloc(64, ((n ? n : 1) + 63) / 64 * 64);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(2); }
    memset(p, 0, ((n ? n : 1) + 63) / 64 * 64);
    return p;
}

static void *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    long n;
    void *p;
    if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "%s: cannot read\n", path);
        exit(2);
    }
    p = block((size_t)n);
    if (n && fread(p, 1, (size_t)n, f) != (size_t)n) { fprintf(stderr, "%s: short\n", path); exit(2); }
    fclose(f);
    return p;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

int main(int argc, char **argv) {
    static const size_t out_bytes[] = {@OUT_BYTES@};
    void *ins[@N_IN@], *outs[@N_OUT@];
    int i, reps, warmup, rc;
    if (argc != 5 + @N_IN@ + @N_OUT@) { fprintf(stderr, "usage: bench WEIGHTS REPS WARMUP THREADS IN... OUT...\n"); return 2; }
    void *weights = slurp(argv[1]);
    void *arena = block(NET_ARENA_SIZE);
    reps = atoi(argv[2]);
    warmup = atoi(argv[3]);
    threads = atoi(argv[4]);
    if (threads < 1 || threads > NET_WORKERS || (threads > 1 && kiln_pool_init(&pool, threads) != 0)) { fprintf(stderr, "bad THREADS\n"); return 2; }
    argv++; /* the rest as before */
    for (i = 0; i < @N_IN@; i++) ins[i] = slurp(argv[4 + i]);
    for (i = 0; i < @N_OUT@; i++) outs[i] = block(out_bytes[i]);
    net_inputs in = {@IN_INIT@};
    net_outputs out = {@OUT_INIT@};
    for (i = 0; i < warmup; i++)
        if ((rc = run(&in, &out, weights, arena)) != NET_OK) { fprintf(stderr, "net_run: %d\n", rc); return 1; }
    for (i = 0; i < reps; i++) {
        double t0 = now_ms();
        rc = run(&in, &out, weights, arena);
        double t1 = now_ms();
        if (rc != NET_OK) { fprintf(stderr, "net_run: %d\n", rc); return 1; }
        printf("%.6f\n", t1 - t0);
    }
    for (i = 0; i < @N_OUT@; i++) {
        FILE *f = fopen(argv[4 + @N_IN@ + i], "wb");
        if (!f || fwrite(outs[i], 1, out_bytes[i], f) != out_bytes[i] || fclose(f) != 0) { fprintf(stderr, "cannot write\n"); return 2; }
    }
    if (threads > 1) kiln_pool_destroy(&pool);
    return 0;
}
"""

NP_OF_ONNX = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.INT64: np.int64,
              onnx.TensorProto.INT32: np.int32}


def output_specs(model):
    """(name, numpy dtype, shape) of each graph output, from the declared types."""
    out = []
    for vi in model.graph.output:
        t = vi.type.tensor_type
        out.append((vi.name, NP_OF_ONNX[t.elem_type], [d.dim_value for d in t.shape.dim]))
    return out


def tail(text, n=6):
    return " | ".join(text.strip().splitlines()[-n:])


def build_kiln(kiln, path, model, feeds, work, log, workers, flags=()):
    """Compiles (--workers, and kiln compile's extra flags) and builds the bundle; returns
    (harness argv prefix, None) or (None, why)."""
    b, bd = work / "bundle", work / "build"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    r = subprocess.run([kiln, "compile", str(path), "-o", str(b), "--name", "net", "--quiet",
                        *(["--workers", str(workers)] if workers > 1 else []), *flags],
                       capture_output=True, text=True)
    (log / f"{work.name}_compile.log").write_text(r.stdout + r.stderr)
    if r.returncode != 0:
        return None, "kiln compile failed: " + tail(r.stdout + r.stderr, 3)
    cflags = "-march=native"
    cmds = [["cmake", "-S", str(b), "-B", str(bd), "-DCMAKE_BUILD_TYPE=Release",
             f"-DCMAKE_C_FLAGS={cflags}"],
            ["cmake", "--build", str(bd), "-j2"]]
    outs = output_specs(model)
    sizes = [int(np.prod(s, dtype=np.int64)) * np.dtype(t).itemsize for _, t, s in outs]
    n_in, n_out = len(feeds), len(outs)
    src = (HARNESS.replace("@OUT_BYTES@", ", ".join(f"{s}u" for s in sizes))
           .replace("@N_IN@", str(n_in)).replace("@N_OUT@", str(n_out))
           .replace("@IN_INIT@", ", ".join(f"ins[{i}]" for i in range(n_in)))
           .replace("@OUT_INIT@", ", ".join(f"outs[{i}]" for i in range(n_out))))
    (work / "bench_main.c").write_text(src)
    pool = ROOT / "examples" / "parallel"
    cmds.append(["cc", "-std=c11", "-O3", cflags, "-pthread", f"-I{b}", f"-I{pool}",
                 str(work / "bench_main.c"), str(pool / "kiln_pool.c"), str(bd / "libnet.a"),
                 "-lm", "-o", str(work / "bench")])
    for c in cmds:
        r = subprocess.run(c, capture_output=True, text=True)
        with open(log / f"{work.name}_build.log", "a") as f:
            f.write(" ".join(c) + "\n" + r.stdout + r.stderr)
        if r.returncode != 0:
            return None, f"build failed ({c[0]}): " + tail(r.stdout + r.stderr, 3)
    return [str(work / "bench"), str(b / "net_weights.bin")], None


def run_kiln(argv0, feeds, outs, work, reps, warmup, threads):
    ins = []
    for i, (k, v) in enumerate(feeds.items()):
        p = work / f"in{i}.bin"
        np.ascontiguousarray(v).tofile(p)
        ins.append(str(p))
    out_files = [str(work / f"out{i}_t{threads}.bin") for i in range(len(outs))]
    r = subprocess.run(argv0 + [str(reps), str(warmup), str(threads)] + ins + out_files,
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, None, "run failed: " + tail(r.stderr, 3)
    times = [float(x) for x in r.stdout.split()]
    got = [np.fromfile(f, dtype=t).reshape(s) for f, (_, t, s) in zip(out_files, outs)]
    return stats(times), got, None


def measure_peak(log):
    """GFLOP/s of one core on FMA chains (bench/cpu/peak.c at -O3 -march=native)."""
    exe = log / "peak"
    r = subprocess.run(["cc", "-std=gnu11", "-O3", "-march=native", "-ffp-contract=fast",
                        str(HERE / "peak.c"), "-o", str(exe)], capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": tail(r.stderr)}
    r = subprocess.run([str(exe)], capture_output=True, text=True)
    return json.loads(r.stdout)


# bench/cpu/vcpu_probe.c's cache-line round trip between the two vCPUs splits at this: ~50 ns
# while the host runs them on one CCD (one L3), ~280-360 ns on two (each its own L3); every
# two-thread time follows (bench/cpu/parallel-profile.md, par4), so a two-thread row is only
# comparable with rows of the same placement
PROBE_SPLIT_NS = 150


def build_probe(log):
    """bench/cpu/vcpu_probe.c built into the log folder; None where it does not build."""
    exe = log / "vcpu_probe"
    r = subprocess.run(["cc", "-O2", "-pthread", str(HERE / "vcpu_probe.c"), "-o", str(exe)],
                       capture_output=True, text=True)
    return exe if r.returncode == 0 else None


def probe(exe):
    """The round trip in ns now (None without a probe or where it cannot pin)."""
    if exe is None or (os.cpu_count() or 1) < 2:
        return None
    r = subprocess.run([str(exe)], capture_output=True, text=True)
    return json.loads(r.stdout)["round_trip_ns"] if r.returncode == 0 else None


def placement(before, after):
    """A timing's vCPU placement from the probes taken just before and after it: "one L3",
    "two L3s", or "moved" when the host moved the vCPUs in between."""
    if before is None or after is None:
        return {"placement": "unknown", "probe_ns": [before, after]}
    lv = ["one L3" if ns < PROBE_SPLIT_NS else "two L3s" for ns in (before, after)]
    return {"placement": lv[0] if lv[0] == lv[1] else "moved", "probe_ns": [before, after]}


def probed(exe, fn):
    """fn() between two probes: (its result, the placement)."""
    before = probe(exe)
    out = fn()
    return out, placement(before, probe(exe))


def machine():
    info = {"cpu": platform.processor() or "", "cores": os.cpu_count()}
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
        m = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
        info["cpu"] = m.group(1) if m else info["cpu"]
        m = re.search(r"^cpu MHz\s*:\s*(.*)$", text, re.M)
        info["mhz_reported"] = float(m.group(1)) if m else None
        flags = re.search(r"^flags\s*:\s*(.*)$", text, re.M).group(1).split()
        info["isa"] = ("avx512f" if "avx512f" in flags else
                       "avx2+fma" if "avx2" in flags and "fma" in flags else "other")
        # the nominal peak at the reported clock: 2 FMA pipes x lanes x 2 flops per cycle;
        # AMD's family 25 (Zen 3, Zen 4) has 256-bit FMA pipes: Zen 4 runs a 512-bit FMA as
        # two halves, so its two pipes do 8 lanes a cycle each, AVX-512 or not
        lanes = {"avx512f": 16, "avx2+fma": 8}.get(info["isa"])
        vendor = re.search(r"^vendor_id\s*:\s*(.*)$", text, re.M)
        family = re.search(r"^cpu family\s*:\s*(\d+)$", text, re.M)
        if vendor and family and vendor.group(1) == "AuthenticAMD" and int(family.group(1)) <= 25:
            lanes = 8 if lanes else None
        info["fma_lanes"] = lanes
        if lanes and info["mhz_reported"]:
            info["nominal_gflops"] = round(2 * lanes * 2 * info["mhz_reported"] / 1e3, 1)
    except (OSError, AttributeError):
        pass
    cc = subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout
    info["cc"] = cc.splitlines()[0] if cc else ""
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", default=str(ROOT / "build" / "kiln"))
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--models", default=",".join(DEFAULT),
                    help=f"comma list of {', '.join(MODELS)} (default: {', '.join(DEFAULT)})")
    ap.add_argument("--out", default=str(HERE / "results.json"))
    ap.add_argument("--one-thread", action="store_true",
                    help="one thread only, every side (the before/after runs: an older kiln "
                         "may lack --workers)")
    ap.add_argument("--work", default=str(pathlib.Path.home() / ".cache" / "kiln" / "bench-cpu"))
    ap.add_argument("--label", help="what the kiln is, for the JSON (default: this checkout's "
                    "commit, which is right when --kiln is its build)")
    ap.add_argument("--kiln-variant", action="append", default=[], metavar="NAME=FLAGS",
                    help="also time the bundle of kiln compile FLAGS (row key kiln_NAME)")
    ap.add_argument("--append", action="store_true",
                    help="keep the other models' rows of an existing --out (a partial rerun)")
    a = ap.parse_args()
    work = pathlib.Path(a.work)
    log = work / "logs"
    log.mkdir(parents=True, exist_ok=True)
    all_cores = 1 if a.one_thread else os.cpu_count() or 1
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    commit = a.label or commit
    res = {"machine": machine(), "peak": measure_peak(log),
           "versions": {"onnxruntime": ort.__version__, "openvino": ov.get_version(),
                        "kiln_commit": commit},
           "config": {"reps": a.reps, "warmup": a.warmup, "threads": sorted({1, all_cores}),
                      "kiln_cflags": "Release (-O3) -march=native",
                      "kiln_threads": "1: NAME_run; all cores: NAME_run_parallel on "
                                      "examples/parallel's kiln_pool"},
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": []}
    probe_exe = build_probe(log) if all_cores > 1 else None
    t_start = time.time()
    res["load_avg_start"] = os.getloadavg()[0]
    for name in a.models.split(","):
        row = {"model": name, "what": MODELS[name][1]}
        res["rows"].append(row)
        path, why = model_path(name, log)
        if path is None:
            row["error"] = why
            continue
        model = onnx.load(str(path), load_external_data=False)
        feeds = make_inputs(model)
        r = subprocess.run([a.kiln, "inspect", "--json", str(path)], capture_output=True,
                           text=True)
        row["gflop"] = 2 * json.loads(r.stdout)["macs"]["total"] / 1e9 if r.returncode == 0 \
            else None
        print(f"{name}: {row['gflop'] and round(row['gflop'], 2)} GFLOP", flush=True)
        ref = None
        for threads in res["config"]["threads"]:
            key = f"t{threads}"
            row[key] = {}
            # several threads: each side's placement (its key in row[key]["vcpus"])
            pe = probe_exe if threads > 1 else None
            vcpus = row[key]["vcpus"] = {} if threads > 1 else None
            try:
                (row[key]["ort"], out), pl = probed(
                    pe, lambda: run_ort(path, feeds, threads, a.reps, a.warmup))
                ref = out if ref is None else ref
                if vcpus is not None:
                    vcpus["ort"] = pl
            except Exception as e:  # noqa: BLE001  (a row says why)
                row[key]["ort"] = {"error": str(e)[:300]}
            try:
                row[key]["openvino"], pl = probed(
                    pe, lambda: run_ov_alone(path, feeds, threads, a.reps, a.warmup))
                if vcpus is not None:
                    vcpus["openvino"] = pl
            except Exception as e:  # noqa: BLE001
                row[key]["openvino"] = {"error": str(e)[:300]}
            print(f"  {threads} thread(s): ort {row[key]['ort'].get('median_ms')} ms, "
                  f"openvino {row[key]['openvino'].get('median_ms')} ms" +
                  (f" (vCPUs: {vcpus})" if vcpus else ""), flush=True)
        variants = [("kiln", [])] + [("kiln_" + v.split("=", 1)[0], v.split("=", 1)[1].split())
                                     for v in a.kiln_variant]
        for key, flags in variants:
            kw = work / (name if key == "kiln" else f"{name}-{key}")
            cores = all_cores if key == "kiln" else 1   # variants: one thread only
            argv0, why = build_kiln(a.kiln, path, model, feeds, kw, log, cores, flags)
            if argv0 is None:
                row[key] = {"error": why}
                continue
            st, got, why = run_kiln(argv0, feeds, output_specs(model), kw, a.reps, a.warmup, 1)
            row[key] = st if st else {"error": why}
            if got is not None and ref is not None:
                err = max(float(np.max(np.abs(g - r_))) / max(float(np.max(np.abs(r_))), 1e-30)
                          for g, r_ in zip(got, ref))
                row[key]["max_rel_diff_vs_ort"] = err
            if cores > 1:  # NAME_run_parallel on the pool: the same bytes, faster
                (stp, gotp, why), pl = probed(probe_exe, lambda: run_kiln(
                    argv0, feeds, output_specs(model), kw, a.reps, a.warmup, cores))
                row[f"t{cores}"].setdefault("vcpus", {})["kiln"] = pl
                row[f"t{cores}"]["kiln"] = stp if stp else {"error": why}
                if stp and got is not None:
                    stp["same_bytes_as_1_thread"] = all(
                        g.tobytes() == p.tobytes() for g, p in zip(got, gotp))
                print(f"  kiln ({cores} threads): {row[f't{cores}']['kiln']} (vCPUs: {pl})",
                      flush=True)
            print(f"  {key} (1 thread): {row[key]}", flush=True)
    res["wall_s"] = round(time.time() - t_start, 1)
    res["load_avg_end"] = os.getloadavg()[0]
    if a.append and pathlib.Path(a.out).exists():
        old = json.loads(pathlib.Path(a.out).read_text())
        ran = {r["model"] for r in res["rows"]}
        rows = {r["model"]: r for r in old["rows"] if r["model"] not in ran}
        rows.update({r["model"]: r for r in res["rows"]})
        res["rows"] = [rows[m] for m in MODELS if m in rows]
        res["wall_s"] = round(old.get("wall_s", 0) + res["wall_s"], 1)
        res["partial_reruns"] = old.get("partial_reruns", []) + [sorted(ran)]
    pathlib.Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {a.out} ({res['wall_s']} s)")


if __name__ == "__main__":
    main()
