#!/usr/bin/env python3
"""Trains the same GPT-2 on the same batches in PyTorch and compares the losses with ember's.

    ./build/examples/gpt2 --config tiny --corpus-mb 2 --steps 100 --amp off --dump runs/dump
    /usr/bin/python3 examples/gpt2/compare_pytorch.py runs/dump [--device cpu|cuda] [--max-diff 0.02]
        [--compile] [--losses-out FILE] [--against FILE]

`--dump DIR` makes ember write the initial weights (DIR/init.safetensors, Hugging Face's GPT-2
names and layouts), every training batch in order (DIR/batches.safetensors: tokens
[batches, batch, seq + 1]) and the settings (DIR/settings.json); its per-step training losses
are in <run-dir>/steps.jsonl. This script builds GPT-2 in plain PyTorch (nanoGPT style:
scaled_dot_product_attention, tanh GELU, tied head), loads the same weights, and trains with the
same AdamW (betas 0.9/0.95, no decay on biases and LayerNorm weights), warmup + cosine
schedule, gradient accumulation, clipping to norm 1 and autocast (bf16 on the device's autocast,
or off). It prints both loss curves' mean absolute difference over the steps and exits 1 when it
is above --max-diff (issue 26: at most 0.02 over steps 1-100).
"""
import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

DTYPES = {"F32": torch.float32, "F64": torch.float64, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        begin, end = h["data_offsets"]
        t = torch.frombuffer(bytearray(data[8 + n + begin:8 + n + end]), dtype=DTYPES[h["dtype"]]) if end > begin \
            else torch.empty(0, dtype=DTYPES[h["dtype"]])
        out[name] = t.reshape(h["shape"])
    return out


class Conv1D(torch.nn.Module):  # GPT-2's projection: y = x W + b, W [in, out]
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(n_in, n_out))
        self.bias = torch.nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return torch.matmul(x, self.weight) + self.bias


class Attention(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.c_attn, self.c_proj, self.heads = Conv1D(d, 3 * d), Conv1D(d, d), heads

    def forward(self, x):
        B, T, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (t.view(B, T, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        if hasattr(F, "scaled_dot_product_attention"):  # PyTorch >= 2.0
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # Debian 12's 1.13: the same attention written out
            att = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
            att = att.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
            y = torch.matmul(att.softmax(-1), v)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, d))


class Mlp(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.c_fc, self.c_proj = Conv1D(d, 4 * d), Conv1D(4 * d, d)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln_1, self.attn = torch.nn.LayerNorm(d), Attention(d, heads)
        self.ln_2, self.mlp = torch.nn.LayerNorm(d), Mlp(d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Gpt2(torch.nn.Module):
    def __init__(self, vocab, context, layers, heads, d):
        super().__init__()
        self.wte, self.wpe = torch.nn.Embedding(vocab, d), torch.nn.Embedding(context, d)
        self.h = torch.nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(d)

    def forward(self, tokens):
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.size(1), device=tokens.device))
        for b in self.h:
            x = b(x)
        return torch.matmul(self.ln_f(x), self.wte.weight.t())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--max-diff", type=float, default=0.02)
    ap.add_argument("--compile", action="store_true", help="run the PyTorch model under torch.compile")
    ap.add_argument("--losses-out", help="also write PyTorch's per-step losses here (JSON list)")
    ap.add_argument("--against", help="compare with these losses (a --losses-out file) instead of ember's")
    a = ap.parse_args()
    s = json.load(open(os.path.join(a.dump, "settings.json")))
    dev = torch.device(a.device)
    torch.manual_seed(0)
    model = Gpt2(s["vocab"], s["context"], s["layers"], s["heads"], s["d_model"]).to(dev)
    state = {k: v.to(dev) for k, v in read_safetensors(os.path.join(a.dump, "init.safetensors")).items()}
    model.load_state_dict(state, strict=True)
    fwd = torch.compile(model) if a.compile else model
    tokens = read_safetensors(os.path.join(a.dump, "batches.safetensors"))["tokens"].to(dev)

    no_decay = lambda n: n.endswith("bias") or n.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight"))  # noqa: E731
    params = list(model.named_parameters())
    opt = torch.optim.AdamW([{"params": [p for n, p in params if not no_decay(n)], "weight_decay": s["weight_decay"]},
                             {"params": [p for n, p in params if no_decay(n)], "weight_decay": 0.0}],
                            lr=s["lr"], betas=(0.9, 0.95))
    warm = max(1, s["warmup"])
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, s["steps"] - s["warmup"]), eta_min=s["lr"] / 10)
    sched = cosine if s["warmup"] == 0 else torch.optim.lr_scheduler.SequentialLR(opt, [
        torch.optim.lr_scheduler.LinearLR(opt, start_factor=1.0 / warm, end_factor=1.0, total_iters=warm), cosine],
        milestones=[s["warmup"]])
    amp = s["amp"]
    autocast = (lambda: torch.autocast(dev.type, dtype=torch.bfloat16 if amp == "bf16" else torch.float16)) \
        if amp != "off" else (lambda: torch.autocast(dev.type, enabled=False))
    scaler = torch.cuda.amp.GradScaler() if amp == "f16" and dev.type == "cuda" else None

    losses = []
    accum, n = s["accum"], tokens.size(0)
    for step in range(n // accum):
        opt.zero_grad(set_to_none=True)
        for k in range(accum):
            b = tokens[step * accum + k]
            with autocast():
                logits = fwd(b[:, :-1])
                loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), b[:, 1:].reshape(-1))
            losses.append(loss.item())
            (scaler.scale(loss / accum) if scaler else loss / accum).backward()
        if scaler:
            scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if scaler:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        sched.step()

    if a.losses_out:
        with open(a.losses_out, "w") as f:
            json.dump(losses, f)
    ember = []
    if a.against:  # e.g. PyTorch eager against PyTorch under torch.compile: the rounding noise floor
        ember = json.load(open(a.against))
    else:
        with open(os.path.join(s["run_dir"], "steps.jsonl")) as f:
            for line in f:
                ember.append(json.loads(line)["loss"])
    m = min(len(ember), len(losses))
    if m == 0:
        print("compare_pytorch: no steps to compare", file=sys.stderr)
        return 1
    diffs = [abs(x - y) for x, y in zip(ember[:m], losses[:m])]
    who = "other" if a.against else "ember"
    mean = sum(diffs) / m
    for i in sorted({0, 1, m // 4, m // 2, 3 * m // 4, m - 1, diffs.index(max(diffs))}):
        print(f"step {i + 1:4d}: {who} {ember[i]:.5f}  pytorch {losses[i]:.5f}")
    for q in range(0, m, 10):  # the mean difference over each run of 10 steps: drift or noise
        print(f"steps {q + 1:3d}-{min(m, q + 10):3d}: mean |diff| {sum(diffs[q:q + 10]) / len(diffs[q:q + 10]):.5f}")
    print(f"mean |loss_{who} - loss_pytorch| over {m} steps: {mean:.6f} (max {max(diffs):.6f}; "
          f"limit {a.max_diff}; torch {torch.__version__}, {a.device}, autocast {amp})")
    return 0 if mean <= a.max_diff and math.isfinite(mean) else 1


if __name__ == "__main__":
    sys.exit(main())
