#!/usr/bin/env bash
# Fuzzes the store parsers: builds tests/store/fuzz with clang (libFuzzer + ASan + UBSan) in
# build-fuzz/ and runs fuzz_safetensors and fuzz_pytorch for SECONDS/2 each, starting from the
# committed seeds in tests/store/corpus/. Exits non-zero when a target crashes; the input that
# did it is left in build-fuzz/artifacts/. Usage: tests/store/run_fuzz.sh [SECONDS=60]
set -euo pipefail
seconds=${1:-60}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build-fuzz
if ! command -v clang++ >/dev/null 2>&1; then
  echo "run_fuzz: clang++ not found (Debian package: clang); fuzzing skipped" >&2
  exit 0
fi
if ! command -v ninja >/dev/null 2>&1; then
  echo "run_fuzz: ninja not found" >&2
  exit 1
fi
mkdir -p "$build"
if ! { cmake -S "$root/tests/store/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
         -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build "$build" -j "$(nproc)"; } >"$build/build.log" 2>&1; then
  tail -40 "$build/build.log"
  echo "run_fuzz: build failed (log: $build/build.log)" >&2
  exit 1
fi

half=$(( seconds / 2 )); [ "$half" -ge 1 ] || half=1
mkdir -p "$build/artifacts"
status=0
for target in safetensors pytorch; do
  work=$build/corpus/$target  # grows across runs; the committed seeds stay untouched
  mkdir -p "$work"
  log=$build/fuzz_$target.log
  echo "== fuzz_$target (${half}s)"
  if "$build/fuzz_$target" -max_total_time="$half" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="$build/artifacts/$target-" \
      "$work" "$root/tests/store/corpus/$target" >"$log" 2>&1; then
    grep -E "^(stat::number_of_executed_units|Done)" "$log" | tr '\n' ' '; echo
  else
    status=1
    echo "fuzz_$target FAILED; log: $log"
    grep -E "ERROR|SUMMARY|Test unit written" "$log" | head -20
  fi
done
exit $status
