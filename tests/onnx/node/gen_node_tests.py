#!/usr/bin/python3
"""Runs onnx.backend.test.cmd_tools (python3-onnx 1.12) with the NumPy aliases it still uses
(NumPy 1.24 removed them) restored. Arguments are passed on, e.g.
  gen_node_tests.py generate-data -o build/onnx-node
"""
import sys

import numpy as np

np.float = float
np.int = int
np.bool = bool
np.object = object

from onnx.backend.test import cmd_tools  # noqa: E402

sys.argv = ["cmd_tools"] + sys.argv[1:]
cmd_tools.main()
