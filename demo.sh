#!/usr/bin/env bash
# The main job: builds ember in release mode, trains a small CNN on Fashion-MNIST (the Debian
# package dataset-fashion-mnist) with a live dashboard when stdout is a terminal, evaluates it on
# the 10,000 test images, saves it as safetensors and classifies a few images with the saved
# model. The last line is "test accuracy: 0.XXXX". Options go to the example, e.g.
#   ./demo.sh --epochs 2          ./demo.sh --device cuda
# The code: examples/fashion_mnist/ (model.hpp, main.cpp).
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh build
export CCACHE_DIR="${CCACHE_DIR:-$PWD/.cache/ccache}"
cmake --preset default >/dev/null
cmake --build --preset default -j "$(nproc)" --target fashion_mnist
exec ./build/examples/fashion_mnist "$@"
