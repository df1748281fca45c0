"""Where a CNN's time goes in the Kiln bundle and in ONNX Runtime, by kind of layer, one
thread, one run: bench/cpu/profile.py (every node of the bundle, CPU time, median of REPS)
and ONNX Runtime's own per-node profile (SessionOptions.enable_profiling, all graph
optimizations, one intra-op thread, median of REPS after 2 warm-up runs), alternating
ROUNDS times so both see the same machine; the table sums each kind over the rounds'
medians. ONNX Runtime's single-thread node times track its thread CPU time (both are
printed), so the two columns compare. The floor of a kind: its flops over PEAK and its
bytes (activations in and out, weights, f32, once) over BW; the larger is the bound.

Kinds: convolutions by kernel, stride and depthwise-ness ("1x1 @1px" are the ones on one
pixel: squeeze-excitation FCs and, with ONNX Runtime's Gemm, the classifier); ONNX Runtime
runs SiLU as a node of its own (QuickGelu) where Kiln fuses it into the convolution before
it, so on EfficientNet compare the sum of rows, not each conv row.

usage: python bench/cpu/layers.py --kiln PATH MODEL.onnx [--reps N] [--rounds N]
                                  [--peak GFLOPS] [--bw GBPS]
"""
import argparse
import collections
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time


def kiln_kind(e):
    k = e["kind"]
    for pre in ("packed ", "Winograd ", "conv_nhwc_fused_par_f32 ", "conv_nhwc_fused_f32 ",
                "conv_nhwc_f32 "):
        if k.startswith(pre):
            k = k[len(pre):]
            if k.startswith("1x1") and e["out_pixels"] == 1:
                return "1x1 @1px"
            return k
    return {"strided_copy": "layout (input transpose)"}.get(k, k)


def run_kiln(a, work):
    out = pathlib.Path(work) / "kiln.json"
    subprocess.run([sys.executable, str(pathlib.Path(__file__).with_name("profile.py")),
                    "--kiln", a.kiln, a.model, "--reps", str(a.reps), "--peak", str(a.peak),
                    "--work", str(pathlib.Path(work) / "kiln"), "--json", str(out)],
                   check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def ort_kind(ev):
    args = ev["args"]
    op = args.get("op_name")
    ins, outs = args.get("input_type_shape", []), args.get("output_type_shape", [])
    if op in ("Conv", "FusedConv") and len(ins) >= 2:
        xs, ws = list(ins[0].values())[0], list(ins[1].values())[0]
        ys = list(outs[0].values())[0]
        kh, kw = ws[2], ws[3]
        dw = ws[1] == 1 and kh * kw > 1
        s = xs[2] // ys[2] if ys[2] else 1
        if kh * kw == 1:
            return "1x1 @1px" if ys[2] * ys[3] == 1 else "1x1" + ("/2" if s > 1 else "")
        return f"{kh}x{kw}" + (f"/{s}" if s > 1 else "") + (" dw" if dw else "")
    return {"Gemm": "1x1 @1px"}.get(op, op)


def run_ort(a, work):
    import numpy as np
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.enable_profiling = True
    so.profile_file_prefix = str(pathlib.Path(work) / "ort")
    s = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    feeds = {}
    for i in s.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    cpu = []
    for r in range(a.reps + 2):
        t0 = time.thread_time()
        s.run(None, feeds)
        cpu.append((time.thread_time() - t0) * 1e3)
    f = s.end_profiling()
    per = collections.defaultdict(list)
    for ev in json.load(open(f)):
        if ev.get("cat") == "Node" and ev["name"].endswith("_kernel_time"):
            per[ev["name"]].append(ev)
    os.remove(f)
    nodes = [{"kind": ort_kind(v[0]), "ms": statistics.median(e["dur"] for e in v[2:]) / 1e3}
             for v in per.values()]
    return nodes, statistics.median(cpu[2:])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("model")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--peak", type=float, default=96.8, help="one core's GFLOP/s (peak.c)")
    ap.add_argument("--bw", type=float, default=20.0, help="one core's GB/s")
    a = ap.parse_args()
    kiln = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])  # nodes, ms, flops, bytes
    ort = collections.defaultdict(lambda: [0, 0.0])
    k_tot, o_tot, o_cpu = [], [], []
    with tempfile.TemporaryDirectory() as work:
        for rnd in range(a.rounds):
            kn = run_kiln(a, work)
            on, cpu = run_ort(a, work)
            k_tot.append(sum(e["ms"] for e in kn))
            o_tot.append(sum(e["ms"] for e in on))
            o_cpu.append(cpu)
            for e in kn:
                k = kiln[kiln_kind(e)]
                k[0] += 1 if rnd == 0 else 0
                k[1] += e["ms"] / a.rounds
                k[2] += e["flops"] if rnd == 0 else 0
                k[3] += e["bytes"] if rnd == 0 else 0
            for e in on:
                o = ort[e["kind"]]
                o[0] += 1 if rnd == 0 else 0
                o[1] += e["ms"] / a.rounds
    name = pathlib.Path(a.model).stem
    print(f"{name}: Kiln node sum {' / '.join(f'{t:.2f}' for t in k_tot)} ms (CPU time), "
          f"ONNX Runtime node sum {' / '.join(f'{t:.2f}' for t in o_tot)} ms "
          f"(its thread CPU time per run {' / '.join(f'{t:.2f}' for t in o_cpu)}), "
          f"rounds alternating; peak {a.peak} GFLOP/s, {a.bw} GB/s")
    print("| kind | Kiln nodes | Kiln ms | ORT nodes | ORT ms | Kiln / ORT | GFLOP | "
          "flop floor ms | MB | byte floor ms | Kiln % of floor |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    kinds = sorted(set(kiln) | set(ort), key=lambda k: -max(kiln[k][1], ort[k][1]))
    for k in kinds:
        kn, kms, kf, kb = kiln[k]
        on, oms = ort[k]
        ff, bf = kf / a.peak / 1e6, kb / a.bw / 1e6
        ratio = f"{kms / oms:.2f}" if kms and oms else ""
        pct = f"{100 * max(ff, bf) / kms:.0f}%" if kms and (kf or kb) else ""
        print(f"| {k} | {kn or ''} | {kms:.2f} | {on or ''} | {oms:.2f} | {ratio} | "
              + (f"{kf / 1e9:.3f} | {ff:.3f} | {kb / 1e6:.1f} | {bf:.3f} | {pct} |"
                 if kf or kb else "| | | | |"))
    print(f"| total | | {statistics.mean(k_tot):.2f} | | {statistics.mean(o_tot):.2f} | "
          f"{statistics.mean(k_tot) / statistics.mean(o_tot):.2f} | | | | | |")


if __name__ == "__main__":
    main()
