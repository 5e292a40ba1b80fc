#!/usr/bin/env bash
# Writes .cache/gpu-sysroot/: the Boost and OpenSSL headers that the remote decorator includes
# (found with g++ -M, about 17 MB) and OpenSSL's libraries, for GPU machines that have the CUDA
# toolchain but not Debian's libboost-dev / libssl-dev. Pass it to the device tool as a carried
# path; scripts/cuda-check.sh uses it when the machine has no Boost or OpenSSL headers of its own.
# Usage: scripts/gpu-sysroot.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=.cache/gpu-sysroot
rm -rf "$out"
mkdir -p "$out/include/openssl" "$out/lib"
for f in src/decorators/remote/*.cpp tools/ember-server/*.cpp tests/remote/*.cpp; do
  g++ -std=c++20 -Iinclude -Isrc -Isrc/decorators/remote -Iexamples -M "$f" | tr ' \\' '\n\n'
done | grep -E '^/usr/include/(boost|openssl|x86_64-linux-gnu/openssl)/' | sort -u | while read -r h; do
  case "$h" in
    /usr/include/x86_64-linux-gnu/openssl/*) cp "$h" "$out/include/openssl/" ;;
    *) mkdir -p "$out/include/$(dirname "${h#/usr/include/}")" && cp "$h" "$out/include/${h#/usr/include/}" ;;
  esac
done
cp /usr/include/boost/version.hpp "$out/include/boost/"  # FindBoost reads the version there
cp -r /usr/include/openssl/. "$out/include/openssl/"
cp /usr/include/x86_64-linux-gnu/openssl/*.h "$out/include/openssl/"
for lib in libssl libcrypto; do
  cp -L "/usr/lib/x86_64-linux-gnu/$lib.so.3" "$out/lib/"
  ln -sf "$lib.so.3" "$out/lib/$lib.so"
done
du -sh "$out"
