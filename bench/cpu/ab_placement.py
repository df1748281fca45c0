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

The peers are sides of the same rounds (--peers, default ort,openvino): each in a child
process of its own that loads the model's ONNX export once (bench.py's, and its seeded
inputs, the bytes of the harnesses' in*.bin), creates one session with THREADS intra-op
threads (bench.py's settings: ONNX Runtime sequential with all graph optimizations, OpenVINO
f32 with the latency hint and one stream), and then times REPS calls, after WARMUP untimed
ones, each time the parent asks, between the same two probes. Between its turns the child is
stopped (SIGSTOP): an idle OpenVINO process cost the runs beside it a core (bench.py,
run_ov_alone), and ONNX Runtime's workers spin after a call. The sides take their turns in an
order that rotates round by round, so no side always follows the same one. Then, per
placement and Kiln side, the median over rounds of the side's median divided by the faster
peer's median in that round, over the rounds where the side and both peers drew that
placement (the peers' outputs are checked against ONNX Runtime's once, at start).

usage: python bench/cpu/ab_placement.py LABEL=BENCH_WORK_DIR[:CFLAGS] ... [--model resnet50]
       [--rounds 12] [--reps 5] [--threads 2] [--peers ort,openvino] [--json FILE]
BENCH_WORK_DIR is a --work folder of bench.py that holds MODEL/bundle (compiled --workers >= 2)
and MODEL/bench_main.c; CFLAGS (e.g. -DRT_PCONV_ROW_WEIGHTS=100) are added to the build.
Run it in the bench venv (~/.cache/kiln/bench-venv: ONNX Runtime and OpenVINO).
"""
import argparse
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys

import numpy as np
import onnx

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


PEERS = ("ort", "openvino")


def serve(peer, model, threads, warmup):
    """The child's side of a peer (--serve): one session, then for each line REPS on stdin
    WARMUP untimed calls and REPS timed ones, their ms as one JSON line on stdout. The first
    line out is "ready" and the max |diff| / max |ref| of its outputs against ONNX Runtime's
    one-thread ones (the reference run in the parent would leave ONNX Runtime's threads in it)."""
    path, why = bench.model_path(model, pathlib.Path(os.environ["AB_LOG"]))
    if path is None:
        sys.exit(why)
    feeds = bench.make_inputs(onnx.load(str(path), load_external_data=False))
    if peer == "ort":
        so = bench.ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = bench.ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = bench.ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        s = bench.ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        got = s.run(None, feeds)
        def call():
            s.run(None, feeds)
    else:
        cfg = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
               "INFERENCE_PRECISION_HINT": "f32", "NUM_STREAMS": 1}
        req = bench.ov.Core().compile_model(str(path), "CPU", cfg).create_infer_request()
        res = req.infer(feeds)
        got = [np.array(res[o]) for o in req.model_outputs]
        def call():
            req.infer(feeds)
    one = bench.ort.SessionOptions()
    one.intra_op_num_threads = 1
    ref = bench.ort.InferenceSession(str(path), one, providers=["CPUExecutionProvider"]).run(
        None, feeds)
    err = max(float(np.max(np.abs(g - r))) / max(float(np.max(np.abs(r))), 1e-30)
              for g, r in zip(got, ref))
    print(json.dumps({"ready": peer, "max_rel_diff_vs_ort_t1": err}), flush=True)
    for line in sys.stdin:
        print(json.dumps(bench.time_calls(call, int(line), warmup)), flush=True)


