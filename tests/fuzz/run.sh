#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/CMakeLists.txt: clang, ASan + UBSan) in build-fuzz/
# and runs each named one for its seconds, starting from its committed seed corpus. Exits
# non-zero when a target crashes or the build fails; the input that crashed is left in
# build-fuzz/artifacts/NAME-*. Without clang++ it prints "fuzzing skipped" and exits 0.
# Usage: tests/fuzz/run.sh NAME:SECONDS:CORPUS_DIR ...
#   e.g. tests/fuzz/run.sh remote_fuzz:20:tests/remote/fuzz/corpus
# (CORPUS_DIR relative to the repository root; test.sh lists every target with its budget.)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build-fuzz
if ! command -v clang++ >/dev/null 2>&1; then
  echo "run.sh: clang++ not found (Debian package: clang); fuzzing skipped" >&2
  exit 0
fi
if ! command -v ninja >/dev/null 2>&1; then
  echo "run.sh: ninja not found" >&2
  exit 1
fi
[ $# -ge 1 ] || { echo "usage: tests/fuzz/run.sh NAME:SECONDS:CORPUS_DIR ..." >&2; exit 2; }
mkdir -p "$build/artifacts"
targets=()
for spec in "$@"; do targets+=("${spec%%:*}"); done
if ! { cmake -S "$root/tests/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
         -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"; } \
       >"$build/build.log" 2>&1; then
  tail -40 "$build/build.log"
  echo "run.sh: build failed (log: $build/build.log)" >&2
  exit 1
fi
status=0
for spec in "$@"; do
  IFS=: read -r name seconds corpus <<<"$spec"
  [ "${seconds:-0}" -ge 1 ] || seconds=1
  work=$build/corpus/$name  # grows across runs; the committed seeds stay untouched
  mkdir -p "$work"
  log=$build/$name.log
  echo "== $name (${seconds}s)"
  if "$build/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="$build/artifacts/$name-" \
      "$work" "$root/$corpus" >"$log" 2>&1; then
    grep -E "^(stat::number_of_executed_units|Done)" "$log" | tr '\n' ' '; echo
  else
    status=1
    echo "$name FAILED; log: $log"
    grep -E "ERROR|SUMMARY|Test unit written" "$log" | head -20
  fi
done
exit $status
