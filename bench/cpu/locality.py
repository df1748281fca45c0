"""How much of what a worker reads the other worker wrote, layer by layer (issue 14: two
threads on two L3s). Compiles MODEL with `kiln compile --workers N`, wraps every node's block
of NAME_run as profile.py does (so a fault knows its node), and runs NAME_run_parallel once,
on one thread, through a recording hook that runs each call's tasks in order and hands task i
the worker that kiln_pool deals it when nobody steals (worker w: [n w / N, n (w + 1) / N)); a
node that calls no hook runs as worker 0, as the pool's caller does.

The bytes come from page faults, not from the kernels' own bookkeeping: before every task
(and every stretch of serial code) the arena is made inaccessible (mprotect), and the first
touch of each 4 KiB page faults once; the fault's error code tells a read from a write
(x86-64 Linux). A page's first touch by a read is an input read; the bytes count when an
earlier node wrote the page, and count as crossing when its last writer was another worker.
A page the task writes first (its own output, a worker's scratch) is no input. A worker
counts a page once a call however many of its tasks read it (the second read hits its own
cache). Granularity
is the page: a tensor row of ResNet-50 is 7-57 KiB, so a split between rows costs at most a
page of error either side. Weights and the model's inputs and outputs are outside the arena
and not counted.

usage: python bench/cpu/locality.py --kiln PATH MODEL [--workers N] [--work DIR]
       [--json FILE] [--cflags FLAGS] [-- KILN_COMPILE_FLAGS...]
prints per node: kind, the bytes read that earlier nodes wrote, and the share of them the
other worker(s) wrote; the weight bytes each worker read (pages of the weights buffer, the
same protection) and those that more than one worker read, which on two L3s each L3 fetches
from memory; then per kind and in all.
"""
import argparse
import json
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import profile as kprof  # noqa: E402  (bench/cpu/profile.py: the node wrapping)

