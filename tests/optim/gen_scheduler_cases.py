#!/usr/bin/python3
"""Writes cases/schedulers.json: learning-rate sequences from PyTorch 1.13's torch.optim.lr_scheduler.

Each case holds the lr seen in optimizer.param_groups[0]['lr'] right after the scheduler is built and
after each of STEPS scheduler.step() calls (so STEPS + 1 values). ReduceLROnPlateau cases also hold
the metric fed to each step. Schedulers torch lacks are run through LambdaLR with their published
formula: NoamLR (Vaswani et al. 2017, "Attention is all you need", eq. 3) and WarmupLinearLR (linear
warm-up then linear decay, as transformers' get_linear_schedule_with_warmup documents it).

Run with the system python that has torch:  /usr/bin/python3 tests/optim/gen_scheduler_cases.py
"""
import json
import math
import os
import random
import warnings

import torch
from torch.optim import lr_scheduler as S

STEPS = 100
HERE = os.path.dirname(os.path.abspath(__file__))

# Factor functions for LambdaLR cases; scheduler_test.cpp defines the same ones by name.
LAMBDAS = {
    "pow_0.95": lambda e: 0.95 ** e,
    "inv_sqrt_1p": lambda e: 1.0 / math.sqrt(1.0 + e),
}


def noam_factor(d_model, warmup):
    def f(e):
        s = e + 1  # 1-based optimizer step
        return d_model ** -0.5 * min(s ** -0.5, s * warmup ** -1.5)
    return f


def warmup_linear_factor(warmup, total):
    def f(t):
        if t < warmup:
            return float(t) / float(max(1, warmup))
        return max(0.0, float(total - t) / float(max(1, total - warmup)))
    return f


def make_optimizer(base_lr):
    p = torch.zeros(1, requires_grad=True)
    return torch.optim.SGD([p], lr=base_lr, momentum=0.9)


def build(opt, spec):
    """Builds the torch scheduler for a {"scheduler", "config"} spec on `opt`."""
    kind, c = spec["scheduler"], spec.get("config", {})
    if kind == "FixedLR":
        return S.LambdaLR(opt, lambda e: 1.0)
    if kind == "LambdaLR":
        return S.LambdaLR(opt, LAMBDAS[c["lambda"]])
    if kind == "ConstantLR":
        return S.ConstantLR(opt, factor=c["factor"], total_iters=c["total_iters"])
    if kind == "StepLR":
        return S.StepLR(opt, step_size=c["step_size"], gamma=c["gamma"])
    if kind == "MultiStepLR":
        return S.MultiStepLR(opt, milestones=c["milestones"], gamma=c["gamma"])
    if kind == "ExponentialLR":
        return S.ExponentialLR(opt, gamma=c["gamma"])
    if kind == "LinearLR":
        return S.LinearLR(opt, start_factor=c["start_factor"], end_factor=c["end_factor"],
                          total_iters=c["total_iters"])
    if kind == "PolynomialLR":
        return S.PolynomialLR(opt, total_iters=c["total_iters"], power=c["power"])
    if kind == "CosineAnnealingLR":
        return S.CosineAnnealingLR(opt, T_max=c["t_max"], eta_min=c["eta_min"])
    if kind == "CosineAnnealingWarmRestarts":
        return S.CosineAnnealingWarmRestarts(opt, T_0=c["t_0"], T_mult=c["t_mult"], eta_min=c["eta_min"])
    if kind == "OneCycleLR":
        return S.OneCycleLR(opt, max_lr=c["max_lr"], total_steps=c["total_steps"], pct_start=c["pct_start"],
                            anneal_strategy=c["anneal_strategy"], div_factor=c["div_factor"],
                            final_div_factor=c["final_div_factor"], three_phase=c["three_phase"])
    if kind == "NoamLR":
        return S.LambdaLR(opt, noam_factor(c["d_model"], c["warmup_steps"]))
    if kind == "WarmupLinearLR":
        return S.LambdaLR(opt, warmup_linear_factor(c["warmup_steps"], c["total_steps"]))
    if kind == "ReduceLROnPlateau":
        return S.ReduceLROnPlateau(opt, mode=c["mode"], factor=c["factor"], patience=c["patience"],
                                   threshold=c["threshold"], threshold_mode=c["threshold_mode"],
                                   cooldown=c["cooldown"], min_lr=c["min_lr"], eps=c["eps"])
    if kind == "ChainedScheduler":
        return S.ChainedScheduler([build(opt, s) for s in c["schedulers"]])
    if kind == "SequentialLR":
        children = [build(opt, s) for s in c["schedulers"]]
        return S.SequentialLR(opt, schedulers=children, milestones=c["milestones"])
    raise ValueError(kind)


