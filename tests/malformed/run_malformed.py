"""Runs the malformed-model suite: writes the cases (gen_malformed.py) and loads each one with
`kiln inspect`, or with <build>/tests/loadall while the CLI cannot inspect yet.

A bad model passes when the tool exits with status exactly 1, prints "error:" on stderr,
and shows no sanitizer report and no signal. The positive controls must exit 0.
Prints "ok NAME" or "FAIL NAME: reason" per case, then "N passed, N failed"; exits 1 on
any failure. Usage: run_malformed.py --build DIR [--out DIR] [--tool auto|kiln|loadall]
"""
import argparse
import concurrent.futures
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_malformed  # noqa: E402

CASE_TIMEOUT_S = 60     # one load of a few-MB file; anything slower is a hang
# Sanitizers exit with status 1 by default, the very status a clean refusal uses; give them
# their own so a report can never pass as a diagnostic.
SANITIZER_ENV = {
    "ASAN_OPTIONS": "exitcode=86:detect_leaks=1:abort_on_error=0",
    "UBSAN_OPTIONS": "exitcode=87:print_stacktrace=1:halt_on_error=1",
    "LSAN_OPTIONS": "exitcode=88",
}
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                   "runtime error:", "SUMMARY: ")


def run_tool(cmd, path):
    env = dict(os.environ, **SANITIZER_ENV)
    try:
        p = subprocess.run(cmd + [path], stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=CASE_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        return None, "", ""
    return (p.returncode, p.stdout.decode(errors="replace"),
            p.stderr.decode(errors="replace"))


def judge(expect, rc, stderr):
    """None when the outcome is right, else the reason it is not."""
    if rc is None:
        return f"timeout after {CASE_TIMEOUT_S} s"
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
                            and run_tool([kiln, "inspect"], control)[0] == 0):
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
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    out = os.path.abspath(args.out or os.path.join(build, "malformed"))

    cases = gen_malformed.generate(out)
    control = next(p for n, p, e in cases if n == "valid_model")
    cmd = pick_tool(build, args.tool, control)
    print(f"tool: {' '.join(cmd)}   cases: {out}")
    log_dir = os.path.join(out, "logs")
    os.makedirs(log_dir, exist_ok=True)

    def one(case):
        name, path, expect = case
        rc, stdout, stderr = run_tool(cmd, path)
        with open(os.path.join(log_dir, name + ".log"), "w") as f:
            f.write(f"$ {' '.join(cmd)} {path}\nexit: {rc}\n--- stdout\n{stdout}"
                    f"--- stderr\n{stderr}")
        return name, judge(expect, rc, stderr)

    passed = failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for name, reason in pool.map(one, cases):
            if reason is None:
                passed += 1
                print(f"ok {name}")
            else:
                failed += 1
                print(f"FAIL {name}: {reason}")
    if failed:
        print(f"(per-case output: {log_dir}/NAME.log)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
