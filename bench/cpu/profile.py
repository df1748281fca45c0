"""Where a C bundle's time goes, node by node, one thread: compiles MODEL with kiln (extra
`kiln compile` flags after --), wraps every node's block of NAME_run in the generated C (its
runtime call, or the loops an elementwise node writes inline) with a pair of
CLOCK_THREAD_CPUTIME_ID reads (CPU time: on a shared machine, time spent
preempted does not count; caches shared with other processes still do) (a copy of the bundle: the compiler's output is not changed), builds
it at -O3 -march=native with a small harness (pseudo-random inputs), runs it WARMUP times,
then REPS times, and prints per node its median milliseconds, its kind (Winograd, packed
GEMM by kernel shape and stride, other kernels), for convolutions the flops (2 x MACs of
the direct convolution, also for Winograd: its "effective" rate) and GFLOP/s, and a summary
per kind with the share of the total. The clock pairs cost ~50 ns a call (60 calls in
ResNet-50: 0.003 ms; a CPU-time read costs more, ~0.2 us).

With --threads N (N > 1) it compiles with --workers N and times every node by the wall clock
(CLOCK_MONOTONIC, from the calling thread, which is worker 0) twice per rep, in the same
process: once under NAME_run (one thread) and once under NAME_run_parallel on
examples/parallel's kiln_pool of N threads (the run after an untimed parallel run, so the
pool's threads spin as they do between back-to-back calls). It prints per node both times,
the speed-up, and how often the node called the hook and with how many tasks in all (a
counting hook wraps kiln_pool_for): a node with no calls ran serially.

usage: python bench/cpu/profile.py --kiln PATH MODEL [--reps N] [--warmup N] [--threads N]
                                   [--peak GFLOPS] [--work DIR] [-- KILN_COMPILE_FLAGS...]
"""
import argparse
import pathlib
import re
import shutil
import statistics
import subprocess
import sys

CALL = re.compile(r"^(\s+)(rt_[a-z0-9_]+)\((.*)\);\s*$")
GEOM = re.compile(r"\.n = (\d+), \.c = (\d+), \.m = (\d+), \.group = (\d+),\s*"
                  r"\.in = \{(\d+), (\d+), (\d+)\}, \.out = \{(\d+), (\d+), (\d+)\},\s*"
                  r"\.k = \{(\d+), (\d+), (\d+)\}, \.s = \{(\d+), (\d+), (\d+)\}")

PRELUDE = r"""#define _POSIX_C_SOURCE 199309L
#include <time.h>
static double kp_ms[%d];
int kp_node; /* the node being timed: the counting hook of --threads charges it */
static double kp_now(void) {
    struct timespec t;
    clock_gettime(%s, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}
double *net_profile_ms(void) { return kp_ms; }
"""

MAIN = r"""#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "net.h"
double *net_profile_ms(void);
static void *block(size_t n) {
    void *p = aligned_alloc(64, ((n ? n : 1) + 63) / 64 * 64);
    if (!p) exit(2);
    memset(p, 0, ((n ? n : 1) + 63) / 64 * 64);
    return p;
}
int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "rb");
    int reps = atoi(argv[2]), warmup = atoi(argv[3]), i, j;
    long n;
    if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) return 2;
    void *w = block((size_t)n), *arena = block(NET_ARENA_SIZE);
    if (n && fread(w, 1, (size_t)n, f) != (size_t)n) return 2;
    fclose(f);
    static const size_t in_bytes[] = {@IN_BYTES@}, out_bytes[] = {@OUT_BYTES@};
    static const int in_i64[] = {@IN_I64@}; /* token ids, masks: 1, valid for any table */
    void *ins[@N_IN@], *outs[@N_OUT@];
    for (i = 0; i < @N_IN@; i++) {
        float *p = block(in_bytes[i]);
        for (j = 0; j < (int)(in_bytes[i] / 4); j++) p[j] = (float)((j * 7919) % 17) / 8.0f - 1.0f;
        if (in_i64[i])
            for (j = 0; j < (int)(in_bytes[i] / 8); j++) ((long long *)p)[j] = 1;
        ins[i] = p;
    }
    for (i = 0; i < @N_OUT@; i++) outs[i] = block(out_bytes[i]);
    net_inputs in = {@IN_INIT@};
    net_outputs out = {@OUT_INIT@};
    double *ms = net_profile_ms();
    for (i = 0; i < warmup; i++) net_run(&in, &out, w, arena);
    for (i = 0; i < reps; i++) {
        for (j = 0; j < @N_CALLS@; j++) ms[j] = 0;
        if (net_run(&in, &out, w, arena) != NET_OK) return 1;
        for (j = 0; j < @N_CALLS@; j++) printf("%.6f%c", ms[j], j + 1 < @N_CALLS@ ? ' ' : '\n');
    }
    return 0;
}
"""