HOOK = r"""
#define _GNU_SOURCE /* REG_ERR */
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
extern int kp_node;
#define LOC_PAGE 4096
static unsigned char *loc_base;
static long loc_pages;
static signed char *loc_owner;   /* page: the worker that last wrote it, -1 none */
static unsigned char *loc_state; /* page, this segment: 0 untouched, 1 read, 2 written */
static unsigned char *loc_seen;  /* page, this call: bit w once worker w counted its read */
static long *loc_written, loc_n_written; /* pages this call wrote, owners applied at its end */
static signed char *loc_wrote_by;
static int loc_worker;            /* the worker of the segment that runs */
static long long loc_read[@N_CALLS@][@WORKERS@], loc_cross[@N_CALLS@][@WORKERS@];
static unsigned char *loc_wbase;   /* the weights: read only, pages counted per worker */
static long loc_wpages;
static unsigned char *loc_wseen;   /* weight page, this call: bit w once worker w read it */
static long long loc_wread[@N_CALLS@][@WORKERS@], loc_wdup[@N_CALLS@];

static void loc_fault(int sig, siginfo_t *si, void *ctx) {
    unsigned char *a = (unsigned char *)si->si_addr;
    const int write = (int)(((ucontext_t *)ctx)->uc_mcontext.gregs[REG_ERR] & 2);
    long p;
    if (a >= loc_wbase && a < loc_wbase + loc_wpages * LOC_PAGE) {
        p = (a - loc_wbase) / LOC_PAGE;
        if (!(loc_wseen[p] & (1u << loc_worker))) {
            loc_wread[kp_node][loc_worker] += LOC_PAGE;
            if (loc_wseen[p]) loc_wdup[kp_node] += LOC_PAGE; /* another worker read it too */
            loc_wseen[p] |= (unsigned char)(1u << loc_worker);
        }
        mprotect(loc_wbase + p * LOC_PAGE, LOC_PAGE, PROT_READ);
        return;
    }
    if (a < loc_base || a >= loc_base + loc_pages * LOC_PAGE) {
        signal(sig, SIG_DFL); /* a real fault */
        return;
    }
    p = (a - loc_base) / LOC_PAGE;
    if (!write && loc_state[p] == 0) {
        loc_state[p] = 1;
        if (loc_owner[p] >= 0 && !(loc_seen[p] & (1u << loc_worker))) {
            loc_seen[p] |= (unsigned char)(1u << loc_worker);
            loc_read[kp_node][loc_worker] += LOC_PAGE;
            if (loc_owner[p] != loc_worker) loc_cross[kp_node][loc_worker] += LOC_PAGE;
        }
        mprotect(loc_base + p * LOC_PAGE, LOC_PAGE, PROT_READ);
        return;
    }
    loc_state[p] = 2;
    loc_written[loc_n_written] = p;
    loc_wrote_by[loc_n_written++] = (signed char)loc_worker;
    mprotect(loc_base + p * LOC_PAGE, LOC_PAGE, PROT_READ | PROT_WRITE);
}

/* A new segment on worker w: every page faults again on its first touch. */
static void loc_segment(int w) {
    memset(loc_state, 0, (size_t)loc_pages);
    loc_worker = w;
    mprotect(loc_base, (size_t)(loc_pages * LOC_PAGE), PROT_NONE);
    mprotect(loc_wbase, (size_t)(loc_wpages * LOC_PAGE), PROT_NONE);
}

/* The writes since the last flush become the pages' owners (a call's tasks read the owners
 * as they were before the call). */
static void loc_flush(void) {
    long i;
    for (i = 0; i < loc_n_written; i++) loc_owner[loc_written[i]] = loc_wrote_by[i];
    loc_n_written = 0;
}

static void loc_for(void *ctx, int64_t n_tasks, net_task_fn fn, void *arg) {
    int64_t i;
    int w = 0;
    (void)ctx;
    loc_flush(); /* the serial code before the call: worker 0's */
    memset(loc_seen, 0, (size_t)loc_pages);
    memset(loc_wseen, 0, (size_t)loc_wpages);
    for (i = 0; i < n_tasks; i++) {
        while (w + 1 < @WORKERS@ && i >= n_tasks * (w + 1) / @WORKERS@) w++;
        loc_segment(w);
        fn(arg, i, w);
    }
    loc_flush();
    memset(loc_seen, 0, (size_t)loc_pages);
    memset(loc_wseen, 0, (size_t)loc_wpages);
    loc_segment(0); /* serial again, the caller's */
}

static void loc_start(void *arena, size_t bytes, void *weights, size_t wbytes) {
    struct sigaction sa;
    loc_wbase = (unsigned char *)weights;
    loc_wpages = (long)((wbytes + LOC_PAGE - 1) / LOC_PAGE);
    loc_wseen = calloc((size_t)loc_wpages, 1);
    if (!loc_wseen) exit(2);
    loc_base = (unsigned char *)arena;
    loc_pages = (long)((bytes + LOC_PAGE - 1) / LOC_PAGE);
    loc_owner = malloc((size_t)loc_pages);
    loc_state = malloc((size_t)loc_pages);
    loc_seen = calloc((size_t)loc_pages, 1);
    loc_written = malloc(sizeof(long) * (size_t)loc_pages * 64);
    loc_wrote_by = malloc((size_t)loc_pages * 64);
    if (!loc_owner || !loc_state || !loc_seen || !loc_written || !loc_wrote_by) exit(2);
    memset(loc_owner, -1, (size_t)loc_pages);
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = loc_fault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    loc_segment(0);
}

static void loc_stop(void) {
    int j, w;
    loc_flush();
    mprotect(loc_base, (size_t)(loc_pages * LOC_PAGE), PROT_READ | PROT_WRITE);
    mprotect(loc_wbase, (size_t)(loc_wpages * LOC_PAGE), PROT_READ | PROT_WRITE);
    for (j = 0; j < @N_CALLS@; j++) {
        printf("L %d", j);
        for (w = 0; w < @WORKERS@; w++) printf(" %lld %lld", loc_read[j][w], loc_cross[j][w]);
        printf("\n");
        printf("W %d %lld", j, loc_wdup[j]);
        for (w = 0; w < @WORKERS@; w++) printf(" %lld", loc_wread[j][w]);
        printf("\n");
    }
}
"""


def harness(src, workers, n_calls):
    """main_source's harness turned into one recorded NAME_run_parallel (page-aligned arena,
    so that the protection covers it and nothing else)."""
    head, _ = src.split("    double *ms = net_profile_ms();")
    head = head.replace("void *w = block((size_t)n), *arena = block(NET_ARENA_SIZE);",
                        "size_t ab = (NET_ARENA_SIZE + 4095) / 4096 * 4096;\n"
                        "    size_t wb = ((size_t)n + 4095) / 4096 * 4096;\n"
                        "    void *w = aligned_alloc(4096, wb), *arena = aligned_alloc(4096, ab);\n"
                        "    if (!arena || !w) return 2;\n    memset(arena, 0, ab);\n"
                        "    memset(w, 0, wb);")
    head = head.replace('#include "net.h"\n', '#include "net.h"\n' +
                        HOOK.replace("@N_CALLS@", str(n_calls))
                        .replace("@WORKERS@", str(workers)))
    head = head.replace("#include <stdio.h>", "#define _GNU_SOURCE\n#include <stdio.h>", 1)
    return head + """    loc_start(arena, ab, w, wb);
    if (net_run_parallel(&in, &out, w, arena, loc_for, NULL) != NET_OK) return 1;
    loc_stop();
    return 0;
}
"""


