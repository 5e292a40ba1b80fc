#!/usr/bin/env python3
"""The models of the onnx_resnet18_* and onnx_mobilenet_v2_* benchmarks (docs/benchmarks.md,
"ResNet-18" and "ONNX Runtime").

    /usr/bin/python3 bench/export_resnet18.py [--model NAME] [DIR]   # export (torch 1.13 + torchvision)
    python3 bench/export_resnet18.py --expand [--model NAME] [DIR]   # f16 weights -> f32 (no dependencies)

NAME is resnet18 (the default) or mobilenet_v2; DIR defaults to build/bench-models. The export
builds torchvision's model of that name with random weights (torch.manual_seed(0), weights=None:
nothing is downloaded), eval mode, folds each BatchNorm into the conv before it (as ONNX
exporters and inference runtimes do, so every side runs the same graph of convs with bias,
activations, pools, adds and one Gemm) and rounds every weight to the nearest f16 value, so that
the f32 weights ship losslessly at half the size (the model still computes in f32). It writes to
DIR, for NAME = resnet18:

  resnet18.onnx             opset 13, input "input" [batch, 3, 224, 224] (batch symbolic), output
                            "output" [batch, 1000]; initializers named as in torchvision
                            ("layer1.0.conv1.weight", "fc.bias", ...) and stored as external data
                            in resnet18.weights.
  resnet18.weights          the initializers, raw little-endian f32, in the order of:
  resnet18.json             [{"name", "shape", "offset" (bytes into resnet18.weights)}, ...]
  resnet18.weights.f16      the same values as f16 (half the size: what travels to a GPU machine)
  resnet18_ref.safetensors  "input" [1, 3, 224, 224] and PyTorch's "output" [1, 1000] for it
  resnet18.ts               the same model traced with torch.jit.trace (TorchScript): LibTorch's
                            side of the CPU benchmark (torch::jit::load)

and the same six files named after mobilenet_v2 for it.

--expand writes NAME.weights from NAME.weights.f16 where it is missing: a GPU machine gets the
small files and rebuilds the large one (bench.sh cuda does this).

Exit status 2 when torch or torchvision is missing (bench.sh then skips the rows with a message).
"""
import argparse
import json
import os
import struct
import sys

MODELS = ("resnet18", "mobilenet_v2")  # torchvision.models constructors


class Files:
    """The names of one model's files in DIR."""

    def __init__(self, model):
        self.onnx = f"{model}.onnx"
        self.weights = f"{model}.weights"
        self.index = f"{model}.json"
        self.weights_f16 = f"{model}.weights.f16"
        self.reference = f"{model}_ref.safetensors"
        self.torchscript = f"{model}.ts"

    def all(self):
        return (self.onnx, self.weights, self.index, self.weights_f16, self.reference, self.torchscript)


# ------------------------------------------------------------------ protobuf, the little needed

def read_varint(buf, pos):
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, pos


def varint(value):
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def fields(buf):
    """Yields (field number, wire type, value, raw bytes of the whole field) of a message."""
    pos = 0
    while pos < len(buf):
        start = pos
        key, pos = read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = read_varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = read_varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield number, wire, value, buf[start:pos]


