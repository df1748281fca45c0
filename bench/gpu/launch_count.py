"""What one NAME_cuda_run launches, read from a CUDA bundle's generated NAME_enqueue (no GPU
needed): per op kind (the node comments' op type), the kernel launches (<<<), kc_* runtime
calls (each one kernel or one cuBLASLt product, plus kc_blas.cuh's kc_bias_act pass after a
product whose activation cuBLASLt's epilogues lack: SiLU..., erf GELU in float32 storage; a
cuBLASLt algorithm may run a second kernel, e.g. a split-K reduction, which the source does
not show) and
memsets/copies, and the nodes that launch nothing (views the planner aliased, a
LayerNormalization done by the Add's kernel).
usage: python3 bench/gpu/launch_count.py BUNDLE/NAME.cu"""
import collections
import re
import sys


def count(path):
    src = open(path).read()
    body = src[src.index("_enqueue("):]
    body = body[: body.index("\n}\n")]
    cur, calls, nodes = "(status memset)", collections.Counter(), collections.Counter()
    gelu = False  # the product being read has an erf GELU, counted as a pass so far
    for line in body.splitlines():
        m = re.match(r"\s*/\* (\S+) '", line)
        if m:
            cur = m.group(1)
            nodes[cur] += 1
        elif re.search(r"p\.act = KC_ACT_", line) and not re.search(
                r"KC_ACT_(NONE|RELU|GELU_TANH);", line):
            calls[cur] += 1  # the product's activation pass (kc_bias_act)
            gelu = "KC_ACT_GELU;" in line
        elif re.search(r"p\.half = 1;", line) and gelu:
            calls[cur] -= 1  # erf GELU in float16 storage: cuBLASLt's epilogue (kc_lt_epilogue)
            gelu = False
        elif ("<<<" in line or re.search(r"rc = kc_\w+[<(]", line)
              or re.search(r"KC_CUDA\(cuda(Memcpy|Memset)", line)):
            calls[cur] += 1
    return calls, nodes


def main():
    calls, nodes = count(sys.argv[1])
    print(f"{sum(calls.values())} launches/calls, {sum(nodes.values())} nodes")
    for op, n in calls.most_common():
        print(f"  {op:28s} {n:4d}  (nodes {nodes.get(op, 0)})")
    print("  launching nothing:", ", ".join(f"{op} {n}" for op, n in sorted(nodes.items())
                                           if op not in calls))


if __name__ == "__main__":
    main()
