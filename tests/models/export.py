#!/usr/bin/python3
"""Exports the real-model suite's PyTorch models to ONNX (batch 1, seeded weights).

Two exporters, one set of networks:
- torchscript (the default): Debian's system python, PyTorch 1.13 and torchvision, opset 17
  (the pinned venv has no torch);
- dynamo: torch.onnx.export(..., dynamo=True) of PyTorch 2.x, as most users export today,
  run by the python of the venv `scripts/exporters install torch` makes, at that exporter's
  default opset and with its default graph optimization.
Nothing is downloaded: every network is built from code with seeded random weights and
exported in eval mode. The quantized model and the digits example are added by
tests/models/run.py (it needs onnxruntime, which lives in the venv).

usage: PYTHON tests/models/export.py [--exporter torchscript|dynamo] OUT_DIR [NAME...]
       (default: all models). Writes OUT_DIR/NAME.onnx for each model; one line per model.
"""
import math
import pathlib
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

OPSET = 17
SEED = 20240611           # any fixed value: weights only need to be reproducible
IMAGENET = 224            # the input side of the torchvision ImageNet classifiers
CALIBRATION_BATCH = 4     # random images per batch-norm statistics pass
CALIBRATION_PASSES = 2


# ---- small networks written here (the torchvision ones are built from their classes) ----

def _small_densenet():
    # DenseNet-BC topology (concat of every earlier feature map in a block) at toy size.
    return torchvision.models.DenseNet(growth_rate=12, block_config=(3, 3, 3),
                                       num_init_features=24, bn_size=2, num_classes=10)


class UNetLite(nn.Module):
    """A two-level UNet: strided conv encoder, bilinear F.interpolate decoder with skip
    concats, per-pixel class logits at the input resolution."""

    def __init__(self, classes=5):
        super().__init__()

        def block(cin, cout, stride=1):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                                 nn.BatchNorm2d(cout), nn.ReLU(inplace=True))
        self.e1 = block(3, 16)
        self.e2 = block(16, 32, 2)
        self.e3 = block(32, 64, 2)
        self.d2 = block(64 + 32, 32)
        self.d1 = block(32 + 16, 16)
        self.head = nn.Conv2d(16, classes, 1)

    def forward(self, x):
        x1 = self.e1(x)
        x2 = self.e2(x1)
        x3 = self.e3(x2)
        u2 = F.interpolate(x3, scale_factor=2.0, mode="bilinear", align_corners=False)
        y2 = self.d2(torch.cat([u2, x2], 1))
        u1 = F.interpolate(y2, size=x1.shape[-2:], mode="nearest")
        y1 = self.d1(torch.cat([u1, x1], 1))
        return self.head(y1)


class LRASPPOut(nn.Module):
    """torchvision's LRASPP returns a dict; export its "out" tensor."""

    def __init__(self):
        super().__init__()
        self.net = torchvision.models.segmentation.lraspp_mobilenet_v3_large(
            weights=None, weights_backbone=None, num_classes=4)

    def forward(self, x):
        return self.net(x)["out"]


