#!/usr/bin/env python3
"""The PyTorch side of ./bench.sh cuda: the same benchmarks as bench_cuda.cpp, timed with the
same method (warm-up, a loop calibrated to >= 20 ms, median over samples, each ended by a device
synchronisation), on the same GPU, in the same invocation. Writes a JSON list of
{"name", "peer_ms", extra fields}. Also measures the device-to-device copy bandwidth (the
ceiling for add_f32_256M).

Correctness: bench_cuda.cpp (run first) writes each row's check inputs and ember's outputs on
them to --check-dir; check() runs PyTorch on the same inputs and records "check" ("ok",
"mismatch" or "missing") and "check_detail" in the row; cuda_report.py fails the run on a
mismatch."""
import contextlib
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else "build/reports/bench-cuda-peer.json"
filt = sys.argv[sys.argv.index("--filter") + 1].split(",") if "--filter" in sys.argv else []
check_dir = sys.argv[sys.argv.index("--check-dir") + 1] if "--check-dir" in sys.argv else "build/reports/bench-cuda-check"
dev = torch.device("cuda:0")
torch.manual_seed(0)
results = []


def time_ms(f, samples=9):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    reps = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(reps):
            f()
        torch.cuda.synchronize()
        t = (time.perf_counter() - t0) * 1e3
        if t >= 20 or reps >= (1 << 20):
            break
        reps *= 8 if t < 2 else 2
    v = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(reps):
            f()
        torch.cuda.synchronize()
        v.append((time.perf_counter() - t0) * 1e3 / reps)
    v.sort()
    return v[len(v) // 2]


SAFETENSORS_DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
                      "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
                      "BOOL": torch.bool}


def read_safetensors(path):
    """{name: tensor} (on the CPU) of a safetensors file: the checks bench_cuda.cpp writes, and
    export_resnet18.py's reference."""
    with open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        dtype = SAFETENSORS_DTYPES[h["dtype"]]
        begin, end = h["data_offsets"]
        if begin == end:
            out[name] = torch.empty(h["shape"], dtype=dtype)
        else:
            out[name] = torch.frombuffer(bytearray(data[8 + n + begin:8 + n + end]), dtype=dtype).reshape(h["shape"])
    return out


# tolerances: |ember - torch| <= atol + atol_of_max * max|torch| + rtol * |torch|, per tensor
EXACT = dict(rtol=0.0, atol=0.0, atol_of_max=0.0)      # exactly rounded on both sides, or integers
F32 = dict(rtol=1e-4, atol=0.0, atol_of_max=1e-5)      # f32, a different summation order
TF32 = dict(rtol=1e-2, atol=0.0, atol_of_max=1e-2)     # f32 matmuls through TF32
BF16 = dict(rtol=2e-2, atol=0.0, atol_of_max=2e-2)     # bf16 outputs (8 significant bits)


def compare(key, got, want, rtol, atol, atol_of_max):
    """Why ember's `got` differs from PyTorch's `want` beyond the tolerance, or None."""
    if tuple(got.shape) != tuple(want.shape):
        return f"{key}: shape {list(got.shape)}, PyTorch {list(want.shape)}"
    if got.dtype != want.dtype:
        return f"{key}: dtype {got.dtype}, PyTorch {want.dtype}"
    g, w = got.detach().double().cpu(), want.detach().double().cpu()
    if got.numel() == 0:
        return None
    nan = torch.isnan(w)
    if not torch.equal(nan, torch.isnan(g)):
        return f"{key}: NaN at different places"
    finite = torch.isfinite(w) & ~nan
    if not torch.equal(g[~finite & ~nan], w[~finite & ~nan]):
        return f"{key}: infinities differ"
    max_ref = w[finite].abs().max().item() if finite.any() else 0.0
    bound = atol + atol_of_max * max_ref + rtol * w.abs()
    bad = (g - w).abs() > bound
    bad &= finite
    if bad.any():
        i = int(bad.flatten().nonzero()[0])
        return (f"{key}: {int(bad.sum())} of {got.numel()} elements differ; element {i}: ember "
                f"{g.flatten()[i].item():.9g}, PyTorch {w.flatten()[i].item():.9g} (max |diff| "
                f"{(g - w)[finite].abs().max().item():.3g}; rtol {rtol}, atol {atol}, atol_of_max {atol_of_max})")
    return None