# --threads: the same model, per rep one NAME_run and one NAME_run_parallel (after an untimed
# one, so the pool's threads are spinning), through a hook that counts calls and tasks per node
PAR_MAIN = r"""
#include "kiln_pool.h"
extern int kp_node;
static long long kp_calls[@N_CALLS@], kp_tasks[@N_CALLS@];
static KilnPool pool;
static void kp_for(void *ctx, int64_t n_tasks, KilnPoolTask fn, void *arg) {
    kp_calls[kp_node]++;
    kp_tasks[kp_node] += n_tasks;
    kiln_pool_for(ctx, n_tasks, fn, arg);
}
static int run_par(const net_inputs *in, net_outputs *out, const void *w, void *arena) {
    return net_run_parallel(in, out, w, arena, kp_for, &pool);
}
"""


def instrument(src, clock="CLOCK_THREAD_CPUTIME_ID"):
    """The bundle's C with every node's block of NAME_run timed (its kernel call, or the
    loops the elementwise emitter writes inline); returns (text, calls) where calls[i] is
    (kernel, geometry match or None) of node i: its first runtime call, else its op."""
    lines, calls, out, in_run = src.splitlines(), [], [], False
    op, start = None, None
    for i, line in enumerate(lines):
        if re.match(r"^(static )?int \w+_run(_with)?\(", line):
            in_run = True
        if not in_run:
            out.append(line)
            continue
        m = re.match(r"^    /\* (\w+)", line)
        if m:
            op = m.group(1)
        if line == "    {" and op:
            start = len(out)
            out.append(f"    {{ double kp_t0 = (kp_node = {len(calls)}, kp_now());")
            continue
        if line == "    }" and start is not None:
            body = lines[i - (len(out) - start) + 1:i]
            kernel, g = None, None
            for j, b in enumerate(body):
                c = CALL.match(b)
                if c and not c.group(2).startswith("rt_memmove"):
                    kernel = c.group(2)
                    if kernel.startswith("rt_pconv2"):  # geom and geom2: both products
                        gs = list(GEOM.finditer(" ".join(body[max(0, j - 16):j])))
                        g = TwoGeoms(gs[-2], gs[-1]) if len(gs) >= 2 else None
                    else:
                        g = GEOM.search(" ".join(body[max(0, j - 8):j]))
                    break
            out.append(f"    kp_ms[{len(calls)}] += kp_now() - kp_t0; }}")
            calls.append((kernel or op, g))
            start, op = None, None
            continue
        out.append(line)
    return PRELUDE % (max(len(calls), 1), clock) + "\n".join(out) + "\n", calls


def par_main_source(src, threads, n_calls):
    """main_source's harness turned into the --threads one: serial and parallel runs."""
    head, loop = src.split("    double *ms = net_profile_ms();")
    head = head.replace('#include "net.h"\n', '#include "net.h"\n' +
                        PAR_MAIN.replace("@N_CALLS@", str(n_calls)))
    return head + f"""    double *ms = net_profile_ms();
    if (kiln_pool_init(&pool, {threads}) != 0) return 2;
    for (i = 0; i < warmup; i++) net_run(&in, &out, w, arena), run_par(&in, &out, w, arena);
    for (i = 0; i < reps; i++) {{
        for (j = 0; j < {n_calls}; j++) ms[j] = 0;
        if (net_run(&in, &out, w, arena) != NET_OK) return 1;
        printf("S");
        for (j = 0; j < {n_calls}; j++) printf(" %.6f", ms[j]);
        if (run_par(&in, &out, w, arena) != NET_OK) return 1;
        for (j = 0; j < {n_calls}; j++) ms[j] = 0, kp_calls[j] = 0, kp_tasks[j] = 0;
        if (run_par(&in, &out, w, arena) != NET_OK) return 1;
        printf("\\nP");
        for (j = 0; j < {n_calls}; j++) printf(" %.6f", ms[j]);
        printf("\\n");
    }}
    printf("C");
    for (j = 0; j < {n_calls}; j++) printf(" %lld/%lld", kp_calls[j], kp_tasks[j]);
    printf("\\n");
    kiln_pool_destroy(&pool);
    return 0;
}}
"""


