#!/usr/bin/env python3
"""Generate cases/ir.json: conformance cases for the fused IR ops of include/ember/core/ops.def
that no public tensor function runs whole (the autodiff rules, losses and optimizers emit them).

Run with Debian's python3-torch (1.13.x):   /usr/bin/python3 gen_ir_cases.py
Same file format and comparison rule as the other case files (README.md); the registry runs
these ops straight on the backend (op_registry.cpp, run_ir). attrs["null_inputs"] lists the
op's input positions that are absent (null); the case's inputs fill the others in order.

References (every expected value comes from torch on the exact input values of the case):
  gelu_backward, gelu_tanh_backward   torch.ops.aten.gelu_backward(g, x, approximate)  (inputs: x, g)
  silu_backward                       torch.ops.aten.silu_backward(g, x)               (inputs: x, g)
  layer_norm_backward                 autograd of F.layer_norm in f64 (a ones weight when the op's
                                      weight is null, whose gradient is then sum(g * xhat)) -> dx, dw, db
  attention_backward                  autograd of softmax(q k^T scale + mask) v in f64; the op's `out`
                                      and `lse` inputs are that forward's values (rounded)
  cross_entropy                       f64 logsumexp per row: loss = lse - x[target] (0 where ignored),
                                      lse (f64 for f64 logits, else f32), valid
  cross_entropy_backward              autograd of F.cross_entropy(reduction="none") in f64 with upstream g
  adam_step                           torch.optim.Adam / AdamW (foreach=False) .step() on a parameter
                                      whose state is (step - 1, exp_avg, exp_avg_sq)
  norm_multi                          torch.linalg.vector_norm of each input (torch._foreach_norm's
                                      values; 0 for an empty input, where torch's inf-norm raises)
  mul_multi                           x * s for each input x (torch._foreach_mul)
f16/bf16 inputs: evaluated in f32 (adam_step, gelu/silu backward) or f64 on the same rounded
values, results rounded to the dtype (the backends compute these ops in f32 too).
Each f32/f16/bf16 case is also checked against the same op in f64 rounded to the output dtype
(the tolerance must accept a correctly rounded result, not only torch's rounding).
"""
import json
import math
import os
import zlib

import torch
import torch.nn.functional as F

from gen_cases import ACC_UNIT, DT, TOL, ser, ser_attr, sh

torch.set_num_threads(1)

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "cases", "ir.json")
LOWP = (torch.float16, torch.bfloat16)
DTYPES = ["f32", "f64", "f16", "bf16"]
CASES = []
CHECK_FAIL = []


def gen_for(name):
    return torch.Generator().manual_seed(zlib.crc32(name.encode()))


def uniform(shape, dt, lo, hi, g):
    """uniform in [lo, hi), rounded to dt"""
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(DT[dt])


def tol(dt, K=None, mag=1.0, atol_floor=0.0):
    """README rules: the default per dtype; an op accumulating K terms of magnitude <= mag gets
    atol = max(default, u sqrt(K) mag)."""
    r, a = TOL[dt]
    if K is None:
        return r, max(a, atol_floor)
    return r, max(a, atol_floor, ACC_UNIT[dt] * math.sqrt(max(K, 1)) * mag)


def violation(got, want, r, a):
    """largest |got - want| / (a + r |want|) (want, got: tensors of one dtype)"""
    g, w = got.double(), want.double()
    return float(((g - w).abs() / (a + r * w.abs())).max()) if w.numel() else 0.0


def add(name, op, inputs, outs, attrs, rtol, atol, outs64=None):
    """outs64: the same op evaluated in f64 (unrounded) for the cross-check."""
    assert name not in {c["name"] for c in CASES}, name
    outs = [o.detach() for o in outs]
    if outs64 is not None:
        for o, p in zip(outs, outs64):
            if o.is_floating_point() and o.dtype != torch.float64:
                v = violation(o, p.detach().to(o.dtype), rtol, atol)
                if v > 1:  # the tolerance accepts the correctly rounded f64 value too
                    CHECK_FAIL.append((name, v))
    CASES.append({"name": name, "op": op, "inputs": [ser(t) for t in inputs], "attrs": ser_attr(attrs),
                  "outputs": [ser(o) for o in outs], "rtol": rtol, "atol": atol})


