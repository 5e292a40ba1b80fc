#!/usr/bin/env bash
# ember on a microcontroller (docs/embedded.md): builds examples/cortex_m's models for QEMU's
# mps2-an386 (Cortex-M4F) and natively, runs both on 100 test inputs each, compares them with each
# other and with PyTorch, checks the images for heap, exception and thread symbols, and writes
# build/reports/embedded.json. The models: the digit classifier trained by ember
# (build/examples/cortex_m), and two keyword-spotting-style models defined in PyTorch (a CNN and
# an LSTM + GRU), exported to ONNX and compiled by `ember-onnx generate --target cortex-m`; and
# int8 versions of the two CNNs (`ember-onnx quantize`), checked against ember's ONNX runtime
# (PyTorch cannot run QLinearConv).
#
#   scripts/embedded-check.sh [BUILD_DIR]     (default: build; needs its ember-onnx and cortex_m)
#
# Exit status 0 when every model matches, 1 on a failure, 2 when it skips (the last line says why:
# arm-none-eabi-gcc, newlib, qemu-system-arm or PyTorch missing; scripts/install-deps.sh installs
# them). The line "embedded: P passed, F failed" counts the models (test.sh's run_script reads it;
# failures are the lines starting "   FAILED"). About a minute after the build, on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=$build/cortex_m
f32_models=(digits_cnn_m kws_cnn kws_rnn)
int8_models=(digits_cnn_m_int8 kws_cnn_int8)  # NAME_int8: NAME quantized, on NAME's inputs
models=("${f32_models[@]}" "${int8_models[@]}")
ember_onnx=$build/tools/ember-onnx/ember-onnx
python=${PYTHON:-/usr/bin/python3}  # Debian's, with python3-torch

skip() {
  echo "embedded-check: skipped: $1 (scripts/install-deps.sh installs it)"
  exit 2
}
fail() {
  echo "   FAILED $1"
  echo "embedded: 0 passed, 1 failed"
  exit 1
}
for tool in arm-none-eabi-g++ arm-none-eabi-gcc arm-none-eabi-size arm-none-eabi-nm qemu-system-arm cmake ninja; do
  command -v "$tool" >/dev/null || skip "$tool is not installed"
done
echo 'int main(){}' | arm-none-eabi-gcc -x c - --specs=nano.specs --specs=nosys.specs -o /dev/null 2>/dev/null ||
  skip "newlib for arm-none-eabi is not installed"
"$python" -c "import torch" 2>/dev/null || skip "PyTorch (python3-torch) is not installed"
for program in "$ember_onnx" "$build/examples/cortex_m"; do
  [[ -x $program ]] || fail "$program is missing; build it first (cmake --build $build --target ember-onnx cortex_m)"
done

mkdir -p "$out/gen"
out_abs=$(cd "$out" && pwd)
echo "== train the digit classifier with ember"
"$build/examples/cortex_m" --out "$out" | tail -n 1
echo "== export the models to ONNX (PyTorch)"
"$python" examples/cortex_m/export_models.py --out "$out" --digits-weights "$out/digits_cnn_m.safetensors" 2>/dev/null
echo "== ember-onnx quantize (int8, QOperator form), and ember's ONNX runtime on their inputs"
for m in "${int8_models[@]}"; do
  base=${m%_int8}
  "$ember_onnx" quantize "$out/$base.onnx" "$out/$m.onnx" --calibration "$out/$base.calibration" | sed "s/^/  $m: /"
  rm -rf "$out/$m.ember" "$out/$m.npy"
  ln -s "$base.npy" "$out/$m.npy"
  ls "$out/$base.npy" | sed 's/\.npy$//' |
    xargs -P 2 -I{} "$ember_onnx" run "$out/$m.onnx" --input "input=$out/$base.npy/{}.npy" --output-dir "$out/$m.ember/{}" >/dev/null
  "$python" examples/cortex_m/export_models.py --gather "$out/$m" | sed "s/^/  /"
  "$python" -c 'import json, sys; m = json.load(open(sys.argv[1])); m.update(name=sys.argv[3], reference="ember", tolerance=[1e-5, 1e-5]); json.dump(m, open(sys.argv[2], "w"))' \
    "$out/$base.meta.json" "$out/$m.meta.json" "$m"
  cp "$out/$base.inputs.bin" "$out/$m.inputs.bin"