class SelfAttention(nn.Module):
    """Multi-head attention written out (MatMul, Softmax), with an additive mask."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.dk = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, add_mask):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q = q.reshape(b, t, self.heads, self.dk).transpose(1, 2)
        k = k.reshape(b, t, self.heads, self.dk).transpose(1, 2)
        v = v.reshape(b, t, self.heads, self.dk).transpose(1, 2)
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dk) + add_mask
        y = torch.matmul(torch.softmax(s, dim=-1), v)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class EncoderLayer(nn.Module):
    def __init__(self, dim, heads, pre_norm, gelu_approx):
        super().__init__()
        self.pre_norm = pre_norm
        self.attn = SelfAttention(dim, heads)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.gelu_approx = gelu_approx

    def mlp(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate=self.gelu_approx))

    def forward(self, x, add_mask):
        if self.pre_norm:   # GPT-2 style
            x = x + self.attn(self.ln1(x), add_mask)
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attn(x, add_mask))   # BERT style (post-norm)
        return self.ln2(x + self.mlp(x))


class TinyBert(nn.Module):
    """BERT-style encoder: token + position + segment embeddings, post-norm layers, padding
    mask from an int64 attention_mask (1 = token, 0 = padding), pooled tanh + classifier."""
    VOCAB, SEQ, DIM, HEADS, LAYERS, CLASSES = 1000, 32, 64, 4, 2, 3

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(self.VOCAB, self.DIM)
        self.pos = nn.Embedding(self.SEQ, self.DIM)
        self.ln = nn.LayerNorm(self.DIM)
        self.layers = nn.ModuleList(
            EncoderLayer(self.DIM, self.HEADS, False, "none") for _ in range(self.LAYERS))
        self.pool = nn.Linear(self.DIM, self.DIM)
        self.cls = nn.Linear(self.DIM, self.CLASSES)

    def forward(self, input_ids, attention_mask):
        pos = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.ln(self.tok(input_ids) + self.pos(pos))
        add = (1.0 - attention_mask.to(torch.float32))[:, None, None, :] * -10000.0
        for layer in self.layers:
            x = layer(x, add)
        return self.cls(torch.tanh(self.pool(x[:, 0])))


class TinyGPT(nn.Module):
    """GPT-style decoder: pre-norm blocks, causal mask (upper triangle -inf), tanh GELU,
    tied input/output embedding, next-token logits for every position."""
    VOCAB, SEQ, DIM, HEADS, LAYERS = 512, 16, 64, 4, 2

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(self.VOCAB, self.DIM)
        self.pos = nn.Parameter(torch.randn(1, self.SEQ, self.DIM) * 0.02)
        self.blocks = nn.ModuleList(
            EncoderLayer(self.DIM, self.HEADS, True, "tanh") for _ in range(self.LAYERS))
        self.ln = nn.LayerNorm(self.DIM)
        causal = torch.triu(torch.full((self.SEQ, self.SEQ), float("-inf")), diagonal=1)
        self.register_buffer("causal", causal)

    def forward(self, input_ids):
        t = input_ids.shape[1]
        x = self.tok(input_ids) + self.pos[:, :t]
        for block in self.blocks:
            x = block(x, self.causal[:t, :t])
        return torch.matmul(self.ln(x), self.tok.weight.t())


class TinyViT(nn.Module):
    """A ViT written out: 8x8 patch conv, class token, learned positions, pre-norm blocks
    with exact GELU, class logits from the class token. Batch 1 is static, so the class
    token is concatenated as is (torchvision's expand(n, -1, -1) needs constant folding)."""
    SIDE, PATCH, DIM, HEADS, LAYERS, CLASSES = 32, 8, 96, 4, 3, 10

    def __init__(self):
        super().__init__()
        n = (self.SIDE // self.PATCH) ** 2
        self.patch = nn.Conv2d(3, self.DIM, self.PATCH, self.PATCH)
        self.cls_token = nn.Parameter(torch.randn(1, 1, self.DIM) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n + 1, self.DIM) * 0.02)
        self.blocks = nn.ModuleList(
            EncoderLayer(self.DIM, self.HEADS, True, "none") for _ in range(self.LAYERS))
        self.ln = nn.LayerNorm(self.DIM)
        self.head = nn.Linear(self.DIM, self.CLASSES)
        self.register_buffer("no_mask", torch.zeros(1))

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token, x], 1) + self.pos
        for block in self.blocks:
            x = block(x, self.no_mask)
        return self.head(self.ln(x[:, 0]))


def _small_vit():
    m = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=3,
                                             num_heads=4, hidden_dim=96, mlp_dim=192,
                                             num_classes=10)
    # torchvision zero-initializes the classification head, which makes every output 0 and
    # any comparison vacuous: give it random weights
    nn.init.normal_(m.heads.head.weight, std=0.05)
    nn.init.normal_(m.heads.head.bias, std=0.05)
    return m


class TorchEncoder(nn.Module):
    """PyTorch's own nn.TransformerEncoder (2 post-norm layers, 4 heads, GELU MLP, dropout
    as in training recipes) over 32 tokens of 64 features, mean-pooled to 5 classes: the
    encoder users export as is (its attention is F.multi_head_attention_forward, and
    scaled_dot_product_attention under the dynamo exporter)."""
    SEQ, DIM, HEADS, LAYERS, CLASSES = 32, 64, 4, 2, 5

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(self.DIM, self.HEADS, 4 * self.DIM, dropout=0.1,
                                           activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, self.LAYERS, enable_nested_tensor=False)
        self.head = nn.Linear(self.DIM, self.CLASSES)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))


class SeqClassifier(nn.Module):
    """A 2-layer LSTM or GRU over a (1, 20, 16) sequence, last step to 5 classes."""

    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(input_size=16, hidden_size=32, num_layers=2, batch_first=True)
        self.fc = nn.Linear(32, 5)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y[:, -1])


