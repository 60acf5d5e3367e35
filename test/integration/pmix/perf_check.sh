#!/usr/bin/env bash
# perf_check.sh SWY_PERF: `swy-perf --test lat --check` over every power of two from 0 to
# 1 MiB with two ranks started by mpirun (rank 0 the server, rank 1 the client). Passes only
# if swy-perf succeeds (--check verified every byte) and reports one row per size.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$here/mpirun.sh" 2 "$1" --test lat --check --sizes 0:1M --iters 20 --warmup 2 --csv >"$out"
rc=$?
cat "$out"
if (( rc != 0 )); then
  echo "perf_check: swy-perf under mpirun failed (exit $rc)" >&2
  exit "$rc"
fi
rows=$(grep -c '^lat,' "$out")
if (( rows != 22 )); then  # 0, 1, 2, 4, ..., 1M
  echo "perf_check: expected 22 result rows (sizes 0..1M), got $rows" >&2
  exit 1
fi
echo "perf_check: 22 sizes checked byte by byte under mpirun"
