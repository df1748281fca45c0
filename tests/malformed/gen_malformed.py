"""Writes the malformed-model suite: hostile ONNX files, each a named case, for the loader
and (the resource cases) for the whole compiler.

Built from one small valid model (Conv + Relu + Add with a 2x3x3x3 weight) by two means:
the onnx package for structural faults (cycles, bad names, bad attributes, bad tensors) and
raw protobuf byte surgery for wire-level faults (truncation, wrong wire types, huge lengths,
nesting bombs). Two positive controls (a valid model, valid external data) must load.
Resource cases (resource_cases) are bombs for `kiln compile`: a million nodes, an
initializer claiming 4 GB it does not hold, a sparse tensor asking for 2 GB, a function
call bomb, the deepest nesting the loader takes, shapes of 10^9 and 2^93 elements, 10^5
outputs or inputs, 10^6 attribute entries; each states the time and peak memory it may
take (the runner enforces both), valid ones among them must compile. They are written here
at test time (the biggest is 26 MB), never committed.
Usage: gen_malformed.py OUT_DIR  (writes OUT_DIR/<case>/model.onnx and OUT_DIR/manifest.tsv)
"""
import os
import random
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
W_SHAPE = [2, 3, 3, 3]          # the weight of the base model's Conv
W_BYTES = 2 * 3 * 3 * 3 * 4     # as float32
NEST_DEPTH = 200                # the brief's nesting bomb: If inside If, 200 deep
NEST_DEPTH_DEEP = 20000         # deep enough to overflow any recursive decoder's stack
HUGE_INPUTS = 100000            # inputs of one Add node
SEED = 20240601                 # garbage bytes are reproducible

# ---- protobuf wire format ---------------------------------------------------------------

WT_VARINT, WT_FIXED64, WT_LEN, WT_SGROUP, WT_EGROUP, WT_FIXED32 = 0, 1, 2, 3, 4, 5


def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire_type):
    return varint((field << 3) | wire_type)


def f_varint(field, n):
    return key(field, WT_VARINT) + varint(n)