def length_delimited(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def externalise(model_bytes, weights, location):
    """Rewrites a ModelProto so that every initializer's data lives in the file `location`.

    TensorProto fields used: dims 1, data_type 2, name 8, raw_data 9, external_data 13
    (key 1, value 2), data_location 14 (1 = EXTERNAL); ModelProto.graph is 7 and
    GraphProto.initializer 5. Appends each tensor's bytes to `weights` (a bytearray) and returns
    (the new model, the index)."""
    index = []

    def tensor(buf):
        dims, name, raw, dtype = [], None, None, None
        for number, wire, value, _ in fields(buf):
            if number == 1:
                if wire == 2:  # packed
                    p = 0
                    while p < len(value):
                        d, p = read_varint(value, p)
                        dims.append(d)
                else:
                    dims.append(value)
            elif number == 2:
                dtype = value
            elif number == 8:
                name = value.decode()
            elif number == 9:
                raw = bytes(value)
        if dtype != 1 or raw is None:
            raise ValueError(f"initializer {name}: expected f32 raw_data (data_type {dtype})")
        offset = len(weights)
        weights.extend(raw)
        index.append({"name": name, "shape": dims, "offset": offset})
        out = b"".join(varint(1 << 3) + varint(d) for d in dims) + varint(2 << 3) + varint(1)
        out += length_delimited(8, name.encode())
        for k, v in (("location", location), ("offset", str(offset)), ("length", str(len(raw)))):
            out += length_delimited(13, length_delimited(1, k.encode()) + length_delimited(2, v.encode()))
        return out + varint(14 << 3) + varint(1)

    def graph(buf):
        return b"".join(length_delimited(5, tensor(v)) if n == 5 else raw for n, _, v, raw in fields(buf))

    model = b"".join(length_delimited(7, graph(v)) if n == 7 else raw for n, _, v, raw in fields(model_bytes))
    return model, index


def write_safetensors(path, tensors):
    """A minimal safetensors writer: {name: (shape, f32 little-endian bytes)}."""
    header, data = {}, b""
    for name, (shape, raw) in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


# ------------------------------------------------------------------ the two modes

def expand(out_dir, files):
    dst = os.path.join(out_dir, files.weights)
    if os.path.exists(dst):
        return
    with open(os.path.join(out_dir, files.weights_f16), "rb") as f:
        half = f.read()
    n = len(half) // 2
    with open(dst + ".tmp", "wb") as f:
        step = 1 << 20
        for i in range(0, n, step):
            m = min(step, n - i)
            f.write(struct.pack(f"<{m}f", *struct.unpack_from(f"<{m}e", half, 2 * i)))
    os.replace(dst + ".tmp", dst)
    print(f"export_resnet18.py: wrote {dst}", file=sys.stderr)


def folded_model(name, bn_scale=(0.5, 1.0)):
    """torchvision's `name` with seeded random weights, BatchNorm folded into the convs, every
    parameter rounded to f16 and back. Also used by web/bench/export_models.py."""
    import torch
    import torchvision
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    # Statistics and affine parameters of a trained network's size instead of the initial 1s
    # and 0s, so that the folded biases are not all zero (and not merged by the exporter).
    with torch.no_grad():
        for bn in (m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)):
            bn.weight.uniform_(*bn_scale)
            bn.bias.normal_(0, 0.1)
            bn.running_mean.normal_(0, 0.1)
            bn.running_var.uniform_(0.5, 1.5)
    # Fold BatchNorm into the conv it follows, its sibling: ResNet's (conv1, bn1), (layerN.M.convK,
    # bnK), downsample.(0, 1); MobileNet's (0, 1) of each Conv2dNormActivation and of each block.
    for parent in model.modules():
        names = list(parent._modules)
        for a, b in zip(names, names[1:]):
            conv, bn = parent._modules[a], parent._modules[b]
            if isinstance(conv, torch.nn.Conv2d) and isinstance(bn, torch.nn.BatchNorm2d):
                parent._modules[a] = fuse_conv_bn_eval(conv, bn)
                parent._modules[b] = torch.nn.Identity()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())
    return model


def export(out_dir, name, files):
    try:
        import io
        import warnings

        import torch
        import torchvision  # noqa: F401 (folded_model's; checked here for the message)
    except ImportError as e:
        print(f"export_resnet18.py: {e} (install python3-torch and python3-torchvision)", file=sys.stderr)
        sys.exit(2)
    warnings.filterwarnings("ignore")

    model = folded_model(name)
    torch.manual_seed(1)
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        ref = model(x)
        buf = io.BytesIO()
        torch.onnx.export(model, (x,), buf, opset_version=13, input_names=["input"], output_names=["output"],
                          do_constant_folding=True, dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
        traced = torch.jit.trace(model, (x,))
    weights = bytearray()
    onnx_bytes, index = externalise(buf.getvalue(), weights, files.weights)
    state = model.state_dict()
    # The exporter kept torchvision's names, one initializer per parameter: bench/cuda_peer.py relies on it.
    shapes = {t["name"]: t["shape"] for t in index}
    if shapes != {k: list(v.shape) for k, v in state.items()}:
        raise SystemExit(f"export_resnet18.py: initializers {sorted(shapes)} differ from the parameters {sorted(state)}")

    os.makedirs(out_dir, exist_ok=True)
    path = lambda name: os.path.join(out_dir, name)  # noqa: E731
    with open(path(files.onnx), "wb") as f:
        f.write(onnx_bytes)
    with open(path(files.weights), "wb") as f:
        f.write(weights)
    with open(path(files.weights_f16), "wb") as f:
        f.write(torch.frombuffer(weights, dtype=torch.float32).half().numpy().tobytes())
    with open(path(files.index), "w") as f:
        json.dump(index, f, indent=0)
    write_safetensors(path(files.reference), {"input": (x.shape, x.numpy().tobytes()),
                                              "output": (ref.shape, ref.numpy().tobytes())})
    torch.jit.save(traced, path(files.torchscript))
    print(f"export_resnet18.py: wrote {out_dir}/{{{','.join(files.all())}}}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description="Exports a benchmark model (see the module's docstring).")
    parser.add_argument("dir", nargs="?", default="build/bench-models")
    parser.add_argument("--model", choices=MODELS, default="resnet18")
    parser.add_argument("--expand", action="store_true", help="write NAME.weights from NAME.weights.f16")
    args = parser.parse_args()
    files = Files(args.model)
    if args.expand:
        expand(args.dir, files)
        return
    # Up to date when every file is newer than this script.
    outputs = [os.path.join(args.dir, n) for n in files.all()]
    if all(os.path.exists(p) and os.path.getmtime(p) >= os.path.getmtime(__file__) for p in outputs):
        return
    export(args.dir, args.model, files)


if __name__ == "__main__":
    main()
