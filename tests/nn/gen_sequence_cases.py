#!/usr/bin/env python3
"""Reference values for ember's sequence layers (cases/sequence.json, read by sequence_test.cpp).

Run with Debian's python3-torch (1.13):  /usr/bin/python3 gen_sequence_cases.py
Every case builds a torch module in float64 with random weights (biases and norm gains too, so
that they matter), runs it in eval mode (dropout off) on random inputs, and records:
  config      the constructor arguments, as ember's config spells them
  params      the module's state_dict (the keys ember must reproduce)
  inputs      input tensors (masks carry "dtype": "bool")
  outputs     the forward results
  cotangents  one random tensor per output; the loss is sum(output * cotangent) over outputs
  grads       d loss / d input ("input.<name>") and d loss / d parameter ("param.<key>")
Positional encodings have no torch module: their references are the formulas written out here
(the PyTorch tutorial's PositionalEncoding; RoPE of RoFormer / GPT-NeoX). Deterministic.
"""
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(2024)
HERE = os.path.dirname(os.path.abspath(__file__))
D = torch.float64


def ser(t):
    t = t.detach().contiguous()
    out = {"shape": list(t.shape)}
    if t.dtype == torch.bool:
        out["dtype"] = "bool"
        out["data"] = [int(v) for v in t.reshape(-1).tolist()]
    else:
        # JSON has no infinities: they are written as the strings "inf" / "-inf"
        out["data"] = [float(f"{v:.12g}") if math.isfinite(v) else str(v) for v in t.reshape(-1).double().tolist()]
    return out


def randomize(module, scale=0.4):
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("norm1.weight") or name.endswith("norm2.weight") or name.endswith("norm3.weight") \
                    or name == "norm.weight":
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            else:
                p.copy_(scale * torch.randn_like(p))
    return module


def run_case(module, config, inputs, forward):
    """inputs: name -> tensor (float inputs get gradients). forward(**inputs) -> dict of outputs."""
    module = module.double().eval()
    ins = {}
    for k, v in inputs.items():
        if v is None:
            continue
        if v.is_floating_point():
            v = v.to(D)
            if "mask" not in k:  # masks are constants
                v.requires_grad_()
        ins[k] = v
    outs = forward(**ins)
    cots = {k: torch.randn_like(v) for k, v in outs.items()}
    loss = sum((outs[k] * cots[k]).sum() for k in outs)
    named = list(module.named_parameters())
    grad_targets = [v for v in ins.values() if v.requires_grad] + [p for _, p in named]
    grads = torch.autograd.grad(loss, grad_targets, allow_unused=True)
    gd = {}
    names = [f"input.{k}" for k, v in ins.items() if v.requires_grad] + [f"param.{k}" for k, _ in named]
    for n, g in zip(names, grads):
        if g is not None:
            gd[n] = ser(g)
    return {
        "config": config,
        "params": {k: ser(v) for k, v in module.state_dict().items()},
        "inputs": {k: ser(v) for k, v in ins.items()},
        "outputs": {k: ser(v) for k, v in outs.items()},
        "cotangents": {k: ser(v) for k, v in cots.items()},
        "grads": gd,
    }


cases = {}

# ---------------------------------------------------------------------------------------------
# MultiheadAttention
E, H = 8, 2


def mha_case(name, batch_first, bias, L, S, N, self_attn, kpm=False, mask=None, need_weights=False):
    m = randomize(nn.MultiheadAttention(E, H, dropout=0.0, bias=bias, batch_first=batch_first))
    shape_q = (N, L, E) if batch_first else (L, N, E)
    shape_k = (N, S, E) if batch_first else (S, N, E)
    q = torch.randn(*shape_q, dtype=D)
    inputs = {"query": q}
    if not self_attn:
        inputs["key"] = torch.randn(*shape_k, dtype=D)
        inputs["value"] = torch.randn(*shape_k, dtype=D)
    if kpm:
        pad = torch.zeros(N, S, dtype=torch.bool)
        pad[0, -1] = True
        pad[-1, :2] = True
        inputs["key_padding_mask"] = pad
    if mask is not None:
        inputs["attn_mask"] = mask

    def fwd(query, key=None, value=None, key_padding_mask=None, attn_mask=None):
        if key is None:
            key = value = query
        out, w = m(query, key, value, key_padding_mask=key_padding_mask, attn_mask=attn_mask,
                   need_weights=need_weights)
        res = {"output": out}
        if need_weights:
            res["weights"] = w
        return res

    cfg = {"embed_dim": E, "num_heads": H, "bias": bias, "batch_first": batch_first, "self_attention": self_attn,
           "need_weights": need_weights}
    cases[name] = run_case(m, cfg, inputs, fwd)


