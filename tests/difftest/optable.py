"""Kiln's op table (ir/ops.def) as the difftest generator sees it: each row's ONNX name,
newest version and flags. The generator draws elementwise ops from the rows flagged
OPF_ELTWISE and refuses to emit an op the table lacks, so a model never tests an op that
Kiln does not claim to know.
"""
import os
import re

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OPS_DEF = os.path.join(ROOT, "ir", "ops.def")

_ROW = re.compile(r'^OP\(\s*(\w+),\s*"([^"]*)",\s*"([^"]*)",\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+),'
                  r'\s*(\d+),\s*(\d+),\s*([^)]*)\)')


class OpRow:
    __slots__ = ("id", "domain", "name", "since", "in_min", "in_max", "flags")

    def __init__(self, m):
        self.id, self.domain, self.name = m.group(1), m.group(2), m.group(3)
        self.since, self.in_min, self.in_max = int(m.group(4)), int(m.group(5)), int(m.group(6))
        flags = m.group(10).strip()
        self.flags = set() if flags == "0" else {f.strip() for f in flags.split("|")}


def load(path=OPS_DEF):
    """{ONNX name: OpRow} of the default domain."""
    rows = {}
    with open(path) as f:
        for line in f:
            m = _ROW.match(line)
            if m and m.group(2) == "":
                row = OpRow(m)
                rows[row.name] = row
    return rows


TABLE = load()


def known(op):
    return op in TABLE


def has(op, flag):
    return op in TABLE and flag in TABLE[op].flags
