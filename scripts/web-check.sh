#!/usr/bin/env bash
# The browser layer's checks (issue 32; docs/web.md), run by test.sh after the native build:
#   1. the wasm module, single-threaded (preset wasm) as ember.wasm and as ember-relaxed.wasm (the
#      GEMM and convolution kernels with relaxed SIMD), and with pthreads (preset wasm-threads, the
#      same two modules) when EMBER_WEB_THREADS=1;
#   2. the forward conformance suite compiled to wasm, in Node.js, on the cpu stack; the max pool's
#      values and indices against PyTorch's (tests/wasm/pool_test.cpp); the relaxed-SIMD
#      module's GEMM and convolutions against ember.wasm's and a float64 reference
#      (web/tests/relaxed_simd.test.mjs; the pthreads build's pair too, on 2 threads, with
#      EMBER_WEB_THREADS=1);
#   3. the demos' models (web/demos/make-models.sh): the digits CNN, the demo's Fashion CNN (one
#      short epoch) and 16 Fashion-MNIST test images; torchvision's MobileNet-v2 / ResNet-18 as ONNX;
#   4. in Debian's headless Chromium (puppeteer-core from web/node_modules): the JavaScript API's
#      test (web/tests/api.test.mjs) and the demos' test (web/tests/browser.test.mjs), whose
#      predictions must equal the native build's (ember_web_reference); Chromium has relaxed SIMD,
#      so the single-threaded runs are on ember-relaxed.wasm (the demos on one thread unless
#      EMBER_WEB_THREADS=1);
#   5. a short benchmark against onnxruntime-web and TensorFlow.js (web/bench/run.mjs --quick).
# Writes build/reports/web.json. Last line: "web: N passed, M failed". Exit 2 when emscripten,
# chromium or node is missing (test.sh names the suite as skipped).
#
# Usage: scripts/web-check.sh [NATIVE_BUILD_DIR]   (default build)
set -uo pipefail
cd "$(dirname "$0")/.."
native=${1:-build}
jobs=$(nproc)
export NODE_PATH=/usr/share/nodejs CCACHE_DIR="${CCACHE_DIR:-$PWD/.cache/ccache}"
for tool in emcc node /usr/bin/chromium; do
  command -v "$tool" >/dev/null || { echo "web: $tool not found (scripts/install-deps.sh installs emscripten and chromium)"; exit 2; }
done
logs=build/test-logs/web; reports=build/reports; models=build/web-models
rm -rf "$logs"; mkdir -p "$logs" "$reports/web" "$models"
passed=0; failed=0
pass() { echo "   ok: $1"; passed=$((passed + 1)); }
fail() { echo "   FAILED: $1 ($2)"; tail -15 "$2" | sed 's/^/     /'; failed=$((failed + 1)); }
step() {  # name, log, command...
  local name=$1 log=$2; shift 2
  if "$@" >"$log" 2>&1; then pass "$name"; else fail "$name" "$log"; fi
}

# 1. the modules
step "wasm build" "$logs/build.log" bash -c \
  "cmake --preset wasm && cmake --build --preset wasm -j $jobs --target ember_wasm ember_wasm_relaxed ember_conformance_wasm ember_pool_wasm_test ember_conv_winograd_wasm_test"
# The pthreads module too with EMBER_WEB_THREADS=1 (eight more minutes on two cores; without it the
# API's test checks the fallback to one thread instead).
if [ "${EMBER_WEB_THREADS:-0}" = 1 ]; then
  step "wasm-threads build" "$logs/build-threads.log" bash -c \
    "cmake --preset wasm-threads && cmake --build --preset wasm-threads -j $jobs --target ember_wasm ember_wasm_relaxed"
fi
gz_bytes=$(cat build-wasm/web/ember.wasm build-wasm/web/ember.mjs 2>/dev/null | gzip -9 | wc -c)