def main_source(hdr, n_calls):
    """The harness's C for a bundle whose header is hdr, and its inputs' and outputs' byte
    sizes (from the fields' comments in net.h); ([], []) when they cannot be read."""
    def fields(struct):
        body = re.search(r"typedef struct %s \{(.*?)\}" % struct, hdr, re.S).group(1)
        out = []
        for dt, dims in re.findall(r"/\* (f32|f64|i64|i32|u8|i8)\[([0-9,]*)\]", body):
            n = 1
            for d in filter(None, dims.split(",")):
                n *= int(d)
            out.append((str(n * {"f64": 8, "i64": 8, "f32": 4, "i32": 4}.get(dt, 1)), dt))
        return out
    ins, outs = fields("net_inputs"), fields("net_outputs")
    src = (MAIN.replace("@IN_BYTES@", ", ".join(b for b, _ in ins))
           .replace("@IN_I64@", ", ".join("1" if dt == "i64" else "0" for _, dt in ins))
           .replace("@OUT_BYTES@", ", ".join(b for b, _ in outs))
           .replace("@N_IN@", str(len(ins))).replace("@N_OUT@", str(len(outs)))
           .replace("@IN_INIT@", ", ".join(f"ins[{i}]" for i in range(len(ins))))
           .replace("@OUT_INIT@", ", ".join(f"outs[{i}]" for i in range(len(outs))))
           .replace("@N_CALLS@", str(n_calls)))
    return src, ins, outs