def compute_dtype(dt):
    return torch.float32 if DT[dt] in LOWP else DT[dt]


# ---- gelu_backward, gelu_tanh_backward, silu_backward: inputs x, g -> g * f'(x) ----
SPECIAL_X = [0.0, -0.0, 1.0, -1.0, 0.5, -0.75, 3.0, -3.0, 8.0, -8.0, 12.0, -12.0, 1e-3, -1e-3, 30.0, -30.0]


def act_ref(op, x, g):
    if op == "silu_backward":
        return torch.ops.aten.silu_backward(g, x)
    return torch.ops.aten.gelu_backward(g, x, approximate="tanh" if op == "gelu_tanh_backward" else "none")


def gen_activation_backward():
    for op in ["gelu_backward", "gelu_tanh_backward", "silu_backward"]:
        for dt in DTYPES:
            for shape in [[3, 4], [2, 3, 5], [7, 37], [16], []]:
                name = "%s/%s/%s" % (op, dt, sh(shape))
                g = gen_for(name)
                x = uniform(shape, dt, -5, 5, g)
                if shape == [16]:
                    x = torch.tensor(SPECIAL_X, dtype=torch.float64).to(DT[dt])
                up = uniform(shape, dt, -1, 1, g)
                c = compute_dtype(dt)
                out = act_ref(op, x.to(c), up.to(c)).to(DT[dt])
                o64 = act_ref(op, x.double(), up.double())
                r, a = tol(dt)
                add(name, op, [x, up], [out], {}, r, a, [o64])


# ---- layer_norm_backward: x, weight or null, g -> dx, dweight, dbias ----
def layer_norm_grads(x, w, up, axes, eps):
    x64 = x.double().requires_grad_()
    ns = list(x.shape[x.dim() - axes:])
    w64 = (w.double() if w is not None else torch.ones(ns, dtype=torch.float64)).requires_grad_()
    b64 = torch.zeros(ns, dtype=torch.float64, requires_grad=True)
    y = F.layer_norm(x64, ns, w64, b64, eps)
    return torch.autograd.grad(y, [x64, w64, b64], up.double())


def gen_layer_norm_backward():
    op = "layer_norm_backward"
    for dt in DTYPES:
        for shape, axes, has_w in [([4, 6], 1, True), ([2, 3, 8], 1, True), ([2, 3, 8], 2, True), ([5, 16], 1, False),
                                   ([9, 130], 1, True), ([3, 1], 1, True), ([0, 4], 1, True)]:
            name = "%s/%s/%s_axes%d%s" % (op, dt, sh(shape), axes, "" if has_w else "_noweight")
            g = gen_for(name)
            ns = shape[len(shape) - axes:]
            x = uniform(shape, dt, -3, 3, g)
            w = uniform(ns, dt, -2, 2, g) if has_w else None
            up = uniform(shape, dt, -1, 1, g)
            eps = 1e-5
            d64 = layer_norm_grads(x, w, up, axes, eps)
            outs = [d.to(DT[dt]) for d in d64]
            rows = max(1, x.numel() // max(1, math.prod(ns)))
            # dx: sums over a row of D terms; dw, db: sums over the rows (terms |g xhat| <= ~3)
            r, a = tol(dt, max(rows, math.prod(ns)), 3.0, 1e-5 if dt == "f32" else 0.0)
            inputs = [x, w, up] if has_w else [x, up]
            attrs = {"axes": axes, "eps": eps}
            if not has_w:
                attrs["null_inputs"] = [1]
            add(name, op, inputs, outs, attrs, r, a)


# ---- attention_backward: q, k, v, out, grad of out, mask or null, lse or null -> dq, dk, dv ----
def attention_f64(q, k, v, mask, causal, scale):
    E = q.shape[-1]
    s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(E) if scale is None else scale)
    L, S = s.shape[-2], s.shape[-1]
    if causal:
        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), -math.inf)
    if mask is not None:
        s = s.masked_fill(~mask, -math.inf) if mask.dtype == torch.bool else s + mask.double()
    lse = torch.logsumexp(s, -1)
    return torch.softmax(s, -1) @ v, lse


