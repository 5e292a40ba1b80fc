#!/usr/bin/env python3
"""Generate the nn layer conformance cases from PyTorch.

Run with Debian's python3-torch (1.13.x):   /usr/bin/python3 gen_layer_cases.py
Writes cases/layers.json and cases/<case>.pt next to this file (any cwd).

Every case builds a torch module from a config (PyTorch argument names), gives its parameters
and buffers non-trivial values, saves module.state_dict() (float32) as cases/<case>.pt, and
evaluates the module on a random input. The expected values are computed in float64 on the
exact float32 values of the checkpoint and the inputs (module.double()), so the float32 layer
under test is compared against a reference more accurate than itself. Gradients are those of
sum_i(sum(outputs[i] * upstream[i])) with respect to each differentiable input and to every
parameter (by state_dict key).

Layers that torch 1.13 lacks (RmsNorm, SwiGlu, PositionalEncoding, RotaryEncoding,
PositionWiseFeedForward) are small torch modules written here from their formulas, with the
parameter names ember's layer uses.

A case of layers.json:
  name, layer (PyTorch's module name), config (constructor arguments, PyTorch names; ember's
  names for the layers torch lacks), call (forward options: masks, need_weights, is_causal,
  output_size, start), training, checkpoint (<case>.pt or null), load (false: do not load the
  checkpoint, test the layer's own derived state), inputs, outputs, upstream (null for integer
  outputs), input_grads (null for inputs without one), param_grads {state_dict key: tensor},
  buffers_after (training cases with running statistics: every buffer after the forward),
  rtol, atol [per output], grad_rtol, input_grad_atol [per input], param_grad_atol {key}.
Tensors are {"dtype", "shape", "data"} with "inf"/"-inf"/"nan" as strings.

Output is deterministic: one global seed for the inputs, every module seeded with a hash of its
case name, torch single-threaded, JSON written in a fixed order.
"""
import copy
import io
import json
import math
import os
import warnings
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
warnings.filterwarnings("ignore", message="Using padding='same'")

HERE = os.path.dirname(os.path.abspath(__file__))
OUTDIR = os.path.join(HERE, "cases")

# Default tolerances of the float32 layer against the float64 reference: rtol, and an atol
# unit scaled by max(1, largest |expected element|) of each tensor.
RTOL, ATOL = 1e-4, 1e-5
GRAD_RTOL, GRAD_ATOL = 1e-4, 2e-5

CASES = []
STATS = {"pt_bytes": 0}


# ----------------------------------------------------------------------------
# encoding
# ----------------------------------------------------------------------------
def fmt(v):
    return float("%.9g" % v)


def enc(t):
    """A tensor as {"dtype", "shape", "data"} (floats written as f32)."""
    t = t.detach()
    if t.dtype in (torch.float32, torch.float64):
        data = [fmt(v) if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))
                for v in t.double().reshape(-1).tolist()]
        return {"dtype": "f32", "shape": list(t.shape), "data": data}
    if t.dtype == torch.bool:
        return {"dtype": "bool", "shape": list(t.shape), "data": [int(v) for v in t.reshape(-1).tolist()]}
    if t.dtype == torch.int64:
        return {"dtype": "i64", "shape": list(t.shape), "data": t.reshape(-1).tolist()}
    raise ValueError(t.dtype)


def tol(t, unit, scale):
    m = float(t.detach().abs().max()) if t.numel() else 0.0
    return unit * scale * max(1.0, m)


# ----------------------------------------------------------------------------
# random values
# ----------------------------------------------------------------------------
def seed_for(name):
    torch.manual_seed(zlib.crc32(name.encode()) & 0x7FFFFFFF)


def rnd(*shape, scale=1.0, kinks=(), digits=4, unique=True):
    """Normal values rounded to `digits` decimals (short in JSON, exact in float32), all distinct
    (no ties in max pooling) and at least 0.01 away from any of `kinks`."""
    q = 10.0 ** digits

    def draw(n):
        x = torch.round(torch.randn(n, dtype=torch.float64) * scale * q) / q
        for k in kinks:
            near = (x - k).abs() < 0.01
            x = torch.where(near, x + 0.05 * torch.sign(x - k + 1e-9), x)
        return x

    x = draw(math.prod(shape))
    while unique and x.numel() > 1:  # redraw the later copies of repeated values
        seen, dup = set(), torch.zeros(x.numel(), dtype=torch.bool)
        for i, v in enumerate(x.tolist()):
            dup[i] = v in seen
            seen.add(v)
        if not dup.any():
            break
        x[dup] = draw(int(dup.sum()))
    return x.reshape(shape).float()


def randomize(module, keep_positive=()):
    """Non-trivial values for parameters and buffers that torch initialises to constants (norm
    weights = 1, biases = 0, running statistics), rounded to 4 decimals."""
    with torch.no_grad():
        for name, t in list(module.state_dict(keep_vars=True).items()):
            if not t.is_floating_point():
                continue
            leaf = name.split(".")[-1]
            if leaf == "running_var":
                t.copy_(torch.round((0.5 + torch.rand_like(t)) * 1e4) / 1e4)
            elif leaf == "running_mean":
                t.copy_(torch.round(0.3 * torch.randn_like(t) * 1e4) / 1e4)
            elif t.numel() > 0 and bool((t == t.reshape(-1)[0]).all()):
                base = 1.0 if float(t.reshape(-1)[0]) == 1.0 else 0.0
                t.copy_(torch.round((base + 0.2 * torch.randn_like(t)) * 1e4) / 1e4)


# ----------------------------------------------------------------------------
# one case
# ----------------------------------------------------------------------------
def add(name, layer, config, build, inputs, forward=None, grad_inputs=None, training=False, scale=1.0,
        call=None, randomize_params=True, perturb=False, prep=None, load=True, note=None):
    """build(): the torch module (float32). inputs: list of tensors. forward(module, *inputs) ->
    tuple of outputs (default: module(*inputs) as a tuple). grad_inputs: which inputs are
    differentiable (default: the floating ones)."""
    seed_for(name)
    module = build()
    if randomize_params:
        randomize(module)
    if perturb:  # every parameter a little different (stacks deep-copy one layer in torch)
        with torch.no_grad():
            for p in module.parameters():
                p.copy_(torch.round((p + 0.05 * torch.randn_like(p)) * 1e4) / 1e4)
    if prep:
        prep(module)
    module.train(training)
    if forward is None:
        def forward(m, *xs):
            out = m(*xs)
            return out if isinstance(out, tuple) else (out,)
    if grad_inputs is None:
        grad_inputs = [t.is_floating_point() for t in inputs]

    sd = module.state_dict()
    ckpt = None
    if sd:
        ckpt = name + ".pt"
        buf = io.BytesIO()
        torch.save(sd, buf)
        data = buf.getvalue()
        with open(os.path.join(OUTDIR, ckpt), "wb") as f:
            f.write(data)
        STATS["pt_bytes"] += len(data)

    # float64 reference on the exact float32 values
    ref = copy.deepcopy(module).double()
    ref.train(training)
    xs = []
    for t, g in zip(inputs, grad_inputs):
        x = t.double() if t.is_floating_point() else t
        if g:
            x = x.clone().requires_grad_(True)
        xs.append(x)
    outs = forward(ref, *xs)
    outs = [o for o in outs if o is not None]
    ups = [rnd(*o.shape, digits=3, unique=False) if o.is_floating_point() else None for o in outs]
    loss = sum((o * u.double()).sum() for o, u in zip(outs, ups) if u is not None)
    params = dict(ref.named_parameters())
    wrt = [x for x, g in zip(xs, grad_inputs) if g] + list(params.values())
    grads = torch.autograd.grad(loss, wrt, allow_unused=True) if wrt else []
    gi = iter(grads)
    input_grads = []
    for x, g in zip(xs, grad_inputs):
        if g:
            v = next(gi)
            input_grads.append(enc(v if v is not None else torch.zeros_like(x)))
        else:
            input_grads.append(None)
    param_grads = {}
    for k, p in params.items():
        v = next(gi)
        param_grads[k] = enc(v if v is not None else torch.zeros_like(p))
    for k in params:
        assert k in sd, (name, k)
    buffers_after = {}
    if training:  # running statistics after the forward
        pnames = set(params)
        for k, v in ref.state_dict().items():
            if k not in pnames:
                buffers_after[k] = enc(v)

    c = {
        "name": name,
        "layer": layer,
        "config": config,
        "training": training,
        "checkpoint": ckpt,
        "inputs": [enc(t) for t in inputs],
        "outputs": [enc(o) for o in outs],
        "upstream": [enc(u) if u is not None else None for u in ups],
        "input_grads": input_grads,
        "param_grads": param_grads,
        "rtol": RTOL * scale,
        "atol": [tol(o[o.isfinite()] if o.is_floating_point() else o.double(), ATOL, scale) for o in outs],
        "grad_rtol": GRAD_RTOL * scale,
        "input_grad_atol": [tol(torch.tensor(g["data"]), GRAD_ATOL, scale) if g else 0.0 for g in input_grads],
        "param_grad_atol": {k: tol(torch.tensor(g["data"]), GRAD_ATOL, scale) for k, g in param_grads.items()},
    }
    if buffers_after:
        c["buffers_after"] = buffers_after
    if not load:
        c["load"] = False
    if call:
        c["call"] = call
    if note:
        c["note"] = note
    CASES.append(c)


