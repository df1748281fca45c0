"""Delta debugging over the nodes of a failing model (docs/difftest.md).

A candidate drops a set of nodes. Each value a dropped node produced and a kept node (or
the graph's outputs) still needs is replaced by another value of the same type that is
defined where it is read (the dropped node's own input first), or else becomes a graph
input fed with the very tensor ONNX Runtime computed for it in the original model, so the
kept nodes see the data they saw before. Graph outputs that a dropped node produced are
dropped with it; nodes nobody reads any more go too (the model must keep at least one
output). A candidate counts when it is a valid model (onnx.checker, strict shape
inference, ONNX Runtime runs it) whose failure signature (the failing configurations and
kinds, harness.failure_signature) still holds what the original's held. ddmin (Zeller)
over the node list, then one pass dropping graph outputs one at a time.
"""
import copy

import numpy as np
import onnx
from onnx import helper, numpy_helper

import harness


def value_types(model):
    """{name: TypeProto} of every value, from strict shape inference."""
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    types = {}
    for vi in list(inferred.graph.input) + list(inferred.graph.value_info) + \
            list(inferred.graph.output):
        types[vi.name] = vi.type
    for t in model.graph.initializer:
        types[t.name] = helper.make_tensor_type_proto(t.data_type, list(t.dims))
    for n in model.graph.node:
        if n.op_type == "Constant":
            t = n.attribute[0].t
            types[n.output[0]] = helper.make_tensor_type_proto(t.data_type, list(t.dims))
    return types


def same_type(a, b):
    return a is not None and b is not None and a.SerializeToString() == b.SerializeToString()


class Reducer:
    def __init__(self, model, feeds, oracle, log=None):
        """oracle(model, feeds) -> bool: the failure still shows."""
        self.orig = model
        self.types = value_types(model)
        self.oracle = oracle
        self.log = log or (lambda s: None)
        # every intermediate as ONNX Runtime computes it on the original inputs
        names = [x for n in model.graph.node for x in n.output if x and n.op_type != "Constant"]
        self.values = dict(feeds)
        try:
            self.values.update(harness.run_ort(model, feeds, extra_outputs=names))
        except Exception:  # noqa: BLE001 - a value ORT cannot export stays unknown
            self.values.update(harness.run_ort(model, feeds))
        self.tests = 0

    def candidate(self, keep_ids, keep_outputs, promote_all=False):
        """(model, feeds) keeping the nodes whose indices are in keep_ids and the graph
        outputs in keep_outputs, or None when no valid model results."""
        g = self.orig.graph
        nodes = [copy.deepcopy(g.node[i]) for i in sorted(keep_ids)]
        dropped = [g.node[i] for i in range(len(g.node)) if i not in keep_ids]
        defined = {vi.name for vi in g.input} | {t.name for t in g.initializer}
        produced_by_drop = {x: n for n in dropped for x in n.output if x}
        new_inputs, rename = [], {}
        # walk the kept nodes in order; values defined so far are usable replacements
        order = []
        for n in nodes:
            order.append(n)
        avail = set(defined)
        for n in order:
            for x in harness.node_reads(n):
                if x not in n.input and x not in avail:
                    return None  # an outer value of a subgraph: kept, or no candidate
            for k, x in enumerate(n.input):
                if not x or x in avail or x in rename:
                    if x in rename:
                        n.input[k] = rename[x]
                    continue
                if x not in produced_by_drop:
                    return None
                repl = None
                if not promote_all:
                    src = produced_by_drop[x]
                    for y in list(src.input) + sorted(avail):
                        if y and y in avail and same_type(self.types.get(y), self.types.get(x)):
                            repl = y
                            break
                if repl is None:
                    if x not in self.values or x not in self.types:
                        return None
                    new_inputs.append(x)
                    avail.add(x)
                    continue
                rename[x] = repl
                n.input[k] = repl
            for y in n.output:
                if y:
                    avail.add(y)
        outputs = [o for o in g.output if o.name in keep_outputs and o.name in avail and
                   o.name not in produced_by_drop]
        if not outputs:
            return None
        # dead code: keep only nodes something reads
        need = {o.name for o in outputs}
        live = []
        for n in reversed(order):
            if any(y in need for y in n.output):
                live.append(n)
                need.update(harness.node_reads(n))
        live.reverse()
        inputs = [vi for vi in g.input if vi.name in need and vi.name not in
                  {t.name for t in g.initializer}]
        for x in new_inputs:
            if x in need:
                inputs.append(helper.make_value_info(x, self.types[x]))
        inits = [t for t in g.initializer if t.name in need]
        graph = helper.make_graph(live, g.name, inputs, list(outputs), initializer=inits)
        model = helper.make_model(graph, opset_imports=list(self.orig.opset_import),
                                  producer_name=self.orig.producer_name,
                                  producer_version=self.orig.producer_version)
        model.ir_version = self.orig.ir_version
        feeds = {vi.name: np.asarray(self.values[vi.name]) for vi in inputs}
        meta = harness.metadata(self.orig)
        ranges = {}
        for name, arr in feeds.items():
            a = arr.astype(np.float64) if arr.dtype != np.bool_ else arr.astype(np.int64)
            ranges[name] = meta.get("inputs", {}).get(name, [float(a.min()), float(a.max())]
                                                      if a.size else [0.0, 0.0])
        meta["inputs"] = ranges
        meta["reduced"] = True
        e = model.metadata_props.add()
        import json
        e.key, e.value = "difftest", json.dumps(meta, sort_keys=True)
        try:
            onnx.checker.check_model(model, full_check=True)
        except Exception:  # noqa: BLE001 - an invalid candidate is just not taken
            return None
        return model, feeds

    def test(self, keep_ids, keep_outputs):
        for promote_all in (False, True):
            c = self.candidate(keep_ids, keep_outputs, promote_all)
            if c is None:
                continue
            self.tests += 1
            if self.oracle(*c):
                return c
        return None

    def run(self):
        """The smallest failing (model, feeds) found."""
        g = self.orig.graph
        ids = list(range(len(g.node)))
        outs = {o.name for o in g.output}
        best = (self.orig, {k: v for k, v in self.values.items()
                            if k in {vi.name for vi in harness.graph_inputs(self.orig)}})
        n = 2
        while len(ids) >= 2:
            chunk = max(1, len(ids) // n)
            parts = [ids[i:i + chunk] for i in range(0, len(ids), chunk)]
            reduced = False
            for part in parts:
                keep = [i for i in ids if i not in part]
                r = self.test(set(keep), outs)
                if r:
                    ids, best, reduced = keep, r, True
                    n = max(n - 1, 2)
                    self.log("  %d nodes left (%d tests)" % (len(r[0].graph.node), self.tests))
                    break
            if not reduced:
                if n >= len(ids):
                    break
                n = min(len(ids), 2 * n)
        # graph outputs, one at a time
        for o in list(outs):
            if len(outs) == 1:
                break
            r = self.test(set(ids), outs - {o})
            if r:
                outs.discard(o)
                best = r
        # the kept ids may include nodes the candidate's dead-code step dropped
        return best
