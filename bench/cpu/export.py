#!/usr/bin/python3
"""Exports the CPU benchmark's models that the model suite does not have (batch 1, seeded
random weights: nothing is downloaded), with the suite's exporter (tests/models/export.py:
Debian's python, PyTorch 1.13, TorchScript exporter, opset 17, batch norms calibrated):

- bert_base: BERT-base shapes (12 post-norm layers, hidden 768, 12 heads, MLP 3072, vocab
  30522) at sequence 128, built from the suite's TinyBert layers, inputs input_ids and
  attention_mask (int64 [1, 128]);
- vit_b16: torchvision's vit_b_16 (ViT-B/16, 224x224, 1000 classes);
- lstm: a 2-layer LSTM (input 256, hidden 512) over a (1, 64, 256) sequence, last step to
  10 classes: the recurrent kernels at a size where the gate products dominate.

usage: /usr/bin/python3 bench/cpu/export.py OUT_DIR [NAME...]
"""
import pathlib
import sys

import torch
import torchvision

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "models"))
import export as suite  # noqa: E402  (the suite's exporter: its classes and export())


class BertBase(suite.TinyBert):
    VOCAB, SEQ, DIM, HEADS, LAYERS, CLASSES = 30522, 128, 768, 12, 12, 2


def _vit_b16():
    m = torchvision.models.vit_b_16(weights=None)
    # as the suite's ViT: torchvision zero-initializes the head, which makes every output 0
    torch.nn.init.normal_(m.heads.head.weight, std=0.02)
    torch.nn.init.normal_(m.heads.head.bias, std=0.02)
    return m


class Lstm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(input_size=256, hidden_size=512, num_layers=2, batch_first=True)
        self.fc = torch.nn.Linear(512, 10)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y[:, -1])


BENCH_MODELS = {
    "bert_base": (lambda: BertBase(),
                  ((torch.randint(0, BertBase.VOCAB, (1, BertBase.SEQ)),
                    torch.ones(1, BertBase.SEQ, dtype=torch.int64)),
                   ["input_ids", "attention_mask"])),
    "vit_b16": (_vit_b16, suite._image(suite.IMAGENET)),
    "lstm": (lambda: Lstm(), ((torch.randn(1, 64, 256),), ["input"])),
}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    suite.MODELS.update(BENCH_MODELS)
    torch.set_num_threads(2)
    for name in sys.argv[2:] or list(BENCH_MODELS):
        suite.export(name, out, "torchscript")


if __name__ == "__main__":
    main()
