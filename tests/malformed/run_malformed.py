"""Runs the malformed-model suite: writes the cases (gen_malformed.py) and loads each one with
`kiln inspect` (or <build>/tests/loadall while the CLI cannot inspect yet); the resource
cases go through `kiln compile` into a scratch folder.

A bad model passes when the tool exits with status exactly 1, prints "error:" on stderr,
and shows no sanitizer report and no signal. The positive controls must exit 0. Every case
runs under a time bound (its own, or CASE_TIMEOUT_S) and a memory bound (its own, or
CASE_MEM_MB): RLIMIT_AS for the child, or for an AddressSanitizer build (which reserves
terabytes of address space) ASan's hard_rss_limit_mb; the peak RSS the kernel reports for
the child (wait4) must stay within the bound too. Resource cases print their measured time
and peak memory. Prints "ok NAME" or "FAIL NAME: reason" per case, then "N passed, N
failed"; exits 1 on any failure.
Usage: run_malformed.py --build DIR [--out DIR] [--tool auto|kiln|loadall] [--only SUBSTR]
"""
import argparse
import concurrent.futures
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_malformed  # noqa: E402

CASE_TIMEOUT_S = 60     # one load of a few-MB file; anything slower is a hang
CASE_MEM_MB = 2048      # peak memory of one case (the fuzz step's -rss_limit_mb)
# Sanitizers exit with status 1 by default, the very status a clean refusal uses; give them
# their own so a report can never pass as a diagnostic.
SANITIZER_ENV = {
    "ASAN_OPTIONS": "exitcode=86:detect_leaks=1:abort_on_error=0",
    "UBSAN_OPTIONS": "exitcode=87:print_stacktrace=1:halt_on_error=1",
    "LSAN_OPTIONS": "exitcode=88",
}
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                   "runtime error:", "SUMMARY: ")


