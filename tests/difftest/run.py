#!/usr/bin/env python3
"""Kiln's differential test: random valid models (gen.py) through Kiln and ONNX Runtime
(harness.py); failures reduced (reduce.py) and kept. See docs/difftest.md.

usage: run.py [--kiln PATH] [--seeds A:B | --minutes M [--first SEED]] [--jobs N]
              [--cuda-every N] [--sanitize-every N] [--no-reduce] [--work DIR]
              [--failures DIR] [--log FILE]
       run.py --replay [--kiln PATH] [--jobs N]     (tests/difftest/regressions)
       run.py --one FILE.onnx [--kiln PATH]         (one model, verbose)

A seed passes when every configuration (C bundle with the passes on, and with
--passes=none; CUDA bundles under nvcc on every Nth seed) agrees with ONNX Runtime or Kiln
refuses the model in every C configuration alike (an unsupported op: counted, not failed).
A failing seed is reduced to a small model written to the failures folder as
seed<N>.onnx, .npz (its inputs) and .txt (what failed). --replay runs every model under
tests/difftest/regressions (on its stored inputs and on fresh ones, built the way its
failure showed: metadata "cc" and "sanitize"); each must pass.
Ends with "N passed, N failed"; exits 1 on any failure.
"""
import argparse
import collections
import concurrent.futures
import glob
import json
import os
import shutil
import sys
import time

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen  # noqa: E402
import harness  # noqa: E402
import reduce as reducer  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
REGRESSIONS = os.path.join(HERE, "regressions")


def describe(res):
    return "; ".join("%s %r" % (k, v) for k, v in sorted(res.items()) if v.kind != "ok")


def one_seed(args):
    """Generates, checks and (on failure) reduces one seed; returns a result dict."""
    seed, opts = args
    work = os.path.join(opts["work"], "s%d" % seed)
    t0 = time.time()
    out = {"seed": seed, "status": None, "detail": "", "tags": {}, "nodes": 0, "ops": {}}
    try:
        model, tags = gen.generate(seed)
    except Exception as e:  # noqa: BLE001 - a generator fault is a finding of its own
        out.update(status="generator", detail="%s: %s" % (type(e).__name__, str(e)[:300]))
        return out
    out["tags"] = dict(tags)
    out["nodes"] = len(model.graph.node)
    out["ops"] = dict(collections.Counter(n.op_type for n in model.graph.node))
    cuda = opts["cuda_every"] > 0 and seed % opts["cuda_every"] == 0
    sanitize = opts["sanitize_every"] > 0 and seed % opts["sanitize_every"] == 1 % max(
        1, opts["sanitize_every"])
    configs = harness.CONFIGS + ((harness.NHWC_IO,) if opts["nhwc_every"] and
                                 seed % opts["nhwc_every"] == 2 % opts["nhwc_every"] else ())
    opts = dict(opts, configs=configs)
    status, res = harness.check_model(model, opts["kiln"], work, seed=seed, cuda=cuda,
                                      sanitize=sanitize, nvcc=opts["nvcc"], configs=configs)
    out["status"] = status
    out["cuda"] = cuda
    out["detail"] = describe(res)
    if status == "refused":
        out["refusal"] = next(v.detail for v in res.values() if v.kind == "refused")
    if status == "fail":
        sig = harness.failure_signature(res)
        out["signature"] = sorted("%s:%s" % p for p in sig)
        out["kind"] = failure_kind(res)
        if opts["reduce"] and reduce_wanted(opts, out["kind"]):
            out.update(reduce_failure(model, seed, sig, opts, work, cuda, sanitize))
    if status in ("ok", "refused", "invalid"):
        shutil.rmtree(work, ignore_errors=True)
    out["seconds"] = time.time() - t0
    return out


def failure_kind(res):
    """A coarse key of a failure (configurations, kinds, the message without numbers and
    names), so a campaign reduces the first few failures of each kind only."""
    import re
    parts = []
    for name, o in sorted(res.items()):
        if o.kind in ("ok",):
            continue
        text = re.sub(r"'[^']*'", "'*'", o.detail)
        text = re.sub(r"[-+]?\d[\d.e+-]*", "#", text)
        parts.append("%s %s %s" % (name, o.kind, text[:80]))
    return " | ".join(parts)


def reduce_wanted(opts, kind):
    """Whether this worker reduces another failure of this kind (--reduce-per-kind)."""
    path = os.path.join(opts["work"], "kinds.txt")
    try:
        with open(path) as f:
            seen = f.read().splitlines().count(kind)
    except OSError:
        seen = 0
    if seen >= opts["reduce_per_kind"]:
        return False
    with open(path, "a") as f:
        f.write(kind + "\n")
    return True


