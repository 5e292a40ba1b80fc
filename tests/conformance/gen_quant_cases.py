#!/usr/bin/env python3
"""Generate cases/quant.json: conformance cases of the quantized matrix products of
include/ember/core/ops.def (matmul_integer, conv_integer, matmul_wq), with expected values from numpy.

Run with Debian's python3-numpy:   /usr/bin/python3 gen_quant_cases.py   (deterministic: byte-identical output)
Same file format and comparison rule as the other case files (README.md). The registry
(op_registry.cpp) calls the tensor API's matmul_integer / conv_integer / matmul_wq.

References:
  matmul_integer   numpy int64 matmul of (a - a_zero_point) and (b - b_zero_point) (batch dims
                   broadcast), wrapped to i32; exact. attrs: a_zero_point / b_zero_point (bool: whether
                   the input is given; the given ones follow a and b in that order).
  conv_integer     int64 sums over each window of (x - x_zero_point)(w - w_zero_point) (x minus its
                   zero point padded with 0, the taps summed with numpy), wrapped to i32; exact. attrs:
                   stride, padding (one per dim, or ONNX's pads: begins then ends), dilation, groups,
                   x_zero_point / w_zero_point (bool: whether given; they follow x and w in order).
  qlinear_conv     ONNX QLinearConv from conv_integer's int64 sums: acc + bias (i32, wrapping), then
  qlinear_matmul   y = clip(rint(f32(acc) * m) + y_zero_point) with m = (x_scale * w_scale[c]) / y_scale
                   in float32 (numpy's rint: half to even; c the output channel: dim 1 of a conv, the
                   column of a matmul); exact. Without y_scale (ydt f32): y = clip(x_scale w_scale[c]
                   f32(acc) + bias, min, max) in float32, rtol 1e-6 (the kernel may fuse the multiply-add).
                   attrs: the conv's, and flags x_zero_point / w_zero_point / y_scale / y_zero_point /
                   bias (which inputs follow, in the op's order), min / max.
  matmul_wq        the dequantize-then-matmul formula in float64: W[n, k] = scale[n, k / block] *
                   (q[n, k] - zp[n, k / block]) (zp = 0 without a zero point; q a two's complement
                   nibble for symmetric 4-bit weights, the unsigned nibble with a zero point; element
                   2j of a row in the low nibble of byte j), y = x W^T. attrs: bits, block. Inputs:
                   x, data, scales[, zero_point]. Tolerance (README's rule for accumulating ops):
                   rtol 1e-5, atol = max(1e-6, 2e-6 sqrt(K) mag), mag the largest |scale| * (max |q| +
                   max zp) * max |x| (the terms an implementation that subtracts the zero point's share
                   once per block sums). attrs.quantize_x: x is first rounded to int8 per 32 along K
                   (round_x below, float32 arithmetic as the op defines it), then the same formula.
"""
import json
import math
import os
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "cases", "quant.json")
CASES = []


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def fnum(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def ser(a, dt):
    a = np.ascontiguousarray(a)
    flat = a.reshape(-1)
    data = [fnum(v) for v in flat] if dt == "f32" else [int(v) for v in flat]
    return {"dtype": dt, "shape": list(a.shape), "data": data}


def sh(shape):
    return "scalar" if not shape else "x".join(str(s) for s in shape)


def add(name, op, inputs, outs, attrs, rtol=0.0, atol=0.0):
    assert name not in {c["name"] for c in CASES}, name
    CASES.append({"name": name, "op": op, "inputs": inputs, "attrs": attrs, "outputs": outs,
                  "rtol": rtol, "atol": atol})


def npdt(dt):
    return {"u8": np.uint8, "i8": np.int8}[dt]


def int_bytes(rng, shape, dt, extreme=False):
    if extreme:
        return np.full(shape, 255 if dt == "u8" else -128, dtype=npdt(dt))
    lo, hi = (0, 256) if dt == "u8" else (-128, 128)
    return rng.integers(lo, hi, size=shape).astype(npdt(dt))


def matmul_integer_case(desc, ashape, bshape, adt, bdt, azp=None, bzp=None, extreme=False):
    """azp / bzp: None, "scalar" (0-d), "one" ([1]) or "per" ([M] / [N])."""
    name = f"matmul_integer/{adt}{bdt}/{sh(ashape)}_{sh(bshape)}_{desc}"
    rng = rng_for(name)
    a = int_bytes(rng, ashape, adt, extreme)
    b = int_bytes(rng, bshape, bdt, extreme)
    M, N = ashape[-2], bshape[-1]

    def zp(kind, dt, count):
        if kind is None:
            return None
        shape = {"scalar": (), "one": (1,), "per": (count,)}[kind]
        return int_bytes(rng, shape, dt)

    za, zb = zp(azp, adt, M), zp(bzp, bdt, N)
    av = a.astype(np.int64) - (0 if za is None else (za.astype(np.int64).reshape(-1, 1) if za.ndim else za.astype(np.int64)))
    bv = b.astype(np.int64) - (0 if zb is None else zb.astype(np.int64))
    y = np.matmul(av, bv)
    y = ((y + 2**31) % 2**32 - 2**31).astype(np.int32)
    inputs = [ser(a, adt), ser(b, bdt)]
    if za is not None:
        inputs.append(ser(za, adt))
    if zb is not None:
        inputs.append(ser(zb, bdt))
    add(name, "matmul_integer", inputs, [ser(y, "i32")], {"a_zero_point": za is not None, "b_zero_point": zb is not None})


def conv_int_ref(x, w, zx, zw, stride, padding, dilation, groups):
    """int64 sums over each window of (x - zx)(w - zw[m]), padding holding x's zero point."""
    nd = x.ndim - 2
    M = w.shape[0]
    xv = x.astype(np.int64) - (0 if zx is None else int(zx.reshape(-1)[0]))
    wv = w.astype(np.int64) - (0 if zw is None else zw.astype(np.int64).reshape((-1,) + (1,) * (nd + 1)))
    pads = padding if len(padding) == 2 * nd else padding + padding
    # padding holds x's zero point: 0 once it is subtracted
    xp = np.pad(xv, [(0, 0), (0, 0)] + [(pads[i], pads[nd + i]) for i in range(nd)])
    N, C = x.shape[0], x.shape[1]
    Cg, Mg = C // groups, M // groups
    ks = w.shape[2:]
    out = [(xp.shape[2 + i] - dilation[i] * (ks[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    y = np.zeros([N, M] + out, dtype=np.int64)
    for g in range(groups):
        xg = xp[:, g * Cg:(g + 1) * Cg]
        wg = wv[g * Mg:(g + 1) * Mg]
        for tap in np.ndindex(*ks):
            sl = tuple(slice(tap[i] * dilation[i], tap[i] * dilation[i] + (out[i] - 1) * stride[i] + 1, stride[i])
                       for i in range(nd))
            win = xg[(slice(None), slice(None)) + sl]  # [N, Cg, *out]
            wt = wg[(slice(None), slice(None)) + tap]  # [Mg, Cg]
            y[:, g * Mg:(g + 1) * Mg] += np.einsum("nc...,mc->nm...", win, wt)
    return y


def wrap32(v):
    return ((v + 2**31) % 2**32 - 2**31).astype(np.int64)


def requantize(acc, chan_axis, xs, ws, ys, yz, ydt, bias, lo=None, hi=None):
    """QLinearConv / QLinearMatMul's output from the i64 sums acc (the output channel along chan_axis):
    with ys: acc + bias (i32, wrapping), y = clip(rint(f32(acc) * m) + yz) with m = (xs * ws) / ys in
    float32; without: y = clip(xs * ws * f32(acc) + bias, lo, hi) (float32)."""
    shape = [1] * acc.ndim
    shape[chan_axis] = -1
    wsv = np.broadcast_to(ws.reshape(-1), (acc.shape[chan_axis],)).astype(np.float32)
    if ys is not None:
        if bias is not None:
            acc = acc + bias.astype(np.int64).reshape(shape)
        m = (np.float32(xs) * wsv) / np.float32(ys)
        f = wrap32(acc).astype(np.float32) * m.reshape(shape)
        info = np.iinfo(npdt(ydt))
        q = np.clip(np.rint(f).astype(np.int64) + (0 if yz is None else int(yz)), info.min, info.max)
        return q.astype(npdt(ydt))
    m = np.float32(xs) * wsv
    y = wrap32(acc).astype(np.float32) * m.reshape(shape)
    if bias is not None:
        y = y + bias.astype(np.float32).reshape(shape)
    if lo is not None:
        y = np.maximum(y, np.float32(lo))
    if hi is not None:
        y = np.minimum(y, np.float32(hi))
    return y.astype(np.float32)


def qlinear_inputs(x, xdt, xs, zx, w, wdt, ws, zw, ys, yz, ydt, bias):
    inputs = [ser(x, xdt), ser(np.float32(xs), "f32")]
    if zx is not None:
        inputs.append(ser(zx, xdt))
    inputs += [ser(w, wdt), ser(ws, "f32")]
    if zw is not None:
        inputs.append(ser(zw, wdt))
    if ys is not None:
        inputs.append(ser(np.float32(ys), "f32"))
    if yz is not None:
        inputs.append(ser(yz, ydt))
    if bias is not None:
        inputs.append(ser(bias, "i32" if ys is not None else "f32"))
    flags = {"x_zero_point": zx is not None, "w_zero_point": zw is not None, "y_scale": ys is not None,
             "y_zero_point": yz is not None, "bias": bias is not None}
    return inputs, flags


def qlinear_scales(rng, acc, chan_axis, M, per_channel, ydt, yzp, fixed_ys=None):
    """x / w / y scales with outputs that saturate at both ends of y's range now and then (y_scale from
    the spread of the real-valued sums), and y's zero point (yzp: "mid", "low" (post-ReLU: 0 / -128),
    None: absent)."""
    xs = np.float32(rng.uniform(0.01, 0.05))
    ws = rng.uniform(0.002, 0.02, size=(M,) if per_channel else ()).astype(np.float32)
    shape = [1] * acc.ndim
    shape[chan_axis] = -1
    real = acc.astype(np.float64) * float(xs) * np.broadcast_to(ws.reshape(-1), (M,)).reshape(shape)
    spread = float(np.abs(real).max()) if real.size else 1.0
    ys = np.float32(fixed_ys if fixed_ys is not None else max(spread, 1e-3) / 160.0)
    yz = None
    if yzp == "mid":
        yz = np.array(128 if ydt == "u8" else 3, dtype=npdt(ydt))
    elif yzp == "low":
        yz = np.array(0 if ydt == "u8" else -128, dtype=npdt(ydt))
    return xs, ws, ys, yz


def qlinear_output(name, op, rng, acc, axis, xq, wq, ydt, per_channel, yzp, bias, lo, hi, extra):
    """The rest of a qlinear_conv / qlinear_matmul case from the int64 sums acc (output channels along
    axis): scales, zero point and bias drawn from rng, the expected output, the case."""
    (x, xdt, zx), (w, wdt, zw) = xq, wq
    C = acc.shape[axis]
    f32 = ydt == "f32"
    xs, ws, ys, yz = qlinear_scales(rng, acc, axis, C, per_channel, "u8" if f32 else ydt, None if f32 else yzp)
    b = None
    if bias:
        b = (rng.uniform(-2, 2, size=C).astype(np.float32) if f32 else
             rng.integers(-2000, 2000, size=C).astype(np.int32))
    if f32:
        ys = None
    y = requantize(acc, axis, xs, ws, ys, yz, "u8" if yz is None else ydt, b, lo, hi)
    inputs, attrs = qlinear_inputs(x, xdt, xs, zx, w, wdt, ws, zw, ys, yz, ydt, b)
    attrs.update(extra)
    if lo is not None:
        attrs["min"] = lo
    if hi is not None:
        attrs["max"] = hi
    rtol, atol = (1e-6, 1e-6 * float(np.abs(y).max() if y.size else 1.0)) if f32 else (0.0, 0.0)
    add(name, op, inputs, [ser(y, ydt if not f32 else "f32")], attrs, rtol, atol)


def qlinear_conv_case(desc, xshape, wshape, xdt, wdt, ydt, stride, padding, dilation, groups, xzp=None, wzp=None,
                      per_channel=False, yzp="mid", bias=False, lo=None, hi=None):
    """ONNX QLinearConv (ydt u8 / i8), or the f32 form (ydt "f32": y = xs ws acc + bias, clamped)."""
    name = f"qlinear_conv/{xdt}{wdt}{ydt}/{sh(xshape)}_{sh(wshape)}_{desc}"
    rng = rng_for(name)
    x = int_bytes(rng, xshape, xdt)
    w = int_bytes(rng, wshape, wdt)
    M = wshape[0]
    zx = None if xzp is None else int_bytes(rng, {"scalar": (), "one": (1,)}[xzp], xdt)
    zw = None if wzp is None else int_bytes(rng, {"scalar": (), "one": (1,), "per": (M,)}[wzp], wdt)
    acc = conv_int_ref(x, w, zx, zw, stride, padding, dilation, groups)
    qlinear_output(name, "qlinear_conv", rng, acc, 1, (x, xdt, zx), (w, wdt, zw), ydt, per_channel, yzp, bias, lo, hi,
                   {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups})


def qlinear_matmul_case(desc, ashape, bshape, adt, bdt, ydt, azp=None, bzp=None, per_channel=False, yzp="mid",
                        bias=False, lo=None, hi=None):
    name = f"qlinear_matmul/{adt}{bdt}{ydt}/{sh(ashape)}_{sh(bshape)}_{desc}"
    rng = rng_for(name)
    a = int_bytes(rng, ashape, adt)
    b = int_bytes(rng, bshape, bdt)
    N = bshape[-1]
    za = None if azp is None else int_bytes(rng, (), adt)
    zb = None if bzp is None else int_bytes(rng, {"scalar": (), "per": (N,)}[bzp], bdt)
    av = a.astype(np.int64) - (0 if za is None else int(za))
    bv = b.astype(np.int64) - (0 if zb is None else zb.astype(np.int64))
    acc = np.matmul(av, bv)
    qlinear_output(name, "qlinear_matmul", rng, acc, acc.ndim - 1, (a, adt, za), (b, bdt, zb), ydt, per_channel, yzp,
                   bias, lo, hi, {})


def qlinear_add_case(desc, ashape, bshape, dt, azp=True, bzp=True, czp=True, scales=None, ties=False):
    """com.microsoft QLinearAdd: c = clip(rint((sa (a - za) + sb (b - zb)) / sc) + zc), every step in
    float32 (numpy's float32 arithmetic rounds each op), b broadcast against a."""
    name = f"qlinear_add/{dt}/{sh(ashape)}_{sh(bshape)}_{desc}"
    rng = rng_for(name)
    a = int_bytes(rng, ashape, dt)
    b = int_bytes(rng, bshape, dt)
    if ties:  # a / 2 with nothing from b: every odd a a tie, rounded to even
        a = np.arange(int(np.prod(ashape))).reshape(ashape).astype(np.int64) % 256
        a = (a if dt == "u8" else a - 128).astype(npdt(dt))
        b = np.zeros(bshape, dtype=npdt(dt))
    f = np.float32
    sa, sb, sc = scales if scales else (f(rng.uniform(0.01, 0.1)), f(rng.uniform(0.01, 0.1)), f(rng.uniform(0.02, 0.2)))
    sa, sb, sc = f(sa), f(sb), f(sc)
    zp = lambda given: int_bytes(rng, (), dt) if given else None
    za, zb, zc = zp(azp), zp(bzp), zp(czp)
    ra = (a.astype(f) - f(0 if za is None else za)) * sa
    rb = (b.astype(f) - f(0 if zb is None else zb)) * sb
    q = np.rint((ra + rb) / sc) + f(0 if zc is None else zc)
    info = np.iinfo(npdt(dt))
    c = np.clip(q, info.min, info.max).astype(npdt(dt))
    inputs = [ser(a, dt), ser(np.array(sa), "f32")]
    if za is not None:
        inputs.append(ser(za, dt))
    inputs += [ser(b, dt), ser(np.array(sb), "f32")]
    if zb is not None:
        inputs.append(ser(zb, dt))
    inputs.append(ser(np.array(sc), "f32"))
    if zc is not None:
        inputs.append(ser(zc, dt))
    add(name, "qlinear_add", inputs, [ser(c, dt)],
        {"a_zero_point": za is not None, "b_zero_point": zb is not None, "c_zero_point": zc is not None})


def conv_integer_case(desc, xshape, wshape, xdt, wdt, stride, padding, dilation, groups, xzp=None, wzp=None,
                      extreme=False):
    """ONNX ConvInteger. padding: one value per spatial dim, or ONNX's pads (every begin, then every
    end). xzp: None, "scalar" or "one"; wzp: None, "scalar", "one" or "per" ([M])."""
    nd = len(xshape) - 2
    name = f"conv_integer/{xdt}{wdt}/{sh(xshape)}_{sh(wshape)}_{desc}"
    rng = rng_for(name)
    x = int_bytes(rng, xshape, xdt, extreme)
    w = int_bytes(rng, wshape, wdt, extreme)
    M = wshape[0]

    def zp(kind, dt, count):
        if kind is None:
            return None
        return int_bytes(rng, {"scalar": (), "one": (1,), "per": (count,)}[kind], dt)

    zx, zw = zp(xzp, xdt, 1), zp(wzp, wdt, M)
    y = conv_int_ref(x, w, zx, zw, stride, padding, dilation, groups)
    y = ((y + 2**31) % 2**32 - 2**31).astype(np.int32)
    inputs = [ser(x, xdt), ser(w, wdt)]
    if zx is not None:
        inputs.append(ser(zx, xdt))
    if zw is not None:
        inputs.append(ser(zw, wdt))
    add(name, "conv_integer", inputs, [ser(y, "i32")],
        {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups,
         "x_zero_point": zx is not None, "w_zero_point": zw is not None})


def round_x(x):
    """quantize_x: x rounded to int8 per 32 along K in float32 arithmetic, as the op defines it:
    amax = max |x|, id = 127 / amax (0 for a 32 of zeros), q = round_half_even(x * id), x~ = q * (amax / 127)."""
    xb = x.reshape(-1, 32)
    amax = np.abs(xb).max(axis=1, keepdims=True).astype(np.float32)
    with np.errstate(divide="ignore"):
        idv = np.where(amax > 0, np.float32(127) / amax, np.float32(0)).astype(np.float32)
    q = np.rint((xb * idv).astype(np.float32))
    return (q.astype(np.float64) * (amax / np.float32(127)).astype(np.float64)).reshape(x.shape)


def matmul_wq_case(desc, xshape, N, bits, block, affine, quantize_x=False):
    K = xshape[-1]
    name = f"matmul_wq/f32/{sh(xshape)}_n{N}_q{bits}_b{block}_{'affine' if affine else 'sym'}{desc}"
    rng = rng_for(name)
    x = rng.uniform(-1, 1, size=xshape).astype(np.float32)
    if desc.endswith("_zeros"):
        x[..., :32] = 0
    nb = K // block
    scales = rng.uniform(0.005, 0.05, size=(N, nb)).astype(np.float32)
    if bits == 4:
        q = rng.integers(0, 16, size=(N, K)) if affine else rng.integers(-8, 8, size=(N, K))
        nib = q & 0xF
        data = (nib[:, 0::2] | (nib[:, 1::2] << 4)).astype(np.uint8)
        data_dt = "u8"
        zp = rng.integers(0, 16, size=(N, nb)).astype(np.uint8) if affine else None
    else:
        q = rng.integers(0, 256, size=(N, K)) if affine else rng.integers(-128, 128, size=(N, K))
        data = q.astype(np.uint8 if affine else np.int8)
        data_dt = "u8" if affine else "i8"
        zp = rng.integers(0, 256, size=(N, nb)).astype(np.uint8) if affine else None
    zfull = np.zeros((N, K)) if zp is None else np.repeat(zp.astype(np.float64), block, axis=1)
    w = np.repeat(scales.astype(np.float64), block, axis=1) * (q.astype(np.float64) - zfull)
    y = np.matmul(round_x(x) if quantize_x else x.astype(np.float64), w.T)
    mag = float(scales.max()) * (float(np.abs(q).max()) + (float(zp.max()) if zp is not None else 0.0)) * \
        float(np.abs(x).max() if x.size else 0.0)
    atol = max(1e-6, 2e-6 * math.sqrt(K) * mag)
    inputs = [ser(x, "f32"), ser(data, data_dt), ser(scales, "f32")]
    if zp is not None:
        inputs.append(ser(zp, "u8"))
    attrs = {"bits": bits, "block": block}
    if quantize_x:
        attrs["quantize_x"] = True
    add(name, "matmul_wq", inputs, [ser(y.astype(np.float32), "f32")], attrs, 1e-5, atol)


def main():
    # matmul_integer: every dtype pair, tails of the 8 x 32 / 6 x 16 tiles, M = 1, zero points of
    # both shapes, batch broadcast, K past one 1024-deep slice, the largest products
    matmul_integer_case("plain", [3, 4], [4, 5], "u8", "u8")
    matmul_integer_case("zp_scalar", [7, 13], [13, 35], "u8", "i8", "scalar", "scalar")
    matmul_integer_case("zp_per", [9, 70], [70, 33], "i8", "i8", "per", "per")
    matmul_integer_case("m1_zp_a", [1, 64], [64, 17], "i8", "u8", "scalar", None)
    matmul_integer_case("zp_one_b", [5, 9], [9, 40], "u8", "u8", None, "one")
    matmul_integer_case("zp_per_b", [6, 31], [31, 7], "i8", "u8", "one", "per")
    matmul_integer_case("batch_bcast", [2, 1, 5, 6], [3, 6, 4], "u8", "i8", "per", "scalar")
    matmul_integer_case("batch_both", [2, 3, 8], [2, 8, 33], "i8", "i8", None, "per")
    matmul_integer_case("deep_k", [5, 1100], [1100, 9], "u8", "i8", "per", "per")
    matmul_integer_case("extreme", [4, 40], [40, 20], "u8", "i8", extreme=True)
    matmul_integer_case("extreme", [3, 50], [50, 18], "i8", "i8", extreme=True)
    matmul_integer_case("extreme", [3, 50], [50, 18], "u8", "u8", extreme=True)
    matmul_integer_case("empty_m", [0, 4], [4, 3], "u8", "i8")
    # conv_integer: 1-d / 2-d / 3-d, 1x1 (read in place) and strided 1x1, 3x3 with pads, asymmetric
    # pads, dilation, groups, depthwise (multiplier 1 and 2), zero points of every shape, output
    # channels past the 8-row / 32-column tiles, K past one 1024-deep slice, the largest products,
    # padding wider than the kernel, an empty batch
    conv_integer_case("1x1", [1, 8, 5, 7], [6, 8, 1, 1], "u8", "i8", [1, 1], [0, 0], [1, 1], 1)
    conv_integer_case("1x1_s2_zp", [2, 16, 9, 9], [8, 16, 1, 1], "u8", "u8", [2, 2], [0, 0], [1, 1], 1, "scalar", "per")
    conv_integer_case("3x3_p1_zp", [2, 5, 9, 11], [7, 5, 3, 3], "u8", "i8", [1, 1], [1, 1], [1, 1], 1, "scalar", "scalar")
    conv_integer_case("s2_asym_pads", [1, 4, 10, 9], [33, 4, 3, 2], "u8", "i8", [2, 2], [0, 1, 2, 1], [1, 1], 1, "one", "per")
    conv_integer_case("groups2_dil2", [1, 6, 12, 10], [4, 3, 3, 3], "i8", "i8", [1, 1], [2, 2], [2, 2], 2, "scalar", "per")
    conv_integer_case("depthwise_s2", [2, 8, 7, 7], [8, 1, 3, 3], "u8", "u8", [2, 2], [1, 1], [1, 1], 8, "scalar", "per")
    conv_integer_case("depthwise_x2", [1, 3, 6, 5], [6, 1, 3, 3], "i8", "u8", [1, 1], [1, 0, 0, 1], [1, 1], 3, None, "one")
    conv_integer_case("1d", [2, 4, 17], [5, 4, 3], "i8", "u8", [2], [2, 1], [2], 1, "scalar", "per")
    conv_integer_case("1d_groups", [1, 6, 8], [9, 2, 2], "u8", "i8", [1], [0], [1], 3, "one", None)
    conv_integer_case("3d", [1, 3, 5, 6, 7], [4, 3, 2, 3, 2], "i8", "u8", [1, 2, 1], [1, 1, 1], [1, 1, 1], 1, "scalar", "per")
    conv_integer_case("3d_asym", [2, 2, 4, 5, 4], [3, 2, 3, 2, 2], "u8", "i8", [2, 1, 1], [0, 1, 2, 1, 0, 1], [1, 2, 1], 1,
                      "scalar", "scalar")
    conv_integer_case("deep_k", [1, 130, 6, 6], [3, 130, 3, 3], "u8", "i8", [1, 1], [1, 1], [1, 1], 1, "scalar", "per")
    conv_integer_case("extreme", [1, 64, 5, 5], [9, 64, 3, 3], "u8", "i8", [1, 1], [0, 0], [1, 1], 1, extreme=True)
    conv_integer_case("extreme", [1, 40, 4, 4], [5, 40, 3, 3], "i8", "i8", [1, 1], [0, 0], [1, 1], 1, extreme=True)
    conv_integer_case("pad_past_kernel", [1, 2, 3, 3], [2, 2, 1, 1], "u8", "i8", [1, 1], [2, 2], [1, 1], 1, "scalar", "per")
    conv_integer_case("empty_n", [0, 4, 5, 5], [3, 4, 3, 3], "u8", "i8", [1, 1], [1, 1], [1, 1], 1)
    # qlinear_conv: u8 / i8 in and out, per-tensor and per-channel w scales, zero points of every
    # shape, pads / strides / dilation / groups, depthwise (the direct kernel: multiplier 1, strided,
    # dilated, i8), 1x1 read in place, a batch, i32 bias, y's zero point absent (u8 0) and at the
    # bottom of the range (ReLU), outputs saturating at both ends, the f32 form with bias and clamps,
    # output channels and columns past the 8 x 32 tiles
    qlinear_conv_case("3x3_p1", [2, 5, 9, 11], [7, 5, 3, 3], "u8", "i8", "u8", [1, 1], [1, 1], [1, 1], 1, "scalar",
                      "scalar", bias=True)
    qlinear_conv_case("per_channel", [1, 16, 10, 9], [33, 16, 3, 3], "u8", "i8", "u8", [1, 1], [1, 1], [1, 1], 1,
                      "scalar", "per", per_channel=True, bias=True)
    qlinear_conv_case("s2_asym_i8out", [1, 4, 10, 9], [12, 4, 3, 2], "u8", "i8", "i8", [2, 2], [0, 1, 2, 1], [1, 1],
                      1, "one", "per", per_channel=True)
    qlinear_conv_case("groups2_dil2", [2, 6, 12, 10], [4, 3, 3, 3], "i8", "i8", "u8", [1, 1], [2, 2], [2, 2], 2,
                      "scalar", "per", per_channel=True, bias=True)
    qlinear_conv_case("relu_zp", [1, 8, 7, 7], [10, 8, 3, 3], "u8", "u8", "u8", [1, 1], [1, 1], [1, 1], 1, "scalar",
                      "scalar", yzp="low", bias=True)
    qlinear_conv_case("relu_zp", [1, 8, 7, 7], [10, 8, 3, 3], "i8", "i8", "i8", [1, 1], [1, 1], [1, 1], 1, None,
                      None, per_channel=True, yzp="low")
    qlinear_conv_case("no_y_zp", [1, 3, 6, 6], [5, 3, 3, 3], "u8", "i8", "u8", [1, 1], [0, 0], [1, 1], 1, None, None,
                      yzp=None)
    qlinear_conv_case("1x1", [2, 40, 5, 7], [36, 40, 1, 1], "u8", "i8", "u8", [1, 1], [0, 0], [1, 1], 1, "scalar",
                      "per", per_channel=True, bias=True)
    qlinear_conv_case("depthwise", [2, 16, 9, 8], [16, 1, 3, 3], "u8", "i8", "u8", [1, 1], [1, 1], [1, 1], 16,
                      "scalar", "per", per_channel=True, bias=True)
    qlinear_conv_case("depthwise_s2", [1, 24, 11, 11], [24, 1, 3, 3], "u8", "u8", "u8", [2, 2], [1, 1], [1, 1], 24,
                      "scalar", "scalar", bias=True)
    qlinear_conv_case("depthwise_dil2_5x5", [1, 8, 12, 13], [8, 1, 5, 5], "i8", "i8", "i8", [1, 1], [4, 3, 2, 4],
                      [2, 2], 8, "scalar", "per", per_channel=True)
    qlinear_conv_case("depthwise_2x5", [1, 5, 8, 21], [5, 1, 2, 5], "u8", "i8", "i8", [2, 1], [1, 2, 0, 1], [1, 1], 5,
                      "scalar", "per", per_channel=True, bias=True)
    qlinear_conv_case("depthwise_sym", [2, 24, 10, 19], [24, 1, 3, 3], "i8", "i8", "u8", [1, 1], [1, 1], [1, 1], 24,
                      "scalar", None, per_channel=True, bias=True)
    qlinear_conv_case("depthwise_sym_5x3_s2h", [1, 8, 13, 17], [8, 1, 5, 3], "u8", "i8", "i8", [2, 1], [2, 0, 1, 2],
                      [1, 1], 8, "scalar", None, bias=True)
    qlinear_conv_case("depthwise_x2", [1, 3, 6, 5], [6, 1, 3, 3], "i8", "u8", "u8", [1, 1], [1, 0, 0, 1], [1, 1], 3,
                      None, "one")
    qlinear_conv_case("1d", [2, 4, 17], [5, 4, 3], "i8", "u8", "u8", [2], [2, 1], [2], 1, "scalar", "per",
                      per_channel=True)
    qlinear_conv_case("3d", [1, 3, 5, 6, 7], [4, 3, 2, 3, 2], "u8", "i8", "i8", [1, 2, 1], [1, 1, 1], [1, 1, 1], 1,
                      "scalar", "per", bias=True)
    qlinear_conv_case("deep_k", [1, 130, 6, 6], [9, 130, 3, 3], "u8", "i8", "u8", [1, 1], [1, 1], [1, 1], 1,
                      "scalar", "per", per_channel=True, bias=True)
    qlinear_conv_case("f32", [2, 6, 8, 8], [9, 6, 3, 3], "u8", "i8", "f32", [1, 1], [1, 1], [1, 1], 1, "scalar",
                      "per", per_channel=True, bias=True)
    qlinear_conv_case("f32_relu", [1, 8, 7, 6], [34, 8, 3, 3], "u8", "i8", "f32", [2, 1], [1, 1], [1, 1], 1, "scalar",
                      None, per_channel=True, bias=True, lo=0.0)
    qlinear_conv_case("f32_clamp_dw", [1, 16, 9, 9], [16, 1, 3, 3], "u8", "i8", "f32", [1, 1], [1, 1], [1, 1], 16,
                      "scalar", "per", bias=True, lo=-0.5, hi=0.75)
    qlinear_conv_case("empty_n", [0, 4, 5, 5], [3, 4, 3, 3], "u8", "i8", "u8", [1, 1], [1, 1], [1, 1], 1)
    # qlinear_matmul: dtypes, per-column scales and zero points, tails, bias, f32 form, batch rows
    qlinear_matmul_case("plain", [3, 4], [4, 5], "u8", "u8", "u8")
    qlinear_matmul_case("per_col", [9, 70], [70, 33], "u8", "i8", "u8", "scalar", "per", per_channel=True, bias=True)
    qlinear_matmul_case("i8", [17, 40], [40, 65], "i8", "i8", "i8", "scalar", "scalar", bias=True)
    qlinear_matmul_case("relu", [8, 64], [64, 32], "u8", "i8", "u8", "scalar", "per", per_channel=True, yzp="low")
    qlinear_matmul_case("no_y_zp", [5, 13], [13, 7], "i8", "u8", "u8", None, "scalar", yzp=None)
    qlinear_matmul_case("batch_rows", [2, 3, 24], [24, 10], "u8", "i8", "u8", "scalar", "per", per_channel=True)
    qlinear_matmul_case("deep_k", [4, 1100], [1100, 9], "u8", "i8", "i8", "scalar", "per", per_channel=True)
    qlinear_matmul_case("f32", [6, 48], [48, 40], "u8", "i8", "f32", "scalar", "per", per_channel=True, bias=True)
    qlinear_matmul_case("f32_relu", [3, 20], [20, 17], "i8", "i8", "f32", None, None, bias=True, lo=0.0)
    # qlinear_add: both dtypes, zero points given or not, tails of the 16-wide loop, broadcasting,
    # saturation at both ends, ties rounded to even, more elements than one thread's chunk
    qlinear_add_case("plain", [3, 37], [3, 37], "u8")
    qlinear_add_case("i8", [2, 5, 7], [2, 5, 7], "i8")
    qlinear_add_case("no_zp", [64], [64], "u8", False, False, False)
    qlinear_add_case("c_zp_only", [5, 3], [5, 3], "i8", False, False, True)
    qlinear_add_case("broadcast", [4, 9], [4, 1], "u8")
    qlinear_add_case("saturate", [2, 50], [2, 50], "u8", scales=(0.5, 0.5, 0.05))
    qlinear_add_case("saturate", [2, 50], [2, 50], "i8", scales=(0.5, 0.5, 0.05))
    qlinear_add_case("ties", [256], [256], "u8", False, False, False, scales=(0.5, 1.0, 1.0), ties=True)
    qlinear_add_case("ties", [256], [256], "i8", False, False, True, scales=(0.5, 1.0, 1.0), ties=True)
    qlinear_add_case("chunks", [3, 11000], [3, 11000], "u8")
    # matmul_wq: 4 and 8 bits, every block size, symmetric and affine, M = 1 (GEMV) and more
    # rows (GEMM), x with batch dims and of rank 1, N not a multiple of the GEMM's 64-row panel
    matmul_wq_case("", [1, 64], 5, 4, 32, False)
    matmul_wq_case("", [3, 128], 17, 4, 64, False)
    matmul_wq_case("", [2, 3, 96], 9, 4, 32, True)
    matmul_wq_case("", [4, 256], 7, 8, 128, False)
    matmul_wq_case("", [1, 64], 33, 8, 32, True)
    matmul_wq_case("", [5, 128], 70, 4, 128, False)
    matmul_wq_case("", [6, 128], 3, 8, 64, True)
    matmul_wq_case("", [64], 11, 4, 64, True)
    # quantize_x (x rounded to int8 per 32 first): the int8 dot-product kernels, chunk tails, zero
    # points, a 32 of zeros in x, more rows than a GEMV pass takes
    matmul_wq_case("_qx", [1, 96], 13, 4, 32, False, True)
    matmul_wq_case("_qx", [2, 256], 9, 4, 64, True, True)
    matmul_wq_case("_qx", [3, 192], 7, 8, 64, False, True)
    matmul_wq_case("_qx", [1, 128], 5, 8, 128, True, True)
    matmul_wq_case("_qx", [6, 64], 17, 4, 32, False, True)
    matmul_wq_case("_qx_zeros", [2, 64], 6, 4, 32, False, True)
    with open(OUT, "w") as f:
        f.write('{"family": "quant", "cases": [\n')
        f.write(",\n".join(json.dumps(c, separators=(",", ":")) for c in CASES))
        f.write("\n]}\n")
    print(f"wrote {len(CASES)} cases to {OUT}")


if __name__ == "__main__":
    main()
