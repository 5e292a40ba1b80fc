#!/usr/bin/env bash
# Installs the Debian 12 packages ember needs, when missing. Usage:
#   scripts/install-deps.sh build     # compiler, cmake, ninja, ccache, googletest, json, image/db/zip
#                                     # libraries, ncurses + tmux (dashboard tests), clang (fuzzers),
#                                     # the Fashion-MNIST dataset (demo, examples/custom_training_loop),
#                                     # python3-onnx (ONNX node tests), python3-torch + python3-torchvision
#                                     # (ONNX real-model tests, examples/pytorch_import), linux-doc-6.1 (the
#                                     # examples/gpt2 corpus), python3-sklearn (the examples/regression
#                                     # diabetes table, the digits of examples/mnist_mlp, wgan and
#                                     # pytorch_import, tests/train references), python3-vega-datasets
#                                     # (Seattle's weather for examples/lstm_sequence), libgloo-dev (the
#                                     # distributed layer's CPU collectives), openmpi-bin (its mpirun
#                                     # launch test; ember links no MPI library), doxygen (scripts/docs.sh:
#                                     # the API reference), libboost-dev (Boost.Beast: the remote
#                                     # decorator and ember-server), libssl-dev and openssl (its wss://
#                                     # and the test certificate), emscripten and chromium (the wasm
#                                     # build and its browser tests: docs/web.md), libvulkan-dev,
#                                     # libshaderc-dev, mesa-vulkan-drivers (lavapipe) and vulkan-tools
#                                     # (the Vulkan backend and its CPU-run tests: docs/vulkan.md),
#                                     # gcc-arm-none-eabi, libnewlib-arm-none-eabi and qemu-system-arm
#                                     # (the Cortex-M build, run in qemu: docs/embedded.md)
#   scripts/install-deps.sh bench     # + LibTorch (peer) with OpenBLAS
#   scripts/install-deps.sh reference # + python3-torch (regenerates conformance references),
#                                     #   python3-onnx (regenerates tests/onnx/fixtures)
set -euo pipefail
# EMBER_SKIP_DEPS=1: install nothing (machines without a package archive, e.g. a GPU machine
# whose image already has the toolchain; CMake leaves out what it cannot find).
[ "${EMBER_SKIP_DEPS:-0}" = 1 ] && exit 0
want=(g++ cmake ninja-build ccache libgtest-dev nlohmann-json3-dev zlib1g-dev libpng-dev libjpeg-dev libsqlite3-dev
      libncurses-dev pkg-config tmux clang dataset-fashion-mnist python3-onnx python3-torch python3-torchvision
      linux-doc-6.1 python3-sklearn python3-vega-datasets libgloo-dev openmpi-bin doxygen libboost-dev libssl-dev openssl
      emscripten chromium libvulkan-dev libshaderc-dev mesa-vulkan-drivers vulkan-tools gcc-arm-none-eabi
      libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib qemu-system-arm)
case "${1:-build}" in
  bench) want+=(libtorch-dev libopenblas0-pthread) ;;
  reference) want+=(python3-torch python3-numpy python3-onnx) ;;
  docs) want=(doxygen python3) ;;
esac
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "error: missing packages (${missing[*]}); run as root or install them with apt-get" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
