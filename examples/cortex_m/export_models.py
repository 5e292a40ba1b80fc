#!/usr/bin/env python3
"""Exports the models that examples/cortex_m runs on a Cortex-M4, with their test inputs and
PyTorch's outputs for them (the reference the firmware's and the native build's results are
checked against). Needs only PyTorch (Debian's python3-torch); downloads nothing.

  digits_cnn_m  the digit classifier trained by ember (build/examples/cortex_m writes its
                safetensors): the same layers in PyTorch, ember's weights loaded, exported to ONNX;
                inputs: the first 100 test digits of scikit-learn's 8x8 set (rows 1437..1536).
  kws_cnn       a keyword-spotting-style CNN on a [1, 1, 49, 10] MFCC-like input: a strided conv,
                depthwise-separable blocks (BatchNorm, ReLU, ReLU6, a residual Add), a two-branch
                Concat (one through an AveragePool), a MaxPool, global average pooling, a linear
                layer to 12 classes and Softmax; seeded weights and random BatchNorm statistics.
  kws_rnn       a recurrent keyword spotter on [49, 1, 10]: LSTM (10 -> 20), GRU (20 -> 16), Tanh,
                linear to 12 classes, Sigmoid; seeded weights.

Writes, per model, OUT/NAME.onnx, OUT/NAME.inputs.bin (100 inputs, float32 little-endian, one
after the other), OUT/NAME.reference.bin (PyTorch's outputs, likewise) and OUT/NAME.meta.json.

  python3 examples/cortex_m/export_models.py --out build/cortex_m --digits-weights build/cortex_m/digits_cnn_m.safetensors
"""

import argparse
import gzip
import json
import os
import struct
import sys

import torch
from torch import nn

COUNT = 100
DIGITS_CSV = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
DIGITS_TRAIN_ROWS = 1437  # examples/common/digits.hpp's split


class DigitsCnnM(nn.Module):
    """examples/cortex_m/train_digits.cpp's SmallCnn, layer for layer."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc1 = nn.Linear(256, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


class KwsCnn(nn.Module):
    def __init__(self, classes=12, c=24):
        super().__init__()
        self.conv0 = nn.Sequential(nn.Conv2d(1, c, (10, 4), stride=(2, 2), padding=(5, 1)), nn.BatchNorm2d(c), nn.ReLU())
        self.dw1 = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, groups=c), nn.BatchNorm2d(c), nn.ReLU())
        self.pw1 = nn.Sequential(nn.Conv2d(c, c, 1), nn.BatchNorm2d(c), nn.ReLU())
        self.dw2 = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, groups=c), nn.BatchNorm2d(c), nn.ReLU6())
        self.pw2 = nn.Sequential(nn.Conv2d(c, c, 1), nn.BatchNorm2d(c))
        self.branch_a = nn.Sequential(nn.Conv2d(c, c // 2, 1), nn.ReLU())
        self.branch_b = nn.Sequential(nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False),
                                      nn.Conv2d(c, c // 2, 1), nn.ReLU())
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        x = self.conv0(x)
        x = self.pw1(self.dw1(x))
        x = torch.relu(self.pw2(self.dw2(x)) + x)
        x = torch.cat([self.branch_a(x), self.branch_b(x)], 1)
        x = nn.functional.max_pool2d(x, (2, 1))
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return torch.softmax(self.fc(x), -1)


class KwsRnn(nn.Module):
    def __init__(self, classes=12):
        super().__init__()
        self.lstm = nn.LSTM(10, 20)
        self.gru = nn.GRU(20, 16)
        self.fc = nn.Linear(16, classes)

    def forward(self, x):  # [seq, batch, features]
        y, _ = self.lstm(x)
        _, h = self.gru(y)
        return torch.sigmoid(self.fc(torch.tanh(h[0])))


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise SystemExit(f"{path}: {name} is {info['dtype']}, expected F32")
        begin, end = info["data_offsets"]
        values = struct.unpack(f"<{(end - begin) // 4}f", data[base + begin:base + end])
        tensors[name] = torch.tensor(values, dtype=torch.float32).reshape(info["shape"])
    return tensors


def digits_inputs(first=DIGITS_TRAIN_ROWS, count=COUNT):
    """Digits first .. first + count of the file (by default the first test digits), in [0, 1]."""
    with gzip.open(DIGITS_CSV, "rt") as f:
        rows = [line.strip().split(",") for line in f if line.strip()]
    chosen = rows[first:first + count]
    return torch.tensor([[float(v) / 16.0 for v in r[:64]] for r in chosen]).reshape(count, 1, 1, 8, 8)


def standardise_classifier(model, fc, calibration):
    """Rescales a random model's last linear layer so that it reads its features as deviations from
    their mean on `calibration` (one batch): a random network's features share a large common
    part, and without this every input would get the same class, a weak test of the firmware."""
    seen = {}
    hook = fc.register_forward_hook(lambda module, inputs, output: seen.__setitem__("features", inputs[0]))
    with torch.no_grad():
        model(calibration)
        features = seen["features"].reshape(-1, fc.in_features)
        fc.weight.div_(features.std(0) + 1e-3)
        fc.bias.copy_(-(fc.weight @ features.mean(0)))
    hook.remove()


def write_floats(path, tensor):
    values = tensor.detach().contiguous().reshape(-1).tolist()
    with open(path, "wb") as f:
        f.write(struct.pack(f"<{len(values)}f", *values))


def write_npy(path, tensor):
    """A float32 tensor as a NumPy .npy file (version 1.0), without NumPy."""
    values = tensor.detach().contiguous().reshape(-1).tolist()
    shape = ", ".join(str(d) for d in tensor.shape) + ("," if tensor.dim() == 1 else "")
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % shape
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack(f"<{len(values)}f", *values))


def read_npy_floats(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY" or data[6] != 1:
        raise SystemExit(f"{path}: not a version-1 .npy file")
    (header_len,) = struct.unpack("<H", data[8:10])
    header = data[10:10 + header_len].decode("latin1")
    if "'<f4'" not in header:
        raise SystemExit(f"{path}: not float32 ({header.strip()})")
    body = data[10 + header_len:]
    return list(struct.unpack(f"<{len(body) // 4}f", body))


def write_npy_dir(directory, inputs):
    """One .npy file per input (000.npy, ...): ember-onnx's --input and --calibration read them."""
    os.makedirs(directory, exist_ok=True)
    for i, x in enumerate(inputs):
        write_npy(os.path.join(directory, f"{i:03d}.npy"), x)