def reduce_failure(model, seed, sig, opts, work, cuda, sanitize):
    feeds = harness.draw_inputs(model, seed)
    rwork = os.path.join(work, "reduce")

    def oracle(m, f):
        status, res = harness.check_model(m, opts["kiln"], rwork, seed=seed, feeds=f, cuda=cuda,
                                          sanitize=sanitize, nvcc=opts["nvcc"],
                                          configs=opts["configs"])
        return status == "fail" and sig <= harness.failure_signature(res)
    r = reducer.Reducer(model, feeds, oracle)
    small, sfeeds = r.run()
    # how the bundles were built, for --replay
    meta = harness.metadata(small)
    meta["cc"] = seed % len(harness.CC_VARIANTS)
    meta["sanitize"] = bool(sanitize)
    for e in small.metadata_props:
        if e.key == "difftest":
            e.value = json.dumps(meta, sort_keys=True)
    status, res = harness.check_model(small, opts["kiln"], rwork, seed=seed, feeds=sfeeds,
                                      cuda=cuda, configs=opts["configs"],
                                      sanitize=sanitize, nvcc=opts["nvcc"])
    os.makedirs(opts["failures"], exist_ok=True)
    base = os.path.join(opts["failures"], "seed%d" % seed)
    onnx.save(small, base + ".onnx")
    np.savez(base + ".npz", **sfeeds)
    ops = collections.Counter(n.op_type for n in small.graph.node)
    with open(base + ".txt", "w") as f:
        cc, opt = harness.CC_VARIANTS[seed % len(harness.CC_VARIANTS)]
        f.write("seed %d: %d nodes -> %d (%s); %d reduction tests; built with %s %s\n%s\n" % (
            seed, len(model.graph.node), len(small.graph.node),
            ", ".join("%s %d" % kv for kv in sorted(ops.items())), r.tests, cc, " ".join(opt),
            describe(res)))
    shutil.rmtree(rwork, ignore_errors=True)
    return {"reduced": base + ".onnx", "reduced_nodes": len(small.graph.node),
            "reduced_detail": describe(res)}


def replay_one(args):
    path, opts = args
    name = os.path.basename(path)[:-5]
    model = onnx.load(path)
    work = os.path.join(opts["work"], "replay_" + name)
    feed_sets = []
    npz = path[:-5] + ".npz"
    if os.path.exists(npz):
        with np.load(npz) as z:
            feed_sets.append(("stored inputs", {k: z[k] for k in z.files}))
    seed = sum(name.encode()) + 1
    feed_sets.append(("fresh inputs", harness.draw_inputs(model, seed)))
    meta = harness.metadata(model)
    cc = harness.CC_VARIANTS[meta["cc"]] if "cc" in meta else None
    for what, feeds in feed_sets:
        status, res = harness.check_model(model, opts["kiln"], work, seed=seed, feeds=feeds,
                                          cuda=opts["cuda_every"] > 0, nvcc=opts["nvcc"],
                                          cc=cc, sanitize=meta.get("sanitize", False))
        if status not in ("ok",):
            return {"name": name, "status": "fail",
                    "detail": "%s: %s (%s)" % (what, status, describe(res))}
    shutil.rmtree(work, ignore_errors=True)
    return {"name": name, "status": "ok", "detail": ""}


