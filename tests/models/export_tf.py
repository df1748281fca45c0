"""Exports the model suite's Keras networks to ONNX through tf2onnx (seeded weights).

Runs in the exporter venv that `scripts/exporters install tf` makes (tensorflow-cpu, tf2onnx;
pins in scripts/requirements-exporters-tf.txt). Nothing is downloaded: the networks are built
from code with seeded random weights; batch norms get random scales and the statistics of
random inputs (as export.py does for PyTorch), so that activations keep a realistic size.
Inputs stay NHWC as Keras has them: tf2onnx's own Transposes around each Conv are what a user
gets, and what Kiln's layout pass must see through.

usage: python export_tf.py OUT_DIR [NAME...]   (default: all models)
Writes OUT_DIR/NAME.onnx for each model; prints one line per model.
"""
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")   # no oneDNN/CPU-feature banners
import numpy as np            # noqa: E402
import tensorflow as tf       # noqa: E402
import keras                  # noqa: E402
from keras import layers      # noqa: E402
import tf2onnx                # noqa: E402

SEED = 20240611           # the suite's seed (export.py)
OPSET = 18                # tf2onnx's default is 15; 18 is what current ONNX Runtime users pick
CALIBRATION_BATCH = 4


def keras_cnn():
    """A small MobileNet-like CNN: conv-BN-ReLU stem, a depthwise separable block with a
    residual Add, a strided block, global average pool, dense classifier."""
    x = inp = keras.Input((32, 32, 3), batch_size=1, name="input")

    def cbr(x, filters, kernel=3, strides=1):
        x = layers.Conv2D(filters, kernel, strides, padding="same", use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        return layers.ReLU()(x)
    x = cbr(x, 16)
    y = layers.DepthwiseConv2D(3, padding="same", use_bias=False)(x)
    y = layers.BatchNormalization()(y)
    y = layers.ReLU(6.0)(y)
    y = layers.Conv2D(16, 1, use_bias=False)(y)
    y = layers.BatchNormalization()(y)
    x = layers.Add()([x, y])
    x = cbr(x, 32, strides=2)
    x = cbr(x, 32)
    x = layers.MaxPooling2D(2)(x)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dropout(0.1)(x)
    out = layers.Dense(10, name="logits")(x)
    return keras.Model(inp, out), [(1, 32, 32, 3)]


def keras_transformer():
    """One post-norm transformer encoder block (Keras MultiHeadAttention, LayerNormalization,
    GELU MLP) over 16 tokens of 64 features, mean-pooled to 5 classes."""
    x = inp = keras.Input((16, 64), batch_size=1, name="input")
    a = layers.MultiHeadAttention(num_heads=4, key_dim=16)(x, x)
    x = layers.LayerNormalization(epsilon=1e-5)(x + a)
    # the tanh GELU: Keras' exact one is written with Erfc, which tf2onnx 1.17 cannot convert
    h = layers.Dense(256, activation=lambda v: keras.activations.gelu(v, approximate=True))(x)
    h = layers.Dense(64)(h)
    x = layers.LayerNormalization(epsilon=1e-5)(x + h)
    x = layers.GlobalAveragePooling1D()(x)
    out = layers.Dense(5, name="logits")(x)
    return keras.Model(inp, out), [(1, 16, 64)]


MODELS = {"keras_cnn": keras_cnn, "keras_transformer": keras_transformer}


def calibrate_batch_norm(model, shapes):
    """Random scales and shifts, then moving statistics of one batch of random inputs."""
    bns = [m for m in model.layers if isinstance(m, layers.BatchNormalization)]
    if not bns:
        return
    rng = np.random.default_rng(SEED)
    for bn in bns:
        gamma, beta = bn.gamma.numpy(), bn.beta.numpy()
        bn.gamma.assign(rng.uniform(0.5, 1.5, gamma.shape).astype(np.float32))
        bn.beta.assign(rng.normal(0.0, 0.1, beta.shape).astype(np.float32))
        bn.momentum = 0.0   # the moving statistics become this batch's
    batch = [rng.standard_normal((CALIBRATION_BATCH, *s[1:])).astype(np.float32)
             for s in shapes]
    model(batch if len(batch) > 1 else batch[0], training=True)


def export(name, out_dir):
    keras.utils.set_random_seed(SEED)
    model, shapes = MODELS[name]()
    calibrate_batch_norm(model, shapes)
    spec = [tf.TensorSpec(s, tf.float32, name=n) for s, n in zip(shapes, ["input"])]

    @tf.function(input_signature=spec)
    def serve(*args):
        return {"output": model(args[0] if len(args) == 1 else list(args), training=False)}

    path = out_dir / f"{name}.onnx"
    tmp = path.with_suffix(".part")   # renamed when complete: the cache never holds halves
    tf2onnx.convert.from_function(serve, input_signature=spec, opset=OPSET,
                                  output_path=str(tmp))
    tmp.replace(path)
    print(f"exported {name}: {model.count_params()} parameters -> {path}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out_dir = pathlib.Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    names = sys.argv[2:] or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.exit(f"unknown model(s): {' '.join(unknown)}; known: {' '.join(MODELS)}")
    tf.config.threading.set_intra_op_parallelism_threads(2)
    for name in names:
        export(name, out_dir)


if __name__ == "__main__":
    main()
