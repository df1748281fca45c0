"""A/B of profile.py's harnesses in alternating rounds: each SIDE is a profile.py --work
folder (its bundle/ and prof, as profile.py left them; NAME=DIR, the first the reference),
whose per-node table profile.py printed to DIR.txt (`profile.py ... > DIR.txt`: the kinds,
shapes and outputs of every node, read from the first side's). Each round runs every side's
prof once (REPS timed after WARMUP, thread CPU time per node), the sides in turn, the order
reversed every other round, so that a load spike on the shared host falls on both; then it
prints per family (kind, and for Winograd and the 512-channel 3x3 layers the shape) the
median over rounds of the sides' sums (min-max in brackets), the node sum, and the
per-round ratio of each side's node sum to the first's (median). The sides' node lists must
match (the same model, kinds may differ). Quicker than profile.py run per side: nothing is
compiled again between rounds.

usage: python bench/cpu/profile_ab.py [--rounds N] [--reps N] [--warmup N] [--nodes I,J..]
                                      [--json FILE] NAME=DIR NAME=DIR...
"""
import argparse
import json
import re
import statistics
import subprocess

ROW = re.compile(r"^\| (\d+) \| ([^|]+) \| ([^|]*) \| ([^|]*) \|")


def families(txt):
    fam = {}
    for line in open(txt):
        m = ROW.match(line)
        if not m:
            continue
        i, kind, cm, out = int(m.group(1)), m.group(2).strip(), m.group(3).strip(), m.group(4).strip()
        if cm == "512 -> 512" and kind in ("packed 3x3", "Winograd 3x3"):
            kind = "3x3 512@7x7"
        elif kind == "Winograd 3x3":
            kind = f"Winograd 3x3 {cm.split()[0]}@{out}"
        elif cm == "2048 -> 1000":
            kind = "fc"
        elif kind in ("maxpool_par", "strided_copy", "GlobalAveragePool"):
            kind = "maxpool, layout copy, global pool"
        fam[i] = kind
    return fam


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sides", nargs="+", help="NAME=DIR (profile.py --work DIR)")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--nodes", default="", help="also print these nodes' medians")
    ap.add_argument("--json", help="also write every round's per-node medians here")
    a = ap.parse_args()
    names = [s.split("=", 1)[0] for s in a.sides]
    dirs = [s.split("=", 1)[1].rstrip("/") for s in a.sides]
    fam = families(dirs[0] + ".txt")
    res = {n: [] for n in names}  # per round: (per-node medians, median node sum)
    for r in range(a.rounds):
        order = range(len(names)) if r % 2 == 0 else reversed(range(len(names)))
        for j in order:
            out = subprocess.run([dirs[j] + "/prof", dirs[j] + "/bundle/net_weights.bin",
                                  str(a.reps), str(a.warmup)],
                                 capture_output=True, text=True, check=True).stdout
            runs = [[float(x) for x in line.split()] for line in out.splitlines()]
            res[names[j]].append(([statistics.median(c) for c in zip(*runs)],
                                  statistics.median(sum(x) for x in runs)))
        print(f"round {r}: " + "  ".join(f"{n} {res[n][-1][1]:.2f}" for n in names), flush=True)

    if a.json:
        with open(a.json, "w") as f:
            json.dump({"families": fam, "rounds": res}, f)

    def cell(vals):
        return f"{statistics.median(vals):.3f} ({min(vals):.2f}-{max(vals):.2f})"

    print("| family | calls | " + " | ".join(names) + " |")
    print("|---|---:|" + "---:|" * len(names))
    for f in sorted(set(fam.values())):
        idx = [i for i, g in fam.items() if g == f]
        print(f"| {f} | {len(idx)} | " + " | ".join(
            cell([sum(med[i] for i in idx) for med, _ in res[n]]) for n in names) + " |")
    print(f"| node sum | {len(fam)} | " +
          " | ".join(cell([t for _, t in res[n]]) for n in names) + " |")
    base = [t for _, t in res[names[0]]]
    print("node sum over " + names[0] + "'s in the same round (median): " + ", ".join(
        f"{n} {statistics.median(t / b for (_, t), b in zip(res[n], base)):.3f}"
        for n in names[1:]))
    for i in [int(x) for x in a.nodes.split(",") if x]:
        print(f"node {i} ({fam.get(i, '?')}): " + "  ".join(
            f"{n} {statistics.median(med[i] for med, _ in res[n]):.3f}" for n in names))


if __name__ == "__main__":
    main()