# ----------------------------------------------------------------------------
# the layers
# ----------------------------------------------------------------------------
def mk(cls, **cfg):
    return lambda: cls(**cfg)


def linear_cases():
    add("linear", "Linear", {"in_features": 5, "out_features": 3}, mk(nn.Linear, in_features=5, out_features=3),
        [rnd(4, 5)])
    add("linear_nobias_3d", "Linear", {"in_features": 4, "out_features": 6, "bias": False},
        mk(nn.Linear, in_features=4, out_features=6, bias=False), [rnd(2, 3, 4)])
    add("linear_1d_input", "Linear", {"in_features": 4, "out_features": 2}, mk(nn.Linear, in_features=4, out_features=2),
        [rnd(4)])
    add("bilinear", "Bilinear", {"in1_features": 3, "in2_features": 4, "out_features": 2},
        mk(nn.Bilinear, in1_features=3, in2_features=4, out_features=2), [rnd(5, 3), rnd(5, 4)])
    add("bilinear_nobias_3d", "Bilinear", {"in1_features": 2, "in2_features": 3, "out_features": 4, "bias": False},
        mk(nn.Bilinear, in1_features=2, in2_features=3, out_features=4, bias=False), [rnd(2, 3, 2), rnd(2, 3, 3)])
    idx = torch.tensor([[0, 3, 9, 3], [7, 1, 0, 5]])
    add("embedding", "Embedding", {"num_embeddings": 10, "embedding_dim": 3},
        mk(nn.Embedding, num_embeddings=10, embedding_dim=3), [idx])
    add("embedding_padding_idx", "Embedding", {"num_embeddings": 10, "embedding_dim": 4, "padding_idx": 3},
        mk(nn.Embedding, num_embeddings=10, embedding_dim=4, padding_idx=3), [idx])


def conv_cases():
    add("conv1d", "Conv1d", {"in_channels": 2, "out_channels": 3, "kernel_size": 3},
        mk(nn.Conv1d, in_channels=2, out_channels=3, kernel_size=3), [rnd(2, 2, 7)])
    add("conv1d_stride_pad_dil", "Conv1d",
        {"in_channels": 4, "out_channels": 2, "kernel_size": 3, "stride": 2, "padding": 2, "dilation": 2, "groups": 2},
        mk(nn.Conv1d, in_channels=4, out_channels=2, kernel_size=3, stride=2, padding=2, dilation=2, groups=2),
        [rnd(2, 4, 9)])
    add("conv1d_same_nobias", "Conv1d",
        {"in_channels": 2, "out_channels": 2, "kernel_size": 4, "padding": "same", "bias": False},
        mk(nn.Conv1d, in_channels=2, out_channels=2, kernel_size=4, padding="same", bias=False), [rnd(1, 2, 6)])
    add("conv2d", "Conv2d", {"in_channels": 2, "out_channels": 3, "kernel_size": 3},
        mk(nn.Conv2d, in_channels=2, out_channels=3, kernel_size=3), [rnd(2, 2, 5, 5)])
    add("conv2d_rect_stride_pad", "Conv2d",
        {"in_channels": 3, "out_channels": 4, "kernel_size": [2, 3], "stride": [2, 1], "padding": [1, 0]},
        mk(nn.Conv2d, in_channels=3, out_channels=4, kernel_size=(2, 3), stride=(2, 1), padding=(1, 0)),
        [rnd(1, 3, 6, 5)])
    add("conv2d_groups_dilation", "Conv2d",
        {"in_channels": 4, "out_channels": 4, "kernel_size": 2, "dilation": 2, "groups": 4, "bias": False},
        mk(nn.Conv2d, in_channels=4, out_channels=4, kernel_size=2, dilation=2, groups=4, bias=False),
        [rnd(2, 4, 5, 5)])
    add("conv2d_same", "Conv2d", {"in_channels": 2, "out_channels": 2, "kernel_size": 3, "padding": "same"},
        mk(nn.Conv2d, in_channels=2, out_channels=2, kernel_size=3, padding="same"), [rnd(1, 2, 4, 4)])
    for mode in ("reflect", "replicate", "circular"):
        add(f"conv2d_padding_{mode}", "Conv2d",
            {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "padding": [1, 2], "padding_mode": mode},
            mk(nn.Conv2d, in_channels=2, out_channels=3, kernel_size=3, padding=(1, 2), padding_mode=mode),
            [rnd(1, 2, 4, 5)])
    add("conv1d_padding_circular", "Conv1d",
        {"in_channels": 1, "out_channels": 2, "kernel_size": 3, "padding": 2, "padding_mode": "circular"},
        mk(nn.Conv1d, in_channels=1, out_channels=2, kernel_size=3, padding=2, padding_mode="circular"),
        [rnd(2, 1, 5)])
    add("conv3d", "Conv3d", {"in_channels": 2, "out_channels": 2, "kernel_size": 2},
        mk(nn.Conv3d, in_channels=2, out_channels=2, kernel_size=2), [rnd(1, 2, 3, 4, 3)])
    add("conv3d_stride_pad", "Conv3d",
        {"in_channels": 2, "out_channels": 4, "kernel_size": [1, 2, 2], "stride": 2, "padding": [0, 1, 1], "groups": 2},
        mk(nn.Conv3d, in_channels=2, out_channels=4, kernel_size=(1, 2, 2), stride=2, padding=(0, 1, 1), groups=2),
        [rnd(2, 2, 3, 4, 4)])
    add("conv_transpose1d", "ConvTranspose1d", {"in_channels": 2, "out_channels": 3, "kernel_size": 3},
        mk(nn.ConvTranspose1d, in_channels=2, out_channels=3, kernel_size=3), [rnd(2, 2, 5)])
    add("conv_transpose1d_stride_outpad", "ConvTranspose1d",
        {"in_channels": 4, "out_channels": 2, "kernel_size": 3, "stride": 2, "padding": 1, "output_padding": 1,
         "groups": 2, "dilation": 1},
        mk(nn.ConvTranspose1d, in_channels=4, out_channels=2, kernel_size=3, stride=2, padding=1, output_padding=1,
           groups=2), [rnd(1, 4, 4)])
    add("conv_transpose2d", "ConvTranspose2d", {"in_channels": 2, "out_channels": 2, "kernel_size": 3},
        mk(nn.ConvTranspose2d, in_channels=2, out_channels=2, kernel_size=3), [rnd(1, 2, 3, 4)])
    add("conv_transpose2d_stride_dil", "ConvTranspose2d",
        {"in_channels": 3, "out_channels": 2, "kernel_size": [2, 3], "stride": 2, "padding": [0, 1],
         "output_padding": [1, 0], "dilation": [1, 1], "bias": False},
        mk(nn.ConvTranspose2d, in_channels=3, out_channels=2, kernel_size=(2, 3), stride=2, padding=(0, 1),
           output_padding=(1, 0), bias=False), [rnd(2, 3, 3, 3)])
    add("conv_transpose2d_dilation", "ConvTranspose2d",
        {"in_channels": 2, "out_channels": 2, "kernel_size": 2, "dilation": 2},
        mk(nn.ConvTranspose2d, in_channels=2, out_channels=2, kernel_size=2, dilation=2), [rnd(1, 2, 3, 3)])
    add("conv_transpose2d_output_size", "ConvTranspose2d",
        {"in_channels": 2, "out_channels": 1, "kernel_size": 3, "stride": 2, "padding": 1},
        mk(nn.ConvTranspose2d, in_channels=2, out_channels=1, kernel_size=3, stride=2, padding=1), [rnd(1, 2, 3, 3)],
        forward=lambda m, x: (m(x, output_size=[6, 5]),), call={"output_size": [6, 5]})
    add("conv_transpose3d", "ConvTranspose3d", {"in_channels": 2, "out_channels": 2, "kernel_size": 2, "stride": 2},
        mk(nn.ConvTranspose3d, in_channels=2, out_channels=2, kernel_size=2, stride=2), [rnd(1, 2, 2, 2, 3)])


