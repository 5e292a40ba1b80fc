#!/usr/bin/env python3
"""Exports torchvision's ResNet-18 to ONNX for examples/onnx_inference, with an input batch and
PyTorch's output on it.

    /usr/bin/python3 examples/onnx_inference/export_model.py OUT_DIR

Needs Debian's python3-torch and python3-torchvision. The weights are torchvision's random
initialisation under torch.manual_seed(0) (weights=None: nothing is downloaded, so the classes
it predicts mean nothing; the point is that ember computes what PyTorch computes); the
BatchNorm statistics are set from crops of the input photographs (calibrate_batch_norm). The
input is the two photographs Debian's python3-sklearn ships (china.jpg, flower.jpg), resized and
center-cropped to 224x224 and normalised as for ImageNet, or two random images when they are
missing. Writes
OUT_DIR/resnet18.onnx (opset 13), OUT_DIR/input.npy [2, 3, 224, 224] and OUT_DIR/output.npy
[2, 1000] (float32), and OUT_DIR/pytorch_forward_ms.txt, the mean time of PyTorch's forward
pass on the CPU (3 runs after a warm-up, torch's default threads). Exit status 2 when torch or torchvision is missing.
"""
import os
import sys
import time
import warnings

try:
    import numpy as np
    import torch
    import torchvision
    import torchvision.transforms.functional as F
except ImportError as e:  # pragma: no cover
    print(f"export_model.py: {e} (install python3-torch and python3-torchvision)", file=sys.stderr)
    sys.exit(2)

PHOTOS = "/usr/lib/python3/dist-packages/sklearn/datasets/images"


def write_npy(path, array):
    """A minimal .npy (version 1.0) writer: float32 little-endian, C order."""
    a = np.ascontiguousarray(np.asarray(array, dtype="<f4"))
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %r, }" % (tuple(int(d) for d in a.shape),)
    total = 10 + len(header) + 1  # magic, version, header length, header, '\n': padded to 64
    header += " " * ((64 - total % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00")
        f.write(len(header).to_bytes(2, "little"))
        f.write(header.encode("latin1"))
        f.write(a.tobytes(order="C"))


def photos():
    """The photographs resized to 256 pixels on the short side, u8 [3, 256, W]; None without them."""
    files = [os.path.join(PHOTOS, n) for n in ("china.jpg", "flower.jpg")]
    if not all(os.path.exists(f) for f in files):
        print("export_model.py: no photographs in", PHOTOS, "(python3-sklearn); using random images")
        return None
    return [F.resize(torchvision.io.read_image(f), 256, antialias=True) for f in files]


def normalize(image_u8):
    return F.normalize(image_u8.float() / 255, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])


def calibrate_batch_norm(model, images, generator):
    """Sets the BatchNorm running statistics from 64 random 224x224 crops of the photographs.
    With torchvision's initial statistics (mean 0, variance 1) an untrained ResNet in eval mode
    gives nearly the same logits for every image; with these it tells the images apart."""
    crops = []
    for i in range(64):
        image = images[i % len(images)]
        top = int(torch.randint(0, image.shape[1] - 223, (1,), generator=generator))
        left = int(torch.randint(0, image.shape[2] - 223, (1,), generator=generator))
        crops.append(normalize(image[:, top:top + 224, left:left + 224]))
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None  # a cumulative average over the batches
    model.train()
    with torch.no_grad():
        for b in range(0, len(crops), 16):
            model(torch.stack(crops[b:b + 16]))
    model.eval()


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(1)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).eval()
    images = photos()
    if images is None:
        x = torch.randn(2, 3, 224, 224)
    else:
        calibrate_batch_norm(model, images, torch.Generator().manual_seed(1))
        x = torch.stack([normalize(F.center_crop(image, 224)) for image in images])
    with torch.no_grad():
        y = model(x)  # a warm-up pass, then the timed ones
        start = time.perf_counter()
        for _ in range(3):
            y = model(x)
        forward_ms = (time.perf_counter() - start) / 3 * 1e3
    torch.onnx.export(model, (x,), os.path.join(out, "resnet18.onnx"), opset_version=13, input_names=["input"],
                      output_names=["output"], do_constant_folding=True)
    write_npy(os.path.join(out, "input.npy"), x.numpy())
    write_npy(os.path.join(out, "output.npy"), y.numpy())
    with open(os.path.join(out, "pytorch_forward_ms.txt"), "w") as f:
        f.write(f"{forward_ms:.1f}\n")
    print(f"wrote {out}/resnet18.onnx, input.npy {list(x.shape)}, output.npy {list(y.shape)} "
          f"(torch {torch.__version__}, torchvision {torchvision.__version__})")


if __name__ == "__main__":
    main()
