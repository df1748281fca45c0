#!/usr/bin/env python3
"""A small CNN quantized by PyTorch's FX graph mode (torch.ao.quantization, fbgemm qconfig:
per-channel int8 weights, uint8 activations), exported by torch.onnx.export to QDQ ONNX
(tests/bundle/test_int8_prequant.sh). Runs under Debian's python3-torch (1.13).

usage: torch_qdq.py OUT.onnx
"""
import sys

import torch
import torch.nn as nn
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

SEED = 20261125


class Net(nn.Module):
    """conv-bn-relu, a residual block (conv-bn-relu, conv-bn, add, relu), max pool, global
    average pool, linear: the ops the quantized FX modules export."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.c1 = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.c2 = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16))
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.stem(x)
        x = self.relu(self.c2(self.c1(x)) + x)
        x = self.gap(self.pool(x))
        return self.fc(torch.flatten(x, 1))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    torch.manual_seed(SEED)
    m = Net().eval()
    for bn in (m.stem[1], m.c1[1], m.c2[1]):  # non-trivial folded batch norms
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 1.5)
    x = torch.rand(1, 3, 16, 16)
    q = prepare_fx(m, get_default_qconfig_mapping("fbgemm"), example_inputs=(x,))
    with torch.no_grad():
        for _ in range(16):
            q(torch.rand(1, 3, 16, 16))
    q = convert_fx(q)
    torch.onnx.export(q, x, sys.argv[1], opset_version=13, input_names=["x"],
                      output_names=["y"])


if __name__ == "__main__":
    main()
