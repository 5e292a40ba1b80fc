#!/usr/bin/env bash
# Generates the API reference from the public headers with Doxygen (Debian's `doxygen`) into
# build/api/html, and fails on any warning: an undocumented public symbol, or a comment Doxygen
# cannot read. Configuration: docs/api/Doxyfile; the headers' `//` comments are read as
# documentation through scripts/doxygen_filter.py. Usage: scripts/docs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v doxygen >/dev/null; then
  [ "${EMBER_SKIP_DEPS:-0}" = 1 ] && { echo "docs.sh: doxygen is not installed" >&2; exit 2; }
  scripts/install-deps.sh docs
fi
mkdir -p build/api
log=build/api/warnings.log
doxygen docs/api/Doxyfile >build/api/doxygen.log 2>"$log" || { cat "$log" >&2; exit 1; }
n=$(grep -c "warning:" "$log" || true)
undocumented=$(grep -c "is not documented" "$log" || true)
if [ "$n" -gt 0 ]; then
  grep "warning:" "$log" | sed "s|$PWD/||" | head -40 >&2
  echo "docs.sh: $n warnings ($undocumented undocumented public symbols); all of them: $log" >&2
  exit 1
fi
echo "docs.sh: API reference in build/api/html ($(find include/ember -name '*.hpp' | wc -l) headers, 0 warnings)"
