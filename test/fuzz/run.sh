#!/usr/bin/env bash
# test/fuzz/run.sh [SECONDS] [TARGET...]: build the libFuzzer targets with clang in their own
# tree and fuzz each for SECONDS (default 20), starting from seeds made by the library's own
# encoders plus the committed corpus (test/fuzz/corpus/<target>/). Fails on the first crash,
# leak, sanitizer report or timeout, leaving the reproducer in the build tree's artifacts/
# directory (commit it to test/fuzz/corpus/<target>/ once fixed: the replay test keeps it).
# Environment: SWY_FUZZ_BUILD (build dir, default build-fuzz), SWY_FUZZ_JOBS (default 2).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-20}
shift || true
targets=("$@")
(( ${#targets[@]} )) || targets=(address tcp_stream worker_am conn_wire rkey)
build=${SWY_FUZZ_BUILD:-$root/build-fuzz}
jobs=${SWY_FUZZ_JOBS:-2}

for tool in clang-14 clang++-14; do
  command -v "$tool" >/dev/null || { echo "fuzz: $tool not found (scripts/install-deps.sh)" >&2; exit 1; }
done
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
# Only what the targets need: no MPI component, PMIx or verbs (whose header trips clang's
# -Wdeprecated-enum-enum-conversion under -Werror), no benchmarks.
CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Debug -DSWY_BUILD_FUZZ=ON -DSWY_WITH_OMPI=OFF -DSWY_WITH_PMIX=OFF \
  -DSWY_WITH_VERBS=OFF -DSWY_BUILD_BENCH=OFF -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
nice cmake --build "$build" -j "$jobs" --target fuzz_gen_seeds $(printf 'fuzz_%s ' "${targets[@]}")

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t
  artifacts=$build/artifacts/$t
  mkdir -p "$corpus" "$artifacts"
  "$build/bin/fuzz_gen_seeds" "$t" "$corpus"
  dirs=("$corpus")
  [[ -d $root/test/fuzz/corpus/$t ]] && dirs+=("$root/test/fuzz/corpus/$t")
  echo "fuzz: $t for ${seconds}s"
  # -timeout: one input taking over 10 s is a hang; -rss_limit_mb guards the machine.
  if ! "$build/bin/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -max_len=4096 -print_final_stats=1 -artifact_prefix="$artifacts/" "${dirs[@]}" \
       >"$build/fuzz_$t.log" 2>&1; then
    echo "fuzz: $t FAILED; log $build/fuzz_$t.log, reproducer in $artifacts/" >&2
    tail -n 60 "$build/fuzz_$t.log" >&2
    status=1
  else
    grep -E '^stat::number_of_executed_units|^Done' "$build/fuzz_$t.log" | tr '\n' ' '
    echo
  fi
done
exit $status