def check(r, fn, tol, per_key=None):
    """The row's correctness check: fn(inputs, ember) runs PyTorch on the inputs bench_cuda.cpp
    wrote for this row (a dict of tensors on the GPU, "in." dropped) and returns a dict of
    results, one per ember output (`ember`, "out." dropped); each is compared with ember's
    within `tol`, or per_key[prefix] for keys that start with prefix."""
    path = os.path.join(check_dir, r["name"] + ".safetensors")
    if not os.path.exists(path):
        r["check"] = "missing"
        r["check_detail"] = f"{path} not written (the ember side failed or did not run this row)"
        return
    data = read_safetensors(path)
    inputs = {k[3:]: v.to(dev) for k, v in data.items() if k.startswith("in.")}
    ember = {k[4:]: v for k, v in data.items() if k.startswith("out.")}
    try:
        want = fn(inputs, ember)
        errors = [] if set(want) == set(ember) else [f"outputs {sorted(ember)}, PyTorch gave {sorted(want)}"]
        for k in sorted(set(want) & set(ember)):
            t = next((t for p, t in (per_key or {}).items() if k.startswith(p)), tol)
            e = compare(k, ember[k], want[k], **t)
            if e:
                errors.append(e)
    except Exception as e:  # noqa: BLE001 - a check that cannot run is a failed check
        errors = [f"the check raised {type(e).__name__}: {e}"]
    r["check"] = "mismatch" if errors else "ok"
    if errors:
        r["check_detail"] = "; ".join(errors)[:2000]
        print(f"{r['name']}: CHECK FAILED: {r['check_detail']}", file=sys.stderr)


def step_reference(model, opt, inputs, ember, loss_of, before_update=None):
    """PyTorch's side of a training-step check (bench_cuda.cpp's save_step_check): loads the
    parameters ember started from ("param.<key>"), runs one step of `opt` on loss_of(model)
    (before_update(model) between the backward pass and the update: gradient clipping) and
    returns the loss, the gradients and the updated parameters. The update of an element whose
    gradient is near zero (|g| < 1e-2 max|g| of its tensor) is not compared (it takes ember's
    value): Adam's first step moves every element by about lr * sign(g), and the sign of a
    near-zero gradient is rounding noise."""
    state = {k[6:]: v for k, v in inputs.items() if k.startswith("param.")}
    model.load_state_dict(state, strict=True)
    params = dict(model.named_parameters())
    opt.zero_grad(set_to_none=True)
    loss = loss_of(model)
    loss.backward()
    grads = {k: p.grad.detach().clone() for k, p in params.items()}
    if before_update:
        before_update(model)
    opt.step()
    out = {"loss": loss.detach()}
    for k, p in params.items():
        g = grads[k]
        noise = g.abs() < 1e-2 * g.abs().max()
        out["grad." + k] = g
        out["param." + k] = torch.where(noise, ember["param." + k].to(g.device), p.detach())
    return out


def bench(name):
    def deco(fn):
        if filt and not any(p and p in name for p in filt):
            return fn
        r = {"name": name}
        try:
            fn(r)
            print(f"{name}: {r['peer_ms']:.4f} ms", file=sys.stderr)
        except Exception as e:  # noqa: BLE001 - report and go on
            r["peer_ms"] = None
            r["peer_error"] = str(e)
            print(f"{name}: error: {e}", file=sys.stderr)
        results.append(r)
        torch.cuda.empty_cache()
        return fn
    return deco


def matmul(name, dtype, n, tf32):
    @bench(name)
    def _(r):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        check(r, lambda i, _: {"c": torch.matmul(i["a"], i["b"])},
              BF16 if dtype == torch.bfloat16 else TF32 if tf32 else F32)
        a = torch.randn(n, n, device=dev).to(dtype)
        b = torch.randn(n, n, device=dev).to(dtype)
        r["peer_ms"] = time_ms(lambda: torch.matmul(a, b))
        torch.backends.cuda.matmul.allow_tf32 = False
        r["tflops_peer"] = 2.0 * n ** 3 / (r["peer_ms"] * 1e-3) / 1e12


matmul("matmul_bf16_8192", torch.bfloat16, 8192, False)
matmul("matmul_f32_4096", torch.float32, 4096, False)
matmul("matmul_tf32_4096", torch.float32, 4096, True)


