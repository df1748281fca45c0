"""Same-run A/B of two-thread bundles, timing by timing, sorted by the vCPUs' placement.

The host moves this machine's two vCPUs between one L3 and two every 20-60 s and every
two-thread time follows (bench/cpu/bench.py), so two bundles timed one after the other in
separate runs may each have drawn another placement. This script builds each bundle's bench
harness (bench.py's bench_main.c, from a bench.py work folder) under a label, then takes
ROUNDS rounds; in each, every harness in turn runs REPS timed calls between two probes of
bench/cpu/vcpu_probe.c, and the round's calls count under the placement both probes agree on
("one L3", "two L3s"; "moved" where they differ). Prints per placement and label the median
and minimum ms and the calls behind them, and the median over rounds of the side's median
divided by the first side's in the same round (both of that placement): on a loaded host the
load drifts more between rounds than within one. --json keeps every timing.

usage: python bench/cpu/ab_placement.py LABEL=BENCH_WORK_DIR[:CFLAGS] ... [--model resnet50]
       [--rounds 12] [--reps 5] [--threads 2] [--json FILE]
BENCH_WORK_DIR is a --work folder of bench.py that holds MODEL/bundle (compiled --workers >= 2)
and MODEL/bench_main.c; CFLAGS (e.g. -DRT_PCONV_ROW_WEIGHTS=100) are added to the build.
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench  # noqa: E402  (probe, placement: the same split as bench.py's rows)


def build(label, spec, model, out):
    work, _, flags = spec.partition(":")
    m = pathlib.Path(work) / model
    exe = out / f"bench-{label}"
    pool = HERE.parents[1] / "examples" / "parallel"
    subprocess.run(["cc", "-std=gnu11", "-O3", "-march=native", *flags.split(), f"-I{m / 'bundle'}",
                    f"-I{pool}", str(m / "bundle" / "net.c"), str(m / "bench_main.c"),
                    str(pool / "kiln_pool.c"), "-pthread", "-lm", "-o", str(exe)], check=True)
    ins = sorted(m.glob("in*.bin"))
    return [str(exe), str(m / "bundle" / "net_weights.bin")], [str(p) for p in ins]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sides", nargs="+", metavar="LABEL=BENCH_WORK_DIR[:CFLAGS]")
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="/tmp/kiln-ab")
    ap.add_argument("--json")
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    probe = bench.build_probe(out)
    sides = {}
    for s in a.sides:
        label, spec = s.split("=", 1)
        sides[label] = build(label, spec, a.model, out)
    times = {}  # placement -> label -> [ms]
    ratios = {}  # placement -> label -> [a round's median over the first side's, same round]
    for rnd in range(a.rounds):
        meds = {}
        for label, (argv, ins) in sides.items():
            r, pl = bench.probed(probe, lambda: subprocess.run(
                [*argv, str(a.reps), str(a.warmup), str(a.threads), *ins,
                 str(out / f"out-{label}.bin")], capture_output=True, text=True, check=True))
            ms = [float(x) for x in r.stdout.split()]
            times.setdefault(pl["placement"], {}).setdefault(label, []).extend(ms)
            meds[label] = (pl["placement"], statistics.median(ms))
            print(f"round {rnd} {label}: {pl['placement']} {pl['probe_ns']} "
                  f"median {statistics.median(ms):.2f} ms", flush=True)
        first = meds[next(iter(sides))]
        for label, (pl, med) in meds.items():
            if pl == first[0]:
                ratios.setdefault(pl, {}).setdefault(label, []).append(med / first[1])
    print(f"\n{a.model}, {a.threads} threads, {a.rounds} rounds of {a.reps} calls a side")
    print("| placement | side | calls | median ms | min ms | paired ratio (rounds) |")
    print("|---|---|---:|---:|---:|---:|")
    for pl in ("one L3", "two L3s", "moved", "unknown"):
        for label in sides:
            ms = times.get(pl, {}).get(label)
            r = ratios.get(pl, {}).get(label, [])
            if ms:
                print(f"| {pl} | {label} | {len(ms)} | {statistics.median(ms):.2f} | "
                      f"{min(ms):.2f} | {statistics.median(r) if r else float('nan'):.3f} "
                      f"({len(r)}) |")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(times))


if __name__ == "__main__":
    main()