def f_len(field, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return key(field, WT_LEN) + varint(len(payload)) + payload


def read_varint(buf, pos):
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def top_fields(buf):
    """(field, wire_type, start, payload_start, end) of each top-level field of a message."""
    pos, out = 0, []
    while pos < len(buf):
        start = pos
        k, pos = read_varint(buf, pos)
        field, wt = k >> 3, k & 7
        if wt == WT_VARINT:
            _, pos = read_varint(buf, pos)
            out.append((field, wt, start, start, pos))
        elif wt == WT_LEN:
            n, pos = read_varint(buf, pos)
            out.append((field, wt, start, pos, pos + n))
            pos += n
        elif wt == WT_FIXED64:
            pos += 8
            out.append((field, wt, start, start, pos))
        elif wt == WT_FIXED32:
            pos += 4
            out.append((field, wt, start, start, pos))
        else:
            raise ValueError("unexpected wire type")
    return out


# Field numbers of onnx.proto used below.
MODEL_IR_VERSION, MODEL_GRAPH, MODEL_OPSET = 1, 7, 8
GRAPH_NODE, GRAPH_NAME, GRAPH_INIT, GRAPH_INPUT, GRAPH_OUTPUT = 1, 2, 5, 11, 12
NODE_INPUT, NODE_OUTPUT, NODE_NAME, NODE_OP, NODE_ATTR = 1, 2, 3, 4, 5
ATTR_NAME, ATTR_I, ATTR_G, ATTR_TYPE = 1, 3, 6, 20
ATTR_TYPE_GRAPH = 5
TENSOR_DIMS, TENSOR_DTYPE, TENSOR_NAME, TENSOR_RAW = 1, 2, 8, 9
VI_NAME = 1
OPSET_DOMAIN, OPSET_VERSION = 1, 2


def raw_model(graph_payload, opset=OPSET):
    return (f_varint(MODEL_IR_VERSION, IR_VERSION) + f_len(MODEL_GRAPH, graph_payload)
            + f_len(MODEL_OPSET, f_len(OPSET_DOMAIN, "") + f_varint(OPSET_VERSION, opset)))


def raw_node(op, inputs, outputs, attrs=b"", name=""):
    out = b"".join(f_len(NODE_INPUT, i) for i in inputs)
    out += b"".join(f_len(NODE_OUTPUT, o) for o in outputs)
    if name:
        out += f_len(NODE_NAME, name)
    return out + f_len(NODE_OP, op) + attrs


def raw_value_info(name, elem=TensorProto.FLOAT, dims=None):
    """A tensor ValueInfoProto; dims None leaves the shape unknown."""
    tensor_type = f_varint(1, elem)                                      # elem_type
    if dims is not None:
        shape = b"".join(f_len(1, f_varint(1, d)) for d in dims)       # Dimension.dim_value
        tensor_type += f_len(2, shape)                                   # shape
    return f_len(VI_NAME, name) + f_len(2, f_len(1, tensor_type))       # type.tensor_type


def raw_graph_attr(name, graph_payload):
    return f_len(NODE_ATTR, f_len(ATTR_NAME, name) + f_len(ATTR_G, graph_payload)
                 + f_varint(ATTR_TYPE, ATTR_TYPE_GRAPH))


def raw_base_graph(extra_nodes=b"", extra_inits=b""):
    """X (1,3,4,4) -> Relu -> Y: a tiny valid graph written by hand, for wire surgery."""
    return (f_len(GRAPH_NODE, raw_node("Relu", ["X"], ["Y"], name="relu")) + extra_nodes
            + f_len(GRAPH_NAME, "g") + extra_inits
            + f_len(GRAPH_INPUT, raw_value_info("X", dims=[1, 3, 4, 4]))
            + f_len(GRAPH_OUTPUT, raw_value_info("Y", dims=[1, 3, 4, 4])))


# ---- the base model and its structural variants ------------------------------------------


def base_weight():
    return np.arange(np.prod(W_SHAPE), dtype=np.float32).reshape(W_SHAPE) / 100.0


def base_model(nodes=None, inits=None, inputs=None, outputs=None, opsets=None):
    """Conv(X, W) -> C; Relu(C) -> R; Add(R, R) -> Y. Any part can be replaced."""
    if nodes is None:
        nodes = [helper.make_node("Conv", ["X", "W"], ["C"], name="conv", pads=[1, 1, 1, 1]),
                 helper.make_node("Relu", ["C"], ["R"], name="relu"),
                 helper.make_node("Add", ["R", "R"], ["Y"], name="add")]
    if inits is None:
        inits = [numpy_helper.from_array(base_weight(), "W")]
    if inputs is None:
        inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 3, 4, 4])]
    if outputs is None:
        outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 2, 4, 4])]
    graph = helper.make_graph(nodes, "base", inputs, outputs, initializer=inits)
    if opsets is None:
        opsets = [helper.make_opsetid("", OPSET)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="kiln-malformed")
    model.ir_version = IR_VERSION
    return model


def with_weight(mutate):
    """The base model with its weight initializer changed by mutate(TensorProto)."""
    m = base_model()
    mutate(m.graph.initializer[0])
    return m


def relu_chain(pairs, outputs=("Y",)):
    """A graph of Relu nodes given as (input, output) pairs, X (1,3,4,4) in."""
    nodes = [helper.make_node("Relu", [i], [o], name=f"relu_{k}") for k, (i, o) in
             enumerate(pairs)]
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs]
    return base_model(nodes=nodes, inits=[], outputs=outs)


def single_node(node):
    """One node from X (1,3,4,4) to Y (type unknown), no initializers."""
    return base_model(nodes=[node], inits=[], outputs=[
        helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])


def conv_with_attr(attr):
    nodes = [helper.make_node("Conv", ["X", "W"], ["Y"], name="conv")]
    nodes[0].attribute.append(attr)
    return base_model(nodes=nodes, outputs=[
        helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])


def attr_raw(name, attr_type, **fields):
    a = onnx.AttributeProto()
    a.name = name
    a.type = attr_type
    for k, v in fields.items():
        if isinstance(v, list):
            getattr(a, k).extend(v)
        else:
            setattr(a, k, v)
    return a


def input_with_dims(dims, elem=TensorProto.FLOAT):
    """Relu over an input X of the given (possibly hostile) dims and element type."""
    vi = onnx.ValueInfoProto()
    vi.name = "X"
    vi.type.tensor_type.elem_type = elem
    for d in dims:
        vi.type.tensor_type.shape.dim.add().dim_value = d
    nodes = [helper.make_node("Relu", ["X"], ["Y"], name="relu")]
    return base_model(nodes=nodes, inits=[], inputs=[vi], outputs=[
        helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])


# ---- nesting bombs -----------------------------------------------------------------------


