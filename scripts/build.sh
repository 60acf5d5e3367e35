#!/usr/bin/env bash
# Configure and build Switchyard.
#
#   scripts/build.sh [Release|Debug|asan|tsan] [builddir] [extra cmake -D options...]
#
#   Release (default)  optimised build in build/
#   Debug              -O0 -g in build-debug/
#   asan               AddressSanitizer + UBSan (-DSWY_WITH_SANITIZERS=ON) in build-asan/
#   tsan               ThreadSanitizer (-DSWY_WITH_TSAN=ON) in build-tsan/
#
# Uses Ninja when it is installed (an existing build directory keeps its generator).
# Executables land in <builddir>/bin. Honours $JOBS (default: nproc).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() {
  sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

flavor=${1:-Release}
case "$flavor" in
  -h|--help) usage; exit 0 ;;
  Release|release) build_type=Release; san=(); default_dir=build ;;
  Debug|debug) build_type=Debug; san=(); default_dir=build-debug ;;
  asan|ASan|ASAN) build_type=RelWithDebInfo; san=(-DSWY_WITH_SANITIZERS=ON -DSWY_WITH_TSAN=OFF); default_dir=build-asan ;;
  tsan|TSan|TSAN) build_type=RelWithDebInfo; san=(-DSWY_WITH_TSAN=ON -DSWY_WITH_SANITIZERS=OFF); default_dir=build-tsan ;;
  *) echo "build.sh: unknown build flavour '$flavor'" >&2; usage >&2; exit 2 ;;
esac
dir=${2:-$default_dir}
extra=("${@:3}")

generator=()
if [[ ! -f "$dir/CMakeCache.txt" ]] && command -v ninja >/dev/null 2>&1; then
  generator=(-G Ninja)
fi

jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

echo "build.sh: configuring $flavor ($build_type) in $dir"
cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE="$build_type" "${san[@]}" "${extra[@]}"
echo "build.sh: building in $dir with $jobs jobs"
cmake --build "$dir" --parallel "$jobs"
echo "build.sh: done; executables are in $dir/bin"