def pool_cases():
    add("max_pool1d", "MaxPool1d", {"kernel_size": 3}, mk(nn.MaxPool1d, kernel_size=3), [rnd(2, 3, 9)])
    add("max_pool1d_stride_pad", "MaxPool1d", {"kernel_size": 3, "stride": 2, "padding": 1},
        mk(nn.MaxPool1d, kernel_size=3, stride=2, padding=1), [rnd(2, 2, 8)])
    add("max_pool1d_dil_ceil", "MaxPool1d", {"kernel_size": 2, "stride": 2, "dilation": 2, "ceil_mode": True},
        mk(nn.MaxPool1d, kernel_size=2, stride=2, dilation=2, ceil_mode=True), [rnd(1, 2, 8)])
    add("max_pool2d", "MaxPool2d", {"kernel_size": 2}, mk(nn.MaxPool2d, kernel_size=2), [rnd(2, 2, 4, 6)])
    add("max_pool2d_stride_pad", "MaxPool2d", {"kernel_size": [3, 2], "stride": [2, 1], "padding": [1, 0]},
        mk(nn.MaxPool2d, kernel_size=(3, 2), stride=(2, 1), padding=(1, 0)), [rnd(1, 3, 5, 5)])
    add("max_pool2d_dilation", "MaxPool2d", {"kernel_size": 2, "stride": 1, "dilation": [2, 1]},
        mk(nn.MaxPool2d, kernel_size=2, stride=1, dilation=(2, 1)), [rnd(1, 2, 5, 4)])
    add("max_pool2d_indices", "MaxPool2d", {"kernel_size": 2, "return_indices": True},
        mk(nn.MaxPool2d, kernel_size=2, return_indices=True), [rnd(2, 2, 4, 4)])
    add("max_pool2d_ceil", "MaxPool2d", {"kernel_size": 2, "stride": 2, "ceil_mode": True},
        mk(nn.MaxPool2d, kernel_size=2, stride=2, ceil_mode=True), [rnd(1, 2, 5, 5)])
    add("avg_pool1d", "AvgPool1d", {"kernel_size": 2}, mk(nn.AvgPool1d, kernel_size=2), [rnd(2, 3, 8)])
    add("avg_pool1d_pad", "AvgPool1d", {"kernel_size": 3, "stride": 2, "padding": 1},
        mk(nn.AvgPool1d, kernel_size=3, stride=2, padding=1), [rnd(1, 2, 7)])
    add("avg_pool1d_pad_exclude", "AvgPool1d",
        {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False, "ceil_mode": True},
        mk(nn.AvgPool1d, kernel_size=3, stride=2, padding=1, count_include_pad=False, ceil_mode=True), [rnd(1, 2, 8)])
    add("avg_pool2d", "AvgPool2d", {"kernel_size": 2}, mk(nn.AvgPool2d, kernel_size=2), [rnd(2, 2, 4, 4)])
    add("avg_pool2d_pad_exclude", "AvgPool2d",
        {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
        mk(nn.AvgPool2d, kernel_size=3, stride=2, padding=1, count_include_pad=False), [rnd(1, 2, 5, 6)])
    add("avg_pool2d_ceil", "AvgPool2d", {"kernel_size": 2, "stride": 2, "ceil_mode": True},
        mk(nn.AvgPool2d, kernel_size=2, stride=2, ceil_mode=True), [rnd(1, 1, 5, 5)])
    add("adaptive_avg_pool1d", "AdaptiveAvgPool1d", {"output_size": 3}, mk(nn.AdaptiveAvgPool1d, output_size=3),
        [rnd(2, 2, 7)])
    add("adaptive_avg_pool1d_global", "AdaptiveAvgPool1d", {"output_size": 1},
        mk(nn.AdaptiveAvgPool1d, output_size=1), [rnd(2, 3, 5)])
    add("adaptive_avg_pool2d", "AdaptiveAvgPool2d", {"output_size": [2, 3]},
        mk(nn.AdaptiveAvgPool2d, output_size=(2, 3)), [rnd(1, 2, 5, 7)])
    add("adaptive_avg_pool2d_global", "AdaptiveAvgPool2d", {"output_size": 1},
        mk(nn.AdaptiveAvgPool2d, output_size=1), [rnd(2, 3, 4, 4)])


def norm_cases():
    for train in (True, False):
        t = "train" if train else "eval"
        add(f"batch_norm1d_{t}", "BatchNorm1d", {"num_features": 3}, mk(nn.BatchNorm1d, num_features=3),
            [rnd(4, 3)], training=train)
        add(f"batch_norm1d_3d_{t}", "BatchNorm1d", {"num_features": 2, "eps": 1e-3, "momentum": 0.2},
            mk(nn.BatchNorm1d, num_features=2, eps=1e-3, momentum=0.2), [rnd(3, 2, 5)], training=train)
        add(f"batch_norm2d_{t}", "BatchNorm2d", {"num_features": 3}, mk(nn.BatchNorm2d, num_features=3),
            [rnd(2, 3, 3, 4)], training=train)
    add("batch_norm1d_momentum_none_train", "BatchNorm1d", {"num_features": 3, "momentum": None},
        mk(nn.BatchNorm1d, num_features=3, momentum=None), [rnd(5, 3)], training=True,
        prep=lambda m: m.num_batches_tracked.fill_(3))
    add("batch_norm2d_no_running_stats_eval", "BatchNorm2d", {"num_features": 2, "track_running_stats": False},
        mk(nn.BatchNorm2d, num_features=2, track_running_stats=False), [rnd(3, 2, 2, 2)], training=False)
    for train in (True, False):
        t = "train" if train else "eval"
        add(f"batch_norm3d_{t}", "BatchNorm3d", {"num_features": 2}, mk(nn.BatchNorm3d, num_features=2),
            [rnd(2, 2, 2, 3, 2)], training=train)
        add(f"instance_norm1d_running_stats_{t}", "InstanceNorm1d",
            {"num_features": 2, "affine": True, "track_running_stats": True},
            mk(nn.InstanceNorm1d, num_features=2, affine=True, track_running_stats=True), [rnd(3, 2, 5)],
            training=train)
    add("instance_norm3d", "InstanceNorm3d", {"num_features": 2, "affine": True},
        mk(nn.InstanceNorm3d, num_features=2, affine=True), [rnd(2, 2, 2, 3, 2)])
    add("batch_norm2d_noaffine_train", "BatchNorm2d", {"num_features": 2, "affine": False},
        mk(nn.BatchNorm2d, num_features=2, affine=False), [rnd(2, 2, 3, 3)], training=True)
    add("layer_norm", "LayerNorm", {"normalized_shape": [5]}, mk(nn.LayerNorm, normalized_shape=5), [rnd(3, 5)])
    add("layer_norm_2d_shape", "LayerNorm", {"normalized_shape": [3, 4], "eps": 1e-3},
        mk(nn.LayerNorm, normalized_shape=(3, 4), eps=1e-3), [rnd(2, 3, 4)])
    add("layer_norm_noaffine", "LayerNorm", {"normalized_shape": [6], "elementwise_affine": False},
        mk(nn.LayerNorm, normalized_shape=6, elementwise_affine=False), [rnd(2, 3, 6)])
    add("group_norm", "GroupNorm", {"num_groups": 2, "num_channels": 4}, mk(nn.GroupNorm, num_groups=2, num_channels=4),
        [rnd(2, 4, 3, 3)])
    add("group_norm_1d_noaffine", "GroupNorm", {"num_groups": 3, "num_channels": 6, "affine": False, "eps": 1e-3},
        mk(nn.GroupNorm, num_groups=3, num_channels=6, affine=False, eps=1e-3), [rnd(2, 6, 5)])
    add("instance_norm1d", "InstanceNorm1d", {"num_features": 3}, mk(nn.InstanceNorm1d, num_features=3),
        [rnd(2, 3, 6)])
    add("instance_norm1d_affine", "InstanceNorm1d", {"num_features": 3, "affine": True},
        mk(nn.InstanceNorm1d, num_features=3, affine=True), [rnd(2, 3, 6)])
    add("instance_norm2d", "InstanceNorm2d", {"num_features": 2}, mk(nn.InstanceNorm2d, num_features=2),
        [rnd(2, 2, 3, 4)])
    add("instance_norm2d_affine", "InstanceNorm2d", {"num_features": 2, "affine": True, "eps": 1e-3},
        mk(nn.InstanceNorm2d, num_features=2, affine=True, eps=1e-3), [rnd(2, 2, 4, 3)])
    add("rms_norm", "RmsNorm", {"normalized_shape": [6], "eps": 1e-6},
        lambda: RmsNorm([6], 1e-6), [rnd(3, 6)])
    add("rms_norm_default_eps", "RmsNorm", {"normalized_shape": [4]},
        lambda: RmsNorm([4], None), [rnd(2, 3, 4)])
    add("rms_norm_2d_noaffine", "RmsNorm", {"normalized_shape": [2, 3], "eps": 1e-5, "elementwise_affine": False},
        lambda: RmsNorm([2, 3], 1e-5, affine=False), [rnd(4, 2, 3)])


class RmsNorm(nn.Module):
    """torch.nn.RMSNorm (added in torch 2.4): x * rsqrt(mean(x^2 over the normalized dims) + eps)
    * weight; eps None means the float32 machine epsilon (the dtype ember computes in)."""

    def __init__(self, shape, eps, affine=True):
        super().__init__()
        self.shape = list(shape)
        self.eps = torch.finfo(torch.float32).eps if eps is None else eps
        self.weight = nn.Parameter(torch.ones(self.shape)) if affine else None

    def forward(self, x):
        dims = tuple(range(-len(self.shape), 0))
        y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + self.eps)
        return y * self.weight if self.weight is not None else y