def run(spec, base_lr, metrics=None):
    opt = make_optimizer(base_lr)
    sched = build(opt, spec)
    lrs = [opt.param_groups[0]["lr"]]
    for i in range(STEPS):
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[i])
        lrs.append(opt.param_groups[0]["lr"])
    return lrs


def plateau_metrics(seed, mode):
    """A loss-like (min) or accuracy-like (max) curve with plateaus and noise."""
    rng = random.Random(seed)
    out = []
    for i in range(STEPS):
        if i < 25:
            v = 2.0 - 0.05 * i
        elif i < 55:
            v = 0.75 + 0.002 * rng.uniform(-1, 1)
        elif i < 70:
            v = 0.75 - 0.02 * (i - 55)
        else:
            v = 0.45 + 0.01 * rng.uniform(-1, 1)
        out.append(v if mode == "min" else 3.0 - v)
    return out


def spec(kind, **config):
    return {"scheduler": kind, "config": config}


def cases():
    out = []

    def add(s, base_lr=0.1, metrics=None):
        label = ",".join(f"{k}={v}" for k, v in s["config"].items() if k != "schedulers")
        if "schedulers" in s["config"]:
            label = "+".join(c["scheduler"] for c in s["config"]["schedulers"]) + ("," + label if label else "")
        case = dict(s)
        case["name"] = f"{s['scheduler']}/{label}/lr={base_lr}"
        case["base_lr"] = base_lr
        if metrics is not None:
            case["metrics"] = metrics
        case["lrs"] = run(s, base_lr, metrics)
        out.append(case)

    add(spec("FixedLR"))
    add(spec("FixedLR"), base_lr=3e-4)
    add(spec("LambdaLR", **{"lambda": "pow_0.95"}))
    add(spec("LambdaLR", **{"lambda": "inv_sqrt_1p"}), base_lr=0.5)

    add(spec("ConstantLR", factor=1.0 / 3, total_iters=5))
    add(spec("ConstantLR", factor=0.5, total_iters=4), base_lr=0.05)
    add(spec("ConstantLR", factor=0.1, total_iters=100))
    add(spec("ConstantLR", factor=0.25, total_iters=0))

    add(spec("StepLR", step_size=30, gamma=0.1))
    add(spec("StepLR", step_size=7, gamma=0.5), base_lr=1.0)
    add(spec("StepLR", step_size=1, gamma=0.97), base_lr=0.01)

    add(spec("MultiStepLR", milestones=[30, 80], gamma=0.1))
    add(spec("MultiStepLR", milestones=[50, 10, 10], gamma=0.5), base_lr=2.0)
    add(spec("MultiStepLR", milestones=[0, 5, 99], gamma=0.3))

    add(spec("ExponentialLR", gamma=0.95))
    add(spec("ExponentialLR", gamma=0.9), base_lr=1.0)
    add(spec("ExponentialLR", gamma=1.0), base_lr=0.003)

    add(spec("LinearLR", start_factor=1.0 / 3, end_factor=1.0, total_iters=5))
    add(spec("LinearLR", start_factor=0.5, end_factor=1.0, total_iters=4), base_lr=0.05)
    add(spec("LinearLR", start_factor=1.0, end_factor=0.1, total_iters=60))
    add(spec("LinearLR", start_factor=0.001, end_factor=1.0, total_iters=100), base_lr=3e-4)
    add(spec("LinearLR", start_factor=0.25, end_factor=0.75, total_iters=150))

    add(spec("PolynomialLR", total_iters=5, power=1.0))
    add(spec("PolynomialLR", total_iters=50, power=2.0), base_lr=0.5)
    add(spec("PolynomialLR", total_iters=120, power=0.5))

    add(spec("CosineAnnealingLR", t_max=100, eta_min=0.0))
    add(spec("CosineAnnealingLR", t_max=30, eta_min=0.001))
    add(spec("CosineAnnealingLR", t_max=7, eta_min=0.01), base_lr=1.0)
    add(spec("CosineAnnealingLR", t_max=1, eta_min=0.0))
    add(spec("CosineAnnealingLR", t_max=250, eta_min=1e-5), base_lr=3e-4)

    add(spec("CosineAnnealingWarmRestarts", t_0=10, t_mult=1, eta_min=0.0))
    add(spec("CosineAnnealingWarmRestarts", t_0=5, t_mult=2, eta_min=1e-3))
    add(spec("CosineAnnealingWarmRestarts", t_0=3, t_mult=3, eta_min=0.0), base_lr=1.0)
    add(spec("CosineAnnealingWarmRestarts", t_0=1, t_mult=1, eta_min=0.0))

    def one_cycle(max_lr, total_steps, pct_start=0.3, anneal_strategy="cos", div_factor=25.0,
                  final_div_factor=1e4, three_phase=False):
        return spec("OneCycleLR", max_lr=max_lr, total_steps=total_steps, pct_start=pct_start,
                    anneal_strategy=anneal_strategy, div_factor=div_factor, final_div_factor=final_div_factor,
                    three_phase=three_phase)

    add(one_cycle(0.1, 100))
    add(one_cycle(1.0, 100, pct_start=0.25, anneal_strategy="linear"))
    add(one_cycle(0.5, 100, three_phase=True))
    add(one_cycle(0.01, 130, pct_start=0.1, anneal_strategy="linear", div_factor=10.0, final_div_factor=100.0,
                  three_phase=True))
    add(one_cycle(0.3, 250, pct_start=0.45))

    add(spec("NoamLR", d_model=512, warmup_steps=10), base_lr=1.0)
    add(spec("NoamLR", d_model=256, warmup_steps=40), base_lr=2.0)
    add(spec("NoamLR", d_model=64, warmup_steps=4000), base_lr=0.5)

    add(spec("WarmupLinearLR", warmup_steps=10, total_steps=100))
    add(spec("WarmupLinearLR", warmup_steps=0, total_steps=50), base_lr=5e-5)
    add(spec("WarmupLinearLR", warmup_steps=30, total_steps=80))

    def plateau(mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel", cooldown=0,
                min_lr=0.0, eps=1e-8):
        return spec("ReduceLROnPlateau", mode=mode, factor=factor, patience=patience, threshold=threshold,
                    threshold_mode=threshold_mode, cooldown=cooldown, min_lr=min_lr, eps=eps)

    add(plateau(), metrics=plateau_metrics(1, "min"))
    add(plateau(mode="max", factor=0.5, patience=2, threshold=0.01, threshold_mode="abs", cooldown=3),
        metrics=plateau_metrics(2, "max"))
    add(plateau(factor=0.3, patience=0, threshold_mode="abs", min_lr=1e-3), metrics=plateau_metrics(3, "min"))
    add(plateau(factor=0.5, patience=3, min_lr=0.02, eps=1e-3, cooldown=1), base_lr=1.0,
        metrics=plateau_metrics(4, "min"))
    add(plateau(mode="max", factor=0.2, patience=5, threshold=0.001), metrics=plateau_metrics(5, "max"))

    lin = lambda sf, ef, n: spec("LinearLR", start_factor=sf, end_factor=ef, total_iters=n)  # noqa: E731
    add(spec("SequentialLR", schedulers=[lin(0.1, 1.0, 5), spec("CosineAnnealingLR", t_max=95, eta_min=0.0)],
             milestones=[5]))
    add(spec("SequentialLR", schedulers=[spec("ConstantLR", factor=0.1, total_iters=2),
                                         spec("ExponentialLR", gamma=0.9)], milestones=[2]), base_lr=1.0)
    add(spec("SequentialLR", schedulers=[lin(0.01, 1.0, 10), spec("StepLR", step_size=15, gamma=0.5),
                                         spec("ExponentialLR", gamma=0.97)], milestones=[10, 50]))
    add(spec("SequentialLR", schedulers=[spec("ExponentialLR", gamma=0.8),
                                         spec("CosineAnnealingWarmRestarts", t_0=10, t_mult=2, eta_min=1e-4)],
             milestones=[20]))
    add(spec("SequentialLR", schedulers=[lin(0.2, 1.0, 8), spec("CosineAnnealingLR", t_max=20, eta_min=0.01),
                                         spec("MultiStepLR", milestones=[0, 10, 30], gamma=0.5)],
             milestones=[8, 40]), base_lr=0.5)

    add(spec("ChainedScheduler", schedulers=[spec("ConstantLR", factor=0.1, total_iters=2),
                                             spec("ExponentialLR", gamma=0.9)]), base_lr=1.0)
    add(spec("ChainedScheduler", schedulers=[lin(0.01, 1.0, 10), spec("CosineAnnealingLR", t_max=100,
                                                                          eta_min=0.0)]))
    add(spec("ChainedScheduler", schedulers=[spec("StepLR", step_size=10, gamma=0.5),
                                             spec("MultiStepLR", milestones=[20, 40], gamma=0.5),
                                             spec("ExponentialLR", gamma=0.99)]))
    add(spec("ChainedScheduler", schedulers=[
        spec("SequentialLR", schedulers=[lin(0.1, 1.0, 10), spec("CosineAnnealingLR", t_max=90, eta_min=0.0)],
             milestones=[10]),
        spec("ExponentialLR", gamma=0.995)]))
    add(spec("ChainedScheduler", schedulers=[spec("PolynomialLR", total_iters=80, power=1.5),
                                             lin(0.5, 1.0, 20)]), base_lr=0.2)
    return out


def check_noam_formula(cases):
    """NoamLR ran through LambdaLR; check it against the paper's formula evaluated directly."""
    for c in cases:
        if c["scheduler"] != "NoamLR":
            continue
        cfg = c["config"]
        for e, got in enumerate(c["lrs"]):
            s = e + 1
            want = c["base_lr"] * cfg["d_model"] ** -0.5 * min(s ** -0.5, s * cfg["warmup_steps"] ** -1.5)
            assert abs(got - want) <= 1e-15 * abs(want), (c["name"], e, got, want)


def main():
    warnings.filterwarnings("ignore")
    all_cases = cases()
    check_noam_formula(all_cases)
    os.makedirs(os.path.join(HERE, "cases"), exist_ok=True)
    path = os.path.join(HERE, "cases", "schedulers.json")
    with open(path, "w") as f:
        json.dump({"generator": "tests/optim/gen_scheduler_cases.py", "torch": torch.__version__, "steps": STEPS,
                   "cases": all_cases}, f, indent=1)
        f.write("\n")
    kinds = sorted({c["scheduler"] for c in all_cases})
    print(f"wrote {path}: {len(all_cases)} cases, {len(kinds)} schedulers: {', '.join(kinds)}")


if __name__ == "__main__":
    main()
