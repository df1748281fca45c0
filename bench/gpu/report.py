#!/usr/bin/env python3
"""Turns bench/gpu/run.py's results.json into the benchmark's markdown (docs/gpu-bench.md):
one table of latency/throughput with ratios, one of where Kiln's time goes (per-node profile),
one of Kiln's accuracy against PyTorch FP32.
usage: python3 bench/gpu/report.py RESULTS.json [NOTES.md] > docs/gpu-bench.md
(the repository's: bench/gpu/report.py bench/gpu/results-h200.json bench/gpu/notes.md)"""
import json
import sys

FP16_MIN_COSINE, FP16_MIN_TOP1 = 0.999, 0.99   # the fp16 acceptance thresholds
MODEL_ORDER = {"resnet50": 0, "mobilenet_v2": 1, "bert_base": 2}
TOP_OPS_SHOWN = 3


def _ms(v):
    return f"{v:.3f}" if v is not None else "-"


def _prec(r):
    """The row's precision, with its convolution lowering when forced (not auto)."""
    conv = r.get("conv", "auto")
    return r["precision"] + (f" {conv}" if conv != "auto" else "")


def _ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "-"


def _sorted_rows(res, variants=False):
    """The rows in table order: the default lowering's (auto), or with variants those
    compiled with a forced --conv."""
    rows = [r for r in res["rows"].values() if (r.get("conv", "auto") != "auto") == variants]
    return sorted(rows, key=lambda r: (MODEL_ORDER.get(r["model"], 9), r["batch"],
                                       r["precision"] != "fp32", r.get("conv", "")))


def _conv_nodes(r):
    """A row's convolution nodes: {node: (profiled kind, ms)}."""
    return {nd: (kd, ms) for nd, kd, ms in r.get("prof_conv_nodes", [])}


def _lowerings(res):
    """Per (model, batch, precision) with both forced lowerings, in table order: the im2col,
    implicit and auto rows (auto {} when missing) and the convolutions the two forced ones
    lower differently (kind cublaslt with im2col, kernel with implicit) as
    [node, im2col ms, implicit ms, auto's kind]."""
    rows = {}
    for r in _sorted_rows(res) + _sorted_rows(res, variants=True):
        rows.setdefault((r["model"], r["batch"], r["precision"]), {})[r.get("conv", "auto")] = r
    for key in sorted(rows, key=lambda k: (MODEL_ORDER.get(k[0], 9), k[1], k[2])):
        got = rows[key]
        im, ig, au = got.get("im2col"), got.get("implicit"), got.get("auto", {})
        if not im or not ig:
            continue
        ki, kg, ka = _conv_nodes(im), _conv_nodes(ig), _conv_nodes(au)
        changed = [[nd, ki[nd][1], kg[nd][1], ka.get(nd, ("?",))[0]] for nd in ki
                   if nd in kg and ki[nd][0] == "cublaslt" and kg[nd][0] == "kernel"]
        yield key, im, ig, au, changed