class TwoGeoms:
    """rt_pconv2's two operands: a 1x1 over x (geom) whose reduction runs on over x2's
    channels (geom2, e.g. ResNet-50's strided downsample) into one output. group(i) reads
    geom's fields, so the output's pixels are geom's."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def group(self, i):
        return self.a.group(i)


def kind(kernel, g):
    if isinstance(g, TwoGeoms):
        return f"{kind(kernel, g.a)} + {kind(kernel, g.b).split(' ', 1)[1]} (one product)"
    if g is None:
        return kernel.replace("rt_", "").replace("_f32", "").replace("_nhwc", "")
    kh, kw, s = int(g.group(12)), int(g.group(13)), int(g.group(15))
    c, grp = int(g.group(2)), int(g.group(4))
    what = "Winograd" if kernel.startswith("rt_wino") else \
        "packed" if kernel.startswith("rt_pconv") else kernel.replace("rt_", "")
    shape = f"{kh}x{kw}" + (f"/{s}" if s > 1 else "") + (" dw" if grp > 1 and grp == c else "")
    return f"{what} {shape}"


def flops(g):
    if isinstance(g, TwoGeoms):
        return flops(g.a) + flops(g.b)
    if g is None:
        return 0.0
    n, c, m, grp = (int(g.group(i)) for i in (1, 2, 3, 4))
    oh, ow, kh, kw = (int(g.group(i)) for i in (9, 10, 12, 13))
    return 2.0 * n * oh * ow * m * kh * kw * (c // grp)


def tensor_bytes(g):
    """Bytes a convolution must move at least: its input, output and weights once (f32)."""
    if isinstance(g, TwoGeoms):  # both inputs and weights, the one output
        return tensor_bytes(g.a) + tensor_bytes(g.b) - 4 * int(g.b.group(1)) * int(
            g.b.group(9)) * int(g.b.group(10)) * int(g.b.group(3))
    if g is None:
        return 0
    n, c, m, grp = (int(g.group(i)) for i in (1, 2, 3, 4))
    ih, iw, oh, ow = (int(g.group(i)) for i in (6, 7, 9, 10))
    kh, kw = int(g.group(12)), int(g.group(13))
    return 4 * (n * ih * iw * c + n * oh * ow * m + kh * kw * (c // grp) * m)


def report_threads(a, calls, stdout):
    """--threads: per node and per kind, one thread next to N, the speed-up and the hook's
    calls/tasks (medians over the reps; totals are medians of the per-run sums)."""
    rows = [line.split() for line in stdout.splitlines()]
    ser = [[float(x) for x in r[1:]] for r in rows if r[0] == "S"]
    par = [[float(x) for x in r[1:]] for r in rows if r[0] == "P"]
    hook = [tuple(int(v) for v in x.split("/")) for r in rows if r[0] == "C" for x in r[1:]]
    m1 = [statistics.median(c) for c in zip(*ser)]
    mn = [statistics.median(c) for c in zip(*par)]
    t1, tn = statistics.median(map(sum, ser)), statistics.median(map(sum, par))
    n = a.threads
    serial_ms = sum(ms for ms, (c, _) in zip(mn, hook) if c == 0)
    print(f"{a.model}: {len(calls)} nodes; node sum, median of {a.reps}: 1 thread {t1:.3f} ms, "
          f"{n} threads {tn:.3f} ms (x{t1 / tn:.2f}); nodes that never call the hook: "
          f"{serial_ms:.3f} ms of the {n}-thread time ({100 * serial_ms / tn:.0f}%); "
          f"hook calls per run {sum(c for c, _ in hook)}")
    by_kind = {}
    for (kernel, g), ms1, msn, (c, t) in zip(calls, m1, mn, hook):
        e = by_kind.setdefault(kind(kernel, g), [0, 0.0, 0.0, 0, 0])
        e[0] += 1
        e[1] += ms1
        e[2] += msn
        e[3] += c
        e[4] += t
    print(f"| kind | nodes | 1T ms | {n}T ms | speed-up | share of {n}T | hook calls | tasks |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for k, (cnt, ms1, msn, c, t) in sorted(by_kind.items(), key=lambda kv: -kv[1][2]):
        print(f"| {k} | {cnt} | {ms1:.3f} | {msn:.3f} | {ms1 / msn if msn > 0 else 0:.2f} | "
              f"{100 * msn / tn:.1f}% | {c} | {t} |")
    print("\nper node (graph order):")
    print(f"| # | kind | C -> M | out | 1T ms | {n}T ms | speed-up | hook calls/tasks |")
    print("|---:|---|---|---|---:|---:|---:|---|")
    for i, ((kernel, g), ms1, msn, (c, t)) in enumerate(zip(calls, m1, mn, hook)):
        shape = f"{g.group(2)} -> {g.group(3)}" if g else ""
        o = f"{g.group(9)}x{g.group(10)}" if g else ""
        print(f"| {i} | {kind(kernel, g)} | {shape} | {o} | {ms1:.4f} | {msn:.4f} | "
              f"{ms1 / msn if msn > 0 else 0:.2f} | {c}/{t} |")


def split_argv(argv):
    """A bench script's own arguments (before `--`) and the `kiln compile` flags after it."""
    if "--" not in argv:
        return argv, []
    i = argv.index("--")
    return argv[:i], argv[i + 1:]


def instrumented_bundle(kiln, model, work, extra, clock, who):
    """Compiles model into work/bundle (work emptied first) with the flags extra, wraps every
    node of NAME_run in clock's timer (instrument) and returns the bundle's folder, the
    harness's C (main_source) and the wrapped calls; exits naming `who` where the header's
    input or output sizes cannot be read."""
    shutil.rmtree(work, ignore_errors=True)
    b = work / "bundle"
    subprocess.run([kiln, "compile", model, "-o", str(b), "--name", "net", "--quiet", *extra],
                   check=True)
    text, calls = instrument((b / "net.c").read_text(), clock)
    (b / "net.c").write_text(text)
    src, ins, outs = main_source((b / "net.h").read_text(), len(calls))
    if not ins or not outs:
        sys.exit(f"{who}: cannot find the inputs' and outputs' sizes in net.h")
    return b, src, calls


