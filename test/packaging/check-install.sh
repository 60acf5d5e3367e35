#!/usr/bin/env bash
# Install a built tree into a scratch prefix and build a consumer against the install, once
# through find_package(switchyard) and once through pkg-config; run both. Then the same for
# the user guide's examples (examples/: C ping-pong, epoll loop, listener client and server,
# C++), run by examples/run-examples.sh; and the installed tools, without LD_LIBRARY_PATH.
#
#   test/packaging/check-install.sh BUILD_DIR [CONSUMER_SOURCE_DIR]
#
# Environment: CC, CXX (compilers for the consumer and the examples, default cc and c++),
# SWY_CONSUMER_CFLAGS (extra flags,
# e.g. sanitizers to match an instrumented library), SWY_EXPECTED_VERSION (if set, the
# pkg-config version must equal it), KEEP=1 keeps the scratch directory.
set -euo pipefail

if (( $# < 1 )); then
  echo "usage: $0 BUILD_DIR [CONSUMER_SOURCE_DIR]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
consumer_src=$(cd "${2:-$here/consumer}" && pwd)
cc=${CC:-cc}
cxx=${CXX:-c++}
examples_src=$(cd "$here/../../examples" && pwd)
read -r -a extra_flags <<< "${SWY_CONSUMER_CFLAGS:-}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/swy-install-check.XXXXXX")
if [[ "${KEEP:-0}" == 1 ]]; then
  echo "check-install: keeping $tmp"
else
  trap 'rm -rf "$tmp"' EXIT
fi
prefix=$tmp/prefix

fail() {
  echo "check-install: FAIL: $*" >&2
  exit 1
}

echo "== install $build -> $prefix"
cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" || {
  cat "$tmp/install.log"
  fail "cmake --install failed"
}

# The layout an application relies on.
[[ -f $prefix/include/switchyard/switchyard.h ]] || fail "include/switchyard/switchyard.h missing"
[[ -f $prefix/include/switchyard/status.h ]] || fail "include/switchyard/status.h missing"
config=$(find "$prefix" -path '*/cmake/switchyard/switchyard-config.cmake' | head -n1)
[[ -n $config ]] || fail "switchyard-config.cmake not installed"
[[ -f $(dirname "$config")/switchyard-config-version.cmake ]] || fail "config-version missing"
[[ -f $(dirname "$config")/switchyardTargets.cmake ]] || fail "switchyardTargets.cmake missing"
pc=$(find "$prefix" -name switchyard.pc | head -n1)
[[ -n $pc ]] || fail "switchyard.pc not installed"
lib=$(find "$prefix" -name 'libswitchyard.so' | head -n1)
[[ -n $lib ]] || fail "libswitchyard.so not installed"
libdir=$(dirname "$lib")
[[ -d $prefix/share/doc/switchyard ]] || fail "share/doc/switchyard missing"
# SONAME: major.minor before 1.0 (a 0.x minor may change the ABI), the major from 1.0 on.
real_lib=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
lib_version=$(basename "$(readlink -f "$lib")" | sed 's/^libswitchyard\.so\.//')
IFS=. read -r v_major v_minor _ <<< "$lib_version"
expected_soname=libswitchyard.so.$v_major
(( v_major == 0 )) && expected_soname=libswitchyard.so.$v_major.$v_minor
[[ $real_lib == "$expected_soname" ]] || fail "SONAME '$real_lib', expected $expected_soname"
[[ -e $libdir/$real_lib ]] || fail "no $real_lib next to libswitchyard.so"
echo "   config: ${config#"$prefix"/}  pc: ${pc#"$prefix"/}  lib: ${lib#"$prefix"/}"

# Installed programs start without LD_LIBRARY_PATH (their run path finds the library) and
# work: a byte-checked loopback run of swy-perf, the configuration table of swy-info.
for tool in swy-perf swy-info; do
  [[ -x $prefix/bin/$tool ]] || fail "bin/$tool not installed"
done
env -u LD_LIBRARY_PATH "$prefix/bin/swy-perf" --tls self --sizes 8,8K,1M --iters 5 --warmup 1 \
  --check > "$tmp/swy-perf.log" 2>&1 || {
  cat "$tmp/swy-perf.log"
  fail "installed bin/swy-perf did not run without LD_LIBRARY_PATH (run path: $(readelf -d \
    "$prefix/bin/swy-perf" | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p'))"
}
env -u LD_LIBRARY_PATH "$prefix/bin/swy-info" -c > "$tmp/swy-info.log" 2>&1 || {
  cat "$tmp/swy-info.log"
  fail "installed bin/swy-info -c failed"
}
echo "   installed swy-perf and swy-info run without LD_LIBRARY_PATH"

