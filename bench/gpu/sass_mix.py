#!/usr/bin/env python3
"""Instruction counts of compiled CUDA kernels, without a GPU: the SASS of each kernel whose
mangled name matches PATTERN, its loops (a backward branch and the code it jumps over) and the
straight runs after its last tensor-core instruction (the epilogues: one run a form where a
kernel dispatches on one), each with its instruction count and commonest opcodes.

  nvcc -O3 -arch=sm_90a -I runtime/cuda -cubin -o /tmp/q.cubin tests/cuda/qconv_gpu.cu
  cuobjdump -sass /tmp/q.cubin > /tmp/q.sass
  python3 bench/gpu/sass_mix.py /tmp/q.sass 'kc_qconv1x1_kernelILi128ELi64E'

cuobjdump ships with the CUDA toolkit; where the toolkit here lacks it, the PyPI wheel
nvidia-cuda-cuobjdump holds it (pip download it, unzip, run bin/cuobjdump). Counts are static
(each instruction once): a loop's count is what one trip issues when its body has no branches;
a run that a predicate skips still counts. Prefer comparing two builds of one kernel."""
import collections
import re
import sys

TENSOR = ("IMMA", "HMMA", "GMMA", "IGMMA", "HGMMA")


def functions(text):
    """(name, [(address, instruction)]) for each function of a cuobjdump -sass listing."""
    parts = re.split(r"\n\s*Function : (\S+)", text)
    for i in range(1, len(parts) - 1, 2):
        ins = [(int(m.group(1), 16), m.group(2).strip())
               for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", parts[i + 1])]
        yield parts[i], ins


def opcode(ins):
    return re.sub(r"^@!?U?P\w+\s+", "", ins).split()[0]


def mix(seg, top=8):
    c = collections.Counter(opcode(t) for _, t in seg)
    return ", ".join(f"{k} {v}" for k, v in c.most_common(top))


def report(name, ins):
    print(f"{name}: {len(ins)} instructions")
    at = {a: k for k, (a, _) in enumerate(ins)}
    for k, (a, t) in enumerate(ins):  # loops: a branch back to an earlier address
        m = re.search(r"BRA (0x[0-9a-f]+)", t)
        if m and int(m.group(1), 16) < a and int(m.group(1), 16) in at:
            seg = ins[at[int(m.group(1), 16)]:k + 1]
            if len(seg) >= 8:
                print(f"  loop {hex(seg[0][0])}-{hex(a)}: {len(seg)}  ({mix(seg)})")
    last = max((k for k, (_, t) in enumerate(ins) if opcode(t).startswith(TENSOR)), default=None)
    if last is None:
        return
    start = last + 1
    for k in range(start, len(ins)):  # runs that end in an unconditional branch or the exit
        t = ins[k][1]
        if re.match(r"BRA 0x", t) or t.startswith("EXIT"):
            seg = ins[start:k + 1]
            if len(seg) >= 8:
                print(f"  run {hex(seg[0][0])}-{hex(ins[k][0])}: {len(seg)}  ({mix(seg)})")
            start = k + 1


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: sass_mix.py SASS_LISTING PATTERN")
    text = open(sys.argv[1]).read()
    found = 0
    for name, ins in functions(text):
        if re.search(sys.argv[2], name):
            report(name, ins)
            found += 1
    if not found:
        sys.exit(f"no function matches {sys.argv[2]!r}")


if __name__ == "__main__":
    main()
