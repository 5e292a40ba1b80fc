#!/usr/bin/python3
"""Checks examples/llama against a reference forward pass written here in PyTorch (Debian's
python3-torch 1.13; no transformers, no safetensors package).

It builds a tiny random Llama (hidden 64, 3 layers, 4 heads, 2 KV heads, SwiGLU 160, vocab 300)
in Hugging Face's layout: config.json, model.safetensors (written by hand: 8-byte header length,
JSON header, raw data) and a byte-level BPE tokenizer.json whose merges it learns from a short
text. Then it runs the ember program with --dump-logits for f32, int8 and int4 weights: the
prompt in one pass, then one token per step through the KV cache, greedy. The reference runs the
prompt and the generated tokens in one causal pass (no cache), in float64, and must give:
  - the prompt's ids: the BPE encoding computed here (plus the BOS id);
  - f32: every prompt and decode logit within 1e-4 of the logit range;
  - int4 with --q8-activations (activations rounded to int8 blocks as well): within LOOSE["int8"]
    (relative RMS) of the reference with the same dequantized weights;
  - int8 / int4: the same against the reference with the same dequantized weights (blocks of 32
    along the input dim, symmetric, scale = max|w| / 127 or / 7, round half to even), and against
    the f32 reference within the looser bounds of LOOSE (relative RMS error: quantization error,
    not ember's);
  - a second checkpoint stored in bf16 with tied embeddings (no lm_head.weight): f32 within 1e-4.

  /usr/bin/python3 examples/llama/compare_torch.py --ember build/examples/llama --dir /tmp/llama-check
Exit status 0 when every check passes; the last line is "llama vs PyTorch: N/N checks passed".
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys

import torch

TIGHT = 1e-4  # of the logit range: ember against the reference with the same weights
# relative RMS error (|x - y| / |y - mean(y)| over all logits) of quantized ember against the f32
# reference. The quantization's own error, measured over seeds 0-3: 0.015-0.017 (int8) and
# 0.26-0.29 (int4: 127/7 = 18 times coarser steps, as expected); the limits leave about 1.5x.
LOOSE = {"int8": 0.025, "int4": 0.4}
BLOCK = 32

TRAIN_TEXT = ("the quick brown fox jumps over the lazy dog. the dog sleeps; the fox runs. "
              "a quick brown dog and a lazy fox meet at the river, and the river is quick. ") * 3
PROMPT = "the lazy fox jumps over the quick river"


# ---- byte-level BPE (GPT-2's scheme), for ASCII text ----------------------------------------

def bytes_to_unicode():
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


BYTE_CHAR = bytes_to_unicode()
# GPT-2's pre-tokenizer pattern restricted to ASCII letters and digits (the texts here are ASCII).
PRETOKEN = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+")


def pretokens(text):
    return ["".join(BYTE_CHAR[b] for b in m.group().encode()) for m in PRETOKEN.finditer(text)]


def merge_word(word, pair):
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def train_merges(text, count):
    words = [list(p) for p in pretokens(text)]
    merges = []
    for _ in range(count):
        pairs = {}
        for w in words:
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + 1
        if not pairs:
            break
        best = max(pairs.items(), key=lambda kv: (kv[1], [-ord(c) for c in kv[0][0] + "\0" + kv[0][1]]))[0]
        merges.append(best)
        words = [merge_word(w, best) for w in words]
    return merges


def bpe_encode(text, vocab, merges):
    rank = {m: i for i, m in enumerate(merges)}
    ids = []
    for p in pretokens(text):
        word = list(p)
        while len(word) > 1:
            best = min(zip(word, word[1:]), key=lambda pr: rank.get(pr, 1 << 30))
            if best not in rank:
                break
            word = merge_word(word, best)
        ids += [vocab[t] for t in word]
    return ids


# ---- files ----------------------------------------------------------------------------------

def write_safetensors(path, tensors, dtype):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.to(dtype).contiguous()
        raw = (t.view(torch.int16) if dtype == torch.bfloat16 else t).numpy().tobytes()
        header[name] = {"dtype": {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}[dtype],
                        "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def make_checkpoint(directory, cfg, vocab, merges, specials, dtype, seed):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    tok = {"version": "1.0", "truncation": None, "padding": None,
           "added_tokens": [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                             "normalized": False, "special": True} for s, i in specials.items()],
           "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
           "post_processor": None, "decoder": {"type": "ByteLevel"},
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "byte_fallback": False,
                     "vocab": vocab, "merges": [a + " " + b for a, b in merges]}}
    with open(os.path.join(directory, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    g = torch.Generator().manual_seed(seed)
    d, f_, hd = cfg["hidden_size"], cfg["intermediate_size"], cfg["hidden_size"] // cfg["num_attention_heads"]
    H, Hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]

    def rnd(*shape, std):
        return torch.randn(*shape, generator=g) * std

    w = {"model.embed_tokens.weight": rnd(cfg["vocab_size"], d, std=1.0)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = 1 + rnd(d, std=0.1)
        w[p + "post_attention_layernorm.weight"] = 1 + rnd(d, std=0.1)
        w[p + "self_attn.q_proj.weight"] = rnd(H * hd, d, std=0.1)
        w[p + "self_attn.k_proj.weight"] = rnd(Hkv * hd, d, std=0.1)
        w[p + "self_attn.v_proj.weight"] = rnd(Hkv * hd, d, std=0.15)
        w[p + "self_attn.o_proj.weight"] = rnd(d, H * hd, std=0.15)
        w[p + "mlp.gate_proj.weight"] = rnd(f_, d, std=0.15)
        w[p + "mlp.up_proj.weight"] = rnd(f_, d, std=0.15)
        w[p + "mlp.down_proj.weight"] = rnd(d, f_, std=0.1)
    w["model.norm.weight"] = 1 + rnd(d, std=0.1)
    if not cfg["tie_word_embeddings"]:
        w["lm_head.weight"] = rnd(cfg["vocab_size"], d, std=0.15)
    write_safetensors(os.path.join(directory, "model.safetensors"), w, dtype)
    return {k: v.to(dtype).float() for k, v in w.items()}  # the values ember reads


# ---- the reference --------------------------------------------------------------------------

def quantize_dequantize(w, bits):
    """Symmetric per-block quantization along the input dim, as ember's quant::quantize (f32)."""
    qmax = 127 if bits == 8 else 7
    n, k = w.shape
    blocks = w.reshape(n, k // BLOCK, BLOCK)
    scale = torch.clamp(blocks.abs().amax(-1, keepdim=True) / qmax, min=torch.finfo(torch.float32).eps)
    q = torch.round(blocks / scale).clamp(-qmax - 1, qmax)
    return (q * scale).reshape(n, k)


def reference_logits(w, cfg, ids, bits=0):
    f64 = torch.float64
    d, H, Hkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd, eps, theta = d // H, cfg["rms_norm_eps"], cfg["rope_theta"]

    def lin(name):
        t = w[name]
        return (quantize_dequantize(t, bits) if bits else t).to(f64)

    def rms(x, g):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g.to(f64)

    T = len(ids)
    inv_freq = theta ** (-torch.arange(0, hd, 2, dtype=f64) / hd)
    freqs = torch.outer(torch.arange(T, dtype=f64), inv_freq)
    emb = torch.cat([freqs, freqs], -1)
    cos, sin = emb.cos(), emb.sin()

    def rope(x):  # rotate_half: feature i pairs with i + hd/2
        x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    x = w["model.embed_tokens.weight"].to(f64)[torch.tensor(ids)]
    causal = torch.full((T, T), float("-inf"), dtype=f64).triu(1)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms(x, w[p + "input_layernorm.weight"])
        q = rope((h @ lin(p + "self_attn.q_proj.weight").T).view(T, H, hd).transpose(0, 1))
        k = rope((h @ lin(p + "self_attn.k_proj.weight").T).view(T, Hkv, hd).transpose(0, 1))
        v = (h @ lin(p + "self_attn.v_proj.weight").T).view(T, Hkv, hd).transpose(0, 1)
        k = k.repeat_interleave(H // Hkv, dim=0)  # Hugging Face's repeat_kv
        v = v.repeat_interleave(H // Hkv, dim=0)
        att = torch.softmax(q @ k.transpose(1, 2) / hd ** 0.5 + causal, -1) @ v
        x = x + att.transpose(0, 1).reshape(T, H * hd) @ lin(p + "self_attn.o_proj.weight").T
        h = rms(x, w[p + "post_attention_layernorm.weight"])
        gate, up = h @ lin(p + "mlp.gate_proj.weight").T, h @ lin(p + "mlp.up_proj.weight").T
        x = x + (torch.nn.functional.silu(gate) * up) @ lin(p + "mlp.down_proj.weight").T
    head = "model.embed_tokens.weight" if cfg["tie_word_embeddings"] else "lm_head.weight"
    return rms(x, w["model.norm.weight"]) @ lin(head).T


# ---- the unit tests' fixture ----------------------------------------------------------------

FIXTURE_CFG = {"hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2,
               "num_hidden_layers": 2, "vocab_size": 40, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
               "tie_word_embeddings": False}
FIXTURE_IDS = [1, 7, 30, 4, 12, 9, 39, 0]


def formula_weights(cfg):
    """Weights from a formula that llama_test.cpp repeats (no binary fixture): tensor n (in the
    order below), element j: scale * sin(((j * j) % 1009) * 0.0123 + j * 0.37 + n), in double
    precision, rounded to f32; norm gains 1 + 0.1 * that."""
    import math
    d, f_, H, Hkv = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = d // H
    spec = [("model.embed_tokens.weight", (cfg["vocab_size"], d), 1.0, False)]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        spec += [(p + "input_layernorm.weight", (d,), 0.1, True), (p + "post_attention_layernorm.weight", (d,), 0.1, True),
                 (p + "self_attn.q_proj.weight", (H * hd, d), 0.2, False),
                 (p + "self_attn.k_proj.weight", (Hkv * hd, d), 0.2, False),
                 (p + "self_attn.v_proj.weight", (Hkv * hd, d), 0.2, False),
                 (p + "self_attn.o_proj.weight", (d, H * hd), 0.2, False),
                 (p + "mlp.gate_proj.weight", (f_, d), 0.2, False), (p + "mlp.up_proj.weight", (f_, d), 0.2, False),
                 (p + "mlp.down_proj.weight", (d, f_), 0.2, False)]
    spec += [("model.norm.weight", (d,), 0.1, True), ("lm_head.weight", (cfg["vocab_size"], d), 0.2, False)]
    w = {}
    for n, (name, shape, scale, gain) in enumerate(spec):
        numel = 1
        for s in shape:
            numel *= s
        v = [scale * math.sin(((j * j) % 1009) * 0.0123 + j * 0.37 + n) for j in range(numel)]
        t = torch.tensor(v, dtype=torch.float64).float().reshape(shape)
        w[name] = 1 + t if gain else t
    return w


def write_fixture(path):
    logits = reference_logits(formula_weights(FIXTURE_CFG), FIXTURE_CFG, FIXTURE_IDS)
    with open(path, "w") as f:
        json.dump({"about": "examples/llama/compare_torch.py --write-fixture: reference logits (float64 PyTorch "
                            "forward) of formula_weights(FIXTURE_CFG) for the ids below, every position",
                   "config": FIXTURE_CFG, "ids": FIXTURE_IDS,
                   "logits": [[float("%.9g" % x) for x in row] for row in logits.tolist()]}, f, indent=None)
        f.write("\n")


# ---- the checks -----------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", help="the llama program (build/examples/llama)")
    ap.add_argument("--dir", help="a scratch directory for the checkpoints and dumps")
    ap.add_argument("--write-fixture", help="write llama_test.cpp's reference logits to this file and exit")
    ap.add_argument("--make-random", metavar="DIR", help="only write a random model of the sizes below to DIR "
                    "(bf16 on disk; for timing, e.g. --hidden 2048 --layers 8)")
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--intermediate", type=int, default=5632)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--new-tokens", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.write_fixture:
        write_fixture(a.write_fixture)
        return 0
    if a.make_random:
        merges = train_merges(TRAIN_TEXT, 36)
        vocab = {BYTE_CHAR[b]: b for b in range(256)}
        for m in merges:
            vocab[m[0] + m[1]] = len(vocab)
        specials = {"<s>": len(vocab), "</s>": len(vocab) + 1}
        cfg = {"model_type": "llama", "hidden_size": a.hidden, "intermediate_size": a.intermediate,
               "num_attention_heads": a.heads, "num_key_value_heads": a.kv_heads, "num_hidden_layers": a.layers,
               "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "vocab_size": a.vocab, "max_position_embeddings": 2048,
               "tie_word_embeddings": False, "bos_token_id": specials["<s>"], "eos_token_id": specials["</s>"]}
        make_checkpoint(a.make_random, cfg, vocab, merges, specials, torch.bfloat16, a.seed)
        return 0
    if not a.ember or not a.dir:
        ap.error("--ember and --dir are required")
    torch.manual_seed(a.seed)

    merges = train_merges(TRAIN_TEXT, 36)
    vocab = {BYTE_CHAR[b]: b for b in range(256)}
    for m in merges:
        vocab[m[0] + m[1]] = len(vocab)
    specials = {"<s>": len(vocab), "</s>": len(vocab) + 1}
    n_tok = len(vocab) + len(specials)
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
           "intermediate_size": 160, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 3,
           "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "vocab_size": n_tok + 6, "max_position_embeddings": 64,
           "tie_word_embeddings": False, "bos_token_id": specials["<s>"], "eos_token_id": specials["</s>"],
           "hidden_act": "silu", "torch_dtype": "float32"}
    expected_ids = [specials["<s>"]] + bpe_encode(PROMPT, vocab, merges)

    checks, failures = 0, []

    def check(ok, what):
        nonlocal checks
        checks += 1
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    def run_ember(directory, quant):
        dump = os.path.join(a.dir, f"dump-{os.path.basename(directory)}-{quant}.json")
        cmd = [a.ember, "--model", directory, "--prompt", PROMPT, "--max-new-tokens", str(a.new_tokens),
               "--quant", quant.split("+")[0], "--ignore-eos", "--dump-logits", dump]
        if quant.endswith("+q8x"):
            cmd.append("--q8-activations")
        r = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
        for line in r.stdout.splitlines():
            if line.startswith(("prefill:", "decode:")):
                print(f"   {os.path.basename(directory)} {quant} {line}")
        with open(dump) as f:
            return json.load(f)

    def rel_diff(x, y):
        return ((x - y).abs().max() / (y.max() - y.min())).item()

    def rel_rms(x, y):  # |x - y| / |y - mean(y)|, over all rows
        return ((x - y).norm() / (y - y.mean(-1, keepdim=True)).norm()).item()

    cases = [("f32-untied", torch.float32, False, ["f32", "int8", "int4", "int4+q8x"]),
             ("bf16-tied", torch.bfloat16, True, ["f32"])]
    for name, dtype, tied, quants in cases:
        cfg["tie_word_embeddings"] = tied
        directory = os.path.join(a.dir, name)
        w = make_checkpoint(directory, cfg, vocab, merges, specials, dtype, a.seed + len(name))
        for quant in quants:
            out = run_ember(directory, quant)
            ids, gen = out["prompt_ids"], out["generated_ids"]
            got = torch.tensor(out["logits"], dtype=torch.float64)
            check(ids == expected_ids, f"{name} {quant}: prompt ids {ids} (expected {expected_ids})")
            check(len(gen) == a.new_tokens and got.shape == (len(ids) + a.new_tokens - 1, cfg["vocab_size"]),
                  f"{name} {quant}: {len(gen)} tokens generated, logits {tuple(got.shape)}")
            seq = ids + gen[:-1]  # every position whose logits ember dumped, in one causal pass
            bits = {"f32": 0, "int8": 8, "int4": 4, "int4+q8x": 4}[quant]
            ref = reference_logits(w, cfg, seq, bits)
            T = len(ids)
            if quant.endswith("+q8x"):  # activations rounded to int8 blocks too: int8-sized error, not rounding
                e = rel_rms(got, ref)
                check(e <= LOOSE["int8"], f"{name} {quant} logits vs the reference with the same weights: relative "
                                          f"RMS error {e:.4f} (limit {LOOSE['int8']:g}: the activations' int8 rounding)")
            else:
                for part, rows in (("prompt", slice(0, T)), ("decode", slice(T, None))):
                    e = rel_diff(got[rows], ref[rows])
                    check(e <= TIGHT, f"{name} {quant} {part} logits vs the reference with the same weights: "
                                      f"max |diff| / range = {e:.2e} (limit {TIGHT:g})")
            check(all(g == int(got[T - 1 + i].argmax()) for i, g in enumerate(gen)),
                  f"{name} {quant}: each generated token is the argmax of its logits (greedy)")
            if bits:
                ref32 = reference_logits(w, cfg, seq, 0)  # f32 weights, the same tokens
                e, limit = rel_rms(got, ref32), LOOSE[quant.split("+")[0]]
                check(e <= limit, f"{name} {quant} logits vs the f32 reference: relative RMS error {e:.4f} "
                                         f"(limit {limit:g}; max |diff| / range {rel_diff(got, ref32):.3f})")
    print(f"llama vs PyTorch: {checks - len(failures)}/{checks} checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