def nested_if(depth):
    """If inside If, depth levels, as bytes. Level k wraps level k-1 as its then_branch:
    graph_k = pre_k + graph_(k-1) + post_k, where pre_k holds the length prefixes, so the
    whole file is built in linear time from the pieces."""
    shape = [1, 3, 4, 4]
    inner = (f_len(GRAPH_NODE, raw_node("Identity", ["X"], ["y0"], name="leaf"))
             + f_len(GRAPH_NAME, "b0") + f_len(GRAPH_OUTPUT, raw_value_info("y0", dims=shape)))
    other = (f_len(GRAPH_NODE, raw_node("Identity", ["X"], ["e"])) + f_len(GRAPH_NAME, "e")
             + f_len(GRAPH_OUTPUT, raw_value_info("e", dims=shape)))
    else_attr = raw_graph_attr("else_branch", other)
    pres, posts, inner_len = [], [], len(inner)
    for level in range(1, depth + 1):
        out = f"y{level}"
        attr_pre = f_len(ATTR_NAME, "then_branch") + key(ATTR_G, WT_LEN) + varint(inner_len)
        attr_post = f_varint(ATTR_TYPE, ATTR_TYPE_GRAPH)
        attr_len = len(attr_pre) + inner_len + len(attr_post)
        node_pre = (raw_node("If", ["cond"], [out], name=f"if{level}")
                    + key(NODE_ATTR, WT_LEN) + varint(attr_len) + attr_pre)
        node_post = attr_post + else_attr
        node_len = len(node_pre) + inner_len + len(node_post)
        name = "main" if level == depth else f"b{level}"
        pre = key(GRAPH_NODE, WT_LEN) + varint(node_len) + node_pre
        post = (node_post + f_len(GRAPH_NAME, name)
                + f_len(GRAPH_OUTPUT, raw_value_info(out, dims=shape)))
        if level == depth:
            post += (f_len(GRAPH_INPUT, raw_value_info("X", dims=shape))
                     + f_len(GRAPH_INPUT, raw_value_info("cond", elem=TensorProto.BOOL, dims=[])))
        pres.append(pre)
        posts.append(post)
        inner_len += len(pre) + len(post)
    graph = b"".join(reversed(pres)) + inner + b"".join(posts)
    assert len(graph) == inner_len
    return raw_model(graph)


# ---- external data ------------------------------------------------------------------------


def external_model(location=None, offset=None, length=None):
    """The base model with W stored externally at location (offset, length as strings)."""
    m = base_model()
    w = m.graph.initializer[0]
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = w.external_data.add()
            e.key, e.value = k, str(v)
    return m


# ---- the cases ----------------------------------------------------------------------------


class Case(tuple):
    """(name, path, expect) with the tool that reads it ("inspect", or "compile" for the
    resource cases) and its bounds (seconds, MiB of peak memory; None: the runner's)."""
    def __new__(cls, name, path, expect, tool="inspect", time_s=None, mem_mb=None):
        c = super().__new__(cls, (name, path, expect))
        c.tool, c.time_s, c.mem_mb = tool, time_s, mem_mb
        return c


class Suite:
    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.cases = []  # Case: name, model path relative to out_dir, expect "error" or "ok"

    def case_dir(self, name):
        d = os.path.join(self.out_dir, name)
        os.makedirs(d, exist_ok=True)
        return d

    def add(self, name, model, expect="error", tool="inspect", time_s=None, mem_mb=None):
        data = model if isinstance(model, (bytes, bytearray)) else model.SerializeToString()
        path = os.path.join(self.case_dir(name), "model.onnx")
        with open(path, "wb") as f:
            f.write(data)
        self.cases.append(Case(name, os.path.join(name, "model.onnx"), expect, tool, time_s,
                               mem_mb))
        return os.path.dirname(path)


