#!/usr/bin/env python3
"""GPU machine: the batch-1 bias of bench/gpu/run.py, reproduced on one bundle of prepare.py.
Times the bundle (run.py's Kiln: graph replays, medians of 100 after 20 warm-ups) with the SM
clock, memory clock, power and throttle reasons from nvidia-smi beside each median, in this
order: a fresh context; the graph captured again with the same cuBLASLt sites (no eager run);
a second context; after the first is tuned (NAME_cuda_tune: an eager run, then a capture);
then 3 s of PyTorch fp16 GEMMs, 10 s idle, and a tune after them.
usage: python3 bench/gpu/b1_bias.py BENCHDIR [KEY (resnet50_b1_fp16)]"""
import json
import lzma
import pathlib
import subprocess
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import models  # noqa: E402
import run  # noqa: E402


def clocks():
    q = "clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active"
    return subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
                          capture_output=True, text=True).stdout.strip()


def main():
    bench = pathlib.Path(sys.argv[1])
    key = sys.argv[2] if len(sys.argv) > 2 else "resnet50_b1_fp16"
    e = json.load(open(bench / "index.json"))[key]
    w = pathlib.Path("/tmp") / e["weights"][:-3]
    w.write_bytes(lzma.open(bench / "weights" / e["weights"]).read())

    def new():
        k = run.Kiln(bench / key / "libkb.so", w)
        k.set_inputs(models.inputs(e["model"], e["batch"], 0, "cuda"))
        return k

    def t(tag, k, n=3):
        for _ in range(n):
            print(f"{tag:58s} {k.time(run.ITERS):.4f} ms  {clocks()}", flush=True)

    k1 = new()
    t("fresh context", k1)
    k1.load_tuning(k1.tuning())
    t("graph captured again, same sites (no eager run)", k1)
    k2 = new()
    t("a second context, the first alive", k2)
    k1.tune()
    t("the first after its tuning (eager run + capture)", k1)
    t("the second, after the first's tuning", k2)
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.half)
    t0 = time.time()
    while time.time() - t0 < 3:
        a @ a
    torch.cuda.synchronize()
    print(f"{'after 3 s of PyTorch fp16 GEMMs':58s} {clocks()}", flush=True)
    t("the second, right after the GEMMs", k2)
    time.sleep(10)
    t("the second, after 10 s idle", k2)
    del a
    torch.cuda.empty_cache()
    k2.tune()
    t("the second after its tuning (PyTorch GEMMs before)", k2)
    k3 = new()
    t("a third context (PyTorch GEMMs before)", k3)


if __name__ == "__main__":
    main()
