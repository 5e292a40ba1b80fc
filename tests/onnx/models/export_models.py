#!/usr/bin/env python3
"""Exports real PyTorch models to ONNX for ember_onnx_models_tests and run_codegen_models.sh
(issue 7, "Real models").

    /usr/bin/python3 tests/onnx/models/export_models.py OUT_DIR [--only SUBSTR]

Needs Debian's python3-torch (1.13) and python3-torchvision (0.14); random weights
(torch.manual_seed(0), weights=None: nothing is downloaded). For each model and opset it writes
OUT_DIR/<name>.onnx, a random input and PyTorch's output as .npy files (float32, little-endian,
C order) and OUT_DIR/manifest.json:

    {"models": [{"name": ..., "model": "<name>.onnx", "opset": 13,
                 "inputs":  [{"name": "input",  "shape": [1, 3, 224, 224], "file": "<name>.input.npy"}],
                 "outputs": [{"name": "output", "shape": [1, 1000],      "file": "<name>.output.npy"}]}]}

Exit status 2 when torch or torchvision is missing (test.sh reports the suite as skipped).
"""
import argparse
import json
import os
import sys
import time
import warnings

try:
    import numpy as np
    import torch
    import torchvision
except ImportError as e:  # pragma: no cover
    print(f"export_models.py: {e} (install python3-torch and python3-torchvision)", file=sys.stderr)
    sys.exit(2)


def write_npy(path, array):
    """A minimal .npy (version 1.0) writer: float32 little-endian, C order."""
    a = np.ascontiguousarray(np.asarray(array, dtype="<f4"))
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %r, }" % (tuple(int(d) for d in a.shape),)
    # Magic (6) + version (2) + header length (2) + header + padding + '\n': a multiple of 64.
    total = 10 + len(header) + 1
    header += " " * ((64 - total % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00")
        f.write(len(header).to_bytes(2, "little"))
        f.write(header.encode("latin1"))
        f.write(a.tobytes(order="C"))


def transformer_encoder():
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.1, batch_first=True)
    return torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)


class SmallConvNet(torch.nn.Module):
    """Conv, BatchNorm, MaxPool, Linear and LayerNorm, exported without folding the BatchNorm into
    the Conv (the torchvision models have theirs folded), so that codegen's BatchNorm and
    LayerNorm patterns meet a real export too."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc = torch.nn.Linear(8 * 8 * 8, 32)
        self.norm = torch.nn.LayerNorm(32)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        return torch.softmax(self.norm(self.fc(torch.flatten(x, 1))), -1)


def small_conv_net():
    model = SmallConvNet()
    with torch.no_grad():  # running statistics other than the initial 0 and 1
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 2.0)
    return model


# name, constructor, input shape, opsets, dynamic axes of the input and output, extra
# torch.onnx.export arguments. The CNNs take ImageNet-sized images (each ends in an adaptive
# pooling, so smaller ones would work too); the whole export takes about 20 s on 2 cores.
MODELS = [
    ("resnet18", lambda: torchvision.models.resnet18(weights=None), [1, 3, 224, 224], [13, 17], None, {}),
    ("mobilenet_v2", lambda: torchvision.models.mobilenet_v2(weights=None), [1, 3, 224, 224], [13, 17], None, {}),
    ("squeezenet1_1", lambda: torchvision.models.squeezenet1_1(weights=None), [1, 3, 224, 224], [13, 17], None, {}),
    # The encoder's batch and sequence dims are symbolic (the graph computes its reshapes at run time).
    ("transformer_encoder", transformer_encoder, [2, 10, 64], [13, 17], {0: "batch", 1: "seq"}, {}),
    # TrainingMode.PRESERVE on a model in eval mode keeps the BatchNormalization node (inference).
    ("small_conv_net", small_conv_net, [2, 3, 16, 16], [13, 17], None,
     {"training": torch.onnx.TrainingMode.PRESERVE, "do_constant_folding": False}),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--only", default="", help="export only the models whose name contains this")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    warnings.filterwarnings("ignore")

    entries = []
    for name, make, shape, opsets, dynamic, options in MODELS:
        if args.only and args.only not in name:
            continue
        torch.manual_seed(0)
        model = make().eval()
        x = torch.randn(*shape)
        with torch.no_grad():
            ref = model(x)
        for opset in opsets:
            t0 = time.time()
            tag = f"{name}_op{opset}"
            onnx_file = f"{tag}.onnx"
            export_options = {"do_constant_folding": True, **options}
            torch.onnx.export(model, (x,), os.path.join(args.out_dir, onnx_file), opset_version=opset,
                              input_names=["input"], output_names=["output"],
                              dynamic_axes={"input": dynamic, "output": dynamic} if dynamic else None, **export_options)
            write_npy(os.path.join(args.out_dir, f"{tag}.input.npy"), x.numpy())
            write_npy(os.path.join(args.out_dir, f"{tag}.output.npy"), ref.numpy())
            entries.append({
                "name": tag, "model": onnx_file, "opset": opset,
                "inputs": [{"name": "input", "shape": list(x.shape), "file": f"{tag}.input.npy"}],
                "outputs": [{"name": "output", "shape": list(ref.shape), "file": f"{tag}.output.npy"}],
            })
            print(f"{tag}: exported in {time.time() - t0:.1f} s", flush=True)

    with open(os.path.join(args.out_dir, "manifest.json"), "w") as f:
        json.dump({"torch": torch.__version__, "torchvision": torchvision.__version__, "models": entries}, f, indent=1)
    print(f"wrote {len(entries)} models to {args.out_dir}/manifest.json")


if __name__ == "__main__":
    main()