def wire_cases(s, valid):
    fields = top_fields(valid)
    graph = next(f for f in fields if f[0] == MODEL_GRAPH)
    g0, g1 = graph[3], graph[4]
    cuts = {"truncated_1_byte": 1, "truncated_graph_header": graph[2] + 1,
            "truncated_graph_quarter": g0 + (g1 - g0) // 4,
            "truncated_graph_half": g0 + (g1 - g0) // 2,
            "truncated_graph_3_quarters": g0 + 3 * (g1 - g0) // 4,
            "truncated_graph_last_byte": g1 - 1, "truncated_last_byte": len(valid) - 1}
    for name, cut in cuts.items():
        s.add(name, valid[:cut])

    base = raw_base_graph()
    s.add("wire_graph_as_varint", f_varint(MODEL_IR_VERSION, IR_VERSION) + f_varint(MODEL_GRAPH, 5))
    s.add("wire_node_as_fixed32", raw_model(key(GRAPH_NODE, WT_FIXED32) + b"\1\2\3\4" + base))
    s.add("wire_ir_version_as_bytes", f_len(MODEL_IR_VERSION, "eight") + raw_model(base))
    s.add("wire_dims_as_fixed64", raw_model(base + f_len(GRAPH_INIT, key(TENSOR_DIMS, WT_FIXED64)
                                                         + b"\xff" * 8 + f_varint(TENSOR_DTYPE, 1)
                                                         + f_len(TENSOR_NAME, "w"))))
    s.add("wire_reserved_type_7", raw_model(base) + key(3, 7) + b"\0" * 8)
    s.add("wire_unmatched_group", raw_model(base) + key(15, WT_SGROUP) + b"\0")
    s.add("wire_field_number_zero", b"\x00\x00" + raw_model(base))
    s.add("wire_overlong_varint", raw_model(base) + key(MODEL_IR_VERSION, WT_VARINT)
          + b"\xff" * 11 + b"\x01")
    s.add("wire_length_past_end", f_varint(MODEL_IR_VERSION, IR_VERSION)
          + key(MODEL_GRAPH, WT_LEN) + varint(len(base) + 1) + base)

    rng = random.Random(SEED)
    s.add("garbage_random_4k", bytes(rng.getrandbits(8) for _ in range(4096)))
    s.add("garbage_all_ff", b"\xff" * 64)
    s.add("garbage_zeros", b"\x00" * 100)
    s.add("garbage_text", b"ir_version: 8\ngraph { node { op_type: 'Relu' } }\n")
    s.add("empty_file", b"")
    s.add("no_graph", f_varint(MODEL_IR_VERSION, IR_VERSION)
          + f_len(MODEL_OPSET, f_len(OPSET_DOMAIN, "") + f_varint(OPSET_VERSION, OPSET)))

    # Lengths and counts that claim more than the file holds, or more than fits anywhere.
    def init_with_raw_len(n):
        return f_len(GRAPH_INIT, f_varint(TENSOR_DTYPE, 1) + f_len(TENSOR_NAME, "w")
                     + key(TENSOR_RAW, WT_LEN) + varint(n) + b"\0" * 16)
    s.add("raw_data_length_huge", raw_model(base + init_with_raw_len(1 << 40)))
    s.add("raw_data_length_negative", raw_model(base + init_with_raw_len((1 << 64) - 1)))
    s.add("packed_dims_length_huge", raw_model(base + f_len(GRAPH_INIT, key(TENSOR_DIMS, WT_LEN)
                                                            + varint(0x7FFFFFFF) + b"\1" * 8)))
    s.add("repeated_dims_million", raw_model(base + f_len(GRAPH_INIT, f_len(
        TENSOR_DIMS, b"\1" * 1000000) + f_varint(TENSOR_DTYPE, 1) + f_len(TENSOR_NAME, "w"))))
    many = raw_node("Add", ["X"] * HUGE_INPUTS, ["Z"], name="add_many")
    s.add("node_with_100k_inputs", raw_model(raw_base_graph(extra_nodes=f_len(GRAPH_NODE, many))))

    s.add("nesting_bomb_if_200", nested_if(NEST_DEPTH))
    s.add("nesting_bomb_if_20000", nested_if(NEST_DEPTH_DEEP))


def tensor_cases(s):
    def dims(d):
        def f(w):
            del w.dims[:]
            w.dims.extend(d)
        return f
    s.add("init_negative_dims", with_weight(dims([-2, 3, 3, 3])))
    s.add("init_huge_dims", with_weight(dims([1 << 40, 1 << 40, 3, 3])))
    s.add("init_dims_product_overflow", with_weight(dims([1 << 31, 1 << 31, 1 << 31, 3])))
    s.add("init_rank_9", with_weight(dims([1] * 8 + [54])))

    def raw(data):
        def f(w):
            w.raw_data = data
        return f
    s.add("init_raw_data_short", with_weight(raw(b"\0" * 5)))
    s.add("init_raw_data_long", with_weight(raw(b"\0" * (W_BYTES + 100))))
    s.add("init_raw_data_empty", with_weight(raw(b"")))

    def float_data(n):
        def f(w):
            w.ClearField("raw_data")
            w.float_data.extend([1.0] * n)
        return f
    s.add("init_float_data_count_mismatch", with_weight(float_data(7)))

    def dtype(t):
        def f(w):
            w.data_type = t
        return f
    s.add("init_data_type_99", with_weight(dtype(99)))
    s.add("init_data_type_undefined", with_weight(dtype(0)))
    s.add("init_data_type_negative", with_weight(dtype(-5)))
    s.add("input_elem_type_99", input_with_dims([1, 3, 4, 4], elem=99))
    # a negative input dim is how exporters write "unknown" (-1, and ONNX Runtime takes any
    # negative so): it loads as an open dim named "X[1]" (frontend/onnx_dims.c)
    s.add("input_negative_dim", input_with_dims([1, -3, 4, 4]), expect="ok")
    s.add("input_huge_dims", input_with_dims([1 << 40, 1 << 40, 1 << 40]))
    s.add("input_rank_9", input_with_dims([1] * 9))


