#!/usr/bin/env python3
"""The PyTorch int8 peer of the onnx_resnet18_int8_* benchmarks (docs/benchmarks.md, "int8 ResNet-18").

    /usr/bin/python3 bench/export_resnet18_int8.py [DIR]    # after bench/export_resnet18.py DIR

Reads the f32 ResNet-18 that bench/export_resnet18.py wrote to DIR (default build/bench-models):
the BN-folded weights resnet18.weights + resnet18.json, the very values in resnet18.onnx. It
loads them into torchvision's resnet18 with each BatchNorm replaced by Identity and each conv
given its folded bias, and quantizes that model with torch.ao.quantization's FX mode
(prepare_fx / convert_fx): conv+relu and add+relu fused, activations per tensor quint8 affine with
MinMaxObserver, weights per output channel qint8 symmetric (PerChannelMinMaxObserver), the fc head
left f32 (as ember's quantize_static leaves Gemm). It calibrates on the same inputs ember's
quantize_static gets (written here), traces the result with torch.jit.trace and saves it.

Debian's torch 1.13 has no FBGEMM: its int8 engines are qnnpack and onednn. The script converts
and times the model under both (batch 1, 2 threads) and keeps the faster one; the engine is
recorded in resnet18_int8.json and bench_cpu selects it before loading. It writes to DIR:

  resnet18_calib/NNN.npy        8 calibration inputs, f32 [1, 3, 224, 224], N(0, 1), seed 2
  resnet18_int8.ts              the quantized model (TorchScript), input [batch, 3, 224, 224]
  resnet18_int8.json            {"engine", "engine_ms": {engine: ms per batch-1 run}, "calibration": [...]}
  resnet18_int8_check.safetensors  "input" [8, 3, 224, 224] (seed 3), the f32 model's "f32" logits
                                and the peer's "int8" logits for it

Exit status 2 when torch, torchvision or the f32 export is missing (bench_cpu then skips the rows).
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_resnet18 import write_safetensors  # noqa: E402

CALIBRATION = 8
CHECK_BATCH = 8


def folded_resnet18(torch, torchvision, out_dir):
    """torchvision's resnet18 with the weights of DIR/resnet18.weights (BN folded into the convs)."""
    with open(os.path.join(out_dir, "resnet18.json")) as f:
        index = json.load(f)
    with open(os.path.join(out_dir, "resnet18.weights"), "rb") as f:
        raw = f.read()
    model = torchvision.models.resnet18(weights=None).eval()
    for parent in list(model.modules()):
        for name, child in list(parent._modules.items()):
            if isinstance(child, torch.nn.BatchNorm2d):
                parent._modules[name] = torch.nn.Identity()
            elif isinstance(child, torch.nn.Conv2d) and child.bias is None:
                child.bias = torch.nn.Parameter(torch.zeros(child.out_channels))
    state = {}
    for t in index:
        n = 1
        for d in t["shape"]:
            n *= d
        state[t["name"]] = torch.frombuffer(bytearray(raw[t["offset"]:t["offset"] + 4 * n]),
                                            dtype=torch.float32).reshape(t["shape"])
    model.load_state_dict(state, strict=True)
    return model


def quantize(torch, model, engine, calibration, example):
    from torch.ao.quantization import QConfig, QConfigMapping
    from torch.ao.quantization.observer import MinMaxObserver, PerChannelMinMaxObserver
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx
    import copy
    torch.backends.quantized.engine = engine
    qconfig = QConfig(
        activation=MinMaxObserver.with_args(dtype=torch.quint8, qscheme=torch.per_tensor_affine),
        weight=PerChannelMinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_channel_symmetric))
    mapping = QConfigMapping().set_global(qconfig).set_module_name("fc", None)
    prepared = prepare_fx(copy.deepcopy(model), mapping, example_inputs=(example,))
    with torch.no_grad():
        for x in calibration:
            prepared(x)
    q = convert_fx(prepared)
    with torch.no_grad():
        return torch.jit.freeze(torch.jit.trace(q, (example,)))


def time_ms(torch, module, x, reps=10):
    with torch.no_grad():
        for _ in range(3):
            module(x)
        best = float("inf")
        for _ in range(reps):
            t = time.perf_counter()
            module(x)
            best = min(best, time.perf_counter() - t)
    return best * 1e3


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "build/bench-models"
    try:
        import numpy as np
        import torch
        import torchvision
    except ImportError as e:
        print(f"export_resnet18_int8.py: {e} (install python3-torch and python3-torchvision)", file=sys.stderr)
        sys.exit(2)
    if not os.path.exists(os.path.join(out_dir, "resnet18.weights")):
        print(f"export_resnet18_int8.py: {out_dir}/resnet18.weights is missing: run bench/export_resnet18.py first",
              file=sys.stderr)
        sys.exit(2)
    import warnings
    warnings.filterwarnings("ignore")
    torch.set_num_threads(int(os.environ.get("EMBER_BENCH_THREADS", "2")))
    model = folded_resnet18(torch, torchvision, out_dir)

    torch.manual_seed(2)
    calibration = [torch.randn(1, 3, 224, 224) for _ in range(CALIBRATION)]
    calib_dir = os.path.join(out_dir, "resnet18_calib")
    os.makedirs(calib_dir, exist_ok=True)
    calib_files = []
    for i, x in enumerate(calibration):
        calib_files.append(f"resnet18_calib/{i:03d}.npy")
        np.save(os.path.join(out_dir, calib_files[-1]), x.numpy())

    engines = [e for e in ("onednn", "qnnpack") if e in torch.backends.quantized.supported_engines]
    example = calibration[0]
    modules, ms = {}, {}
    for engine in engines:
        modules[engine] = quantize(torch, model, engine, calibration, example)
        ms[engine] = time_ms(torch, modules[engine], example)
    engine = min(ms, key=ms.get)
    torch.backends.quantized.engine = engine
    print(f"export_resnet18_int8.py: batch-1 ms per engine {ms}; keeping {engine}", file=sys.stderr)

    torch.manual_seed(3)
    x = torch.randn(CHECK_BATCH, 3, 224, 224)
    with torch.no_grad():
        f32 = model(x)
        int8 = modules[engine](x)
    agree = (f32.argmax(1) == int8.argmax(1)).float().mean().item()
    rel = ((int8 - f32).norm() / f32.norm()).item()
    print(f"export_resnet18_int8.py: peer int8 vs f32: top-1 agreement {agree:.3f}, relative error {rel:.4f}",
          file=sys.stderr)
    torch.jit.save(modules[engine], os.path.join(out_dir, "resnet18_int8.ts"))
    write_safetensors(os.path.join(out_dir, "resnet18_int8_check.safetensors"),
                      {"input": (x.shape, x.numpy().tobytes()), "f32": (f32.shape, f32.numpy().tobytes()),
                       "int8": (int8.shape, int8.contiguous().numpy().tobytes())})
    with open(os.path.join(out_dir, "resnet18_int8.json"), "w") as f:
        json.dump({"engine": engine, "engine_ms": ms, "calibration": calib_files,
                   "peer_top1_agreement": agree, "peer_rel_error": rel}, f, indent=1)
    print(f"export_resnet18_int8.py: wrote {out_dir}/resnet18_int8.{{ts,json}}, resnet18_int8_check.safetensors, "
          f"resnet18_calib/", file=sys.stderr)


if __name__ == "__main__":
    main()
