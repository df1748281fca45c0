"""One model through Kiln and ONNX Runtime (docs/difftest.md): compile with `kiln compile
--test-main`, once with the passes on and once with --passes=none, build each bundle with cc
(-std=c99 -Wall -Wextra -Werror -pedantic), run it on the same inputs as ONNX Runtime (all
graph optimizations off, so the reference is its plain kernels) and compare every output.
Optionally also `--target cuda` bundles (fp32 and --precision fp16), compiled with nvcc.

Before a bundle runs, its test main's arena is filled with 0xFF bytes (NaN as float32), so
an intermediate read before it is written, or overwritten while still live (a memory-plan
overlap), shows up in the outputs instead of reading zeros.

Tolerance (the conformance runner's rtol with an atol scaled to the output):
  float32/float64: |kiln - ort| <= ATOL * max(1, max|ort|) + RTOL * |ort|, RTOL 1e-3,
  ATOL 1e-5: the models chain up to 30 ops and reductions of up to ~2000 terms; float32
  rounding of a sum of n terms of magnitude m is about n * 6e-8 * m, so errors near
  1e-5 of the output's scale are rounding, not bugs, while a wrong index, layout, bias or
  fusion is off by the data's own magnitude. An element near zero after cancellation gets
  the scaled atol, not the relative bound.
  float16: RTOL 4e-3 (four float16 ulps), ATOL 1e-3 * scale: float16 rounds each op's
  result to 11 bits, and an implementation may keep float32 in between.
  integers and bools: exact. NaN equals NaN; infinities must agree.
  A model may state an absolute tolerance of its own per output (metadata "atol"): the
  generator gives one quantization step to an output that was requantized from computed
  values, where a rounding tie may fall either way.
  Conditioning: ONNX Runtime runs a second time on the float inputs moved by up to NOISE_ULPS
  ulps; NOISE_FACTOR times what that changes in an output element is added to its
  tolerance. A well-conditioned element moves by rounding-sized amounts and keeps the
  bound above; an element behind a cancellation (a LayerNorm of nearly equal values, a
  difference of close numbers) moves as much as any two correct float32 evaluation orders
  differ, and a real fault (wrong data, index, layout or fusion) is still off by the
  data's own magnitude.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import time

import numpy as np
import onnx
from onnx import numpy_helper

RTOL, ATOL = 1e-3, 1e-5
RTOL_F16, ATOL_F16 = 4e-3, 1e-3
NOISE_ULPS = 4       # how far the conditioning probe moves each float input
NOISE_FACTOR = 4     # the probe's change in an output, times this, joins its tolerance
COMPILE_TIMEOUT_S = 120
BUILD_TIMEOUT_S = 180
RUN_TIMEOUT_S = 60
CC_FLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
# compilers and optimization levels the bundles are built with, by seed: the portable C
# path, the host's vector units (the vector-extension kernels), and the other compiler
CC_VARIANTS = (("cc", ["-O1"]), ("cc", ["-O2", "-march=native"]), ("clang", ["-O1"]))
ARENA_POISON = 0xFF
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                   "runtime error:")

DTYPES = {"f32": 1, "u8": 2, "i8": 3, "u16": 4, "i16": 5, "i32": 6, "i64": 7, "bool": 9,
          "f16": 10, "f64": 11, "u32": 12, "u64": 13, "bf16": 16}
NP_OF = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
         7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32,
         13: np.uint64}


class Outcome:
    """What happened to one configuration: kind is ok, refused (kiln exit 1 with a
    diagnostic), crash (kiln died otherwise), build, run, mismatch or cuda."""

    def __init__(self, kind, detail="", outputs=None):
        self.kind, self.detail, self.outputs = kind, detail, outputs

    def __repr__(self):
        return "%s%s" % (self.kind, (": " + self.detail) if self.detail else "")


def metadata(model):
    for p in model.metadata_props:
        if p.key == "difftest":
            return json.loads(p.value)
    return {}


def node_reads(node):
    """The names node reads: its inputs and the outer values its subgraphs refer to."""
    names = [x for x in node.input if x]
    for a in node.attribute:
        for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
            defined = {vi.name for vi in g.input} | {t.name for t in g.initializer}
            for n in g.node:
                defined.update(n.output)
            for n in g.node:
                names += [x for x in node_reads(n) if x not in defined]
            names += [o.name for o in g.output if o.name not in defined]
    return names


def graph_inputs(model):
    inits = {i.name for i in model.graph.initializer}
    return [vi for vi in model.graph.input if vi.name not in inits]


def draw_inputs(model, seed):
    """{name: array} for the graph inputs, from the ranges in the model's metadata
    ([-1, 1] when it has none); deterministic in seed."""
    ranges = metadata(model).get("inputs", {})
    rng = np.random.default_rng([0xD1FF, seed])
    feeds = {}
    for vi in graph_inputs(model):
        tt = vi.type.tensor_type
        shape = [d.dim_value for d in tt.shape.dim]
        dt = NP_OF[tt.elem_type]
        lo, hi = ranges.get(vi.name, [-1.0, 1.0])
        if dt == np.bool_:
            feeds[vi.name] = np.asarray(rng.random(shape) < 0.5)
        elif np.issubdtype(dt, np.integer):
            feeds[vi.name] = rng.integers(int(lo), int(hi) + 1, size=shape).astype(dt)
        else:
            feeds[vi.name] = rng.uniform(lo, hi, size=shape).astype(dt)
    return feeds


def run_ort(model, feeds, extra_outputs=()):
    """ONNX Runtime's outputs (in graph output order, then extra_outputs), optimizations
    off. Raises on failure."""
    import onnxruntime as ort
    ort.set_default_logger_severity(4)
    if extra_outputs:
        model = onnx.ModelProto.FromString(model.SerializeToString())
        known = {o.name for o in model.graph.output}
        for name in extra_outputs:
            if name not in known:
                model.graph.output.add().name = name
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in model.graph.output]
    return dict(zip(names, sess.run(names, feeds)))


def read_signature(header):
    """[(name, dtype code, dims, nhwc)] of the inputs and outputs, from the bundle header's
    field comments (nhwc: a 4-D field stored channels-last, --io-layout nhwc; its dims are
    (N,H,W,C))."""
    sig = {"inputs": [], "outputs": []}
    part = None
    with open(header) as f:
        for line in f:
            if "_inputs {" in line:
                part = "inputs"
            elif "_outputs {" in line:
                part = "outputs"
            elif line.startswith("}"):
                part = None
            elif part:
                m = re.search(r"/\* (\w+)\[([0-9,]*)\]( NHWC)? '(.*)' \*/", line)
                if m:
                    dims = [int(x) for x in m.group(2).split(",")] if m.group(2) else []
                    sig[part].append((m.group(4), DTYPES[m.group(1)], dims, bool(m.group(3))))
    return sig


def f16_outputs(model):
    """Names of the graph outputs computed through a float16 value. ONNX Runtime runs many
    float16 ops in float32 (its cast-insertion transform, on even with optimizations off,
    then drops the Cast pairs that meet), so such an output gets float16's tolerance
    whatever its own type."""
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {vi.name: vi.type.tensor_type.elem_type for vi in
             list(inferred.graph.value_info) + list(inferred.graph.input) +
             list(inferred.graph.output)}
    half = {n for n, t in types.items() if t == onnx.TensorProto.FLOAT16}
    for node in model.graph.node:
        if any(x in half for x in node.input):
            half.update(node.output)
    return {o.name for o in model.graph.output if o.name in half}


def perturbed(feeds, seed):
    """feeds with every float element moved by up to NOISE_ULPS of its own ulps."""
    rng = np.random.default_rng([0x0153, seed])
    out = {}
    for k, v in feeds.items():
        if v.dtype.kind == "f":
            ulp = np.spacing(np.abs(v).astype(v.dtype))
            out[k] = np.asarray(v + ulp * rng.integers(-NOISE_ULPS, NOISE_ULPS + 1, size=v.shape)
                                ).astype(v.dtype)  # asarray: a 0-d input stays an array
        else:
            out[k] = v
    return out


def compare(ref, out, half=False, extra_atol=0.0, noise=None):
    """None when out matches ref (rules on top), else a short reason; half: float16's
    tolerance for a float output; extra_atol: an absolute tolerance the model states for
    this output (metadata "atol": one quantization step after a requantization); noise:
    per element, what the conditioning probe moved (rules on top)."""
    if ref.dtype != out.dtype:
        return "dtype %s, expected %s" % (out.dtype, ref.dtype)
    if ref.shape != out.shape:
        return "shape %s, expected %s" % (out.shape, ref.shape)
    if ref.dtype.kind in "biu":
        bad = ref != out
        if extra_atol:
            bad = np.abs(ref.astype(np.int64) - out.astype(np.int64)) > extra_atol
        if bad.any():
            i = tuple(np.argwhere(bad)[0])
            return "%d of %d elements differ (first at %s: %s, expected %s)" % (
                bad.sum(), ref.size, i, out[i], ref[i])
        return None
    rtol, atol = (RTOL_F16, ATOL_F16) if half or ref.dtype == np.float16 else (RTOL, ATOL)
    r = ref.astype(np.float64)
    o = out.astype(np.float64)
    finite = r[np.isfinite(r)]
    scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
    with np.errstate(invalid="ignore"):
        bound = atol * scale + rtol * np.abs(r) + extra_atol
        if noise is not None:
            bound = bound + NOISE_FACTOR * np.nan_to_num(noise, nan=0.0, posinf=0.0)
        ok = (np.isnan(r) & np.isnan(o)) | (r == o) | (np.abs(o - r) <= bound)
    if not ok.all():
        i = tuple(np.argwhere(~ok)[0])
        with np.errstate(invalid="ignore"):
            err = np.abs(o - r)[~ok]
        return "%d of %d elements off, max abs err %.3g, scale %.3g (first at %s: %s, expected %s)" % (
            (~ok).sum(), r.size, np.nanmax(err) if np.isfinite(err).any() else float("nan"),
            scale, i, o[i], r[i])
    return None


def _run(cmd, timeout, cwd=None, env=None):
    """(returncode or None on timeout, stdout, stderr, seconds)"""
    t = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout, cwd=cwd, env=env,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, "", "timeout after %d s" % timeout, time.time() - t
    return (p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"),
            time.time() - t)


def first_error(stderr):
    lines = [ln for ln in stderr.splitlines() if "error:" in ln] or \
        [ln for ln in stderr.splitlines() if ln.strip()]
    msg = lines[0] if lines else ""
    return msg.split("error: ", 1)[-1].strip()[:300]


def kiln_compile(kiln, model_path, out_dir, args, env=None):
    """None when kiln wrote the bundle, else the Outcome (refused or crash)."""
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(os.path.dirname(out_dir), exist_ok=True)
    rc, _, err, _ = _run([kiln, "compile", model_path, "-o", out_dir, "--name", "m",
                          "--test-main"] + args, COMPILE_TIMEOUT_S, env=env)
    if rc == 0 and not any(m in err for m in SANITIZER_MARKS):
        return None
    if rc is None:
        return Outcome("crash", "kiln compile: " + err)
    if any(m in err for m in SANITIZER_MARKS):
        line = next(ln for ln in err.splitlines() if any(m in ln for m in SANITIZER_MARKS))
        return Outcome("crash", "kiln compile: sanitizer: " + line.strip()[:200])
    if rc < 0:
        return Outcome("crash", "kiln compile: killed by signal %s" % signal.Signals(-rc).name)
    if rc == 1 and "error:" in err:
        return Outcome("refused", first_error(err))
    return Outcome("crash", "kiln compile: exit %d: %s" % (rc, first_error(err)))


def poison_arena(test_main):
    with open(test_main) as f:
        text = f.read()
    m = re.search(r"void \*arena = aligned_block\((\w+) \+ 1\);", text)
    if not m:
        return False
    text = text.replace(m.group(0), "%s memset(arena, 0x%02X, %s + 1);" % (
        m.group(0), ARENA_POISON, m.group(1)))
    with open(test_main, "w") as f:
        f.write(text)
    return True


def run_c_bundle(out_dir, feeds, cc=CC_VARIANTS[0], sanitize=False, io_nhwc=False):
    """Builds the bundle in out_dir with cc (compiler, [flags]) and runs it on feeds:
    ({name: array}, None) or (None, Outcome). io_nhwc: compiled with --io-layout nhwc, so
    the fields tagged NHWC hold the model's (N,C,H,W) tensors transposed. (Without it a
    field may be tagged NHWC too, when the model's own Transposes made the layout pass take
    the tensor as channels-last as it stands: its dims are the model's.)"""
    poison_arena(os.path.join(out_dir, "m_test_main.c"))
    exe = os.path.join(out_dir, "m_test")
    cc, opt = cc
    flags = CC_FLAGS + opt + (["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
                         "-g1"] if sanitize else [])
    rc, _, err, _ = _run([cc] + flags + ["-o", exe, "m.c", "m_test_main.c", "-lm"],
                         BUILD_TIMEOUT_S, cwd=out_dir)
    if rc != 0:
        first = [ln for ln in err.splitlines() if "error" in ln][:1]
        return None, Outcome("build", "%s %s: %s" % (cc, " ".join(opt), first[0].strip()[:300]
                                                     if first else "exit %s" % rc))
    sig = read_signature(os.path.join(out_dir, "m.h"))
    in_files, out_files = [], []
    for k, (name, code, dims, nhwc) in enumerate(sig["inputs"]):
        if name not in feeds:
            return None, Outcome("run", "bundle input '%s' is no graph input" % name)
        arr = np.transpose(feeds[name], (0, 2, 3, 1)) if nhwc and io_nhwc else feeds[name]
        if list(arr.shape) != dims or NP_OF[code] != arr.dtype:
            return None, Outcome("run", "bundle input '%s' is %s%s, the model's %s%s" % (
                name, NP_OF[code].__name__, dims, arr.dtype, list(arr.shape)))
        path = os.path.join(out_dir, "in%d.bin" % k)
        np.ascontiguousarray(arr).tofile(path)
        in_files.append(path)
    for k in range(len(sig["outputs"])):
        out_files.append(os.path.join(out_dir, "out%d.bin" % k))
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:exitcode=86",
               UBSAN_OPTIONS="print_stacktrace=1:exitcode=87")
    rc, _, err, _ = _run([exe, os.path.join(out_dir, "m_weights.bin")] + in_files + out_files,
                         RUN_TIMEOUT_S, env=env)
    if rc != 0:
        why = "signal %s" % signal.Signals(-rc).name if rc is not None and rc < 0 else \
            "exit %s" % rc
        line = next((ln for ln in err.splitlines() if any(m in ln for m in SANITIZER_MARKS)),
                    err.strip().splitlines()[0] if err.strip() else "")
        return None, Outcome("run", "%s: %s" % (why, line.strip()[:200]))
    outs = {}
    for (name, code, dims, nhwc), path in zip(sig["outputs"], out_files):
        data = np.fromfile(path, dtype=NP_OF[code])
        if data.size != int(np.prod(dims)):
            return None, Outcome("run", "output '%s': %d elements written, %d expected" % (
                name, data.size, int(np.prod(dims))))
        outs[name] = data.reshape(dims)
        if nhwc and io_nhwc:
            outs[name] = np.ascontiguousarray(np.transpose(outs[name], (0, 3, 1, 2)))
    return outs, None