mha_case("mha_cross_weights", batch_first=False, bias=True, L=3, S=5, N=2, self_attn=False, need_weights=True)
mha_case("mha_self_masks", batch_first=True, bias=True, L=5, S=5, N=3, self_attn=True, kpm=True,
         mask=torch.tensor([[False, True, False, False, True]] * 5), need_weights=True)
mha_case("mha_float_mask_3d_nobias", batch_first=True, bias=False, L=4, S=6, N=2, self_attn=False,
         mask=0.5 * torch.randn(2 * H, 4, 6, dtype=D))
# Causal self-attention (ember: is_causal=true; torch 1.13 has no flag: the explicit triu mask).
mha_case("mha_causal", batch_first=True, bias=True, L=6, S=6, N=2, self_attn=True,
         mask=torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1))
cases["mha_causal"]["config"]["is_causal"] = True
mha_case("mha_causal_seq_first", batch_first=False, bias=True, L=5, S=5, N=2, self_attn=True,
         mask=torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1))
cases["mha_causal_seq_first"]["config"]["is_causal"] = True

# ---------------------------------------------------------------------------------------------
# Transformer layers and stacks (enable_nested_tensor off: its fast path zeroes padded positions)
DM, NH, FF = 8, 2, 16


def layer_cfg(act, norm_first, batch_first, eps=1e-5):
    return {"d_model": DM, "nhead": NH, "dim_feedforward": FF, "activation": act, "norm_first": norm_first,
            "batch_first": batch_first, "layer_norm_eps": eps}


def causal_float(n):
    return torch.triu(torch.full((n, n), float("-inf"), dtype=D), diagonal=1)


def encoder_case(name, act, norm_first, batch_first, num_layers=None, final_norm=False, eps=1e-5):
    layer = nn.TransformerEncoderLayer(DM, NH, FF, dropout=0.1, activation=act, layer_norm_eps=eps,
                                       batch_first=batch_first, norm_first=norm_first)
    if num_layers is None:
        m = layer
    else:
        m = nn.TransformerEncoder(layer, num_layers, norm=nn.LayerNorm(DM, eps=eps) if final_norm else None,
                                  enable_nested_tensor=False)
    randomize(m)
    N, S = 2, 5
    src = torch.randn(*((N, S, DM) if batch_first else (S, N, DM)), dtype=D)
    pad = torch.zeros(N, S, dtype=torch.bool)
    pad[1, -2:] = True
    inputs = {"src": src, "mask": causal_float(S), "src_key_padding_mask": pad}

    def fwd(src, mask, src_key_padding_mask):
        if num_layers is None:
            return {"output": m(src, src_mask=mask, src_key_padding_mask=src_key_padding_mask)}
        return {"output": m(src, mask=mask, src_key_padding_mask=src_key_padding_mask)}

    cfg = layer_cfg(act, norm_first, batch_first, eps)
    if num_layers is not None:
        cfg["num_layers"] = num_layers
        cfg["final_norm"] = final_norm
    cases[name] = run_case(m, cfg, inputs, fwd)


