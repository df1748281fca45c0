"""Writes docs/cpu-bench.md from the CPU benchmark's JSON (bench/cpu/bench.py). With
--before OLD.json --after NEW.json (two runs of bench.py on the same models, the first with
an older kiln: --kiln OLD), it adds a section comparing Kiln's times between the two builds,
each against the peers measured in its own run.

usage: python bench/cpu/report.py RESULTS.json OUT.md [--before OLD.json --after NEW.json
                                  --change TEXT]
"""
import json
import pathlib
import sys

PEERS = (("ort", "ONNX Runtime"), ("openvino", "OpenVINO"))


def ms(r):
    if not r or "median_ms" not in r:
        return "failed" if r else "-"
    d = 3 if r["median_ms"] < 10 else 2
    return f"{r['median_ms']:.{d}f} ({r['min_ms']:.{d}f})"


def gflops(gflop, r):
    return f"{gflop / r['median_ms'] * 1e3:.1f}" if gflop and r and "median_ms" in r else "-"


def peak_note(res):
    """Why the measured peak differs from the nominal one, where it does by more than 5%."""
    got, nom = res["peak"].get("gflops"), res["machine"].get("nominal_gflops")
    if not got or not nom or abs(got - nom) <= 0.05 * nom:
        return ""
    return (" (above nominal: the core boosts past the reported clock)" if got > nom else
            " (below nominal: the core was shared while it was measured)")


def load(res, when):
    v = res.get(f"load_avg_{when}")
    return f"{v:.1f}" if v is not None else "not recorded"


def rerun_note(res):
    """Which rows a later partial run (bench.py --append) replaced: the date, load and peak
    above are that run's."""
    runs = res.get("partial_reruns")
    if not runs:
        return ""
    return (" Rows rerun later by `bench.py --append` (all three sides again, in one run): " +
            "; ".join(", ".join(r) for r in runs) + "; the date, peak and load above are the "
            "last rerun's.")


def vcpus(v):
    """Each side's vCPU placement during its timing (bench.py's probes): rows are comparable
    only at the same placement."""
    if not v:
        return "-"
    return " / ".join(v.get(k, {}).get("placement", "-") for k in ("kiln", "ort", "openvino"))