def graph_cases(s):
    s.add("duplicate_output_names", relu_chain([("X", "Y"), ("X", "Y")]))
    s.add("output_redefines_input", relu_chain([("X", "X"), ("X", "Y")]))
    s.add("duplicate_initializer", base_model(inits=[numpy_helper.from_array(base_weight(), "W"),
                                                     numpy_helper.from_array(base_weight(), "W")]))
    s.add("undefined_input_name", relu_chain([("nope", "Y")]))
    s.add("undefined_graph_output", relu_chain([("X", "Y")], outputs=("Y", "ghost")))
    s.add("cycle_two_nodes", relu_chain([("B", "A"), ("A", "B"), ("A", "Y")]))
    s.add("cycle_self_loop", relu_chain([("Y", "Y")]))
    s.add("domain_not_imported", single_node(
        helper.make_node("Foo", ["X"], ["Y"], name="foo", domain="com.example.custom")))
    s.add("ml_domain_not_imported", single_node(
        helper.make_node("Normalizer", ["X"], ["Y"], name="norm", domain="ai.onnx.ml")))
    s.add("opset_version_negative", base_model(opsets=[helper.make_opsetid("", -1)]))
    s.add("relu_with_three_inputs", single_node(
        helper.make_node("Relu", ["X", "X", "X"], ["Y"], name="r")))
    s.add("attr_group_as_string", conv_with_attr(attr_raw("group", 3, s=b"two")))
    s.add("attr_strides_as_float", conv_with_attr(attr_raw("strides", 1, f=1.0)))
    s.add("attr_type_int_holds_floats", conv_with_attr(attr_raw("group", 2, floats=[1.0])))
    s.add("attr_conv_group_zero", conv_with_attr(helper.make_attribute("group", 0)))
    s.add("attr_conv_group_not_dividing", conv_with_attr(helper.make_attribute("group", 2)))
    # AttributeProto.type is a closed enum: the onnx package refuses 99, so write bytes.
    attr = f_len(NODE_ATTR, f_len(ATTR_NAME, "group") + f_varint(ATTR_I, 1)
                 + f_varint(ATTR_TYPE, 99))
    conv = raw_node("Conv", ["X", "W"], ["Y"], attrs=attr, name="conv")
    weight = numpy_helper.from_array(base_weight(), "W").SerializeToString()
    s.add("attr_type_99", raw_model(
        f_len(GRAPH_NODE, conv) + f_len(GRAPH_NAME, "g") + f_len(GRAPH_INIT, weight)
        + f_len(GRAPH_INPUT, raw_value_info("X", dims=[1, 3, 4, 4]))
        + f_len(GRAPH_OUTPUT, raw_value_info("Y"))))
    s.add("if_without_branches", single_node(helper.make_node("If", ["X"], ["Y"], name="if")))
    # Required inputs named "" (absent): refused before shape inference reads their type.
    s.add("conv_required_input_absent", base_model(nodes=[
        helper.make_node("Conv", ["", "W"], ["Y"], name="conv")], outputs=[
        helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)]))
    s.add("concat_first_input_absent", single_node(
        helper.make_node("Concat", ["", "X"], ["Y"], name="cat", axis=0)))
    s.add("gemm_second_input_absent", single_node(
        helper.make_node("Gemm", ["X", ""], ["Y"], name="gemm")))
    # Strings with a NUL byte: a C reader would see "Conv", "" or "w.bin" and go on.
    raw_graph = (f_len(GRAPH_NAME, "g") + f_len(GRAPH_INIT, weight)
                 + f_len(GRAPH_INPUT, raw_value_info("X", dims=[1, 3, 4, 4]))
                 + f_len(GRAPH_OUTPUT, raw_value_info("Y")))
    for name, node in (
            ("nul_in_op_type", raw_node("Conv\0junk", ["X", "W"], ["Y"], name="conv")),
            ("nul_as_input_name", raw_node("Conv", ["\0", "W"], ["Y"], name="conv")),
            ("nul_in_output_name", raw_node("Conv", ["X", "W"], ["Y\0Z"], name="conv")),
            ("nul_in_node_name", raw_node("Conv", ["X", "W"], ["Y"], name="co\0nv")),
            ("nul_in_domain", raw_node("Conv", ["X", "W"], ["Y"], name="conv")
             + f_len(7, "\0ai.onnx")),
            ("nul_in_attr_name", raw_node("Conv", ["X", "W"], ["Y"], name="conv",
                                          attrs=f_len(NODE_ATTR, f_len(ATTR_NAME, "group\0x")
                                                      + f_varint(ATTR_I, 1)
                                                      + f_varint(ATTR_TYPE, 2))))):
        s.add(name, raw_model(f_len(GRAPH_NODE, node) + raw_graph))


