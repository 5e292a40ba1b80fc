#!/usr/bin/env bash
# Uses ember as another project would (issue 27): installs the build into a temporary prefix,
# then builds tests/consumers/consumer.cpp against it three ways (find_package + CMake,
# pkg-config, the README's g++ line), runs each, and checks with ldd that these CPU-only
# binaries link no CUDA library. Where the build has the CUDA backend, the find_package and
# pkg-config consumers are also built with it, and the backend must be registered.
# Usage: tests/consumers/check.sh [BUILD_DIR]   Last line: "consumers: P passed, F failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
work=$build/consumers
rm -rf "$work"; mkdir -p "$work"
prefix=$work/prefix
p=0; f=0
ok() { echo "ok   $1"; p=$((p + 1)); }
bad() { echo "FAIL $1"; [ -n "${2:-}" ] && tail -15 "$2"; f=$((f + 1)); }
runs() { "$1" >"$1.out" 2>&1 && tail -1 "$1.out" | grep -qx "consumer ok"; }  # binary
no_cuda_libs() {  # binary: ldd lists none of the CUDA libraries
  ldd "$1" >"$1.ldd" 2>&1 && ! grep -E 'lib(cuda|cudart|cudnn[^ ]*|cublas|cublasLt|nvrtc)\.so' "$1.ldd"
}

if ! cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1; then
  bad "cmake --install" "$work/install.log"
  echo "consumers: $p passed, $f failed"; exit 1
fi
ok "cmake --install $build --prefix $prefix"
libdir=$(dirname "$(find "$prefix" -name ember.pc | head -1)")/..
has_cuda=0
ls "$libdir"/libember_cuda.* >/dev/null 2>&1 && has_cuda=1
# a package without the data and train layers (built where ncurses or the image libraries are
# missing, as on a GPU machine without a package archive): consumer.cpp leaves the train layer
# out, and the README's g++ line, which links it, is not tried
no_train=""
ls "$libdir"/libember_train.* >/dev/null 2>&1 || no_train=-DEMBER_CONSUMER_NO_TRAIN
export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
# shared builds (EMBER_SHARED=ON): the pkg-config and g++ binaries find the libraries here
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# 1. find_package(ember) + CMake
cm=$work/cmake
if cmake -S "$here/cmake" -B "$cm" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >"$work/cmake.log" 2>&1 &&
   cmake --build "$cm" >>"$work/cmake.log" 2>&1 && runs "$cm/consumer"; then ok "find_package(ember) consumer runs"
else bad "find_package(ember) consumer" "$work/cmake.log"; fi
if [ -x "$cm/consumer" ] && no_cuda_libs "$cm/consumer"; then ok "find_package(ember) consumer links no CUDA library (ldd)"
else bad "find_package(ember) consumer links CUDA (ldd: $cm/consumer.ldd)"; fi

# 2. pkg-config
pc=$work/pkgconfig; mkdir -p "$pc"
if g++ -std=c++20 $no_train "$here/consumer.cpp" $(pkg-config --cflags --libs ember 2>"$work/pkgconfig.log") -o "$pc/consumer" \
     >>"$work/pkgconfig.log" 2>&1 && runs "$pc/consumer" && no_cuda_libs "$pc/consumer"
then ok "pkg-config ember consumer runs, links no CUDA library"
else bad "pkg-config ember consumer" "$work/pkgconfig.log"; fi

# 3. the README's g++ line, as written (EMBER=the install prefix, main.cpp the program)
gx=$work/gxx; mkdir -p "$gx"; cp "$here/consumer.cpp" "$gx/main.cpp"
line=$(grep -m1 -E '^g\+\+ .*main\.cpp' "$root/README.md")
if [ -n "$no_train" ]; then echo "skip README g++ line consumer (the package has no train layer)"
elif [ -n "$line" ] && (cd "$gx" && EMBER=$prefix bash -c "$line") >"$work/gxx.log" 2>&1 && runs "$gx/main" &&
   no_cuda_libs "$gx/main"
then ok "README g++ line consumer runs, links no CUDA library"
else echo "   (line: ${line:-none found in README.md})"; bad "README g++ line consumer" "$work/gxx.log"; fi

# 4. with the CUDA backend (no GPU needed: the backend must be registered, not used)
if [ "$has_cuda" = 1 ]; then
  cmc=$work/cmake-cuda
  if cmake -S "$here/cmake" -B "$cmc" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DWITH_CUDA=ON >"$work/cmake-cuda.log" 2>&1 &&
     cmake --build "$cmc" >>"$work/cmake-cuda.log" 2>&1 && runs "$cmc/consumer"
  then ok "find_package(ember COMPONENTS cuda) consumer runs, backend registered"
  else bad "find_package(ember COMPONENTS cuda) consumer" "$work/cmake-cuda.log"; fi
  pcc=$work/pkgconfig-cuda; mkdir -p "$pcc"
  if g++ -std=c++20 -DEMBER_CONSUMER_CUDA $no_train "$here/consumer.cpp" $(pkg-config --cflags --libs ember-cuda 2>"$work/pkgconfig-cuda.log") \
       -o "$pcc/consumer" >>"$work/pkgconfig-cuda.log" 2>&1 && runs "$pcc/consumer"
  then ok "pkg-config ember-cuda consumer runs, backend registered"
  else bad "pkg-config ember-cuda consumer" "$work/pkgconfig-cuda.log"; fi
fi
echo "consumers: $p passed, $f failed"
[ "$f" -eq 0 ]
