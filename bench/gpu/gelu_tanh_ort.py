"""What cuBLASLt's tanh-form GELU epilogue (kc_blas.cuh, float16 products) does to a model
apart from float16: ONNX Runtime float32 logits of MODEL with its exact erf GELU against the
same graph with each Erf(u) replaced by tanh(2/sqrt(pi) (u + 0.044715*2 u^3)) (u = x / sqrt(2):
the tanh form), on bench/gpu/pair's inputs (LCG token ids, 100 of 128 positions unmasked).
usage: python3 bench/gpu/gelu_tanh_ort.py BERT_BASE.onnx [BATCH (8)] (input_ids, attention_mask)"""
import math
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

src = sys.argv[1]
tanh_path = os.path.join(tempfile.mkdtemp(), 'tanh_gelu.onnx')
m = onnx.load(src)
g = m.graph
new_nodes = []
n_erf = 0
for nd in g.node:
    if nd.op_type != 'Erf':
        new_nodes.append(nd); continue
    n_erf += 1
    u, out = nd.input[0], nd.output[0]
    p = f'gtanh{n_erf}'
    c1 = numpy_helper.from_array(np.array(0.044715 * 2.0, np.float32), p + '_c1')
    c2 = numpy_helper.from_array(np.array(2.0 / math.sqrt(math.pi), np.float32), p + '_c2')
    g.initializer.extend([c1, c2])
    new_nodes += [helper.make_node('Mul', [u, u], [p + '_u2']),
                  helper.make_node('Mul', [p + '_u2', u], [p + '_u3']),
                  helper.make_node('Mul', [p + '_u3', p + '_c1'], [p + '_a']),
                  helper.make_node('Add', [u, p + '_a'], [p + '_b']),
                  helper.make_node('Mul', [p + '_b', p + '_c2'], [p + '_c']),
                  helper.make_node('Tanh', [p + '_c'], [out])]
del g.node[:]
g.node.extend(new_nodes)
onnx.save(m, tanh_path)
print('Erf nodes replaced:', n_erf)
B = int(sys.argv[2]) if len(sys.argv) > 2 else 8
s = 12345
ids = np.zeros((B, 128), np.int64); mask = np.zeros((B, 128), np.int64)
for i in range(B * 128):
    s = (s * 1103515245 + 12345) & 0xffffffff
    ids.flat[i] = (s >> 8) % 30522; mask.flat[i] = (i % 128) < 100
so = ort.SessionOptions(); so.intra_op_num_threads = 2
feed = {'input_ids': ids, 'attention_mask': mask}
a = ort.InferenceSession(src, so).run(None, feed)[0]
b = ort.InferenceSession(tanh_path, so).run(None, feed)[0]
d = np.abs(a - b)
cos = [float(np.dot(a[i], b[i]) / np.linalg.norm(a[i]) / np.linalg.norm(b[i])) for i in range(B)]
print('batch', B, 'logits erf[0]', a[0], 'tanh[0]', b[0])
print('max abs diff %.3g, max |logit| %.3g, min per-sample cosine %.7f, argmax agree %d/%d' % (
    d.max(), np.abs(a).max(), min(cos), int((a.argmax(1) == b.argmax(1)).sum()), B))