def compare_all(ref, outs, half=(), extra=None, noise=None):
    """None, or the reason the first output that differs does."""
    for name, r in ref.items():
        if name not in outs:
            return "output '%s' missing from the bundle" % name
        n = None
        if noise is not None and name in noise and np.asarray(r).dtype.kind == "f":
            n = np.abs(np.asarray(noise[name], np.float64) - np.asarray(r, np.float64))
        why = compare(np.asarray(r), outs[name], name in half, (extra or {}).get(name, 0.0), n)
        if why:
            return "output '%s': %s" % (name, why)
    return None


def check_c(kiln, model_path, work, feeds, ref, args, cc=CC_VARIANTS[0], sanitize=False, env=None,
            half=(), extra=None, noise=None):
    """One configuration of the C target: Outcome."""
    out_dir = os.path.join(work, "bundle")
    o = kiln_compile(kiln, model_path, out_dir, args, env=env)
    if o:
        return o
    outs, o = run_c_bundle(out_dir, feeds, cc, sanitize, "--io-layout" in args)
    if o:
        return o
    why = compare_all(ref, outs, half, extra, noise)
    return Outcome("mismatch", why) if why else Outcome("ok", outputs=outs)


def check_cuda(kiln, model_path, work, precision, nvcc="nvcc", arch="90", env=None):
    """A CUDA bundle compiled by nvcc (no GPU: compile only): Outcome ok, refused, crash or
    cuda (nvcc failed)."""
    out_dir = os.path.join(work, "cuda_" + precision)
    o = kiln_compile(kiln, model_path, out_dir, ["--target", "cuda", "--precision", precision],
                     env=env)
    if o:
        return o
    rc, _, err, _ = _run([nvcc, "-Werror", "all-warnings", "-arch=sm_" + arch, "-c", "m.cu",
                          "-o", "m.o"], BUILD_TIMEOUT_S, cwd=out_dir)
    if rc != 0:
        first = [ln for ln in err.splitlines() if "error" in ln or "warning" in ln][:1]
        return Outcome("cuda", "nvcc %s: %s" % (precision, first[0].strip()[:250] if first else
                                                "exit %s" % rc))
    shutil.rmtree(out_dir, ignore_errors=True)
    return Outcome("ok")


