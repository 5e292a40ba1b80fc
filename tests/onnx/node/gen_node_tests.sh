#!/usr/bin/env bash
# Generates the official ONNX backend node tests (model.onnx + test_data_set_N/*.pb per case)
# into DIR (default build/onnx-node) with Debian's python3-onnx. Exits 2 when python3-onnx is
# missing, so callers can report the suite as skipped.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-build/onnx-node}
if ! /usr/bin/python3 -c 'import onnx' 2>/dev/null; then
  echo "python3-onnx missing: node tests not generated" >&2
  exit 2
fi
rm -rf "$out"
mkdir -p "$out"
/usr/bin/python3 "$here/gen_node_tests.py" generate-data -o "$out" >/dev/null
echo "generated $(ls -d "$out"/node/*/ | wc -l) node cases in $out"
