#!/usr/bin/env python3
"""Reference values for ember's second-order autodiff tests (second_order.json).

Run with Debian's python3-torch (1.13):  /usr/bin/python3 gen_second_order.py
Each case lists its f64 inputs and the torch results; engine_test.cpp builds the same
computation with ember (create_graph) and compares. Deterministic (fixed seed).
"""
import json
import os

import torch
import torch.nn.functional as F

torch.manual_seed(1234)
HERE = os.path.dirname(os.path.abspath(__file__))
D = torch.float64


def ser(t):
    t = t.detach().contiguous()
    return {"shape": list(t.shape), "data": t.reshape(-1).tolist()}


def rnd(*shape, scale=1.0):
    return (torch.randn(*shape, dtype=D) * scale).requires_grad_()


cases = {}

# 1. Hessian-vector product of an elementwise/activation chain.
x = rnd(3, 4)
v = torch.randn(3, 4, dtype=D)
f = (torch.tanh(x) * torch.exp(0.5 * x) + torch.sigmoid(x) * x.square() + F.gelu(x) + F.silu(x)
     + F.softplus(x) + torch.sin(x) * torch.log1p(x.square())).sum()
(g,) = torch.autograd.grad(f, x, create_graph=True)
(hv,) = torch.autograd.grad((g * v).sum(), x)
cases["hvp_elementwise"] = {"x": ser(x), "v": ser(v), "grad": ser(g), "hvp": ser(hv)}

# 2. HVP through a two-layer MLP w.r.t. the first weight.
x = torch.randn(5, 3, dtype=D)
w1 = rnd(3, 4, scale=0.7)
w2 = rnd(4, 2, scale=0.7)
b1 = rnd(4, scale=0.3)
v = torch.randn(3, 4, dtype=D)
loss = (torch.tanh(x @ w1 + b1) @ w2).square().mean()
(g,) = torch.autograd.grad(loss, w1, create_graph=True)
hv = torch.autograd.grad((g * v).sum(), [w1, w2, b1])
cases["hvp_mlp"] = {"x": ser(x), "w1": ser(w1), "w2": ser(w2), "b1": ser(b1), "v": ser(v), "grad_w1": ser(g),
                    "hvp_w1": ser(hv[0]), "hvp_w2": ser(hv[1]), "hvp_b1": ser(hv[2])}

# 3. WGAN-GP gradient penalty: critic weights' gradient of the penalty.
real = torch.randn(6, 5, dtype=D)
fake = torch.randn(6, 5, dtype=D)
eps = torch.rand(6, 1, dtype=D)
cw1 = rnd(5, 8, scale=0.5)
cb1 = rnd(8, scale=0.1)
cw2 = rnd(8, 1, scale=0.5)
cb2 = rnd(1, scale=0.1)
xhat = (eps * real + (1 - eps) * fake).requires_grad_()
critic = F.leaky_relu(xhat @ cw1 + cb1, 0.2) @ cw2 + cb2
(gx,) = torch.autograd.grad(critic.sum(), xhat, create_graph=True)
gp = ((torch.linalg.vector_norm(gx, 2, dim=1) - 1) ** 2).mean()
loss = critic.mean() + 10.0 * gp
gr = torch.autograd.grad(loss, [cw1, cb1, cw2, cb2])
cases["wgan_gp"] = {"real": ser(real), "fake": ser(fake), "eps": ser(eps), "w1": ser(cw1), "b1": ser(cb1),
                    "w2": ser(cw2), "b2": ser(cb2), "gp": ser(gp), "loss": ser(loss), "grad_w1": ser(gr[0]),
                    "grad_b1": ser(gr[1]), "grad_w2": ser(gr[2]), "grad_b2": ser(gr[3])}

# 4. Mixed second derivative through a batched, broadcasting matmul.
a = rnd(2, 3, 4)
b = rnd(4, 5)
f = torch.sigmoid(a @ b).sum()
(ga,) = torch.autograd.grad(f, a, create_graph=True)
gab = torch.autograd.grad(ga.square().sum(), [a, b])
cases["matmul_mixed"] = {"a": ser(a), "b": ser(b), "grad_a": ser(ga), "d_a": ser(gab[0]), "d_b": ser(gab[1])}

# 5. Reductions: logsumexp, var, softmax, mean, max (no ties), norm.
x = rnd(4, 5)
v = torch.randn(4, 5, dtype=D)
f = (torch.logsumexp(x, dim=1).sum() + torch.var(x, dim=0).sum() + (torch.softmax(x, 1) * x).sum()
     + torch.linalg.vector_norm(x, 2, dim=1).sum() + x.exp().mean(dim=1).square().sum() + torch.amax(x, dim=1).sum())
(g,) = torch.autograd.grad(f, x, create_graph=True)
(hv,) = torch.autograd.grad((g * v).sum(), x)
cases["hvp_reductions"] = {"x": ser(x), "v": ser(v), "grad": ser(g), "hvp": ser(hv)}

# 6. Third order on a scalar function: d^3/dx^3 of sum(x^4 * sin(x)).
x = rnd(6)
f = (x.pow(4) * torch.sin(x)).sum()
(g1,) = torch.autograd.grad(f, x, create_graph=True)
(g2,) = torch.autograd.grad(g1.sum(), x, create_graph=True)
(g3,) = torch.autograd.grad(g2.sum(), x)
cases["third_order"] = {"x": ser(x), "g1": ser(g1), "g2": ser(g2), "g3": ser(g3)}

# 7. Hessian-vector product of cross_entropy (class targets, one ignored) w.r.t. the logits.
x = rnd(5, 4)
target = torch.tensor([2, 0, 3, -100, 1])
v = torch.randn(5, 4, dtype=D)
f = F.cross_entropy(x, target)
(g,) = torch.autograd.grad(f, x, create_graph=True)
(hv,) = torch.autograd.grad((g * v).sum(), x)
cases["hvp_cross_entropy"] = {"x": ser(x), "target": target.tolist(), "v": ser(v), "loss": ser(f), "grad": ser(g),
                              "hvp": ser(hv)}

with open(os.path.join(HERE, "second_order.json"), "w") as fh:
    json.dump({"torch": torch.__version__, "cases": cases}, fh, indent=1)
