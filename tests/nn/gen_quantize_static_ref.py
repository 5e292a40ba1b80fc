#!/usr/bin/python3
# Reference values for tests/nn/quantize_static_test.cpp from PyTorch 1.13's torch.ao.quantization
# (Debian's python3-torch: run with /usr/bin/python3). Writes cases/quantize_static.json.
#
# Static PTQ: a Conv2d (2 -> 4, 3x3, pad 1) - relu - flatten - Linear (100 -> 3) model, calibrated
# on three batches with eager-mode prepare/convert. The qconfig is ember's scheme: inputs
# MinMaxObserver quint8 per-tensor affine (0..255), weights PerChannelMinMaxObserver qint8
# per-channel symmetric with quant_min -127 / quant_max 127 (scale = max|w| / 127, as ember's
# symmetric int8). A QuantStub before each layer observes exactly that layer's input. Recorded:
# the input scales / zero points, the weight scales and int8 values, and the outputs of
#   (a) the int8 formula ember computes (quantized input and weight, exact integer product,
#       times the scales, + bias, no output rounding), in float64 from torch's quantized tensors;
#   (b) torch's converted model (qnnpack), which also rounds each layer's output to u8.
# QAT: a Linear (6 -> 4) under fake quantization (input: MovingAverageMinMaxObserver, first batch
# sets the range; weight: per-channel symmetric int8), its output and, by torch's autograd through
# fake_quantize_per_*_affine (straight-through), the gradients of sum(y * g) for x and w.
import json
import os

import torch
import torch.ao.quantization as tq
import torch.nn as tnn
import torch.nn.functional as F

torch.manual_seed(7)
torch.backends.quantized.engine = "qnnpack"


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


weight_observer = tq.PerChannelMinMaxObserver.with_args(
    dtype=torch.qint8, qscheme=torch.per_channel_symmetric, quant_min=-127, quant_max=127)
act_observer = tq.MinMaxObserver.with_args(dtype=torch.quint8, qscheme=torch.per_tensor_affine)
qconfig = tq.QConfig(activation=act_observer, weight=weight_observer)


class Net(tnn.Module):
    def __init__(self):
        super().__init__()
        self.q1, self.q2 = tq.QuantStub(), tq.QuantStub()
        self.d1, self.d2 = tq.DeQuantStub(), tq.DeQuantStub()
        self.conv = tnn.Conv2d(2, 4, 3, padding=1)
        self.fc = tnn.Linear(4 * 5 * 5, 3)

    def forward(self, x):
        x = self.d1(self.conv(self.q1(x)))
        x = torch.flatten(torch.relu(x), 1)
        return self.d2(self.fc(self.q2(x)))


net = Net().eval()
calibration = [torch.randn(2, 2, 5, 5) * 1.5 + 0.3 for _ in range(3)]
test_x = torch.randn(2, 2, 5, 5) * 1.5 + 0.3

net.qconfig = qconfig
prepared = tq.prepare(net)
for b in calibration:
    prepared(b)
converted = tq.convert(prepared)

s1, z1 = converted.q1.scale.item(), converted.q1.zero_point.item()
s2, z2 = converted.q2.scale.item(), converted.q2.zero_point.item()
wc = converted.conv.weight()
wf = converted.fc.weight()


def int8_formula():
    x = test_x.double()
    xq = torch.quantize_per_tensor(test_x, s1, z1, torch.quint8).dequantize().double()
    y = F.conv2d(xq, wc.dequantize().double(), net.conv.bias.double(), padding=1)
    h = torch.flatten(torch.relu(y), 1).float()
    hq = torch.quantize_per_tensor(h, s2, z2, torch.quint8).dequantize().double()
    return F.linear(hq, wf.dequantize().double(), net.fc.bias.double())


static = {
    "conv_weight": flat(net.conv.weight), "conv_bias": flat(net.conv.bias),
    "fc_weight": flat(net.fc.weight), "fc_bias": flat(net.fc.bias),
    "calibration": [flat(b) for b in calibration], "x": flat(test_x),
    "conv_input_scale": s1, "conv_input_zero_point": z1,
    "fc_input_scale": s2, "fc_input_zero_point": z2,
    "conv_weight_scales": flat(wc.q_per_channel_scales()), "conv_weight_int8": flat(wc.int_repr()),
    "fc_weight_scales": flat(wf.q_per_channel_scales()), "fc_weight_int8": flat(wf.int_repr()),
    "y_int8_formula": flat(int8_formula()),
    "y_torch_quantized": flat(converted(test_x)),
    "torch_fc_output_scale": converted.fc.scale,
    "y_float": flat(net(test_x)),
}

# QAT: one forward of a fake-quantized Linear.
fc = tnn.Linear(6, 4)
x = (torch.randn(5, 6) * 2).requires_grad_()
w = fc.weight.detach().clone().requires_grad_()
g = torch.randn(5, 4)
obs = tq.MovingAverageMinMaxObserver(dtype=torch.quint8, qscheme=torch.per_tensor_affine)
obs(x.detach())
xs, xz = obs.calculate_qparams()
wobs = weight_observer(ch_axis=0)
wobs(w.detach())
ws, wz = wobs.calculate_qparams()
xf = torch.fake_quantize_per_tensor_affine(x, float(xs), int(xz), 0, 255)
wfq = torch.fake_quantize_per_channel_affine(w, ws, wz.to(torch.int32), 0, -128, 127)
y = F.linear(xf, wfq, fc.bias.detach())
(y * g).sum().backward()
qat = {
    "weight": flat(w), "bias": flat(fc.bias), "x": flat(x), "g": flat(g),
    "input_scale": float(xs), "input_zero_point": int(xz),
    "y": flat(y), "grad_x": flat(x.grad), "grad_w": flat(w.grad),
}

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases", "quantize_static.json")
with open(out, "w") as f:
    json.dump({"torch": torch.__version__, "engine": torch.backends.quantized.engine, "static": static, "qat": qat},
              f, separators=(",", ":"))
print("wrote", out)