def decoder_case(name, act, norm_first, batch_first, num_layers=None, final_norm=False):
    layer = nn.TransformerDecoderLayer(DM, NH, FF, dropout=0.1, activation=act, batch_first=batch_first,
                                       norm_first=norm_first)
    if num_layers is None:
        m = layer
    else:
        m = nn.TransformerDecoder(layer, num_layers, norm=nn.LayerNorm(DM) if final_norm else None)
    randomize(m)
    N, T, S = 2, 4, 6
    tgt = torch.randn(*((N, T, DM) if batch_first else (T, N, DM)), dtype=D)
    memory = torch.randn(*((N, S, DM) if batch_first else (S, N, DM)), dtype=D)
    tpad = torch.zeros(N, T, dtype=torch.bool)
    tpad[0, -1] = True
    mpad = torch.zeros(N, S, dtype=torch.bool)
    mpad[1, -3:] = True
    inputs = {"tgt": tgt, "memory": memory, "tgt_mask": causal_float(T), "tgt_key_padding_mask": tpad,
              "memory_key_padding_mask": mpad}

    def fwd(tgt, memory, tgt_mask, tgt_key_padding_mask, memory_key_padding_mask):
        return {"output": m(tgt, memory, tgt_mask=tgt_mask, tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask)}

    cfg = layer_cfg(act, norm_first, batch_first)
    if num_layers is not None:
        cfg["num_layers"] = num_layers
        cfg["final_norm"] = final_norm
    cases[name] = run_case(m, cfg, inputs, fwd)


encoder_case("encoder_layer_post_relu", "relu", norm_first=False, batch_first=False)
encoder_case("encoder_layer_pre_gelu", "gelu", norm_first=True, batch_first=True, eps=1e-6)
decoder_case("decoder_layer_post_relu", "relu", norm_first=False, batch_first=True)
decoder_case("decoder_layer_pre_gelu", "gelu", norm_first=True, batch_first=False)
encoder_case("encoder_stack_norm", "relu", norm_first=True, batch_first=True, num_layers=2, final_norm=True)
decoder_case("decoder_stack", "gelu", norm_first=False, batch_first=True, num_layers=2, final_norm=False)
decoder_case("decoder_stack_norm", "relu", norm_first=True, batch_first=False, num_layers=2, final_norm=True)

# ---------------------------------------------------------------------------------------------
# Recurrent layers
IN, HID = 3, 4


def rnn_case(name, kind, num_layers, bidirectional, batch_first, bias=True, nonlinearity="tanh", with_h0=False,
             unbatched=False):
    kw = dict(num_layers=num_layers, bias=bias, batch_first=batch_first, bidirectional=bidirectional, dropout=0.0)
    if kind == "rnn":
        m = nn.RNN(IN, HID, nonlinearity=nonlinearity, **kw)
    elif kind == "lstm":
        m = nn.LSTM(IN, HID, **kw)
    else:
        m = nn.GRU(IN, HID, **kw)
    randomize(m, scale=0.5)
    L, N = 5, 2
    Dn = 2 if bidirectional else 1
    if unbatched:
        x = torch.randn(L, IN, dtype=D)
        hshape = (Dn * num_layers, HID)
    else:
        x = torch.randn(*((N, L, IN) if batch_first else (L, N, IN)), dtype=D)
        hshape = (Dn * num_layers, N, HID)
    inputs = {"input": x}
    if with_h0:
        inputs["h0"] = 0.5 * torch.randn(*hshape, dtype=D)
        if kind == "lstm":
            inputs["c0"] = 0.5 * torch.randn(*hshape, dtype=D)

    def fwd(input, h0=None, c0=None):
        if kind == "lstm":
            out, (h, c) = m(input, None if h0 is None else (h0, c0))
            return {"output": out, "h_n": h, "c_n": c}
        out, h = m(input, h0)
        return {"output": out, "h_n": h}

    cfg = {"kind": kind, "input_size": IN, "hidden_size": HID, "num_layers": num_layers, "bias": bias,
           "batch_first": batch_first, "bidirectional": bidirectional, "nonlinearity": nonlinearity}
    cases[name] = run_case(m, cfg, inputs, fwd)


