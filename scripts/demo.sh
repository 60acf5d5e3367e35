#!/usr/bin/env bash
# Two-minute tour: install dependencies, build Release, then measure shared-memory latency
# and bandwidth between two processes pinned to CPUs 0 and 1, for sizes 1 B .. 4 MiB.
# swy-perf prints, for each size, the latency or bandwidth and the protocol that carried it
# (eager_short = PIO, eager_bcopy, rndv ...). SWY_SKIP_DEPS=1 skips the dependency step.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

if [[ "${SWY_SKIP_DEPS:-0}" != 1 ]]; then
  scripts/install-deps.sh
fi
scripts/build.sh Release build

PERF=build/bin/swy-perf
if [[ ! -x "$PERF" ]]; then
  echo "demo.sh: $PERF was not built" >&2
  exit 1
fi

CPUS=0,1
if (( $(nproc) < 2 )); then
  CPUS=0,0  # one CPU: both processes share it (latency numbers will suffer)
  echo "demo.sh: only one CPU available; pinning both processes to CPU 0"
fi

echo
echo "==> Latency over shared memory (ping-pong, half round trip)"
"$PERF" --test lat --tls shm,cma --sizes 1:4M --cpus "$CPUS"
echo
echo "==> Bandwidth over shared memory (windowed streaming)"
"$PERF" --test bw --tls shm,cma --sizes 1:4M --cpus "$CPUS"