def misc_cases():
    add("dropout_eval", "Dropout", {"p": 0.5}, mk(nn.Dropout, p=0.5), [rnd(3, 4)], training=False)
    add("dropout_p0_train", "Dropout", {"p": 0.0}, mk(nn.Dropout, p=0.0), [rnd(3, 4)], training=True)
    add("identity", "Identity", {}, mk(nn.Identity), [rnd(2, 3)])
    add("flatten", "Flatten", {}, mk(nn.Flatten), [rnd(2, 3, 2, 2)])
    add("flatten_range", "Flatten", {"start_dim": 0, "end_dim": 1}, mk(nn.Flatten, start_dim=0, end_dim=1),
        [rnd(2, 3, 4)])
    add("flatten_negative", "Flatten", {"start_dim": -2, "end_dim": -1}, mk(nn.Flatten, start_dim=-2, end_dim=-1),
        [rnd(2, 3, 2, 2)])
    add("pixel_shuffle", "PixelShuffle", {"upscale_factor": 2}, mk(nn.PixelShuffle, upscale_factor=2),
        [rnd(1, 8, 2, 3)])
    add("pixel_shuffle_3", "PixelShuffle", {"upscale_factor": 3}, mk(nn.PixelShuffle, upscale_factor=3),
        [rnd(2, 9, 1, 2)])
    add("pixel_unshuffle", "PixelUnshuffle", {"downscale_factor": 2}, mk(nn.PixelUnshuffle, downscale_factor=2),
        [rnd(1, 2, 4, 6)])
    add("upsample_nearest_scale", "Upsample", {"scale_factor": 2.0, "mode": "nearest"},
        mk(nn.Upsample, scale_factor=2.0, mode="nearest"), [rnd(1, 2, 3, 3)])
    add("upsample_nearest_size", "Upsample", {"size": [5, 7], "mode": "nearest"},
        mk(nn.Upsample, size=(5, 7), mode="nearest"), [rnd(1, 1, 3, 4)])
    add("upsample_bilinear", "Upsample", {"scale_factor": 2.0, "mode": "bilinear"},
        mk(nn.Upsample, scale_factor=2.0, mode="bilinear"), [rnd(1, 2, 3, 3)])
    add("upsample_bilinear_align", "Upsample", {"size": [4, 5], "mode": "bilinear", "align_corners": True},
        mk(nn.Upsample, size=(4, 5), mode="bilinear", align_corners=True), [rnd(2, 1, 3, 3)])
    add("upsample_bicubic", "Upsample", {"scale_factor": [2.0, 3.0], "mode": "bicubic"},
        mk(nn.Upsample, scale_factor=(2.0, 3.0), mode="bicubic"), [rnd(1, 1, 3, 3)])
    add("upsample_bicubic_align", "Upsample", {"size": [5, 4], "mode": "bicubic", "align_corners": True},
        mk(nn.Upsample, size=(5, 4), mode="bicubic", align_corners=True), [rnd(1, 2, 3, 3)])
    add("unflatten", "Unflatten", {"dim": 1, "unflattened_size": [2, 3]},
        mk(nn.Unflatten, dim=1, unflattened_size=(2, 3)), [rnd(2, 6, 2)])
    add("unflatten_infer", "Unflatten", {"dim": -1, "unflattened_size": [-1, 2]},
        mk(nn.Unflatten, dim=-1, unflattened_size=(-1, 2)), [rnd(3, 4)])
    add("upsample_linear_1d", "Upsample", {"scale_factor": 3.0, "mode": "linear"},
        mk(nn.Upsample, scale_factor=3.0, mode="linear"), [rnd(1, 2, 4)])


def activation_cases():
    K0 = (0.0,)
    acts = [
        ("relu", "Relu", {}, nn.ReLU, {}, K0),
        ("relu6", "Relu6", {}, nn.ReLU6, {}, (0.0, 6.0)),
        ("leaky_relu", "LeakyRelu", {}, nn.LeakyReLU, {}, K0),
        ("leaky_relu_slope", "LeakyRelu", {"negative_slope": 0.2}, nn.LeakyReLU, {"negative_slope": 0.2}, K0),
        ("gelu", "GELU", {}, nn.GELU, {}, ()),
        ("gelu_tanh", "GELU", {"approximate": "tanh"}, nn.GELU, {"approximate": "tanh"}, ()),
        ("silu", "SiLU", {}, nn.SiLU, {}, ()),
        ("mish", "Mish", {}, nn.Mish, {}, ()),
        ("elu", "ELU", {}, nn.ELU, {}, K0),
        ("elu_alpha", "ELU", {"alpha": 0.5}, nn.ELU, {"alpha": 0.5}, K0),
        ("selu", "SELU", {}, nn.SELU, {}, K0),
        ("celu", "CELU", {"alpha": 2.0}, nn.CELU, {"alpha": 2.0}, K0),
        ("softplus", "Softplus", {}, nn.Softplus, {}, ()),
        ("softplus_beta_threshold", "Softplus", {"beta": 2.0, "threshold": 1.5}, nn.Softplus,
         {"beta": 2.0, "threshold": 1.5}, (0.75,)),
        ("softsign", "Softsign", {}, nn.Softsign, {}, K0),
        ("tanh", "Tanh", {}, nn.Tanh, {}, ()),
        ("sigmoid", "Sigmoid", {}, nn.Sigmoid, {}, ()),
        ("hardsigmoid", "Hardsigmoid", {}, nn.Hardsigmoid, {}, (-3.0, 3.0)),
        ("hardswish", "Hardswish", {}, nn.Hardswish, {}, (-3.0, 3.0)),
        ("logsigmoid", "LogSigmoid", {}, nn.LogSigmoid, {}, ()),
        ("hardtanh", "Hardtanh", {"min_val": -2.0, "max_val": 1.5}, nn.Hardtanh, {"min_val": -2.0, "max_val": 1.5},
         (-2.0, 1.5)),
        ("tanhshrink", "Tanhshrink", {}, nn.Tanhshrink, {}, ()),
        ("softshrink", "Softshrink", {"lambd": 0.7}, nn.Softshrink, {"lambd": 0.7}, (-0.7, 0.7)),
        ("hardshrink", "Hardshrink", {}, nn.Hardshrink, {}, (-0.5, 0.5)),
        ("softmax", "Softmax", {"dim": -1}, nn.Softmax, {"dim": -1}, ()),
        ("softmax_dim0", "Softmax", {"dim": 0}, nn.Softmax, {"dim": 0}, ()),
        ("log_softmax", "LogSoftmax", {"dim": 1}, nn.LogSoftmax, {"dim": 1}, ()),
    ]
    for name, layer, cfg, cls, kw, kinks in acts:
        add(name, layer, cfg, (lambda c=cls, k=kw: c(**k)), [rnd(3, 4, scale=3.0, kinks=kinks)])
    add("prelu", "PReLU", {}, mk(nn.PReLU), [rnd(2, 3, 4, scale=2.0, kinks=K0)])
    add("prelu_channels", "PReLU", {"num_parameters": 3, "init": 0.1}, mk(nn.PReLU, num_parameters=3, init=0.1),
        [rnd(2, 3, 4, scale=2.0, kinks=K0)])
    add("glu", "GLU", {}, mk(nn.GLU), [rnd(3, 6, scale=2.0)])
    add("glu_dim0", "GLU", {"dim": 0}, mk(nn.GLU, dim=0), [rnd(4, 3, scale=2.0)])
    add("swiglu", "SwiGlu", {}, lambda: SwiGlu(-1), [rnd(3, 6, scale=2.0)])
    add("swiglu_dim1", "SwiGlu", {"dim": 1}, lambda: SwiGlu(1), [rnd(2, 4, 3, scale=2.0)])


