"""Where a two-thread bundle loses its time when the host puts the two vCPUs on two L3s, node
by node (issue 14). Builds profile.py's --threads harness once (every node of NAME_run timed by
the wall clock, NAME_run_parallel on examples/parallel's kiln_pool), then runs it ROUNDS times,
REPS parallel runs a time, each between two probes of bench/cpu/vcpu_probe.c (bench.py's
split: "one L3", "two L3s", "moved"), and prints per kind and per node the median
parallel milliseconds on each placement and the difference, largest first: the layers whose
time the second L3 costs. The host moves the vCPUs every 20-60 s, so a run of a few minutes
draws both placements; the rounds of each placement are medians of medians (the load drifts
between rounds).

usage: python bench/cpu/placement_profile.py --kiln PATH MODEL [--rounds 40] [--reps 3]
       [--threads 2] [--cflags FLAGS] [--work DIR] [--json FILE] [-- KILN_COMPILE_FLAGS...]
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import profile as prof  # noqa: E402  (bench/cpu/profile.py: the instrumented harness)
import bench  # noqa: E402  (the probe and the placement split)


def main():
    argv, extra = prof.split_argv(sys.argv[1:])
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("model")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cflags", default="", help="more flags for the harness's build")
    ap.add_argument("--work", default="/tmp/kiln-placement-profile")
    ap.add_argument("--json", help="also write every round's per-node times here")
    a = ap.parse_args(argv)
    work = pathlib.Path(a.work)
    b, src, calls = prof.instrumented_bundle(a.kiln, a.model, work,
                                           ["--workers", str(a.threads), *extra],
                                           "CLOCK_MONOTONIC", "placement_profile.py")
    (work / "main.c").write_text(prof.par_main_source(src, a.threads, len(calls)))
    pool = HERE.parents[1] / "examples" / "parallel"
    exe = work / "prof"
    subprocess.run(["cc", "-std=gnu11", "-O3", "-march=native", *a.cflags.split(), f"-I{b}",
                    f"-I{pool}", str(b / "net.c"), str(work / "main.c"), "-lm", "-o", str(exe),
                    str(pool / "kiln_pool.c"), "-pthread"], check=True)
    probe = bench.build_probe(work)
    rounds = []  # (placement, per node: the median of the round's parallel runs)
    for rnd in range(a.rounds):
        r, pl = bench.probed(probe, lambda: subprocess.run(
            [str(exe), str(b / "net_weights.bin"), str(a.reps), "1"], capture_output=True,
            text=True, check=True))
        par = [[float(x) for x in line.split()[1:]] for line in r.stdout.splitlines()
               if line.startswith("P")]
        med = [statistics.median(c) for c in zip(*par)]
        rounds.append((pl["placement"], med))
        print(f"round {rnd}: {pl['placement']} {pl['probe_ns']} node sum "
              f"{statistics.median(map(sum, par)):.2f} ms", flush=True)
    by_pl = {}
    for pl, med in rounds:
        by_pl.setdefault(pl, []).append(med)
    one, two = by_pl.get("one L3", []), by_pl.get("two L3s", [])
    print(f"\n{a.model}, {a.threads} threads: {len(one)} rounds on one L3, {len(two)} on two "
          f"({len(rounds)} in all, {a.reps} runs a round)")
    if not one or not two:
        sys.exit("placement_profile.py: a placement drew no round; run more rounds")
    m1 = [statistics.median(c) for c in zip(*one)]
    m2 = [statistics.median(c) for c in zip(*two)]
    t1 = statistics.median(map(sum, one))
    t2 = statistics.median(map(sum, two))
    print(f"node sum: one L3 {t1:.3f} ms, two L3s {t2:.3f} ms (+{t2 - t1:.3f})")
    by_kind = {}
    for (kernel, g), x1, x2 in zip(calls, m1, m2):
        e = by_kind.setdefault(prof.kind(kernel, g), [0, 0.0, 0.0])
        e[0] += 1
        e[1] += x1
        e[2] += x2
    print("| kind | nodes | one L3 ms | two L3s ms | two - one |")
    print("|---|---:|---:|---:|---:|")
    for k, (n, x1, x2) in sorted(by_kind.items(), key=lambda kv: kv[1][1] - kv[1][2]):
        print(f"| {k} | {n} | {x1:.3f} | {x2:.3f} | {x2 - x1:+.3f} |")
    print("\nper node, the largest differences first:")
    print("| # | kind | C -> M | out | one L3 ms | two L3s ms | two - one |")
    print("|---:|---|---|---|---:|---:|---:|")
    order = sorted(range(len(calls)), key=lambda i: m1[i] - m2[i])
    for i in order[:25]:
        kernel, g = calls[i]
        shape = f"{g.group(2)} -> {g.group(3)}" if g else ""
        o = f"{g.group(9)}x{g.group(10)}" if g else ""
        print(f"| {i} | {prof.kind(kernel, g)} | {shape} | {o} | {m1[i]:.4f} | {m2[i]:.4f} | "
              f"{m2[i] - m1[i]:+.4f} |")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(
            {"calls": [prof.kind(k, g) for k, g in calls], "rounds": rounds}))


if __name__ == "__main__":
    main()