done
echo "== ember-onnx generate --target cortex-m"
for m in "${models[@]}"; do
  "$ember_onnx" generate "$out/$m.onnx" --target cortex-m --out "$out/gen" --name "$m" | sed "s/^/  $m: /"
done
echo "== build the firmware (arm-none-eabi-g++, ember's kernels with -DEMBER_FREESTANDING=ON) and the native twin"
models_list=$(IFS=';'; echo "${models[*]}")
for kind in arm native; do
  toolchain=()
  [[ $kind == arm ]] && toolchain=(-DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchains/arm-none-eabi-cortex-m4.cmake")
  cmake -S examples/cortex_m/firmware -B "$out/firmware-$kind" -G Ninja "${toolchain[@]}" -DEMBER_MODELS="$models_list" \
    -DEMBER_GEN_DIR="$out_abs/gen" -DEMBER_INPUTS_DIR="$out_abs" >"$out/firmware-$kind.log" 2>&1 &&
    ninja -C "$out/firmware-$kind" -j 2 >>"$out/firmware-$kind.log" 2>&1 ||
    { tail -n 30 "$out/firmware-$kind.log"; fail "the $kind firmware build ($out/firmware-$kind.log)"; }
done
# What ember's kernels need from outside, built freestanding for the target: libgcc's and libc's
# helpers at most, never the heap, exceptions or threads.
kernels=$out/firmware-arm/ember/libember_kernels.a
defined=$(arm-none-eabi-nm --defined-only "$kernels" | awk 'NF == 3 {print $3}' | sort -u)
undefined=$(arm-none-eabi-nm -u "$kernels" | awk 'NF == 2 {print $2}' | sort -u | comm -23 - <(echo "$defined") |
  tr '\n' ' ')
echo "  libember_kernels.a (EMBER_FREESTANDING=ON) needs: ${undefined:-nothing}"
if grep -Eq '_Znw|_Zna|malloc|__cxa_|_Unwind|__gxx_personality|pthread' <<<"$undefined"; then
  fail "libember_kernels.a needs a hosted symbol: $undefined"
fi
echo "== run in qemu-system-arm -M mps2-an386 and natively"
for m in "${models[@]}"; do
  rm -f "$out/$m.qemu.txt"
  timeout 300 qemu-system-arm -M mps2-an386 -nographic -icount shift=0 -monitor none -serial none \
    -chardev file,id=semihosting,path="$out/$m.qemu.txt" -semihosting-config enable=on,target=native,chardev=semihosting \
    -kernel "$out/firmware-arm/$m.elf" </dev/null || echo "  $m: qemu exited with status $?"
  "$out/firmware-native/$m.native" >"$out/$m.native.txt" || echo "  $m: the native build exited with status $?"
done
# The ONNX node tests (made by test.sh from python3-onnx) through the generator, run natively.
node_report=
if [[ -d $build/onnx-node/node ]]; then
  echo "== the ONNX node tests through ember-onnx generate --target cortex-m (natively)"
  rm -f "$out/node-tests.json"
  "$python" tests/embedded/node_conformance.py "$ember_onnx" "$build/onnx-node" "$out/node-tests" \
    --report "$out/node-tests.json" | grep -v '^  refused' || true
  node_report=$out/node-tests.json
else
  echo "== (no ONNX node tests in $build/onnx-node: that part is left out)"
fi
"$python" examples/cortex_m/check_results.py --out "$build/reports/embedded.json" --firmware "$out/firmware-arm" \
  ${node_report:+--node-report "$node_report"} "$out" "${models[@]}"
