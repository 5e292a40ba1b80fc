#!/usr/bin/env python3
"""Writes the fuzz target's seed corpus (tests/remote/fuzz/corpus/): one well-formed frame of
each kind, following the wire form of src/decorators/remote/wire.hpp. Run it after a change
to the wire form and commit the result."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC, VERSION = 0x524D4245, 3
HELLO, BATCH, READ, SYNC, QUERY, STATS, CHUNK, SUPPORTS = 1, 2, 3, 4, 5, 6, 7, 8
UPLOAD, EXEC, FREE, SEED = 1, 2, 3, 4
F32, I64 = 1, 4


def frame(kind, payload):
    return struct.pack("<IHBBI", MAGIC, VERSION, kind, 0, len(payload)) + payload


def s(text):
    b = text.encode()
    return struct.pack("<I", len(b)) + b


def meta(dtype, dims):
    return struct.pack("<BB", dtype, len(dims)) + b"".join(struct.pack("<q", d) for d in dims)


def upload(i, dtype, dims, data, offset=0):
    return struct.pack("<BQ", UPLOAD, i) + meta(dtype, dims) + struct.pack("<QQ", offset, len(data)) + data


def exec_(name, attrs, ins, outs):
    return (struct.pack("<B", EXEC) + s(name) + attrs + struct.pack("<I", len(ins)) +
            b"".join(struct.pack("<Q", i) for i in ins) + struct.pack("<I", len(outs)) +
            b"".join(struct.pack("<Q", o) for o in outs))


def batch(*cmds):
    return frame(BATCH, struct.pack("<I", len(cmds)) + b"".join(cmds))


def i64s(v):
    return struct.pack("<I", len(v)) + b"".join(struct.pack("<q", x) for x in v)


seeds = {
    "hello": frame(HELLO, s("token")),
    "read": frame(READ, struct.pack("<Q", 3)),
    "sync": frame(SYNC, b""),
    "stats": frame(STATS, b""),
    "query": frame(QUERY, struct.pack("<IQQ", 2, 1, 2)),
    "batch_add": batch(upload(1, F32, [2, 2], bytes(16)), upload(2, F32, [2], bytes(8)),
                       exec_("add", b"", [1, 2], [3]), struct.pack("<BQ", FREE, 1), struct.pack("<BQ", SEED, 42)),
    # sum: ReduceAttrs = dims (list of i64), keepdim u8, p f64, correction i64
    "batch_sum": batch(exec_("sum", i64s([0, 1]) + struct.pack("<Bdq", 1, 2.0, 1), [1], [4])),
    # reshape: ShapeAttrs = shape (list of i64)
    "batch_reshape": batch(exec_("reshape", i64s([4]), [1], [5])),
    # conv: ConvAttrs = stride, padding, dilation, output_padding (lists), groups i64, act_min/max f64
    "batch_conv": batch(exec_("conv", i64s([1, 1]) + i64s([0, 0]) + i64s([1, 1]) + i64s([0, 0]) +
                              struct.pack("<qdd", 1, float("-inf"), float("inf")), [1, 2, 0], [6])),
    # cast: CastAttrs = dtype u8
    "batch_cast": batch(exec_("cast", struct.pack("<B", I64), [1], [7])),
    # supports: op name, u32 n, per input u8 present and u8 dtype
    "supports": frame(SUPPORTS, s("add") + struct.pack("<IBBBB", 2, 1, F32, 0, 0)),
    # a chunk frame: u64 id, u64 offset, u64 total, then the values
    "chunk": frame(CHUNK, struct.pack("<QQQ", 9, 8, 16) + bytes(8)),
    "upload_chunks": batch(upload(9, F32, [4], bytes(8)), upload(9, F32, [4], bytes(8), offset=8)),
}
os.makedirs(os.path.join(HERE, "corpus"), exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(HERE, "corpus", name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds written")
