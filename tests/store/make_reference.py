#!/usr/bin/python3
"""Reference files for ember's store tests and fuzz seeds, produced by PyTorch.

Run with Debian's python3-torch (1.13.x):   /usr/bin/python3 tests/store/make_reference.py
Writes (any cwd, deterministic):
  tests/store/data/*.pt             torch.save of state dicts (every dtype, views of shared
                                    storages, nested checkpoints, parameters, a bare tensor)
  tests/store/data/*.safetensors    written by the small safetensors writer below, an
                                    implementation independent of ember's
  tests/store/data/expected.json    what each file holds, as torch reads it back
  tests/store/corpus/{pytorch,safetensors}/  seed inputs for the fuzz targets

Every expected value is taken from torch itself (tensor.tolist() after torch.load, or of the
tensor that was saved), never from ember.
"""
import collections
import io
import json
import os
import shutil
import struct
import zipfile

import torch

torch.manual_seed(0)
torch.set_num_threads(1)

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
CORPUS = os.path.join(HERE, "corpus")

EMBER_NAME = {
    torch.float64: "f64", torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8", torch.uint8: "u8",
    torch.bool: "bool",
}
ST_NAME = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
    torch.bool: "BOOL",
}


def values_of(t):
    """Row-major values as JSON numbers (16-bit floats widened exactly to float)."""
    t = t.detach().contiguous()
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    if t.dtype == torch.bool:
        return [1 if v else 0 for v in t.flatten().tolist()]
    return t.flatten().tolist()


def describe(t):
    return {"dtype": EMBER_NAME[t.dtype], "shape": list(t.shape), "values": values_of(t)}


def flatten(obj, prefix, tensors, values):
    """The dotted-key view of a checkpoint that ember's load_pytorch_checkpoint documents."""
    join = (lambda k: f"{prefix}.{k}") if prefix else (lambda k: str(k))
    if isinstance(obj, torch.Tensor):
        tensors[prefix] = describe(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            key = "True" if k is True else "False" if k is False else "None" if k is None else k
            flatten(v, join(key), tensors, values)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            flatten(v, join(i), tensors, values)
    elif obj is None or isinstance(obj, (bool, int, float, str)):
        values[prefix] = obj


def every_dtype():
    sd = collections.OrderedDict()
    base = torch.randn(2, 3)
    for dt in EMBER_NAME:
        if dt == torch.bool:
            t = torch.tensor([[True, False, True], [False, False, True]])
        elif dt.is_floating_point:
            t = (base * 4).to(dt)
        elif dt == torch.uint8:
            t = torch.tensor([[0, 1, 127], [128, 200, 255]], dtype=dt)
        else:
            info = torch.iinfo(dt)
            t = torch.tensor([[info.min, -1, 0], [1, 77, info.max]], dtype=dt)
        sd["t_" + EMBER_NAME[dt]] = t
    sd["scalar"] = torch.tensor(2.5, dtype=torch.float64)  # 0-d
    sd["empty"] = torch.zeros(0, 4)
    sd["long_row"] = torch.arange(100, dtype=torch.int32)
    return sd


def views():
    base = torch.arange(24, dtype=torch.float32)
    m = base.view(4, 6)
    return collections.OrderedDict([
        ("base", base),
        ("transposed", m.t()),              # stride (1, 6)
        ("slice", base[5:11]),              # offset 5
        ("every_other", m[:, ::2]),         # stride (6, 2)
        ("column", m[:, 3]),                # offset 3, stride (6,)
        ("expanded", torch.tensor([1.5, -2.0]).expand(3, 2)),  # stride (0, 1)
        ("tied_a", m[1]),                   # two names, one storage region
        ("tied_b", m[1]),
        ("half_view", torch.arange(12, dtype=torch.float16).view(3, 4)[1:, 1:3]),
    ])


def nested():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.125, momentum=0.9)
    model(torch.randn(5, 3)).sum().backward()
    opt.step()
    return {
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "epoch": 3,
        "best_loss": 0.25,
        "name": "run-1",
        "finished": True,
        "note": None,
        "history": [1.5, 0.75],
        "big": 2 ** 40,           # LONG1
        "most_negative": -2 ** 63,
        "negative": -5,
        "shapes": (torch.ones(2, dtype=torch.int64), 7),
    }


def parameters():
    return {"weight": torch.nn.Parameter(torch.randn(2, 2)),
            "frozen": torch.nn.Parameter(torch.arange(3.0), requires_grad=False)}


def fixed_info(name, compress=zipfile.ZIP_STORED):
    """A ZipInfo with a fixed timestamp, so that the files are reproducible."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = compress
    return info


def rezip(src, dst, byteorder=None, compress=False):
    """Rewrites a torch archive with Python's zipfile (another ZIP writer): no ZIP64 records, no
    alignment padding; optionally big-endian data with a byteorder entry, or deflated entries."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED) as zout:
        prefix = zin.namelist()[0].split("/")[0]
        for info in zin.infolist():
            data = zin.read(info.filename)
            zout.writestr(fixed_info(info.filename, zout.compression), data)
        if byteorder:
            zout.writestr(fixed_info(prefix + "/byteorder"), byteorder)


