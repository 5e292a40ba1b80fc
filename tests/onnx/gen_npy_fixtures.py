#!/usr/bin/python3
"""Writes the NumPy .npy fixtures of cli_test.cpp into fixtures/npy/ (numpy's own writer).

Run from anywhere: /usr/bin/python3 tests/onnx/gen_npy_fixtures.py. The values are fixed (no
randomness), so cli_test.cpp hard-codes them:
  signed ints: [0, 1, -2, 3, -4, 5]      shape (2, 3)
  uint8:       [0, 1, 2, 3, 4, 255]      shape (2, 3)
  bool:        [T, F, T, T, F, F]        shape (2, 3)
  floats:      [0.5, -1.25, 2, 3.75, -4.5, 1000]  shape (2, 3)
"""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "npy")

INTS = [0, 1, -2, 3, -4, 5]
UINTS = [0, 1, 2, 3, 4, 255]
BOOLS = [True, False, True, True, False, False]
FLOATS = [0.5, -1.25, 2.0, 3.75, -4.5, 1000.0]


def save(name, arr, version=None):
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        np.lib.format.write_array(f, arr, version=version, allow_pickle=False)


def main():
    os.makedirs(OUT, exist_ok=True)
    for code in ["f2", "f4", "f8"]:
        save(code + ".npy", np.array(FLOATS, dtype="<" + code).reshape(2, 3))
    for code in ["i1", "i2", "i4", "i8"]:
        save(code + ".npy", np.array(INTS, dtype="<" + code).reshape(2, 3))
    save("u1.npy", np.array(UINTS, dtype=np.uint8).reshape(2, 3))
    save("b1.npy", np.array(BOOLS, dtype=np.bool_).reshape(2, 3))
    # Big-endian data (byte-swapped on load).
    save("f4_be.npy", np.array(FLOATS, dtype=">f4").reshape(2, 3))
    save("f8_be.npy", np.array(FLOATS, dtype=">f8").reshape(2, 3))
    save("i8_be.npy", np.array(INTS, dtype=">i8").reshape(2, 3))
    save("f2_be.npy", np.array(FLOATS, dtype=">f2").reshape(2, 3))
    # 0-d, 1-d, empty, 3-d.
    save("scalar_f4.npy", np.array(3.5, dtype=np.float32))
    save("scalar_i8.npy", np.array(-7, dtype=np.int64))
    save("vector_i4.npy", np.array(INTS, dtype=np.int32))
    save("empty_f4.npy", np.zeros((0, 3), dtype=np.float32))
    save("cube_i2.npy", np.arange(24, dtype=np.int16).reshape(2, 3, 4))
    # Fortran order (column-major data; transposed on load): the values of arange(24) in C order.
    save("fortran_i2.npy", np.asfortranarray(np.arange(24, dtype=np.int16).reshape(2, 3, 4)))
    # Format versions 2.0 (4-byte header length) and 3.0 (utf-8 header).
    save("v2_f4.npy", np.array(FLOATS, dtype=np.float32).reshape(2, 3), version=(2, 0))
    save("v3_f4.npy", np.array(FLOATS, dtype=np.float32).reshape(2, 3), version=(3, 0))
    # Dtypes ember has no dtype for: refused with a clear error.
    save("u2.npy", np.array(UINTS, dtype="<u2"))
    save("c8.npy", np.array([1 + 2j], dtype=np.complex64))
    save("structured.npy", np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]))


if __name__ == "__main__":
    main()
