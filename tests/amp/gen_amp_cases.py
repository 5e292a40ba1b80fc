#!/usr/bin/python3
"""Writes cases/autocast.json: PyTorch (1.13, CPU) references for tests/amp/amp_test.cpp.

1. "policy": for each op class ember has, the dtype PyTorch's autocast gives under
   torch.autocast('cpu', dtype=torch.bfloat16), for f32 inputs and for bf16 inputs
   ("torch_cpu_f32_in", "torch_cpu_bf16_in"), plus whether the op has an AutocastCUDA kernel
   in PyTorch's dispatcher ("cuda_autocast_kernel", read from torch._C._dispatch_dump_table).
   ember's policy follows the issue (#26) and PyTorch's CUDA lists: reductions, softmax, norms,
   losses, exp/log/pow run in f32 even for bf16 inputs, where PyTorch 1.13's CPU autocast falls
   through and keeps bf16. The test asserts ember == torch_cpu for f32 inputs (every class),
   ember == torch_cpu for bf16 inputs of the low-precision, loss and promote classes, and f32
   for bf16 inputs of the classes marked "upcast_like_cuda" (which must then have a CUDA kernel).
   conv_transpose is "low_like_cuda": in PyTorch's CUDA list (and later CPU lists), not 1.13's CPU one.
2. "losses": element-wise losses of bf16 inputs under bf16 autocast (computed in f32 by PyTorch).
3. "mlp": a small MLP (Linear 16->32, GELU, Linear 32->8, ReLU, Linear 8->4, cross-entropy)
   with its weights, input and targets, run forward and backward under bf16 autocast: the loss,
   its dtype, every parameter's gradient and the gradients' dtypes.

Run: /usr/bin/python3 tests/amp/gen_amp_cases.py   (needs python3-torch)
"""
import json
import os

import torch
import torch.nn.functional as F

torch.manual_seed(0)
bf16 = torch.bfloat16
NAMES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16", torch.float64: "f64"}


def cuda_kernel(op):
    table = torch._C._dispatch_dump_table(op)
    return any(line.startswith("AutocastCUDA: registered") and "fallthrough" not in line for line in table.split("\n"))


def run(fn, dtype):
    """The output dtype, or "error" where PyTorch's CPU autocast refuses the inputs."""
    try:
        with torch.autocast("cpu", dtype=bf16):
            out = fn(dtype)
    except RuntimeError:
        return "error"
    return NAMES[out.dtype]


def t(*shape, dtype=torch.float32, positive=False):
    x = torch.randn(*shape)
    if positive:
        x = x.abs() + 0.5
    return x.to(dtype)


# op class -> (ember class, aten op whose AutocastCUDA registration is checked, fn(dtype))
cases = {
    "matmul": ("low", "aten::matmul", lambda d: t(4, 5, dtype=d) @ t(5, 3, dtype=d)),
    "matmul_mixed": ("low", "aten::mm", lambda d: t(4, 5, dtype=d) @ t(5, 3)),
    "bmm": ("low", "aten::bmm", lambda d: torch.bmm(t(2, 4, 5, dtype=d), t(2, 5, 3, dtype=d))),
    "linear": ("low", "aten::linear", lambda d: F.linear(t(4, 5, dtype=d), t(3, 5), t(3))),
    "conv1d": ("low", "aten::conv1d", lambda d: F.conv1d(t(1, 2, 8, dtype=d), t(3, 2, 3), t(3))),
    "conv2d": ("low", "aten::conv2d", lambda d: F.conv2d(t(1, 2, 5, 5, dtype=d), t(3, 2, 3, 3), t(3))),
    "conv_transpose2d": ("low_like_cuda", "aten::conv_transpose2d.input",
                         lambda d: F.conv_transpose2d(t(1, 2, 4, 4, dtype=d), t(2, 3, 3, 3))),
    "softmax": ("upcast_like_cuda", "aten::softmax.int", lambda d: torch.softmax(t(3, 4, dtype=d), -1)),
    "log_softmax": ("upcast_like_cuda", "aten::log_softmax.int", lambda d: torch.log_softmax(t(3, 4, dtype=d), -1)),
    "layer_norm": ("upcast_like_cuda", "aten::layer_norm", lambda d: F.layer_norm(t(3, 4, dtype=d), [4], t(4), t(4))),
    "sum": ("upcast_like_cuda", "aten::sum", lambda d: t(3, 4, dtype=d).sum()),
    "prod": ("upcast_like_cuda", "aten::prod", lambda d: t(3, 4, dtype=d).prod()),
    "norm": ("upcast_like_cuda", "aten::norm.Scalar", lambda d: t(3, 4, dtype=d).norm()),
    "logsumexp": ("upcast_like_cuda", "aten::logsumexp", lambda d: torch.logsumexp(t(3, 4, dtype=d), [1])),
    "cumsum": ("upcast_like_cuda", "aten::cumsum", lambda d: torch.cumsum(t(3, 4, dtype=d), 1)),
    "exp": ("upcast_like_cuda", "aten::exp", lambda d: t(3, 4, dtype=d).exp()),
    "log": ("upcast_like_cuda", "aten::log", lambda d: t(3, 4, dtype=d, positive=True).log()),
    "log1p": ("upcast_like_cuda", "aten::log1p", lambda d: t(3, 4, dtype=d, positive=True).log1p()),
    "expm1": ("upcast_like_cuda", "aten::expm1", lambda d: t(3, 4, dtype=d).expm1()),
    "rsqrt": ("upcast_like_cuda", "aten::rsqrt", lambda d: t(3, 4, dtype=d, positive=True).rsqrt()),
    "reciprocal": ("upcast_like_cuda", "aten::reciprocal", lambda d: t(3, 4, dtype=d, positive=True).reciprocal()),
    "pow": ("upcast_like_cuda", "aten::pow.Tensor_Scalar", lambda d: t(3, 4, dtype=d).pow(2.0)),
    "softplus": ("upcast_like_cuda", "aten::softplus", lambda d: F.softplus(t(3, 4, dtype=d))),
    "mse_loss": ("loss", "aten::mse_loss", lambda d: F.mse_loss(t(3, 4, dtype=d), t(3, 4, dtype=d))),
    "l1_loss": ("loss", "aten::l1_loss", lambda d: F.l1_loss(t(3, 4, dtype=d), t(3, 4, dtype=d))),
    "cross_entropy": ("loss", "aten::cross_entropy_loss",
                      lambda d: F.cross_entropy(t(3, 4, dtype=d), torch.tensor([0, 3, 1]))),
    "add_mixed": ("promote", "aten::add.Tensor", lambda d: t(3, 4, dtype=d) + t(3, 4)),
    "mul_same": ("promote", "aten::mul.Tensor", lambda d: t(3, 4, dtype=d) * t(3, 4, dtype=d)),
    "cat_mixed": ("promote", "aten::cat", lambda d: torch.cat([t(3, 4, dtype=d), t(3, 4)])),
    "relu": ("keep", "aten::relu", lambda d: torch.relu(t(3, 4, dtype=d))),
    "gelu": ("keep", "aten::gelu", lambda d: F.gelu(t(3, 4, dtype=d))),
    "tanh": ("keep", "aten::tanh", lambda d: torch.tanh(t(3, 4, dtype=d))),
    "max": ("keep", "aten::max", lambda d: t(3, 4, dtype=d).max()),
    "reshape": ("keep", "aten::reshape", lambda d: t(3, 4, dtype=d).reshape(12)),
}

