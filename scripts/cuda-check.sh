#!/usr/bin/env bash
# Builds the CUDA backend and runs its suites on a GPU machine, without installing anything
# (for machines that have the toolchain but no Debian package archive). Usage:
#   scripts/cuda-check.sh [LOGDIR] [STAGES]
# STAGES (default "build,compile,conformance,autodiff,unit,nccl,bench"): any comma-separated subset,
# run in that order; "consumers" (not a default) installs the build and builds
# tests/consumers/ against it (find_package(ember COMPONENTS cuda) and pkg-config ember-cuda),
# whose CUDA consumers then run a product on the GPU. `compile` compiles every generated kernel on all cores into the disk cache
# (EMBER_CACHE_DIR) first, so the suites after it don't compile their kernels one at a time.
# On a fresh 16-core H100 machine (2026-12-05) build took 128 s, compile 150 s and the suites,
# run side by side, about 165 s (the autodiff stacks; one after another they took 350 s): the
# default stages fit one 10-minute command. The benchmarks (~2 min) are a second command on the
# same (warm) machine: STAGES=bench.
# "vulkan" (not a default) builds the Vulkan backend (issue 33) and, where the NVIDIA driver
# exposes a Vulkan device, runs its unit tests and the vulkan and autodiff-vulkan conformance
# stacks on it; where it exposes none it says so, with the loader's view (VK_LOADER_DEBUG).
# The remote-cuda stacks need Boost and OpenSSL headers; on a machine without them, run
# scripts/gpu-sysroot.sh here first and carry .cache/gpu-sysroot (then CONF_STACKS=remote-cuda
# AD_STACKS=autodiff-remote-cuda select those stacks).
# Logs go to LOGDIR (default build/cuda-logs); the summary is printed last.
set -uo pipefail
cd "$(dirname "$0")/.."
logs=${1:-build/cuda-logs}
stages=${2:-build,compile,conformance,autodiff,unit,nccl,bench}
mkdir -p "$logs"
has() { [[ ",$stages," == *",$1,"* ]]; }
export EMBER_SKIP_DEPS=1 EMBER_CACHE_DIR=${EMBER_CACHE_DIR:-$PWD/build/cache}
# NCCL for the NCCL group: the toolkit's, else the one PyTorch's wheels bring (nvidia-nccl)
[ -n "${NCCL_HOME:-}" ] || ls /usr/local/cuda/include/nccl.h >/dev/null 2>&1 ||
  export NCCL_HOME=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null)
