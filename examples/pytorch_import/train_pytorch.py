#!/usr/bin/env python3
"""The PyTorch half of examples/pytorch_import: trains a small CNN on UCI's 8x8 digits for a few
seconds and saves what the C++ half needs to check that ember runs the same model.

    /usr/bin/python3 examples/pytorch_import/train_pytorch.py [OUT_DIR]      # default: pytorch_digits

Writes OUT_DIR/digits_cnn.pt (the state_dict, torch.save's zip format) and OUT_DIR/test_logits.npy
(float32 [360, 10]: the model's logits for the 360 test images, in eval mode). It needs Debian's
python3-torch and python3-sklearn (for the digits file; scikit-learn itself is not imported).
Exit status 2 when torch is missing.
"""
import gzip
import os
import sys
import time

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError as e:
    print(f"train_pytorch.py: {e}; install python3-torch (scripts/install-deps.sh)", file=sys.stderr)
    sys.exit(2)

DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
TRAIN_ROWS = 1437  # the split of examples/common/digits.hpp: the first 1437 rows train, the rest test


class Cnn(nn.Module):
    """[N, 1, 8, 8] pixels in [0, 1] -> [N, 10] logits; the same layers as CnnForDigits in main.cpp."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "pytorch_digits"
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(1)  # tiny layers: one thread is fastest on a shared machine
    with gzip.open(DIGITS, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.float32)
    images = torch.from_numpy(table[:, :64] / 16.0).reshape(-1, 1, 8, 8)
    labels = torch.from_numpy(table[:, 64].astype(np.int64))
    x_train, y_train = images[:TRAIN_ROWS], labels[:TRAIN_ROWS]
    x_test, y_test = images[TRAIN_ROWS:], labels[TRAIN_ROWS:]

    model = Cnn()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    start = time.time()
    epochs = 10
    for epoch in range(epochs):
        order = torch.randperm(TRAIN_ROWS)
        for i in range(0, TRAIN_ROWS, 64):
            idx = order[i:i + 64]
            loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        logits = model(x_test)
    accuracy = (logits.argmax(1) == y_test).float().mean().item()
    torch.save(model.state_dict(), os.path.join(out, "digits_cnn.pt"))
    np.save(os.path.join(out, "test_logits.npy"), logits.numpy())
    print(f"pytorch: trained {epochs} epochs in {time.time() - start:.1f} s, test accuracy {accuracy:.4f}")
    print(f"pytorch: wrote {out}/digits_cnn.pt and {out}/test_logits.npy")


if __name__ == "__main__":
    main()