def is_asan(binary):
    """Whether binary was built with AddressSanitizer (RLIMIT_AS would stop it at start)."""
    try:
        with open(binary, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


PEAK_POLL_S = 0.01  # how often the child's VmHWM is read


def watch_peak(pid, done, peak, exe):
    """Keeps peak[0] at the largest VmHWM (KiB) of /proc/PID/status seen until done, once
    PID runs exe (before its exec it is a copy of this Python)."""
    path = "/proc/%d/status" % pid
    while not done.is_set():
        try:
            if os.path.realpath("/proc/%d/exe" % pid) != exe:
                done.wait(PEAK_POLL_S)
                continue
            with open(path) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak[0] = max(peak[0], int(line.split()[1]))
                        break
        except OSError:
            return
        done.wait(PEAK_POLL_S)


def run_tool(cmd, path, time_s=CASE_TIMEOUT_S, mem_mb=CASE_MEM_MB, asan=False):
    """(exit status, or None after the time bound; stdout; stderr; seconds; peak MiB)."""
    env = dict(os.environ, **SANITIZER_ENV)
    preexec = None
    if asan:
        env["ASAN_OPTIONS"] += ":hard_rss_limit_mb=%d" % mem_mb
    else:
        limit = mem_mb << 20

        def preexec():
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.time()
        p = subprocess.Popen(cmd + [path], stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                             env=env, preexec_fn=preexec)
        killed = []

        def kill():
            killed.append(True)
            try:
                os.kill(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        timer = threading.Timer(time_s, kill)
        timer.start()
        peak = [0]
        done = threading.Event()
        poller = threading.Thread(target=watch_peak,
                                  args=(p.pid, done, peak, os.path.realpath(cmd[0])))
        poller.start()
        _, status, usage = os.wait4(p.pid, 0)
        done.set()
        poller.join()
        timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        seconds = time.time() - t0
        out.seek(0)
        err.seek(0)
        so, se = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    # the child's own high-water mark (0: it ended before the first reading); ru_maxrss
    # would start at this process's RSS, which a forked child keeps through exec
    del usage
    peak_mb = peak[0] / 1024.0
    return (None if killed else p.returncode), so, se, seconds, peak_mb


def judge(expect, rc, stderr, time_s=CASE_TIMEOUT_S, mem_mb=CASE_MEM_MB, peak_mb=0.0):
    """None when the outcome is right, else the reason it is not."""
    if rc is None:
        return f"timeout after {time_s} s"
    if peak_mb > mem_mb:
        return f"peak memory {peak_mb:.0f} MiB, over the bound of {mem_mb} MiB"
    if "hard rss limit" in stderr.lower():
        return f"over the memory bound of {mem_mb} MiB (AddressSanitizer's hard_rss_limit_mb)"
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = str(-rc)
        return f"killed by signal {name}"
    for mark in SANITIZER_MARKS:
        if mark in stderr:
            line = next((ln for ln in stderr.splitlines() if mark in ln), mark)
            return f"sanitizer report: {line.strip()[:160]}"
    if expect == "ok":
        if rc != 0:
            first = next((ln for ln in stderr.splitlines() if ln.strip()), "")
            return f"valid model refused (exit {rc}): {first.strip()[:160]}"
        return None
    if rc != 1:
        return f"exit status {rc}, expected 1"
    if "error:" not in stderr:
        return "no 'error:' diagnostic on stderr"
    return None


def pick_tool(build, choice, control):
    kiln = os.path.join(build, "kiln")
    loadall = os.path.join(build, "tests", "loadall")
    if choice == "kiln" or (choice == "auto" and os.access(kiln, os.X_OK)
                            and run_tool([kiln, "inspect"], control, asan=is_asan(kiln))[0] == 0):
        return [kiln, "inspect"]
    if choice == "loadall" or os.access(loadall, os.X_OK):
        return [loadall]
    return [kiln, "inspect"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="build dir holding kiln and tests/loadall")
    ap.add_argument("--out", help="where to write the cases (default BUILD/malformed)")
    ap.add_argument("--tool", choices=("auto", "kiln", "loadall"), default="auto")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", default=None, help="run the cases whose name holds SUBSTR")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    out = os.path.abspath(args.out or os.path.join(build, "malformed"))

    cases = gen_malformed.generate(out)
    os.makedirs(os.path.join(out, "bundles"), exist_ok=True)
    control = next(c[1] for c in cases if c[0] == "valid_model")
    cmd = pick_tool(build, args.tool, control)
    kiln = os.path.join(build, "kiln")
    asan = is_asan(cmd[0])
    if args.only:
        cases = [c for c in cases if args.only in c[0]]
    print(f"tool: {' '.join(cmd)}   cases: {out}   bounds: {CASE_TIMEOUT_S} s, {CASE_MEM_MB} MiB "
          f"({'ASan hard_rss_limit_mb' if asan else 'RLIMIT_AS'}) unless a case states its own")
    log_dir = os.path.join(out, "logs")
    os.makedirs(log_dir, exist_ok=True)
    scratch = os.path.join(out, "bundles")

    def one(case):
        name, path, expect = case
        if case.tool == "compile":
            ccmd = [kiln, "compile", "-o", os.path.join(scratch, name)]
        else:
            ccmd = cmd
        time_s = case.time_s or CASE_TIMEOUT_S
        mem_mb = case.mem_mb or CASE_MEM_MB
        rc, stdout, stderr, seconds, peak = run_tool(ccmd, path, time_s, mem_mb, asan)
        with open(os.path.join(log_dir, name + ".log"), "w") as f:
            f.write(f"$ {' '.join(ccmd)} {path}\nexit: {rc}\ntime: {seconds:.2f} s\n"
                    f"peak: {peak:.0f} MiB\n--- stdout\n{stdout}--- stderr\n{stderr}")
        figures = f" ({seconds:.2f} s, {peak:.0f} MiB of {time_s} s, {mem_mb} MiB)" \
            if case.time_s or case.mem_mb else ""
        return name, judge(expect, rc, stderr, time_s, mem_mb, peak), figures

    passed = failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for name, reason, figures in pool.map(one, cases):
            if reason is None:
                passed += 1
                print(f"ok {name}{figures}")
            else:
                failed += 1
                print(f"FAIL {name}: {reason}{figures}")
    if failed:
        print(f"(per-case output: {log_dir}/NAME.log)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
