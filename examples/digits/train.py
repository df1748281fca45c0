#!/usr/bin/python3
"""Trains the digits example: a small CNN on scikit-learn's 8x8 handwritten digits.

Run with Debian's system python (PyTorch 1.13 and scikit-learn; nothing is downloaded:
load_digits ships with scikit-learn). Seeded, CPU, one thread: a few seconds, and the same
weights on every run on one machine. Writes, next to this script:
  digits.onnx     the trained model (opset 17, input "image" f32[1,1,8,8] with pixels in
                  [0, 1], output "logits" f32[1,10])
  digits_test.bin the held-out test split: "KDG1", uint32 N, N*64 float32 pixels (row-major
                  8x8 images, [0, 1]), N uint8 labels; all little-endian
Prints the test accuracy of the PyTorch model.

usage: /usr/bin/python3 examples/digits/train.py
"""
import pathlib
import struct

import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

HERE = pathlib.Path(__file__).resolve().parent
SEED = 20240611
OPSET = 17
TEST_FRACTION = 0.2     # 360 of the 1,797 images held out
EPOCHS = 30             # the loss has flattened by then; about 3 s on one core
BATCH = 64
LEARNING_RATE = 3e-3
PIXEL_MAX = 16.0        # load_digits pixels are counts 0..16
MAGIC = b"KDG1"


class DigitsNet(nn.Module):
    """conv 3x3 (8) - ReLU - conv 3x3 (16) - ReLU - max pool 2 - dense 10."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2))
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


def accuracy(model, x, y):
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


def main():
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    digits = load_digits()
    images = (digits.images / PIXEL_MAX).astype(np.float32)
    x_tr, x_te, y_tr, y_te = train_test_split(images, digits.target, test_size=TEST_FRACTION,
                                              random_state=SEED % 2**32,
                                              stratify=digits.target)
    xt = torch.from_numpy(x_tr).unsqueeze(1)
    yt = torch.from_numpy(y_tr).long()
    xe = torch.from_numpy(x_te).unsqueeze(1)
    ye = torch.from_numpy(y_te).long()

    model = DigitsNet()
    opt = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(SEED)
    for epoch in range(EPOCHS):
        model.train()
        perm = torch.randperm(len(xt), generator=gen)
        total = 0.0
        for i in range(0, len(xt), BATCH):
            idx = perm[i:i + BATCH]
            opt.zero_grad()
            loss = loss_fn(model(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
            total += float(loss) * len(idx)
        if epoch % 10 == 9 or epoch == EPOCHS - 1:
            model.eval()
            print(f"epoch {epoch + 1}: loss {total / len(xt):.4f}, "
                  f"test accuracy {accuracy(model, xe, ye):.4f}")
    model.eval()
    acc = accuracy(model, xe, ye)
    print(f"PyTorch test accuracy: {acc:.4f} ({int(round(acc * len(ye)))}/{len(ye)})")

    torch.onnx.export(model, (xe[:1],), str(HERE / "digits.onnx"), opset_version=OPSET,
                      input_names=["image"], output_names=["logits"])
    with open(HERE / "digits_test.bin", "wb") as f:
        f.write(MAGIC + struct.pack("<I", len(y_te)))
        f.write(x_te.astype("<f4").tobytes())
        f.write(y_te.astype(np.uint8).tobytes())
    print(f"wrote {HERE / 'digits.onnx'} and {HERE / 'digits_test.bin'} ({len(y_te)} images)")


if __name__ == "__main__":
    main()
