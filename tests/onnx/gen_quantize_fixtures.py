#!/usr/bin/python3
"""Fixtures of tests/onnx/quantize_static_test.cpp, with Debian's python3-torch and numpy:

  /usr/bin/python3 tests/onnx/gen_quantize_fixtures.py

A small conv net (conv+relu, maxpool, conv+relu, conv, residual add+relu, strided conv+relu,
global average pool, flatten, linear), random weights (seed 0), exported to
fixtures/quant_convnet.onnx (opset 13, input "x" [batch, 3, 16, 16], output "y" [batch, 10]), and:

  quant_convnet_calib_K.npy  K = 0..3: calibration inputs [2, 3, 16, 16]
  quant_convnet_eval.npy     evaluation inputs [16, 3, 16, 16]
  quant_convnet_f32.npy      PyTorch's f32 logits for them
  quant_convnet_int8.npy     the logits of the statically quantized graph for them, computed here
                             independently of ember: ranges observed with forward hooks on the
                             calibration inputs, parameters by docs/quantization.md's formulas
                             (activations u8 affine min-max, weights i8 symmetric per channel,
                             bias i32), and every node evaluated by the ONNX spec formulas of
                             QuantizeLinear, QLinearConv, MaxPool, com.microsoft QLinearAdd and
                             DequantizeLinear (integer convs in float64, exact), the pool and
                             the linear head in f32.
"""
import io
import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.pool = torch.nn.MaxPool2d(2)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.conv3 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.conv4 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x, taps=None):
        a = torch.relu(self.conv1(x))
        p = self.pool(a)
        b = torch.relu(self.conv2(p))
        c = self.conv3(b)
        d = torch.relu(c + p)
        e = torch.relu(self.conv4(d))
        if taps is not None:
            taps.update(x=x, a=a, b=b, c=c, d=d, e=e)
        return self.fc(torch.flatten(torch.mean(e, dim=(2, 3), keepdim=True), 1))


def act_params(lo, hi):
    """u8 affine: PyTorch's MinMaxObserver formula in f32."""
    lo, hi = np.float32(min(lo, 0.0)), np.float32(max(hi, 0.0))
    scale = np.float32((hi - lo) / np.float32(255))
    if not scale > 0:
        scale = np.float32(1)
    zp = int(np.clip(np.rint(-lo / scale), 0, 255))
    return scale, zp


def quantize(x, scale, zp):  # QuantizeLinear: saturate(round_half_even(x / scale) + zp)
    return np.clip(np.rint(x.astype(np.float32) / scale) + zp, 0, 255).astype(np.int64)


def qconv(conv, xq, xs, xzp, ys, yzp):
    """QLinearConv: y = saturate(round(((x - x_zp) * w + B) * x_s * w_s / y_s) + y_zp)."""
    w = conv.weight.detach().numpy().astype(np.float32)
    ws = (np.abs(w).reshape(w.shape[0], -1).max(1) / np.float32(127)).astype(np.float32)
    ws[ws == 0] = 1
    wq = np.clip(np.rint(w / ws[:, None, None, None]), -127, 127)
    bq = np.rint(conv.bias.detach().numpy().astype(np.float32) / (np.float32(xs) * ws)).astype(np.float64)
    acc = torch.nn.functional.conv2d(torch.from_numpy((xq - xzp).astype(np.float64)), torch.from_numpy(wq.astype(np.float64)),
                                     torch.from_numpy(bq), stride=conv.stride, padding=conv.padding).numpy()
    mult = (np.float64(xs) * ws.astype(np.float64)) / np.float64(ys)
    return np.clip(np.rint(acc * mult[None, :, None, None]) + yzp, 0, 255).astype(np.int64)


def qadd(aq, as_, azp, bq, bs, bzp, cs, czp):  # com.microsoft QLinearAdd, in f32
    real = np.float32(as_) * (aq - azp).astype(np.float32) + np.float32(bs) * (bq - bzp).astype(np.float32)
    return np.clip(np.rint(real / np.float32(cs)) + czp, 0, 255).astype(np.int64)


def main():
    torch.manual_seed(0)
    net = ConvNet().eval()
    calib = [torch.randn(2, 3, 16, 16) for _ in range(4)]
    x = torch.randn(16, 3, 16, 16)
    with torch.no_grad():
        ref = net(x)
        ranges = {}
        for c in calib:
            taps = {}
            net(c, taps)
            for k, v in taps.items():
                lo, hi = ranges.get(k, (np.inf, -np.inf))
                ranges[k] = (min(lo, v.min().item()), max(hi, v.max().item()))
    P = {k: act_params(*v) for k, v in ranges.items()}

    xq = quantize(x.numpy(), *P["x"])
    aq = qconv(net.conv1, xq, *P["x"], *P["a"])
    pq = torch.nn.functional.max_pool2d(torch.from_numpy(aq.astype(np.float64)), 2).numpy().astype(np.int64)  # u8, a's params
    bq = qconv(net.conv2, pq, *P["a"], *P["b"])
    cq = qconv(net.conv3, bq, *P["b"], *P["c"])
    dq = qadd(cq, *P["c"], pq, *P["a"], *P["d"])
    eq = qconv(net.conv4, dq, *P["d"], *P["e"])
    e = ((eq - P["e"][1]).astype(np.float32) * P["e"][0]).astype(np.float32)  # DequantizeLinear
    with torch.no_grad():
        y = net.fc(torch.flatten(torch.from_numpy(e).mean(dim=(2, 3), keepdim=True), 1)).numpy()

    os.makedirs(OUT, exist_ok=True)
    buf = io.BytesIO()
    torch.onnx.export(net, (calib[0],), buf, opset_version=13, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    with open(os.path.join(OUT, "quant_convnet.onnx"), "wb") as f:
        f.write(buf.getvalue())
    for k, c in enumerate(calib):
        np.save(os.path.join(OUT, f"quant_convnet_calib_{k}.npy"), c.numpy())
    np.save(os.path.join(OUT, "quant_convnet_eval.npy"), x.numpy())
    np.save(os.path.join(OUT, "quant_convnet_f32.npy"), ref.numpy())
    np.save(os.path.join(OUT, "quant_convnet_int8.npy"), y.astype(np.float32))
    agree = (ref.numpy().argmax(1) == y.argmax(1)).mean()
    rel = np.linalg.norm(y - ref.numpy()) / np.linalg.norm(ref.numpy())
    print(f"quant_convnet: reference int8 vs f32: top-1 agreement {agree:.3f}, relative error {rel:.4f}")


if __name__ == "__main__":
    main()
