#!/usr/bin/env bash
# Fuzzes the remote server's frame decoder: builds tests/remote/fuzz with clang (libFuzzer +
# ASan + UBSan) in build-fuzz/remote/ and runs remote_fuzz for SECONDS, starting from the
# committed seeds in tests/remote/fuzz/corpus/ (make_corpus.py writes them). Exits non-zero when
# the target crashes; the input that did it is left in build-fuzz/remote/artifacts/.
# Usage: tests/remote/run_fuzz.sh [SECONDS=30]
set -euo pipefail
seconds=${1:-30}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build-fuzz/remote
if ! command -v clang++ >/dev/null 2>&1; then
  echo "run_fuzz: clang++ not found (Debian package: clang); fuzzing skipped" >&2
  exit 0
fi
mkdir -p "$build"
if ! { cmake -S "$root/tests/remote/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
         -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build "$build" -j "$(nproc)"; } >"$build/build.log" 2>&1; then
  tail -40 "$build/build.log"
  echo "run_fuzz: build failed (log: $build/build.log)" >&2
  exit 1
fi
[ "$seconds" -ge 1 ] || seconds=1
mkdir -p "$build/artifacts"
work=$build/corpus  # grows across runs; the committed seeds stay untouched
mkdir -p "$work"
log=$build/fuzz_remote.log
echo "== remote_fuzz (${seconds}s)"
if "$build/remote_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$build/artifacts/remote-" \
    "$work" "$root/tests/remote/fuzz/corpus" >"$log" 2>&1; then
  grep -E "^(stat::number_of_executed_units|Done)" "$log" | tr '\n' ' '; echo
else
  echo "remote_fuzz FAILED; log: $log"
  grep -E "ERROR|SUMMARY|Test unit written" "$log" | head -20
  exit 1
fi
