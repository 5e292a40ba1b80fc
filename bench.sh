#!/usr/bin/env bash
# Benchmarks ember against its peer library and reports how they compare.
#
#   ./bench.sh cpu [ember_bench_cpu options]   CPU backend vs LibTorch (and ONNX Runtime: onnx_*_vs_ort)
#   ./bench.sh cuda [--filter a,b]             CUDA backend vs PyTorch (python3 torch) on GPU 0
#
# Installs what is missing, configures with the "bench" preset, builds the benchmark and runs
# it on every core. Writes build/reports/bench-<backend>.json and prints a markdown table.
# Options after the backend go to the benchmark program, e.g.
#   ./bench.sh cpu --filter matmul,softmax     # only benchmarks whose name contains these
#   ./bench.sh cpu --quick                     # fewer, shorter samples
# EMBER_BENCH_THREADS=N runs both libraries on N threads instead of all cores.
# Method and report fields: docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")"

backend=${1:-}
[ $# -gt 0 ] && shift
case "$backend" in
  cpu) ;;
  cuda)
    # ember (bench/bench_cuda.cpp) and PyTorch (bench/cuda_peer.py) in one invocation on the
    # same GPU; bench/cuda_report.py joins them into build/reports/bench-cuda.json.
    [ "${EMBER_SKIP_DEPS:-0}" = 1 ] || scripts/install-deps.sh build
    export CCACHE_DIR="${CCACHE_DIR:-$PWD/.cache/ccache}"
    cmake --preset bench >/dev/null
    cmake --build --preset bench -j "$(nproc)" --target ember_bench_cuda
    # onnx_resnet18_*: the model is exported where torchvision is (./bench.sh cpu, or
    # bench/export_resnet18.py) and its weights travel as f16; rebuild the f32 file here.
    if [ -f build/bench-models/resnet18.weights.f16 ]; then
      python3 bench/export_resnet18.py --expand build/bench-models
    fi
    mkdir -p build/reports
    build/bench/ember_bench_cuda --out build/reports/bench-cuda-ember.json "$@"
    python3 bench/cuda_peer.py --out build/reports/bench-cuda-peer.json "$@"
    tv=$(python3 -c 'import torch; print("pytorch " + torch.__version__.split("+")[0])')
    python3 bench/cuda_report.py build/reports/bench-cuda-ember.json build/reports/bench-cuda-peer.json \
      build/reports/bench-cuda.json "$tv"
    exit 0
    ;;
  *)
    echo "usage: $0 cpu|cuda [benchmark options]" >&2
    exit 2
    ;;
esac

scripts/install-deps.sh bench
export CCACHE_DIR="${CCACHE_DIR:-$PWD/.cache/ccache}"
cmake --preset bench >/dev/null
cmake --build --preset bench -j "$(nproc)" --target ember_bench_cpu
# The onnx_* benchmarks' models (ONNX for ember and ONNX Runtime, TorchScript for LibTorch):
# Debian's python3-torch and python3-torchvision export them once into build/bench-models.
for model in resnet18 mobilenet_v2; do
  if ! /usr/bin/python3 bench/export_resnet18.py --model "$model" build/bench-models; then
    echo "bench.sh: $model not exported (needs python3-torch and python3-torchvision): onnx_${model}_* skipped" >&2
  fi
done
# The int8 ResNet-18 rows: the same weights quantized by torch.ao.quantization (LibTorch's peer)
# and the calibration inputs ember's quantize_static reads.
if ! /usr/bin/python3 bench/export_resnet18_int8.py build/bench-models; then
  echo "bench.sh: the int8 ResNet-18 peer not exported: onnx_resnet18_int8_* skipped" >&2
fi
# The onnx_*_vs_ort rows' peer: ONNX Runtime's CPU build from npm (onnxruntime-node, whose
# package carries libonnxruntime; --ignore-scripts skips its install script, which would fetch
# GPU providers), run by bench/ort_peer.js under Node. Installed once into a prefix git ignores.
export EMBER_BENCH_ORT=${EMBER_BENCH_ORT:-build/ort}
ort_version=${EMBER_BENCH_ORT_VERSION:-1.31.1}
if [ ! -f "$EMBER_BENCH_ORT/node_modules/onnxruntime-node/package.json" ]; then
  if command -v node >/dev/null && command -v npm >/dev/null; then
    npm install --prefix "$EMBER_BENCH_ORT" --ignore-scripts --no-audit --no-fund "onnxruntime-node@$ort_version" >&2 ||
      echo "bench.sh: npm install onnxruntime-node@$ort_version failed: onnx_*_vs_ort skipped" >&2
  else
    echo "bench.sh: node and npm not found (apt-get install nodejs npm): onnx_*_vs_ort (ONNX Runtime) skipped" >&2
  fi
fi

threads=${EMBER_BENCH_THREADS:-$(nproc)}
# Thread pools that read their size from the environment at start-up (OpenBLAS, OpenMP).
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads EMBER_NUM_THREADS=$threads
# Idle pools must not spin on the cores the other library is being timed on: OpenBLAS spins
# ~0.1 s after each call and libgomp 300000 iterations by default, which slowed both sides.
export OPENBLAS_THREAD_TIMEOUT=4 GOMP_SPINCOUNT=10000
mkdir -p build/reports
exec build/bench/ember_bench_cpu --threads "$threads" --out build/reports/bench-cpu.json "$@"
