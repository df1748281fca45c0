"""Random valid ONNX models for Kiln's differential test (docs/difftest.md).

generate(seed) builds one model from blocks: single ops drawn from Kiln's op table
(optable.py, ir/ops.def) and the patterns Kiln's passes rewrite (Conv + BatchNormalization +
activation, residual Add, attention, LayerNorm/RMSNorm spelled out and as one op, both GELU
forms, Transposes around convolutions, view chains, Gemm/MatMul + bias + activation,
elementwise trees, duplicated nodes, shape arithmetic, float16 islands), each drawn with
variants that must NOT be rewritten (a second reader, a graph output in the middle, a
constant slightly off, a broadcast that changes a shape, another axis). Blocks connect
through a pool of values, so a model is a chain or a DAG of 2-30 nodes.

Every value carries a hard interval (what the op can produce, used to keep Log, Sqrt,
Reciprocal, Div, Pow, Asin... inside their domains, through small adapter nodes when no
value fits), a soft magnitude (keeps Exp, Sinh, Pow from overflowing) and an exactness flag:
ops whose output jumps (Floor, Sign, comparisons, ArgMax, TopK, casts to integers) read
only values that every implementation computes bit for bit (inputs, constants and what
moves or selects them), so no mismatch is a rounding coin toss.

Each model is checked by onnx.checker (full check) and its output shapes against ONNX
shape inference; the graph inputs' value ranges sit in metadata_props["difftest"] (JSON)
for the runner. usage: gen.py SEED [OUT.onnx]  (prints the blocks used)
"""
import collections
import json
import math
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import harness
import optable

F32, F16, F64, I64, I32, BOOL = TP.FLOAT, TP.FLOAT16, TP.DOUBLE, TP.INT64, TP.INT32, TP.BOOL
U8, I8 = TP.UINT8, TP.INT8
NP = {F32: np.float32, F16: np.float16, F64: np.float64, I64: np.int64, I32: np.int32,
      BOOL: np.bool_, U8: np.uint8, I8: np.int8}
FLOATS = (F32, F16, F64)
INTS = (I64, I32)
INF = float("inf")

GEN_VERSION = 1
MAX_NUMEL = 2048          # elements of one tensor: bundles stay fast to build and run
MAG_CAP = 1e4             # soft magnitude above which an op's result is not wanted
OPSETS = (11, 13, 15, 17, 18, 20, 21)
OPSET_WEIGHTS = (1, 2, 1, 3, 2, 3, 2)
IR_VERSION = {11: 7, 13: 7, 15: 8, 17: 8, 18: 8, 20: 9, 21: 10}
DIMS = (1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8, 9, 12, 16)


class Skip(Exception):
    """A block cannot be built from what the pool holds; the model rolls back and tries
    another block."""


class Val:
    __slots__ = ("name", "dtype", "shape", "lo", "hi", "mag", "exact", "kind", "const", "uses")

    def __init__(self, name, dtype, shape, lo, hi, mag, exact, kind, const=None):
        self.name, self.dtype, self.shape = name, dtype, tuple(int(d) for d in shape)
        self.lo, self.hi, self.mag, self.exact = float(lo), float(hi), float(mag), exact
        self.kind, self.const, self.uses = kind, const, 0

    @property
    def rank(self):
        return len(self.shape)

    @property
    def numel(self):
        return int(np.prod(self.shape)) if self.shape else 1

    def __repr__(self):
        return "%s:%s%s[%.3g,%.3g]" % (self.name, self.dtype, list(self.shape), self.lo, self.hi)


def numel(shape):
    return int(np.prod(shape)) if len(shape) else 1


def bcast(*shapes):
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise Skip("shapes do not broadcast")


def mul_iv(a, b):
    ps = [x * y for x in (a[0], a[1]) for y in (b[0], b[1]) if not (math.isinf(x) and y == 0)
          and not (math.isinf(y) and x == 0)]
    return (min(ps), max(ps)) if ps else (-INF, INF)


def sig(x):
    return 1 / (1 + math.exp(-x)) if x > -700 else 0.0


def safe(f, x, default):
    try:
        return f(x)
    except (OverflowError, ValueError):
        return default


# ---- the unary float ops: interval, domain, magnitude --------------------------------
# domain: "any"; "pos": hard lo >= 0.05; "unit": hard |x| <= 0.95; "ge1": hard lo >= 1.05;
# "small": soft magnitude <= 6 (exp-like growth); "tan": hard |x| <= 1.2.
# exact_in: the op jumps, so its input must be exact.

def _mono(f, lo_default=-INF, hi_default=INF):
    return lambda lo, hi: (safe(f, lo, lo_default), safe(f, hi, hi_default))


def _abs_iv(lo, hi):
    return (0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi)), max(abs(lo), abs(hi)))


UNARY = {
    "Relu": (lambda lo, hi: (max(lo, 0.0), max(hi, 0.0)), "any", False, 1),
    "Neg": (lambda lo, hi: (-hi, -lo), "any", False, 1),
    "Abs": (_abs_iv, "any", False, 1),
    "Sigmoid": (_mono(sig, 0.0, 1.0), "any", False, 1),
    "Tanh": (_mono(math.tanh, -1.0, 1.0), "any", False, 1),
    "Softsign": (_mono(lambda x: x / (1 + abs(x)) if not math.isinf(x) else math.copysign(1, x)),
                 "any", False, 1),
    "Exp": (_mono(math.exp, 0.0, INF), "small", False, 1),
    "Log": (_mono(math.log), "pos", False, 1),
    "Sqrt": (_mono(math.sqrt, 0.0, INF), "pos", False, 1),
    "Reciprocal": (lambda lo, hi: (1 / hi if hi != INF else 0.0, 1 / lo), "pos", False, 1),
    "Floor": (_mono(math.floor), "any", True, 1),
    "Ceil": (_mono(math.ceil), "any", True, 1),
    "Round": (_mono(round), "any", True, 11),
    "Sign": (lambda lo, hi: (-1.0 if lo < 0 else 0.0 if lo == 0 else 1.0,
                             1.0 if hi > 0 else 0.0 if hi == 0 else -1.0), "any", True, 9),
    "Erf": (_mono(math.erf, -1.0, 1.0), "any", False, 9),
    "Sin": (lambda lo, hi: (-1.0, 1.0), "small", False, 7),
    "Cos": (lambda lo, hi: (-1.0, 1.0), "small", False, 7),
    "Tan": (_mono(math.tan), "tan", False, 7),
    "Asin": (_mono(math.asin), "unit", False, 7),
    "Acos": (lambda lo, hi: (math.acos(hi), math.acos(lo)), "unit", False, 7),
    "Atan": (_mono(math.atan, -math.pi / 2, math.pi / 2), "any", False, 7),
    "Sinh": (_mono(math.sinh), "small", False, 9),
    "Cosh": (lambda lo, hi: (1.0, safe(math.cosh, max(abs(lo), abs(hi)), INF)), "small", False, 9),
    "Asinh": (_mono(math.asinh), "any", False, 9),
    "Acosh": (_mono(math.acosh), "ge1", False, 9),
    "Atanh": (_mono(math.atanh), "unit", False, 9),
    "Softplus": (lambda lo, hi: (0.0, max(hi, 0.0) + 0.7), "any", False, 1),
    "HardSwish": (lambda lo, hi: (-0.375 if lo < 0 else 0.0, max(hi, 0.0)), "any", False, 14),
    "Mish": (lambda lo, hi: (-0.31 if lo < 0 else 0.0, max(hi, 0.0)), "any", False, 18),
    "Gelu": (lambda lo, hi: (-0.17 if lo < 0 else 0.0, max(hi, 0.0)), "any", False, 20),
}
# what ONNX Runtime's CPU kernels take in float64 as well
F64_UNARY = {"Relu", "Neg", "Abs", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal",
             "Floor", "Ceil", "Round", "Sign", "Sin", "Cos"}