class Peer:
    """A peer's child process (serve), stopped between its turns."""

    def __init__(self, peer, a, out):
        env = dict(os.environ, AB_LOG=str(out))
        self.p = subprocess.Popen([sys.executable, __file__, "--serve", peer, "--model", a.model,
                                   "--threads", str(a.threads), "--warmup", str(a.warmup), "-"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=env)
        self.ready = json.loads(self.p.stdout.readline())
        self.p.send_signal(signal.SIGSTOP)

    def times(self, reps):
        self.p.send_signal(signal.SIGCONT)
        self.p.stdin.write(f"{reps}\n")
        self.p.stdin.flush()
        ms = json.loads(self.p.stdout.readline())
        self.p.send_signal(signal.SIGSTOP)
        return ms

    def close(self):
        self.p.send_signal(signal.SIGCONT)
        self.p.stdin.close()
        self.p.wait()


def kiln_times(argv, ins, label, a, out):
    r = subprocess.run([*argv, str(a.reps), str(a.warmup), str(a.threads), *ins,
                        str(out / f"out-{label}.bin")], capture_output=True, text=True, check=True)
    return [float(x) for x in r.stdout.split()]


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
    ap.add_argument("--peers", default=",".join(PEERS),
                    help="peers timed as sides of the same rounds (comma list; '' for none)")
    ap.add_argument("--json")
    ap.add_argument("--serve", choices=PEERS, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve:
        serve(a.serve, a.model, a.threads, a.warmup)
        return
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    probe = bench.build_probe(out)
    sides = {}
    for s in a.sides:
        label, spec = s.split("=", 1)
        argv, ins = build(label, spec, a.model, out)
        sides[label] = lambda argv=argv, ins=ins, label=label: kiln_times(argv, ins, label, a, out)
    kilns = list(sides)
    if a.peers:  # the peers draw bench.py's seeded inputs: the bytes of the harnesses' in*.bin
        path, why = bench.model_path(a.model, out)
        feeds = bench.make_inputs(onnx.load(str(path), load_external_data=False)).values()
        for s in a.sides:
            ins = sorted((pathlib.Path(s.split("=", 1)[1].partition(":")[0]) / a.model).glob(
                "in*.bin"))
            if [p.read_bytes() for p in ins] != [np.ascontiguousarray(v).tobytes() for v in feeds]:
                sys.exit(f"ab_placement.py: {s}: its in*.bin are not bench.py's seeded inputs")
    peers = {}
    for peer in filter(None, a.peers.split(",")):
        peers[peer] = Peer(peer, a, out)
        sides[peer] = lambda p=peers[peer]: p.times(a.reps)
        print(f"{peer}: {peers[peer].ready}", flush=True)
    labels = list(sides)
    rounds = []  # per round: label -> (placement, probe ns, [ms])
    # SIGINT or SIGTERM ends the rounds early (a background job ignores SIGINT: reset it)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        for rnd in range(a.rounds):
            meds = {}
            order = labels[rnd % len(labels):] + labels[:rnd % len(labels)]
            for label in order:
                ms, pl = bench.probed(probe, sides[label])
                meds[label] = (pl["placement"], pl["probe_ns"], ms)
                print(f"round {rnd} {label}: {pl['placement']} {pl['probe_ns']} "
                      f"median {statistics.median(ms):.2f} ms", flush=True)
            rounds.append(meds)
    except KeyboardInterrupt:
        print(f"interrupted: {len(rounds)} rounds", flush=True)
    finally:
        for p in peers.values():
            p.close()
    report(a, rounds, kilns, list(peers))
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps({"kilns": kilns, "peers": list(peers),
                                                    "rounds": rounds}))


def report(a, rounds, kilns, peers):
    """The tables: per placement and side the calls' median and minimum and the paired ratio
    against the first side; per placement and Kiln side the ratio to the faster peer."""
    labels = kilns + peers
    times = {}  # placement -> label -> [ms]
    ratios = {}  # placement -> label -> [a round's median over the first side's, same round]
    vs_peer = {}  # placement -> kiln label -> [a round's median over the faster peer's]
    for meds in rounds:
        med = {k: (pl, statistics.median(ms)) for k, (pl, _, ms) in meds.items()}
        for label, (pl, _, ms) in meds.items():
            times.setdefault(pl, {}).setdefault(label, []).extend(ms)
        first = med[labels[0]]
        for label, (pl, m) in med.items():
            if pl == first[0]:
                ratios.setdefault(pl, {}).setdefault(label, []).append(m / first[1])
        if peers and all(med[p][0] == med[peers[0]][0] for p in peers):
            pl, best = med[peers[0]][0], min(med[p][1] for p in peers)
            for k in kilns:
                if med[k][0] == pl:
                    vs_peer.setdefault(pl, {}).setdefault(k, []).append(med[k][1] / best)
    print(f"\n{a.model}, {a.threads} threads, {len(rounds)} rounds of {a.reps} calls a side")
    print("| placement | side | calls | median ms | min ms | paired ratio (rounds) |")
    print("|---|---|---:|---:|---:|---:|")
    pls = ("one L3", "two L3s", "moved", "unknown")
    for pl in pls:
        for label in labels:
            ms = times.get(pl, {}).get(label)
            r = ratios.get(pl, {}).get(label, [])
            if ms:
                print(f"| {pl} | {label} | {len(ms)} | {statistics.median(ms):.2f} | "
                      f"{min(ms):.2f} | {statistics.median(r) if r else float('nan'):.3f} "
                      f"({len(r)}) |")
    if not peers:
        return
    print(f"\nKiln over the faster peer ({' or '.join(peers)}), the median of the rounds' "
          "ratios of medians; the rounds where the side and every peer drew that placement")
    print("| placement | side | ratio | min, max | rounds |")
    print("|---|---|---:|---:|---:|")
    for pl in pls[:2]:
        for k in kilns:
            r = vs_peer.get(pl, {}).get(k)
            if r:
                print(f"| {pl} | {k} | {statistics.median(r):.3f} | {min(r):.3f}, "
                      f"{max(r):.3f} | {len(r)} |")


if __name__ == "__main__":
    main()
