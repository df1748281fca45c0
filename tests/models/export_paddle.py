"""Exports the model suite's PaddlePaddle network to ONNX through paddle2onnx (seeded weights).

Runs in the exporter venv that `scripts/exporters install paddle` makes (paddlepaddle CPU,
paddle2onnx; pins in scripts/requirements-exporters-paddle.txt). Nothing is downloaded: the
network is built from code with seeded random weights; batch norms get random scales and the
statistics of random inputs (as export.py does for PyTorch).

usage: python export_paddle.py OUT_DIR [NAME...]   (default: all models)
Writes OUT_DIR/NAME.onnx for each model; prints one line per model.
"""
import pathlib
import sys
import tempfile

import numpy as np
import paddle
import paddle.nn as nn

SEED = 20240611           # the suite's seed (export.py)
OPSET = 17                # paddle.onnx.export's default is 9; 17 is the suite's TorchScript opset
CALIBRATION_BATCH = 4
CALIBRATION_PASSES = 2


class ConvBN(nn.Layer):
    def __init__(self, cin, cout, k=3, stride=1, groups=1, act=True):
        super().__init__()
        self.conv = nn.Conv2D(cin, cout, k, stride, k // 2, groups=groups, bias_attr=False)
        self.bn = nn.BatchNorm2D(cout)
        self.act = nn.Hardswish() if act else None

    def forward(self, x):
        x = self.bn(self.conv(x))
        return self.act(x) if self.act else x


class PaddleCNN(nn.Layer):
    """A PP-LCNet-like CNN (PaddleOCR's backbone family): conv-BN-Hardswish stem, depthwise
    separable blocks, one with a residual Add and one with squeeze-excitation, global pool,
    dropout, linear classifier."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = ConvBN(3, 16, stride=2)
        self.dw1, self.pw1 = ConvBN(16, 16, groups=16), ConvBN(16, 16, 1, act=False)
        self.dw2, self.pw2 = ConvBN(16, 16, stride=2, groups=16), ConvBN(16, 32, 1)
        self.se_pool = nn.AdaptiveAvgPool2D(1)
        self.se1, self.se2 = nn.Conv2D(32, 8, 1), nn.Conv2D(8, 32, 1)
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        x = self.stem(x)
        x = x + self.pw1(self.dw1(x))
        x = self.pw2(self.dw2(x))
        s = nn.functional.hardsigmoid(self.se2(nn.functional.relu(self.se1(self.se_pool(x)))))
        x = x * s
        x = paddle.flatten(self.pool(x), 1)
        return self.fc(self.drop(x))


MODELS = {"paddle_cnn": (PaddleCNN, [1, 3, 64, 64])}


def calibrate_batch_norm(model, shape):
    bns = [m for m in model.sublayers() if isinstance(m, nn.BatchNorm2D)]
    rng = np.random.default_rng(SEED)
    for bn in bns:
        n = bn.weight.shape[0]
        bn.weight.set_value(rng.uniform(0.5, 1.5, n).astype(np.float32))
        bn.bias.set_value(rng.normal(0.0, 0.1, n).astype(np.float32))
        bn._momentum = 0.0   # the running statistics become the last batch's
    model.train()
    with paddle.no_grad():
        for _ in range(CALIBRATION_PASSES):
            model(paddle.to_tensor(rng.standard_normal([CALIBRATION_BATCH, *shape[1:]])
                                   .astype(np.float32)))
    model.eval()


def export(name, out_dir):
    paddle.seed(SEED)
    builder, shape = MODELS[name]
    model = builder()
    calibrate_batch_norm(model, shape)
    path = out_dir / f"{name}.onnx"
    with tempfile.TemporaryDirectory() as tmp:
        prefix = str(pathlib.Path(tmp) / name)
        spec = [paddle.static.InputSpec(shape, "float32", "input")]
        paddle.onnx.export(model, prefix, input_spec=spec, opset_version=OPSET)
        pathlib.Path(prefix + ".onnx").replace(path)
    n_params = sum(int(np.prod(p.shape)) for p in model.parameters())
    print(f"exported {name}: {n_params} parameters -> {path}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out_dir = pathlib.Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    names = sys.argv[2:] or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.exit(f"unknown model(s): {' '.join(unknown)}; known: {' '.join(MODELS)}")
    paddle.set_device("cpu")
    for name in names:
        export(name, out_dir)


if __name__ == "__main__":
    main()
