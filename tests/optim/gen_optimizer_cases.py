#!/usr/bin/python3
"""Reference trajectories for tests/optim/optimizer_test.cpp (PyTorch 1.13).

Problem: a 2-layer MLP  out = fc2(tanh(fc1(x)))  with fc1: 4 -> 6, fc2: 6 -> 3, fixed data
x [8, 4], y [8, 3], loss = mse (mean). Every case runs 20 optimizer steps from the same initial
parameters, in float64 and in float32, and records the parameters (and, for float64, the
optimizer state) afterwards. torch.optim provides SGD, Adam, AdamW, RMSprop and Adagrad; Lion and
LAMB have no torch optimizer in 1.13 and are written below from their papers' formulas.

Run:  /usr/bin/python3 tests/optim/gen_optimizer_cases.py   (writes cases/optimizers.json beside it)
"""
import json
import math
import os
import re

import torch

torch.manual_seed(20240611)
STEPS = 20
X = torch.randn(8, 4, dtype=torch.float64)
Y = torch.randn(8, 3, dtype=torch.float64)
INIT = {
    "fc1.weight": torch.randn(6, 4, dtype=torch.float64) * 0.5,
    "fc1.bias": torch.randn(6, dtype=torch.float64) * 0.1,
    "fc2.weight": torch.randn(3, 6, dtype=torch.float64) * 0.5,
    "fc2.bias": torch.randn(3, dtype=torch.float64) * 0.1,
}
NAMES = list(INIT)


def forward(p, x):
    h = torch.tanh(x @ p["fc1.weight"].t() + p["fc1.bias"])
    return h @ p["fc2.weight"].t() + p["fc2.bias"]


def loss_fn(p, x, y):
    return torch.nn.functional.mse_loss(forward(p, x), y)