def gen_attention_backward():
    op = "attention_backward"
    configs = [  # (name, batch, L, S, E, Ev, mask kind, causal, scale, pass lse)
        ("3d", [2], 4, 6, 8, 5, None, False, None, True),
        ("3d_nolse", [2], 4, 6, 8, 5, None, False, None, False),
        ("4d_boolmask", [2, 2], 5, 7, 4, 6, "bool", False, None, True),
        ("4d_floatmask_nolse", [2, 2], 5, 7, 4, 6, "float", False, None, False),
        ("causal_scale", [3], 6, 6, 8, 8, None, True, 0.3, True),
        ("2d", [], 9, 17, 16, 16, None, False, None, True),
        ("long", [1], 17, 40, 16, 16, "bool", False, None, True),
    ]
    for dt in DTYPES:
        for cname, batch, L, S, E, Ev, mkind, causal, scale, pass_lse in configs:
            name = "%s/%s/%s" % (op, dt, cname)
            g = gen_for(name)
            q = uniform(batch + [L, E], dt, -1, 1, g)
            k = uniform(batch + [S, E], dt, -1, 1, g)
            v = uniform(batch + [S, Ev], dt, -1, 1, g)
            mask = None
            if mkind == "bool":
                mask = torch.rand([L, S], generator=g) > 0.3
                mask[:, 0] = True  # every query row keeps a key
            elif mkind == "float":
                mask = uniform([L, S], dt, -2, 2, g)
            up = uniform(batch + [L, Ev], dt, -1, 1, g)
            q64, k64, v64 = (t.double().requires_grad_() for t in (q, k, v))
            out64, lse64 = attention_f64(q64, k64, v64, mask, causal, scale)
            d64 = torch.autograd.grad(out64, [q64, k64, v64], up.double())
            outs = [d.to(DT[dt]) for d in d64]
            inputs = [q, k, v, out64.detach().to(DT[dt]), up]
            nulls = []
            if mask is not None:
                inputs.append(mask)
            else:
                nulls.append(5)
            if pass_lse:
                inputs.append(lse64.detach().float())
            else:
                nulls.append(6)
            attrs = {"is_causal": causal, "scale": scale}
            if nulls:
                attrs["null_inputs"] = nulls
            # each gradient sums over S keys (dq) or L queries (dk, dv) of products over E / Ev
            r, a = tol(dt, max(L, S) * max(E, Ev), 1.0)
            add(name, op, inputs, outs, attrs, r, a)


# ---- cross_entropy: logits [N, C], i64 target [N] -> loss, lse, valid;  and its backward ----
def cross_entropy_f64(x, t, ignore):
    x64 = x.double()
    lse = torch.logsumexp(x64, 1)
    keep = t != ignore
    picked = x64.gather(1, torch.where(keep, t, torch.zeros_like(t)).unsqueeze(1)).squeeze(1)
    loss = torch.where(keep, lse - picked, torch.zeros_like(lse))
    return loss, lse, keep.double()


def ce_inputs(name, dt, N, C, ignore, big):
    g = gen_for(name)
    x = uniform([N, C], dt, -4, 4, g)
    if big:  # rows far from 0: a naive exp overflows (f32) or loses everything
        x = (x.double() + torch.tensor([80.0, -90.0, 300.0, 0.0])[torch.arange(N) % 4].unsqueeze(1)).to(DT[dt])
    t = torch.randint(0, C, [N], generator=g)
    if ignore is not None and N > 1:
        t[1] = ignore
    return x, t


