#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and driver: build, run the CUDA memory-type tests and a
# swy-perf sweep with CUDA buffers. One command: test/gpu/run.sh [builddir]
# Exits non-zero if the driver is missing, a test fails or a transfer fails its check.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-gpu}

if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  echo "test/gpu/run.sh: libcuda.so.1 not found: this machine has no NVIDIA driver" >&2
  exit 1
fi
command -v nvidia-smi >/dev/null && nvidia-smi -L

echo "== build ($build)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWY_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" --target unit_tests swy-perf -j"$(nproc)"

echo "== CUDA plugin tests"
SWY_MEMTYPES=host,cuda "$build/bin/unit_tests" --gtest_filter='Cuda*:MemType*:RangeCache*:Dmabuf*:Simdev*'

echo "== swy-perf sweeps with CUDA buffers (payload checked)"
for mt in cuda host:cuda cuda:host; do
  for test in lat bw; do
    echo "-- --memtype $mt --test $test"
    "$build/bin/swy-perf" --memtype "$mt" --test "$test" --sizes 1:64M --check --iters 50 \
      --cpus 0,1
  done
done
echo "test/gpu/run.sh: PASS"
