#!/usr/bin/env bash
# Writes .cache/gpu-sysroot/: the Boost and OpenSSL headers that the remote decorator includes
# (found with g++ -M, about 17 MB) and OpenSSL's libraries, and the Vulkan loader and shaderc
# (about 21 MB more), for GPU machines that have the CUDA toolchain but not Debian's
# libboost-dev / libssl-dev / libvulkan-dev / libshaderc-dev. Pass it to the device tool as a carried
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
# The Vulkan backend (docs/vulkan.md): the loader and its headers, and shaderc with the static
# glslang and SPIRV-Tools libraries it links (about 21 MB). The machine's NVIDIA driver provides
# the device itself (its ICD), where it has one.
echo '#include <vulkan/vulkan.h>
#include <shaderc/shaderc.h>' | g++ -x c++ -M - | tr ' \\' '\n\n' |
  grep -E '^/usr/include/(vulkan|vk_video|shaderc)/' | sort -u | while read -r h; do
  mkdir -p "$out/include/$(dirname "${h#/usr/include/}")" && cp "$h" "$out/include/${h#/usr/include/}"
done
for lib in shaderc_combined glslang MachineIndependent GenericCodeGen OSDependent OGLCompiler SPIRV SPIRV-Tools-opt \
           SPIRV-Tools glslang-default-resource-limits; do
  [ -f "/usr/lib/x86_64-linux-gnu/lib$lib.a" ] && cp "/usr/lib/x86_64-linux-gnu/lib$lib.a" "$out/lib/"
done
if [ -f /usr/lib/x86_64-linux-gnu/libvulkan.so.1 ]; then
  cp -L /usr/lib/x86_64-linux-gnu/libvulkan.so.1 "$out/lib/"
  ln -sf libvulkan.so.1 "$out/lib/libvulkan.so"
fi
du -sh "$out"