def summarize_coverage(results, log):
    ops, tags = collections.Counter(), collections.Counter()
    for r in results:
        ops.update(r.get("ops", {}))
        for k, v in r.get("tags", {}).items():
            if not k[0].isupper():
                tags[k] += v
    log("ops (%d kinds): %s" % (len(ops), ", ".join("%s %d" % kv for kv in ops.most_common())))
    log("patterns and variants: %s" % ", ".join("%s %d" % kv for kv in sorted(tags.items())
                                                 if not kv[0].startswith("block_")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kiln", default=os.environ.get("KILN", os.path.join(ROOT, "build", "kiln")))
    ap.add_argument("--seeds", default=None, help="A:B, seeds A..B-1")
    ap.add_argument("--minutes", type=float, default=None, help="run seeds until time is up")
    ap.add_argument("--first", type=int, default=0, help="first seed of a --minutes run")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("KILN_JOBS", "2")))
    ap.add_argument("--cuda-every", type=int, default=0, help="CUDA bundles every Nth seed")
    ap.add_argument("--nhwc-every", type=int, default=0,
                    help="also compile every Nth seed with --io-layout nhwc")
    ap.add_argument("--sanitize-every", type=int, default=0,
                    help="build the C bundle with ASan+UBSan every Nth seed")
    ap.add_argument("--nvcc", default=os.environ.get("NVCC", "nvcc"))
    ap.add_argument("--no-reduce", action="store_true")
    ap.add_argument("--reduce-per-kind", type=int, default=2,
                    help="reduce at most this many failures of one kind")
    ap.add_argument("--replay", action="store_true")
    ap.add_argument("--one", default=None)
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "difftest"))
    ap.add_argument("--failures", default=None, help="reduced failures (default WORK/failures)")
    ap.add_argument("--log", default=None, help="also append every line to this file")
    a = ap.parse_args()
    kiln = os.path.abspath(a.kiln)
    if a.cuda_every and not shutil.which(a.nvcc):
        print("nvcc not found: CUDA bundles not compiled")
        a.cuda_every = 0
    opts = {"kiln": kiln, "work": os.path.abspath(a.work), "cuda_every": a.cuda_every,
            "sanitize_every": a.sanitize_every, "nvcc": a.nvcc, "reduce": not a.no_reduce,
            "reduce_per_kind": a.reduce_per_kind, "nhwc_every": a.nhwc_every,
            "failures": os.path.abspath(a.failures or os.path.join(a.work, "failures"))}
    os.makedirs(opts["work"], exist_ok=True)
    if os.path.exists(os.path.join(opts["work"], "kinds.txt")):
        os.remove(os.path.join(opts["work"], "kinds.txt"))
    logf = open(a.log, "a") if a.log else None

    def log(line):
        print(line, flush=True)
        if logf:
            logf.write(line + "\n")
            logf.flush()
    t0 = time.time()

    if a.one:
        model = onnx.load(a.one)
        status, res = harness.check_model(model, kiln, os.path.join(opts["work"], "one"),
                                          seed=0, cuda=a.cuda_every > 0, nvcc=a.nvcc)
        log("%s: %s %s" % (a.one, status, describe(res)))
        return 0 if status in ("ok", "refused") else 1

    if a.replay:
        paths = sorted(glob.glob(os.path.join(REGRESSIONS, "*.onnx")))
        passed = failed = 0
        with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, a.jobs)) as pool:
            for r in pool.map(replay_one, [(p, opts) for p in paths]):
                if r["status"] == "ok":
                    passed += 1
                    log("ok %s" % r["name"])
                else:
                    failed += 1
                    log("FAIL %s: %s" % (r["name"], r["detail"]))
        log("replayed %d regression models in %.0f s" % (len(paths), time.time() - t0))
        log("%d passed, %d failed" % (passed, failed))
        return 1 if failed else 0

    if a.seeds:
        lo, hi = (int(x) for x in a.seeds.split(":"))
        seeds = iter(range(lo, hi))
        deadline = None
    else:
        seeds = iter(range(a.first, 1 << 62))
        deadline = t0 + 60 * (a.minutes or 1)
    counts = collections.Counter()
    results, failures, refusals = [], [], collections.Counter()
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        running = set()

        def submit():
            if deadline and time.time() >= deadline:
                return False
            s = next(seeds, None)
            if s is None:
                return False
            running.add(pool.submit(one_seed, (s, opts)))
            return True
        for _ in range(max(1, a.jobs)):
            submit()
        while running:
            done, _ = concurrent.futures.wait(running, return_when="FIRST_COMPLETED")
            for fut in done:
                running.discard(fut)
                r = fut.result()
                results.append(r)
                counts[r["status"]] += 1
                if r["status"] == "ok":
                    pass
                elif r["status"] == "refused":
                    refusals[r["refusal"].split(": ", 1)[-1][:120]] += 1
                else:
                    failures.append(r)
                    log("FAIL seed %d (%s): %s" % (r["seed"], r["status"], r["detail"][:600]))
                    if r.get("reduced"):
                        log("  reduced to %d nodes: %s (%s)" % (r["reduced_nodes"],
                                                              r["reduced"], r["reduced_detail"][:400]))
                submit()
    wall = time.time() - t0
    n = len(results)
    seeds_run = sorted(r["seed"] for r in results)
    log("difftest: %d models (seeds %s..%s) in %.0f s on %d jobs: %d ok, %d refused by Kiln, "
        "%d invalid (ONNX Runtime), %d generator faults, %d failed; CUDA compiled for %d" % (
            n, seeds_run[0] if n else "-", seeds_run[-1] if n else "-", wall, a.jobs,
            counts["ok"], counts["refused"], counts["invalid"], counts["generator"],
            counts["fail"], sum(1 for r in results if r.get("cuda"))))
    if refusals:
        log("refusals: %s" % "; ".join("%d x %s" % (v, k) for k, v in refusals.most_common(8)))
    nodes = [r["nodes"] for r in results if r["nodes"]]
    if nodes:
        log("nodes per model: min %d, mean %.1f, max %d" % (min(nodes), sum(nodes) / len(nodes),
                                                           max(nodes)))
    summarize_coverage(results, log)
    bad = counts["fail"] + counts["generator"] + counts["invalid"]
    log("%d passed, %d failed" % (n - bad, bad))
    if logf:
        with open(a.log + ".json", "w") as f:
            json.dump(results, f)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
