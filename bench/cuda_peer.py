#!/usr/bin/env python3
"""The PyTorch side of ./bench.sh cuda: the same benchmarks as bench_cuda.cpp, timed with the
same method (warm-up, a loop calibrated to >= 20 ms, median over samples, each ended by a device
synchronisation), on the same GPU, in the same invocation. Writes a JSON list of
{"name", "peer_ms", extra fields}. Also measures the device-to-device copy bandwidth (the
ceiling for add_f32_256M)."""
import json
import math
import sys
import time

import torch
import torch.nn.functional as F

out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else "build/reports/bench-cuda-peer.json"
filt = sys.argv[sys.argv.index("--filter") + 1].split(",") if "--filter" in sys.argv else []
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
    x = torch.randn(8192, 4096, device=dev)
    b = torch.randn(4096, device=dev)
    r["peer_ms"] = time_ms(lambda: x + b)


@bench("add_transposed_f32_8192x4096")
def _(r):
    x = torch.randn(8192, 4096, device=dev)
    y = torch.randn(4096, 8192, device=dev).t()
    r["peer_ms"] = time_ms(lambda: x + y)


@bench("contiguous_transposed_f32_8192x4096")
def _(r):
    y = torch.randn(4096, 8192, device=dev).t()
    r["peer_ms"] = time_ms(lambda: y.contiguous())


@bench("embedding_f32_50257x1024_8192")
def _(r):
    w = torch.randn(50257, 1024, device=dev)
    ix = torch.randint(0, 50257, (8192,), device=dev)
    r["peer_ms"] = time_ms(lambda: F.embedding(ix, w))


@bench("scatter_add_f32_8192x4096_into_1024")
def _(r):
    z = torch.zeros(1024, 4096, device=dev)
    ix = torch.randint(0, 1024, (8192, 4096), device=dev)
    src = torch.randn(8192, 4096, device=dev)
    r["peer_ms"] = time_ms(lambda: z.scatter_add(0, ix, src))


@bench("cumsum_f32_8192x4096")
def _(r):
    x = torch.randn(8192, 4096, device=dev)
    r["peer_ms"] = time_ms(lambda: torch.cumsum(x, -1))


@bench("sort_f32_8192x4096")
def _(r):
    x = torch.randn(8192, 4096, device=dev)
    r["peer_ms"] = time_ms(lambda: torch.sort(x, dim=-1, stable=True))


@bench("topk_f32_8192x4096_k10")
def _(r):
    x = torch.randn(8192, 4096, device=dev)
    r["peer_ms"] = time_ms(lambda: torch.topk(x, 10, -1))


@bench("sort_f32_4x1M")
def _(r):
    x = torch.randn(4, 1 << 20, device=dev)
    r["peer_ms"] = time_ms(lambda: torch.sort(x, dim=-1, stable=True))


@bench("topk_f32_4x1M_k10")
def _(r):
    x = torch.randn(4, 1 << 20, device=dev)
    r["peer_ms"] = time_ms(lambda: torch.topk(x, 10, -1))


@bench("maxpool2d_f32_32x64x112x112")
def _(r):
    x = torch.randn(32, 64, 112, 112, device=dev)
    r["peer_ms"] = time_ms(lambda: F.max_pool2d(x, 3, 2, 1))


@bench("cross_entropy_f32_8192x1000")
def _(r):
    x = torch.randn(8192, 1000, device=dev)
    y = torch.randint(0, 1000, (8192,), device=dev)
    r["peer_ms"] = time_ms(lambda: F.cross_entropy(x, y))


@bench("cat_f32_2x4096x4096_dim1")
def _(r):
    a = torch.randn(4096, 4096, device=dev)
    b = torch.randn(4096, 4096, device=dev)
    r["peer_ms"] = time_ms(lambda: torch.cat([a, b], 1))


@bench("interpolate_bilinear_f32_16x64x112x112_x2")
def _(r):
    x = torch.randn(16, 64, 112, 112, device=dev)
    r["peer_ms"] = time_ms(lambda: F.interpolate(x, size=(224, 224), mode="bilinear", align_corners=False))


@bench("batchnorm_eval_f32_32x64x112x112")
def _(r):
    x = torch.randn(32, 64, 112, 112, device=dev)
    m = torch.randn(64, device=dev)
    v = torch.rand(64, device=dev) * 1.5 + 0.5
    w = torch.randn(64, device=dev) * 0.1 + 1
    b = torch.randn(64, device=dev) * 0.1
    r["peer_ms"] = time_ms(lambda: F.batch_norm(x, m, v, w, b, training=False))