def external_cases(s):
    good = base_weight().tobytes()
    outside = os.path.join(s.out_dir, "outside.bin")
    with open(outside, "wb") as f:
        f.write(good)
    with open(os.path.join(s.out_dir, "x"), "wb") as f:
        f.write(good)

    d = s.add("valid_external_data", external_model("w.bin", 0, W_BYTES), expect="ok")
    with open(os.path.join(d, "w.bin"), "wb") as f:
        f.write(good)

    s.add("ext_parent_traversal", external_model("../x"))
    d = s.add("ext_nested_traversal", external_model("sub/../../x"))
    os.makedirs(os.path.join(d, "sub"), exist_ok=True)
    s.add("ext_absolute_path", external_model("/etc/passwd"))
    d = s.add("ext_symlink_outside", external_model("link.bin"))
    link = os.path.join(d, "link.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.join("..", "outside.bin"), link)
    d = s.add("ext_hardlink", external_model("hard.bin"))
    hard = os.path.join(d, "hard.bin")
    if os.path.lexists(hard):
        os.remove(hard)
    os.link(outside, hard)

    def with_file(name, model, size=W_BYTES):
        dd = s.add(name, model)
        with open(os.path.join(dd, "w.bin"), "wb") as f:
            f.write(good[:size] + b"\0" * max(0, size - len(good)))
    with_file("ext_offset_past_end", external_model("w.bin", 4096, W_BYTES))
    with_file("ext_offset_plus_length_past_end", external_model("w.bin", 100, W_BYTES))
    with_file("ext_length_mismatch", external_model("w.bin", 0, 100))
    with_file("ext_file_too_short", external_model("w.bin", 0, None), size=100)
    with_file("ext_negative_offset", external_model("w.bin", -8, W_BYTES))
    with_file("ext_offset_not_a_number", external_model("w.bin", "12abc", W_BYTES))
    with_file("ext_length_huge", external_model("w.bin", 0, 1 << 62))
    s.add("ext_missing_file", external_model("nope.bin"))
    s.add("ext_no_location", external_model(None, 0, W_BYTES))
    s.add("ext_location_is_folder", external_model(".", 0, W_BYTES))
    s.add("ext_location_empty", external_model("", 0, W_BYTES))
    with_file("ext_location_with_nul", external_model("w.bin\0../x", 0, W_BYTES))


# ---- resource limits: bombs for the whole compiler --------------------------------------

RESOURCE_NODES = 10 ** 6        # over the loader's cap (ONNX_MAX_NODES, 2^18)
RESOURCE_CHAIN = 100000         # under it: a long chain must compile in bounded time
RESOURCE_FANOUT = 100000        # outputs of one Split, inputs of one Sum
RESOURCE_ATTR_INTS = 10 ** 6    # entries of one attribute
CALL_BOMB_LEVELS = 25           # f_k calls f_(k-1) twice: 2^25 nodes after inlining
NEST_DEPTH_MAX_OK = 19          # the deepest If nesting within ONNX_MAX_NESTING messages


def relu_chain_bytes(n):
    """X (1,4) -> Relu -> ... -> Y, n nodes, written as bytes (fast for a million)."""
    parts = [f_len(GRAPH_NODE, raw_node("Relu", ["X" if i == 0 else "v%d" % (i - 1)],
                                        ["v%d" % i if i < n - 1 else "Y"])) for i in range(n)]
    return raw_model(b"".join(parts) + f_len(GRAPH_NAME, "chain")
                     + f_len(GRAPH_INPUT, raw_value_info("X", dims=[1, 4]))
                     + f_len(GRAPH_OUTPUT, raw_value_info("Y", dims=[1, 4])))


def tiny_model(nodes, inputs, outputs, inits=(), sparse=(), functions=(), opset=OPSET):
    graph = helper.make_graph(nodes, "bomb", inputs, outputs, initializer=list(inits),
                              sparse_initializer=list(sparse))
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("local", 1)]
                                                   if functions else [])
    model = helper.make_model(graph, opset_imports=opsets, functions=list(functions),
                              producer_name="kiln-malformed")
    model.ir_version = IR_VERSION
    return model