CE_CONFIGS = [  # (name, N, C, ignore_index written in attrs or None = default -100, rows far from 0)
    ("5x7", 5, 7, None, False),
    ("5x7_ignore", 5, 7, -100, False),
    ("6x4_ignore_class2", 6, 4, 2, False),
    ("4x9_large_logits", 4, 9, None, True),
    ("3x500", 3, 500, -100, False),
    ("1x1", 1, 1, None, False),
    ("0x5", 0, 5, None, False),
]


def gen_cross_entropy():
    for dt in DTYPES:
        for cname, N, C, ignore, big in CE_CONFIGS:
            if big and dt == "f16":
                continue  # 300 + 4 is not representable to the needed precision in f16
            name = "cross_entropy/%s/%s" % (dt, cname)
            ig = -100 if ignore is None else ignore
            x, t = ce_inputs(name, dt, N, C, ignore, big)
            if ig == 2:
                t[3] = 2
            loss, lse, valid = cross_entropy_f64(x, t, ig)
            # per-row values in the compute type: f32 for f16/bf16 logits (read as they are)
            lse_dt = torch.float64 if dt == "f64" else torch.float32
            outs = [loss.to(lse_dt), lse.to(lse_dt), valid.to(lse_dt)]
            attrs = {} if ignore is None else {"ignore_index": ignore}
            # lse: a sum of C exponentials (terms <= 1 after the max shift), then a log; rtol covers
            # the rounding of a large lse itself
            r, a = tol(dt, C)
            add(name, "cross_entropy", [x, t], outs, attrs, r, a)

            name = "cross_entropy_backward/%s/%s" % (dt, cname)
            x, t = ce_inputs(name, dt, N, C, ignore, big)
            if ig == 2:
                t[3] = 2
            _, lse, _ = cross_entropy_f64(x, t, ig)
            up = uniform([N], dt, -1, 1, gen_for(name + "/g"))
            x64 = x.double().requires_grad_()
            l64 = F.cross_entropy(x64, t, ignore_index=ig, reduction="none")
            (dx,) = torch.autograd.grad(l64, [x64], up.double()) if N else (torch.zeros(0, C, dtype=torch.float64),)
            r, a = tol(dt)
            add(name, "cross_entropy_backward", [x, t, lse.to(lse_dt), up.to(lse_dt)], [dx.to(DT[dt])], attrs, r, a)


# ---- adam_step: param, grad, exp_avg, exp_avg_sq -> their updated values ----
def adam_ref(p, gr, m, v, a, cdt):
    """one torch.optim step on copies in dtype cdt; returns (param, exp_avg, exp_avg_sq)"""
    prm = torch.nn.Parameter(p.to(cdt).clone())
    prm.grad = gr.to(cdt).clone()
    cls = torch.optim.AdamW if a["decoupled"] else torch.optim.Adam
    opt = cls([prm], lr=a["lr"], betas=tuple(a["betas"]), eps=a["eps"], weight_decay=a["weight_decay"],
              maximize=a["maximize"], foreach=False)
    opt.state[prm] = {"step": torch.tensor(float(a["step"] - 1)), "exp_avg": m.to(cdt).clone(),
                      "exp_avg_sq": v.to(cdt).clone()}
    opt.step()
    st = opt.state[prm]
    return [prm.detach().clone(), st["exp_avg"].clone(), st["exp_avg_sq"].clone()]


ADAM_CONFIGS = [  # name, shape, attrs (torch.optim names; decoupled = AdamW), zero state
    ("first_step", [3, 4], dict(lr=1e-3, betas=[0.9, 0.999], eps=1e-8, weight_decay=0.0, step=1), True),
    ("step7", [3, 4], dict(lr=1e-2, betas=[0.9, 0.999], eps=1e-8, weight_decay=0.0, step=7), False),
    ("weight_decay", [5], dict(lr=1e-2, betas=[0.8, 0.99], eps=1e-6, weight_decay=0.1, step=3), False),
    ("adamw", [2, 3, 4], dict(lr=1e-2, betas=[0.9, 0.999], eps=1e-8, weight_decay=0.05, step=12, decoupled=True), False),
    ("maximize", [7], dict(lr=5e-2, betas=[0.9, 0.95], eps=1e-8, weight_decay=0.01, step=2, maximize=True), False),
    ("large", [300], dict(lr=3e-4, betas=[0.9, 0.999], eps=1e-8, weight_decay=0.0, step=100), False),
    ("scalar", [], dict(lr=1e-1, betas=[0.5, 0.75], eps=1e-3, weight_decay=0.0, step=2), False),
]


