#!/usr/bin/env bash
# The Debian packages (issue 29, cmake/EmberDeb.cmake): `cpack -G DEB` over an existing build
# writes libember-dev and ember-tools; this checks their metadata (names, version = the project's,
# Depends that name installed Debian packages) and contents, unpacks both with `dpkg -x` into a
# scratch root (nothing is installed on the system), and builds and runs the find_package and
# pkg-config consumers (tests/consumers), ember-onnx and ember-run (where built) from that tree.
# Usage: tests/consumers/deb.sh [BUILD_DIR]   Last line: "deb: P passed, F failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
work=$build/deb
rm -rf "$work"; mkdir -p "$work"
p=0; f=0
ok() { echo "ok   $1"; p=$((p + 1)); }
bad() { echo "FAIL $1"; [ -n "${2:-}" ] && tail -15 "$2"; f=$((f + 1)); }
finish() { echo "deb: $p passed, $f failed"; [ "$f" -eq 0 ]; exit; }

# the version, from the one place it is written
version=$(awk '/^#define EMBER_VERSION_(MAJOR|MINOR|PATCH) / {v = v (v == "" ? "" : ".") $3} END {print v}' \
          "$root/include/ember/version.hpp")

if (cd "$build" && cpack -G DEB -B "$work/packages") >"$work/cpack.log" 2>&1; then ok "cpack -G DEB"
else bad "cpack -G DEB" "$work/cpack.log"; finish; fi
dev=$(ls "$work"/packages/libember-dev_*.deb 2>/dev/null | head -1)
tools=$(ls "$work"/packages/ember-tools_*.deb 2>/dev/null | head -1)
if [ -n "$dev" ] && [ -n "$tools" ]; then ok "packages libember-dev and ember-tools written"
else bad "packages: $(ls "$work/packages")"; finish; fi

# metadata: names, version, Depends
field() { dpkg-deb -f "$1" "$2"; }
for deb in "$dev" "$tools"; do
  name=$(field "$deb" Package); v=$(field "$deb" Version)
  if [ "${v%-*}" = "$version" ]; then ok "$name version $v is the project's $version"
  else bad "$name version $v, the project's is $version"; fi
  # every Depends clause names a package installed here (one alternative suffices): the names are real
  missing=""
  IFS=',' read -ra clauses <<<"$(field "$deb" Depends)"
  for clause in "${clauses[@]}"; do
    found=0
    IFS='|' read -ra alts <<<"$clause"
    for alt in "${alts[@]}"; do
      pkg=$(echo "$alt" | sed 's/(.*//; s/ //g')
      dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q "install ok installed" && found=1
    done
    [ "$found" = 1 ] || missing="$missing [$clause]"
  done
  if [ -z "$missing" ] && [ ${#clauses[@]} -gt 0 ]; then ok "$name Depends: $(field "$deb" Depends)"
  else bad "$name Depends not installed here:$missing (Depends: $(field "$deb" Depends))"; fi
done
dpkg-deb -c "$dev" >"$work/dev.contents"; dpkg-deb -c "$tools" >"$work/tools.contents"
deps=$(field "$dev" Depends)
need="nlohmann-json3-dev"
grep -q "libember_train" "$work/dev.contents" && need="$need zlib1g-dev libpng-dev libjpeg-dev libsqlite3-dev libncurses-dev"
miss=""; for n in $need; do [[ ", $deps," == *" $n"[,\ ]* ]] || miss="$miss $n"; done
if [ -z "$miss" ]; then ok "libember-dev depends on what find_package(ember) finds ($need)"
else bad "libember-dev Depends lack:$miss"; fi
[[ "$(field "$tools" Depends)" == *libc6* ]] && ok "ember-tools Depends from dpkg-shlibdeps (libc6, ...)" ||
  bad "ember-tools Depends: $(field "$tools" Depends)"

# contents
miss=""
for path in include/ember/ember.hpp include/ember/version.hpp include/ember/tensor/dlpack.hpp libember_core.a \
            cmake/ember/emberConfig.cmake cmake/ember/emberConfigVersion.cmake pkgconfig/ember.pc; do
  grep -q "/$path\$" "$work/dev.contents" || miss="$miss $path"
done
[ -z "$miss" ] && ok "libember-dev holds the headers, libraries, CMake package and ember.pc" ||
  bad "libember-dev lacks:$miss"
tools_list="ember-onnx"
[ -x "$build/tools/ember-run/ember-run" ] && tools_list="$tools_list ember-run"  # built where Gloo is found
miss=""; for t in $tools_list; do grep -q "\./usr/bin/$t\$" "$work/tools.contents" || miss="$miss $t"; done
if [ -z "$miss" ] && ! grep -q '\.a$\|/include/' "$work/tools.contents"
then ok "ember-tools holds usr/bin/{${tools_list// /,}} (and no headers or libraries)"
else bad "ember-tools contents, missing:$miss ($work/tools.contents)"; fi

# unpacked into a scratch root, never installed
sysroot=$work/root
dpkg -x "$dev" "$sysroot" && dpkg -x "$tools" "$sysroot"
prefix=$sysroot/usr
pcdir=$(dirname "$(find "$prefix" -name ember.pc | head -1)")
grep -q "^Version: $version\$" "$pcdir/ember.pc" && ok "ember.pc Version: $version" || bad "ember.pc version"

cm=$work/cmake
if cmake -S "$here/cmake" -B "$cm" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DEMBER_VERSION_REQUIRED="$version" \
     -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF >"$work/cmake.log" 2>&1 &&
   grep -q "ember_DIR:PATH=$prefix/" "$cm/CMakeCache.txt" && cmake --build "$cm" >>"$work/cmake.log" 2>&1 &&
   "$cm/consumer" >"$cm/out" 2>&1 && tail -1 "$cm/out" | grep -qx "consumer ok" &&
   grep -qx "ember version $version" "$cm/out"
then ok "find_package(ember $version) consumer from the unpacked .deb runs (ember::version() $version)"
else bad "find_package(ember) consumer from the .deb" "$work/cmake.log"; fi

pc=$work/pkgconfig; mkdir -p "$pc"
if g++ -std=c++20 "$here/consumer.cpp" $(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs ember 2>"$work/pkgconfig.log") \
     -o "$pc/consumer" >>"$work/pkgconfig.log" 2>&1 && "$pc/consumer" >"$pc/out" 2>&1 && tail -1 "$pc/out" | grep -qx "consumer ok"
then ok "pkg-config ember consumer from the unpacked .deb runs"
else bad "pkg-config consumer from the .deb" "$work/pkgconfig.log"; fi

if "$prefix/bin/ember-onnx" info "$root/tests/onnx/fixtures/runtime_mlp.onnx" >"$work/ember-onnx.log" 2>&1
then ok "ember-onnx from the unpacked .deb runs (info runtime_mlp.onnx)"
else bad "ember-onnx from the .deb" "$work/ember-onnx.log"; fi
if [[ "$tools_list" == *ember-run* ]]; then
  if timeout 60 "$prefix/bin/ember-run" --nproc 2 /bin/true >"$work/ember-run.log" 2>&1
  then ok "ember-run from the unpacked .deb runs a job of 2 processes (/bin/true)"
  else bad "ember-run --nproc 2 /bin/true from the .deb" "$work/ember-run.log"; fi
fi
finish