def main():
    argv, extra = split_argv(sys.argv[1:])
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("model")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--peak", type=float, default=98.5, help="one core's GFLOP/s (peak.c)")
    ap.add_argument("--work", default="/tmp/kiln-profile")
    ap.add_argument("--json", help="also write every node's kind, ms, flops and bytes here")
    ap.add_argument("--threads", type=int, default=1,
                    help="N > 1: wall time per node, one thread next to N (kiln_pool)")
    a = ap.parse_args(argv)
    if a.threads > 1:
        extra = ["--workers", str(a.threads), *extra]
    work = pathlib.Path(a.work)
    b, src, calls = instrumented_bundle(
        a.kiln, a.model, work, extra,
        "CLOCK_MONOTONIC" if a.threads > 1 else "CLOCK_THREAD_CPUTIME_ID", "profile.py")
    pool = pathlib.Path(__file__).resolve().parents[2] / "examples" / "parallel"
    if a.threads > 1:
        src = par_main_source(src, a.threads, len(calls))
    (work / "main.c").write_text(src)
    exe = work / "prof"  # GNU mode contracts a * b + c to FMAs, as the bundle's CMakeLists build
    subprocess.run(["cc", "-std=gnu11", "-O3", "-march=native", f"-I{b}", f"-I{pool}",
                    str(b / "net.c"), str(work / "main.c"), "-lm", "-o", str(exe)]
                   + ([str(pool / "kiln_pool.c"), "-pthread"] if a.threads > 1 else []),
                   check=True)
    r = subprocess.run([str(exe), str(b / "net_weights.bin"), str(a.reps), str(a.warmup)],
                       capture_output=True, text=True, check=True)
    if a.threads > 1:
        report_threads(a, calls, r.stdout)
        return
    runs = [[float(x) for x in line.split()] for line in r.stdout.splitlines()]
    med = [statistics.median(col) for col in zip(*runs)]
    totals = [sum(run) for run in runs]
    total = statistics.median(totals)
    by_kind = {}
    for (kernel, g), ms in zip(calls, med):
        k = kind(kernel, g)
        e = by_kind.setdefault(k, [0, 0.0, 0.0])
        e[0] += 1
        e[1] += ms
        e[2] += flops(g)
    if a.json:
        import json
        pathlib.Path(a.json).write_text(json.dumps([
            {"kind": kind(kernel, g), "ms": ms, "flops": flops(g), "bytes": tensor_bytes(g),
             "out_pixels": int(g.group(9)) * int(g.group(10)) if g else 0}
            for (kernel, g), ms in zip(calls, med)]))
    print(f"{a.model} {' '.join(extra)}: {len(calls)} calls, median node sum {total:.2f} ms "
          f"(min {min(totals):.2f}); peak {a.peak} GFLOP/s")
    print("| kind | calls | ms | share | GFLOP | GFLOP/s | of peak |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for k, (n, ms, fl) in sorted(by_kind.items(), key=lambda kv: -kv[1][1]):
        rate = fl / ms / 1e6 if fl and ms > 0 else 0
        print(f"| {k} | {n} | {ms:.2f} | {100 * ms / total:.1f}% | "
              + (f"{fl / 1e9:.3f} | {rate:.1f} | {100 * rate / a.peak:.0f}% |" if fl else "| | |"))
    print("\nper call (graph order):")
    print("| # | kind | C -> M | out | ms | GFLOP/s |")
    print("|---:|---|---|---|---:|---:|")
    for i, ((kernel, g), ms) in enumerate(zip(calls, med)):
        shape = f"{g.group(2)} -> {g.group(3)}" if g else ""
        o = f"{g.group(9)}x{g.group(10)}" if g else ""
        rate = flops(g) / ms / 1e6 if g and ms > 0 else 0
        print(f"| {i} | {kind(kernel, g)} | {shape} | {o} | {ms:.3f} | "
              + (f"{rate:.1f} |" if rate else " |"))


if __name__ == "__main__":
    main()