echo "== consumer via find_package(switchyard)"
cmake -S "$consumer_src" -B "$tmp/cmake-consumer" \
  -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
  -DCMAKE_C_FLAGS="${SWY_CONSUMER_CFLAGS:-}" \
  -DCMAKE_EXE_LINKER_FLAGS="${SWY_CONSUMER_CFLAGS:-}" > "$tmp/configure.log" || {
  cat "$tmp/configure.log"
  fail "configuring the consumer failed"
}
# It must have found the scratch install, not some other switchyard on the system.
found_dir=$(sed -n 's/^switchyard_DIR:[A-Z]*=//p' "$tmp/cmake-consumer/CMakeCache.txt")
[[ $found_dir == "$prefix"/* ]] || fail "find_package found '$found_dir', not the install in $prefix"
cmake --build "$tmp/cmake-consumer" > "$tmp/build.log" || {
  cat "$tmp/build.log"
  fail "building the find_package consumer failed"
}
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$tmp/cmake-consumer/swy-consumer" || fail "find_package consumer did not run cleanly"

echo "== consumer via pkg-config"
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
pkg-config --exists --print-errors switchyard || fail "pkg-config cannot read switchyard.pc"
version=$(pkg-config --modversion switchyard)
if [[ -n "${SWY_EXPECTED_VERSION:-}" && $version != "$SWY_EXPECTED_VERSION" ]]; then
  fail "pkg-config version $version, expected $SWY_EXPECTED_VERSION"
fi
read -r -a pc_flags <<< "$(pkg-config --cflags --libs switchyard)"
echo "   pkg-config --cflags --libs switchyard: ${pc_flags[*]}"
inc_ok=0
for flag in "${pc_flags[@]}"; do
  # The .pc file locates the prefix relative to itself (${pcfiledir}/../..): resolve it.
  if [[ $flag == -I* && $(realpath -m "${flag#-I}") == "$(realpath "$prefix")/include" ]]; then
    inc_ok=1
  fi
done
(( inc_ok )) || fail "pkg-config include dir is not $prefix/include"
"$cc" -std=c99 -Wall -Wextra -Wpedantic -Werror "${extra_flags[@]}" \
  -DSWY_EXPECTED_VERSION="\"$version\"" \
  "$consumer_src/main.c" -o "$tmp/pc-consumer" "${pc_flags[@]}" || fail "pkg-config build failed"
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$tmp/pc-consumer" || fail "pkg-config consumer did not run cleanly"

echo "== examples via find_package(switchyard)"
cmake -S "$examples_src" -B "$tmp/cmake-examples" \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
  -DCMAKE_C_FLAGS="${SWY_CONSUMER_CFLAGS:-}" -DCMAKE_CXX_FLAGS="${SWY_CONSUMER_CFLAGS:-}" \
  -DCMAKE_EXE_LINKER_FLAGS="${SWY_CONSUMER_CFLAGS:-}" > "$tmp/examples-configure.log" || {
  cat "$tmp/examples-configure.log"
  fail "configuring the examples failed"
}
cmake --build "$tmp/cmake-examples" > "$tmp/examples-build.log" 2>&1 || {
  cat "$tmp/examples-build.log"
  fail "building the examples with find_package failed"
}
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  bash "$examples_src/run-examples.sh" "$tmp/cmake-examples" || fail "an example (find_package) failed"

echo "== examples via pkg-config"
mkdir -p "$tmp/pc-examples"
for example in pingpong epoll_loop listener_server listener_client; do
  "$cc" -std=c99 -Wall -Wextra -Werror "${extra_flags[@]}" "$examples_src/$example.c" \
    -o "$tmp/pc-examples/$example" "${pc_flags[@]}" || fail "pkg-config build of $example.c failed"
done
"$cxx" -std=c++17 -Wall -Wextra -Werror "${extra_flags[@]}" "$examples_src/cxx_rma_am.cpp" \
  -o "$tmp/pc-examples/cxx_rma_am" "${pc_flags[@]}" || fail "pkg-config build of cxx_rma_am.cpp failed"
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  bash "$examples_src/run-examples.sh" "$tmp/pc-examples" || fail "an example (pkg-config) failed"

echo "check-install: PASS (find_package and pkg-config consumers and examples built and ran, version $version)"