@bench("add_f32_256M")
def _(r):
    check(r, lambda i, _: {"y": i["a"] + i["b"]}, EXACT)
    n = 256 << 20
    a = torch.randn(n, device=dev)
    b = torch.randn(n, device=dev)
    r["peer_ms"] = time_ms(lambda: a + b)
    r["gbps_peer"] = 3.0 * n * 4 / (r["peer_ms"] * 1e-3) / 1e9
    c = torch.empty_like(a)
    copy_ms = time_ms(lambda: c.copy_(a))
    r["copy_gbps"] = 2.0 * n * 4 / (copy_ms * 1e-3) / 1e9


@bench("add_bias_f32_8192x4096")
def _(r):
    check(r, lambda i, _: {"y": i["x"] + i["b"]}, EXACT)
    x = torch.randn(8192, 4096, device=dev)
    b = torch.randn(4096, device=dev)
    r["peer_ms"] = time_ms(lambda: x + b)


@bench("add_transposed_f32_8192x4096")
def _(r):
    check(r, lambda i, _: {"y": i["x"] + i["yt"].t()}, EXACT)
    x = torch.randn(8192, 4096, device=dev)
    y = torch.randn(4096, 8192, device=dev).t()
    r["peer_ms"] = time_ms(lambda: x + y)


@bench("contiguous_transposed_f32_8192x4096")
def _(r):
    check(r, lambda i, _: {"y": i["yt"].t().contiguous()}, EXACT)
    y = torch.randn(4096, 8192, device=dev).t()
    r["peer_ms"] = time_ms(lambda: y.contiguous())


@bench("embedding_f32_50257x1024_8192")
def _(r):
    check(r, lambda i, _: {"y": F.embedding(i["ix"], i["w"])}, EXACT)
    w = torch.randn(50257, 1024, device=dev)
    ix = torch.randint(0, 50257, (8192,), device=dev)
    r["peer_ms"] = time_ms(lambda: F.embedding(ix, w))


@bench("scatter_add_f32_8192x4096_into_1024")
def _(r):
    check(r, lambda i, _: {"y": i["z"].scatter_add(0, i["ix"], i["src"])}, F32)
    z = torch.zeros(1024, 4096, device=dev)
    ix = torch.randint(0, 1024, (8192, 4096), device=dev)
    src = torch.randn(8192, 4096, device=dev)
    r["peer_ms"] = time_ms(lambda: z.scatter_add(0, ix, src))


@bench("cumsum_f32_8192x4096")
def _(r):
    check(r, lambda i, _: {"y": torch.cumsum(i["x"], -1)}, F32)
    x = torch.randn(8192, 4096, device=dev)
    r["peer_ms"] = time_ms(lambda: torch.cumsum(x, -1))


def sort_reference(i, _):  # stable on both sides: ties keep their order, so indices match exactly
    values, indices = torch.sort(i["x"], dim=-1, stable=True)
    return {"values": values, "indices": indices}


def topk_reference(i, _):  # f32 normals: ties in a row's top 10 are rare enough to compare indices
    values, indices = torch.topk(i["x"], 10, -1)
    return {"values": values, "indices": indices}


@bench("sort_f32_8192x4096")
def _(r):
    check(r, sort_reference, EXACT)
    x = torch.randn(8192, 4096, device=dev)
    r["peer_ms"] = time_ms(lambda: torch.sort(x, dim=-1, stable=True))


@bench("topk_f32_8192x4096_k10")
def _(r):
    check(r, topk_reference, EXACT)
    x = torch.randn(8192, 4096, device=dev)
    r["peer_ms"] = time_ms(lambda: torch.topk(x, 10, -1))


@bench("sort_f32_4x1M")
def _(r):
    check(r, sort_reference, EXACT)
    x = torch.randn(4, 1 << 20, device=dev)
    r["peer_ms"] = time_ms(lambda: torch.sort(x, dim=-1, stable=True))


@bench("topk_f32_4x1M_k10")
def _(r):
    check(r, topk_reference, EXACT)
    x = torch.randn(4, 1 << 20, device=dev)
    r["peer_ms"] = time_ms(lambda: torch.topk(x, 10, -1))


@bench("maxpool2d_f32_32x64x112x112")
def _(r):
    check(r, lambda i, _: {"y": F.max_pool2d(i["x"], 3, 2, 1)}, EXACT)
    x = torch.randn(32, 64, 112, 112, device=dev)
    r["peer_ms"] = time_ms(lambda: F.max_pool2d(x, 3, 2, 1))