export NCCL_NVLS_ENABLE=0  # never NVLink multicast on shared machines
# Boost and OpenSSL for the remote decorator (the remote-cuda stacks): the machine's, else the
# headers and libraries that scripts/gpu-sysroot.sh put in .cache/gpu-sysroot (carried there)
sysroot=$PWD/.cache/gpu-sysroot
if [ -d "$sysroot" ]; then
  [ -f /usr/include/boost/beast.hpp ] || export BOOST_ROOT=$sysroot
  [ -f /usr/include/openssl/ssl.h ] || export OPENSSL_ROOT_DIR=$sysroot
  # the Vulkan loader and shaderc (find_package(Vulkan) and the shaderc search look there)
  [ -f /usr/include/vulkan/vulkan.h ] || export CMAKE_PREFIX_PATH=$sysroot${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  ldconfig -p 2>/dev/null | grep -q "libvulkan.so.1 " || export LD_LIBRARY_PATH=$sysroot/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  ldconfig -p 2>/dev/null | grep -q "libssl.so.3 " || export LD_LIBRARY_PATH=$sysroot/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
summary=()
t0=$(date +%s)
if has build; then
  cmake --preset bench -DEMBER_WERROR=OFF >"$logs/configure.log" 2>&1 || { tail -30 "$logs/configure.log"; exit 1; }
  nccl_target=()  # the NCCL group's tests, where the build found NCCL (docs/distributed.md)
  has nccl && cmake --build build --target help | grep -q "^ember_nccl_tests:" && nccl_target=(ember_nccl_tests)
  if ! cmake --build build -j "$(nproc)" --target ember_cuda_tests ember_conformance ember_autodiff_conformance \
       ember_tensor_tests ember_fusion_tests ember_bench_cuda "${nccl_target[@]}" >"$logs/build.log" 2>&1; then
    grep -E "error|Error" -A3 "$logs/build.log" | head -60
    exit 1
  fi
  summary+=("build: ok ($(( $(date +%s) - t0 )) s)")
fi
run() {  # name, command...: runs it, and writes its summary line to $logs/name.sum
  local name=$1; shift
  local t=$(date +%s)
  "$@" >"$logs/$name.log" 2>&1
  local rc=$?
  local p f
  p=$(grep -E '^\[  PASSED  \] [0-9]+ test' "$logs/$name.log" | tail -1 | awk '{print $4}')
  f=$(grep -E '^\[  FAILED  \] [0-9]+ test' "$logs/$name.log" | tail -1 | awk '{print $4}')
  echo "$name: rc=$rc passed=${p:-0} failed=${f:-0} ($(( $(date +%s) - t )) s)" >"$logs/$name.sum"
}
rm -f "$logs"/*.sum
has compile && run compile build/tests/backends/cuda/ember_cuda_tests --gtest_filter='*Compile*'
# The suites share the GPU at once (each is small next to an H100 or H200; the autodiff stacks
# alone take about 160 s), which keeps the whole script within 10 minutes. They write separate
# reports (conformance.json, autodiff.json).
has conformance && EMBER_STACKS=${CONF_STACKS:-cuda,autodiff-cuda,fusion-cuda,autodiff-fusion-cuda} run conformance \
  build/tests/conformance/ember_conformance --reports build/reports &
has autodiff && EMBER_STACKS=${AD_STACKS:-autodiff-cuda,autodiff-balanced-cuda,autodiff-fusion-cuda} run autodiff \
  build/tests/autodiff/ember_autodiff_conformance --reports build/reports &
has unit && run cuda_tests build/tests/backends/cuda/ember_cuda_tests --gtest_filter='-*Compile*' &
# the fusion decorator's tests, its CUDA ones included
has unit && run fusion build/tests/fusion/ember_fusion_tests &
# the random ops' distribution tests (tests/tensor/random_test.cpp) on the cuda stacks
has unit && run random_cuda build/tests/tensor/ember_tensor_tests --gtest_filter='Stacks/Random.*/*cuda' &
# the NCCL group: a world of one GPU in process, and ember-run jobs over every GPU when there are 2 or more
if has nccl; then
  if [ -x build/tests/distributed/ember_nccl_tests ]; then
    run nccl build/tests/distributed/ember_nccl_tests &
  else
    echo "nccl: not built (no NCCL found, or the stage 'build' did not run)" >"$logs/nccl.sum"
  fi
fi
wait
for n in compile conformance autodiff cuda_tests fusion random_cuda nccl; do
  [ -f "$logs/$n.sum" ] && summary+=("$(cat "$logs/$n.sum")")
done
if has vulkan; then
  t=$(date +%s)
  if ! cmake --build build -j "$(nproc)" --target ember_vulkan_tests ember_conformance ember_autodiff_conformance \
       >"$logs/vulkan-build.log" 2>&1; then
    summary+=("vulkan: build failed: $(grep -m1 -E 'error|Error' "$logs/vulkan-build.log")")
  elif ! build/tests/backends/vulkan/ember_vulkan_tests --has-device >"$logs/vulkan-devices.log" 2>&1; then
    VK_LOADER_DEBUG=error,warn build/tests/backends/vulkan/ember_vulkan_tests --has-device >>"$logs/vulkan-devices.log" 2>&1
    ls /usr/share/vulkan/icd.d /etc/vulkan/icd.d >>"$logs/vulkan-devices.log" 2>&1
    summary+=("vulkan: no device ($(head -1 "$logs/vulkan-devices.log")); the loader's view in vulkan-devices.log")
  else
    summary+=("$(head -1 "$logs/vulkan-devices.log")")
    run vulkan_tests build/tests/backends/vulkan/ember_vulkan_tests &
    EMBER_STACKS=vulkan run vulkan_conformance build/tests/conformance/ember_conformance &
    EMBER_STACKS=autodiff-vulkan run vulkan_autodiff build/tests/autodiff/ember_autodiff_conformance &
    wait
    for n in vulkan_tests vulkan_conformance vulkan_autodiff; do summary+=("$(cat "$logs/$n.sum")"); done
  fi
  summary+=("vulkan stage: $(( $(date +%s) - t )) s")
fi
if has consumers; then
  t=$(date +%s)
  extra=()  # the installed targets the stages above did not build, where this build has them
  for target in ember-onnx ember-run ember_distributed; do
    cmake --build build --target help | grep -q "^$target:" && extra+=("$target")
  done
  cmake --build build -j "$(nproc)" --target "${extra[@]}" >"$logs/consumers-build.log" 2>&1
  tests/consumers/check.sh build >"$logs/consumers.log" 2>&1
  summary+=("$(tail -1 "$logs/consumers.log") ($(( $(date +%s) - t )) s)")
fi
if has bench; then
  t=$(date +%s)
  build/bench/ember_bench_cuda --out build/reports/bench-cuda-ember.json ${BENCH_ARGS:-} >"$logs/bench-ember.log" 2>&1
  python3 bench/cuda_peer.py --out build/reports/bench-cuda-peer.json ${BENCH_ARGS:-} >"$logs/bench-peer.log" 2>&1
  tv=$(python3 -c 'import torch; print("pytorch " + torch.__version__.split("+")[0])')
  python3 bench/cuda_report.py build/reports/bench-cuda-ember.json build/reports/bench-cuda-peer.json \
    build/reports/bench-cuda.json "$tv" >"$logs/bench-table.md" 2>&1
  summary+=("bench: $(( $(date +%s) - t )) s")
fi
cp build/reports/*.json "$logs/" 2>/dev/null
for f in "$logs"/*.log; do  # the failures, briefly
  grep -E "^\[  FAILED  \]" "$f" | head -400 >"${f%.log}.failed" 2>/dev/null
done
printf '%s\n' "${summary[@]}"
[ -f "$logs/bench-table.md" ] && cat "$logs/bench-table.md"
exit 0