class Lion(torch.optim.Optimizer):
    """Chen et al. 2023, Algorithm 2: c = b1 m + (1 - b1) g; p -= lr (sign(c) + wd p); m = b2 m + (1 - b2) g."""

    def __init__(self, params, lr, betas=(0.9, 0.99), weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            lr, wd = group["lr"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = torch.zeros_like(p)
                st["step"] += 1
                m = st["exp_avg"]
                c = m * b1 + p.grad * (1 - b1)
                p.mul_(1 - lr * wd)
                p.add_(torch.sign(c), alpha=-lr)
                st["exp_avg"] = m * b2 + p.grad * (1 - b2)


class Lamb(torch.optim.Optimizer):
    """You et al. 2020, Algorithm 2 (phi = identity, one layer per tensor):
    m, v Adam moments with bias correction; u = m_hat / (sqrt(v_hat) + eps) + wd p;
    p -= lr * (||p|| / ||u||) u, the ratio being 1 when either norm is 0."""

    def __init__(self, params, lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = torch.zeros_like(p)
                    st["exp_avg_sq"] = torch.zeros_like(p)
                st["step"] += 1
                t = st["step"]
                m = st["exp_avg"] * b1 + g * (1 - b1)
                v = st["exp_avg_sq"] * b2 + (g * (1 - b2)) * g
                st["exp_avg"], st["exp_avg_sq"] = m, v
                m_hat = m / (1 - b1 ** t)
                v_hat = v / (1 - b2 ** t)
                u = m_hat / (torch.sqrt(v_hat) + eps)
                if wd != 0:
                    u = u + p * wd
                w_norm, u_norm = torch.norm(p), torch.norm(u)
                trust = torch.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, torch.ones_like(w_norm))
                p.add_(u * trust, alpha=-lr)


OPTIMIZERS = {
    "sgd": torch.optim.SGD,
    "adam": torch.optim.Adam,
    "adamw": torch.optim.AdamW,
    "rmsprop": torch.optim.RMSprop,
    "adagrad": torch.optim.Adagrad,
    "lion": Lion,
    "lamb": Lamb,
}


def case(name, optimizer, lr, config=None, groups=None, clip=None, micro_batches=1, frozen=()):
    return dict(name=name, optimizer=optimizer, lr=lr, config=config or {}, groups=groups or [], clip=clip,
                micro_batches=micro_batches, frozen=list(frozen))


CASES = [
    case("sgd", "sgd", 0.1),
    case("sgd_momentum", "sgd", 0.05, {"momentum": 0.9}),
    case("sgd_dampening_weight_decay", "sgd", 0.05, {"momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}),
    case("sgd_nesterov", "sgd", 0.05, {"momentum": 0.8, "nesterov": True, "weight_decay": 1e-3}),
    case("sgd_maximize", "sgd", 0.01, {"momentum": 0.5, "maximize": True}),
    case("sgd_groups", "sgd", 0.05, {"momentum": 0.9, "weight_decay": 0.01},
         groups=[{"pattern": "^fc1\\.", "lr_scale": 0.5, "weight_decay": 0.1},
                 {"pattern": "bias$", "lr_scale": 2.0, "weight_decay": 0.0}]),
    case("sgd_clip_value", "sgd", 0.1, {"momentum": 0.9}, clip={"kind": "value", "threshold": 0.05}),
    case("sgd_accumulate", "sgd", 0.05, {"momentum": 0.9, "nesterov": True}, micro_batches=2),
    case("adam", "adam", 0.01),
    case("adam_weight_decay", "adam", 0.01, {"weight_decay": 0.05, "betas": [0.8, 0.95], "eps": 1e-6}),
    case("adam_amsgrad", "adam", 0.01, {"amsgrad": True, "betas": [0.8, 0.99]}),
    case("adam_maximize", "adam", 0.005, {"maximize": True}),
    case("adam_clip_norm", "adam", 0.02, {}, clip={"kind": "norm", "threshold": 0.3, "norm_type": 2}),
    case("adam_accumulate", "adam", 0.01, {"weight_decay": 0.01}, micro_batches=2),
    case("adam_frozen", "adam", 0.01, {}, frozen=["fc1.weight", "fc2.bias"]),
    case("adamw", "adamw", 0.01),
    case("adamw_amsgrad", "adamw", 0.01, {"amsgrad": True, "weight_decay": 0.1}),
    case("adamw_groups", "adamw", 0.01, {"weight_decay": 0.02},
         groups=[{"pattern": "weight", "lr_scale": 1.0, "weight_decay": 0.3},
                 {"pattern": ".*", "lr_scale": 0.1}]),
    case("adamw_clip_norm_accumulate", "adamw", 0.02, {}, clip={"kind": "norm", "threshold": 0.2, "norm_type": 1},
         micro_batches=2),
    case("rmsprop", "rmsprop", 0.01),
    case("rmsprop_momentum_weight_decay", "rmsprop", 0.005, {"momentum": 0.9, "weight_decay": 0.01}),
    case("rmsprop_centered", "rmsprop", 0.005, {"centered": True, "alpha": 0.9, "eps": 1e-6}),
    case("rmsprop_centered_momentum", "rmsprop", 0.002, {"centered": True, "momentum": 0.5}),
    case("rmsprop_clip_norm_inf", "rmsprop", 0.01, {}, clip={"kind": "norm", "threshold": 0.05, "norm_type": "inf"}),
    case("adagrad", "adagrad", 0.1),
    case("adagrad_full", "adagrad", 0.1,
         {"lr_decay": 0.01, "weight_decay": 0.01, "initial_accumulator_value": 0.1, "eps": 1e-8}),
    case("adagrad_maximize_groups", "adagrad", 0.05, {"maximize": True},
         groups=[{"pattern": "^fc2\\.weight$", "lr_scale": 3.0, "weight_decay": 0.02}]),
    case("lion", "lion", 1e-3),
    case("lion_weight_decay", "lion", 3e-3, {"betas": [0.95, 0.98], "weight_decay": 0.1}),
    case("lion_clip_value_groups", "lion", 2e-3, {}, clip={"kind": "value", "threshold": 0.02},
         groups=[{"pattern": "^fc1\\.", "lr_scale": 0.5, "weight_decay": 0.5}]),
    case("lamb", "lamb", 0.01),
    case("lamb_weight_decay", "lamb", 0.02, {"betas": [0.9, 0.99], "eps": 1e-6, "weight_decay": 0.01}),
    case("lamb_clip_norm_accumulate", "lamb", 0.01, {"weight_decay": 0.05},
         clip={"kind": "norm", "threshold": 0.5, "norm_type": 2}, micro_batches=2),
]


def torch_kwargs(c):
    kw = dict(c["config"])
    if "betas" in kw:
        kw["betas"] = tuple(kw["betas"])
    return kw


def run(c, dtype):
    params = {k: v.to(dtype).clone().requires_grad_(k not in c["frozen"]) for k, v in INIT.items()}
    x, y = X.to(dtype), Y.to(dtype)
    trainable = [params[k] for k in NAMES if k not in c["frozen"]]
    cls = OPTIMIZERS[c["optimizer"]]
    kw = torch_kwargs(c)
    if c["groups"]:
        # First match wins; the rest form the default group (lr, config weight decay).
        assigned = {}
        for k in NAMES:
            if k in c["frozen"]:
                continue
            for i, g in enumerate(c["groups"]):
                if re.search(g["pattern"], k):
                    assigned[k] = i
                    break
        param_groups = []
        for i, g in enumerate(c["groups"]):
            ps = [params[k] for k in NAMES if assigned.get(k) == i]
            if not ps:
                continue
            pg = {"params": ps, "lr": c["lr"] * g.get("lr_scale", 1.0)}
            if g.get("weight_decay") is not None:
                pg["weight_decay"] = g["weight_decay"]
            param_groups.append(pg)
        rest = [params[k] for k in NAMES if k not in c["frozen"] and k not in assigned]
        if rest:
            param_groups.append({"params": rest})
        opt = cls(param_groups, lr=c["lr"], **kw)
    else:
        opt = cls(trainable, lr=c["lr"], **kw)
    n = x.shape[0]
    for _ in range(STEPS):
        opt.zero_grad(set_to_none=True)
        if c["micro_batches"] == 1:
            loss_fn(params, x, y).backward()
        else:
            half = n // 2
            loss_fn(params, x[:half], y[:half]).backward()
            loss_fn(params, x[half:], y[half:]).backward()
        clip = c["clip"]
        if clip is not None:
            if clip["kind"] == "value":
                torch.nn.utils.clip_grad_value_(trainable, clip["threshold"])
            else:
                nt = math.inf if clip["norm_type"] == "inf" else clip["norm_type"]
                torch.nn.utils.clip_grad_norm_(trainable, clip["threshold"], norm_type=nt)
        opt.step()
    out = {k: v.detach().double().flatten().tolist() for k, v in params.items()}
    state = {}
    for k in NAMES:
        st = opt.state.get(params[k], {})
        entry = {}
        for name, val in st.items():
            if val is None:  # SGD without momentum keeps momentum_buffer = None
                continue
            if name == "step":
                entry[name] = int(val.item()) if torch.is_tensor(val) else int(val)
            else:
                entry[name] = val.detach().double().flatten().tolist()
        if entry:
            state[k] = entry
    return out, state


def clip_checks():
    """clip_grad_norm_ on the gradients at the initial parameters: total norm and clipped grads."""
    out = []
    for norm_type, max_norm in [(2, 0.1), (1, 0.2), ("inf", 0.05), (3, 100.0)]:
        params = {k: v.clone().requires_grad_(True) for k, v in INIT.items()}
        loss_fn(params, X, Y).backward()
        nt = math.inf if norm_type == "inf" else norm_type
        total = torch.nn.utils.clip_grad_norm_([params[k] for k in NAMES], max_norm, norm_type=nt)
        out.append(dict(norm_type=norm_type, max_norm=max_norm, total_norm=total.item(),
                        grads={k: params[k].grad.flatten().tolist() for k in NAMES}))
    return out


def main():
    cases = []
    for c in CASES:
        for dtype, tag in [(torch.float64, "f64"), (torch.float32, "f32")]:
            params, state = run(c, dtype)
            r = dict(c, dtype=tag, steps=STEPS, params=params)
            if tag == "f64":
                r["state"] = state
            cases.append(r)
    doc = dict(
        torch_version=torch.__version__,
        steps=STEPS,
        data={"x": X.flatten().tolist(), "x_shape": list(X.shape), "y": Y.flatten().tolist(), "y_shape": list(Y.shape)},
        init={k: {"shape": list(v.shape), "data": v.flatten().tolist()} for k, v in INIT.items()},
        cases=cases,
        clip_checks=clip_checks(),
    )
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases", "optimizers.json")
    with open(path, "w") as f:
        json.dump(doc, f)
        f.write("\n")
    print(f"wrote {len(cases)} cases to {path}")


if __name__ == "__main__":
    main()
