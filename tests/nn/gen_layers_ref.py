#!/usr/bin/python3
"""Writes cases/layers.json: PyTorch (1.13, float32) references for tests/nn/layers_test.cpp.

Covers what the layer modules add on top of the ops: running-statistic updates (BatchNorm with
momentum and with momentum=None, InstanceNorm with track_running_stats), padding="same" and the
non-zero padding modes of Conv, ConvTranspose's output_size, Embedding's padding_idx and max_norm,
and Upsample's mode mapping. Run with /usr/bin/python3 (the system torch).
"""
import json
import os

import torch
import torch.nn as nn

torch.manual_seed(1234)


def t(x):
    x = x.detach()
    if x.dtype == torch.int64:
        return {"shape": list(x.shape), "data": x.flatten().tolist()}
    return {"shape": list(x.shape), "data": [float(v) for v in x.double().flatten()]}


def rnd(*shape):
    return torch.randn(*shape)


out = {}

# ---- BatchNorm2d, momentum 0.1, non-default affine parameters: three training steps, then eval ----
bn = nn.BatchNorm2d(3)
with torch.no_grad():
    bn.weight.copy_(torch.tensor([1.5, -0.5, 2.0]))
    bn.bias.copy_(torch.tensor([0.1, 0.2, -0.3]))
case = {"weight": t(bn.weight), "bias": t(bn.bias), "steps": []}
for _ in range(3):
    x = rnd(4, 3, 2, 2) * 2 + 1
    y = bn(x)
    case["steps"].append({"x": t(x), "y": t(y), "running_mean": t(bn.running_mean),
                          "running_var": t(bn.running_var), "num_batches_tracked": int(bn.num_batches_tracked)})
bn.eval()
x = rnd(2, 3, 2, 2)
case["eval_x"], case["eval_y"] = t(x), t(bn(x))
out["batch_norm2d"] = case

# ---- BatchNorm1d, momentum=None (cumulative average), [N, C] inputs ----
bn = nn.BatchNorm1d(3, momentum=None)
case = {"steps": []}
for _ in range(3):
    x = rnd(5, 3) * 3 - 1
    y = bn(x)
    case["steps"].append({"x": t(x), "y": t(y), "running_mean": t(bn.running_mean),
                          "running_var": t(bn.running_var), "num_batches_tracked": int(bn.num_batches_tracked)})
out["batch_norm1d_cumulative"] = case

# ---- InstanceNorm1d with affine and running statistics: two training steps, then eval ----
inorm = nn.InstanceNorm1d(3, affine=True, track_running_stats=True, momentum=0.2)
with torch.no_grad():
    inorm.weight.copy_(torch.tensor([0.5, 1.0, 2.0]))
    inorm.bias.copy_(torch.tensor([0.0, 1.0, -1.0]))
case = {"weight": t(inorm.weight), "bias": t(inorm.bias), "steps": []}
for _ in range(2):
    x = rnd(2, 3, 5) + 0.5
    y = inorm(x)
    case["steps"].append({"x": t(x), "y": t(y), "running_mean": t(inorm.running_mean),
                          "running_var": t(inorm.running_var)})
inorm.eval()
x = rnd(2, 3, 5)
case["eval_x"], case["eval_y"] = t(x), t(inorm(x))
out["instance_norm1d"] = case


# ---- Conv padding variants ----
def conv_case(m, x):
    return {"weight": t(m.weight), "bias": t(m.bias) if m.bias is not None else None, "x": t(x), "y": t(m(x))}


out["conv1d_same_even_kernel"] = conv_case(nn.Conv1d(2, 3, 4, padding="same"), rnd(2, 2, 7))
out["conv2d_same_dilated"] = conv_case(nn.Conv2d(2, 2, (3, 2), padding="same", dilation=(2, 3)), rnd(1, 2, 6, 7))
out["conv2d_reflect"] = conv_case(nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), rnd(1, 2, 4, 5))
out["conv2d_replicate"] = conv_case(nn.Conv2d(1, 2, 3, padding=(2, 1), padding_mode="replicate"), rnd(1, 1, 4, 4))
out["conv1d_circular"] = conv_case(nn.Conv1d(2, 2, 3, padding=2, padding_mode="circular"), rnd(1, 2, 5))

ct = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, groups=2)
x = rnd(1, 4, 3, 4)
out["conv_transpose2d_output_size"] = {"weight": t(ct.weight), "bias": t(ct.bias), "x": t(x),
                                       "output_size": [6, 8], "y": t(ct(x, output_size=[6, 8]))}

# ---- Embedding: padding_idx gets no gradient; max_norm scales looked-up rows ----
emb = nn.Embedding(6, 3, padding_idx=1, max_norm=1.5)
with torch.no_grad():
    emb.weight.copy_(torch.randn(6, 3) * 2)
    emb.weight[1] = torch.tensor([0.3, -0.2, 0.1])  # a non-zero padding row (as loaded from a checkpoint)
w0 = emb.weight.detach().clone()
idx = torch.tensor([[0, 1, 2], [2, 5, 1]])
y = emb(idx)
up = torch.randn(*y.shape)
(y * up).sum().backward()
out["embedding"] = {"weight": t(w0), "indices": t(idx), "y": t(y), "upstream": t(up), "grad": t(emb.weight.grad)}

# ---- Upsample ----
x = rnd(1, 2, 3, 4)
out["upsample"] = {
    "x": t(x),
    "nearest_scale2": t(nn.Upsample(scale_factor=2, mode="nearest")(x)),
    "bilinear_size_align": t(nn.Upsample(size=(5, 7), mode="bilinear", align_corners=True)(x)),
    "bicubic_scale2": t(nn.Upsample(scale_factor=2, mode="bicubic")(x)),
}
x1 = rnd(2, 3, 5)
out["upsample_linear"] = {"x": t(x1), "y": t(nn.Upsample(scale_factor=3, mode="linear")(x1))}

# ---- PRelu with one slope per channel ----
pr = nn.PReLU(3)
with torch.no_grad():
    pr.weight.copy_(torch.tensor([0.25, -0.5, 2.0]))
x = rnd(2, 3, 4)
out["prelu"] = {"weight": t(pr.weight), "x": t(x), "y": t(pr(x))}

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases", "layers.json")
with open(path, "w") as f:
    json.dump(out, f)
print("wrote", path)