def main():
    argv, extra = kprof.split_argv(sys.argv[1:])
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("model")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--work", default="/tmp/kiln-locality")
    ap.add_argument("--json", help="also write the per-node figures here")
    ap.add_argument("--cflags", default="", help="more flags for the bundle's build "
                    "(e.g. -DRT_PCONV_ROW_WEIGHTS=100, a split's knob)")
    a = ap.parse_args(argv)
    if not 1 <= a.workers <= 8:
        sys.exit("locality.py: 1 to 8 workers (a byte of flags a page)")
    work = pathlib.Path(a.work)
    b, src, calls = kprof.instrumented_bundle(a.kiln, a.model, work,
                                           ["--workers", str(a.workers), *extra],
                                           "CLOCK_MONOTONIC", "locality.py")
    (work / "main.c").write_text(harness(src, a.workers, len(calls)))
    exe = work / "loc"
    subprocess.run(["cc", "-std=gnu11", "-O2", "-march=native", *a.cflags.split(), f"-I{b}",
                    str(b / "net.c"),
                    str(work / "main.c"), "-lm", "-o", str(exe)], check=True)
    r = subprocess.run([str(exe), str(b / "net_weights.bin"), "0", "0"], capture_output=True,
                       text=True, check=True)
    rows, wts = {}, {}
    for line in r.stdout.splitlines():
        f = line.split()
        if f and f[0] == "L":
            v = [int(x) for x in f[2:]]
            rows[int(f[1])] = (v[0::2], v[1::2])  # per worker: read, crossing
        if f and f[0] == "W":
            wts[int(f[1])] = (int(f[2]), [int(x) for x in f[3:]])  # read by two; per worker
    mib = 1 << 20
    nodes, by_kind = [], {}
    print(f"{a.model} --workers {a.workers}: input bytes each node reads that earlier nodes "
          "wrote, and the share of them another worker wrote")
    print("| # | kind | C -> M | out | read MiB | crossing MiB | crossing | per worker | "
          "weights MiB a worker | read by two |")
    print("|---:|---|---|---|---:|---:|---:|---|---|---:|")
    for i, (kernel, g) in enumerate(calls):
        rd, cr = rows.get(i, ([0] * a.workers, [0] * a.workers))
        wd, wr = wts.get(i, (0, [0] * a.workers))
        k = kprof.kind(kernel, g)
        e = by_kind.setdefault(k, [0, 0, 0, 0, 0])
        e[0] += 1
        e[1] += sum(rd)
        e[2] += sum(cr)
        e[3] += sum(wr) - wd  # weight bytes any worker read
        e[4] += wd
        nodes.append({"kind": k, "read": rd, "crossing": cr, "weights": wr, "weights_dup": wd})
        shape = f"{g.group(2)} -> {g.group(3)}" if g else ""
        o = f"{g.group(9)}x{g.group(10)}" if g else ""
        per = " ".join(f"{100 * c / r_:.0f}%" if r_ else "-" for r_, c in zip(rd, cr))
        print(f"| {i} | {k} | {shape} | {o} | {sum(rd) / mib:.2f} | {sum(cr) / mib:.2f} | "
              f"{100 * sum(cr) / max(sum(rd), 1):.0f}% | {per} | "
              f"{' '.join(f'{x / mib:.2f}' for x in wr)} | {wd / mib:.2f} |")
    print("\n| kind | nodes | read MiB | crossing MiB | crossing | weights MiB | read by two |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for k, (n, rd, cr, wu, wd) in sorted(by_kind.items(), key=lambda kv: -kv[1][2]):
        print(f"| {k} | {n} | {rd / mib:.2f} | {cr / mib:.2f} | {100 * cr / max(rd, 1):.0f}% | "
              f"{wu / mib:.2f} | {wd / mib:.2f} |")
    rd = sum(e[1] for e in by_kind.values())
    cr = sum(e[2] for e in by_kind.values())
    wu = sum(e[3] for e in by_kind.values())
    wd = sum(e[4] for e in by_kind.values())
    print(f"\nall: read {rd / mib:.2f} MiB, crossing {cr / mib:.2f} MiB "
          f"({100 * cr / max(rd, 1):.1f}%); weights {wu / mib:.2f} MiB, of them read by more "
          f"than one worker {wd / mib:.2f} MiB (on two L3s each L3 fetches those)")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps({"nodes": nodes, "read": rd, "crossing": cr,
                                                    "weights": wu, "weights_dup": wd}))


if __name__ == "__main__":
    main()