def lowering_table(res):
    """im2col against implicit GEMM (run.py's rows compiled with --conv im2col / implicit)
    and the default, auto: whole-model times, then the convolutions whose lowering differs,
    summed and compared."""
    out = ["| model | batch | precision | im2col ms | implicit ms | auto (default) ms | "
           "implicit / im2col | convs lowered differently | their im2col ms | their implicit "
           "ms | ratio | per-conv ratio min / median / max | convs auto makes implicit |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (model, batch, prec), im, ig, au, changed in _lowerings(res):
        ki, ka = _conv_nodes(im), _conv_nodes(au)
        n_auto = sum(1 for nd in ki if nd in ka and ki[nd][0] != ka[nd][0])
        if changed:
            ratios = sorted(g / i for _, i, g, _ in changed)
            si, sg = sum(c[1] for c in changed), sum(c[2] for c in changed)
            conv = (f"{len(changed)} | {_ms(si)} | {_ms(sg)} | {_ratio(sg, si)} | "
                    f"{ratios[0]:.2f} / {ratios[len(ratios) // 2]:.2f} / {ratios[-1]:.2f}")
        else:
            conv = "- | - | - | - | -"
        ik, gk = im.get("kiln_ms"), ig.get("kiln_ms")
        out.append(f"| {model} | {batch} | {prec} | {_ms(ik)} | {_ms(gk)} | "
                   f"{_ms(au.get('kiln_ms'))} | {_ratio(gk, ik)} | {conv} | "
                   f"{n_auto if ka else '-'} |")
    return "\n".join(out) if len(out) > 2 else ""


def lowering_layers(res):
    """Per convolution that im2col and implicit lower differently: its profiled ms with each
    and the lowering auto gave it, one column group per batch."""
    per_node = {}   # (model, node) -> {batch: (im2col ms, implicit ms, auto kind)}
    for (model, batch, _), _, _, _, changed in _lowerings(res):
        for nd, i, g, k in changed:
            per_node.setdefault((model, nd), {})[batch] = (i, g, k)
    if not per_node:
        return ""
    batches = sorted({b for v in per_node.values() for b in v})
    out = ["| model | convolution | " + " | ".join(
        f"b{b} im2col ms | b{b} implicit ms | b{b} auto" for b in batches) + " |",
        "|---|---|" + "---|---|---|" * len(batches)]
    for (model, nd), per in per_node.items():
        cells = []
        for b in batches:
            i, g, k = per.get(b, (None, None, "-"))
            cells.append(f"{_ms(i)} | {_ms(g)} | "
                         f"{'implicit' if k == 'kernel' else 'im2col' if k == 'cublaslt' else k}")
        out.append(f"| {model} | {nd.split(' ', 1)[-1]} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def profile_table(res):
    """Where the time goes: per Kiln row, the per-node profile's sums (run.py's prof_* fields)."""
    rows = [r for r in _sorted_rows(res) + _sorted_rows(res, variants=True)
            if "prof_total_ms" in r or "prof_err" in r]
    if not rows:
        return ""
    out = ["| model | batch | precision | kiln ms (graph) | profiled node sum ms | cublaslt ms | "
           "kernel ms | generic ms | gap ms | top op types (ms) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "prof_total_ms" not in r:
            out.append(f"| {r['model']} | {r['batch']} | {_prec(r)} | "
                       f"{_ms(r.get('kiln_ms'))} | - | - | - | - | - | "
                       f"profile failed: {r['prof_err'][:80]} |")
            continue
        kind = r.get("prof_by_kind", {})
        ops = ", ".join(f"{op} {ms:.3f}" for op, ms in r.get("prof_by_op", [])[:TOP_OPS_SHOWN])
        out.append(f"| {r['model']} | {r['batch']} | {_prec(r)} | {_ms(r.get('kiln_ms'))} | "
                   f"{_ms(r['prof_total_ms'])} | {_ms(kind.get('cublaslt'))} | "
                   f"{_ms(kind.get('kernel'))} | {_ms(kind.get('generic'))} | "
                   f"{_ms(r.get('gap_ms'))} | {ops} |")
    return "\n".join(out)


def _rate(flops, nbytes, ms, ceil):
    """A node's achieved rate against the GPU's ceilings: TFLOP/s where it does arithmetic
    (products, convolutions, attention), else TB/s of the bytes of its tensors."""
    if flops is None or not ms:
        return "-", "-"
    if flops > 0:
        r = flops / (ms * 1e-3) / 1e12
        c = ceil.get("fp16_tflops")
        return f"{r:.1f} TFLOP/s", f"{100 * r / c:.0f}%" if c else "-"
    r = nbytes / (ms * 1e-3) / 1e12
    c = ceil.get("dram_tbs")
    return f"{r:.2f} TB/s", f"{100 * r / c:.0f}%" if c else "-"


def _ceilings(res, r):
    """The ceilings a row's rates are read against: those of the call that profiled it
    (run.py stamps them on the row), else the results' latest."""
    return r.get("ceilings") or res.get("ceilings", {})


def _span(vals, fmt):
    """One value, or the range of several (rows profiled in different calls)."""
    lo, hi = min(vals), max(vals)
    return fmt % lo if fmt % lo == fmt % hi else (fmt % lo) + "-" + (fmt % hi)


def top_nodes_table(res):
    """The ten most expensive nodes of each profiled row that has their flops and bytes
    (run.py's prof_top_nodes): time, share of the node sum, achieved rate and its share of
    the measured ceiling (fp16 tensor-core rate, or memory bandwidth)."""
    rows = [r for r in _sorted_rows(res)
            if r.get("prof_top_nodes") and len(r["prof_top_nodes"][0]) >= 5]
    if not rows:
        return ""
    out = ["| model | batch | precision | node | path | ms | share | achieved | of ceiling |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        total = r.get("prof_total_ms") or 0
        ceil = _ceilings(res, r)
        for nd, kd, ms, flops, nbytes in r["prof_top_nodes"]:
            rate, frac = _rate(flops, nbytes, ms, ceil)
            share = f"{100 * ms / total:.1f}%" if total else "-"
            out.append(f"| {r['model']} | {r['batch']} | {_prec(r)} | {nd} | {kd} | {_ms(ms)} | "
                       f"{share} | {rate} | {frac} |")
    return "\n".join(out)


def _compile_failure(err):
    """A short reading of run.py's compile_err for a row that kept an earlier mode."""
    mode = err[err.find("(") + 1:err.find(")")] if "(" in err else "?"
    if "illegal memory access" in err:
        return f"{mode}: CUDA illegal memory access in Inductor's autotuning"
    if "Deadline" in err or err.startswith("timed out"):
        return f"{mode}: autotuning outlasted the call"
    if err.startswith("not run"):
        return f"{mode}: not run (no device time left in the call)"
    return f"{mode}: {err[:60]}"


def table(res):
    rows = _sorted_rows(res)
    out = ["| model | batch | precision | kiln ms | eager ms | compile ms (mode) | "
           "kiln/eager | kiln/compile | kiln img-or-seq/s | note |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        k, e, c = r.get("kiln_ms"), r.get("eager_ms"), r.get("compile_ms")
        mode = r.get("compile_mode", "")
        others = [f"{m} {v:.3f}" for m, v in r.get("compile_modes", {}).items()
                  if m != mode and not isinstance(v, str)]
        mode_s = "; ".join([mode] + others)
        cm = f"{_ms(c)} ({mode_s})" if c is not None else (r.get("compile_err", "-")[:60])
        if c is not None and "compile_err" in r:   # a later try of another mode did not land
            cm += f"; {_compile_failure(r['compile_err'])}"
        note = r.get("note", "")
        if r.get("tuned") and r.get("untuned_ms"):   # run.py --tune: kiln_ms is the tuned time
            note += (f"; cuBLASLt algorithms tuned (NAME_cuda_tune), untuned "
                     f"{min(r['untuned_ms']):.3f} ms ({_ratio(min(r['untuned_ms']), c)} of compile)")
        for err in ("kiln_err", "eager_err"):
            if err in r:
                note += f"; {err}: {r[err][:80]}"
        tput = f"{r['batch'] / k * 1e3:.0f}" if k else "-"
        out.append(f"| {r['model']} | {r['batch']} | {r['precision']} | {_ms(k)} | {_ms(e)} | "
                   f"{cm} | {_ratio(k, e)} | {_ratio(k, c)} | {tput} | {note} |")
    low = lowering_table(res)
    if low:
        out += ["", "Convolution lowering: the fp16 bundles compiled with `kiln compile --conv "
                "im2col` (im2col pass + cuBLASLt product) and `--conv implicit` (Kiln's "
                "implicit GEMM on tensor cores, `kc_igemm.cuh`: it gathers its input tiles "
                "itself, for every convolution that is not a plain 1x1 one and has channels in "
                "multiples of 8), and the default `--conv auto`, which picks per convolution; "
                "same call. Ratios below 1: the implicit GEMM is faster. The per-conv columns "
                "compare the profiled time of each convolution the two lowerings treat "
                "differently:", "", low, "", "Each of those convolutions (profiled ms; "
                "auto: the lowering `--conv auto` gave it):", "", lowering_layers(res)]
    prof = profile_table(res)
    if prof:
        out += ["", "Where the time goes (Kiln: `NAME_cuda_profile`, one eager run with a CUDA "
                "event pair around each node, median of 3; gap = graph replay minus the node "
                "sum, negative when the eager run is slower than the graph):", "", prof]
    top = top_nodes_table(res)
    if top:
        ceils = [_ceilings(res, r) for r in _sorted_rows(res) if r.get("prof_top_nodes")]
        tf = _span([c.get("fp16_tflops", 0) for c in ceils], "%.0f")
        tb = _span([c.get("dram_tbs", 0) for c in ceils], "%.2f")
        out += ["", "The ten most expensive nodes of the rows profiled with their arithmetic "
                "and bytes (`NAME_profile_flops`/`_bytes`): share of the profiled node sum, "
                "achieved rate (TFLOP/s for products, convolutions and attention; else TB/s "
                "of the bytes the node's tensors hold, read and written once) and its share "
                "of the GPU's ceiling measured in the call that profiled the row (fp16 tensor "
                f"cores: {tf} TFLOP/s on an 8192^3 half product; "
                f"memory: {tb} TB/s on a 1 GiB device copy):", "",
                top]
    acc = res.get("accuracy", {})
    if acc:
        out += ["", "| bundle | inputs | min cosine vs PyTorch fp32 | top-1 agreement | "
                "rel. L2 error | fp16 check | PyTorch fp16: min cosine / top-1 / rel. L2 |",
                "|---|---|---|---|---|---|---|"]
        for key in sorted(acc, key=lambda s: (MODEL_ORDER.get(s.rsplit("_b", 1)[0], 9), s)):
            a = acc[key]
            ok = ""
            if "_fp16" in key and a["n"] >= 100:
                ok = "pass" if a["min_cosine"] >= FP16_MIN_COSINE and \
                    a["top1_agree"] >= FP16_MIN_TOP1 else "FAIL"
            peer = "-"
            if "torch_fp16_min_cosine" in a:
                peer = (f"{a['torch_fp16_min_cosine']:.6f} / "
                        f"{100 * a['torch_fp16_top1_agree']:.1f}% / "
                        f"{a['torch_fp16_max_rel_err']:.2e}")
            out.append(f"| {key} | {a['n']} | {a['min_cosine']:.6f} | "
                       f"{100 * a['top1_agree']:.1f}% | {a['max_rel_err']:.2e} | {ok} | {peer} |")
    return "\n".join(out)


DOC = """# GPU benchmark: Kiln CUDA against PyTorch

Generated by `bench/gpu/report.py` from `bench/gpu/run.py`'s results; do not edit by hand.
Device: {device}; PyTorch {torch}. Reproduce: `bench/gpu/prepare.sh KILN` here (torch 1.13
exports, `kiln compile --target cuda`, fp32 and `--precision fp16`), then on the GPU machine
`python3 bench/gpu/run.py build/gpu-bench OUT` (carry `build/gpu-bench`), then
`python3 bench/gpu/report.py OUT/results.json bench/gpu/notes.md > docs/gpu-bench.md` (the results
below: `bench/gpu/results-h200.json`; run.py merges a carried BENCHDIR/results.json).

Method: ResNet-50 and MobileNetV2 (torchvision, `weights=None`) and a hand-written BERT-base
(12 layers, hidden 768, 12 heads, intermediate 3072, sequence 128, all-ones attention mask),
all with the same deterministic weights on both sides (`bench/gpu/models.py`: slices of one
integer-hash table, so that the weights files compress for transport; BatchNorm running
statistics measured once on seeded random images (`models.calibrate`, carried in
`bn_stats.npz`), folded into the convolutions by the ONNX export; one export per model with a
symbolic batch, `kiln compile --dim batch=N`). Times are medians of {iters} CUDA-event-timed
runs (30 at batch 256) after 20 warm-up runs, on the same stream, back to back. Kiln: one
`NAME_cuda_run` on the context's own device buffers (no copies: one CUDA-graph launch),
bundles built with `nvcc -O3 -arch=sm_90a`. PyTorch: `torch.inference_mode()`, cuDNN benchmark
on, TF32 off (`allow_tf32=False` for matmul and cuDNN). FP16: PyTorch runs `model.half()` on
half inputs (fp16 storage); Kiln's `--precision fp16` stores weights and activations in
float16 too (float32 graph inputs and outputs, a Cast at each end) and runs its products on
fp16 tensor cores with fp32 accumulation; its softmax, normalizations and pooling accumulate
in float32.
torch.compile: `mode="reduce-overhead"` (CUDA graphs) at batch 1; at batch 32/256 the mode
in the column: where the cell names two, both were timed in one call and the faster is the
peer (Kiln runs one CUDA graph, so the peer may too); else `max-autotune-no-cudagraphs` was
asked for, and `default` is there where it did not fit the device time. Ratios below 1 mean
Kiln is faster. "note": the bundle's node count
and how many nodes run on Kiln's one-thread generic path; rows timed with `run.py --tune` give
Kiln's time with the algorithms its tuning step chose (`NAME_cuda_tune`, kept as a cache a
build can reload) and, in the note, the untuned time of the same call.

{table}

{notes}
"""


def main():
    res = json.loads(open(sys.argv[1]).read())
    notes = ""   # the hand-written reading of the tables: a file (bench/gpu/notes.md)
    if len(sys.argv) > 2:
        notes = open(sys.argv[2]).read().rstrip()
    print(DOC.format(device=res.get("device", "?"), torch=res.get("torch", "?"), iters=100,
                     table=table(res), notes=notes).rstrip())


if __name__ == "__main__":
    main()
