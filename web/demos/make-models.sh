#!/usr/bin/env bash
# Makes the files the demo pages and the browser tests load, in DIR (default build/web-models),
# with the native build (cmake --preset default):
#   digits_cnn.safetensors   the digit recogniser's CNN (web/demos/digits/train.cpp), ~97% on UCI's test digits
#   fashion_samples.json     the first 16 Fashion-MNIST test images (web/tools/fashion_samples.cpp)
#   fashion_cnn.safetensors  a quick Fashion-MNIST CNN (examples/fashion_mnist: 1 epoch on 10,000
#                            images, ~80%); ./demo.sh trains the full one into build/fashion_mnist/
# About half a minute on two cores, after the build.
#
#   web/demos/make-models.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-build/web-models}
cmake --build --preset default -j "${JOBS:-2}" --target digits_web_train ember_web_fashion_samples fashion_mnist
./build/web/digits_web_train --out "$out"
./build/web/ember_web_fashion_samples --out "$out" --count 16
./build/examples/fashion_mnist --out "$out" --epochs 1 --train-images 10000 | tail -n 1  # its test accuracy
echo "wrote $out/digits_cnn.safetensors, $out/fashion_samples.json, $out/fashion_cnn.safetensors"
