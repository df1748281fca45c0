"""Writes one BERT-base encoder layer as ONNX (sequence 128, hidden 768, 12 heads, MLP 3072,
post-norm; the Q, K and V projections three MatMuls of one input, as torch exports
nn.Linear), seeded random weights: the model bench/passes/horizontal.sh counts instructions
of under callgrind (the whole BERT-base takes too long there). Input `input` f32[1,128,768],
output `logits` f32[1,128,768] (bench_main.c's float fields).
usage: encoder_layer.py OUT.onnx"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

S, D, H, F = 128, 768, 12, 3072


def main():
    rng = np.random.default_rng(5)
    inits = []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def w(name, *shape):
        return const(name, (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32))

    nodes = []

    def node(op, ins, out, **kw):
        nodes.append(helper.make_node(op, ins, [out], **kw))
        return out

    x = "input"
    heads = const("heads", np.array([1, S, H, D // H], np.int64))
    flat = const("flat", np.array([1, S, D], np.int64))
    proj = {}
    for p in "qkv":
        m = node("MatMul", [x, w("w" + p, D, D)], p + "_mm")
        a = node("Add", [m, w("b" + p, D)], p + "_b")
        r = node("Reshape", [a, heads], p + "_r")
        proj[p] = node("Transpose", [r], p + "_t", perm=[0, 2, 3, 1] if p == "k" else [0, 2, 1, 3])
    s = node("MatMul", [proj["q"], proj["k"]], "scores")
    s = node("Div", [s, const("root", np.float32(np.sqrt(D // H)))], "scaled")
    pr = node("Softmax", [s], "probs", axis=-1)
    y = node("MatMul", [pr, proj["v"]], "ctx")
    y = node("Transpose", [y], "ctx_t", perm=[0, 2, 1, 3])
    y = node("Reshape", [y, flat], "ctx_r")
    y = node("Add", [node("MatMul", [y, w("wo", D, D)], "o_mm"), w("bo", D)], "o_b")
    y = node("Add", [x, y], "res1")
    ln1 = node("LayerNormalization", [y, const("g1", np.ones(D, np.float32)),
                                      const("be1", np.zeros(D, np.float32))], "ln1", axis=-1)
    h = node("Relu", [node("Add", [node("MatMul", [ln1, w("w1", D, F)], "f1_mm"), w("b1", F)],
                           "f1_b")], "f1_act")
    h = node("Add", [node("MatMul", [h, w("w2", F, D)], "f2_mm"), w("b2", D)], "f2_b")
    node("LayerNormalization", [node("Add", [ln1, h], "res2"), const("g2", np.ones(D, np.float32)),
                                const("be2", np.zeros(D, np.float32))], "logits", axis=-1)
    g = helper.make_graph(nodes, "encoder_layer",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, S, D])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, S, D])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, sys.argv[1])


if __name__ == "__main__":
    main()