class SwiGlu(nn.Module):
    """silu(a) * b where a, b are the halves of x along dim (Shazeer 2020, 'GLU variants')."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        a, b = x.chunk(2, dim=self.dim)
        return F.silu(a) * b


def sequential_cases():
    add("sequential_mlp", "Sequential",
        {"layers": [{"layer": "Linear", "config": {"in_features": 4, "out_features": 8}},
                    {"layer": "Relu", "config": {}},
                    {"layer": "Linear", "config": {"in_features": 8, "out_features": 3}}]},
        lambda: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)), [rnd(5, 4)])
    add("sequential_conv", "Sequential",
        {"layers": [{"layer": "Conv2d", "config": {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "padding": 1}},
                    {"layer": "BatchNorm2d", "config": {"num_features": 3}},
                    {"layer": "GELU", "config": {}},
                    {"layer": "MaxPool2d", "config": {"kernel_size": 2}},
                    {"layer": "Flatten", "config": {}},
                    {"layer": "Linear", "config": {"in_features": 12, "out_features": 2}}]},
        lambda: nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.GELU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(12, 2)), [rnd(2, 2, 4, 4)])


def main():
    os.makedirs(OUTDIR, exist_ok=True)
    for f in os.listdir(OUTDIR):
        if f.endswith(".pt") or f == "layers.json":
            os.remove(os.path.join(OUTDIR, f))
    # inputs are drawn when a case's arguments are built, before add() seeds the module: one
    # seed here makes the whole sequence deterministic
    torch.manual_seed(20240607)
    linear_cases()
    conv_cases()
    pool_cases()
    norm_cases()
    misc_cases()
    activation_cases()
    sequential_cases()
    for extra in EXTRA:
        extra()
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    doc = {"generator": "gen_layer_cases.py", "torch": torch.__version__, "cases": CASES}
    with open(os.path.join(OUTDIR, "layers.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    size = os.path.getsize(os.path.join(OUTDIR, "layers.json"))
    layers = sorted({c["layer"] for c in CASES})
    print(f"{len(CASES)} cases, {len(layers)} layer types; layers.json {size} bytes, .pt {STATS['pt_bytes']} bytes")


EXTRA = []  # attention/transformer/positional/feedforward/rnn cases (below)


def rnn_forward(m, x, *state):
    if isinstance(m, nn.LSTM):
        out, (h, c) = m(x, tuple(state) if state else None)
        return out, h, c
    out, h = m(x, state[0] if state else None)
    return out, h


def rnn_cases():
    kinds = [("rnn", "RNN", nn.RNN), ("lstm", "LSTM", nn.LSTM), ("gru", "GRU", nn.GRU)]
    for tag, layer, cls in kinds:
        n_state = 2 if cls is nn.LSTM else 1
        cfg = {"input_size": 3, "hidden_size": 4}
        add(tag, layer, cfg, lambda c=cls: c(3, 4), [rnd(5, 2, 3)], forward=rnn_forward)
        cfg = {"input_size": 3, "hidden_size": 4, "num_layers": 2, "batch_first": True}
        add(tag + "_2layer_batch_first_state", layer, cfg, lambda c=cls: c(3, 4, num_layers=2, batch_first=True),
            [rnd(2, 4, 3)] + [rnd(2, 2, 4, scale=0.5) for _ in range(n_state)], forward=rnn_forward)
        cfg = {"input_size": 2, "hidden_size": 3, "bidirectional": True}
        add(tag + "_bidirectional", layer, cfg, lambda c=cls: c(2, 3, bidirectional=True), [rnd(4, 2, 2)],
            forward=rnn_forward)
        cfg = {"input_size": 3, "hidden_size": 2, "num_layers": 2, "bidirectional": True, "bias": False}
        add(tag + "_bidirectional_2layer_nobias_state", layer, cfg,
            lambda c=cls: c(3, 2, num_layers=2, bidirectional=True, bias=False),
            [rnd(3, 2, 3)] + [rnd(4, 2, 2, scale=0.5) for _ in range(n_state)], forward=rnn_forward)
        cfg = {"input_size": 3, "hidden_size": 3}
        add(tag + "_unbatched", layer, cfg, lambda c=cls: c(3, 3), [rnd(4, 3)], forward=rnn_forward)
    add("rnn_relu", "RNN", {"input_size": 3, "hidden_size": 4, "nonlinearity": "relu"},
        lambda: nn.RNN(3, 4, nonlinearity="relu"), [rnd(4, 2, 3)], forward=rnn_forward)


EXTRA.append(rnn_cases)


# ---- attention and transformers ----
# Extra inputs after the data inputs are masks, named in call["masks"] (torch's argument names):
# bool masks (true = do not attend) or float masks (added to the scores). call["is_causal"]
# (and "tgt_is_causal") ask ember for causal attention; torch 1.13 has no such argument, so its
# reference gets the equivalent explicit mask.
def causal_mask(n, m=None):
    return torch.triu(torch.ones(n, m or n, dtype=torch.bool), 1)


def padding_mask(n, s):
    """[n, s] bool, the first key never masked (no row is fully masked)."""
    m = torch.rand(n, s) < 0.4
    m[:, 0] = False
    return m


def float_mask(*shape):
    m = rnd(*shape, digits=2, unique=False)
    m[..., 1::3] = float("-inf")
    m[..., 0] = 0.5
    return m


def mha_forward(call):
    def f(m, q, k, v, *masks):
        kw = dict(zip(call.get("masks", []), masks))
        if call.get("is_causal"):
            kw["attn_mask"] = causal_mask(q.shape[-3 if q.dim() == 3 and not m.batch_first else -2],
                                          k.shape[-3 if k.dim() == 3 and not m.batch_first else -2])
        need = call.get("need_weights", False)
        out, w = m(q, k, v, need_weights=need, average_attn_weights=call.get("average_attn_weights", True), **kw)
        return (out, w) if need else (out,)
    return f


def attention_cases():
    E, H = 8, 2
    no_grad_masks = lambda n_data, n_masks: [True] * n_data + [False] * n_masks
    add("mha_self_batch_first", "MultiheadAttention", {"embed_dim": E, "num_heads": H, "batch_first": True},
        mk(nn.MultiheadAttention, embed_dim=E, num_heads=H, batch_first=True),
        [rnd(2, 4, E), rnd(2, 4, E), rnd(2, 4, E)], forward=mha_forward({}), call={})
    call = {"need_weights": True}
    add("mha_cross_weights", "MultiheadAttention", {"embed_dim": E, "num_heads": H},
        mk(nn.MultiheadAttention, embed_dim=E, num_heads=H),
        [rnd(3, 2, E), rnd(5, 2, E), rnd(5, 2, E)], forward=mha_forward(call), call=call)
    call = {"need_weights": True, "average_attn_weights": False}
    add("mha_weights_per_head", "MultiheadAttention", {"embed_dim": E, "num_heads": 4, "batch_first": True},
        mk(nn.MultiheadAttention, embed_dim=E, num_heads=4, batch_first=True),
        [rnd(1, 3, E), rnd(1, 4, E), rnd(1, 4, E)], forward=mha_forward(call), call=call)
    call = {"masks": ["attn_mask"]}
    add("mha_bool_attn_mask", "MultiheadAttention", {"embed_dim": E, "num_heads": H, "batch_first": True},
        mk(nn.MultiheadAttention, embed_dim=E, num_heads=H, batch_first=True),
        [rnd(2, 4, E), rnd(2, 4, E), rnd(2, 4, E), causal_mask(4)], forward=mha_forward(call), call=call,
        grad_inputs=no_grad_masks(3, 1))
    call = {"masks": ["attn_mask"], "need_weights": True}
    add("mha_float_attn_mask", "MultiheadAttention", {"embed_dim": E, "num_heads": H},
        mk(nn.MultiheadAttention, embed_dim=E, num_heads=H),
        [rnd(3, 2, E), rnd(5, 2, E), rnd(5, 2, E), float_mask(3, 5)], forward=mha_forward(call), call=call,
        grad_inputs=no_grad_masks(3, 1))
    call = {"masks": ["attn_mask"]}
    add("mha_3d_attn_mask", "MultiheadAttention", {"embed_dim": E, "num_heads": H, "batch_first": True},
        mk(nn.MultiheadAttention, embed_dim=E, num_heads=H, batch_first=True),
        [rnd(2, 3, E), rnd(2, 4, E), rnd(2, 4, E), float_mask(2 * H, 3, 4)], forward=mha_forward(call),
        call=call, grad_inputs=no_grad_masks(3, 1))
    call = {"masks": ["key_padding_mask"], "need_weights": True}
    add("mha_key_padding_mask", "MultiheadAttention", {"embed_dim": E, "num_heads": H, "batch_first": True},
        mk(nn.MultiheadAttention, embed_dim=E, num_heads=H, batch_first=True),
        [rnd(3, 4, E), rnd(3, 5, E), rnd(3, 5, E), padding_mask(3, 5)], forward=mha_forward(call), call=call,
        grad_inputs=no_grad_masks(3, 1))
    call = {"masks": ["key_padding_mask"], "is_causal": True}
    add("mha_is_causal_padding", "MultiheadAttention", {"embed_dim": E, "num_heads": H},
        mk(nn.MultiheadAttention, embed_dim=E, num_heads=H),
        [rnd(4, 2, E), rnd(4, 2, E), rnd(4, 2, E), padding_mask(2, 4)], forward=mha_forward(call), call=call,
        grad_inputs=no_grad_masks(3, 1))
    add("mha_nobias", "MultiheadAttention", {"embed_dim": E, "num_heads": H, "bias": False},
        mk(nn.MultiheadAttention, embed_dim=E, num_heads=H, bias=False),
        [rnd(3, 2, E), rnd(3, 2, E), rnd(3, 2, E)], forward=mha_forward({}), call={})
    call = {"need_weights": True}
    add("mha_unbatched", "MultiheadAttention", {"embed_dim": E, "num_heads": H},
        mk(nn.MultiheadAttention, embed_dim=E, num_heads=H),
        [rnd(3, E), rnd(4, E), rnd(4, E)], forward=mha_forward(call), call=call)


ACT = {"relu": F.relu, "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu}


def layer_kw(cfg):
    kw = dict(cfg)
    kw["activation"] = ACT[kw.get("activation", "relu")]
    return kw


def masks_forward(kind, call):
    """forward(m, data..., masks...) of the transformer modules, masks named by call["masks"]."""
    n_data = 2 if "Decoder" in kind else 1

    def f(m, *xs):
        data, masks = xs[:n_data], xs[n_data:]
        kw = dict(zip(call.get("masks", []), masks))
        bf = (m.self_attn if hasattr(m, "self_attn") else m.layers[0].self_attn).batch_first
        seq = lambda t: t.shape[1 if bf and t.dim() == 3 else 0]
        if call.get("is_causal"):
            L = seq(data[0])
            kw["src_mask"] = torch.zeros(L, L, dtype=torch.float64).masked_fill(causal_mask(L), float("-inf"))
        if call.get("tgt_is_causal"):
            T = seq(data[0])
            kw["tgt_mask"] = torch.zeros(T, T, dtype=torch.float64).masked_fill(causal_mask(T), float("-inf"))
        if kind == "TransformerEncoder" and "src_mask" in kw:
            kw["mask"] = kw.pop("src_mask")
        return (m(*data, **kw),)
    return f


def transformer_cases():
    base = {"d_model": 8, "nhead": 2, "dim_feedforward": 16, "dropout": 0.0}
    S = 3  # tolerance scale of the deep blocks
    enc = [
        ("transformer_encoder_layer", dict(base), {}, lambda: [rnd(4, 2, 8)], False),
        ("transformer_encoder_layer_eval_dropout_gelu_batch_first",
         dict(base, dropout=0.1, activation="gelu", batch_first=True), {}, lambda: [rnd(2, 4, 8)], False),
        ("transformer_encoder_layer_norm_first_masks", dict(base, norm_first=True, layer_norm_eps=1e-4),
         {"masks": ["src_mask", "src_key_padding_mask"]},
         lambda: [rnd(4, 3, 8), float_mask(4, 4), padding_mask(3, 4)], True),
        ("transformer_encoder_layer_is_causal_silu", dict(base, activation="silu", batch_first=True),
         {"is_causal": True}, lambda: [rnd(2, 5, 8)], False),
    ]
    for name, cfg, call, mkin, has_masks in enc:
        seed_for(name + "/inputs")
        ins = mkin()
        add(name, "TransformerEncoderLayer", cfg, lambda c=cfg: nn.TransformerEncoderLayer(**layer_kw(c)), ins,
            forward=masks_forward("TransformerEncoderLayer", call), call=call, scale=S,
            grad_inputs=[True] + [False] * (len(ins) - 1))
    dec = [
        ("transformer_decoder_layer", dict(base), {}, lambda: [rnd(3, 2, 8), rnd(4, 2, 8)]),
        ("transformer_decoder_layer_norm_first_batch_first", dict(base, norm_first=True, batch_first=True,
                                                                  activation="gelu_tanh"), {},
         lambda: [rnd(2, 3, 8), rnd(2, 5, 8)]),
        ("transformer_decoder_layer_masks", dict(base, dropout=0.2),
         {"masks": ["tgt_mask", "memory_mask", "tgt_key_padding_mask", "memory_key_padding_mask"]},
         lambda: [rnd(3, 2, 8), rnd(4, 2, 8), causal_mask(3), float_mask(3, 4), padding_mask(2, 3),
                  padding_mask(2, 4)]),
        ("transformer_decoder_layer_tgt_is_causal", dict(base, batch_first=True), {"tgt_is_causal": True},
         lambda: [rnd(2, 4, 8), rnd(2, 3, 8)]),
    ]
    for name, cfg, call, mkin in dec:
        seed_for(name + "/inputs")
        ins = mkin()
        add(name, "TransformerDecoderLayer", cfg, lambda c=cfg: nn.TransformerDecoderLayer(**layer_kw(c)), ins,
            forward=masks_forward("TransformerDecoderLayer", call), call=call, scale=S,
            grad_inputs=[True, True] + [False] * (len(ins) - 2))

    def encoder(cfg, n, norm):
        return nn.TransformerEncoder(nn.TransformerEncoderLayer(**layer_kw(cfg)), n,
                                     norm=nn.LayerNorm(cfg["d_model"], eps=cfg.get("layer_norm_eps", 1e-5)) if norm
                                     else None, enable_nested_tensor=False)

    def decoder(cfg, n, norm):
        return nn.TransformerDecoder(nn.TransformerDecoderLayer(**layer_kw(cfg)), n,
                                     norm=nn.LayerNorm(cfg["d_model"], eps=cfg.get("layer_norm_eps", 1e-5)) if norm
                                     else None)

    seed_for("transformer_encoder/inputs")
    cfg = dict(base)
    add("transformer_encoder", "TransformerEncoder", {"encoder_layer": cfg, "num_layers": 2},
        lambda: encoder(cfg, 2, False), [rnd(4, 2, 8)], forward=masks_forward("TransformerEncoder", {}), call={},
        perturb=True, scale=S)
    cfg2 = dict(base, batch_first=True, norm_first=True)
    call = {"masks": ["src_key_padding_mask"]}
    add("transformer_encoder_norm_first_final_norm_padding", "TransformerEncoder",
        {"encoder_layer": cfg2, "num_layers": 2, "norm": True}, lambda: encoder(cfg2, 2, True),
        [rnd(3, 4, 8), padding_mask(3, 4)], forward=masks_forward("TransformerEncoder", call), call=call,
        perturb=True, scale=S, grad_inputs=[True, False])
    call = {"is_causal": True}
    add("transformer_encoder_is_causal", "TransformerEncoder",
        {"encoder_layer": dict(base, activation="gelu"), "num_layers": 3, "norm": True},
        lambda: encoder(dict(base, activation="gelu"), 3, True), [rnd(5, 1, 8)],
        forward=masks_forward("TransformerEncoder", call), call=call, perturb=True, scale=S)
    add("transformer_decoder", "TransformerDecoder", {"decoder_layer": cfg, "num_layers": 2},
        lambda: decoder(cfg, 2, False), [rnd(3, 2, 8), rnd(4, 2, 8)],
        forward=masks_forward("TransformerDecoder", {}), call={}, perturb=True, scale=S)
    call = {"masks": ["memory_key_padding_mask"], "tgt_is_causal": True}
    add("transformer_decoder_final_norm_causal_padding", "TransformerDecoder",
        {"decoder_layer": cfg2, "num_layers": 2, "norm": True}, lambda: decoder(cfg2, 2, True),
        [rnd(2, 3, 8), rnd(2, 4, 8), padding_mask(2, 4)], forward=masks_forward("TransformerDecoder", call),
        call=call, perturb=True, scale=S, grad_inputs=[True, True, False])


class PositionalEncoding(nn.Module):
    """The sinusoidal table of 'Attention Is All You Need' added to the input, as the PyTorch
    tutorial's module: buffer pe [max_len, 1, d_model]; computed here in float64."""

    def __init__(self, d_model, max_len, batch_first=False):
        super().__init__()
        pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
        i2 = torch.arange(0, d_model, 2, dtype=torch.float64)
        angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), i2 / d_model)
        pe = torch.zeros(max_len, 1, d_model, dtype=torch.float64)
        pe[:, 0, 0::2] = torch.sin(angle)
        pe[:, 0, 1::2] = torch.cos(angle)
        self.register_buffer("pe", pe.float())
        self.pe64 = pe
        self.batch_first = batch_first

    def forward(self, x):
        pe = self.pe64.to(x.dtype)
        if x.dim() == 2:
            return x + pe[: x.shape[0], 0]
        if self.batch_first:
            return x + pe[: x.shape[1]].transpose(0, 1)
        return x + pe[: x.shape[0]]


