#!/usr/bin/env bash
# The main job. Until the Fashion-MNIST training demo lands (issue 5), it builds ember in
# release mode and runs a short tensor program on the CPU that prints its results.
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh build
export CCACHE_DIR="${CCACHE_DIR:-$PWD/.cache/ccache}"
cmake --preset default >/dev/null
cmake --build --preset default -j "$(nproc)" --target tensor_basics
./build/examples/tensor_basics "$@"