# unary ops with float attributes: (attr maker, interval)
PARAM_UNARY = ("LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "ThresholdedRelu")


def domain_ok(v, dom):
    if dom == "any":
        return True
    if dom == "pos":
        return v.lo >= 0.05
    if dom == "unit":
        return max(abs(v.lo), abs(v.hi)) <= 0.95
    if dom == "ge1":
        return v.lo >= 1.05
    if dom == "small":
        return v.mag <= 6 and v.hi <= 30
    if dom == "tan":
        return max(abs(v.lo), abs(v.hi)) <= 1.2
    raise ValueError(dom)


class Gen:
    def __init__(self, seed, opset=None, budget=None):
        self.seed = seed
        self.rng = np.random.default_rng([GEN_VERSION, seed])
        self.opset = opset or int(self.rng.choice(OPSETS, p=np.array(OPSET_WEIGHTS) /
                                                   sum(OPSET_WEIGHTS)))
        self.budget = budget or self.randint(2, 30)
        self.nodes, self.inputs, self.inits, self.pool = [], [], [], []
        self.consts = {}
        self.forced_outputs = []
        self.tolerances = {}  # output name: an absolute tolerance of its own (quantization)
        self.tags = collections.Counter()
        self.counter = 0

    # ---- randomness
    def r(self):
        return float(self.rng.random())

    def randint(self, a, b):
        return int(self.rng.integers(a, b + 1))

    def pick(self, seq, weights=None):
        seq = list(seq)
        if not seq:
            raise Skip("nothing to pick")
        if weights is None:
            return seq[int(self.rng.integers(len(seq)))]
        w = np.asarray(weights, dtype=float)
        return seq[int(self.rng.choice(len(seq), p=w / w.sum()))]

    def uniq(self, prefix):
        self.counter += 1
        return "%s%d" % (prefix, self.counter)

    def rand_shape(self, rank, cap=MAX_NUMEL // 4, min_dim=1):
        while True:
            s = tuple(max(min_dim, int(self.pick(DIMS))) for _ in range(rank))
            if numel(s) <= cap:
                return s

    # ---- checkpoints: a block that fails midway leaves no trace
    def checkpoint(self):
        return (len(self.nodes), len(self.inputs), len(self.inits), len(self.pool),
                len(self.forced_outputs), dict(self.consts), self.counter)

    def restore(self, cp):
        n, i, c, p, f, consts, counter = cp
        del self.nodes[n:], self.inputs[i:], self.inits[c:], self.pool[p:], self.forced_outputs[f:]
        self.consts = consts
        names = collections.Counter(x for node in self.nodes for x in harness.node_reads(node))
        for v in self.pool:
            v.uses = names[v.name]

    # ---- values
    def input(self, dtype, shape, lo=-1.0, hi=1.0):
        name = self.uniq("in")
        if dtype == BOOL:
            lo, hi = 0, 1
        elif dtype in INTS:
            lo, hi = int(lo), int(hi)
        v = Val(name, dtype, shape, lo, hi, max(abs(lo), abs(hi)), True, "input")
        self.inputs.append(v)
        self.pool.append(v)
        return v

    def const(self, arr, name=None, node=None):
        """A constant: an initializer, or (sometimes) a Constant node, which lower-constants
        turns into one."""
        arr = np.asarray(arr)
        dtype = {np.dtype(t): k for k, t in NP.items()}[arr.dtype]
        name = name or self.uniq("c")
        as_node = self.r() < 0.12 if node is None else node
        if arr.dtype == np.bool_ or arr.size == 0:
            lo = hi = 0.0
        else:
            lo, hi = float(arr.min()), float(arr.max())
        v = Val(name, dtype, arr.shape, lo, hi, max(abs(lo), abs(hi)), True, "const", arr)
        t = numpy_helper.from_array(arr, name)
        if as_node:
            self.nodes.append(helper.make_node("Constant", [], [name], name=self.uniq("const_"),
                                               value=t))
        else:
            self.inits.append(t)
        return v

    def scalar(self, x, dtype=F32, rank0=True):
        return self.const(np.array(x if rank0 else [x], dtype=NP[dtype]))

    def i64(self, values):
        return self.const(np.array(values, dtype=np.int64))

    def weight(self, shape, scale, dtype=F32, positive=False):
        if positive:
            arr = self.rng.uniform(0.5, 1.5, size=shape)
        else:
            arr = self.rng.uniform(-scale, scale, size=shape)
        return self.const(arr.astype(NP[dtype]))

    def out(self, dtype, shape, lo, hi, mag=None, exact=False):
        return dict(dtype=dtype, shape=tuple(shape), lo=lo, hi=hi,
                    mag=max(abs(lo), abs(hi)) if mag is None else mag, exact=exact)

    def emit(self, op, ins, outs, **attrs):
        """Appends node op(ins) -> outs (specs from out()); returns its output Vals."""
        if not optable.known(op):
            raise ValueError("op %s is not in ir/ops.def" % op)
        names = [self.uniq("v") for _ in outs]
        node = helper.make_node(op, [v.name if v is not None else "" for v in ins], names,
                                name=self.uniq(op.lower() + "_"), **attrs)
        self.nodes.append(node)
        vals = []
        for v in ins:
            if v is not None:
                v.uses += 1
        for name, o in zip(names, outs):
            lo, hi, mag = o["lo"], o["hi"], o["mag"]
            if o["dtype"] in FLOATS:
                mag = min(mag, max(abs(lo), abs(hi)))
            val = Val(name, o["dtype"], o["shape"], lo, hi, mag, o["exact"], "node")
            self.pool.append(val)
            vals.append(val)
        self.tags[op] += 1
        return vals

    def emit1(self, op, ins, out, **attrs):
        return self.emit(op, ins, [out], **attrs)[0]

    def force_output(self, v):
        if v.kind == "node" and v not in self.forced_outputs:
            self.forced_outputs.append(v)

    # ---- choosing operands
    def candidates(self, pred):
        return [v for v in self.pool if v.kind != "const" and pred(v)]

    def choose(self, cands):
        """Recent and unread values first: chains rather than a fan of dead ends."""
        n = len(self.pool)
        order = {id(v): i for i, v in enumerate(self.pool)}
        w = [(4.0 if v.uses == 0 else 1.0) * (1.0 + 3.0 * order[id(v)] / max(1, n)) *
             (0.3 if v.kind == "input" else 1.0) for v in cands]
        return self.pick(cands, w)

    def want(self, dtype=F32, ranks=(1, 2, 3, 4), pred=None, fresh=0.2, shape=None,
             lo=-1.0, hi=1.0):
        """A value of dtype and one of ranks (pred holding): from the pool, a view of a pool
        value, or a new graph input (shape() or a random shape)."""
        pred = pred or (lambda v: True)
        cands = self.candidates(lambda v: v.dtype == dtype and v.rank in ranks and pred(v))
        if cands and self.r() > fresh:
            return self.choose(cands)
        if self.r() < 0.3:
            # a Reshape of a pool value of the same dtype into a wanted rank
            others = self.candidates(lambda v: v.dtype == dtype and v.rank not in ranks and
                                     v.numel > 1)
            if others:
                src = self.choose(others)
                for _ in range(8):
                    tshape = self.factor(src.numel, self.pick(ranks))
                    if tshape is None:
                        break
                    cand = Val("?", dtype, tshape, src.lo, src.hi, src.mag, src.exact, "node")
                    if pred(cand):
                        return self.reshape_to(src, tshape)
        s = shape() if shape else self.rand_shape(self.pick(ranks))
        return self.input(dtype, s, lo, hi)

    def factor(self, n, rank):
        """A random shape of rank with numel n, or None."""
        if rank == 0:
            return () if n == 1 else None
        dims = []
        rest = n
        for i in range(rank - 1):
            divs = [d for d in range(1, rest + 1) if rest % d == 0 and d <= 32]
            d = self.pick(divs)
            dims.append(d)
            rest //= d
        dims.append(rest)
        self.rng.shuffle(dims)
        return tuple(dims)

    def reshape_to(self, v, shape):
        spec = list(shape)
        if self.r() < 0.3 and len(spec) > 0:
            spec[self.randint(0, len(spec) - 1)] = -1
        if self.r() < 0.2:
            for i in range(min(len(spec), v.rank)):
                if spec[i] == v.shape[i] and spec[i] != -1 and self.r() < 0.5:
                    spec[i] = 0
        sv = self.i64(spec)
        return self.emit1("Reshape", [v, sv], self.out(v.dtype, shape, v.lo, v.hi, v.mag, v.exact))

    # ---- domain adapters
    def into_domain(self, v, dom):
        """v itself when it fits dom, else a small elementwise adapter of v that does."""
        if domain_ok(v, dom):
            return v
        if dom in ("pos", "ge1"):
            c = self.rng.uniform(0.2, 1.0) + (1.05 if dom == "ge1" else 0.0)
            if self.r() < 0.6:
                a = self.unary("Abs", v)
            else:
                a = self.unary("Sigmoid", v)
            return self.binary("Add", a, self.scalar(c, v.dtype, self.r() < 0.5))
        if dom in ("unit", "tan"):
            t = self.unary(self.pick(["Tanh", "Softsign", "Sin"]) if v.mag <= 6 and
                           v.dtype == F32 else "Tanh", v)
            return self.binary("Mul", t, self.scalar(0.9, v.dtype))
        if dom == "small":
            return self.unary(self.pick(["Tanh", "Sigmoid", "Softsign"] if v.dtype == F32 else
                                        ["Tanh", "Sigmoid"]), v)
        raise ValueError(dom)

    # ---- one-node builders shared by the blocks
    def unary(self, op, v, **attrs):
        iv, dom, exact_in, _ = UNARY[op]
        lo, hi = iv(v.lo, v.hi)
        if op in ("Exp", "Sinh", "Cosh"):
            mag = safe(math.exp, min(v.mag, 700), INF)
        elif op in ("Sigmoid", "Tanh", "Erf", "Sin", "Cos", "Softsign", "Atan"):
            mag = max(abs(lo), abs(hi))
        elif op == "Reciprocal":
            mag = 1 / max(v.lo, 1e-9)
        else:
            mag = v.mag * 1.2 + 1
        exact = v.exact and op in ("Relu", "Neg", "Abs", "Floor", "Ceil", "Round", "Sign")
        return self.emit1(op, [v], self.out(v.dtype, v.shape, lo, hi, mag, exact), **attrs)

    def binary(self, op, a, b, out_dtype=None):
        shape = bcast(a.shape, b.shape)
        lo, hi, mag = -INF, INF, max(a.mag, b.mag)
        exact = False
        if op == "Add":
            lo, hi, mag = a.lo + b.lo, a.hi + b.hi, a.mag + b.mag
        elif op == "Sub":
            lo, hi, mag = a.lo - b.hi, a.hi - b.lo, a.mag + b.mag
        elif op == "Mul":
            (lo, hi), mag = mul_iv((a.lo, a.hi), (b.lo, b.hi)), a.mag * b.mag
        elif op == "Div":
            (lo, hi) = mul_iv((a.lo, a.hi), (1 / b.hi if b.hi != INF else 0.0, 1 / b.lo))
            mag = a.mag / max(b.lo, 1e-9) if b.lo > 0 else a.mag * 10
        elif op in ("Max", "Min"):
            f = max if op == "Max" else min
            lo, hi = f(a.lo, b.lo), f(a.hi, b.hi)
            exact = a.exact and b.exact
        if a.dtype in INTS:
            exact = True
        dtype = out_dtype or a.dtype
        if dtype == BOOL:
            lo, hi, mag, exact = 0, 1, 1, True
        return self.emit1(op, [a, b], self.out(dtype, shape, lo, hi, mag, exact))

    def partner(self, a, dtype=None, fresh=0.5, dom="any", bigger=0.1):
        """A second operand that broadcasts with a: a pool value, a constant or an input, of
        a's shape, a suffix of it, with some dims 1, or (rarely) one that widens the result."""
        dtype = dtype or a.dtype

        def fits(v):
            try:
                s = bcast(a.shape, v.shape)
            except Skip:
                return False
            return (numel(s) <= MAX_NUMEL and (s == a.shape or self.r() < 0.3)
                    and domain_ok(v, dom))
        cands = self.candidates(lambda v: v.dtype == dtype and v is not a and fits(v))
        if cands and self.r() > fresh:
            return self.choose(cands)
        s = list(a.shape)
        r = self.r()
        if r < 0.3:
            pass
        elif r < 0.5 and s:
            s = s[self.randint(1, len(s)):]
        elif r < 0.85:
            s = [1 if self.r() < 0.5 else d for d in s]
        if self.r() < bigger:
            if s and 1 in a.shape:
                i = a.shape.index(1)
                s = list(a.shape)
                s[i] = self.pick([2, 3])
            elif len(s) < 5:
                s = [self.pick([2, 3])] + list(a.shape)
        s = tuple(s)
        if numel(bcast(a.shape, s)) > MAX_NUMEL:
            s = a.shape
        lo, hi = {"any": (-1.0, 1.0), "pos": (0.3, 2.0)}[dom]
        if dtype in INTS:
            lo, hi = (-6, 6) if dom == "any" else (1, 5)
        if self.r() < 0.5 or dtype == BOOL:
            return self.input(dtype, s, lo, hi)
        if dtype == BOOL:
            arr = self.rng.random(s) < 0.5
        elif dtype in INTS:
            arr = self.rng.integers(lo, hi + 1, size=s).astype(NP[dtype])
        else:
            arr = self.rng.uniform(lo, hi, size=s).astype(NP[dtype])
        return self.const(arr)


# ======================================================================================
# Single-op blocks
# ======================================================================================

def b_unary(G):
    ops = [op for op, (_, _, _, since) in UNARY.items() if since <= G.opset and
           optable.has(op, "OPF_ELTWISE")]
    op = G.pick(ops)
    _, dom, exact_in, _ = UNARY[op]
    dtype = F32 if G.r() < 0.9 or op not in F64_UNARY else F64
    if exact_in:
        v = G.want(dtype, pred=lambda v: v.exact, lo=-3, hi=3)
    else:
        v = G.want(dtype)
    v = G.into_domain(v, dom)
    if v.mag > MAG_CAP:
        v = G.into_domain(v, "small")
    kw = {}
    if op == "Gelu" and G.r() < 0.5:
        kw["approximate"] = "tanh"
    y = G.unary(op, v, **kw)
    G.tags["unary"] += 1
    return y


def b_param_unary(G):
    op = G.pick([o for o in PARAM_UNARY if optable.has(o, "OPF_ELTWISE") and
                 (o != "Celu" or G.opset >= 12)])
    v = G.want(F32)
    if v.mag > MAG_CAP:
        v = G.into_domain(v, "small")
    lo, hi = v.lo, v.hi
    if op == "LeakyRelu":
        a = G.pick([0.01, 0.1, 0.2, 1.5])
        y = G.emit1(op, [v], G.out(F32, v.shape, min(lo * a, lo, 0), max(hi, hi * a), v.mag * 1.5 + 1),
                    alpha=a)
    elif op in ("Elu", "Celu"):
        a = G.pick([1.0, 0.5, 2.0])
        y = G.emit1(op, [v], G.out(F32, v.shape, min(-a, lo), max(hi, 0.0), v.mag + a), alpha=a)
    elif op == "Selu":
        y = G.emit1(op, [v], G.out(F32, v.shape, -1.76, max(hi, 0.0) * 1.06, v.mag * 1.1 + 2))
    elif op == "HardSigmoid":
        a, b = G.pick([(0.2, 0.5), (1 / 6, 0.5), (0.5, 0.25)])
        y = G.emit1(op, [v], G.out(F32, v.shape, 0.0, 1.0), alpha=a, beta=b)
    else:  # ThresholdedRelu jumps at alpha
        v2 = G.want(F32, pred=lambda x: x.exact)
        a = G.pick([0.1, 0.5, 1.0])
        y = G.emit1(op, [v2], G.out(F32, v2.shape, min(0.0, v2.lo), max(0.0, v2.hi), v2.mag),
                    alpha=a)
    return y


def b_binary(G):
    op = G.pick(["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "PRelu", "Mod"],
                [4, 3, 4, 2, 1, 1, 1, 1, 0.5])
    dtype = F32 if G.r() < 0.92 or op in ("PRelu", "Mod") else F64
    if op == "Mod":
        a = G.want(dtype, pred=lambda v: v.exact, lo=-4, hi=4)
        b = G.partner(a, fresh=1.0, dom="pos")
        lo, hi = -max(abs(b.hi), 1), max(abs(b.hi), 1)
        return G.emit1("Mod", [a, b], G.out(dtype, bcast(a.shape, b.shape), lo, hi, hi), fmod=1)
    a = G.want(dtype)
    if a.mag > MAG_CAP:
        a = G.into_domain(a, "small")
    if op == "Div":
        b = G.into_domain(G.partner(a, dom="pos"), "pos")
        if G.r() < 0.3:
            b = G.unary("Neg", b)  # negative divisors, away from zero
            bl, bh = -b.hi, -b.lo
            y = G.emit1("Div", [a, b], G.out(dtype, bcast(a.shape, b.shape), *sorted(
                [x for x in mul_iv((a.lo, a.hi), (1 / bh if bh != INF else 0, 1 / bl))]),
                mag=a.mag / bl))
            return y
        return G.binary("Div", a, b)
    if op == "Pow":
        base = G.into_domain(a, "pos")
        if base.mag > 20:
            base = G.into_domain(G.into_domain(base, "small"), "pos")
        if G.r() < 0.6:
            e = G.scalar(G.pick([2.0, 3.0, 0.5, -1.0, 1.5, -0.5]), dtype, G.r() < 0.6)
        else:
            e = G.partner(base, fresh=1.0)
            e = G.binary("Mul", G.unary("Tanh", e), G.scalar(2.0, dtype))
        emax = max(abs(e.lo), abs(e.hi))
        hi = safe(lambda x: x ** emax, max(base.hi, 1 / base.lo), INF)
        return G.emit1("Pow", [base, e], G.out(dtype, bcast(base.shape, e.shape), 0.0, hi,
                                               min(hi, MAG_CAP * 10)))
    if op == "PRelu":
        # slope broadcasts to x (unidirectional): per channel (C,1,1...) or a suffix
        if a.rank >= 2 and G.r() < 0.6:
            s = (a.shape[1],) + (1,) * (a.rank - 2)
        else:
            s = tuple(1 if G.r() < 0.5 else d for d in a.shape[G.randint(0, a.rank):])
        slope = G.weight(s, 0.5, dtype) if G.r() < 0.8 else G.input(dtype, s, -0.5, 0.5)
        return G.emit1("PRelu", [a, slope], G.out(dtype, a.shape, min(a.lo, -a.hi), a.hi, a.mag))
    b = G.partner(a)
    if b.mag > MAG_CAP:
        b = G.into_domain(b, "small")
    if G.r() < 0.5:
        a, b = b, a
    return G.binary(op, a, b)


def b_variadic(G):
    op = G.pick(["Sum", "Mean", "Max", "Min"])
    a = G.want(F32)
    ins = [a] + [G.partner(a) for _ in range(G.randint(0, 3))]
    G.rng.shuffle(ins)
    shape = bcast(*[v.shape for v in ins])
    lo, hi = min(v.lo for v in ins), max(v.hi for v in ins)
    if op == "Sum":
        lo, hi = sum(v.lo for v in ins), sum(v.hi for v in ins)
    return G.emit1(op, ins, G.out(F32, shape, lo, hi, sum(v.mag for v in ins),
                                  op in ("Max", "Min") and all(v.exact for v in ins)))


def b_compare(G):
    op = G.pick(["Greater", "Less", "Equal", "GreaterOrEqual", "LessOrEqual"])
    if op in ("GreaterOrEqual", "LessOrEqual") and G.opset < 12:
        op = "Greater"
    dtype = G.pick([F32, I64, I32], [3, 2, 1])
    a = G.want(dtype, pred=lambda v: v.exact, lo=-3, hi=3)
    b = G.partner(a, fresh=0.4)
    if not b.exact:
        raise Skip("inexact comparison")
    c = G.binary(op, a, b, out_dtype=BOOL)
    r = G.r()
    if r < 0.5:  # Where(c, x, y)
        x = G.want(F32, pred=lambda v: v.rank <= 4)
        y = G.partner(x)
        shape = bcast(c.shape, x.shape, y.shape)
        if numel(shape) > MAX_NUMEL:
            raise Skip("too big")
        return G.emit1("Where", [c, x, y], G.out(F32, shape, min(x.lo, y.lo), max(x.hi, y.hi),
                                                 max(x.mag, y.mag), x.exact and y.exact))
    if r < 0.75:
        op2 = G.pick(["And", "Or", "Xor", "Not"])
        if op2 == "Not":
            c = G.emit1("Not", [c], G.out(BOOL, c.shape, 0, 1, 1, True))
        else:
            d = G.partner(c, dtype=BOOL, fresh=0.7)
            c = G.binary(op2, c, d, out_dtype=BOOL)
    to = G.pick([F32, I64, I32])
    return G.emit1("Cast", [c], G.out(to, c.shape, 0, 1, 1, True), to=to)


def b_int(G):
    dtype = G.pick([I64, I32])
    a = G.want(dtype, lo=-8, hi=8, pred=lambda v: max(abs(v.lo), abs(v.hi)) <= 1000)
    op = G.pick(["Add", "Sub", "Mul", "Div", "Mod", "Neg", "Abs", "Max", "Min", "Clip",
                 "ReduceSum", "Cast", "Bitwise", "Sign"])
    if op in ("Neg", "Abs", "Sign"):
        lo, hi = UNARY[op][0](a.lo, a.hi)
        return G.emit1(op, [a], G.out(dtype, a.shape, lo, hi, max(abs(lo), abs(hi)), True))
    if op == "Clip":
        if G.opset < 12:
            raise Skip("integer Clip needs opset 12")
        lo, hi = G.randint(-4, 0), G.randint(0, 4)
        return G.emit1("Clip", [a, G.const(np.array(lo, NP[dtype])), G.const(np.array(hi, NP[dtype]))],
                       G.out(dtype, a.shape, lo, hi, max(-lo, hi), True))
    if op == "ReduceSum":
        return reduce_node(G, "ReduceSum", a)
    if op == "Cast":
        to = G.pick([F32, I64, I32, BOOL, F64])
        lo, hi = (0, 1) if to == BOOL else (a.lo, a.hi)
        return G.emit1("Cast", [a], G.out(to, a.shape, lo, hi, max(abs(lo), abs(hi)), True), to=to)
    if op == "Bitwise":
        if G.opset < 18:
            raise Skip("bitwise")
        bop = G.pick(["BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"])
        if bop == "BitwiseNot":
            return G.emit1(bop, [a], G.out(dtype, a.shape, -a.hi - 1, -a.lo - 1, a.mag + 1, True))
        b = G.partner(a, fresh=0.5)
        m = 2 ** int(math.ceil(math.log2(max(abs(a.lo), abs(a.hi), abs(b.lo), abs(b.hi), 1) + 1)))
        return G.emit1(bop, [a, b], G.out(dtype, bcast(a.shape, b.shape), -m, m, m, True))
    if op in ("Div", "Mod"):
        b = G.partner(a, fresh=0.6, dom="pos")
        if b.lo < 1:
            raise Skip("int divisor")
        if G.r() < 0.3:
            b = G.unary("Neg", b)
        if op == "Div":
            return G.emit1("Div", [a, b], G.out(dtype, bcast(a.shape, b.shape), -a.mag, a.mag,
                                                a.mag, True))
        m = max(abs(b.lo), abs(b.hi))
        return G.emit1("Mod", [a, b], G.out(dtype, bcast(a.shape, b.shape), -m, m, m, True))
    if op in ("Max", "Min") and G.opset < 12:
        raise Skip("integer Max/Min need opset 12")
    b = G.partner(a, fresh=0.6)
    return G.binary(op, a, b)


def b_cast(G):
    r = G.r()
    if r < 0.4:  # float -> int (exact values only) -> float
        a = G.want(F32, pred=lambda v: v.exact and v.mag < 1e6, lo=-5, hi=5)
        to = G.pick([I64, I32])
        lo, hi = math.trunc(a.lo), math.trunc(a.hi)
        y = G.emit1("Cast", [a], G.out(to, a.shape, lo, hi, max(abs(lo), abs(hi)), True), to=to)
        if G.r() < 0.6:
            y = G.emit1("Cast", [y], G.out(F32, y.shape, lo, hi, y.mag, True), to=F32)
        return y
    if r < 0.7:  # float32 <-> float64
        a = G.want(F32)
        y = G.emit1("Cast", [a], G.out(F64, a.shape, a.lo, a.hi, a.mag, a.exact), to=F64)
        if G.r() < 0.5:
            y = G.unary(G.pick(["Relu", "Tanh", "Abs", "Neg"]), y)
        return G.emit1("Cast", [y], G.out(F32, y.shape, y.lo, y.hi, y.mag, y.exact), to=F32)
    if r < 0.85:  # to bool and back
        a = G.want(F32, pred=lambda v: v.exact)
        b = G.emit1("Cast", [a], G.out(BOOL, a.shape, 0, 1, 1, True), to=BOOL)
        return G.emit1("Cast", [b], G.out(F32, b.shape, 0, 1, 1, True), to=F32)
    a = G.want(F32)  # CastLike
    like = G.const(np.zeros((1,), np.float64)) if G.opset >= 15 else None
    if like is None:
        raise Skip("CastLike")
    return G.emit1("CastLike", [a, like], G.out(F64, a.shape, a.lo, a.hi, a.mag, a.exact))


def b_clip(G):
    a = G.want(F32)
    lo_v = G.pick([None, -1.0, 0.0, -0.5])
    hi_v = G.pick([None, 6.0, 0.5, 1.0])
    if lo_v is not None and hi_v is not None and lo_v > hi_v:
        lo_v, hi_v = hi_v, lo_v
    olo = max(a.lo, lo_v) if lo_v is not None else a.lo
    ohi = min(a.hi, hi_v) if hi_v is not None else a.hi
    olo, ohi = min(olo, ohi), max(olo, ohi)
    if G.opset < 11:
        kw = {}
        if lo_v is not None:
            kw["min"] = lo_v
        if hi_v is not None:
            kw["max"] = hi_v
        return G.emit1("Clip", [a], G.out(F32, a.shape, olo, ohi, a.mag, a.exact), **kw)
    ins = [a, G.scalar(lo_v) if lo_v is not None else None,
           G.scalar(hi_v) if hi_v is not None else None]
    while ins[-1] is None:
        ins.pop()
    return G.emit1("Clip", ins, G.out(F32, a.shape, olo, ohi, a.mag, a.exact))


def reduce_node(G, op, a, axes=None, keepdims=None):
    if a.rank == 0:
        raise Skip("rank 0")
    if axes is None:
        k = G.randint(1, a.rank)
        axes = sorted(G.rng.choice(a.rank, size=k, replace=False).tolist())
        if G.r() < 0.3:
            axes = [x - a.rank if G.r() < 0.5 else x for x in axes]
    keep = G.pick([0, 1]) if keepdims is None else keepdims
    norm = sorted(x % a.rank for x in axes)
    empty_all = False
    if not axes:
        norm = list(range(a.rank))
        empty_all = True
    shape = tuple(1 if i in norm else d for i, d in enumerate(a.shape)) if keep else \
        tuple(d for i, d in enumerate(a.shape) if i not in norm)
    cnt = numel([a.shape[i] for i in norm])
    lo, hi, mag = a.lo, a.hi, a.mag
    if op in ("ReduceSum",):
        lo, hi, mag = a.lo * cnt if a.lo < 0 else a.lo, a.hi * cnt if a.hi > 0 else a.hi, a.mag * cnt
        if a.dtype in INTS:
            lo, hi = -a.mag * cnt, a.mag * cnt
    elif op == "ReduceSumSquare":
        lo, hi, mag = 0.0, a.mag ** 2 * cnt, a.mag ** 2 * cnt
    elif op in ("ReduceL1", "ReduceL2"):
        lo, hi, mag = 0.0, a.mag * cnt, a.mag * math.sqrt(cnt) * (cnt ** 0.5 if op == "ReduceL1" else 1)
    elif op == "ReduceLogSumExp":
        lo, hi, mag = a.lo, a.hi + math.log(cnt) if a.hi != INF else INF, a.mag + math.log(cnt)
    elif op == "ReduceLogSum":
        lo, hi, mag = math.log(a.lo * cnt) if a.lo > 0 else -INF, safe(math.log, a.hi * cnt, INF), \
            abs(math.log(max(a.lo, 1e-9))) + math.log(cnt) + math.log(max(a.mag, 1))
    elif op == "ReduceProd":
        lo, hi, mag = -a.mag ** cnt, a.mag ** cnt, a.mag ** cnt
    exact = a.exact and op in ("ReduceMax", "ReduceMin")
    if a.dtype in INTS:
        exact = True
    ins = [a]
    kw = {"keepdims": keep}
    as_input = (op == "ReduceSum" and G.opset >= 13) or G.opset >= 18
    if as_input:
        if axes or G.r() < 0.5:
            ins.append(G.i64(axes))
        if not axes and G.r() < 0.3:
            kw["noop_with_empty_axes"] = 0
    elif axes:
        kw["axes"] = axes
    return G.emit1(op, ins, G.out(a.dtype, shape, lo, hi, mag, exact), **kw)


def b_reduce(G):
    op = G.pick(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                 "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp", "ReduceLogSum"],
                [3, 3, 2, 2, 0.5, 1, 1, 1, 1, 0.5])
    a = G.want(F32, ranks=(1, 2, 3, 4), pred=lambda v: v.numel > 1)
    if op == "ReduceProd":
        a = G.binary("Add", G.unary("Tanh", a), G.scalar(1.0)) if a.mag > 1.5 or a.numel > 64 \
            else a
        if a.numel > 256:
            raise Skip("prod of many")
    if op == "ReduceLogSum":
        a = G.into_domain(a, "pos")
    if op in ("ReduceLogSumExp", "ReduceSumSquare") and a.mag > 30:
        a = G.into_domain(a, "small")
    return reduce_node(G, op, a)


def b_argmax(G):
    op = G.pick(["ArgMax", "ArgMin"])
    dtype = G.pick([F32, I64, I32])
    a = G.want(dtype, ranks=(1, 2, 3, 4), pred=lambda v: v.exact, lo=-3, hi=3)
    axis = G.randint(-a.rank, a.rank - 1)
    keep = G.pick([0, 1])
    kw = {"axis": axis, "keepdims": keep}
    if G.opset >= 12 and G.r() < 0.5:
        kw["select_last_index"] = G.pick([0, 1])
    ax = axis % a.rank
    shape = tuple(1 if i == ax else d for i, d in enumerate(a.shape)) if keep else \
        tuple(d for i, d in enumerate(a.shape) if i != ax)
    return G.emit1(op, [a], G.out(I64, shape, 0, a.shape[ax] - 1, a.shape[ax], True), **kw)


def b_topk(G):
    if G.opset < 11:
        raise Skip("TopK")
    dtype = G.pick([F32, I64])
    a = G.want(dtype, ranks=(1, 2, 3), pred=lambda v: v.exact and len(set(v.shape)) > 0, lo=-9, hi=9)
    axis = G.randint(-a.rank, a.rank - 1)
    n = a.shape[axis % a.rank]
    k = G.randint(1, n)
    kw = {"axis": axis, "largest": G.pick([0, 1]), "sorted": 1}
    shape = list(a.shape)
    shape[axis % a.rank] = k
    vals, idx = G.emit("TopK", [a, G.i64([k])],
                       [G.out(dtype, shape, a.lo, a.hi, a.mag, True),
                        G.out(I64, shape, 0, n - 1, n, True)], **kw)
    return vals


def b_softmax(G):
    op = G.pick(["Softmax", "LogSoftmax", "Hardmax"], [4, 2, 1])
    a = G.want(F32, ranks=(1, 2, 3, 4), pred=(lambda v: v.exact) if op == "Hardmax" else None)
    if a.mag > 50:
        a = G.into_domain(a, "small")
    axis = G.randint(-a.rank, a.rank - 1) if G.r() < 0.6 else -1
    kw = {"axis": axis} if G.r() < 0.85 or G.opset < 13 else {}
    lo, hi = (0.0, 1.0) if op != "LogSoftmax" else (-INF, 0.0)
    return G.emit1(op, [a], G.out(F32, a.shape, lo, hi, 1.0 if op != "LogSoftmax" else 2 * a.mag + 8,
                                  op == "Hardmax"), **kw)


def b_cumsum(G):
    a = G.want(F32, ranks=(1, 2, 3))
    axis = G.randint(-a.rank, a.rank - 1)
    n = a.shape[axis % a.rank]
    kw = {}
    if G.r() < 0.4:
        kw["exclusive"] = 1
    if G.r() < 0.4:
        kw["reverse"] = 1
    ax = G.const(np.array(axis, dtype=G.pick([np.int64, np.int32])))
    return G.emit1("CumSum", [a, ax], G.out(F32, a.shape, a.lo * n if a.lo < 0 else 0.0,
                                            a.hi * n if a.hi > 0 else 0.0, a.mag * n))


# ---- structure -----------------------------------------------------------------------

def b_transpose(G):
    a = G.want(G.pick([F32, F32, F32, I64, BOOL]), ranks=(2, 3, 4, 5))
    perm = G.rng.permutation(a.rank).tolist()
    kw = {"perm": perm}
    if G.r() < 0.15:
        kw = {}
        perm = list(range(a.rank))[::-1]
    shape = tuple(a.shape[p] for p in perm)
    return G.emit1("Transpose", [a], G.out(a.dtype, shape, a.lo, a.hi, a.mag, a.exact), **kw)


def view(G, a, kind=None):
    kind = kind or G.pick(["Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"])
    o = dict(lo=a.lo, hi=a.hi, mag=a.mag, exact=a.exact)
    if kind == "Reshape":
        shape = G.factor(a.numel, G.randint(1, 5))
        return G.reshape_to(a, shape)
    if kind == "Flatten":
        axis = G.randint(-a.rank, a.rank)
        ax = axis + a.rank if axis < 0 else axis
        shape = (numel(a.shape[:ax]), numel(a.shape[ax:]))
        return G.emit1("Flatten", [a], G.out(a.dtype, shape, **o), axis=axis)
    if kind == "Squeeze":
        ones = [i for i, d in enumerate(a.shape) if d == 1]
        if not ones:
            return view(G, a, "Unsqueeze")
        axes = sorted(G.rng.choice(ones, size=G.randint(1, len(ones)), replace=False).tolist())
        all_ones = G.r() < 0.2
        if all_ones:
            axes = ones
        shape = tuple(d for i, d in enumerate(a.shape) if i not in axes)
        axes_w = [x - a.rank if G.r() < 0.3 else x for x in axes]
        if G.opset >= 13:
            ins = [a] if all_ones and G.r() < 0.5 else [a, G.i64(axes_w)]
            return G.emit1("Squeeze", ins, G.out(a.dtype, shape, **o))
        kw = {} if all_ones and G.r() < 0.5 else {"axes": axes_w}
        return G.emit1("Squeeze", [a], G.out(a.dtype, shape, **o), **kw)
    if kind == "Unsqueeze":
        if a.rank >= 5:
            return view(G, a, "Flatten")
        k = G.randint(1, min(2, 6 - a.rank))
        r = a.rank + k
        axes = sorted(G.rng.choice(r, size=k, replace=False).tolist())
        shape = list(a.shape)
        for x in axes:
            shape.insert(x, 1)
        axes_w = [x - r if G.r() < 0.3 else x for x in axes]
        if G.opset >= 13:
            return G.emit1("Unsqueeze", [a, G.i64(axes_w)], G.out(a.dtype, shape, **o))
        return G.emit1("Unsqueeze", [a], G.out(a.dtype, shape, **o), axes=axes_w)
    return G.emit1("Identity", [a], G.out(a.dtype, a.shape, **o))


def b_view(G):
    a = G.want(G.pick([F32, F32, I64]), ranks=(1, 2, 3, 4))
    return view(G, a)


def b_concat(G):
    a = G.want(G.pick([F32, F32, I64]), ranks=(1, 2, 3, 4))
    axis = G.randint(-a.rank, a.rank - 1)
    ax = axis % a.rank
    ins = [a]
    for _ in range(G.randint(1, 3)):
        def same_but_axis(v):
            return v.dtype == a.dtype and v.rank == a.rank and all(
                d == e for i, (d, e) in enumerate(zip(v.shape, a.shape)) if i != ax)
        c = G.candidates(same_but_axis)
        if c and G.r() < 0.5:
            ins.append(G.choose(c))
        else:
            s = list(a.shape)
            s[ax] = G.pick([1, 2, 3, 5])
            if G.r() < 0.5:
                ins.append(G.input(a.dtype, s, -2, 2))
            elif a.dtype == F32:
                ins.append(G.weight(s, 1.0))
            else:
                ins.append(G.const(G.rng.integers(-5, 6, size=s).astype(np.int64)))
    G.rng.shuffle(ins)
    shape = list(a.shape)
    shape[ax] = sum(v.shape[ax] for v in ins)
    if numel(shape) > MAX_NUMEL:
        raise Skip("too big")
    return G.emit1("Concat", ins, G.out(a.dtype, shape, min(v.lo for v in ins),
                                        max(v.hi for v in ins), max(v.mag for v in ins),
                                        all(v.exact for v in ins)), axis=axis)


def b_split(G):
    a = G.want(F32, ranks=(1, 2, 3, 4), pred=lambda v: max(v.shape) >= 2)
    axes = [i for i, d in enumerate(a.shape) if d >= 2]
    ax = G.pick(axes)
    n = a.shape[ax]
    k = G.randint(2, min(4, n))
    cuts = sorted(G.rng.choice(range(1, n), size=k - 1, replace=False).tolist())
    sizes = [b - a_ for a_, b in zip([0] + cuts, cuts + [n])]
    axis = ax - a.rank if G.r() < 0.3 else ax
    outs = []
    for s in sizes:
        sh = list(a.shape)
        sh[ax] = s
        outs.append(G.out(F32, sh, a.lo, a.hi, a.mag, a.exact))
    if G.opset >= 13:
        if G.opset >= 18 and G.r() < 0.3 and n % k == 0:
            sizes = [n // k] * k
            for o in outs:
                o["shape"] = tuple(n // k if i == ax else d for i, d in enumerate(a.shape))
            return G.emit("Split", [a], outs, axis=axis, num_outputs=k)[0]
        return G.emit("Split", [a, G.i64(sizes)], outs, axis=axis)[0]
    return G.emit("Split", [a], outs, axis=axis, split=sizes)[0]


def b_slice(G):
    a = G.want(G.pick([F32, F32, I64]), ranks=(1, 2, 3, 4), pred=lambda v: v.numel > 1)
    naxes = G.randint(1, a.rank)
    axes = sorted(G.rng.choice(a.rank, size=naxes, replace=False).tolist())
    starts, ends, steps, shape = [], [], [], list(a.shape)
    for ax in axes:
        n = a.shape[ax]
        step = G.pick([1, 1, 1, 2, -1, -2, 3])
        if step > 0:
            s = G.randint(-n - 2, n)
            e = G.pick([G.randint(-n, n + 3), 2 ** 62, -2 ** 62])
        else:
            s = G.pick([G.randint(-n - 1, n + 2), 2 ** 62])
            e = G.pick([G.randint(-n - 2, n), -2 ** 62])
        # the length, as numpy sees it
        length = len(range(n)[slice(s if abs(s) < 2 ** 61 else (n if s > 0 else -n - 1),
                                     e if abs(e) < 2 ** 61 else (None if (e > 0) == (step > 0) else
                                                                 (-n - 1 if step < 0 else 0)),
                                     step)])
        if length == 0:
            raise Skip("empty slice")
        starts.append(s)
        ends.append(e)
        steps.append(step)
        shape[ax] = length
    ins = [a, G.i64(starts), G.i64(ends)]
    neg_axes = [x - a.rank if G.r() < 0.3 else x for x in axes]
    if G.opset < 10:
        raise Skip("Slice-1")
    if axes != list(range(len(axes))) or G.r() < 0.5 or any(s != 1 for s in steps):
        ins.append(G.i64(neg_axes))
        if any(s != 1 for s in steps) or G.r() < 0.5:
            ins.append(G.i64(steps))
    y = G.emit1("Slice", ins, G.out(a.dtype, shape, a.lo, a.hi, a.mag, a.exact))
    return y


def b_pad(G):
    a = G.want(F32, ranks=(1, 2, 3, 4), pred=lambda v: numel(v.shape) * 3 < MAX_NUMEL)
    mode = G.pick(["constant", "constant", "reflect", "edge"] + (["wrap"] if G.opset >= 19 else []))
    pads = []
    for i in range(2 * a.rank):
        d = a.shape[i % a.rank]
        mx = d - 1 if mode in ("reflect",) else 2
        if mode == "wrap":
            mx = d
        p = G.randint(0, min(2, mx)) if G.r() < 0.6 else 0
        if mode == "constant" and G.r() < 0.1 and d > 2:
            p = -1
        pads.append(p)
    shape = [a.shape[i] + pads[i] + pads[i + a.rank] for i in range(a.rank)]
    if min(shape) < 1 or numel(shape) > MAX_NUMEL:
        raise Skip("pad")
    cv = G.pick([0.0, 0.5, -1.0])
    lo, hi = min(a.lo, cv if mode == "constant" else a.lo), max(a.hi, cv if mode == "constant" else a.hi)
    if G.opset < 11:
        return G.emit1("Pad", [a], G.out(F32, shape, lo, hi, a.mag, a.exact), mode=mode,
                       pads=pads, value=cv)
    ins = [a, G.i64(pads)]
    if mode == "constant" and (cv != 0.0 or G.r() < 0.3):
        ins.append(G.scalar(cv))
    return G.emit1("Pad", ins, G.out(F32, shape, lo, hi, a.mag, a.exact), mode=mode)


def b_expand_tile(G):
    a = G.want(F32, ranks=(1, 2, 3), pred=lambda v: v.numel <= 64)
    if G.r() < 0.5:
        tgt = [d if d != 1 or G.r() < 0.3 else G.pick([2, 3, 4]) for d in a.shape]
        if G.r() < 0.3:
            tgt = [G.pick([1, 2])] + tgt
        if G.r() < 0.2:  # a target with 1s where a has more: Expand keeps a's dims
            tgt = [1 if G.r() < 0.5 else d for d in tgt]
        shape = bcast(a.shape, tgt)
        return G.emit1("Expand", [a, G.i64(tgt)], G.out(F32, shape, a.lo, a.hi, a.mag, a.exact))
    reps = [G.pick([1, 1, 2, 3]) for _ in a.shape]
    shape = [d * r for d, r in zip(a.shape, reps)]
    return G.emit1("Tile", [a, G.i64(reps)], G.out(F32, shape, a.lo, a.hi, a.mag, a.exact))


def b_gather(G):
    a = G.want(G.pick([F32, F32, I64]), ranks=(1, 2, 3, 4))
    axis = G.randint(-a.rank, a.rank - 1)
    n = a.shape[axis % a.rank]
    if G.r() < 0.7 or a.rank < 1:
        irank = G.pick([0, 1, 1, 2])
        ishape = tuple(G.pick([1, 2, 3, 4]) for _ in range(irank))
        idx = G.rng.integers(-n, n, size=ishape).astype(np.int64)
        iv = G.const(idx)
        ax = axis % a.rank
        shape = a.shape[:ax] + ishape + a.shape[ax + 1:]
        if numel(shape) > MAX_NUMEL:
            raise Skip("big gather")
        return G.emit1("Gather", [a, iv], G.out(a.dtype, shape, a.lo, a.hi, a.mag, a.exact),
                       axis=axis)
    ax = axis % a.rank
    ishape = list(a.shape)
    ishape[ax] = G.pick([1, 2, 3])
    idx = G.rng.integers(-n, n, size=ishape).astype(np.int64)
    return G.emit1("GatherElements", [a, G.const(idx)],
                   G.out(a.dtype, ishape, a.lo, a.hi, a.mag, a.exact), axis=axis)


def b_depth_space(G):
    a = G.want(F32, ranks=(4,), shape=lambda: (G.pick([1, 2]), G.pick([4, 8]), G.pick([2, 3]),
                                                 G.pick([2, 3])))
    N, C, H, W = a.shape
    if G.r() < 0.5:
        bs = G.pick([b for b in (2,) if C % (b * b) == 0] or [0])
        if not bs:
            raise Skip("d2s")
        kw = {"blocksize": bs}
        if G.opset >= 11:
            kw["mode"] = G.pick(["DCR", "CRD"])
        return G.emit1("DepthToSpace", [a], G.out(F32, (N, C // 4, H * 2, W * 2), a.lo, a.hi,
                                                   a.mag, a.exact), **kw)
    if H % 2 or W % 2:
        raise Skip("s2d")
    return G.emit1("SpaceToDepth", [a], G.out(F32, (N, C * 4, H // 2, W // 2), a.lo, a.hi, a.mag,
                                               a.exact), blocksize=2)


def b_trilu(G):
    if G.opset < 14:
        raise Skip("Trilu")
    a = G.want(F32, ranks=(2, 3))
    ins = [a]
    if G.r() < 0.6:
        ins.append(G.i64(G.randint(-2, 2)))
    return G.emit1("Trilu", ins, G.out(F32, a.shape, min(a.lo, 0.0), max(a.hi, 0.0), a.mag, a.exact),
                   upper=G.pick([0, 1]))


def b_resize(G):
    if G.opset < 13:
        raise Skip("Resize")
    a = G.want(F32, ranks=(4,), pred=lambda v: v.numel * 4 <= MAX_NUMEL and v.shape[2] > 1,
               shape=lambda: (1, G.pick([1, 3, 4]), G.pick([3, 4, 5]), G.pick([3, 4, 6])))
    mode, ctm, nm = G.pick([("nearest", "asymmetric", "floor"),
                            ("nearest", "half_pixel", "round_prefer_floor"),
                            ("nearest", "asymmetric", "round_prefer_ceil"),
                            ("linear", "half_pixel", None), ("linear", "align_corners", None),
                            ("linear", "asymmetric", None), ("linear", "pytorch_half_pixel", None)])
    kw = {"mode": mode, "coordinate_transformation_mode": ctm}
    if nm:
        kw["nearest_mode"] = nm
    N, C, H, W = a.shape
    if G.r() < 0.6:
        sh, sw = G.pick([2.0, 2.0, 0.5, 1.5, 3.0]), G.pick([2.0, 2.0, 1.0, 0.5])
        shape = (N, C, int(math.floor(H * sh)), int(math.floor(W * sw)))
        if min(shape) < 1:
            raise Skip("resize")
        if ctm in ("align_corners", "pytorch_half_pixel") and (H * sh != shape[2] or
                                                                W * sw != shape[3]):
            # known.txt: ONNX's reference and ONNX Runtime read length_resized differently
            raise Skip("resize length")
        ins = [a, None, G.const(np.array([1, 1, sh, sw], np.float32))]
    else:
        shape = (N, C, G.randint(1, 2 * H), G.randint(1, 2 * W))
        ins = [a, None, None, G.i64(list(shape))]
    if numel(shape) > MAX_NUMEL:
        raise Skip("resize")
    return G.emit1("Resize", ins, G.out(F32, shape, a.lo, a.hi, a.mag, False), **kw)


# ---- neural network ops --------------------------------------------------------------

def conv_out(n, k, s, d, pb, pe):
    return (n + pb + pe - ((k - 1) * d + 1)) // s + 1


def conv_node(G, x, m=None, group=None, bias=None, nd=None, kernel=None, pads=None,
              strides=None, dilations=None, auto_pad=None, weight_input=False):
    """Conv of x (N,C,spatial...), random geometry where not given; returns the output."""
    N, C = x.shape[:2]
    spatial = x.shape[2:]
    if group is None:
        divs = [g for g in range(2, C + 1) if C % g == 0]
        group = G.pick([1, C] + divs, [6, 3] + [1] * len(divs)) if C > 1 else 1
    if m is None:
        if group == C and G.r() < 0.6:
            m = C * G.pick([1, 1, 2])
        else:
            m = group * G.randint(1, max(1, 16 // group))
    if m % group:
        m = group * max(1, m // group)
    kernel = kernel or [G.pick([1, 1, 2, 3, 3]) for _ in spatial]
    kernel = [min(k, n + 2) for k, n in zip(kernel, spatial)]
    strides = strides or [G.pick([1, 1, 1, 2]) for _ in spatial]
    dilations = dilations or [G.pick([1, 1, 1, 1, 2]) for _ in spatial]
    attrs = {}
    if auto_pad is None:
        auto_pad = G.pick(["NOTSET"] * 6 + ["SAME_UPPER", "SAME_LOWER", "VALID"])
    out_sp = []
    if auto_pad == "NOTSET":
        if pads is None:
            pads = [G.randint(0, max(0, (k - 1) * d)) if G.r() < 0.7 else 0
                    for k, d in zip(kernel * 2, dilations * 2)]
        for i, n in enumerate(spatial):
            out_sp.append(conv_out(n, kernel[i], strides[i], dilations[i], pads[i],
                                   pads[i + len(spatial)]))
        if any(p for p in pads) or G.r() < 0.3:
            attrs["pads"] = pads
    elif auto_pad == "VALID":
        out_sp = [conv_out(n, k, s, d, 0, 0) for n, k, s, d in zip(spatial, kernel, strides, dilations)]
        attrs["auto_pad"] = auto_pad
    else:
        out_sp = [-(-n // s) for n, s in zip(spatial, strides)]
        attrs["auto_pad"] = auto_pad
        dilations = [1] * len(spatial)  # ONNX Runtime refuses dilations with SAME_*
    if min(out_sp) < 1:
        raise Skip("conv output empty")
    if any(s != 1 for s in strides) or G.r() < 0.3:
        attrs["strides"] = strides
    if any(d != 1 for d in dilations) or G.r() < 0.2:
        attrs["dilations"] = dilations
    if G.r() < 0.5:
        attrs["kernel_shape"] = kernel
    if group != 1 or G.r() < 0.2:
        attrs["group"] = group
    fan = C // group * numel(kernel)
    scale = 1.0 / math.sqrt(fan)
    wshape = [m, C // group] + list(kernel)
    if weight_input:
        w = G.input(F32, wshape, -scale, scale)
    else:
        w = G.weight(wshape, scale)
    ins = [x, w]
    b = None
    if bias is None:
        bias = G.r() < 0.6
    if bias:
        b = G.weight([m], 0.5)
        ins.append(b)
    shape = (N, m) + tuple(out_sp)
    if numel(shape) > MAX_NUMEL:
        raise Skip("conv too big")
    hard = fan * scale * max(abs(x.lo), abs(x.hi)) + (0.5 if b else 0)
    mag = x.mag * math.sqrt(fan) * scale * 0.7 + (0.5 if b else 0)
    G.tags["conv%dd" % len(spatial)] += 1
    if group == C and C > 1:
        G.tags["conv_depthwise"] += 1
    return G.emit1("Conv", ins, G.out(F32, shape, -hard, hard, mag), **attrs)


def conv_input(G, ranks=(4,)):
    def ok(v):
        return v.rank in ranks and 1 <= v.shape[1] <= 24 and all(d <= 16 for d in v.shape[2:]) \
            and v.numel <= 1024
    return G.want(F32, ranks=ranks, pred=ok,
                  shape=lambda: (G.pick([1, 1, 2]), G.pick([1, 2, 3, 4, 5, 7, 8]))
                  + tuple(G.pick([3, 4, 5, 6, 7, 8]) for _ in range(ranks[0] - 2)))


def b_conv(G):
    x = conv_input(G, ranks=(G.pick([4, 4, 4, 3, 5]),))
    if x.rank == 5 and x.numel > 512:
        raise Skip("3d")
    return conv_node(G, x, weight_input=G.r() < 0.05)


def b_conv_transpose(G, x=None):
    x = x or conv_input(G, ranks=(4,))
    N, C, H, W = x.shape
    group = G.pick([1, 1, C]) if C > 1 else 1
    mg = G.randint(1, 4)
    m = mg * group
    kernel = [G.pick([1, 2, 3]), G.pick([1, 2, 3])]
    strides = [G.pick([1, 2]), G.pick([1, 2])]
    dil = [G.pick([1, 1, 2]), 1]
    pads = [G.randint(0, k - 1) for k in kernel * 2]
    outpad = [G.randint(0, s - 1) if G.r() < 0.3 else 0 for s in strides]
    out_sp = [(n - 1) * s - pads[i] - pads[i + 2] + ((k - 1) * d + 1) + op
              for i, (n, s, k, d, op) in enumerate(zip((H, W), strides, kernel, dil, outpad))]
    if min(out_sp) < 1 or numel((N, m) + tuple(out_sp)) > MAX_NUMEL:
        raise Skip("convT")
    fan = C // group * numel(kernel)
    scale = 1.0 / math.sqrt(fan)
    w = G.weight([C, mg] + kernel, scale)
    ins = [x, w]
    if G.r() < 0.5:
        ins.append(G.weight([m], 0.5))
    attrs = {"kernel_shape": kernel, "strides": strides, "pads": pads, "dilations": dil}
    if group > 1:
        attrs["group"] = group
    if any(outpad):
        attrs["output_padding"] = outpad
    hard = numel(kernel) * C * scale * max(abs(x.lo), abs(x.hi)) + 0.5
    return G.emit1("ConvTranspose", ins, G.out(F32, (N, m) + tuple(out_sp), -hard, hard,
                                               x.mag * 1.5 + 0.5), **attrs)


def pool_out(n, k, s, d, pb, pe, ceil_mode):
    span = n + pb + pe - ((k - 1) * d + 1)
    if ceil_mode:
        out = -(-span // s) + 1
        if (out - 1) * s >= n + pb:
            # the last window would start in the end padding: ONNX's shape inference keeps
            # it, PyTorch and newer ONNX Runtimes drop it; the spec is unclear, so skip
            raise Skip("ceil_mode window in the padding")
        return out
    return span // s + 1


def b_pool(G):
    op = G.pick(["MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool"],
                [3, 3, 2, 1, 0.3])
    x = conv_input(G, ranks=(G.pick([4, 4, 3]),))
    N, C = x.shape[:2]
    sp = x.shape[2:]
    if op.startswith("Global"):
        return G.emit1(op, [x], G.out(F32, (N, C) + (1,) * len(sp), x.lo, x.hi, x.mag,
                                      x.exact and op == "GlobalMaxPool"))
    kernel = [G.randint(1, min(3, n)) for n in sp]
    strides = [G.pick([1, 2, 2, 3]) for _ in sp]
    dil = [1] * len(sp)
    if op == "MaxPool" and G.opset >= 10 and G.r() < 0.2:
        dil = [G.pick([1, 2]) for _ in sp]
    pads = [G.randint(0, k - 1) if G.r() < 0.5 else 0 for k in kernel * 2]
    ceil = G.pick([0, 0, 1]) if G.opset >= 10 else 0
    out_sp = [pool_out(n, k, s, d, pads[i], pads[i + len(sp)], ceil)
              for i, (n, k, s, d) in enumerate(zip(sp, kernel, strides, dil))]
    if min(out_sp) < 1:
        raise Skip("pool")
    attrs = {"kernel_shape": kernel, "strides": strides}
    if any(pads):
        attrs["pads"] = pads
    if ceil:
        attrs["ceil_mode"] = 1
    if any(d != 1 for d in dil):
        attrs["dilations"] = dil
    if op == "AveragePool" and G.r() < 0.4:
        attrs["count_include_pad"] = 1
    if op == "LpPool":
        if G.opset < 11 or ceil or any(d != 1 for d in dil):
            raise Skip("LpPool")
        attrs["p"] = G.pick([1, 2])
        return G.emit1(op, [x], G.out(F32, (N, C) + tuple(out_sp), 0.0, x.mag * numel(kernel),
                                      x.mag * numel(kernel)), **attrs)
    exact = x.exact and op == "MaxPool"
    return G.emit1(op, [x], G.out(F32, (N, C) + tuple(out_sp), x.lo, x.hi, x.mag, exact), **attrs)


def bn_node(G, x, eps=None):
    C = x.shape[1]
    scale = G.weight([C], 1.0, positive=True)
    bias = G.weight([C], 0.5)
    mean = G.weight([C], 0.5)
    var = G.weight([C], 1.0, positive=True)
    eps = eps if eps is not None else G.pick([1e-5, 1e-3, 0.1])
    sc = 1.5 / math.sqrt(0.5 + eps)
    lo, hi = mul_iv((x.lo - 0.5, x.hi + 0.5), (0, sc))
    return G.emit1("BatchNormalization", [x, scale, bias, mean, var],
                   G.out(F32, x.shape, lo - 0.5, hi + 0.5, (x.mag + 0.5) * 1.5 + 0.5),
                   epsilon=eps)


def b_norm(G):
    op = G.pick(["BatchNormalization", "InstanceNormalization", "LayerNormalization", "LRN",
                 "GroupNormalization"], [3, 1, 3, 0.5, 0.5])
    if op == "LayerNormalization":
        if G.opset < 17:
            raise Skip("LN")
        x = G.want(F32, ranks=(2, 3, 4), pred=lambda v: v.shape[-1] > 1)
        axis = -1 if G.r() < 0.6 else G.randint(-x.rank, x.rank - 1)
        ax = axis % x.rank
        nshape = x.shape[ax:]
        ins = [x, G.weight(nshape, 1.0, positive=True)]
        if G.r() < 0.7:
            ins.append(G.weight(nshape, 0.5))
        k = math.sqrt(numel(nshape))
        return G.emit1(op, ins, G.out(F32, x.shape, -1.5 * k - .5, 1.5 * k + .5, 3.0),
                       axis=axis, epsilon=G.pick([1e-5, 1e-3]))
    x = conv_input(G, ranks=(G.pick([4, 4, 3]),)) if op != "BatchNormalization" else \
        G.want(F32, ranks=(2, 3, 4), pred=lambda v: v.shape[1] <= 32)
    C = x.shape[1]
    if op == "BatchNormalization":
        return bn_node(G, x)
    if op == "InstanceNormalization":
        k = math.sqrt(numel(x.shape[2:]))
        return G.emit1(op, [x, G.weight([C], 1.0, positive=True), G.weight([C], 0.5)],
                       G.out(F32, x.shape, -1.5 * k - .5, 1.5 * k + .5, 3.0),
                       epsilon=G.pick([1e-5, 1e-3]))
    if op == "GroupNormalization":
        if G.opset < 21:
            raise Skip("GN")
        gs = [g for g in range(1, C + 1) if C % g == 0]
        ng = G.pick(gs)
        k = math.sqrt(numel(x.shape[2:]) * C // ng)
        return G.emit1(op, [x, G.weight([C], 1.0, positive=True), G.weight([C], 0.5)],
                       G.out(F32, x.shape, -1.5 * k - .5, 1.5 * k + .5, 3.0), num_groups=ng,
                       epsilon=G.pick([1e-5, 1e-3]))
    if x.rank != 4:
        raise Skip("LRN")
    return G.emit1("LRN", [x], G.out(F32, x.shape, x.lo if x.lo < 0 else 0.0, x.hi, x.mag),
                   size=G.pick([1, 3, 5]), alpha=G.pick([1e-4, 0.01]), beta=0.75,
                   bias=G.pick([1.0, 2.0]))


def gemm_node(G, a=None, n=None, trans_a=None, trans_b=None, c_kind=None, alpha=None,
              beta=None, b_input=False):
    a = a or G.want(F32, ranks=(2,), pred=lambda v: v.shape[1] <= 64)
    ta = G.pick([0, 0, 0, 1]) if trans_a is None else trans_a
    tb = G.pick([0, 1]) if trans_b is None else trans_b
    M, K = (a.shape[1], a.shape[0]) if ta else a.shape
    n = n or G.pick([1, 2, 3, 5, 8, 10, 16])
    scale = 1 / math.sqrt(K)
    bshape = [n, K] if tb else [K, n]
    b = G.input(F32, bshape, -scale, scale) if b_input else G.weight(bshape, scale)
    attrs = {}
    if ta:
        attrs["transA"] = 1
    if tb:
        attrs["transB"] = 1
    alpha = G.pick([1.0, 1.0, 0.5, 2.0]) if alpha is None else alpha
    beta = G.pick([1.0, 1.0, 0.5, -1.0]) if beta is None else beta
    if alpha != 1.0:
        attrs["alpha"] = alpha
    if beta != 1.0:
        attrs["beta"] = beta
    ins = [a, b]
    c_kind = c_kind or G.pick(["none", "n", "1n", "mn", "m1", "scalar"], [3, 3, 2, 1, 1, 1])
    cshape = {"n": [n], "1n": [1, n], "mn": [M, n], "m1": [M, 1], "scalar": [1], "none": None}[c_kind]
    if cshape is not None:
        ins.append(G.weight(cshape, 0.5) if G.r() < 0.85 else G.input(F32, cshape, -0.5, 0.5))
    elif G.opset < 11:
        ins.append(G.weight([n], 0.5))
    hard = abs(alpha) * K * scale * max(abs(a.lo), abs(a.hi)) + 0.5 * abs(beta)
    y = G.emit1("Gemm", ins, G.out(F32, (M, n), -hard, hard, a.mag * abs(alpha) + 0.5 * abs(beta)),
                **attrs)
    return y


def b_gemm(G):
    return gemm_node(G)


def matmul_shapes(G, a):
    """A B shape for MatMul with a, and the output shape."""
    r = G.r()
    K = a.shape[-1]
    n = G.pick([1, 2, 3, 4, 8, 16])
    if a.rank == 1:
        bs = (K, n) if r < 0.7 else (2, K, n)
        return bs, bs[:-2] + (n,)
    if r < 0.6:
        bs = (K, n)
    elif r < 0.75:
        bs = (K,)
    else:
        batch = list(a.shape[:-2])
        if batch and G.r() < 0.5:
            batch = [1 if G.r() < 0.5 else d for d in batch]
        if G.r() < 0.3:
            batch = [G.pick([2, 3])] + batch
        bs = tuple(batch) + (K, n)
    if len(bs) == 1:
        return bs, a.shape[:-1]
    out = bcast(a.shape[:-2], bs[:-2]) + (a.shape[-2], n) if a.rank >= 2 else bs[:-2] + (n,)
    return bs, out


def b_matmul(G):
    a = G.want(F32, ranks=(1, 2, 3, 4), pred=lambda v: v.shape[-1] <= 64)
    bs, out = matmul_shapes(G, a)
    if numel(out) > MAX_NUMEL:
        raise Skip("mm big")
    K = a.shape[-1]
    scale = 1 / math.sqrt(K)
    b = G.weight(bs, scale) if G.r() < 0.7 else G.input(F32, bs, -scale, scale)
    if G.r() < 0.5:
        # swap: the pool value on the right
        pass
    hard = K * scale * max(abs(a.lo), abs(a.hi))
    return G.emit1("MatMul", [a, b], G.out(F32, out, -hard, hard, a.mag))


# ======================================================================================
# Pattern blocks: what the passes look for, with the variants that must not match
# ======================================================================================

ACTS = ["Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "SiLU", "Gelu",
        "Tanh", "none"]


def activation(G, x, kind=None):
    kind = kind or G.pick(ACTS, [4, 2, 1, 1, 1, 1, 2, 1, 1, 2])
    if kind == "Gelu" and G.opset < 20:
        kind = "Relu"
    if kind == "HardSwish" and G.opset < 14:
        kind = "Relu"
    G.tags["act_" + kind] += 1
    if kind == "none":
        return x
    if kind == "Clip":
        lo, hi = G.pick([(0.0, 6.0), (-1.0, 1.0), (0.0, None), (None, 0.5)])
        if G.opset < 11:
            kw = {k: v for k, v in (("min", lo), ("max", hi)) if v is not None}
            return G.emit1("Clip", [x], G.out(F32, x.shape, lo or x.lo, hi or x.hi, x.mag), **kw)
        ins = [x, G.scalar(lo) if lo is not None else None]
        if hi is not None:
            ins.append(G.scalar(hi))
        olo = max(x.lo, lo) if lo is not None else x.lo
        ohi = min(x.hi, hi) if hi is not None else x.hi
        return G.emit1("Clip", ins, G.out(F32, x.shape, min(olo, ohi), max(olo, ohi), x.mag))
    if kind == "LeakyRelu":
        a = G.pick([0.01, 0.2])
        return G.emit1("LeakyRelu", [x], G.out(F32, x.shape, min(x.lo * a, 0), x.hi, x.mag), alpha=a)
    if kind == "HardSigmoid":
        return G.emit1("HardSigmoid", [x], G.out(F32, x.shape, 0.0, 1.0, 1.0), alpha=0.2, beta=0.5)
    if kind == "SiLU":
        s = G.unary("Sigmoid", x)
        a, b = (x, s) if G.r() < 0.5 else (s, x)
        return G.emit1("Mul", [a, b], G.out(F32, x.shape, -0.28 if x.lo < 0 else 0.0,
                                            max(x.hi, 0.0), x.mag))
    if kind == "Gelu":
        kw = {"approximate": "tanh"} if G.r() < 0.4 else {}
        return G.unary("Gelu", x, **kw)
    return G.unary(kind, x)


def maybe_tap(G, v, p=0.12):
    """Sometimes a second reader (a Relu or a ReduceSum) or a graph output on v: the patterns
    through v must not be fused then."""
    r = G.r()
    if r < p / 2:
        G.force_output(v)
        G.tags["tap_output"] += 1
    elif r < p:
        G.tags["tap_reader"] += 1
        if v.dtype == F32 and v.rank >= 1:
            reduce_node(G, "ReduceSum", v, axes=[-1], keepdims=0) if v.rank >= 2 else \
                G.unary("Abs", v)
        else:
            G.emit1("Identity", [v], G.out(v.dtype, v.shape, v.lo, v.hi, v.mag, v.exact))


def bias_add(G, y, axis):
    """Add of a per-channel constant along axis (several spellings), or one that is not
    per-channel (a full tensor, a broadcast along another axis): fold or not."""
    C = y.shape[axis]
    r = G.r()
    rank = y.rank
    if r < 0.35:
        s = [C] + [1] * (rank - 1 - axis)
    elif r < 0.55:
        s = [1] * axis + [C] + [1] * (rank - 1 - axis)
    elif r < 0.65:
        s = [C]  # along the last axis: per-channel only when axis is the last
    elif r < 0.75:
        s = list(y.shape[1:]) if rank > 1 else [C]
    elif r < 0.85:
        s = [1] * rank  # one element
    else:
        s = [1] * axis + [C] + [1] * (rank - 1 - axis)
        s = [2] + s[1:] if rank > 1 and s[0] == 1 and G.r() < 0.5 else s  # widens the batch
    try:
        shape = bcast(y.shape, s)
    except Skip:
        s = [C] + [1] * (rank - 1 - axis)
        shape = bcast(y.shape, s)
    b = G.weight(s, 0.5) if G.r() < 0.9 else G.input(F32, s, -0.5, 0.5)
    G.tags["bias_add"] += 1
    a1, a2 = (y, b) if G.r() < 0.7 else (b, y)
    return G.emit1("Add", [a1, a2], G.out(F32, shape, y.lo - 0.5, y.hi + 0.5, y.mag + 0.5))


def p_conv_bn_act(G):
    """Conv [+ bias Add] [+ BatchNormalization] [+ residual Add] [+ activation]."""
    x = conv_input(G, ranks=(G.pick([4, 4, 4, 3]),))
    y = conv_node(G, x, weight_input=G.r() < 0.03)
    G.tags["pattern_conv"] += 1
    maybe_tap(G, y)
    if G.r() < 0.3:
        y = bias_add(G, y, 1)
        maybe_tap(G, y)
    if G.r() < 0.6 and y.rank >= 2:
        y = bn_node(G, y)
        G.tags["pattern_conv_bn"] += 1
        maybe_tap(G, y)
    if G.r() < 0.35:
        same = G.candidates(lambda v: v.dtype == F32 and v.shape == y.shape and v is not y)
        if same and G.r() < 0.6:
            other = G.choose(same)
        elif G.r() < 0.2 and y.rank == 4:
            other = G.input(F32, (1,) + y.shape[1:2] + (1, y.shape[3]), -1, 1)  # broadcast
        else:
            other = G.input(F32, y.shape, -1, 1)
        G.tags["pattern_residual"] += 1
        a1, a2 = (y, other) if G.r() < 0.5 else (other, y)
        y = G.emit1("Add", [a1, a2], G.out(F32, bcast(y.shape, other.shape), y.lo + other.lo,
                                           y.hi + other.hi, y.mag + other.mag))
        maybe_tap(G, y)
    return activation(G, y)


def p_conv_transpose_bn(G):
    y = b_conv_transpose(G)
    G.tags["pattern_convtranspose"] += 1
    if G.r() < 0.8:
        y = bn_node(G, y)
    return activation(G, y)


def p_gemm_bias_act(G):
    """Gemm or MatMul, then a bias Add, BatchNormalization (Gemm) and an activation."""
    if G.r() < 0.5:
        y = gemm_node(G, c_kind=G.pick(["none", "none", "n", "1n", "scalar"]))
        G.tags["pattern_gemm"] += 1
        maybe_tap(G, y)
        if G.r() < 0.5:
            y = bias_add(G, y, 1)
            maybe_tap(G, y)
        if G.r() < 0.3:
            y = bn_node(G, y)
            G.tags["pattern_gemm_bn"] += 1
        return activation(G, y)
    a = G.want(F32, ranks=(2, 3, 4), pred=lambda v: v.shape[-1] <= 64)
    K = a.shape[-1]
    n = G.pick([1, 3, 4, 8, 16])
    scale = 1 / math.sqrt(K)
    if G.r() < 0.8:
        bshape = (K, n)
    else:
        bshape = tuple(a.shape[:-2]) + (K, n)
    b = G.weight(bshape, scale) if G.r() < 0.9 else G.input(F32, bshape, -scale, scale)
    out = bcast(a.shape[:-2], bshape[:-2]) + (a.shape[-2], n)
    if numel(out) > MAX_NUMEL:
        raise Skip("mm")
    y = G.emit1("MatMul", [a, b], G.out(F32, out, -K * scale * a.mag, K * scale * a.mag, a.mag))
    G.tags["pattern_matmul"] += 1
    maybe_tap(G, y)
    if G.r() < 0.7:
        y = bias_add(G, y, y.rank - 1)
    return activation(G, y)


def p_attention(G):
    """MatMul(Q, K^T) [scale] [mask] Softmax MatMul(., V) [Transpose], from projected and
    transposed heads or plain inputs; variants that must not fuse: a batch that broadcasts,
    softmax over another axis, a per-head scale, a second reader."""
    rank = G.pick([4, 4, 3, 2])
    B, H, S, Sk, D = G.pick([1, 2]), G.pick([1, 2, 3]), G.pick([1, 3, 4, 5]), G.pick([2, 3, 4, 6]), \
        G.pick([2, 4, 8])
    if G.r() < 0.5:
        Sk = S
    G.tags["pattern_attention"] += 1
    lead = {4: (B, H), 3: (B * H,), 2: ()}[rank]
    q_shape, kt_shape, v_shape = lead + (S, D), lead + (D, Sk), lead + (Sk, D)
    if rank == 4 and G.r() < 0.6:
        # projected heads: x (B,S,E) -> MatMul -> Reshape (B,S,H,D) -> Transpose
        E = H * D

        def heads(seq, perm):
            x = G.want(F32, ranks=(3,), pred=lambda v: v.shape == (B, seq, E),
                       shape=lambda: (B, seq, E))
            w = G.weight((E, E), 1 / math.sqrt(E))
            p = G.emit1("MatMul", [x, w], G.out(F32, (B, seq, E), -E, E, x.mag))
            r = G.reshape_to(p, (B, seq, H, D))
            shape = tuple(r.shape[i] for i in perm)
            return G.emit1("Transpose", [r], G.out(F32, shape, r.lo, r.hi, r.mag), perm=perm)
        q = heads(S, [0, 2, 1, 3])
        kt = heads(Sk, [0, 2, 3, 1])
        v = heads(Sk, [0, 2, 1, 3])
        G.tags["attention_heads"] += 1
    else:
        def operand(shape):
            if G.r() < 0.25 and len(shape) >= 2:
                perm = list(range(len(shape)))
                perm[-1], perm[-2] = perm[-2], perm[-1]
                src_shape = tuple(shape[p] for p in perm)
                x = G.input(F32, src_shape, -1, 1)
                return G.emit1("Transpose", [x], G.out(F32, shape, -1, 1, 1), perm=perm)
            return G.want(F32, ranks=(len(shape),), pred=lambda v: v.shape == shape,
                          shape=lambda: shape)
        q, kt, v = operand(q_shape), operand(kt_shape), operand(v_shape)
        if rank >= 3 and G.r() < 0.1:  # K^T batch broadcast: must not fuse
            kt_shape = (1,) + kt_shape[1:]
            kt = G.input(F32, kt_shape, -1, 1)
            G.tags["attention_bcast_batch"] += 1
    # a scale on Q first (torch's MultiheadAttention)
    if G.r() < 0.2:
        q = G.emit1("Mul", [q, G.scalar(1 / math.sqrt(D))], G.out(F32, q.shape, -1, 1, q.mag))
        G.tags["attention_qscale"] += 1
    s_shape = bcast(q.shape[:-2], kt.shape[:-2]) + (q.shape[-2], kt.shape[-1])
    s = G.emit1("MatMul", [q, kt], G.out(F32, s_shape, -D * q.mag * kt.mag, D * q.mag * kt.mag,
                                         q.mag * kt.mag * math.sqrt(D)))
    maybe_tap(G, s, 0.06)
    r = G.r()
    if r < 0.4:
        s = G.binary("Div", s, G.const(np.array(math.sqrt(D), np.float32).reshape(
            G.pick([(), (1,)]))))
    elif r < 0.7:
        c = G.scalar(1 / math.sqrt(D))
        a1, a2 = (s, c) if G.r() < 0.5 else (c, s)
        s = G.emit1("Mul", [a1, a2], G.out(F32, s.shape, s.lo, s.hi, s.mag / math.sqrt(D)))
    elif r < 0.75 and rank == 4:
        c = G.weight((H, 1, 1), 0.5)  # per-head: must not fuse
        s = G.emit1("Mul", [s, c], G.out(F32, s.shape, s.lo, s.hi, s.mag))
        G.tags["attention_perhead_scale"] += 1
    if G.r() < 0.5:
        opts = [s.shape[-1:], s.shape[-2:], (1,) * (len(s.shape) - 1) + s.shape[-1:],
                (s.shape[0],) + (1,) * (len(s.shape) - 2) + s.shape[-1:], s.shape]
        mshape = G.pick(opts)
        if G.r() < 0.6:
            mask = G.const(np.where(G.rng.random(mshape) < 0.25, -1e4, 0.0).astype(np.float32))
        else:
            mask = G.input(F32, mshape, -1, 1)
        a1, a2 = (s, mask) if G.r() < 0.7 else (mask, s)
        s = G.emit1("Add", [a1, a2], G.out(F32, bcast(s.shape, mshape), -INF, s.hi + 1, s.mag + 1))
        G.tags["attention_mask"] += 1
    axis = -1 if G.r() < 0.9 else -2
    if axis == -2:
        G.tags["attention_softmax_other_axis"] += 1
    kw = {"axis": axis if G.r() < 0.5 else len(s.shape) + axis}
    if G.opset < 13 and axis == -1:
        kw = {"axis": len(s.shape) - 1}
    p = G.emit1("Softmax", [s], G.out(F32, s.shape, 0.0, 1.0, 1.0), **kw)
    maybe_tap(G, p, 0.06)
    o_shape = bcast(p.shape[:-2], v.shape[:-2]) + (p.shape[-2], v.shape[-1])
    o = G.emit1("MatMul", [p, v], G.out(F32, o_shape, -v.mag * 1.0, v.mag, v.mag))
    if rank == 4 and G.r() < 0.6:
        o = G.emit1("Transpose", [o], G.out(F32, (o.shape[0], o.shape[2], o.shape[1], o.shape[3]),
                                            o.lo, o.hi, o.mag), perm=[0, 2, 1, 3])
        if G.r() < 0.6:
            o = G.reshape_to(o, (o.shape[0], o.shape[1], o.shape[2] * o.shape[3]))
    return o


def reduce_mean_last(G, x, axis=-1, keep=1):
    if G.opset >= 18:
        return G.emit1("ReduceMean", [x, G.i64([axis])],
                       G.out(F32, x.shape[:-1] + (1,) if keep else x.shape[:-1], x.lo, x.hi, x.mag),
                       keepdims=keep)
    return G.emit1("ReduceMean", [x], G.out(F32, tuple(1 if i == axis % x.rank else d
                                                       for i, d in enumerate(x.shape)), x.lo, x.hi,
                                            x.mag), axes=[axis], keepdims=keep)


def p_layernorm(G):
    """LayerNorm or RMSNorm spelled out, or as LayerNormalization; variants: another axis,
    a second reader of an intermediate, gamma/beta shapes that do not fit."""
    x = G.want(F32, ranks=(2, 3, 4), pred=lambda v: v.shape[-1] >= 2 and v.mag < 100)
    rms = G.r() < 0.25
    G.tags["pattern_rmsnorm" if rms else "pattern_layernorm"] += 1
    if not rms and G.opset >= 17 and G.r() < 0.2:
        G.tags["layernorm_op"] += 1
        C = x.shape[-1]
        ins = [x, G.weight((C,), 1.0, positive=True)]
        if G.r() < 0.7:
            ins.append(G.weight((C,), 0.5))
        return G.emit1("LayerNormalization", ins, G.out(F32, x.shape, -1.5 * math.sqrt(C),
                                                        1.5 * math.sqrt(C), 2.0), axis=-1,
                       epsilon=1e-5)
    axis = -1 if G.r() < 0.85 else x.rank - 1 if G.r() < 0.5 else -2
    if axis == -2:
        G.tags["layernorm_other_axis"] += 1
    if rms:
        d = x
    else:
        mean = reduce_mean_last(G, x, axis) if axis != -2 else reduce_node(G, "ReduceMean", x,
                                                                            axes=[-2], keepdims=1)
        d = G.emit1("Sub", [x, mean], G.out(F32, x.shape, x.lo - x.hi, x.hi - x.lo, x.mag * 2))
        maybe_tap(G, d, 0.08)
    if G.r() < 0.6:
        sq = G.emit1("Pow", [d, G.scalar(2.0, F32, G.r() < 0.7)],
                     G.out(F32, d.shape, 0.0, d.mag ** 2, d.mag ** 2))
    else:
        sq = G.emit1("Mul", [d, d], G.out(F32, d.shape, 0.0, d.mag ** 2, d.mag ** 2))
    var = reduce_mean_last(G, sq, axis) if axis != -2 else reduce_node(G, "ReduceMean", sq,
                                                                        axes=[-2], keepdims=1)
    eps = G.scalar(G.pick([1e-5, 1e-6, 1e-3]), F32, G.r() < 0.7)
    a1, a2 = (var, eps) if G.r() < 0.7 else (eps, var)
    ve = G.emit1("Add", [a1, a2], G.out(F32, var.shape, 1e-6, var.hi + 1e-3, var.mag))
    maybe_tap(G, ve, 0.05)
    sd = G.emit1("Sqrt", [ve], G.out(F32, ve.shape, 1e-3, math.sqrt(ve.hi), math.sqrt(ve.mag)))
    if G.r() < 0.7:
        n = G.emit1("Div", [d, sd], G.out(F32, d.shape, -INF, INF, 3.0))
    else:
        rc = G.emit1("Reciprocal", [sd], G.out(F32, sd.shape, 0.0, INF, 1000.0))
        a1, a2 = (d, rc) if G.r() < 0.6 else (rc, d)
        n = G.emit1("Mul", [a1, a2], G.out(F32, d.shape, -INF, INF, 3.0))
        G.tags["norm_reciprocal"] += 1
    if G.r() < 0.8:
        C = x.shape[-1]
        gshape = G.pick([(C,), (C,), (1, C), (1,), (x.shape[-2], C) if x.rank >= 2 else (C,)])
        g = G.weight(gshape, 1.0, positive=True)
        a1, a2 = (n, g) if G.r() < 0.7 else (g, n)
        n = G.emit1("Mul", [a1, a2], G.out(F32, bcast(n.shape, gshape), -INF, INF, 4.5))
        if not rms and G.r() < 0.7:
            b = G.weight(G.pick([(C,), (1, C), (1,)]), 0.5)
            a1, a2 = (n, b) if G.r() < 0.7 else (b, n)
            n = G.emit1("Add", [a1, a2], G.out(F32, bcast(n.shape, b.shape), -INF, INF, 5.0))
    n.lo, n.hi = -50.0 * math.sqrt(x.shape[-1]), 50.0 * math.sqrt(x.shape[-1])
    return n


def p_gelu(G):
    """x * 0.5 * (1 + Erf(x / sqrt 2)) or the tanh form, in the orders exporters write;
    sometimes with a constant that is off or another x in the tail (no fusion then)."""
    x = G.want(F32, ranks=(1, 2, 3, 4), pred=lambda v: v.mag < 50)
    tanh_form = G.r() < 0.4
    G.tags["pattern_gelu_tanh" if tanh_form else "pattern_gelu_erf"] += 1
    off = G.r() < 0.08
    if off:
        G.tags["gelu_off"] += 1

    def k(c):
        return c * 1.2 if off and G.r() < 0.5 else c
    if tanh_form:
        r = G.r()
        if r < 0.4:
            cube = G.emit1("Pow", [x, G.scalar(3.0)], G.out(F32, x.shape, x.lo ** 3, x.hi ** 3,
                                                            x.mag ** 3))
        else:
            sq = G.emit1("Mul", [x, x], G.out(F32, x.shape, 0.0, x.mag ** 2, x.mag ** 2))
            a1, a2 = (x, sq) if r < 0.7 else (sq, x)
            cube = G.emit1("Mul", [a1, a2], G.out(F32, x.shape, -x.mag ** 3, x.mag ** 3, x.mag ** 3))
        c = G.emit1("Mul", [cube, G.scalar(k(0.044715))], G.out(F32, x.shape, -INF, INF,
                                                                0.05 * x.mag ** 3))
        a1, a2 = (x, c) if G.r() < 0.5 else (c, x)
        inner = G.emit1("Add", [a1, a2], G.out(F32, x.shape, -INF, INF, x.mag + 0.05 * x.mag ** 3))
        sc = G.scalar(k(math.sqrt(2 / math.pi)))
        a1, a2 = (inner, sc) if G.r() < 0.5 else (sc, inner)
        t_in = G.emit1("Mul", [a1, a2], G.out(F32, x.shape, -INF, INF, inner.mag))
        f = G.unary("Tanh", t_in)
    else:
        if G.r() < 0.5:
            t_in = G.emit1("Div", [x, G.scalar(k(math.sqrt(2)))], G.out(F32, x.shape, x.lo, x.hi,
                                                                       x.mag))
        else:
            c = G.scalar(k(1 / math.sqrt(2)))
            a1, a2 = (x, c) if G.r() < 0.5 else (c, x)
            t_in = G.emit1("Mul", [a1, a2], G.out(F32, x.shape, x.lo, x.hi, x.mag))
        f = G.unary("Erf", t_in)
    maybe_tap(G, f, 0.06)
    one = G.scalar(k(1.0))
    a1, a2 = (f, one) if G.r() < 0.6 else (one, f)
    a = G.emit1("Add", [a1, a2], G.out(F32, x.shape, 0.0, 2.0, 2.0))
    xx = x
    if G.r() < 0.05:
        xx = G.partner(x, fresh=1.0)
        if xx.shape != x.shape:
            xx = x
        else:
            G.tags["gelu_other_x"] += 1
    r = G.r()
    o = G.out(F32, x.shape, min(0.0, 2 * x.lo), max(0.0, 2 * x.hi), x.mag)
    if r < 0.4:  # (x * a) * 0.5
        a1, a2 = (xx, a) if G.r() < 0.5 else (a, xx)
        m = G.emit1("Mul", [a1, a2], o)
        if G.r() < 0.8:
            y = G.emit1("Mul", [m, G.scalar(k(0.5))], o)
        else:
            y = G.emit1("Div", [m, G.scalar(k(2.0))], o)
    elif r < 0.7:  # (x * 0.5) * a
        h = G.emit1("Mul", [xx, G.scalar(k(0.5))], o)
        a1, a2 = (h, a) if G.r() < 0.5 else (a, h)
        y = G.emit1("Mul", [a1, a2], o)
    else:  # x * (a * 0.5)
        h = G.emit1("Mul", [a, G.scalar(k(0.5))], G.out(F32, x.shape, 0.0, 1.0, 1.0))
        a1, a2 = (xx, h) if G.r() < 0.5 else (h, xx)
        y = G.emit1("Mul", [a1, a2], o)
    return y


def p_nhwc_conv(G):
    """A channels-last input transposed into a convolution and back, with pools, Concat on
    channels, Pad and elementwise ops between: the layout pass's region and its boundary
    Transposes (which must cancel where they meet)."""
    N, H, W, C = G.pick([1, 2]), G.pick([4, 5, 6, 8]), G.pick([4, 5, 7, 8]), G.pick([1, 2, 3, 4, 5])
    if G.r() < 0.6:
        xin = G.want(F32, ranks=(4,), pred=lambda v: v.numel <= 1024 and v.shape[3] <= 16,
                     shape=lambda: (N, H, W, C))
        x = G.emit1("Transpose", [xin], G.out(F32, (xin.shape[0], xin.shape[3], xin.shape[1],
                                                    xin.shape[2]), xin.lo, xin.hi, xin.mag),
                    perm=[0, 3, 1, 2])
        G.tags["nhwc_in_transpose"] += 1
    else:
        x = conv_input(G)
    y = conv_node(G, x)
    y = activation(G, y, G.pick(["Relu", "none", "Sigmoid", "Clip"]))
    for _ in range(G.randint(0, 3)):
        r = G.r()
        if r < 0.25:
            k = G.pick([2, 3])
            if min(y.shape[2:]) >= k:
                y = G.emit1("MaxPool", [y], G.out(F32, (y.shape[0], y.shape[1]) + tuple(
                    (d - k) // k + 1 for d in y.shape[2:]), y.lo, y.hi, y.mag),
                    kernel_shape=[k, k], strides=[k, k])
        elif r < 0.45:
            z = conv_node(G, y, m=G.randint(1, 6), group=1)
            if z.shape[2:] == y.shape[2:]:
                y = G.emit1("Concat", [y, z], G.out(F32, (y.shape[0], y.shape[1] + z.shape[1]) +
                                                    y.shape[2:], -INF, INF, max(y.mag, z.mag)),
                            axis=G.pick([1, -3]))
                G.tags["layout_concat"] += 1
            else:
                y = z
        elif r < 0.6:
            c = G.weight((y.shape[1], 1, 1), 0.5)
            y = G.binary(G.pick(["Add", "Mul"]), y, c)
        elif r < 0.7:
            y = bn_node(G, y)
            G.tags["layout_bn"] += 1
        elif r < 0.8 and G.opset >= 11:
            pads = [0, 0, G.randint(0, 1), G.randint(0, 2), 0, 0, G.randint(0, 2), G.randint(0, 1)]
            y = G.emit1("Pad", [y, G.i64(pads)], G.out(F32, tuple(
                d + pads[i] + pads[i + 4] for i, d in enumerate(y.shape)), y.lo, y.hi, y.mag),
                mode=G.pick(["constant", "edge"]))
            G.tags["layout_pad"] += 1
        elif r < 0.9:
            y = G.emit1("AveragePool", [y], G.out(F32, y.shape, y.lo, y.hi, y.mag),
                        kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
        else:
            w = G.weight((y.shape[3],), 0.5)  # a constant along W: permuted, not per channel
            y = G.binary("Add", y, w)
            G.tags["layout_bcast_w"] += 1
    r = G.r()
    if r < 0.5:
        G.tags["nhwc_out_transpose"] += 1
        return G.emit1("Transpose", [y], G.out(F32, (y.shape[0], y.shape[2], y.shape[3], y.shape[1]),
                                               y.lo, y.hi, y.mag), perm=[0, 2, 3, 1])
    if r < 0.75:
        g = G.emit1("GlobalAveragePool", [y], G.out(F32, y.shape[:2] + (1, 1), y.lo, y.hi, y.mag))
        if G.r() < 0.5:
            f = G.emit1("Flatten", [g], G.out(F32, (g.shape[0], g.shape[1]), g.lo, g.hi, g.mag),
                        axis=1)
        elif G.opset >= 13:
            f = G.emit1("Squeeze", [g, G.i64([2, 3])], G.out(F32, g.shape[:2], g.lo, g.hi, g.mag))
        else:
            f = G.emit1("Squeeze", [g], G.out(F32, g.shape[:2], g.lo, g.hi, g.mag), axes=[2, 3])
        G.tags["layout_gap_flatten"] += 1
        return gemm_node(G, f, c_kind="n") if G.r() < 0.6 else f
    return y


def p_views(G):
    """A chain of views (Reshape, Flatten, Squeeze, Unsqueeze, Identity) with elementwise ops
    and graph outputs between: the planner's shared blocks."""
    a = G.want(G.pick([F32, F32, I64]), ranks=(1, 2, 3, 4))
    if G.r() < 0.2 and a.kind == "input":
        G.tags["view_of_input"] += 1
    G.tags["pattern_views"] += 1
    for _ in range(G.randint(2, 4)):
        a = view(G, a)
        if G.r() < 0.2:
            G.force_output(a)
        if G.r() < 0.25 and a.dtype == F32:
            a = G.unary(G.pick(["Relu", "Neg", "Abs", "Tanh"]), a)
    return a


def p_eltwise_tree(G):
    """A tree of float elementwise ops with broadcast leaves, for fuse-eltwise."""
    dtype = F32 if G.r() < 0.85 else F64
    a = G.want(dtype)
    G.tags["pattern_eltwise"] += 1
    for _ in range(G.randint(2, 8)):
        r = G.r()
        if r < 0.45:
            op = G.pick(["Relu", "Neg", "Abs", "Tanh", "Sigmoid", "Exp", "Log", "Sqrt", "Erf",
                         "Reciprocal", "Softplus", "Softsign", "Sin", "Cos", "Floor", "Ceil"] +
                        (["HardSwish"] if G.opset >= 14 else []) + (["Gelu"] if G.opset >= 20 else []))
            _, dom, exact_in, _ = UNARY[op]
            if (exact_in and not a.exact) or (dtype == F64 and op not in F64_UNARY):
                op, dom = "Relu", "any"
            a = G.into_domain(a, dom)
            a = G.unary(op, a)
        elif r < 0.55:
            if dtype != F32:
                continue
            a = b_param_unary_on(G, a)
        else:
            op = G.pick(["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"])
            if op == "Div":
                b = G.into_domain(G.partner(a, dom="pos", bigger=0.05), "pos")
            elif op == "Pow":
                a = G.into_domain(a, "pos")
                if a.mag > 20:
                    a = G.into_domain(G.into_domain(a, "small"), "pos")
                b = G.scalar(G.pick([2.0, 0.5, 3.0]), dtype)
            else:
                b = G.partner(a, bigger=0.05)
            if b.mag > MAG_CAP:
                b = G.into_domain(b, "small")
            if op in ("Sub", "Max", "Min", "Add", "Mul") and G.r() < 0.4:
                a, b = b, a
            if op == "Pow":
                e = float(b.const.reshape(-1)[0])
                hi = max(a.hi, 1 / a.lo) ** abs(e)
                a = G.emit1("Pow", [a, b], G.out(dtype, a.shape, 0.0, hi, min(hi, MAG_CAP)))
            else:
                a = G.binary(op, a, b)
        if a.mag > MAG_CAP:
            a = G.into_domain(a, "small")
        if G.r() < 0.08:
            G.force_output(a)
    return a


def b_param_unary_on(G, a):
    op = G.pick(["LeakyRelu", "HardSigmoid", "Elu", "Selu", "Celu" if G.opset >= 12 else "Elu",
                 "ThresholdedRelu" if a.exact else "LeakyRelu"])
    if op == "LeakyRelu":
        return G.emit1(op, [a], G.out(a.dtype, a.shape, min(a.lo, 0.0), a.hi, a.mag), alpha=0.1)
    if op == "HardSigmoid":
        return G.emit1(op, [a], G.out(a.dtype, a.shape, 0.0, 1.0, 1.0), alpha=0.25, beta=0.4)
    if op in ("Elu", "Celu"):
        return G.emit1(op, [a], G.out(a.dtype, a.shape, -1.0, max(a.hi, 0.0), a.mag), alpha=1.0)
    if op == "Selu":
        return G.emit1(op, [a], G.out(a.dtype, a.shape, -1.76, max(a.hi, 0.0) * 1.06, a.mag * 1.1))
    return G.emit1(op, [a], G.out(a.dtype, a.shape, min(a.lo, 0.0), max(a.hi, 0.0), a.mag), alpha=0.3)


def p_duplicate(G):
    """A node repeated with the same inputs (cse merges it), or with one attribute changed
    (cse must not)."""
    cands = [n for n in G.nodes if n.op_type in ("Relu", "Transpose", "Softmax", "Conv", "Add",
                                                 "Mul", "MatMul", "Cast", "Gather", "Slice",
                                                 "ReduceSum", "ReduceMean", "Concat", "Sigmoid",
                                                 "Flatten", "Unsqueeze", "LeakyRelu", "Reshape")
             and len(n.output) == 1]
    if not cands:
        raise Skip("nothing to duplicate")
    n = G.pick(cands)
    src = next(v for v in G.pool if v.name == n.output[0])
    attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
    changed = False
    if G.r() < 0.3:
        if n.op_type == "LeakyRelu":
            attrs["alpha"] = attrs.get("alpha", 0.01) * 2
            changed = True
        elif n.op_type == "Softmax" and src.rank >= 2:
            attrs["axis"] = (attrs.get("axis", -1) + 1) % src.rank - src.rank
            changed = "axis" in attrs and attrs["axis"] != (n.attribute[0].i if n.attribute else -1)
    ins = [next((v for v in G.pool + [None] if v is not None and v.name == x), None)
           if x else None for x in n.input]
    # constants: the pool lists only non-constants; find their Vals again
    for i, x in enumerate(n.input):
        if x and ins[i] is None:
            ins[i] = Val(x, F32, (), 0, 0, 0, True, "const")
    y = G.emit1(n.op_type, ins, G.out(src.dtype, src.shape, src.lo, src.hi, src.mag, src.exact),
                **attrs)
    G.tags["cse_changed_attr" if changed else "cse_duplicate"] += 1
    if src.uses == 0 and G.r() < 0.7:
        return G.binary("Add", src, y) if src.dtype == F32 else y
    return y


def p_shape_arith(G):
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape (what exporters write for a
    flatten or a head split): the fold pass computes it at compile time."""
    a = G.want(F32, ranks=(2, 3, 4), pred=lambda v: v.numel > 1)
    G.tags["pattern_shape_arith"] += 1
    sh = G.emit1("Shape", [a], G.out(I64, (a.rank,), 0, max(a.shape), max(a.shape), True))
    i0 = G.const(np.array(0, np.int64))
    d0 = G.emit1("Gather", [sh, i0], G.out(I64, (), 0, a.shape[0], a.shape[0], True), axis=0)
    if G.opset >= 13:
        u = G.emit1("Unsqueeze", [d0, G.i64([0])], G.out(I64, (1,), 0, a.shape[0], a.shape[0], True))
    else:
        u = G.emit1("Unsqueeze", [d0], G.out(I64, (1,), 0, a.shape[0], a.shape[0], True), axes=[0])
    r = G.r()
    if r < 0.5:
        tail = G.i64([-1])
        target = (a.shape[0], a.numel // a.shape[0])
    else:
        d1 = G.emit1("Gather", [sh, G.const(np.array([1], np.int64))],
                     G.out(I64, (1,), 0, a.shape[1], a.shape[1], True), axis=0)
        tail = G.emit1("Mul", [d1, G.i64([1])], G.out(I64, (1,), 0, a.shape[1], a.shape[1], True))
        rest = a.numel // (a.shape[0] * a.shape[1])
        tail = G.emit1("Concat", [tail, G.i64([-1])], G.out(I64, (2,), -1, a.shape[1], a.shape[1],
                                                            True), axis=0)
        target = (a.shape[0], a.shape[1], rest)
    cat = G.emit1("Concat", [u, tail], G.out(I64, (len(target),), -1, max(target), max(target),
                                             True), axis=0)
    y = G.emit1("Reshape", [a, cat], G.out(F32, target, a.lo, a.hi, a.mag, a.exact))
    if G.r() < 0.3 and G.opset >= 9:
        z = G.emit1("ConstantOfShape", [G.emit1("Shape", [y], G.out(I64, (y.rank,), 0, 99, 99, True))],
                    G.out(F32, y.shape, 0.5, 0.5, 0.5, True),
                    value=numpy_helper.from_array(np.array([0.5], np.float32)))
        y = G.binary("Add", y, z)
    return y


def p_fp16(G):
    """A float16 island: Cast in, float16 elementwise ops, Softmax or a reduction, Cast out
    (or a float16 graph output)."""
    a = G.want(F32, pred=lambda v: v.mag < 100)
    G.tags["pattern_fp16"] += 1
    h = G.emit1("Cast", [a], G.out(F16, a.shape, a.lo, a.hi, a.mag, a.exact), to=F16)
    for _ in range(G.randint(1, 4)):
        r = G.r()
        if r < 0.35:
            h = G.unary(G.pick(["Relu", "Abs", "Neg", "Sigmoid", "Tanh", "Erf"]), h)
        elif r < 0.7:
            op = G.pick(["Add", "Mul", "Sub", "Max", "Min"])
            b = G.partner(h, dtype=F16, fresh=0.7, bigger=0.0)
            h = G.binary(op, h, b)
            if h.mag > 100:
                h = G.unary("Tanh", h)
        elif r < 0.8 and h.rank >= 1:
            h = G.emit1("Softmax", [h], G.out(F16, h.shape, 0.0, 1.0, 1.0), axis=-1)
        elif r < 0.9:
            h = reduce_node(G, G.pick(["ReduceSum", "ReduceMean", "ReduceMax"]), h)
        else:
            h = G.emit1("Transpose", [h], G.out(F16, h.shape[::-1], h.lo, h.hi, h.mag, h.exact))
    if G.r() < 0.8:
        return G.emit1("Cast", [h], G.out(F32, h.shape, h.lo, h.hi, h.mag, h.exact), to=F32)
    return h


def p_silu_swish(G):
    x = G.want(F32)
    return activation(G, x, "SiLU")


# ---- control flow, sequences, recurrent, quantized, and the rest ----------------------

BRANCH_UNARY = ("Relu", "Neg", "Tanh", "Sigmoid", "Abs")


def branch_graph(G, x, others, name):
    """A subgraph without inputs computing 1-3 elementwise ops of outer value x (and maybe
    an outer value of x's shape, a constant of its own or a Constant node); its output has
    x's type. Returns (GraphProto, lo, hi, mag)."""
    nodes, inits = [], []
    cur, lo, hi, mag = x.name, x.lo, x.hi, x.mag
    for _ in range(G.randint(1, 3)):
        out = G.uniq("b")
        r = G.r()
        if r < 0.45:
            op = G.pick(BRANCH_UNARY)
            nodes.append(helper.make_node(op, [cur], [out], name=G.uniq("bn_")))
            lo, hi = UNARY[op][0](lo, hi)
        elif r < 0.75:
            c = G.uniq("bc")
            val = float(G.rng.uniform(-1, 1))
            if G.r() < 0.5:
                inits.append(numpy_helper.from_array(np.array(val, np.float32), c))
            else:
                nodes.append(helper.make_node("Constant", [], [c], name=G.uniq("bk_"),
                                              value=numpy_helper.from_array(
                                                  np.array(val, np.float32))))
            op = G.pick(["Add", "Mul"])
            nodes.append(helper.make_node(op, [cur, c], [out], name=G.uniq("bn_")))
            lo, hi = (lo + min(val, 0), hi + max(val, 0)) if op == "Add" else \
                mul_iv((lo, hi), (min(val, 0), max(val, 0)))
        else:
            o = G.pick(others) if others else x
            nodes.append(helper.make_node(G.pick(["Add", "Sub", "Max"]), [cur, o.name], [out],
                                          name=G.uniq("bn_")))
            lo, hi, mag = lo - o.mag, hi + o.mag, mag + o.mag
        cur = out
    g = helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(cur, F32, list(x.shape))],
                          initializer=inits)
    return g, lo, hi, mag


def p_if(G):
    """If on a condition known only at run time (a graph input or a comparison), or a
    constant one; the branches read outer values."""
    x = G.want(F32, ranks=(1, 2, 3, 4))
    others = G.candidates(lambda v: v.dtype == F32 and v.shape == x.shape and v is not x)[:3]
    r = G.r()
    if r < 0.3:
        cond = G.const(np.array(G.r() < 0.5) if G.r() < 0.7 else np.array([G.r() < 0.5]))
        G.tags["if_const_cond"] += 1
    elif r < 0.7:
        cond = G.input(BOOL, G.pick([(), (1,)]))
    else:
        e = G.want(F32, pred=lambda v: v.exact)
        s = reduce_node(G, "ReduceMax", e, axes=list(range(e.rank)), keepdims=0) if e.rank else e
        cond = G.binary("Greater", s, G.scalar(0.0), out_dtype=BOOL)
    tg, tlo, thi, tmag = branch_graph(G, x, others, G.uniq("then"))
    eg, elo, ehi, emag = branch_graph(G, x, others, G.uniq("else"))
    G.tags["pattern_if"] += 1
    return G.emit1("If", [cond], G.out(F32, x.shape, min(tlo, elo), max(thi, ehi), max(tmag, emag)),
                   then_branch=tg, else_branch=eg)


def p_loop(G):
    """Loop with a constant trip count (absent or constant condition): a carried value and a
    scan output stacked over the iterations; the body reads an outer value and the
    iteration number."""
    x = G.want(F32, ranks=(1, 2, 3), pred=lambda v: v.numel <= 256)
    trips = G.randint(1, 4)
    m = G.const(np.array(trips, np.int64))
    cond = None if G.r() < 0.5 else G.const(np.array(True))
    it, ci, vi = G.uniq("it"), G.uniq("ci"), G.uniq("vi")
    t, itf, u, vo, co, so = (G.uniq("l") for _ in range(6))
    outer = G.candidates(lambda v: v.dtype == F32 and v.shape == x.shape)
    o = G.pick(outer) if outer and G.r() < 0.5 else None
    nodes = [helper.make_node("Mul", [vi, G.const(np.array(0.5, np.float32)).name], [t]),
             helper.make_node("Cast", [it], [itf], to=F32),
             helper.make_node("Add", [t, o.name if o else itf], [u]),
             helper.make_node("Tanh", [u], [vo]),
             helper.make_node("Identity", [ci], [co])]
    outs = [helper.make_tensor_value_info(co, BOOL, []),
            helper.make_tensor_value_info(vo, F32, list(x.shape))]
    scan = G.r() < 0.15  # Kiln leaves a scan output's length open: the model is refused
    if scan:
        nodes.append(helper.make_node(G.pick(["Relu", "Neg", "Sigmoid"]), [vo], [so]))
        outs.append(helper.make_tensor_value_info(so, F32, list(x.shape)))
    body = helper.make_graph(nodes, G.uniq("body"), [
        helper.make_tensor_value_info(it, I64, []), helper.make_tensor_value_info(ci, BOOL, []),
        helper.make_tensor_value_info(vi, F32, list(x.shape))], outs)
    specs = [G.out(F32, x.shape, -1.0, 1.0, 1.0)]
    if scan:
        specs.append(G.out(F32, (trips,) + x.shape, -1.0, 1.0, 1.0))
    G.tags["pattern_loop"] += 1
    return G.emit("Loop", [m, cond, x], specs, body=body)[-1]


def p_scan(G):
    """Scan over one axis of a value, carrying a running state; the outputs stacked along an
    axis of their own."""
    x = G.want(F32, ranks=(2, 3), pred=lambda v: v.numel <= 256)
    axis = G.randint(0, x.rank - 1)
    T = x.shape[axis]
    slice_shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
    s0 = G.input(F32, slice_shape, -1, 1) if G.r() < 0.5 else G.weight(slice_shape, 1.0)
    si, xt, so, yt, a = (G.uniq("s") for _ in range(5))
    body = helper.make_graph([
        helper.make_node("Add", [si, xt], [a]),
        helper.make_node("Mul", [a, G.const(np.array(0.7, np.float32)).name], [so]),
        helper.make_node(G.pick(["Tanh", "Relu", "Abs"]), [so], [yt])], G.uniq("sbody"),
        [helper.make_tensor_value_info(si, F32, list(slice_shape)),
         helper.make_tensor_value_info(xt, F32, list(slice_shape))],
        [helper.make_tensor_value_info(so, F32, list(slice_shape)),
         helper.make_tensor_value_info(yt, F32, list(slice_shape))])
    oaxis = G.randint(0, len(slice_shape))
    yshape = list(slice_shape)
    yshape.insert(oaxis, T)
    attrs = {"num_scan_inputs": 1, "body": body}
    if axis or G.r() < 0.3:
        attrs["scan_input_axes"] = [axis]
    if oaxis or G.r() < 0.3:
        attrs["scan_output_axes"] = [oaxis]
    m = x.mag * 3 + s0.mag
    G.tags["pattern_scan"] += 1
    return G.emit("Scan", [s0, x], [G.out(F32, slice_shape, -m, m, m),
                                   G.out(F32, yshape, -m, m, m)], **attrs)[1]


def p_sequence(G):
    """Sequences that lower-sequences turns into tensors: SequenceConstruct +
    ConcatFromSequence, SplitToSequence + SequenceAt."""
    x = G.want(F32, ranks=(1, 2, 3), pred=lambda v: max(v.shape) >= 2)
    G.tags["pattern_sequence"] += 1
    if G.r() < 0.5:
        axis = G.randint(0, x.rank - 1)
        new_axis = G.pick([0, 1])
        parts = [x]
        for _ in range(G.randint(1, 2)):
            s = list(x.shape)
            if not new_axis:
                s[axis] = G.pick([1, 2, 3])
            parts.append(G.input(F32, s, -1, 1) if G.r() < 0.5 else G.weight(s, 1.0))
        seq = G.uniq("seq")
        G.nodes.append(helper.make_node("SequenceConstruct", [p.name for p in parts], [seq],
                                        name=G.uniq("seqc_")))
        for p in parts:
            p.uses += 1
        shape = list(x.shape)
        if new_axis:
            shape.insert(axis, len(parts))
        else:
            shape[axis] = sum(p.shape[axis] for p in parts)
        fake = Val(seq, F32, (), 0, 0, 0, False, "node")
        return G.emit1("ConcatFromSequence", [fake], G.out(F32, shape, min(p.lo for p in parts),
                                                           max(p.hi for p in parts),
                                                           max(p.mag for p in parts)),
                       axis=axis, new_axis=new_axis)
    axes = [i for i, d in enumerate(x.shape) if d >= 2]
    axis = G.pick(axes)
    n = x.shape[axis]
    seq = G.uniq("seq")
    if G.r() < 0.5:
        chunk = G.randint(1, n - 1)
        parts = [chunk] * (n // chunk) + ([n % chunk] if n % chunk else [])
        ins = [x.name, G.const(np.array(chunk, np.int64)).name]
    else:
        k = G.randint(2, min(3, n))
        cuts = sorted(G.rng.choice(range(1, n), size=k - 1, replace=False).tolist())
        parts = [b - a for a, b in zip([0] + cuts, cuts + [n])]
        ins = [x.name, G.i64(parts).name]
    G.nodes.append(helper.make_node("SplitToSequence", ins, [seq], name=G.uniq("s2s_"), axis=axis))
    x.uses += 1
    idx = G.randint(-len(parts), len(parts) - 1)
    shape = list(x.shape)
    shape[axis] = parts[idx]
    fake = Val(seq, F32, (), 0, 0, 0, False, "node")
    return G.emit1("SequenceAt", [fake, G.const(np.array(idx, G.pick([np.int64, np.int32])))],
                   G.out(F32, shape, x.lo, x.hi, x.mag, x.exact))


def b_rnn(G):
    """RNN, GRU or LSTM: directions, optional biases, initial states, sequence lengths,
    peepholes, linear_before_reset, the batch-first layout."""
    op = G.pick(["LSTM", "GRU", "RNN"])
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    T, B, I, H = G.randint(1, 5), G.randint(1, 3), G.randint(1, 6), G.randint(1, 6)
    direction = G.pick(["forward", "reverse", "bidirectional"])
    D = 2 if direction == "bidirectional" else 1
    layout = 0  # ONNX Runtime refuses the batch-first layout (1) of RNN, GRU and LSTM
    xshape = (B, T, I) if layout else (T, B, I)
    x = G.want(F32, ranks=(3,), pred=lambda v: v.shape == xshape, shape=lambda: xshape)
    sc = 1 / math.sqrt(H)
    ins = [x, G.weight((D, gates * H, I), sc), G.weight((D, gates * H, H), sc)]
    opt = []
    if G.r() < 0.7:
        opt.append(("B", G.weight((D, 2 * gates * H), 0.3)))
    if G.r() < 0.3:
        lens = G.rng.integers(1, T + 1, size=(B,)).astype(np.int32)
        opt.append(("seq", G.const(lens)))
    if G.r() < 0.4:
        hs = (B, D, H) if layout else (D, B, H)
        opt.append(("h", G.input(F32, hs, -1, 1)))
    if op == "LSTM" and G.r() < 0.3:
        hs = (B, D, H) if layout else (D, B, H)
        opt.append(("c", G.input(F32, hs, -1, 1)))
    if op == "LSTM" and G.r() < 0.2:
        opt.append(("P", G.weight((D, 3 * H), 0.3)))
    order = ["B", "seq", "h", "c", "P"]
    have = dict(opt)
    last = max([order.index(k) for k in have] + [-1])
    for k in order[:last + 1]:
        ins.append(have.get(k))
    attrs = {"hidden_size": H, "direction": direction}
    if layout:
        attrs["layout"] = 1
    if op == "GRU" and G.r() < 0.5:
        attrs["linear_before_reset"] = 1
    if G.r() < 0.15:
        attrs["clip"] = 2.0
    yshape = (B, T, D, H) if layout else (T, D, B, H)
    hshape = (B, D, H) if layout else (D, B, H)
    outs = [G.out(F32, yshape, -1.0, 1.0, 1.0), G.out(F32, hshape, -1.0, 1.0, 1.0)]
    if op == "LSTM":
        outs.append(G.out(F32, hshape, -INF, INF, 3.0))
    vals = G.emit(op, ins, outs, **attrs)
    G.tags["rnn_" + direction] += 1
    if any(k == "seq" for k, _ in opt):
        G.tags["rnn_seq_lens"] += 1
    return vals[G.randint(0, len(vals) - 1)]


def quantize_np(arr, scale, zp, dtype, axis=None):
    if axis is not None:
        shape = [1] * arr.ndim
        shape[axis] = -1
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    info = np.iinfo(dtype)
    return np.clip(np.rint(arr / scale) + zp, info.min, info.max).astype(dtype)


def p_qdq(G):
    """QuantizeLinear/DequantizeLinear around a Conv or MatMul (what QDQ exporters write):
    activations quantized per tensor from a graph input (exact), weights int8 per output
    channel; a requantized output is compared within one quantization step."""
    if G.opset < 13:
        raise Skip("per-axis QDQ needs opset 13")
    qt = G.pick([np.uint8, np.int8])
    conv = G.r() < 0.6
    if conv:
        xshape = (G.pick([1, 2]), G.pick([1, 3, 4, 8]), G.pick([4, 5, 6]), G.pick([4, 5, 6]))
    else:
        xshape = (G.pick([1, 2, 3]), G.pick([4, 8, 16]))
    x = G.input(F32, xshape, -2, 2)
    xs = 4.0 / 255
    xzp = 128 if qt == np.uint8 else 0
    s = G.const(np.array(xs, np.float32))
    zp = G.const(np.array(xzp, qt))
    qdt = {np.uint8: TP.UINT8, np.int8: TP.INT8}[qt]
    q = G.emit1("QuantizeLinear", [x, s, zp], G.out(qdt, x.shape, 0, 255, 255, True))
    xd = G.emit1("DequantizeLinear", [q, s, zp], G.out(F32, x.shape, -2.1, 2.1, 2.1, True))
    if conv:
        C = xshape[1]
        m = G.pick([1, 2, 4, 8])
        k = G.pick([1, 3])
        w = G.rng.uniform(-1, 1, size=(m, C, k, k)).astype(np.float32) / math.sqrt(C * k * k)
        ws = (np.abs(w).reshape(m, -1).max(axis=1) / 127).astype(np.float32)
        wq = quantize_np(w, ws, np.zeros(m, np.int8), np.int8, axis=0)
        wd = G.emit1("DequantizeLinear", [G.const(wq), G.const(ws), G.const(np.zeros(m, np.int8))],
                     G.out(F32, w.shape, -1, 1, 1, True), axis=0)
        ins = [xd, wd] + ([G.weight((m,), 0.3)] if G.r() < 0.6 else [])
        pads = [k // 2] * 4
        y = G.emit1("Conv", ins, G.out(F32, (xshape[0], m, xshape[2], xshape[3]), -3, 3, 2.0),
                    pads=pads)
    else:
        K = xshape[1]
        n = G.pick([2, 4, 8])
        w = G.rng.uniform(-1, 1, size=(K, n)).astype(np.float32) / math.sqrt(K)
        ws = (np.abs(w).max(axis=0) / 127).astype(np.float32)
        wq = quantize_np(w, ws, np.zeros(n, np.int8), np.int8, axis=1)
        wd = G.emit1("DequantizeLinear", [G.const(wq), G.const(ws), G.const(np.zeros(n, np.int8))],
                     G.out(F32, w.shape, -1, 1, 1, True), axis=1)
        y = G.emit1("MatMul", [xd, wd], G.out(F32, (xshape[0], n), -3, 3, 2.0))
    G.tags["pattern_qdq"] += 1
    if G.r() < 0.5:
        y = G.unary("Relu", y)
    if G.r() < 0.5:
        ys = 8.0 / 255
        s2, z2 = G.const(np.array(ys, np.float32)), G.const(np.array(xzp, qt))
        q2 = G.emit1("QuantizeLinear", [y, s2, z2], G.out(qdt, y.shape, 0, 255, 255, True))
        y = G.emit1("DequantizeLinear", [q2, s2, z2], G.out(F32, y.shape, -4, 4, 4, True))
        G.tolerances[y.name] = ys * 1.01  # one quantization step
        G.tags["qdq_requantized"] += 1
        y.uses = 0
        G.force_output(y)
    return y


def b_einsum(G):
    if G.opset < 12:
        raise Skip("Einsum")
    eq, shapes = G.pick([
        ("ij,jk->ik", lambda: ((3, 4), (4, 5))), ("bij,bjk->bik", lambda: ((2, 3, 4), (2, 4, 2))),
        ("ij->ji", lambda: ((3, 5),)), ("i,i->", lambda: ((6,), (6,))),
        ("bhqd,bhkd->bhqk", lambda: ((1, 2, 3, 4), (1, 2, 5, 4))), ("ijk->ikj", lambda: ((2, 3, 4),)),
        ("ij,ij->i", lambda: ((3, 4), (3, 4))), ("ii->i", lambda: ((4, 4),)),
        ("ij->", lambda: ((3, 4),))])
    ins = [G.want(F32, ranks=(len(s),), pred=lambda v, s=s: v.shape == s, shape=lambda s=s: s)
           for s in shapes()]
    import itertools  # noqa: F401 - numpy computes the output shape
    out = np.einsum(eq, *[np.zeros(v.shape) for v in ins]).shape
    m = numel(max((v.shape for v in ins), key=numel)) * max(v.mag for v in ins) ** len(ins)
    G.tags["einsum"] += 1
    return G.emit1("Einsum", ins, G.out(F32, out, -m, m, min(m, 10.0)), equation=eq)


def b_scatter(G):
    a = G.want(F32, ranks=(1, 2, 3), pred=lambda v: v.numel >= 2)
    if G.r() < 0.5 and G.opset >= 11:
        axis = G.randint(0, a.rank - 1)
        n = a.shape[axis]
        k = G.randint(1, n)
        ishape = list(a.shape)
        ishape[axis] = k
        # distinct indices along the axis: no two updates write one element
        idx = np.stack([G.rng.permutation(n)[:k] for _ in range(numel(ishape) // k)], axis=-1)
        idx = np.moveaxis(idx.reshape([k] + [d for i, d in enumerate(ishape) if i != axis]), 0, axis)
        idx = np.where(G.rng.random(idx.shape) < 0.3, idx - n, idx).astype(np.int64)
        upd = G.input(F32, ishape, -1, 1)
        return G.emit1("ScatterElements", [a, G.const(idx), upd],
                       G.out(F32, a.shape, min(a.lo, -1), max(a.hi, 1), max(a.mag, 1)), axis=axis)
    if G.opset < 11:
        raise Skip("ScatterND")
    k = G.randint(1, a.rank)
    rows = numel(a.shape[:k])
    cnt = G.randint(1, min(rows, 4))
    flat = G.rng.permutation(rows)[:cnt]
    idx = np.array(np.unravel_index(flat, a.shape[:k])).T.astype(np.int64)
    upd = G.input(F32, (cnt,) + a.shape[k:], -1, 1)
    return G.emit1("ScatterND", [a, G.const(idx), upd],
                   G.out(F32, a.shape, min(a.lo, -1), max(a.hi, 1), max(a.mag, 1)))


def b_normalize(G):
    # ONNX's strict shape inference fails on MeanVarianceNormalization's function body from
    # opset 13 on (a Constant it builds), so that op comes with the older opsets only
    if G.r() < 0.5 and G.opset < 13:
        a = G.want(F32, ranks=(4,), pred=lambda v: v.numel <= 512)
        k = math.sqrt(numel(a.shape) / a.shape[1])
        return G.emit1("MeanVarianceNormalization", [a], G.out(F32, a.shape, -k, k, 3.0))
    a = G.want(F32, ranks=(1, 2, 3), pred=lambda v: v.numel > 1)
    a = G.binary("Add", G.unary("Abs", a), G.scalar(0.1))  # no all-zero row
    return G.emit1("LpNormalization", [a], G.out(F32, a.shape, -1, 1, 1.0),
                   axis=G.randint(-a.rank, a.rank - 1), p=G.pick([1, 2]))


def b_onehot_range(G):
    if G.opset < 11:
        raise Skip("OneHot/Range")
    if G.r() < 0.5:
        depth = G.randint(2, 6)
        ishape = G.rand_shape(G.randint(1, 2), cap=16)
        idx = G.want(I64, ranks=(len(ishape),), pred=lambda v: v.shape == ishape and v.lo >= -depth
                     and v.hi < depth, shape=lambda: ishape, lo=-depth, hi=depth - 1)
        axis = G.randint(-len(ishape) - 1, len(ishape))
        oshape = list(idx.shape)
        oshape.insert(axis % (len(ishape) + 1), depth)
        vals = G.const(np.array([G.pick([0.0, -1.0]), G.pick([1.0, 2.5])], np.float32))
        return G.emit1("OneHot", [idx, G.const(np.array(depth, np.int64)), vals],
                       G.out(F32, oshape, -1, 2.5, 2.5, True), axis=axis)
    start, delta = G.pick([0, 1, -3]), G.pick([1, 2, -1])
    n = G.randint(1, 8)
    limit = start + delta * n
    r = G.emit1("Range", [G.const(np.array(start, np.int64)), G.const(np.array(limit, np.int64)),
                          G.const(np.array(delta, np.int64))],
                G.out(I64, (n,), min(start, limit), max(start, limit), abs(limit) + abs(start), True))
    return G.emit1("Cast", [r], G.out(F32, r.shape, r.lo, r.hi, r.mag, True), to=F32)


# ---- the block table -----------------------------------------------------------------

BLOCKS = [
    # (builder, weight, nodes it adds at least)
    (b_unary, 6, 1), (b_param_unary, 2, 1), (b_binary, 7, 1), (b_variadic, 1, 1),
    (b_compare, 1.5, 2), (b_int, 1.5, 1), (b_cast, 1.5, 1), (b_clip, 1, 1), (b_reduce, 3, 1),
    (b_argmax, 1, 1), (b_topk, 0.5, 1), (b_softmax, 2, 1), (b_cumsum, 0.5, 1),
    (b_transpose, 2, 1), (b_view, 3, 1), (b_concat, 2, 1), (b_split, 1, 1), (b_slice, 2, 1),
    (b_pad, 1, 1), (b_expand_tile, 1, 1), (b_gather, 1.5, 1), (b_depth_space, 0.5, 1),
    (b_trilu, 0.3, 1), (b_resize, 1, 1), (b_conv, 3, 1), (b_conv_transpose, 1, 1),
    (b_pool, 2, 1), (b_norm, 2, 1), (b_gemm, 2, 1), (b_matmul, 2, 1),
    (p_conv_bn_act, 6, 2), (p_conv_transpose_bn, 1, 2), (p_gemm_bias_act, 4, 2), (p_attention, 3, 5), (p_layernorm, 3, 6),
    (p_gelu, 3, 5), (p_nhwc_conv, 3, 2), (p_views, 2, 2), (p_eltwise_tree, 3, 2),
    (p_duplicate, 1.5, 1), (p_shape_arith, 1, 6), (p_fp16, 1.5, 2), (p_silu_swish, 1, 2),
    (p_if, 1.5, 1), (p_loop, 1, 1), (p_scan, 1, 1), (p_sequence, 1, 2), (b_rnn, 1.5, 1),
    (p_qdq, 1.5, 4), (b_einsum, 0.7, 1), (b_scatter, 0.7, 1), (b_normalize, 0.5, 1),
    (b_onehot_range, 0.5, 1),
]


def build(G):
    tries = 0
    while len(G.nodes) < G.budget and tries < 200:
        tries += 1
        left = G.budget - len(G.nodes)
        table = [(b, w) for b, w, n in BLOCKS if n <= max(left, 1) or tries > 100]
        builder = G.pick([b for b, _ in table], [w for _, w in table])
        cp = G.checkpoint()
        try:
            builder(G)
            G.tags["block_" + builder.__name__] += 1
        except Skip:
            G.restore(cp)
    if not G.nodes:
        raise Skip("empty model")


def finish(G):
    """The ModelProto: outputs are the unread results, the forced ones, and a few others."""
    outs = []
    for v in G.pool:
        if v.kind == "node" and v.uses == 0:
            outs.append(v)
    for v in G.forced_outputs:
        if v not in outs:
            outs.append(v)
    if len(outs) > 8:
        keep = G.forced_outputs[:4]
        rest = [v for v in outs if v not in keep]
        G.rng.shuffle(rest)
        outs = keep + rest[:8 - len(keep)]
        outs.sort(key=lambda v: G.pool.index(v))
    if not outs:
        raise Skip("no outputs")
    node_outs = {x for n in G.nodes for x in n.output}
    const_node_outs = {n.output[0] for n in G.nodes if n.op_type == "Constant"}
    outs = [v for v in outs if v.name in node_outs and v.name not in const_node_outs]
    if not outs:
        raise Skip("no outputs")
    used = {x for n in G.nodes for x in harness.node_reads(n)}
    inputs = [v for v in G.inputs if v.name in used]
    graph = helper.make_graph(
        G.nodes, "difftest_%d" % G.seed,
        [helper.make_tensor_value_info(v.name, v.dtype, list(v.shape)) for v in inputs],
        [helper.make_tensor_value_info(v.name, v.dtype, list(v.shape)) for v in outs],
        initializer=[t for t in G.inits if t.name in used])
    # ONNX's shape inference gives GroupNormalization-21 (a function) no output type; the
    # generator knows it, so the model states it
    shapes = {v.name: v for v in G.pool}
    for n in G.nodes:
        if n.op_type == "GroupNormalization" and n.output[0] in shapes:
            v = shapes[n.output[0]]
            graph.value_info.append(helper.make_tensor_value_info(v.name, v.dtype, list(v.shape)))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", G.opset)],
                              producer_name="kiln-difftest", producer_version=str(GEN_VERSION))
    model.ir_version = IR_VERSION[G.opset]
    meta = {"seed": G.seed, "gen": GEN_VERSION,
            "inputs": {v.name: [v.lo, v.hi] for v in inputs},
            "atol": {k: v for k, v in G.tolerances.items() if k in {o.name for o in outs}},
            "blocks": sorted(k for k in G.tags if k.startswith("block_"))}
    e = model.metadata_props.add()
    e.key, e.value = "difftest", json.dumps(meta, sort_keys=True)
    return model


def check_shapes(model):
    """onnx.checker (full) and ONNX shape inference must agree with the generator's shapes."""
    onnx.checker.check_model(model, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    known = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for o in model.graph.output:
        vi = known.get(o.name)
        if vi is None:
            continue
        want = [d.dim_value for d in o.type.tensor_type.shape.dim]
        got = vi.type.tensor_type.shape
        if not vi.type.tensor_type.HasField("shape"):
            continue
        got = [d.dim_value if d.HasField("dim_value") else None for d in got.dim]
        if any(g is not None and g != w for g, w in zip(got, want)) or len(got) != len(want):
            raise AssertionError("generator shape of %s is %s, ONNX infers %s" % (o.name, want, got))
        if vi.type.tensor_type.elem_type != o.type.tensor_type.elem_type:
            raise AssertionError("generator dtype of %s is %d, ONNX infers %d" % (
                o.name, o.type.tensor_type.elem_type, vi.type.tensor_type.elem_type))


def generate(seed, opset=None, budget=None):
    """(model, tags) for seed; deterministic. Retries sub-seeds when a draw cannot be built."""
    for attempt in range(20):
        G = Gen(seed * 64 + attempt if attempt else seed, opset, budget)
        G.seed = seed
        try:
            build(G)
            model = finish(G)
        except Skip:
            continue
        check_shapes(model)
        return model, G.tags
    raise RuntimeError("seed %d: no model in 20 attempts" % seed)


def input_ranges(model):
    for p in model.metadata_props:
        if p.key == "difftest":
            return json.loads(p.value).get("inputs", {})
    return {}


def main(argv):
    if len(argv) < 2:
        sys.exit("usage: gen.py SEED [OUT.onnx]")
    model, tags = generate(int(argv[1]))
    if len(argv) > 2:
        onnx.save(model, argv[2])
    ops = collections.Counter(n.op_type for n in model.graph.node)
    print("opset %d, %d nodes: %s" % (model.opset_import[0].version, len(model.graph.node),
                                      ", ".join("%s %d" % kv for kv in sorted(ops.items()))))
    print("tags:", ", ".join(sorted(k for k in tags if not k[0].isupper())))


if __name__ == "__main__":
    main(sys.argv)