@bench("softmax_f32_8192x4096")
def _(r):
    x = torch.randn(8192, 4096, device=dev)
    r["peer_ms"] = time_ms(lambda: torch.softmax(x, -1))


def softmax_shape(rows, cols, dtype, name):
    @bench(name)
    def _(r):
        x = torch.randn(rows, cols, device=dev).to(dtype)
        r["peer_ms"] = time_ms(lambda: torch.softmax(x, -1))


softmax_shape(32768, 1024, torch.float32, "softmax_f32_32768x1024")
softmax_shape(2048, 16384, torch.float32, "softmax_f32_2048x16384")
softmax_shape(1024, 32768, torch.float32, "softmax_f32_1024x32768")
softmax_shape(8192, 4096, torch.bfloat16, "softmax_bf16_8192x4096")


@bench("layernorm_f32_8192x4096")
def _(r):
    x = torch.randn(8192, 4096, device=dev)
    w = torch.randn(4096, device=dev) * 0.1 + 1
    b = torch.randn(4096, device=dev) * 0.1
    r["peer_ms"] = time_ms(lambda: F.layer_norm(x, (4096,), w, b))


def layernorm_shape(rows, cols, dtype, name):
    @bench(name)
    def _(r):
        x = torch.randn(rows, cols, device=dev).to(dtype)
        w = (torch.randn(cols, device=dev) * 0.1 + 1).to(dtype)
        b = (torch.randn(cols, device=dev) * 0.1).to(dtype)
        r["peer_ms"] = time_ms(lambda: F.layer_norm(x, (cols,), w, b))


layernorm_shape(32768, 1024, torch.float32, "layernorm_f32_32768x1024")
layernorm_shape(2048, 16384, torch.float32, "layernorm_f32_2048x16384")
layernorm_shape(8192, 4096, torch.bfloat16, "layernorm_bf16_8192x4096")


@bench("gelu_f32_32x512x2048")
def _(r):
    x = torch.randn(32, 512, 2048, device=dev)
    r["peer_ms"] = time_ms(lambda: F.gelu(x))


@bench("sum_f32_64M")
def _(r):
    x = torch.randn(64 << 20, device=dev)
    r["peer_ms"] = time_ms(lambda: x.sum())


@bench("overhead_add_1")
def _(r):
    # as bench_cuda.cpp: host time of bursts of 64 launches, synchronised between bursts
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

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()
    r["peer_ms"] = time_ms(step)


def gpt_train(name, vocab, ctx, d, heads, layers, batch, tf32):
    """The same model and step as bench_cuda.cpp's gpt_train_bench."""
    class Gpt(torch.nn.Module):
        def __init__(self):
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

    @bench(name)
    def _(r):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        try:
            model = Gpt().to(dev)
            opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
            x = torch.randint(0, vocab, (batch, ctx), device=dev)
            y = torch.randint(0, vocab, (batch * ctx,), device=dev)

            def step():
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(model(x).reshape(-1, vocab), y).backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
            torch.cuda.reset_peak_memory_stats()
            r["peer_ms"] = time_ms(step)
            r["peer_peak_bytes"] = torch.cuda.max_memory_allocated()
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False


gpt_train("transformer_train_step_f32", 96, 64, 128, 4, 2, 32, False)
gpt_train("gpt2_small_train_step_tf32", 50257, 1024, 768, 12, 12, 8, True)


@bench("attention_bf16")
def _(r):
    mk = lambda: torch.randn(8, 12, 1024, 64, device=dev).to(torch.bfloat16)  # noqa: E731
    q0, k0, v0, up = mk(), mk(), mk(), mk()

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


def read_safetensors(path):
    """{name: tensor} of a safetensors file of f32 tensors (what export_resnet18.py writes)."""
    with open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        assert h["dtype"] == "F32", f"{path}: {name} is {h['dtype']}"
        begin, end = h["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[8 + n + begin:8 + n + end]), dtype=torch.float32).reshape(h["shape"])
    return out


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
            x = torch.randn(batch, 3, 224, 224, device=dev)
            r["peer_ms"] = time_ms(lambda: model(x))
        r["images_per_s_peer"] = batch / (r["peer_ms"] * 1e-3)


onnx_resnet18(1)
onnx_resnet18(32)


with open(out + ".tmp", "w") as f:
    json.dump(results, f, indent=1)
import os  # noqa: E402
os.replace(out + ".tmp", out)
print(f"peer results: {out} (torch {torch.__version__}, {torch.cuda.get_device_name(0)})", file=sys.stderr)
