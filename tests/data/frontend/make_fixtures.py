"""Writes the tiny ONNX models that tests/unit/test_onnx_load.c loads.

Run from anywhere with the pinned onnx package:
    /root/.cache/kiln/venv/bin/python tests/data/frontend/make_fixtures.py
Each model is a few hundred bytes; the outputs are committed next to this script.
"""
import os
import struct

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = [helper.make_opsetid("", 17)]


def save(model, name):
    onnx.save(model, os.path.join(HERE, name))


def conv_net():
    """Conv + Relu with a symbolic batch; weights raw, bias typed; odd dtypes as typed fields."""
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 1, 4, 4])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", 2, 4, 4])
    w = numpy_helper.from_array(np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3) - 9, "W")
    b = helper.make_tensor("B", TensorProto.FLOAT, [2], [0.5, -0.25])  # float_data
    i8 = helper.make_tensor("I8", TensorProto.INT8, [3], [-1, 2, -128])  # int32_data
    f16 = helper.make_tensor("F16", TensorProto.FLOAT16, [2], np.array([1.0, -2.0], np.float16))
    i4 = helper.make_tensor("I4", TensorProto.INT4, [3], [1, -2, 7])  # packed int32_data
    i64 = helper.make_tensor("I64", TensorProto.INT64, [2], [-5, 1 << 40])
    s = helper.make_tensor("S", TensorProto.STRING, [2], [b"ab", b"xyz"])
    dflt = helper.make_tensor("scale", TensorProto.FLOAT, [1], [2.0])  # also a graph input
    sparse = helper.make_sparse_tensor(
        helper.make_tensor("SP", TensorProto.FLOAT, [2], [3.0, 4.0]),
        helper.make_tensor("SP_idx", TensorProto.INT64, [2], [1, 4]), [2, 3])
    nodes = [
        helper.make_node("Conv", ["X", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Mul", ["r", "scale"], ["Y"], name="mul"),
    ]
    scale_in = helper.make_tensor_value_info("scale", TensorProto.FLOAT, [1])
    g = helper.make_graph(nodes, "conv_net", [x, scale_in], [y],
                          initializer=[w, b, i8, f16, i4, i64, s, dflt],
                          sparse_initializer=[sparse],
                          value_info=[helper.make_tensor_value_info("c", TensorProto.FLOAT,
                                                                    ["batch", 2, 4, 4])])
    m = helper.make_model(g, opset_imports=OPSET, producer_name="kiln-fixtures",
                          producer_version="1")
    save(m, "conv_net.onnx")


def unsorted_and_unknown():
    """Nodes out of order, an op of an unknown domain with attributes, an omitted input."""
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])
    nodes = [
        helper.make_node("Relu", ["b"], ["Y"], name="second"),
        helper.make_node("Frobnicate", ["X", ""], ["b"], name="first", domain="com.example",
                         gain=1.5, modes=["a", "b"]),
    ]
    g = helper.make_graph(nodes, "unsorted", [x], [y])
    m = helper.make_model(g, opset_imports=OPSET + [helper.make_opsetid("com.example", 3)])
    save(m, "unsorted_unknown.onnx")


def if_outer():
    """If whose then-branch reads X and C from the enclosing graph."""
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])
    c = numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "C")
    then_g = helper.make_graph([helper.make_node("Add", ["X", "C"], ["t"], name="add")], "then",
                               [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph([helper.make_node("Identity", ["X"], ["e"], name="id")], "else",
                               [], [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])])
    node = helper.make_node("If", ["cond"], ["Y"], name="if", then_branch=then_g,
                            else_branch=else_g)
    g = helper.make_graph([node], "if_outer", [cond, x], [y], initializer=[c])
    save(helper.make_model(g, opset_imports=OPSET), "if_outer.onnx")


def local_function():
    """A model-local function called twice; its attribute 'alpha' is a reference."""
    fn = helper.make_function(
        "custom", "ScaleAdd", ["a", "b"], ["out"],
        [_const_ref(),
         helper.make_node("Mul", ["a", "k"], ["m"], name="mul"),
         helper.make_node("Add", ["m", "b"], ["out"], name="add")],
        opset_imports=OPSET, attributes=[])
    fn.attribute_proto.extend([helper.make_attribute("alpha", 3.0)])
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])
    nodes = [
        helper.make_node("ScaleAdd", ["X", "X"], ["h"], name="call1", domain="custom",
                         alpha=0.5),
        helper.make_node("ScaleAdd", ["h", "X"], ["Y"], name="call2", domain="custom"),
    ]
    g = helper.make_graph(nodes, "func", [x], [y])
    m = helper.make_model(g, opset_imports=OPSET + [helper.make_opsetid("custom", 1)],
                          functions=[fn])
    save(m, "local_function.onnx")