def table(res, threads):
    peak = max(res["peak"].get("gflops") or 0, res["machine"].get("nominal_gflops") or 0)
    lines = []
    one = threads == 1
    head = ["model", "GFLOP", "Kiln ms", "ONNX Runtime ms", "OpenVINO ms",
            "Kiln / faster peer", "Kiln GFLOP/s", "faster peer GFLOP/s"]
    if one:
        head.append(f"Kiln % of peak ({peak} GFLOP/s)")
    else:
        head += ["Kiln 1->N speed-up", "ONNX Runtime 1->N", "OpenVINO 1->N",
                 "vCPUs (Kiln / ONNX Runtime / OpenVINO)"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    notes = []
    for row in res["rows"]:
        if "error" in row:
            lines.append(f"| {row['model']} | " + " | ".join(["-"] * (len(head) - 2)) +
                         f" | {row['error']} |")
            continue
        t = row.get(f"t{threads}", {})
        peers = {k: t.get(k) for k, _ in PEERS}
        ok = {k: r for k, r in peers.items() if r and "median_ms" in r}
        best = min(ok, key=lambda k: ok[k]["median_ms"]) if ok else None
        k = row.get("kiln", {}) if one else t.get("kiln", {})
        g = row.get("gflop")
        kiln_ok = "median_ms" in k
        if kiln_ok:
            ratio = f"{k['median_ms'] / ok[best]['median_ms']:.2f}x" if best else "-"
        else:
            ratio = "-"
        kcell = ms(k) if kiln_ok else f"failed: {k.get('error', '?')}"
        if not one and kiln_ok and k.get("same_bytes_as_1_thread") is False:
            kcell += " (outputs differ from NAME_run's!)"
        cells = [row["model"], f"{g:.2f}" if g else "-", kcell, ms(peers["ort"]),
                 ms(peers["openvino"]), ratio, gflops(g, k) if kiln_ok else "-",
                 gflops(g, ok[best]) + f" ({dict(PEERS)[best]})" if best else "-"]
        if one:
            cells.append(f"{100 * g / k['median_ms'] * 1e3 / peak:.0f}%" if kiln_ok and g and peak
                         else "-")
        else:  # each side's own speed-up from its one-thread median
            one_k = row.get("kiln", {})
            cells.append(f"{one_k['median_ms'] / k['median_ms']:.2f}x"
                         if kiln_ok and "median_ms" in one_k else "-")
            for key, _ in PEERS:
                p1 = row.get("t1", {}).get(key)
                cells.append(f"{p1['median_ms'] / peers[key]['median_ms']:.2f}x"
                             if p1 and "median_ms" in p1 and key in ok else "-")
            cells.append(vcpus(t.get("vcpus")))
        lines.append("| " + " | ".join(cells) + " |")
        for key, name in PEERS:
            if peers[key] and "error" in peers[key]:
                notes.append(f"- {row['model']}, {name}, {threads} thread(s): {peers[key]['error']}")
    return "\n".join(lines + ([""] + notes if notes else []))


def before_after(old, new, change):
    """Kiln's median before and after, and each against the faster peer of its own run."""
    lines = [f"## Before and after: {change}", "",
             f"Two runs of `bench/cpu/bench.py` on the same models, one thread: the older kiln "
             f"(commit {old['versions']['kiln_commit']}, run {old['date']}) and this one "
             f"(commit {new['versions']['kiln_commit']}, run {new['date']}); each ratio is "
             "against the faster peer of the same run.", "",
             "| model | Kiln before ms | Kiln after ms | speed-up (medians) | speed-up (minima) | "
             "before / faster peer | after / faster peer |", "|---|---|---|---|---|---|---|"]
    olds = {r["model"]: r for r in old["rows"]}
    for r in new["rows"]:
        o = olds.get(r["model"])
        if not o or "median_ms" not in r.get("kiln", {}) or "median_ms" not in o.get("kiln", {}):
            continue

        def ratio(row):
            ok = [p["median_ms"] for p in row.get("t1", {}).values() if p and "median_ms" in p]
            return f"{row['kiln']['median_ms'] / min(ok):.2f}x" if ok else "-"
        lines.append(f"| {r['model']} | {ms(o['kiln'])} | {ms(r['kiln'])} | "
                     f"{o['kiln']['median_ms'] / r['kiln']['median_ms']:.2f}x | "
                     f"{o['kiln']['min_ms'] / r['kiln']['min_ms']:.2f}x | {ratio(o)} | "
                     f"{ratio(r)} |")
    return "\n".join(lines) + "\n"


def main():
    args = sys.argv[1:]
    extra = {}
    while len(args) > 2 and args[-2] in ("--before", "--after", "--change"):
        extra[args[-2][2:]] = args[-1]
        args = args[:-2]
    if len(args) != 2:
        sys.exit(__doc__)
    sys.argv[1:] = args
    res = json.load(open(sys.argv[1]))
    m, v, c = res["machine"], res["versions"], res["config"]
    all_cores = c["threads"][-1]
    agree = [f"{r['model']} {r['kiln']['max_rel_diff_vs_ort']:.1e}" for r in res["rows"]
             if "max_rel_diff_vs_ort" in r.get("kiln", {})]
    what = [f"- **{r['model']}**: {r['what']}" for r in res["rows"]]
    out = f"""# CPU benchmark: Kiln C bundles against ONNX Runtime and OpenVINO

Generated by `bench/cpu/report.py` from `bench/cpu/results.json`; rerun everything with
`bench/cpu/run.sh` (it makes its own venv with the pinned ONNX Runtime and OpenVINO,
`bench/cpu/requirements.txt`). Measured {res['date']}, Kiln commit {v['kiln_commit']},
ONNX Runtime {v['onnxruntime']}, OpenVINO {v['openvino']}, {m.get('cc', '')}.

**Machine**: {m.get('cpu')}, {m.get('cores')} cores, {m.get('isa')}, clock reported
{m.get('mhz_reported')} MHz. **Peak of one core**: {m.get('nominal_gflops', '-')} GFLOP/s
nominal (2 FMA pipes x {m.get('fma_lanes') or (8 if m.get('isa') == 'avx2+fma' else 16)} float lanes x 2 flops x the
reported clock{'; AMD family 25: 256-bit FMA pipes, a 512-bit FMA runs as two halves' if m.get('fma_lanes') == 8 and m.get('isa') == 'avx512f' else ''}); measured in the same run on FMA chains (`bench/cpu/peak.c`):
{res['peak'].get('gflops', '-')} GFLOP/s{peak_note(res)}. The tables use the higher of the
two. The machine is shared (2 cores; the 1-minute load average was {load(res, 'start')} at
the start of the run and {load(res, 'end')} at its end), so every figure is noisy and slower
than on an idle machine: read medians, minima and ratios, not single numbers, and the
all-core rows least of all.

**How**: per model one set of seeded inputs for all three. Kiln: `kiln compile --workers
{all_cores}`, the bundle's own CMakeLists.txt built Release (-O3) with
`-DCMAKE_C_FLAGS=-march=native`, and a C harness that times each call alone with
CLOCK_MONOTONIC (weights and inputs loaded before): `NAME_run` on one thread,
`NAME_run_parallel` on examples/parallel's pthreads pool for all cores. ONNX Runtime: CPU execution provider, all graph optimizations,
`intra_op_num_threads` 1 then {all_cores}. OpenVINO (in a child process of its own: its idle worker
threads had taken a core from the runs after it): CPU, f32 precision, latency hint,
`INFERENCE_NUM_THREADS` 1 then {all_cores}. Each: {c['warmup']} untimed runs, then {c['reps']}
timed; cells are median (minimum) in ms. Ratio: Kiln's median over the faster peer's (below
1 is Kiln ahead). GFLOP: 2 x the multiply-accumulates of `kiln inspect`. Kiln's output
against ONNX Runtime's (max |diff| / max |ref|): {', '.join(agree) or '-'}. The whole run
took {res['wall_s']} s.{rerun_note(res)}

Models (batch 1, exported by the model suite's exporter, PyTorch 1.13, opset 17; nothing
downloaded, so every weight is random):

{chr(10).join(what)}

## One thread

{table(res, 1)}

## All cores ({all_cores} threads)

Kiln: the same bundle (compiled `--workers {all_cores}`), `NAME_run_parallel` through
`examples/parallel`'s pthreads pool of {all_cores} threads, started before the timed calls;
its outputs are checked to be the bytes of `NAME_run`'s. The speed-up columns divide each
side's one-thread median by its {all_cores}-thread median (N = {all_cores}). The vCPUs column:
where the host ran the two vCPUs during each side's timing (bench/cpu/vcpu_probe.c before and
after it): "one L3" (one CCD), "two L3s" (two CCDs: every cache line that crosses between
the workers costs ~6x), "moved" (between the probes); compare rows of the same placement.

{table(res, all_cores)}
"""
    if "before" in extra and "after" in extra:
        out += "\n" + before_after(json.load(open(extra["before"])), json.load(open(extra["after"])),
                                   extra.get("change", "an older kiln against this one"))
    # the per-node profiles and the kernel labs (bench/cpu/profile.py, layers.py,
    # bench/kernels/wino.c, dw.c, pgemm.c), written by hand from their output
    for name in ("conv-avx512.md", "attn-profile.md", "pgemm-profile.md", "resnet50-profile.md",
                 "mobile-profile.md"):
        notes = pathlib.Path(__file__).resolve().parent / name
        if notes.exists():
            out += "\n" + notes.read_text()
    open(sys.argv[2], "w").write(out)


if __name__ == "__main__":
    main()