def gather(prefix):
    """PREFIX.reference.bin from PREFIX.ember/NNN/output.npy, the outputs ember-onnx run wrote for
    the inputs PREFIX.npy/NNN.npy (the reference of the int8 models, which PyTorch cannot run)."""
    runs = sorted(os.listdir(prefix + ".ember"))
    values = []
    for run in runs:
        values += read_npy_floats(os.path.join(prefix + ".ember", run, "output.npy"))
    with open(prefix + ".reference.bin", "wb") as f:
        f.write(struct.pack(f"<{len(values)}f", *values))
    print(f"wrote {prefix}.reference.bin ({len(runs)} outputs of ember's ONNX runtime)")


def export(model, name, inputs, out_dir, opset=13, calibration=None):
    model.eval()
    with torch.no_grad():
        outputs = torch.stack([model(x) for x in inputs])
    path = os.path.join(out_dir, name + ".onnx")
    torch.onnx.export(model, inputs[0], path, opset_version=opset, input_names=["input"], output_names=["output"])
    write_floats(os.path.join(out_dir, name + ".inputs.bin"), inputs)
    write_floats(os.path.join(out_dir, name + ".reference.bin"), outputs)
    write_npy_dir(os.path.join(out_dir, name + ".npy"), inputs)
    if calibration is not None:  # for ember-onnx quantize
        write_npy_dir(os.path.join(out_dir, name + ".calibration"), calibration)
    meta = {"name": name, "inputs": COUNT, "input_shape": list(inputs.shape[1:]),
            "output_shape": list(outputs.shape[1:]), "input_size": inputs[0].numel(), "output_size": outputs[0].numel()}
    with open(os.path.join(out_dir, name + ".meta.json"), "w") as f:
        json.dump(meta, f)
    print(f"wrote {path} ({COUNT} inputs {list(inputs.shape[1:])} -> {list(outputs.shape[1:])})")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", help="where to write the models (required unless --gather)")
    p.add_argument("--digits-weights", help="the safetensors file build/examples/cortex_m wrote")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--gather", metavar="PREFIX", help="only write PREFIX.reference.bin from PREFIX.ember/*/output.npy")
    args = p.parse_args()
    if args.gather:
        gather(args.gather)
        return 0
    if not args.out:
        p.error("--out is required")
    os.makedirs(args.out, exist_ok=True)

    if args.digits_weights:
        model = DigitsCnnM()
        model.load_state_dict(read_safetensors(args.digits_weights))
        export(model, "digits_cnn_m", digits_inputs(), args.out, calibration=digits_inputs(0, 32))

    torch.manual_seed(args.seed)
    kws = KwsCnn()
    for m in kws.modules():  # BatchNorm statistics that are not the identity, as a trained model's
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)
    kws.eval()
    standardise_classifier(kws, kws.fc, torch.randn(200, 1, 49, 10) + 2 * torch.randn(200, 1, 1, 10))
    # MFCC-like inputs: noise around a per-input offset of each coefficient, so that the inputs
    # (and the classes a random model gives them) differ.
    inputs = torch.randn(COUNT, 1, 1, 49, 10) + 2 * torch.randn(COUNT, 1, 1, 1, 10)
    calibration = torch.randn(32, 1, 1, 49, 10) + 2 * torch.randn(32, 1, 1, 1, 10)
    export(kws, "kws_cnn", inputs, args.out, calibration=calibration)

    torch.manual_seed(args.seed + 1)
    rnn = KwsRnn().eval()
    standardise_classifier(rnn, rnn.fc, torch.randn(49, 200, 10) + 2 * torch.randn(1, 200, 10))
    export(rnn, "kws_rnn", torch.randn(COUNT, 49, 1, 10) + 2 * torch.randn(COUNT, 1, 1, 10), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
