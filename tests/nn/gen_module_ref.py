#!/usr/bin/env python3
"""Reference for module_test.cpp: a PyTorch model saved as a DataParallel-style checkpoint
("module." prefix) plus an input and PyTorch's output. Run with /usr/bin/python3 (torch 1.13)."""
import json
import os

import torch
import torch.nn as nn

torch.manual_seed(5)
HERE = os.path.dirname(os.path.abspath(__file__))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.encoder(x))


m = Model().eval()
for p in m.parameters():  # distinct layers (TransformerEncoder deep-copies one layer)
    with torch.no_grad():
        p.add_(torch.randn_like(p) * 0.1)
x = torch.randn(2, 5, 8)
with torch.no_grad():
    y = m(x)
sd = {"module." + k: v for k, v in m.state_dict().items()}
torch.save(sd, os.path.join(HERE, "cases", "module_ref.pt"))
with open(os.path.join(HERE, "cases", "module_ref.json"), "w") as fh:
    json.dump({"keys": list(m.state_dict().keys()), "x": x.reshape(-1).tolist(), "x_shape": list(x.shape),
               "y": y.reshape(-1).tolist(), "y_shape": list(y.shape)}, fh)