CONFIGS = (("passes", []), ("nopasses", ["--passes=none"]))
# a third configuration for some seeds: 4-D inputs and outputs channels-last (the layout
# pass's boundary rewrite); the harness transposes the feeds and the results
NHWC_IO = ("nhwc_io", ["--io-layout", "nhwc"])


def check_model(model, kiln, work, seed=0, feeds=None, cuda=False, cc=None, sanitize=False,
                nvcc="nvcc", configs=CONFIGS, env=None):
    """All configurations of one model. Returns (status, {config: Outcome}); status is
    "ok", "refused" (Kiln declines an op in every configuration), "invalid" (ONNX Runtime
    cannot run it: a generator fault) or "fail"."""
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "model.onnx")
    onnx.save(model, path)
    feeds = feeds if feeds is not None else draw_inputs(model, seed)
    cc = cc or CC_VARIANTS[seed % len(CC_VARIANTS)]
    try:
        ref = run_ort(model, feeds)
        noise = run_ort(model, perturbed(feeds, seed))
    except Exception as e:  # noqa: BLE001 - any ORT failure makes the model unusable
        return "invalid", {"ort": Outcome("invalid", str(e).splitlines()[0][:300])}
    res = {}
    half = f16_outputs(model)
    for name, args in configs:
        res[name] = check_c(kiln, path, os.path.join(work, name), feeds, ref, args, cc,
                            sanitize, env, half, metadata(model).get("atol", {}), noise)
    if cuda:
        for prec in ("fp32", "fp16"):
            res["cuda_" + prec] = check_cuda(kiln, path, work, prec, nvcc, env=env)
    kinds = {o.kind for o in res.values()}
    c_kinds = {res[n].kind for n, _ in configs}
    if kinds <= {"ok", "refused"} and (c_kinds == {"refused"} or "refused" not in c_kinds):
        status = "refused" if "refused" in c_kinds else "ok"
    else:
        status = "fail"
    return status, res


def failure_signature(res):
    """The (config, kind) pairs that failed: what a reduced model must keep failing."""
    c_kinds = {o.kind for n, o in res.items() if not n.startswith("cuda")}
    sig = set()
    for name, o in res.items():
        if o.kind in ("crash", "build", "run", "mismatch", "cuda"):
            sig.add((name, o.kind))
        elif o.kind == "refused" and c_kinds != {"refused"} and not name.startswith("cuda"):
            sig.add((name, "refused-alone"))
    return frozenset(sig)