def _image(side, channels=3):
    return (torch.randn(1, channels, side, side),), ["input"]


# NAME -> (builder, example inputs and input names). The input names must match those of
# tests/models/models.txt (the runner draws inputs by name).
MODELS = {
    "resnet18": (lambda: torchvision.models.resnet18(weights=None), _image(IMAGENET)),
    "resnet50": (lambda: torchvision.models.resnet50(weights=None), _image(IMAGENET)),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), _image(IMAGENET)),
    "efficientnet_b0": (lambda: torchvision.models.efficientnet_b0(weights=None),
                        _image(IMAGENET)),
    "densenet_small": (_small_densenet, _image(64)),
    "unet_lite": (lambda: UNetLite(), _image(64)),
    "lraspp_mobilenet_v3": (lambda: LRASPPOut(), _image(128)),
    "bert_tiny": (lambda: TinyBert(),
                  ((torch.randint(0, TinyBert.VOCAB, (1, TinyBert.SEQ)),
                    torch.ones(1, TinyBert.SEQ, dtype=torch.int64)),
                   ["input_ids", "attention_mask"])),
    "gpt_tiny": (lambda: TinyGPT(),
                 ((torch.randint(0, TinyGPT.VOCAB, (1, TinyGPT.SEQ)),), ["input_ids"])),
    "vit_tiny": (lambda: TinyViT(), _image(32)),
    "vit_torchvision": (_small_vit, _image(32)),
    "transformer_encoder": (lambda: TorchEncoder(),
                            ((torch.randn(1, TorchEncoder.SEQ, TorchEncoder.DIM),), ["input"])),
    "lstm_seq": (lambda: SeqClassifier(nn.LSTM), ((torch.randn(1, 20, 16),), ["input"])),
    "gru_seq": (lambda: SeqClassifier(nn.GRU), ((torch.randn(1, 20, 16),), ["input"])),
}


def calibrate_batch_norm(model, args):
    """Gives batch norms realistic parameters. Freshly built, they hold running mean 0 and
    variance 1 and scale 1, so in eval mode activations shrink or grow layer after layer
    (a random MobileNetV2 outputs ~1e-12, which any atol passes). Random scales and shifts,
    then running statistics measured on random inputs, keep activations near unit size."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    with torch.no_grad():
        for bn in bns:
            bn.reset_running_stats()
            bn.momentum = None          # a plain average over the passes
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.normal_(0.0, 0.1)
        model.train()
        for _ in range(CALIBRATION_PASSES):
            model(*(torch.randn(CALIBRATION_BATCH, *a.shape[1:]) for a in args))
    model.eval()


def export(name, out_dir, exporter):
    builder, (args, input_names) = MODELS[name]
    torch.manual_seed(SEED)
    model = builder()
    calibrate_batch_norm(model, args)
    model.eval()
    path = out_dir / f"{name}.onnx"
    # Not under torch.no_grad(): with grad enabled, nn.MultiheadAttention (the ViT) keeps
    # its composite path instead of the fused _native_multi_head_attention, which has no
    # ONNX export in torch 1.13.
    tmp = path.with_suffix(".part")   # renamed when complete: the cache never holds halves
    if exporter == "dynamo":
        # the user's call: defaults (opset, optimize=True) but one file for the cache
        torch.onnx.export(model, args, str(tmp), dynamo=True, input_names=input_names,
                          output_names=["output"], external_data=False)
    else:
        torch.onnx.export(model, args, str(tmp), opset_version=OPSET, input_names=input_names,
                          output_names=["output"], do_constant_folding=True)
    tmp.replace(path)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"exported {name}: {n_params} parameters -> {path}")


def main():
    argv = sys.argv[1:]
    exporter = "torchscript"
    if argv[:1] == ["--exporter"] and len(argv) >= 2:
        exporter, argv = argv[1], argv[2:]
    if not argv or exporter not in ("torchscript", "dynamo"):
        sys.exit(__doc__)
    out_dir = pathlib.Path(argv[0])
    out_dir.mkdir(parents=True, exist_ok=True)
    names = argv[1:] or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.exit(f"unknown model(s): {' '.join(unknown)}; known: {' '.join(MODELS)}")
    torch.set_num_threads(2)
    for name in names:
        export(name, out_dir, exporter)


if __name__ == "__main__":
    main()
