"""The GPU benchmark's models, built the same way on both machines (bench/gpu/prepare.sh here
with torch 1.13, bench/gpu/run.py on the GPU machine with its torch): ResNet-50 and MobileNetV2
from torchvision (weights=None) and a hand-written BERT-base encoder (12 layers, hidden 768,
12 heads, intermediate 3072, sequence 128). Weights come from fill_weights, an integer-hash
formula evaluated in numpy (exactly reproducible across torch/numpy versions, unlike torch's
RNG). The values are slices of one table of WEIGHT_PERIOD values, so the exported bundles'
weights files compress well and can travel to the GPU machine (64 MiB limit). BatchNorm running
statistics are measured once, at prepare time (calibrate: train-mode passes on seeded random
inputs), and travel in a small file (save_stats / load_stats): without them (identity
statistics) activations grow layer after layer and ResNet-50's fp32 and fp64 logits differ by
~13%, which makes any fp16 accuracy figure meaningless."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

WEIGHT_PERIOD = 4099          # prime, so the pattern does not line up with rows or channels
HASH_MUL = 2654435761         # Knuth's multiplicative hash constant
SEED = 20240611
# the scale of a residual branch's last BN (ResNet's bn3, MobileNet's last block BN): keeps the
# residual sums tame. ResNet-50 with calibrated statistics is chaotic at 0.2 (fp32 and fp64
# logits differ by 4e-5, 1e-7 input noise grows 25x); at 0.05 they differ by 1.2e-6.
LAST_BN_GAMMA = {"resnet50": 0.05, "mobilenet_v2": 0.2}
BERT = dict(vocab=30522, seq=128, dim=768, heads=12, layers=12, ffn=3072, classes=2)
IMAGE = (3, 224, 224)
CALIB_PASSES, CALIB_BATCH = 4, 16   # BN statistics: averaged over 64 seeded random images
CALIB_SEED = 777                    # the calibration inputs' seeds: CALIB_SEED + pass


class SelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.dk = heads, dim // heads
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, add_mask):
        b, t, d = x.shape
        q = self.q(x).reshape(b, t, self.heads, self.dk).transpose(1, 2)
        k = self.k(x).reshape(b, t, self.heads, self.dk).transpose(1, 2)
        v = self.v(x).reshape(b, t, self.heads, self.dk).transpose(1, 2)
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dk) + add_mask
        y = torch.matmul(torch.softmax(s, dim=-1), v)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class EncoderLayer(nn.Module):
    def __init__(self, dim, heads, ffn):
        super().__init__()
        self.attn = SelfAttention(dim, heads)
        self.ln1, self.ln2 = nn.LayerNorm(dim, eps=1e-12), nn.LayerNorm(dim, eps=1e-12)
        self.fc1, self.fc2 = nn.Linear(dim, ffn), nn.Linear(ffn, dim)

    def forward(self, x, add_mask):
        x = self.ln1(x + self.attn(x, add_mask))            # post-norm, as BERT
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))   # exact (erf) GELU


class BertBase(nn.Module):
    """BERT-base encoder: token + position embeddings, 12 post-norm layers, pooled tanh and a
    2-class classifier; attention_mask (int64, 1 = token) becomes an additive mask."""

    def __init__(self):
        super().__init__()
        c = BERT
        self.tok = nn.Embedding(c["vocab"], c["dim"])
        self.pos = nn.Embedding(c["seq"], c["dim"])
        self.ln = nn.LayerNorm(c["dim"], eps=1e-12)
        self.layers = nn.ModuleList(EncoderLayer(c["dim"], c["heads"], c["ffn"])
                                    for _ in range(c["layers"]))
        self.pool = nn.Linear(c["dim"], c["dim"])
        self.cls = nn.Linear(c["dim"], c["classes"])

    def forward(self, input_ids, attention_mask):
        pos = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        x = self.ln(self.tok(input_ids) + self.pos(pos))
        add = (1.0 - attention_mask.to(x.dtype))[:, None, None, :] * -10000.0
        for layer in self.layers:
            x = layer(x, add)
        return self.cls(torch.tanh(self.pool(x[:, 0])))


def _table():
    j = np.arange(WEIGHT_PERIOD, dtype=np.uint64)
    h = (j * np.uint64(HASH_MUL) + np.uint64(SEED)) % np.uint64(1 << 32)
    return (h.astype(np.float64) / float(1 << 32) * 2.0 - 1.0)   # uniform-ish in [-1, 1)


def _vals(table, shape, k):
    """Tensor number k's values: element (i, j) of its (rows, rest) view is table[i + j + ...],
    a Hankel pattern: each row, and each row of the transpose (ONNX exports Linear weights
    transposed), is a slice of the periodic table, so LZ compression finds it again."""
    rows = shape[0] if len(shape) else 1
    cols = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    if len(shape) == 1:
        rows, cols = 1, shape[0]
    idx = (np.arange(rows, dtype=np.int64)[:, None] + np.arange(cols, dtype=np.int64)[None, :]
           + k * 7919) % WEIGHT_PERIOD
    return table[idx].reshape(-1)


def fill_weights(model, name):
    """Sets every parameter and buffer from the hash table: conv/linear weights He/LeCun-scaled,
    BN with identity statistics (gamma 1, or LAST_BN_GAMMA on a residual branch's last BN;
    calibrate measures the real statistics), small biases. Deterministic: same values on any
    machine."""
    table = _table()
    last_bn = set()
    if name == "resnet50":
        last_bn = {n for n, _ in model.named_modules() if n.endswith(".bn3")}
    elif name == "mobilenet_v2":
        for n, m in model.named_modules():
            if isinstance(m, torchvision.models.mobilenetv2.InvertedResidual) and m.use_res_connect:
                last_bn.add(f"{n}.conv.{len(m.conv) - 1}")
    k = 0
    with torch.no_grad():
        for mname, m in model.named_modules():
            for pname, t in list(m.named_parameters(recurse=False)) + \
                    list(m.named_buffers(recurse=False)):
                if not t.is_floating_point():
                    continue
                k += 1
                v = _vals(table, tuple(t.shape), k)
                if isinstance(m, nn.BatchNorm2d):
                    gamma = LAST_BN_GAMMA[name] if mname in last_bn else 1.0
                    v = {"weight": np.full(t.numel(), gamma),
                         "bias": 0.05 * v, "running_mean": np.zeros(t.numel()),
                         "running_var": np.ones(t.numel())}[pname]
                elif isinstance(m, nn.LayerNorm):
                    v = 1.0 + 0.1 * v if pname == "weight" else 0.05 * v
                elif isinstance(m, nn.Embedding):
                    v = 0.5 * v
                elif t.dim() >= 2:
                    fan_in = t[0].numel()
                    gain = 6.0 if isinstance(m, nn.Conv2d) else 3.0   # He (ReLU) / LeCun
                    v = v * math.sqrt(gain / fan_in)
                else:
                    v = 0.05 * v
                t.copy_(torch.from_numpy(np.asarray(v, dtype=np.float32).reshape(t.shape)))
    return model


def _bns(model):
    return [(n, m) for n, m in model.named_modules()
            if isinstance(m, nn.modules.batchnorm._BatchNorm)]


def calibrate(model, name):
    """Measures every BatchNorm's running mean (per channel) and variance (one per layer, see
    below) on seeded random inputs (train-mode passes under no_grad, a plain average over
    CALIB_PASSES batches) and returns them as
    {"NAME/module.running_mean": float32 array, ...}; the model is left in eval mode with
    them. Models without BatchNorm return {}."""
    bns = _bns(model)
    if not bns:
        return {}
    with torch.no_grad():
        for _, bn in bns:
            bn.reset_running_stats()
            bn.momentum = None
        model.train()
        for p in range(CALIB_PASSES):
            model(*inputs(name, CALIB_BATCH, CALIB_SEED + p))
    model.eval()
    stats = {}
    for n, bn in bns:
        stats[f"{name}/{n}.running_mean"] = bn.running_mean.numpy().astype(np.float32)
        # one variance per layer (the mean over its channels), not per channel: folded into
        # the convolution, a per-channel scale would make every weight distinct and the
        # weights files incompressible (ResNet-50: 72 MB of xz, over the 64 MiB the GPU
        # machine takes); a per-layer scale keeps the hash table's period inside each layer
        var = bn.running_var.numpy().astype(np.float32)
        stats[f"{name}/{n}.running_var"] = np.full_like(var, var.mean())
        bn.running_var.copy_(torch.from_numpy(stats[f"{name}/{n}.running_var"]))
    return stats


def apply_stats(model, name, stats):
    """Loads calibrate's statistics for this model into its BatchNorms; raises KeyError when
    the file lacks one (a model prepared before the statistics existed)."""
    with torch.no_grad():
        for n, bn in _bns(model):
            for buf in ("running_mean", "running_var"):
                v = np.asarray(stats[f"{name}/{n}.{buf}"], dtype=np.float32)
                getattr(bn, buf).copy_(torch.from_numpy(v).reshape(getattr(bn, buf).shape))
    return model


def save_stats(path, stats):
    """Merges stats into the .npz file at path (other models' entries stay)."""
    old = load_stats(path)
    old.update(stats)
    with open(path, "wb") as f:
        np.savez_compressed(f, **old)


def load_stats(path):
    try:
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    except FileNotFoundError:
        return {}


def build(name, stats=None):
    """The model in eval mode with the benchmark's weights (float32, CPU); stats: the
    BatchNorm statistics of calibrate / load_stats (None: identity statistics)."""
    if name == "resnet50":
        m = torchvision.models.resnet50(weights=None)
    elif name == "mobilenet_v2":
        m = torchvision.models.mobilenet_v2(weights=None)
    elif name == "bert_base":
        m = BertBase()
    else:
        raise ValueError(name)
    m = fill_weights(m, name)
    if stats is not None:
        apply_stats(m, name, stats)
    return m.eval()


def inputs(name, batch, seed, device="cpu"):
    """Seeded random inputs (float32 images, or int64 ids + an all-ones mask), as a tuple."""
    g = np.random.default_rng(seed)
    if name == "bert_base":
        ids = g.integers(0, BERT["vocab"], (batch, BERT["seq"]), dtype=np.int64)
        mask = np.ones((batch, BERT["seq"]), dtype=np.int64)
        return (torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device))
    x = g.standard_normal((batch,) + IMAGE).astype(np.float32)
    return (torch.from_numpy(x).to(device),)


def input_names(name):
    return ["input_ids", "attention_mask"] if name == "bert_base" else ["input"]


MODELS = ["resnet50", "mobilenet_v2", "bert_base"]
