#!/usr/bin/env python3
"""The models of the browser benchmark (web/bench/run.mjs): torchvision's resnet18 and
mobilenet_v2, built exactly as bench/export_resnet18.py builds them (random weights with
torch.manual_seed(0), BatchNorm statistics of a trained network's size, each BatchNorm folded into
the conv before it, weights rounded to f16 values), exported to ONNX opset 13 with input "input"
[1, 3, 224, 224] and output "output" [1, 1000], the weights stored inside the file (the page
fetches one file per model).

    /usr/bin/python3 web/bench/export_models.py [DIR]    # DIR defaults to build/web-models

With these random weights MobileNet-v2's output hardly depends on its input (two random inputs
give outputs 2e-8 apart: the signal fades through the blocks without a residual, and the folded
biases decide the output), so comparing runtimes on it checks little of the early layers. For
that check it also writes mobilenet_v2_check.onnx: the same graph with the BatchNorm scales drawn
from [2, 3] instead of [0.5, 1] (outputs about 0.1 apart for two inputs). run.mjs compares every
runtime with onnxruntime-web on it, untimed.

Up to date when every file is newer than this script. Exit status 2 without torch/torchvision.
"""
import io
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from export_resnet18 import folded_model  # noqa: E402 (the benchmark's models, built one way)

MODELS = ("resnet18", "mobilenet_v2")
# file name -> (torchvision model, range of the BatchNorm scales)
VARIANTS = {"resnet18": ("resnet18", (0.5, 1.0)), "mobilenet_v2": ("mobilenet_v2", (0.5, 1.0)),
            "mobilenet_v2_check": ("mobilenet_v2", (2.0, 3.0))}


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "build/web-models"
    paths = {m: os.path.join(out_dir, f"{m}.onnx") for m in VARIANTS}
    if all(os.path.exists(p) and os.path.getmtime(p) >= os.path.getmtime(__file__) for p in paths.values()):
        return
    try:
        import warnings

        import torch
        import torchvision  # noqa: F401 (folded_model's; checked here for the message)
    except ImportError as e:
        print(f"export_models.py: {e} (install python3-torch and python3-torchvision)", file=sys.stderr)
        sys.exit(2)
    warnings.filterwarnings("ignore")
    os.makedirs(out_dir, exist_ok=True)
    for file, path in paths.items():
        name, (lo, hi) = VARIANTS[file]
        model = folded_model(name, (lo, hi))
        x = torch.randn(1, 3, 224, 224)
        buf = io.BytesIO()
        with torch.no_grad():
            torch.onnx.export(model, (x,), buf, opset_version=13, input_names=["input"], output_names=["output"],
                              do_constant_folding=True)
        with open(path + ".tmp", "wb") as f:
            f.write(buf.getvalue())
        os.replace(path + ".tmp", path)
        print(f"export_models.py: wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