def resource_cases(s):
    vi = helper.make_tensor_value_info
    i64 = lambda a, n: numpy_helper.from_array(np.array(a, np.int64), n)  # noqa: E731
    f32 = lambda a, n: numpy_helper.from_array(np.array(a, np.float32), n)  # noqa: E731

    def bomb(name, model, expect="error", time_s=30, mem_mb=512):
        s.add(name, model, expect, tool="compile", time_s=time_s, mem_mb=mem_mb)

    bomb("res_nodes_1e6", relu_chain_bytes(RESOURCE_NODES))
    bomb("res_chain_1e5_compiles", relu_chain_bytes(RESOURCE_CHAIN), "ok", 60, 2048)
    # an initializer claiming 4 GB: no data, 16 bytes of data, an external file of 16 bytes
    w = onnx.TensorProto()
    w.name, w.data_type = "W", TensorProto.FLOAT
    w.dims.extend([1 << 30])
    x = [vi("X", TensorProto.FLOAT, [1])]
    y = [vi("Y", TensorProto.FLOAT, None)]
    add = [helper.make_node("Add", ["X", "W"], ["Y"], name="add")]
    bomb("res_init_claims_4gb_no_data", tiny_model(add, x, y, [w]), time_s=10, mem_mb=256)
    w16 = onnx.TensorProto()
    w16.CopyFrom(w)
    w16.raw_data = b"\0" * 16
    bomb("res_init_claims_4gb_16_bytes", tiny_model(add, x, y, [w16]), time_s=10, mem_mb=256)
    wx = onnx.TensorProto()
    wx.CopyFrom(w)
    wx.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", "0"), ("length", str(4 << 30))):
        e = wx.external_data.add()
        e.key, e.value = k, v
    d = s.case_dir("res_init_claims_4gb_external")
    with open(os.path.join(d, "w.bin"), "wb") as f:
        f.write(b"\0" * 16)
    bomb("res_init_claims_4gb_external", tiny_model(add, x, y, [wx]), time_s=10, mem_mb=256)
    sp = helper.make_sparse_tensor(f32([1.0], "W"), i64([0], "W_i"), [1 << 29])
    bomb("res_sparse_dense_2gb", tiny_model([helper.make_node("Relu", ["W"], ["Y"])], [], y,
                                            sparse=[sp]), time_s=10, mem_mb=256)
    fs = [helper.make_function("local", "f0", ["x"], ["y"], [helper.make_node("Relu", ["x"], ["y"])],
                               [helper.make_opsetid("", OPSET)])]
    for k in range(1, CALL_BOMB_LEVELS + 1):
        fs.append(helper.make_function(
            "local", "f%d" % k, ["x"], ["y"],
            [helper.make_node("f%d" % (k - 1), ["x"], ["a"], domain="local"),
             helper.make_node("f%d" % (k - 1), ["a"], ["y"], domain="local")],
            [helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)]))
    bomb("res_call_bomb_2e25", tiny_model(
        [helper.make_node("f%d" % CALL_BOMB_LEVELS, ["X"], ["Y"], domain="local")],
        [vi("X", TensorProto.FLOAT, [4])], [vi("Y", TensorProto.FLOAT, [4])], functions=fs),
        time_s=30, mem_mb=1024)
    bomb("res_nesting_if_19_compiles", nested_if(NEST_DEPTH_MAX_OK), "ok", 30, 512)
    # shapes: 10^9 elements compile (nothing is allocated at compile time), 2^93 do not
    big = [vi("X", TensorProto.FLOAT, [1000, 1000, 1000])]
    bomb("res_shape_1e9_compiles", tiny_model([helper.make_node("Relu", ["X"], ["Y"])], big,
                                              [vi("Y", TensorProto.FLOAT, [1000, 1000, 1000])]),
         "ok", 30, 256)
    bomb("res_const_of_shape_1e10_compiles", tiny_model(
        [helper.make_node("ConstantOfShape", ["S"], ["C"], value=f32([1.0], "v")),
         helper.make_node("Add", ["X", "C"], ["Y"])], x, y, [i64([100000, 100000], "S")]),
        "ok", 30, 256)
    bomb("res_expand_2e93_elements", tiny_model(
        [helper.make_node("Expand", ["C", "S"], ["Y"])], [], y,
        [f32([1.0], "C"), i64([1 << 31] * 3, "S")]), time_s=10, mem_mb=256)
    bomb("res_const_of_shape_2e64_elements", tiny_model(
        [helper.make_node("ConstantOfShape", ["S"], ["Y"], value=f32([1.0], "v"))], [], y,
        [i64([1 << 62, 4], "S")]), time_s=10, mem_mb=256)
    bomb("res_pad_2e63_elements", tiny_model(
        [helper.make_node("Pad", ["C", "P"], ["Y"])], [], y,
        [f32([1.0], "C"), i64([0, (1 << 63) - 2], "P")]), time_s=10, mem_mb=256)
    bomb("res_conv_transpose_stride_2e40", tiny_model(
        [helper.make_node("ConvTranspose", ["X", "W"], ["Y"], strides=[1 << 40, 1 << 40])],
        [vi("X", TensorProto.FLOAT, [1, 1, 4, 4])], y, [f32(np.ones((1, 1, 1, 1)), "W")]),
        time_s=10, mem_mb=256)
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["co"]), helper.make_node("Relu", ["v"], ["vo"])],
        "body", [vi("i", TensorProto.INT64, []), vi("c", TensorProto.BOOL, []),
                 vi("v", TensorProto.FLOAT, [2])],
        [vi("co", TensorProto.BOOL, []), vi("vo", TensorProto.FLOAT, [2])])
    bomb("res_loop_1e9_trips_compiles", tiny_model(
        [helper.make_node("Loop", ["M", "", "X"], ["Y"], body=body)],
        [vi("X", TensorProto.FLOAT, [2])], [vi("Y", TensorProto.FLOAT, [2])],
        [i64(10 ** 9, "M")]), "ok", 30, 256)
    bomb("res_split_to_sequence_1e6", tiny_model(
        [helper.make_node("SplitToSequence", ["X", "one"], ["S"], axis=0),
         helper.make_node("ConcatFromSequence", ["S"], ["Y"], axis=0)],
        [vi("X", TensorProto.FLOAT, [10 ** 6])], y, [i64(1, "one")]), time_s=30, mem_mb=512)
    n = RESOURCE_FANOUT
    bomb("res_split_1e5_outputs_compiles", tiny_model(
        [helper.make_node("Split", ["X"], ["y%d" % i for i in range(n)], axis=0)],
        [vi("X", TensorProto.FLOAT, [n])], [vi("y%d" % i, TensorProto.FLOAT, None)
                                            for i in range(n)]), "ok", 30, 2048)
    bomb("res_sum_of_1e5_inputs", tiny_model(
        [helper.make_node("Sum", ["x%d" % i for i in range(n)], ["Y"])],
        [vi("x%d" % i, TensorProto.FLOAT, [1]) for i in range(n)],
        [vi("Y", TensorProto.FLOAT, [1])]), time_s=20, mem_mb=2048)
    bomb("res_attr_1e6_ints", tiny_model(
        [helper.make_node("Transpose", ["X"], ["Y"], perm=list(range(RESOURCE_ATTR_INTS)))],
        [vi("X", TensorProto.FLOAT, [2, 3])], y), time_s=30, mem_mb=512)


def generate(out_dir):
    """Writes every case under out_dir (emptied first); returns [(name, path, expect)]."""
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    s = Suite(out_dir)
    valid = base_model()
    s.add("valid_model", valid, expect="ok")
    wire_cases(s, valid.SerializeToString())
    tensor_cases(s)
    graph_cases(s)
    external_cases(s)
    resource_cases(s)
    with open(os.path.join(out_dir, "manifest.tsv"), "w") as f:
        for c in s.cases:
            f.write(f"{c[0]}\t{c[1]}\t{c[2]}\t{c.tool}\n")
    return [Case(c[0], os.path.join(out_dir, c[1]), c[2], c.tool, c.time_s, c.mem_mb)
            for c in s.cases]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gen_malformed.py OUT_DIR")
    cases = generate(sys.argv[1])
    print(f"{len(cases)} cases written to {sys.argv[1]}")