@bench("cross_entropy_f32_8192x1000")
def _(r):
    check(r, lambda i, _: {"loss": F.cross_entropy(i["x"], i["y"])}, F32)
    x = torch.randn(8192, 1000, device=dev)
    y = torch.randint(0, 1000, (8192,), device=dev)
    r["peer_ms"] = time_ms(lambda: F.cross_entropy(x, y))


@bench("cat_f32_2x4096x4096_dim1")
def _(r):
    check(r, lambda i, _: {"y": torch.cat([i["a"], i["b"]], 1)}, EXACT)
    a = torch.randn(4096, 4096, device=dev)
    b = torch.randn(4096, 4096, device=dev)
    r["peer_ms"] = time_ms(lambda: torch.cat([a, b], 1))


@bench("interpolate_bilinear_f32_16x64x112x112_x2")
def _(r):
    check(r, lambda i, _: {"y": F.interpolate(i["x"], size=(224, 224), mode="bilinear", align_corners=False)}, F32)
    x = torch.randn(16, 64, 112, 112, device=dev)
    r["peer_ms"] = time_ms(lambda: F.interpolate(x, size=(224, 224), mode="bilinear", align_corners=False))


@bench("batchnorm_eval_f32_32x64x112x112")
def _(r):
    check(r, lambda i, _: {"y": F.batch_norm(i["x"], i["mean"], i["var"], i["weight"], i["bias"], training=False)},
          F32)
    x = torch.randn(32, 64, 112, 112, device=dev)
    m = torch.randn(64, device=dev)
    v = torch.rand(64, device=dev) * 1.5 + 0.5
    w = torch.randn(64, device=dev) * 0.1 + 1
    b = torch.randn(64, device=dev) * 0.1
    r["peer_ms"] = time_ms(lambda: F.batch_norm(x, m, v, w, b, training=False))


@bench("softmax_f32_8192x4096")
def _(r):
    check(r, lambda i, _: {"y": torch.softmax(i["x"], -1)}, F32)
    x = torch.randn(8192, 4096, device=dev)
    r["peer_ms"] = time_ms(lambda: torch.softmax(x, -1))


def softmax_shape(rows, cols, dtype, name):
    @bench(name)
    def _(r):
        check(r, lambda i, _: {"y": torch.softmax(i["x"], -1)}, BF16 if dtype == torch.bfloat16 else F32)
        x = torch.randn(rows, cols, device=dev).to(dtype)
        r["peer_ms"] = time_ms(lambda: torch.softmax(x, -1))


softmax_shape(32768, 1024, torch.float32, "softmax_f32_32768x1024")
softmax_shape(2048, 16384, torch.float32, "softmax_f32_2048x16384")
softmax_shape(1024, 32768, torch.float32, "softmax_f32_1024x32768")
softmax_shape(8192, 4096, torch.bfloat16, "softmax_bf16_8192x4096")


@bench("layernorm_f32_8192x4096")
def _(r):
    check(r, lambda i, _: {"y": F.layer_norm(i["x"], (4096,), i["weight"], i["bias"])}, F32)
    x = torch.randn(8192, 4096, device=dev)
    w = torch.randn(4096, device=dev) * 0.1 + 1
    b = torch.randn(4096, device=dev) * 0.1
    r["peer_ms"] = time_ms(lambda: F.layer_norm(x, (4096,), w, b))


def layernorm_shape(rows, cols, dtype, name):
    @bench(name)
    def _(r):
        check(r, lambda i, _: {"y": F.layer_norm(i["x"], (cols,), i["weight"], i["bias"])},
              BF16 if dtype == torch.bfloat16 else F32)
        x = torch.randn(rows, cols, device=dev).to(dtype)
        w = (torch.randn(cols, device=dev) * 0.1 + 1).to(dtype)
        b = (torch.randn(cols, device=dev) * 0.1).to(dtype)
        r["peer_ms"] = time_ms(lambda: F.layer_norm(x, (cols,), w, b))


layernorm_shape(32768, 1024, torch.float32, "layernorm_f32_32768x1024")
layernorm_shape(2048, 16384, torch.float32, "layernorm_f32_2048x16384")
layernorm_shape(8192, 4096, torch.bfloat16, "layernorm_bf16_8192x4096")