def gen_adam_step():
    op = "adam_step"
    for dt in DTYPES:
        for cname, shape, attrs, zero in ADAM_CONFIGS:
            a = dict(decoupled=False, maximize=False)
            a.update(attrs)
            name = "%s/%s/%s" % (op, dt, cname)
            g = gen_for(name)
            p = uniform(shape, dt, -1, 1, g)
            gr = uniform(shape, dt, -1, 1, g)
            m = torch.zeros(shape, dtype=DT[dt]) if zero else uniform(shape, dt, -0.1, 0.1, g)
            v = torch.zeros(shape, dtype=DT[dt]) if zero else uniform(shape, dt, 0, 0.05, g)
            outs = [o.to(DT[dt]) for o in adam_ref(p, gr, m, v, a, compute_dtype(dt))]
            o64 = adam_ref(p, gr, m, v, a, torch.float64)
            r, at = tol(dt)
            add(name, op, [p, gr, m, v], outs, a, r, at, o64)


# ---- norm_multi / mul_multi: multi-tensor ops (torch._foreach_norm / _foreach_mul) ----
MULTI_SHAPES = [[3, 4], [], [5], [2, 3, 5], [700], [0]]


def norm_ref(x, p, cdt):
    """torch.linalg.vector_norm in cdt (0 for an empty tensor, where torch's inf-norm has no identity)"""
    if x.numel() == 0:
        return torch.zeros((), dtype=cdt)
    return torch.linalg.vector_norm(x.to(cdt), p)


def gen_multi():
    for dt in DTYPES:
        for pname, p in [("p2", 2.0), ("p1", 1.0), ("p3", 3.0), ("inf", math.inf)]:
            name = "norm_multi/%s/%s" % (dt, pname)
            g = gen_for(name)
            xs = [uniform(s, dt, -2, 2, g) for s in MULTI_SHAPES]
            cdt = compute_dtype(dt)
            want = torch.stack([norm_ref(x, p, cdt) for x in xs]).to(DT[dt])
            w64 = torch.stack([norm_ref(x, p, torch.float64) for x in xs])
            r, at = tol(dt, K=700, mag=2.0)
            add(name, "norm_multi", xs, [want], {"p": "inf" if math.isinf(p) else p}, r, at, [w64])
        name = "mul_multi/%s" % dt
        g = gen_for(name)
        xs = [uniform(s, dt, -2, 2, g) for s in MULTI_SHAPES]
        s = uniform([], dt, 0.1, 1, g)
        outs = [(x.to(compute_dtype(dt)) * s.to(compute_dtype(dt))).to(DT[dt]) for x in xs]
        o64 = [x.double() * s.double() for x in xs]
        r, at = tol(dt)
        add(name, "mul_multi", xs + [s], outs, {}, r, at, o64)


def main():
    gen_activation_backward()
    gen_layer_norm_backward()
    gen_attention_backward()
    gen_cross_entropy()
    gen_adam_step()
    gen_multi()
    with open(OUT, "w") as fh:
        fh.write('{"family": "ir", "cases": [\n')
        for i, c in enumerate(CASES):
            fh.write(json.dumps(c, separators=(",", ":"), allow_nan=False) + (",\n" if i + 1 < len(CASES) else "\n"))
        fh.write("]}\n")
    ops = sorted({c["op"] for c in CASES})
    print("ir: %d cases, %d ops (%s), %.1f KB" % (len(CASES), len(ops), " ".join(ops), os.path.getsize(OUT) / 1024))
    print("f64 cross-check: %d cases outside tolerance" % len(CHECK_FAIL))
    for n, v in CHECK_FAIL:
        print("   %s (%.3g of tolerance)" % (n, v))


if __name__ == "__main__":
    main()
