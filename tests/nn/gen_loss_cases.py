#!/usr/bin/env python3
"""Reference cases for ember's nn losses (src/nn/loss.cpp) and functional ops (src/nn/functional.cpp).

Run with Debian's python3-torch (1.13.x):   /usr/bin/python3 gen_loss_cases.py
Writes cases/losses.json next to this file (any cwd). Deterministic: one fixed seed, one thread.

Each case: {"name", "fn", "kind": "loss" | "functional", "attrs", "inputs": {name: tensor},
"grad": [names of the inputs differentiated], "outputs": [tensor...], "upstream": tensor,
"grads": {name: tensor}}. Every value comes from torch run in float64 on the exact inputs written.
The gradients are those of L = sum(outputs[0] * upstream) (upstream random, of outputs[0]'s
shape, also for scalar losses) by torch autograd. Tensors are {"dtype", "shape", "data"} with
"inf" / "-inf" / "nan" strings for non-finite values.

CTC: torch's ctc_loss backward returns the gradient with respect to the logits of a log_softmax
(it adds exp(log_probs), which log_softmax's backward cancels), not the true gradient with
respect to log_probs. So CTC cases differentiate logits: the runner applies log_softmax(logits, -1)
before calling ctc_loss, as here.
"""
import json
import math
import os
import warnings

import torch
import torch.nn.functional as F

torch.set_num_threads(1)
warnings.filterwarnings("ignore", category=UserWarning)  # kl_div's note on reduction='mean'
torch.manual_seed(1234)

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "cases", "losses.json")
F64 = torch.float64

NAMES = {torch.float64: "f64", torch.int64: "i64", torch.bool: "bool"}


