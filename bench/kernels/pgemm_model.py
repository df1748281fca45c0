"""Model-level A/B of a runtime change (rt_pgemm.h's, say): one bundle of MODEL compiled once
by KILN, built twice at -O3 -march=native with bench/cpu/profile.py's per-call CPU-time
instrumentation: once with this tree's runtime/ headers over the bundle's copies, once with
those of git revision REV (default HEAD: uncommitted work against the last commit). The two
programs run in turns, ROUNDS times REPS runs each (after WARMUP), so that both see the same
machine; per kind of node (profile.py's kinds) it prints the median over all runs of each
side's summed CPU time, GFLOP/s, the share of peak and the ratio this / peer, and the node
sums. Both sides read the weights that KILN packed: the A/B holds only for changes that keep
the packed layout. Nothing is downloaded; the model comes from the suite's cache.

usage: python bench/kernels/pgemm_model.py --kiln PATH MODEL [--rev REV] [--rounds N]
           [--reps N] [--warmup N] [--peak GFLOPS] [--work DIR] [-- KILN_COMPILE_FLAGS...]
"""
import argparse
import importlib.util
import io
import pathlib
import shutil
import statistics
import subprocess
import sys
import tarfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("kiln_profile", ROOT / "bench/cpu/profile.py")
prof = importlib.util.module_from_spec(_spec)  # bench/cpu/profile.py (not the stdlib's)
_spec.loader.exec_module(prof)


def runtime_files(rev):
    """{name: text} of runtime/*.h at git revision rev, or of this tree for None."""
    if rev is None:
        return {p.name: p.read_text() for p in (ROOT / "runtime").glob("*.h")}
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "runtime"],
                         capture_output=True, check=True).stdout
    out = {}
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        for m in t.getmembers():
            p = pathlib.PurePosixPath(m.name)
            if m.isfile() and len(p.parts) == 2 and p.suffix == ".h":
                out[p.name] = t.extractfile(m).read().decode()
    return out


def main():
    argv, extra = prof.split_argv(sys.argv[1:])
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("model")
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--peak", type=float, default=96.8, help="one core's GFLOP/s (peak.c)")
    ap.add_argument("--work", default="/tmp/kiln-pgemm-model")
    a = ap.parse_args(argv)
    work = pathlib.Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    base = work / "bundle"
    subprocess.run([a.kiln, "compile", a.model, "-o", str(base), "--name", "net", "--quiet",
                    *extra], check=True)
    text, calls = prof.instrument((base / "net.c").read_text())
    hdr = (base / "net.h").read_text()

    main_c, ins, outs = prof.main_source(hdr, len(calls))
    if not ins or not outs:
        sys.exit("pgemm_model.py: cannot find the inputs' and outputs' sizes in net.h")
    (work / "main.c").write_text(main_c)
    exes = []
    for side, rev in (("this", None), ("peer", a.rev)):
        d = work / side
        shutil.copytree(base, d)
        files = runtime_files(rev)
        for h in d.glob("rt_*.h"):
            if h.name in files:
                h.write_text(files[h.name])
        (d / "net.c").write_text(text)
        exe = work / f"prof_{side}"
        subprocess.run(["cc", "-std=c11", "-O3", "-march=native", f"-I{d}", str(d / "net.c"),
                        str(work / "main.c"), "-lm", "-o", str(exe)], check=True)
        exes.append(exe)
    runs = [[], []]
    for _ in range(a.rounds):
        for i, exe in enumerate(exes):
            r = subprocess.run([str(exe), str(base / "net_weights.bin"), str(a.reps),
                                str(a.warmup)], capture_output=True, text=True, check=True)
            runs[i] += [[float(x) for x in line.split()] for line in r.stdout.splitlines()]
    kinds = {}
    for (kernel, g) in calls:
        kinds.setdefault(prof.kind(kernel, g), None)
    peer = a.rev
    print(f"{pathlib.Path(a.model).name} {' '.join(extra)}: {len(calls)} calls; this tree "
          f"against {peer}, {a.rounds} rounds x {a.reps} runs each, in turns; CPU time, "
          f"medians over runs; peak {a.peak} GFLOP/s")
    print(f"| kind | calls | GFLOP | this ms | of peak | {peer} ms | of peak | this / {peer} "
          "| minima's ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    tot = [statistics.median(sum(run) for run in side) for side in runs]
    mins = [min(sum(run) for run in side) for side in runs]
    rows = []
    for k in kinds:
        idx = [i for i, (kernel, g) in enumerate(calls) if prof.kind(kernel, g) == k]
        fl = sum(prof.flops(calls[i][1]) for i in idx)
        ms = [statistics.median(sum(run[i] for i in idx) for run in side) for side in runs]
        mn = [min(sum(run[i] for i in idx) for run in side) for side in runs]
        rows.append((k, len(idx), fl, ms, mn))
    for k, n, fl, ms, mn in sorted(rows, key=lambda r: -r[3][0]):
        def pk(t):
            return f"{100 * fl / t / 1e6 / a.peak:.0f}%" if fl and t > 0 else ""
        ratio = f"{ms[0] / ms[1]:.3f}" if ms[1] > 0 else ""
        mratio = f"{mn[0] / mn[1]:.3f}" if mn[1] > 0 else ""
        print(f"| {k} | {n} | {fl / 1e9:.3f} | {ms[0]:.2f} | {pk(ms[0])} | {ms[1]:.2f} | "
              f"{pk(ms[1])} | {ratio} | {mratio} |")
    mins = [min(sum(run) for run in side) for side in runs]
    print(f"| node sum | {len(calls)} | | {tot[0]:.2f} | | {tot[1]:.2f} | | "
          f"{tot[0] / tot[1]:.3f} | {mins[0] / mins[1]:.3f} |")
    print(f"minimum node sums: this {mins[0]:.2f} ms, {peer} {mins[1]:.2f} ms, "
          f"ratio {mins[0] / mins[1]:.3f}")


if __name__ == "__main__":
    main()