def _const_ref():
    node = helper.make_node("Constant", [], ["k"], name="k")
    node.attribute.append(helper.make_attribute_ref("value_float", onnx.AttributeProto.FLOAT))
    node.attribute[0].ref_attr_name = "alpha"
    return node


def external(name, location, offset=0):
    """One initializer of 4 floats stored in an external file."""
    t = numpy_helper.from_array(np.array([1.0, 2.0, 3.0, 4.0], np.float32), "E")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", "16")):
        e = t.external_data.add()
        e.key, e.value = k, v
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4])
    g = helper.make_graph([helper.make_node("Identity", ["E"], ["Y"], name="id")], "ext", [],
                          [y], initializer=[t])
    save(helper.make_model(g, opset_imports=OPSET), name)


def bad_models():
    """Small malformed models, one defect each; the tests expect NULL and a diagnostic."""
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])

    def one(name, nodes, inits=(), opsets=None, inputs=None):
        g = helper.make_graph(nodes, name, [x] if inputs is None else inputs, [y],
                              initializer=list(inits))
        m = helper.make_model(g, opset_imports=opsets or OPSET)
        save(m, "bad_" + name + ".onnx")

    one("attr_name", [helper.make_node("Relu", ["X"], ["Y"], name="r", bogus=1)])
    one("attr_kind", [helper.make_node("Softmax", ["X"], ["Y"], name="sm", axis=1.5)])
    one("dup_output", [helper.make_node("Relu", ["X"], ["Y"], name="a"),
                       helper.make_node("Relu", ["X"], ["Y"], name="b")])
    one("cycle", [helper.make_node("Relu", ["Y"], ["t"], name="c1"),
                  helper.make_node("Relu", ["t"], ["Y"], name="c2")])
    one("undefined", [helper.make_node("Add", ["X", "nope"], ["Y"], name="u")])
    one("domain", [helper.make_node("Foo", ["X"], ["Y"], name="f", domain="com.missing")])
    raw = numpy_helper.from_array(np.zeros(3, np.float32), "R")
    raw.dims[:] = [4]  # 12 bytes of raw_data for 4 floats
    one("raw_size", [helper.make_node("Add", ["X", "R"], ["Y"], name="n")], [raw])
    typed = helper.make_tensor("T", TensorProto.INT64, [3], [1, 2, 3])
    typed.int64_data.pop()
    one("typed_count", [helper.make_node("Add", ["X", "T"], ["Y"], name="n")], [typed])
    dtype = helper.make_tensor("D", TensorProto.FLOAT, [1], [1.0])
    dtype.data_type = 99
    one("dtype", [helper.make_node("Add", ["X", "D"], ["Y"], name="n")], [dtype])
    neg = helper.make_tensor("N", TensorProto.FLOAT, [0], [])
    neg.dims[:] = [-3]
    one("negative_dim", [helper.make_node("Add", ["X", "N"], ["Y"], name="n")], [neg])
    big = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1] * 9)
    one("rank", [helper.make_node("Relu", ["X"], ["Y"], name="n")], inputs=[big])
    huge = helper.make_tensor("H", TensorProto.FLOAT, [0], [])
    huge.dims[:] = [1 << 30, 1 << 30, 1 << 30]
    one("huge", [helper.make_node("Add", ["X", "H"], ["Y"], name="n")], [huge])


def open_dims():
    """Open input dims as exporters write them: x [-1, 3, (no value, no name), "w"] (a
    paddle-style -1, an empty dim, a symbol) and m ["w", 2]; a value_info with -1 too."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 3, None, "w"])
    x.type.tensor_type.shape.dim[2].Clear()
    m = helper.make_tensor_value_info("m", TensorProto.FLOAT, ["w", 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, 3, -1, -1])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu"),
                           helper.make_node("Neg", ["m"], ["n"], name="neg")], "open", [x, m],
                          [y, helper.make_tensor_value_info("n", TensorProto.FLOAT, ["w", 2])])
    save(helper.make_model(g, opset_imports=OPSET), "open_dims.onnx")


def main():
    conv_net()
    open_dims()
    unsorted_and_unknown()
    if_outer()
    local_function()
    with open(os.path.join(HERE, "weights.bin"), "wb") as f:
        f.write(struct.pack("<4f", 1.0, 2.0, 3.0, 4.0))
    external("ext_ok.onnx", "weights.bin")
    external("ext_absolute.onnx", "/etc/hostname")
    external("ext_dotdot.onnx", "sub/../../weights.bin")
    external("ext_symlink.onnx", "link.bin")
    external("ext_hardlink.onnx", "hard.bin")
    external("ext_offset.onnx", "weights.bin", offset=4)
    bad_models()


if __name__ == "__main__":
    main()