@bench("gelu_f32_32x512x2048")
def _(r):
    check(r, lambda i, _: {"y": F.gelu(i["x"])}, F32)
    x = torch.randn(32, 512, 2048, device=dev)
    r["peer_ms"] = time_ms(lambda: F.gelu(x))


# User compositions of plain tensor ops (bench_cuda.cpp runs them on the fusion device): the
# same code in PyTorch eager (peer_ms) and under torch.compile (peer_compile_ms).
def gelu_custom(x, w):
    return x * 0.5 * (1 + torch.erf(x / math.sqrt(2.0)))


def softmax_custom(x, w):
    e = torch.exp(x - x.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


def rmsnorm_custom(x, w):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w


def custom_row(name, fn, shape, tol):
    @bench(name)
    def _(r):
        check(r, lambda i, _: {"y": fn(i["x"], i["w"])}, tol)
        x = torch.randn(*shape, device=dev)
        w = torch.randn(shape[-1], device=dev)
        r["peer_ms"] = time_ms(lambda: fn(x, w))
        try:
            compiled = torch.compile(fn)
            r["peer_compile_ms"] = time_ms(lambda: compiled(x, w))
        except Exception as e:  # noqa: BLE001 - an eager number is still a result
            r["peer_compile_error"] = str(e)[:500]


custom_row("gelu_custom_f32", gelu_custom, (32, 512, 2048), F32)
custom_row("softmax_custom_f32", softmax_custom, (8192, 4096), F32)
custom_row("rmsnorm_custom_f32", rmsnorm_custom, (8192, 4096), dict(rtol=1e-4, atol=1e-5, atol_of_max=0.0))


@bench("sum_f32_64M")
def _(r):
    # a sum of 2^20 normals (about 1000 in size): an absolute tolerance, the sum may be near 0
    check(r, lambda i, _: {"y": i["x"].sum()}, dict(rtol=1e-5, atol=1e-2, atol_of_max=0.0))
    x = torch.randn(64 << 20, device=dev)
    r["peer_ms"] = time_ms(lambda: x.sum())


@bench("overhead_add_1")
def _(r):
    # as bench_cuda.cpp: host time of bursts of 64 launches, synchronised between bursts
    check(r, lambda i, _: {"y": i["a"] + i["b"]}, EXACT)
    a = torch.ones(1, device=dev)
    b = torch.ones(1, device=dev)
    v = []
    for s in range(320):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(64):
            a + b
        t = (time.perf_counter() - t0) * 1e3
        if s >= 20:
            v.append(t / 64)
    v.sort()
    r["peer_ms"] = v[len(v) // 2]
    r["throughput_us_peer"] = time_ms(lambda: a + b) * 1e3


@bench("conv2d_f32_16x64x56x56_k3")
def _(r):
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    check(r, lambda i, _: {"y": F.conv2d(i["x"], i["w"], padding=1)}, F32)
    x = torch.randn(16, 64, 56, 56, device=dev)
    w = torch.randn(64, 64, 3, 3, device=dev) * 0.05
    r["peer_ms"] = time_ms(lambda: F.conv2d(x, w, padding=1))


@bench("mlp_train_step_f32")
def _(r):
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(256, 784, device=dev)
    y = torch.randint(0, 10, (256,), device=dev)
    # the check: the first step from ember's parameters, on a module with ember's names
    class MlpRef(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2, self.fc3 = torch.nn.Linear(784, 512), torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)

        def forward(self, t):
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(t)))))

    def mlp_reference(i, ember):
        ref = MlpRef().to(dev)
        return step_reference(ref, torch.optim.Adam(ref.parameters(), lr=1e-3), i, ember,
                              lambda m: F.cross_entropy(m(i["x"]), i["y"]))
    check(r, mlp_reference, F32, {"grad.": dict(rtol=1e-3, atol=0.0, atol_of_max=1e-3),
                                  "param.": dict(rtol=0.0, atol=1e-6, atol_of_max=0.0)})

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()
    r["peer_ms"] = time_ms(step)