def big_endian_archive(dst):
    """torch >= 2.1 records the byte order; this builds a big-endian one from a little-endian save."""
    sd = collections.OrderedDict([("w", torch.tensor([[1.5, -2.25], [3.0, 1e-3]])),
                                  ("i", torch.tensor([1, -2, 300000], dtype=torch.int32)),
                                  ("h", torch.tensor([0.5, -8.0], dtype=torch.float16)),
                                  ("b", torch.tensor([True, False]))])
    buf = io.BytesIO()
    torch.save(sd, buf)
    sizes = {}
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zin, zipfile.ZipFile(dst, "w") as zout:
        prefix = zin.namelist()[0].split("/")[0]
        # storage key -> element size, from the order torch.save assigns keys
        for key, t in enumerate(sd.values()):
            sizes[f"{prefix}/data/{key}"] = t.element_size()
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename in sizes:
                n = sizes[info.filename]
                data = b"".join(data[i:i + n][::-1] for i in range(0, len(data), n))
            zout.writestr(fixed_info(info.filename), data)
        zout.writestr(fixed_info(prefix + "/byteorder"), "big")
    return sd


def write_safetensors(path, tensors, metadata=None, reverse_layout=False):
    """A safetensors writer independent of ember's: header keys in insertion order, data laid out
    in reverse name order when asked (readers must not assume either)."""
    names = list(tensors)
    layout = sorted(names, reverse=reverse_layout)
    offsets, blobs, pos = {}, [], 0
    for name in layout:
        t = tensors[name].contiguous()
        if t.dtype == torch.bfloat16:
            raw = t.view(torch.int16).numpy().tobytes()
        else:
            raw = t.numpy().tobytes()
        offsets[name] = (pos, pos + len(raw))
        blobs.append(raw)
        pos += len(raw)
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    for name in names:
        t = tensors[name]
        header[name] = {"dtype": ST_NAME[t.dtype], "shape": list(t.shape), "data_offsets": list(offsets[name])}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def save(obj, name):
    path = os.path.join(DATA, name)
    torch.save(obj, path)
    return path


def main():
    os.makedirs(DATA, exist_ok=True)
    for sub in ("pytorch", "safetensors"):
        shutil.rmtree(os.path.join(CORPUS, sub), ignore_errors=True)
        os.makedirs(os.path.join(CORPUS, sub))
    expected = {}

    def record(name, obj_loaded):
        tensors, values = {}, {}
        flatten(obj_loaded, "", tensors, values)
        expected[name] = {"tensors": tensors, "values": values}

    for name, obj in [("dtypes.pt", every_dtype()), ("views.pt", views()), ("nested.pt", nested()),
                      ("parameter.pt", parameters()), ("tensor.pt", torch.tensor([[1, 2], [3, 4]], dtype=torch.int16))]:
        path = save(obj, name)
        record(name, torch.load(path))
    # Protocol 4 (FRAME, MEMOIZE, STACK_GLOBAL, SHORT_BINUNICODE, ...), as torch.save(pickle_protocol=4) writes it.
    path = os.path.join(DATA, "protocol4.pt")
    torch.save(nested(), path, pickle_protocol=4)
    record("protocol4.pt", torch.load(path))

    rezip(os.path.join(DATA, "views.pt"), os.path.join(DATA, "python_zip.pt"))
    record("python_zip.pt", torch.load(os.path.join(DATA, "python_zip.pt")))
    rezip(os.path.join(DATA, "views.pt"), os.path.join(DATA, "deflated.pt"), compress=True)
    sd = big_endian_archive(os.path.join(DATA, "big_endian.pt"))
    record("big_endian.pt", sd)  # torch 1.13 cannot read big-endian archives; the values saved

    st = every_dtype()
    write_safetensors(os.path.join(DATA, "reference.safetensors"), st, {"format": "pt", "source": "make_reference.py"},
                      reverse_layout=True)
    record("reference.safetensors", st)
    expected["reference.safetensors"]["metadata"] = {"format": "pt", "source": "make_reference.py"}

    with open(os.path.join(DATA, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")

    # Fuzz seeds: small valid inputs of each format.
    for name in ("dtypes.pt", "views.pt", "nested.pt", "parameter.pt", "tensor.pt", "python_zip.pt", "big_endian.pt",
                 "protocol4.pt"):
        shutil.copy(os.path.join(DATA, name), os.path.join(CORPUS, "pytorch", name))
    seeds = os.path.join(CORPUS, "safetensors")
    shutil.copy(os.path.join(DATA, "reference.safetensors"), os.path.join(seeds, "every_dtype.safetensors"))
    write_safetensors(os.path.join(seeds, "empty.safetensors"), {})
    write_safetensors(os.path.join(seeds, "metadata_only.safetensors"), {}, {"k": "v"})
    write_safetensors(os.path.join(seeds, "zero_size.safetensors"),
                      {"a": torch.zeros(0, 3), "b": torch.ones(2, dtype=torch.int8), "c": torch.zeros(())})
    write_safetensors(os.path.join(seeds, "views.safetensors"), {k: v.contiguous() for k, v in views().items()})


if __name__ == "__main__":
    main()