def num(v):
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def enc(t):
    t = t.detach()
    if t.dtype == torch.float32:
        t = t.double()
    return {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data": [num(v) for v in t.reshape(-1).tolist()]}


def randn(*shape, scale=1.0):
    return torch.randn(*shape, dtype=F64) * scale


def rand(*shape, low=0.0, high=1.0):
    return torch.rand(*shape, dtype=F64) * (high - low) + low


def randint(low, high, shape):
    return torch.randint(low, high, shape, dtype=torch.int64)


def sign_targets(*shape):  # y in {1, -1}, as float
    return torch.randint(0, 2, shape).double() * 2 - 1


CASES = []


def case(name, fn, kind, f, inputs, grad=(), attrs=None):
    """f(**inputs) -> tensor or tuple of tensors; gradients for the inputs named in grad."""
    leaves = {}
    for k, v in inputs.items():
        leaves[k] = v.clone().requires_grad_(k in grad)
    out = f(**leaves)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    up = torch.randn(outs[0].shape, dtype=F64)
    entry = {"name": name, "fn": fn, "kind": kind, "attrs": attrs or {},
             "inputs": {k: enc(v) for k, v in inputs.items()}, "grad": list(grad),
             "outputs": [enc(o) for o in outs], "upstream": enc(up), "grads": {}}
    if grad:
        gs = torch.autograd.grad((outs[0] * up).sum(), [leaves[k] for k in grad])
        for k, g in zip(grad, gs):
            entry["grads"][k] = enc(g)
    CASES.append(entry)


def loss(name, fn, f, inputs, grad=("input",), attrs=None):
    case(name, fn, "loss", f, inputs, grad, attrs)


def functional(name, fn, f, inputs, grad=("x",), attrs=None):
    case(name, fn, "functional", f, inputs, grad, attrs)


REDUCTIONS = ["mean", "sum", "none"]

# ----------------------------------------------------------------------------- losses
N, C = 5, 4

# cross_entropy / nll_loss with class indices
for red in REDUCTIONS:
    x, t, w = randn(N, C, scale=2), randint(0, C, (N,)), rand(C, low=0.2, high=2)
    a = {"reduction": red}
    loss(f"cross_entropy/{red}", "cross_entropy", lambda input, target: F.cross_entropy(input, target, reduction=red),
         {"input": x, "target": t}, attrs=a)
    loss(f"cross_entropy/weight/{red}", "cross_entropy",
         lambda input, target, weight: F.cross_entropy(input, target, weight=weight, reduction=red),
         {"input": x, "target": t, "weight": w}, attrs=a)
    ti = t.clone()
    ti[1] = -100
    ti[3] = -100
    loss(f"cross_entropy/ignore/{red}", "cross_entropy",
         lambda input, target: F.cross_entropy(input, target, reduction=red), {"input": x, "target": ti}, attrs=a)
    loss(f"cross_entropy/weight_ignore/{red}", "cross_entropy",
         lambda input, target, weight: F.cross_entropy(input, target, weight=weight, reduction=red),
         {"input": x, "target": ti, "weight": w}, attrs=a)
    a2 = {"reduction": red, "ignore_index": 2}
    loss(f"cross_entropy/ignore_index2/{red}", "cross_entropy",
         lambda input, target: F.cross_entropy(input, target, ignore_index=2, reduction=red),
         {"input": x, "target": t}, attrs=a2)
    a3 = {"reduction": red, "label_smoothing": 0.15}
    loss(f"cross_entropy/smoothing/{red}", "cross_entropy",
         lambda input, target: F.cross_entropy(input, target, label_smoothing=0.15, reduction=red),
         {"input": x, "target": t}, attrs=a3)
    loss(f"cross_entropy/smoothing_weight_ignore/{red}", "cross_entropy",
         lambda input, target, weight: F.cross_entropy(input, target, weight=weight, label_smoothing=0.15,
                                                       reduction=red),
         {"input": x, "target": ti, "weight": w}, attrs=a3)
    p = torch.softmax(randn(N, C), 1)
    loss(f"cross_entropy/probs/{red}", "cross_entropy",
         lambda input, target: F.cross_entropy(input, target, reduction=red), {"input": x, "target": p}, attrs=a)
    loss(f"cross_entropy/probs_weight_smoothing/{red}", "cross_entropy",
         lambda input, target, weight: F.cross_entropy(input, target, weight=weight, label_smoothing=0.2,
                                                       reduction=red),
         {"input": x, "target": p, "weight": w}, attrs={"reduction": red, "label_smoothing": 0.2})
    # K-dimensional: [N, C, d1, d2]
    xk, tk = randn(3, C, 2, 3), randint(0, C, (3, 2, 3))
    tk[0, 1, 2] = -100
    tk[2, 0, 0] = -100
    loss(f"cross_entropy/kdim_weight_ignore/{red}", "cross_entropy",
         lambda input, target, weight: F.cross_entropy(input, target, weight=weight, reduction=red),
         {"input": xk, "target": tk, "weight": w}, attrs=a)
    loss(f"cross_entropy/kdim_smoothing/{red}", "cross_entropy",
         lambda input, target: F.cross_entropy(input, target, label_smoothing=0.1, reduction=red),
         {"input": xk, "target": tk}, attrs={"reduction": red, "label_smoothing": 0.1})
    loss(f"cross_entropy/unbatched/{red}", "cross_entropy",
         lambda input, target: F.cross_entropy(input, target, label_smoothing=0.1, reduction=red),
         {"input": randn(C), "target": torch.tensor(2)}, attrs={"reduction": red, "label_smoothing": 0.1})
    loss(f"cross_entropy/unbatched_probs/{red}", "cross_entropy",
         lambda input, target: F.cross_entropy(input, target, reduction=red),
         {"input": randn(C), "target": torch.softmax(randn(C), 0)}, attrs=a)

    lp = torch.log_softmax(randn(N, C), 1)
    loss(f"nll_loss/{red}", "nll_loss", lambda input, target: F.nll_loss(input, target, reduction=red),
         {"input": lp, "target": t}, attrs=a)
    loss(f"nll_loss/weight_ignore/{red}", "nll_loss",
         lambda input, target, weight: F.nll_loss(input, target, weight=weight, reduction=red),
         {"input": lp, "target": ti, "weight": w}, attrs=a)
    loss(f"nll_loss/ignore_index1/{red}", "nll_loss",
         lambda input, target: F.nll_loss(input, target, ignore_index=1, reduction=red),
         {"input": lp, "target": t}, attrs={"reduction": red, "ignore_index": 1})
    loss(f"nll_loss/kdim_weight/{red}", "nll_loss",
         lambda input, target, weight: F.nll_loss(input, target, weight=weight, reduction=red),
         {"input": torch.log_softmax(xk, 1), "target": tk, "weight": w}, attrs=a)

# binary cross entropy
for red in REDUCTIONS:
    a = {"reduction": red}
    p, t, w = rand(3, 4, low=0.02, high=0.98), rand(3, 4), rand(3, 4, low=0.5, high=1.5)
    loss(f"binary_cross_entropy/{red}", "binary_cross_entropy",
         lambda input, target: F.binary_cross_entropy(input, target, reduction=red),
         {"input": p, "target": t}, attrs=a)
    loss(f"binary_cross_entropy/weight/{red}", "binary_cross_entropy",
         lambda input, target, weight: F.binary_cross_entropy(input, target, weight=weight, reduction=red),
         {"input": p, "target": t, "weight": w}, attrs=a)
    x = randn(3, 4, scale=3)
    x[0, 0], x[1, 1] = 60.0, -60.0  # stable form
    tb = torch.randint(0, 2, (3, 4)).double()
    pw = rand(4, low=0.5, high=3)
    loss(f"bce_with_logits/{red}", "binary_cross_entropy_with_logits",
         lambda input, target: F.binary_cross_entropy_with_logits(input, target, reduction=red),
         {"input": x, "target": t}, attrs=a)
    loss(f"bce_with_logits/pos_weight/{red}", "binary_cross_entropy_with_logits",
         lambda input, target, pos_weight: F.binary_cross_entropy_with_logits(input, target, pos_weight=pos_weight,
                                                                              reduction=red),
         {"input": x, "target": tb, "pos_weight": pw}, attrs=a)
    loss(f"bce_with_logits/weight_pos_weight/{red}", "binary_cross_entropy_with_logits",
         lambda input, target, weight, pos_weight: F.binary_cross_entropy_with_logits(
             input, target, weight=weight, pos_weight=pos_weight, reduction=red),
         {"input": x, "target": t, "weight": w, "pos_weight": pw}, attrs=a)
# probabilities exactly 0 and 1: the logs clamp at -100 (values only)
pe = torch.tensor([[0.0, 1.0, 0.0, 1.0], [0.5, 0.25, 1.0, 0.0]], dtype=F64)
te = torch.tensor([[0.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.5, 0.3]], dtype=F64)
loss("binary_cross_entropy/extremes/none", "binary_cross_entropy",
     lambda input, target: F.binary_cross_entropy(input, target, reduction="none"),
     {"input": pe, "target": te}, grad=(), attrs={"reduction": "none"})

# margins over classes
for red in REDUCTIONS:
    a = {"reduction": red}
    x, t, w = randn(N, C), randint(0, C, (N,)), rand(C, low=0.2, high=2)
    loss(f"multi_margin_loss/{red}", "multi_margin_loss",
         lambda input, target: F.multi_margin_loss(input, target, reduction=red), {"input": x, "target": t}, attrs=a)
    loss(f"multi_margin_loss/p2_margin_weight/{red}", "multi_margin_loss",
         lambda input, target, weight: F.multi_margin_loss(input, target, p=2, margin=0.7, weight=weight,
                                                           reduction=red),
         {"input": x, "target": t, "weight": w}, attrs={"reduction": red, "p": 2, "margin": 0.7})
    ml = torch.randint(0, 2, (N, C)).double()
    loss(f"multilabel_soft_margin_loss/{red}", "multilabel_soft_margin_loss",
         lambda input, target: F.multilabel_soft_margin_loss(input, target, reduction=red),
         {"input": x, "target": ml}, attrs=a)
    loss(f"multilabel_soft_margin_loss/weight/{red}", "multilabel_soft_margin_loss",
         lambda input, target, weight: F.multilabel_soft_margin_loss(input, target, weight=weight, reduction=red),
         {"input": x, "target": ml, "weight": w}, attrs=a)
    loss(f"soft_margin_loss/{red}", "soft_margin_loss",
         lambda input, target: F.soft_margin_loss(input, target, reduction=red),
         {"input": randn(3, 4, scale=2), "target": sign_targets(3, 4)}, attrs=a)

# regression
for red in REDUCTIONS:
    a = {"reduction": red}
    x, y = randn(3, 5, scale=2), randn(3, 5, scale=2)
    both = ("input", "target")
    loss(f"mse_loss/{red}", "mse_loss", lambda input, target: F.mse_loss(input, target, reduction=red),
         {"input": x, "target": y}, grad=both, attrs=a)
    loss(f"l1_loss/{red}", "l1_loss", lambda input, target: F.l1_loss(input, target, reduction=red),
         {"input": x, "target": y}, grad=both, attrs=a)
    for delta in (1.0, 0.6):
        loss(f"huber_loss/delta{delta}/{red}", "huber_loss",
             lambda input, target: F.huber_loss(input, target, reduction=red, delta=delta),
             {"input": x, "target": y}, grad=both, attrs={"reduction": red, "delta": delta})
    for beta in (1.0, 0.5, 0.0):
        loss(f"smooth_l1_loss/beta{beta}/{red}", "smooth_l1_loss",
             lambda input, target: F.smooth_l1_loss(input, target, reduction=red, beta=beta),
             {"input": x, "target": y}, grad=both, attrs={"reduction": red, "beta": beta})
    counts = torch.tensor([[0.0, 1.0, 2.0, 5.0], [3.0, 0.0, 7.0, 1.0]], dtype=F64)
    for log_input in (True, False):
        for full in (False, True):
            xi = randn(2, 4) if log_input else rand(2, 4, low=0.1, high=4)
            loss(f"poisson_nll_loss/log{int(log_input)}_full{int(full)}/{red}", "poisson_nll_loss",
                 lambda input, target: F.poisson_nll_loss(input, target, log_input=log_input, full=full,
                                                          reduction=red),
                 {"input": xi, "target": counts},
                 attrs={"reduction": red, "log_input": log_input, "full": full})
    xi, ti = randn(4, 3), randn(4, 3)
    v = rand(4, 3, low=0.2, high=2)
    v[0, 0] = 1e-8  # below eps: clamped value, gradient passes through
    loss(f"gaussian_nll_loss/{red}", "gaussian_nll_loss",
         lambda input, target, var: F.gaussian_nll_loss(input, target, var, reduction=red),
         {"input": xi, "target": ti, "var": v}, grad=("input", "target", "var"), attrs=a)
    loss(f"gaussian_nll_loss/full_var_short/{red}", "gaussian_nll_loss",
         lambda input, target, var: F.gaussian_nll_loss(input, target, var, full=True, eps=1e-3, reduction=red),
         {"input": xi, "target": ti, "var": rand(4, low=0.2, high=2)}, grad=("input", "var"),
         attrs={"reduction": red, "full": True, "eps": 1e-3})
    loss(f"gaussian_nll_loss/var_last1/{red}", "gaussian_nll_loss",
         lambda input, target, var: F.gaussian_nll_loss(input, target, var, reduction=red),
         {"input": xi, "target": ti, "var": rand(4, 1, low=0.2, high=2)}, grad=("input", "var"), attrs=a)

# KL divergence
for red in ["mean", "sum", "none", "batchmean"]:
    a = {"reduction": red}
    inp = torch.log_softmax(randn(3, 5), 1)
    tgt = torch.softmax(randn(3, 5), 1)
    loss(f"kl_div/{red}", "kl_div", lambda input, target: F.kl_div(input, target, reduction=red),
         {"input": inp, "target": tgt}, grad=("input", "target"), attrs=a)
    tz = tgt.clone()
    tz[0, 1] = 0.0
    tz[2, 4] = 0.0
    loss(f"kl_div/zero_target/{red}", "kl_div", lambda input, target: F.kl_div(input, target, reduction=red),
         {"input": inp, "target": tz}, attrs=a)
    loss(f"kl_div/log_target/{red}", "kl_div",
         lambda input, target: F.kl_div(input, target, reduction=red, log_target=True),
         {"input": inp, "target": torch.log_softmax(randn(3, 5), 1)}, grad=("input", "target"),
         attrs={"reduction": red, "log_target": True})

# embeddings and ranking
for red in REDUCTIONS:
    a = {"reduction": red}
    x1, x2 = randn(N, 6), randn(N, 6)
    y = torch.tensor([1, -1, 1, -1, -1])
    for margin in (0.0, 0.2):
        loss(f"cosine_embedding_loss/margin{margin}/{red}", "cosine_embedding_loss",
             lambda input1, input2, target: F.cosine_embedding_loss(input1, input2, target, margin=margin,
                                                                    reduction=red),
             {"input1": x1, "input2": x2, "target": y}, grad=("input1", "input2"),
             attrs={"reduction": red, "margin": margin})
    loss(f"cosine_embedding_loss/unbatched/{red}", "cosine_embedding_loss",
         lambda input1, input2, target: F.cosine_embedding_loss(input1, input2, target, margin=-0.5, reduction=red),
         {"input1": randn(6), "input2": randn(6), "target": torch.tensor(-1)}, grad=("input1", "input2"),
         attrs={"reduction": red, "margin": -0.5})
    r1, r2, ry = randn(7), randn(7), sign_targets(7)
    for margin in (0.0, 0.5):
        loss(f"margin_ranking_loss/margin{margin}/{red}", "margin_ranking_loss",
             lambda input1, input2, target: F.margin_ranking_loss(input1, input2, target, margin=margin,
                                                                  reduction=red),
             {"input1": r1, "input2": r2, "target": ry}, grad=("input1", "input2"),
             attrs={"reduction": red, "margin": margin})
    for margin in (1.0, 2.0):
        loss(f"hinge_embedding_loss/margin{margin}/{red}", "hinge_embedding_loss",
             lambda input, target: F.hinge_embedding_loss(input, target, margin=margin, reduction=red),
             {"input": randn(3, 4, scale=1.5), "target": sign_targets(3, 4)},
             attrs={"reduction": red, "margin": margin})
    an, po, ne = randn(N, 6), randn(N, 6), randn(N, 6)
    three = ("anchor", "positive", "negative")
    for variant, kw in [("default", {}), ("p1_margin2", {"p": 1.0, "margin": 2.0}), ("swap", {"swap": True}),
                        ("p3_eps_swap", {"p": 3.0, "eps": 1e-3, "swap": True, "margin": 0.5})]:
        loss(f"triplet_margin_loss/{variant}/{red}", "triplet_margin_loss",
             lambda anchor, positive, negative: F.triplet_margin_loss(anchor, positive, negative, reduction=red,
                                                                      **kw),
             {"anchor": an, "positive": po, "negative": ne}, grad=three, attrs={"reduction": red, **kw})


# CTC: inputs are logits; log_probs = log_softmax(logits, -1) on both sides (see the module doc)
def ctc(name, logits, targets, in_len, tgt_len, grad=("input",), **kw):
    red = kw.get("reduction", "mean")
    attrs = dict(kw)
    attrs["reduction"] = red

    def f(input, targets, input_lengths, target_lengths):
        return F.ctc_loss(torch.log_softmax(input, -1), targets, input_lengths, target_lengths, **kw)

    loss(name, "ctc_loss", f, {"input": logits, "targets": targets, "input_lengths": torch.tensor(in_len),
                               "target_lengths": torch.tensor(tgt_len)}, grad=grad, attrs=attrs)


T, B, K = 12, 4, 5
for red in REDUCTIONS:
    padded = randint(1, K, (B, 4))
    padded[1, 1] = padded[1, 0]  # a repeated label needs a blank between
    ctc(f"ctc_loss/padded/{red}", randn(T, B, K), padded, [12, 12, 12, 12], [4, 3, 2, 4], reduction=red)
    ctc(f"ctc_loss/padded_lengths/{red}", randn(T, B, K), padded, [12, 9, 6, 10], [4, 3, 2, 1], reduction=red)
    lens = [3, 0, 2, 4]
    concat = randint(1, K, (sum(lens),))
    ctc(f"ctc_loss/concat_empty_target/{red}", randn(T, B, K), concat, [12, 7, 5, 11], lens, reduction=red)
    pb = randint(0, K - 1, (B, 3))  # blank is the last class
    ctc(f"ctc_loss/blank_last/{red}", randn(T, B, K), pb, [12, 11, 12, 8], [3, 3, 2, 3], blank=K - 1, reduction=red)
    # sample 1 is infeasible: 3 steps for 3 labels with 2 repeats
    inf_t = torch.tensor([[1, 2, 3], [2, 2, 2], [3, 1, 1], [4, 3, 2]])
    ctc(f"ctc_loss/zero_infinity/{red}", randn(6, B, K), inf_t, [6, 3, 6, 5], [3, 3, 3, 2], reduction=red,
        zero_infinity=True)
    ctc(f"ctc_loss/unbatched/{red}", randn(7, K), randint(1, K, (3,)), [7], [3], reduction=red)
ctc("ctc_loss/infinite/none", randn(6, B, K), torch.tensor([[1, 2, 3], [2, 2, 2], [3, 1, 1], [4, 3, 2]]),
    [6, 3, 6, 5], [3, 3, 3, 2], grad=(), reduction="none")
ctc("ctc_loss/long/mean", randn(40, 2, 8), randint(1, 8, (2, 15)), [40, 33], [15, 11])

# ----------------------------------------------------------------------------- functional
x = randn(4, 8, scale=3)
for fn, f, attrs in [
    ("relu6", F.relu6, {}),
    ("elu", lambda x: F.elu(x), {}),
    ("elu", lambda x: F.elu(x, alpha=0.4), {"alpha": 0.4}),
    ("selu", F.selu, {}),
    ("celu", lambda x: F.celu(x), {}),
    ("celu", lambda x: F.celu(x, alpha=2.5), {"alpha": 2.5}),
    ("mish", F.mish, {}),
    ("softsign", F.softsign, {}),
    ("hard_swish", F.hardswish, {}),
    # torch 1.13's hardsigmoid backward scales by the f32 constant 1.0f/6 (3e-8 off in f64); the
    # same function written as relu6(x + 3) / 6 gives the exact f64 gradient.
    ("hard_sigmoid", lambda x: F.relu6(x + 3) / 6, {}),
    ("hard_tanh", lambda x: F.hardtanh(x, -2.0, 1.5), {"min_val": -2.0, "max_val": 1.5}),
    ("tanh_shrink", F.tanhshrink, {}),
    ("soft_shrink", lambda x: F.softshrink(x, 0.7), {"lambda": 0.7}),
    ("hard_shrink", lambda x: F.hardshrink(x, 0.7), {"lambda": 0.7}),
    ("gelu", lambda x: F.gelu(x), {"approximate": "none"}),
    ("gelu", lambda x: F.gelu(x, approximate="tanh"), {"approximate": "tanh"}),
    ("glu", lambda x: F.glu(x, -1), {"dim": -1}),
    ("glu", lambda x: F.glu(x, 0), {"dim": 0}),
]:
    suffix = "/".join(f"{k}{v}" for k, v in attrs.items())
    functional(f"{fn}/{suffix}" if suffix else fn, fn, lambda x, f=f: f(x), {"x": x.clone()}, attrs=attrs)
big = torch.tensor([[-80.0, -30.0, 0.5, 30.0, 80.0, -1.0]], dtype=F64)  # far tails stay finite
for fn, f in [("elu", F.elu), ("selu", F.selu), ("celu", F.celu), ("mish", F.mish)]:
    functional(f"{fn}/tails", fn, lambda x, f=f: f(x), {"x": big.clone()})


def swiglu(x, dim):
    a, b = x.chunk(2, dim)
    return F.silu(a) * b


functional("swiglu/dim-1", "swiglu", lambda x: swiglu(x, -1), {"x": x.clone()}, attrs={"dim": -1})
functional("swiglu/dim1_3d", "swiglu", lambda x: swiglu(x, 1), {"x": randn(2, 6, 3)}, attrs={"dim": 1})

xn, wn, bn = randn(4, 6, 3, 2), rand(6, low=0.5, high=1.5), randn(6)
wb = ("x", "weight", "bias")
functional("group_norm/g3_affine", "group_norm",
           lambda x, weight, bias: F.group_norm(x, 3, weight, bias, eps=1e-5),
           {"x": xn, "weight": wn, "bias": bn}, grad=wb, attrs={"groups": 3, "eps": 1e-5})
functional("group_norm/g1_plain", "group_norm", lambda x: F.group_norm(x, 1, eps=1e-3), {"x": xn},
           attrs={"groups": 1, "eps": 1e-3})
functional("group_norm/g6_1d", "group_norm", lambda x, weight, bias: F.group_norm(x, 6, weight, bias),
           {"x": randn(3, 6, 5), "weight": wn, "bias": bn}, grad=wb, attrs={"groups": 6, "eps": 1e-5})
functional("instance_norm/affine", "instance_norm",
           lambda x, weight, bias: F.instance_norm(x, weight=weight, bias=bias, eps=1e-5),
           {"x": xn, "weight": wn, "bias": bn}, grad=wb, attrs={"eps": 1e-5})
functional("instance_norm/plain_1d", "instance_norm", lambda x: F.instance_norm(x, eps=1e-4),
           {"x": randn(2, 3, 7)}, attrs={"eps": 1e-4})


def rms(x, shape, weight, eps):
    dims = tuple(range(x.dim() - len(shape), x.dim()))
    y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
    return y * weight if weight is not None else y


xr = randn(3, 4, 6)
functional("rms_norm/last_weight", "rms_norm", lambda x, weight: rms(x, [6], weight, 1e-6),
           {"x": xr, "weight": rand(6, low=0.5, high=1.5)}, grad=("x", "weight"),
           attrs={"normalized_shape": [6], "eps": 1e-6})
functional("rms_norm/two_dims", "rms_norm", lambda x, weight: rms(x, [4, 6], weight, 1e-3),
           {"x": xr, "weight": rand(4, 6, low=0.5, high=1.5)}, grad=("x", "weight"),
           attrs={"normalized_shape": [4, 6], "eps": 1e-3})
# eps omitted: torch.nn.RMSNorm uses finfo(dtype).eps (the f64 value here; f32 differs by ~1e-7)
functional("rms_norm/default_eps", "rms_norm", lambda x: rms(x, [6], None, torch.finfo(F64).eps), {"x": xr},
           attrs={"normalized_shape": [6]})


def bn_train(x, weight, bias, eps):
    dims = [0] + list(range(2, x.dim()))
    y = F.batch_norm(x, None, None, weight, bias, training=True, eps=eps)
    return y, x.mean(dims), x.var(dims, unbiased=True)


functional("batch_norm_train/4d_affine", "batch_norm_train", lambda x, weight, bias: bn_train(x, weight, bias, 1e-5),
           {"x": xn, "weight": wn, "bias": bn}, grad=wb, attrs={"eps": 1e-5})
functional("batch_norm_train/2d_plain", "batch_norm_train", lambda x: bn_train(x, None, None, 1e-3),
           {"x": randn(5, 3)}, attrs={"eps": 1e-3})
functional("pixel_shuffle/r2", "pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), {"x": randn(2, 8, 3, 2)},
           attrs={"factor": 2})
functional("pixel_shuffle/r3_5d", "pixel_shuffle", lambda x: F.pixel_shuffle(x, 3), {"x": randn(2, 1, 9, 2, 1)},
           attrs={"factor": 3})
functional("pixel_unshuffle/r2", "pixel_unshuffle", lambda x: F.pixel_unshuffle(x, 2), {"x": randn(2, 3, 4, 6)},
           attrs={"factor": 2})
xu = randn(2, 3, 4, 5)
functional("upsample/nearest_size", "upsample", lambda x: F.interpolate(x, size=(7, 9), mode="nearest"),
           {"x": xu}, attrs={"size": [7, 9], "mode": "nearest"})
functional("upsample/nearest_scale2", "upsample", lambda x: F.interpolate(x, scale_factor=2, mode="nearest"),
           {"x": xu}, attrs={"scale_factor": 2.0, "mode": "nearest"})
functional("upsample/bilinear_scale2", "upsample",
           lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False),
           {"x": xu}, attrs={"scale_factor": 2.0, "mode": "linear", "align_corners": False})
