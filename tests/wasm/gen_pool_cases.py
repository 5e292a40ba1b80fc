#!/usr/bin/env python3
"""Writes tests/wasm/pool_cases.json: max_pool2d values and argmax indices from PyTorch
(torch.nn.functional.max_pool2d with return_indices=True) for tests/wasm/pool_test.cpp, which
checks the wasm build's max pool against them (values and indices exactly).

The inputs are rounded to steps of 0.25 so that windows hold ties (PyTorch keeps the first tap of
a tie), and some hold NaN (a NaN wins, the last one in a window) or only -inf. Rows are wide
enough for the SIMD128 interior path (4 outputs a vector) and its scalar tail.

  /usr/bin/python3 tests/wasm/gen_pool_cases.py
"""
import json
import math
import os

import torch

torch.manual_seed(32)

# (name, N, C, H, W, kernel, stride, padding, dilation)
SPECS = [
    ("resnet_stem_k3_s2_p1", 1, 3, 13, 37, (3, 3), (2, 2), (1, 1), (1, 1)),
    ("k3_s1_p1", 2, 2, 6, 30, (3, 3), (1, 1), (1, 1), (1, 1)),
    ("k2_s2_p0_odd", 1, 2, 7, 33, (2, 2), (2, 2), (0, 0), (1, 1)),
    ("k3_s2_p0_d2", 1, 2, 9, 41, (3, 3), (2, 2), (0, 0), (2, 2)),
    ("k5x2_s1x2_p2x1", 1, 1, 8, 26, (5, 2), (1, 2), (2, 1), (1, 1)),
    ("k3_s2_p1_even", 1, 2, 10, 40, (3, 3), (2, 2), (1, 1), (1, 1)),
    ("k1_s1", 1, 1, 3, 19, (1, 1), (1, 1), (0, 0), (1, 1)),
]


def enc(v):
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


cases = []
for name, n, c, h, w, k, s, p, d in SPECS:
    x = torch.round(torch.randn(n, c, h, w) * 4) / 4
    flat = x.view(-1)
    # a few NaNs, and one plane's first rows all -inf (windows with no finite tap)
    for i in torch.randperm(flat.numel())[: max(2, flat.numel() // 150)]:
        flat[i] = float("nan")
    x[0, 0, :2, :] = float("-inf")
    y, idx = torch.nn.functional.max_pool2d(x, k, s, p, d, return_indices=True)
    cases.append({
        "name": name,
        "shape": list(x.shape),
        "kernel": list(k), "stride": list(s), "padding": list(p), "dilation": list(d),
        "x": [enc(v) for v in x.view(-1).tolist()],
        "out_shape": list(y.shape),
        "y": [enc(v) for v in y.view(-1).tolist()],
        "indices": idx.view(-1).tolist(),
    })

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pool_cases.json")
with open(out, "w") as f:
    json.dump({"generator": "tests/wasm/gen_pool_cases.py", "torch": torch.__version__, "cases": cases}, f)
print(f"wrote {out}: {len(cases)} cases")