policy = {}
for name, (cls, aten, fn) in cases.items():
    policy[name] = {
        "class": cls,
        "aten": aten,
        "cuda_autocast_kernel": cuda_kernel(aten),
        "torch_cpu_f32_in": run(fn, torch.float32),
        "torch_cpu_bf16_in": run(fn, bf16),
    }
    if cls in ("upcast_like_cuda", "low_like_cuda"):
        assert policy[name]["cuda_autocast_kernel"], name

# ---- losses of bf16 inputs: PyTorch's autocast computes them in f32 ----
a = torch.randn(3, 5).to(bf16)
b = torch.randn(3, 5).to(bf16)
probs_target = torch.rand(3, 5).round().to(bf16)
with torch.autocast("cpu", dtype=bf16):
    loss_values = {
        "mse_loss": F.mse_loss(a, b).item(),
        "l1_loss": F.l1_loss(a, b).item(),
        "smooth_l1_loss": F.smooth_l1_loss(a, b).item(),
        "huber_loss": F.huber_loss(a, b, delta=0.5).item(),
        "binary_cross_entropy_with_logits": F.binary_cross_entropy_with_logits(a, probs_target).item(),
    }
losses = {"a": a.float().flatten().tolist(), "b": b.float().flatten().tolist(),
          "probs_target": probs_target.float().flatten().tolist(), "shape": list(a.shape), "values": loss_values}

# ---- the MLP ----
sizes = [(16, 32), (32, 8), (8, 4)]
layers = [torch.nn.Linear(i, o) for i, o in sizes]
x = torch.randn(6, 16)
target = torch.tensor([0, 3, 1, 2, 2, 0])
with torch.autocast("cpu", dtype=bf16):
    h = F.gelu(layers[0](x))
    h = F.relu(layers[1](h))
    logits = layers[2](h)
    loss = F.cross_entropy(logits, target)
loss.backward()
mlp = {
    "x": x.flatten().tolist(),
    "x_shape": list(x.shape),
    "target": target.tolist(),
    "params": [{"weight": l.weight.detach().flatten().tolist(), "bias": l.bias.detach().tolist(),
                "in": l.in_features, "out": l.out_features,
                "grad_weight": l.weight.grad.flatten().tolist(), "grad_bias": l.bias.grad.tolist(),
                "grad_dtype": NAMES[l.weight.grad.dtype]} for l in layers],
    "logits_dtype": NAMES[logits.dtype],
    "loss": loss.item(),
    "loss_dtype": NAMES[loss.dtype],
}

out = {"torch_version": torch.__version__, "policy": policy, "losses": losses, "mlp": mlp}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases", "autocast.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
print("wrote", path)