class RotaryEncoding(nn.Module):
    """RoPE: the pair (a, b) of feature pair i at position p turns by p * theta^(-2i/d)."""

    def __init__(self, d, theta, interleaved, start):
        super().__init__()
        self.d, self.theta, self.interleaved, self.start = d, theta, interleaved, start

    def forward(self, x):
        L = x.shape[-2]
        pos = torch.arange(self.start, self.start + L, dtype=torch.float64).unsqueeze(1)
        inv = torch.pow(torch.tensor(self.theta, dtype=torch.float64),
                        -torch.arange(0, self.d, 2, dtype=torch.float64) / self.d)
        ang = pos * inv  # [L, d/2]
        c, s = torch.cos(ang).to(x.dtype), torch.sin(ang).to(x.dtype)
        if self.interleaved:
            a, b = x[..., 0::2], x[..., 1::2]
            return torch.stack([a * c - b * s, a * s + b * c], dim=-1).flatten(-2)
        a, b = x[..., : self.d // 2], x[..., self.d // 2:]
        return torch.cat([a * c - b * s, a * s + b * c], dim=-1)


class FeedForward(nn.Module):
    """linear_inner -> activation -> dropout -> linear_outer (Burn's PositionWiseFeedForward)."""

    def __init__(self, d_model, d_ff, activation, bias=True):
        super().__init__()
        self.linear_inner = nn.Linear(d_model, d_ff, bias=bias)
        self.linear_outer = nn.Linear(d_ff, d_model, bias=bias)
        self.act = ACT[activation]

    def forward(self, x):
        return self.linear_outer(self.act(self.linear_inner(x)))


def positional_cases():
    add("positional_encoding", "PositionalEncoding", {"d_model": 6, "max_len": 16, "dropout": 0.1},
        lambda: PositionalEncoding(6, 16), [rnd(5, 2, 6)], randomize_params=False)
    add("positional_encoding_batch_first", "PositionalEncoding",
        {"d_model": 4, "max_len": 8, "dropout": 0.0, "batch_first": True},
        lambda: PositionalEncoding(4, 8, True), [rnd(2, 8, 4)], randomize_params=False)
    # ember's own table (no checkpoint loaded) against the float64 formula, at positions up to 63
    add("positional_encoding_table", "PositionalEncoding", {"d_model": 10, "max_len": 64, "dropout": 0.0},
        lambda: PositionalEncoding(10, 64), [rnd(64, 10)], randomize_params=False, load=False)
    rope = [
        ("rotary_encoding", {"d_model": 8, "max_len": 16}, 10000.0, True, 0, (2, 5, 8)),
        ("rotary_encoding_half", {"d_model": 8, "max_len": 16, "interleaved": False}, 10000.0, False, 0, (2, 2, 4, 8)),
        ("rotary_encoding_start", {"d_model": 4, "max_len": 32, "theta": 500.0}, 500.0, True, 7, (3, 4)),
        ("rotary_encoding_half_start", {"d_model": 6, "max_len": 64, "interleaved": False}, 10000.0, False, 50,
         (1, 3, 6)),
    ]
    for name, cfg, theta, inter, start, shape in rope:
        call = {"start": start} if start else {}
        add(name, "RotaryEncoding", cfg, lambda d=cfg["d_model"], t=theta, i=inter, st=start: RotaryEncoding(d, t, i, st),
            [rnd(*shape)], call=call)
    for act in ("gelu", "relu", "gelu_tanh", "silu"):
        cfg = {"d_model": 4, "d_ff": 6, "dropout": 0.1, "activation": act}
        add(f"feed_forward_{act}", "PositionWiseFeedForward", cfg, lambda a=act: FeedForward(4, 6, a), [rnd(2, 3, 4)])
    cfg = {"d_model": 3, "d_ff": 5, "dropout": 0.0, "bias": False}
    add("feed_forward_nobias", "PositionWiseFeedForward", cfg, lambda: FeedForward(3, 5, "gelu", bias=False),
        [rnd(4, 3)])


EXTRA += [attention_cases, transformer_cases, positional_cases]


# ---- edge cases: numerics, sizes that cross SIMD widths, padding and empty batches ----
def const(rows):
    return torch.tensor(rows, dtype=torch.float32)


def edge_cases():
    add("linear_wide", "Linear", {"in_features": 33, "out_features": 70}, mk(nn.Linear, in_features=33, out_features=70),
        [rnd(9, 33)])
    add("linear_empty_batch", "Linear", {"in_features": 5, "out_features": 3},
        mk(nn.Linear, in_features=5, out_features=3), [torch.zeros(0, 5)])
    add("conv2d_wide", "Conv2d", {"in_channels": 16, "out_channels": 20, "kernel_size": 3, "padding": 1},
        mk(nn.Conv2d, in_channels=16, out_channels=20, kernel_size=3, padding=1), [rnd(1, 16, 7, 9)], scale=2.0)
    add("conv1d_unbatched", "Conv1d", {"in_channels": 2, "out_channels": 3, "kernel_size": 2},
        mk(nn.Conv1d, in_channels=2, out_channels=3, kernel_size=2), [rnd(2, 5)])
    add("conv_transpose1d_dilation_groups", "ConvTranspose1d",
        {"in_channels": 4, "out_channels": 6, "kernel_size": 3, "stride": 3, "padding": 2, "dilation": 2,
         "groups": 2, "output_padding": 1},
        mk(nn.ConvTranspose1d, in_channels=4, out_channels=6, kernel_size=3, stride=3, padding=2, dilation=2,
           groups=2, output_padding=1), [rnd(2, 4, 4)])
    idx = torch.tensor([[0, 3, 9, 3], [7, 9, 0, 5]])
    add("embedding_negative_padding_idx", "Embedding", {"num_embeddings": 10, "embedding_dim": 3, "padding_idx": -1},
        mk(nn.Embedding, num_embeddings=10, embedding_dim=3, padding_idx=-1), [idx])
    add("embedding_max_norm", "Embedding", {"num_embeddings": 10, "embedding_dim": 4, "max_norm": 1.5},
        mk(nn.Embedding, num_embeddings=10, embedding_dim=4, max_norm=1.5), [idx])
    add("embedding_max_norm_p1", "Embedding",
        {"num_embeddings": 10, "embedding_dim": 4, "max_norm": 2.0, "norm_type": 1.0},
        mk(nn.Embedding, num_embeddings=10, embedding_dim=4, max_norm=2.0, norm_type=1.0), [idx])
    neg = -(rnd(1, 2, 5, 5).abs()) - 1.0
    add("max_pool2d_negative_padded", "MaxPool2d", {"kernel_size": 3, "stride": 2, "padding": 1},
        mk(nn.MaxPool2d, kernel_size=3, stride=2, padding=1), [neg])
    add("max_pool1d_indices", "MaxPool1d", {"kernel_size": 3, "stride": 2, "padding": 1, "return_indices": True},
        mk(nn.MaxPool1d, kernel_size=3, stride=2, padding=1, return_indices=True), [rnd(2, 2, 7)])
    add("avg_pool2d_ceil_pad_include", "AvgPool2d", {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
        mk(nn.AvgPool2d, kernel_size=3, stride=2, padding=1, ceil_mode=True), [rnd(1, 2, 6, 6)])
    add("avg_pool1d_ceil_pad_include", "AvgPool1d", {"kernel_size": 4, "stride": 3, "padding": 2, "ceil_mode": True},
        mk(nn.AvgPool1d, kernel_size=4, stride=3, padding=2, ceil_mode=True), [rnd(1, 2, 8)])
    add("adaptive_avg_pool2d_none", "AdaptiveAvgPool2d", {"output_size": [None, 3]},
        mk(nn.AdaptiveAvgPool2d, output_size=(None, 3)), [rnd(1, 2, 3, 5)])
    add("adaptive_avg_pool1d_upsampling", "AdaptiveAvgPool1d", {"output_size": 5},
        mk(nn.AdaptiveAvgPool1d, output_size=5), [rnd(1, 2, 3)])
    add("upsample_nearest_fractional", "Upsample",
        {"scale_factor": 1.5, "mode": "nearest", "recompute_scale_factor": True},
        mk(nn.Upsample, scale_factor=1.5, mode="nearest", recompute_scale_factor=True), [rnd(1, 1, 5, 3)])
    add("upsample_bilinear_fractional", "Upsample",
        {"scale_factor": [1.5, 0.75], "mode": "bilinear", "recompute_scale_factor": True},
        mk(nn.Upsample, scale_factor=(1.5, 0.75), mode="bilinear", recompute_scale_factor=True), [rnd(1, 2, 5, 6)])
    add("upsample_nearest_1d", "Upsample", {"size": 7, "mode": "nearest"}, mk(nn.Upsample, size=7, mode="nearest"),
        [rnd(2, 1, 3)])
    add("upsample_nearest_3d", "Upsample", {"scale_factor": 2.0, "mode": "nearest"},
        mk(nn.Upsample, scale_factor=2.0, mode="nearest"), [rnd(1, 1, 2, 2, 3)])
    # normalisation of values far from zero: a one-pass E[x^2] - E[x]^2 variance fails these
    off = lambda *shape: rnd(*shape) + 300.0
    add("layer_norm_large_offset", "LayerNorm", {"normalized_shape": [16]}, mk(nn.LayerNorm, normalized_shape=16),
        [off(3, 16)], scale=3.0)
    add("batch_norm1d_large_offset_train", "BatchNorm1d", {"num_features": 2}, mk(nn.BatchNorm1d, num_features=2),
        [off(16, 2)], training=True, scale=3.0)
    add("group_norm_large_offset", "GroupNorm", {"num_groups": 2, "num_channels": 4},
        mk(nn.GroupNorm, num_groups=2, num_channels=4), [off(2, 4, 3, 3)], scale=3.0)
    add("instance_norm2d_unbatched", "InstanceNorm2d", {"num_features": 2, "affine": True},
        mk(nn.InstanceNorm2d, num_features=2, affine=True), [rnd(2, 3, 3)])
    add("group_norm_one_group", "GroupNorm", {"num_groups": 1, "num_channels": 3},
        mk(nn.GroupNorm, num_groups=1, num_channels=3), [rnd(2, 3, 4)])
    add("group_norm_per_channel", "GroupNorm", {"num_groups": 3, "num_channels": 3},
        mk(nn.GroupNorm, num_groups=3, num_channels=3), [rnd(2, 3, 2, 2)])
    add("dropout_p1_train", "Dropout", {"p": 1.0}, mk(nn.Dropout, p=1.0), [rnd(3, 4)], training=True)
    # saturated activations: naive formulas overflow to inf/NaN here
    big = const([[-100.0, -30.0, -5.0, 0.5], [5.0, 30.0, 88.5, 100.0]])
    for name, layer, cfg, cls in [
        ("sigmoid_extreme", "Sigmoid", {}, nn.Sigmoid), ("logsigmoid_extreme", "LogSigmoid", {}, nn.LogSigmoid),
        ("softplus_extreme", "Softplus", {}, nn.Softplus), ("silu_extreme", "SiLU", {}, nn.SiLU),
        ("mish_extreme", "Mish", {}, nn.Mish), ("tanh_extreme", "Tanh", {}, nn.Tanh),
        ("elu_extreme", "ELU", {}, nn.ELU), ("selu_extreme", "SELU", {}, nn.SELU),
        ("gelu_extreme", "GELU", {}, nn.GELU), ("gelu_tanh_extreme", "GELU", {"approximate": "tanh"}, None),
        ("softsign_extreme", "Softsign", {}, nn.Softsign), ("glu_extreme", "GLU", {}, nn.GLU),
        ("swiglu_extreme", "SwiGlu", {}, None), ("hardswish_extreme", "Hardswish", {}, nn.Hardswish),
    ]:
        build = (lambda c=cls: c()) if cls else (
            (lambda: nn.GELU(approximate="tanh")) if layer == "GELU" else (lambda: SwiGlu(-1)))
        add(name, layer, cfg, build, [big.clone()])
    logits = const([[1000.0, 0.0, -1000.0, 999.0], [-50.0, -60.0, -55.0, -80.0]])
    add("softmax_extreme", "Softmax", {"dim": -1}, mk(nn.Softmax, dim=-1), [logits])
    add("log_softmax_extreme", "LogSoftmax", {"dim": -1}, mk(nn.LogSoftmax, dim=-1), [logits])
    add("softmax_3d_dim1", "Softmax", {"dim": 1}, mk(nn.Softmax, dim=1), [rnd(2, 3, 4)])
    add("flatten_1d", "Flatten", {"start_dim": 0}, mk(nn.Flatten, start_dim=0), [rnd(5)])
    # recurrent: inter-layer dropout is off in eval mode; an unbatched input with a state
    for tag, layer, cls in [("lstm", "LSTM", nn.LSTM), ("gru", "GRU", nn.GRU)]:
        add(f"{tag}_dropout_eval", layer, {"input_size": 2, "hidden_size": 3, "num_layers": 2, "dropout": 0.5},
            lambda c=cls: c(2, 3, num_layers=2, dropout=0.5), [rnd(3, 2, 2)], forward=rnn_forward)
    add("rnn_unbatched_state_bidirectional", "RNN", {"input_size": 2, "hidden_size": 3, "bidirectional": True},
        lambda: nn.RNN(2, 3, bidirectional=True), [rnd(4, 2), rnd(2, 3, scale=0.5)], forward=rnn_forward)
    add("lstm_unbatched_state", "LSTM", {"input_size": 2, "hidden_size": 3, "num_layers": 2},
        lambda: nn.LSTM(2, 3, num_layers=2), [rnd(4, 2), rnd(2, 3, scale=0.5), rnd(2, 3, scale=0.5)],
        forward=rnn_forward)
    add("gru_long_sequence", "GRU", {"input_size": 3, "hidden_size": 5, "batch_first": True},
        lambda: nn.GRU(3, 5, batch_first=True), [rnd(2, 24, 3)], forward=rnn_forward, scale=2.0)
    # attention: both masks with weights, a 3-d bool mask, eval-mode dropout, a longer sequence
    E = 8
    call = {"masks": ["attn_mask", "key_padding_mask"], "need_weights": True}
    add("mha_both_masks_weights", "MultiheadAttention", {"embed_dim": E, "num_heads": 2, "batch_first": True},
        mk(nn.MultiheadAttention, embed_dim=E, num_heads=2, batch_first=True),
        [rnd(2, 4, E), rnd(2, 4, E), rnd(2, 4, E), causal_mask(4), padding_mask(2, 4)],
        forward=mha_forward(call), call=call, grad_inputs=[True] * 3 + [False] * 2)
    m3 = torch.rand(2 * 2, 3, 5) < 0.3
    m3[..., 0] = False
    call = {"masks": ["attn_mask"]}
    add("mha_3d_bool_mask_eval_dropout", "MultiheadAttention",
        {"embed_dim": E, "num_heads": 2, "dropout": 0.3}, mk(nn.MultiheadAttention, embed_dim=E, num_heads=2, dropout=0.3),
        [rnd(3, 2, E), rnd(5, 2, E), rnd(5, 2, E), m3], forward=mha_forward(call), call=call,
        grad_inputs=[True] * 3 + [False])
    add("mha_long_sequence", "MultiheadAttention", {"embed_dim": 16, "num_heads": 4, "batch_first": True},
        mk(nn.MultiheadAttention, embed_dim=16, num_heads=4, batch_first=True),
        [rnd(1, 40, 16), rnd(1, 40, 16), rnd(1, 40, 16)], forward=mha_forward({}), call={}, scale=2.0)
    add("transformer_encoder_layer_unbatched", "TransformerEncoderLayer",
        {"d_model": 8, "nhead": 2, "dim_feedforward": 16, "dropout": 0.0},
        lambda: nn.TransformerEncoderLayer(8, 2, 16, 0.0), [rnd(3, 8)],
        forward=masks_forward("TransformerEncoderLayer", {}), call={}, scale=3.0)
    add("positional_encoding_unbatched", "PositionalEncoding", {"d_model": 4, "max_len": 8, "dropout": 0.0},
        lambda: PositionalEncoding(4, 8), [rnd(6, 4)], randomize_params=False)
    # Sequential in training mode: the BatchNorm inside updates its running statistics
    add("sequential_train_batchnorm", "Sequential",
        {"layers": [{"layer": "Linear", "config": {"in_features": 3, "out_features": 4}},
                    {"layer": "BatchNorm1d", "config": {"num_features": 4}},
                    {"layer": "Dropout", "config": {"p": 0.0}},
                    {"layer": "SiLU", "config": {}},
                    {"layer": "Linear", "config": {"in_features": 4, "out_features": 2, "bias": False}}]},
        lambda: nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Dropout(0.0), nn.SiLU(),
                              nn.Linear(4, 2, bias=False)), [rnd(6, 3)], training=True)
    add("sequential_nested", "Sequential",
        {"layers": [{"layer": "Sequential", "config": {"layers": [
            {"layer": "Linear", "config": {"in_features": 2, "out_features": 3}},
            {"layer": "Tanh", "config": {}}]}},
            {"layer": "LayerNorm", "config": {"normalized_shape": [3]}},
            {"layer": "Linear", "config": {"in_features": 3, "out_features": 2}}]},
        lambda: nn.Sequential(nn.Sequential(nn.Linear(2, 3), nn.Tanh()), nn.LayerNorm(3), nn.Linear(3, 2)),
        [rnd(4, 2)])


EXTRA.append(edge_cases)


if __name__ == "__main__":
    main()