# 2. conformance in Node.js (counted case by case, like the native suites)
conf_log=$logs/conformance.log
EMBER_STACKS=cpu node --no-experimental-fetch build-wasm/tests/wasm/ember_conformance.js --gtest_color=no \
  --reports "$reports/web" >"$conf_log" 2>&1
conf_rc=$?
conf_p=$(grep -E '^\[  PASSED  \] [0-9]+ test' "$conf_log" | tail -1 | awk '{print $4}'); conf_p=${conf_p:-0}
conf_f=$(grep -E '^\[  FAILED  \] [0-9]+ test' "$conf_log" | tail -1 | awk '{print $4}'); conf_f=${conf_f:-0}
if [ "$conf_rc" -ne 0 ] && [ "$conf_f" -eq 0 ]; then conf_f=1; fi
grep -E '^\[  FAILED  \]' "$conf_log" | head -20
echo "   wasm conformance (node, cpu stack): $conf_p passed, $conf_f failed ($conf_log)"
passed=$((passed + conf_p)); failed=$((failed + conf_f))
step "max pool against PyTorch (node)" "$logs/pool.log" \
  node --no-experimental-fetch build-wasm/tests/wasm/ember_pool_test.js --gtest_color=no
step "winograd conv, SIMD128 transforms (node)" "$logs/winograd.log" \
  node --no-experimental-fetch build-wasm/tests/wasm/ember_conv_winograd_test.js --gtest_color=no
step "relaxed SIMD kernels (node)" "$logs/relaxed-simd.log" node web/tests/relaxed_simd.test.mjs
if [ "${EMBER_WEB_THREADS:-0}" = 1 ]; then
  step "relaxed SIMD kernels, pthreads build (node)" "$logs/relaxed-simd-threads.log" \
    node web/tests/relaxed_simd.test.mjs --dist build-wasm-threads/web
fi

# 3. the models
step "demo models" "$logs/models.log" env JOBS="$jobs" web/demos/make-models.sh "$models"
step "onnx models" "$logs/onnx-export.log" /usr/bin/python3 web/bench/export_models.py "$models"

# 4. Chromium
step "npm packages" "$logs/npm.log" timeout 300 npm ci --prefix web --ignore-scripts --no-audit --no-fund
chromium_version=$(/usr/bin/chromium --version 2>/dev/null | awk '{print $2}')
step "api test (chromium)" "$logs/api-test.log" node web/tests/api.test.mjs
# the demos on one thread, so on the relaxed-SIMD module, unless the pthreads build is the one to test
# (its relaxed-SIMD module then)
demo_env=(EMBER_WEB_DEMO_THREADS=1 EMBER_WEB_EXPECT_SIMD=relaxed)
[ "${EMBER_WEB_THREADS:-0}" = 1 ] && demo_env=(EMBER_WEB_EXPECT_SIMD=relaxed)
step "demo tests (chromium)" "$logs/browser-test.log" env "${demo_env[@]}" EMBER_WEB_REFERENCE="$native/web/ember_web_reference" node web/tests/browser.test.mjs

# 5. the benchmark, briefly
step "benchmark (quick)" "$logs/bench.log" node web/bench/run.mjs --quick --out "$reports/web-bench.json"

/usr/bin/python3 - "$reports" "$chromium_version" "$gz_bytes" "$conf_p" "$conf_f" "$passed" "$failed" <<'PY'
import json, os, sys
reports, chromium, gz, conf_p, conf_f, passed, failed = sys.argv[1:]
def load(name):
    try:
        return json.load(open(os.path.join(reports, name)))
    except (OSError, ValueError):
        return {}
demos, bench = load("web-demos.json"), load("web-bench.json")
web = {"chromium": chromium, "demos_ok": demos.get("demos_ok", 0), "demos": demos.get("demos", 3),
       "conformance_cases": int(conf_p) + int(conf_f), "failed": int(failed),
       "wasm_gzip_bytes": int(gz), "checks_passed": int(passed), "bench": bench.get("rows", bench)}
json.dump(web, open(os.path.join(reports, "web.json"), "w"), indent=2)
PY
echo "web: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