class Gpt(torch.nn.Module):
    """bench_cuda.cpp's Gpt, with its parameter names."""

    def __init__(self, vocab, ctx, d, heads, layers):
        super().__init__()
        self.token, self.position = torch.nn.Embedding(vocab, d), torch.nn.Embedding(ctx, d)
        layer = torch.nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="gelu", batch_first=True,
                                                 norm_first=True)
        self.layers = torch.nn.TransformerEncoder(layer, layers, norm=torch.nn.LayerNorm(d),
                                                  enable_nested_tensor=False)
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, tokens):
        n = tokens.size(1)
        x = self.token(tokens) + self.position(torch.arange(n, device=tokens.device))
        mask = torch.nn.Transformer.generate_square_subsequent_mask(n, device=tokens.device)
        return self.head(self.layers(x, mask=mask, is_causal=True))


def gpt_train(name, shape, batch, tf32, check_shape, bf16=False):
    """The same model and step as bench_cuda.cpp's gpt_train_bench; shape and check_shape are
    (vocab, context, d_model, heads, layers), the check's step one of a check_shape model.
    bf16: the nanoGPT way (bf16 autocast, fused AdamW; the model's attention is
    scaled_dot_product_attention), timed eager (peer_ms) and under torch.compile
    (peer_compile_ms), each with its peak memory."""
    vocab, ctx = shape[0], shape[1]
    autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if bf16 else contextlib.nullcontext

    def gpt_reference(i, ember):
        ref = Gpt(*check_shape).to(dev)
        opt = torch.optim.AdamW(ref.parameters(), lr=3e-4, weight_decay=0.01)

        def loss_of(m):
            with autocast():
                return F.cross_entropy(m(i["x"]).reshape(-1, check_shape[0]), i["y"])
        clip = lambda m: torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)  # noqa: E731
        return step_reference(ref, opt, i, ember, loss_of, clip)

    @bench(name)
    def _(r):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        try:
            if bf16:
                check(r, gpt_reference, BF16, {"grad.": dict(rtol=5e-2, atol=0.0, atol_of_max=5e-2),
                                               "param.": dict(rtol=0.0, atol=2e-6, atol_of_max=0.0)})
            else:
                check(r, gpt_reference, TF32 if tf32 else F32,
                      {"grad.": TF32 if tf32 else dict(rtol=1e-3, atol=0.0, atol_of_max=1e-3),
                       "param.": dict(rtol=0.0, atol=1e-6, atol_of_max=0.0)})
            x = torch.randint(0, vocab, (batch, ctx), device=dev)
            y = torch.randint(0, vocab, (batch * ctx,), device=dev)

            def timed(compiled):
                model = Gpt(*shape).to(dev)
                opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=bf16)
                run = torch.compile(model) if compiled else model

                def step():
                    opt.zero_grad(set_to_none=True)
                    with autocast():
                        loss = F.cross_entropy(run(x).reshape(-1, vocab), y)
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    opt.step()
                step()  # (compiles)
                torch.cuda.reset_peak_memory_stats()
                ms = time_ms(step)
                peak = torch.cuda.max_memory_allocated()
                del model, opt, run
                torch.cuda.empty_cache()
                return ms, peak
            r["peer_ms"], r["peer_peak_bytes"] = timed(False)
            r["peer_tokens_per_s"] = batch * ctx / (r["peer_ms"] * 1e-3)
            if bf16:
                try:
                    r["peer_compile_ms"], r["peer_compile_peak_bytes"] = timed(True)
                    r["peer_compile_tokens_per_s"] = batch * ctx / (r["peer_compile_ms"] * 1e-3)
                except Exception as e:  # noqa: BLE001 - the eager peer still stands
                    r["peer_compile_error"] = str(e)[:500]
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False


gpt_train("transformer_train_step_f32", (96, 64, 128, 4, 2), 32, False, (96, 64, 128, 4, 2))
gpt_train("gpt2_small_train_step_tf32", (50257, 1024, 768, 12, 12), 8, True, (512, 128, 256, 4, 2))
gpt_train("gpt2_small_train_bf16", (50257, 1024, 768, 12, 12), 8, False, (512, 128, 256, 4, 2), bf16=True)