functional("upsample/bilinear_align", "upsample",
           lambda x: F.interpolate(x, size=(6, 8), mode="bilinear", align_corners=True),
           {"x": xu}, attrs={"size": [6, 8], "mode": "linear", "align_corners": True})
functional("upsample/linear_1d", "upsample", lambda x: F.interpolate(x, size=11, mode="linear"),
           {"x": randn(2, 3, 5)}, attrs={"size": [11], "mode": "linear", "align_corners": False})
functional("normalize/p2_dim1", "normalize", lambda x: F.normalize(x, 2.0, 1), {"x": randn(3, 5, 2)},
           attrs={"p": 2.0, "dim": 1})
functional("normalize/p1_dim-1", "normalize", lambda x: F.normalize(x, 1.0, -1), {"x": randn(4, 3)},
           attrs={"p": 1.0, "dim": -1})
functional("linear/bias", "linear", lambda x, weight, bias: F.linear(x, weight, bias),
           {"x": randn(2, 3, 5), "weight": randn(4, 5), "bias": randn(4)}, grad=wb)
functional("linear/no_bias_1d", "linear", lambda x, weight: F.linear(x, weight),
           {"x": randn(5), "weight": randn(4, 5)}, grad=("x", "weight"))
functional("bilinear/bias", "bilinear", lambda x1, x2, weight, bias: F.bilinear(x1, x2, weight, bias),
           {"x1": randn(2, 3, 4), "x2": randn(2, 3, 5), "weight": randn(6, 4, 5), "bias": randn(6)},
           grad=("x1", "x2", "weight", "bias"))
functional("bilinear/no_bias", "bilinear", lambda x1, x2, weight: F.bilinear(x1, x2, weight),
           {"x1": randn(3, 2), "x2": randn(3, 3), "weight": randn(4, 2, 3)}, grad=("x1", "x2", "weight"))

os.makedirs(os.path.dirname(OUT), exist_ok=True)
with open(OUT, "w") as fh:
    fh.write('{"cases": [\n')
    fh.write(",\n".join(json.dumps(c, separators=(",", ":"), allow_nan=False) for c in CASES))
    fh.write("\n]}\n")
kinds = {}
for c in CASES:
    kinds.setdefault(c["kind"], set()).add(c["fn"])
print(f"{len(CASES)} cases, {len(kinds['loss'])} losses, {len(kinds['functional'])} functional -> {OUT}")