rnn_case("rnn_tanh_2layer_bidir", "rnn", 2, True, False)
rnn_case("rnn_relu_batch_first_h0", "rnn", 1, False, True, nonlinearity="relu", with_h0=True)
rnn_case("lstm_2layer_bidir_batch_first_h0", "lstm", 2, True, True, with_h0=True)
rnn_case("lstm_nobias", "lstm", 1, False, False, bias=False)
rnn_case("lstm_unbatched", "lstm", 2, False, False, with_h0=True, unbatched=True)
rnn_case("gru_2layer_bidir", "gru", 2, True, False)
rnn_case("gru_batch_first_h0", "gru", 3, False, True, with_h0=True)

# ---------------------------------------------------------------------------------------------
# Positional encodings: formulas (float64; ember computes its tables in f32 and is compared with
# a tolerance).
def sinusoidal_table(max_len, d):
    # The PyTorch tutorial's PositionalEncoding, pe[pos, 0, :].
    position = torch.arange(max_len, dtype=D).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d, 2, dtype=D) * (-math.log(10000.0) / d))
    pe = torch.zeros(max_len, 1, d, dtype=D)
    pe[:, 0, 0::2] = torch.sin(position * div_term)
    pe[:, 0, 1::2] = torch.cos(position * div_term)
    return pe


for name, batch_first in (("positional_seq_first", False), ("positional_batch_first", True)):
    d, max_len, S, N = 6, 40, 7, 2
    pe = sinusoidal_table(max_len, d)
    x = torch.randn(*((N, S, d) if batch_first else (S, N, d)), dtype=D).requires_grad_()
    y = x + (pe[:S].transpose(0, 1) if batch_first else pe[:S])
    cot = torch.randn_like(y)
    (gx,) = torch.autograd.grad((y * cot).sum(), x)
    cases[name] = {"config": {"d_model": d, "max_len": max_len, "batch_first": batch_first},
                   "params": {"pe": ser(pe)}, "inputs": {"input": ser(x)}, "outputs": {"output": ser(y)},
                   "cotangents": {"output": ser(cot)}, "grads": {"input.input": ser(gx)}}


def rope(x, start, theta, interleaved):
    # x [..., S, d]; position of row s is start + s.
    S, d = x.shape[-2], x.shape[-1]
    inv = theta ** (-torch.arange(0, d, 2, dtype=D) / d)           # [d/2]
    ang = (start + torch.arange(S, dtype=D)).unsqueeze(1) * inv     # [S, d/2]
    cos, sin = torch.cos(ang), torch.sin(ang)
    if interleaved:  # RoFormer: pairs (x[2i], x[2i+1]) rotated by angle i
        a, b = x[..., 0::2], x[..., 1::2]
        ra, rb = a * cos - b * sin, a * sin + b * cos
        return torch.stack([ra, rb], dim=-1).flatten(-2)
    a, b = x[..., : d // 2], x[..., d // 2:]  # GPT-NeoX / HF LLaMA: pairs (x[i], x[i + d/2])
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


for name, interleaved, start, theta in (("rope_interleaved", True, 0, 10000.0), ("rope_half", False, 3, 10000.0),
                                        ("rope_half_theta", False, 0, 500.0)):
    d, max_len, S = 8, 32, 6
    x = torch.randn(2, 3, S, d, dtype=D).requires_grad_()
    y = rope(x, start, theta, interleaved)
    cot = torch.randn_like(y)
    (gx,) = torch.autograd.grad((y * cot).sum(), x)
    cases[name] = {"config": {"d_model": d, "max_len": max_len, "theta": theta, "interleaved": interleaved,
                              "start": start},
                   "params": {}, "inputs": {"input": ser(x)}, "outputs": {"output": ser(y)},
                   "cotangents": {"output": ser(cot)}, "grads": {"input.input": ser(gx)}}

with open(os.path.join(HERE, "cases", "sequence.json"), "w") as f:
    json.dump(cases, f, indent=None, separators=(",", ":"))
    f.write("\n")
print(f"wrote {len(cases)} cases")