@bench("attention_bf16")
def _(r):
    mk = lambda: torch.randn(8, 12, 1024, 64, device=dev).to(torch.bfloat16)  # noqa: E731
    q0, k0, v0, up = mk(), mk(), mk(), mk()

    def attention_reference(i, _):
        q, k, v = (i[n].detach().requires_grad_() for n in "qkv")
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        dq, dk, dv = torch.autograd.grad(o, (q, k, v), i["up"])
        return {"o": o.detach(), "dq": dq, "dk": dk, "dv": dv}
    check(r, attention_reference, BF16)

    def step():
        q, k, v = (t.detach().requires_grad_() for t in (q0, k0, v0))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.autograd.grad(o, (q, k, v), up)
    r["peer_ms"] = time_ms(step)

    def forward():
        with torch.no_grad():
            F.scaled_dot_product_attention(q0, k0, v0, is_causal=True)
    r["peer_forward_us"] = time_ms(forward) * 1e3
    # The backend PyTorch picks differs between installs (cuDNN's attention where its cuDNN
    # offers it, else FlashAttention-2): report it, and the FlashAttention-2 backend's time.
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        names = " ".join(e.key for e in prof.key_averages())
        r["peer_backend"] = "cudnn" if "cudnn" in names else "flash" if "flash" in names else "other"
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            r["peer_flash_ms"] = time_ms(step)
    except Exception as e:  # older torch: no sdpa_kernel / profiler names
        r["peer_backend_error"] = str(e)[:200]


def resnet18_folded():
    """torchvision's ResNet-18 with each BatchNorm folded into the conv before it (so every conv
    has a bias), in plain eager torch: the model of bench/export_resnet18.py, parameter names as
    torchvision's ("layer2.0.downsample.0.weight", "fc.bias", ...)."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1)
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride)) if stride != 1 else None

        def forward(self, x):
            out = self.conv2(F.relu(self.conv1(x)))
            return F.relu(out + (self.downsample(x) if self.downsample is not None else x))

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3)
            for i, (cin, cout) in enumerate([(64, 64), (64, 128), (128, 256), (256, 512)]):
                setattr(self, f"layer{i + 1}", nn.Sequential(Block(cin, cout, 1 if i == 0 else 2), Block(cout, cout, 1)))
            self.fc = nn.Linear(512, 1000)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 3, 2, 1)
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    return ResNet18()


def onnx_resnet18(batch):
    # The same weights as ember's ONNX file: bench/export_resnet18.py's resnet18.weights (raw f32)
    # and its index. Inference mode, cuDNN autotuning on, TF32 off (f32 as on ember's side).
    @bench(f"onnx_resnet18_b{batch}")
    def _(r):
        import os
        d = os.environ.get("EMBER_BENCH_MODELS") or "build/bench-models"
        for f in ("resnet18.json", "resnet18.weights", "resnet18_ref.safetensors"):
            if not os.path.exists(os.path.join(d, f)):
                raise FileNotFoundError(f"{d}/{f} missing: run /usr/bin/python3 bench/export_resnet18.py where "
                                        "torchvision is installed and bring build/bench-models/ (docs/benchmarks.md)")
        with open(os.path.join(d, "resnet18.weights"), "rb") as f:
            weights = bytearray(f.read())
        state = {}
        for t in json.load(open(os.path.join(d, "resnet18.json"))):
            count = math.prod(t["shape"])
            state[t["name"]] = torch.frombuffer(weights, dtype=torch.float32, count=count,
                                                offset=t["offset"]).reshape(t["shape"])
        model = resnet18_folded().eval()
        model.load_state_dict(state, strict=True)
        model = model.to(dev)
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
        ref = read_safetensors(os.path.join(d, "resnet18_ref.safetensors"))
        with torch.inference_mode():
            got = model(ref["input"].to(dev)).cpu()
            err = ((got - ref["output"]).abs().max() / ref["output"].abs().max()).item()
            r["check_rel_err_peer"] = err
            if not err <= 1e-4:
                raise RuntimeError(f"output differs from the exported model's: relative error {err:.3g} > 1e-4")
            # ember's side compares its output with the same reference and fails its row otherwise
            r["check"] = "ok"
            r["check_detail"] = "both sides within 1e-4 of PyTorch's output saved at export (resnet18_ref)"
            x = torch.randn(batch, 3, 224, 224, device=dev)
            r["peer_ms"] = time_ms(lambda: model(x))
        r["images_per_s_peer"] = batch / (r["peer_ms"] * 1e-3)


onnx_resnet18(1)
onnx_resnet18(32)


with open(out + ".tmp", "w") as f:
    json.dump(results, f, indent=1)
os.replace(out + ".tmp", out)
print(f"peer results: {out} (torch {torch.__version__}, {torch.cuda.get_device_name(0)})", file=sys.stderr)
