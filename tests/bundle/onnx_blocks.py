"""Pieces of the test models that several generators (make_packed_models.py,
make_par_models.py) build alike: scaled weights and a ResNet bottleneck block."""
import numpy as np
from onnx import helper, numpy_helper


def weight(rng, name, shape):
    """Normal, scaled by 1/sqrt(fan-in) as trained layers are, so that values stay near 1
    through the chain and the comparison's tolerance measures the kernels, not cancellation
    in sums that grow with each layer."""
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    w = rng.standard_normal(shape) / np.sqrt(fan_in)
    return numpy_helper.from_array(w.astype(np.float32), name)


def bottleneck(rng, x, cin, mid, cout, stride, tag, inits, nodes):
    """A ResNet bottleneck block with a 1x1 downsample on the skip path (a stage's first
    block: conv1 1x1, conv2 3x3 of stride `stride`, conv3 1x1, downsample 1x1 of the same
    stride, Add, ReLU), appended to inits and nodes, names prefixed by tag; returns its
    output's name."""
    inits += [weight(rng, f"{tag}k1", (mid, cin, 1, 1)), weight(rng, f"{tag}c1", (mid,)),
              weight(rng, f"{tag}k2", (mid, mid, 3, 3)), weight(rng, f"{tag}c2", (mid,)),
              weight(rng, f"{tag}k3", (cout, mid, 1, 1)), weight(rng, f"{tag}c3", (cout,)),
              weight(rng, f"{tag}kd", (cout, cin, 1, 1)), weight(rng, f"{tag}cd", (cout,))]
    nodes += [helper.make_node("Conv", [x, f"{tag}k1", f"{tag}c1"], [f"{tag}v1"]),
              helper.make_node("Relu", [f"{tag}v1"], [f"{tag}r1"]),
              helper.make_node("Conv", [f"{tag}r1", f"{tag}k2", f"{tag}c2"], [f"{tag}v2"],
                               strides=[stride, stride], pads=[1, 1, 1, 1]),
              helper.make_node("Relu", [f"{tag}v2"], [f"{tag}r2"]),
              helper.make_node("Conv", [f"{tag}r2", f"{tag}k3", f"{tag}c3"], [f"{tag}v3"]),
              helper.make_node("Conv", [x, f"{tag}kd", f"{tag}cd"], [f"{tag}vd"],
                               strides=[stride, stride]),
              helper.make_node("Add", [f"{tag}v3", f"{tag}vd"], [f"{tag}s"]),
              helper.make_node("Relu", [f"{tag}s"], [f"{tag}y"])]
    return f"{tag}y"
