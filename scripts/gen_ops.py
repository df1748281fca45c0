#!/usr/bin/env python3
"""Generates ir/ops.def and ir/attrs.def from the operator schemas of the pinned onnx package.

ops.def holds one row per operator of every ONNX domain the package defines (arity, latest
since-version); the flags column is owned by humans: this script keeps the flags of rows that
already exist and writes 0 for new ones. attrs.def holds, for every operator, the union of its
attributes over all versions with the kind and default of the newest version.

Run after changing the onnx pin:  scripts/gen_ops.py [REPO_ROOT]
"""
import os
import re
import sys

import kiln_venv  # noqa: E402 (scripts/kiln_venv.py: a plain python3 restarts under the venv)
kiln_venv.use_venv(('onnx',))
from onnx import defs

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
OPS_DEF = os.path.join(ROOT, "ir", "ops.def")
ATTRS_DEF = os.path.join(ROOT, "ir", "attrs.def")
VARIADIC = 255  # IR_ARITY_VARIADIC in ir/ir.h

DOMAIN_PREFIX = {"": "", "ai.onnx.ml": "ML_", "ai.onnx.preview.training": "TRAIN_",
                 "ai.onnx.preview": "PREVIEW_"}
KIND = {1: "FLOAT", 2: "INT", 3: "STRING", 4: "TENSOR", 5: "GRAPH", 6: "FLOATS", 7: "INTS",
        8: "STRINGS", 9: "TENSORS", 10: "GRAPHS", 11: "SPARSE_TENSOR", 12: "SPARSE_TENSORS",
        13: "TYPE_PROTO", 14: "TYPE_PROTOS"}


def c_ident(name):
    name = name.replace("NaN", "Nan")
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return re.sub(r"[^A-Za-z0-9]", "_", s).upper()


def c_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def required_inputs(s):
    """How many leading inputs must be present (not ""): the inputs before the first
    optional one; a variadic input counts with its min_arity. In every schema the required
    inputs come first, which is what lets one count say it (ir/verify.c relies on that);
    this stops if a new onnx breaks it."""
    opt = defs.OpSchema.FormalParameterOption
    n = 0
    for i, p in enumerate(s.inputs):
        if p.option == opt.Optional:
            later = [q.name for q in s.inputs[i:] if q.option == opt.Single]
            if later:
                sys.exit("%s-%d: required input '%s' follows an optional one; ir/verify.c's "
                         "required-input check needs a per-input table"
                         % (s.name, s.since_version, later[0]))
            break
        n += p.min_arity if p.option == opt.Variadic else 1
    return n


def default_of(attr):
    """(has, int, float, string) as C literals from a schema attribute's default."""
    d = attr.default_value
    if d is None or not d.name:
        return "0", "0", "0", "NULL"
    k = int(attr.type)
    if k == 2:
        return "1", str(d.i), "0", "NULL"
    if k == 1:
        return "1", "0", repr(float(d.f)), "NULL"
    if k == 3:
        return "1", "0", "0", c_str(d.s.decode())
    return "0", "0", "0", "NULL"  # list/tensor defaults are spelled out by the op's users


MARKER = "/* ---- Kiln's own ops"


def kept_tail(path):
    """The hand-written section after MARKER (Kiln's internal ops), kept verbatim."""
    if not os.path.exists(path):
        return ""
    text = open(path).read()
    i = text.find(MARKER)
    return text[i:] if i >= 0 else ""


def read_flags():
    flags = {}
    if os.path.exists(OPS_DEF):
        for line in open(OPS_DEF):
            m = re.match(r"\s*OP\((\w+),.*,\s*([^,()]+)\)\s*$", line)
            if m:
                flags[m.group(1)] = m.group(2).strip()
    return flags


def main():
    latest = {}
    attrs = {}
    arity = {}  # (domain, name) -> [in_min, in_max, out_min, out_max, in_req] over all versions
    for s in defs.get_all_schemas_with_history():
        key = (s.domain, s.name)
        a = arity.setdefault(key, [s.min_input, s.max_input, s.min_output, s.max_output,
                                   required_inputs(s)])
        a[0] = min(a[0], s.min_input)
        a[4] = min(a[4], required_inputs(s))
        a[1] = max(a[1], s.max_input)
        a[2] = min(a[2], s.min_output)
        a[3] = max(a[3], s.max_output)
        if key not in latest or s.since_version > latest[key].since_version:
            latest[key] = s
        for name, a in s.attributes.items():
            prev = attrs.setdefault(key, {}).get(name)
            if prev is None or s.since_version > prev[0]:
                attrs[key][name] = (s.since_version, a)
    names = {}
    for dom, name in latest:
        names.setdefault(name, []).append(dom)
    rows = []
    for (dom, name), s in latest.items():
        ident = c_ident(name) if len(names[name]) == 1 else DOMAIN_PREFIX[dom] + c_ident(name)
        rows.append((dom != "", dom, name, ident, s))
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    flags = read_flags()
    ops_tail, attrs_tail = kept_tail(OPS_DEF), kept_tail(ATTRS_DEF)
    w = max(len(r[3]) for r in rows) + 1
    with open(OPS_DEF, "w") as f:
        f.write("/* The op table: one row per operator, the only list of ops in Kiln.\n"
                " * Rows are generated by scripts/gen_ops.py from the pinned onnx package; the\n"
                " * flags column is edited by hand and kept by the generator.\n"
                " * OP(id, domain, ONNX name, since_version, in_min, in_max, in_req, out_min, out_max,\n"
                " *    flags); since_version is the newest version's; the arity bounds hold for every\n"
                " * version. in_max/out_max 255 means variadic. in_req: how many leading inputs must\n"
                " * be present (not \"\"); it differs from in_min where a position is kept by an\n"
                " * optional input (Loop's M and cond). */\n")
        for _, dom, name, ident, s in rows:
            imin, imax, omin, omax, ireq = arity[(dom, name)]
            imax = min(imax, VARIADIC)
            omax = min(omax, VARIADIC)
            f.write("OP(%-*s %-28s %-26s %2d, %d, %3d, %d, %d, %3d, %s)\n" % (
                w, ident + ",", c_str(dom) + ",", c_str(name) + ",", s.since_version,
                imin, imax, ireq, omin, omax, flags.get(ident, "0")))
        f.write(ops_tail or MARKER + " (domain \"kiln\", hand-written below; the generator keeps this"
                " section) ---- */\n")
    with open(ATTRS_DEF, "w") as f:
        f.write("/* Attributes of every op in ops.def: the union over all versions, with the kind\n"
                " * and default of the newest. Generated by scripts/gen_ops.py; do not edit.\n"
                " * ATTR(op id, attr id, ONNX name, kind, has_default, int default, float default,\n"
                " *      string default). Rows of one op are contiguous and follow ops.def order. */\n")
        for _, dom, name, ident, s in rows:
            for an in sorted(attrs.get((dom, name), {})):
                a = attrs[(dom, name)][an][1]
                has, i, fl, st = default_of(a)
                f.write("ATTR(%s, %s, %s, %s, %s, %s, %s, %s)\n" % (
                    ident, c_ident(an), c_str(an), KIND[int(a.type)], has, i, fl, st))
        f.write(attrs_tail or MARKER + " (domain \"kiln\", hand-written below; the generator keeps"
                " this section) ---- */\n")


if __name__ == "__main__":
    main()
