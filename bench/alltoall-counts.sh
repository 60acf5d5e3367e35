#!/usr/bin/env bash
# What one 64 KiB MPI_Alltoall costs the host in its steady state, per PML, counted rather
# than timed: CPU time, sched_yield calls and context switches per call, summed over the
# ranks, with `perf stat` over a window that starts after start-up (perf stat --delay), so
# MPI_Init, the lazy connections of the first calls (shm segments mapped and prefaulted) and
# MPI_Finalize stay out. The window's number of calls is counted too, not assumed: every PML
# moves each 64 KiB block with one process_vm_readv (rendezvous GET over CMA), so calls =
# readv calls / (ranks x (ranks - 1)). A window that still saw start-up shows mmap calls: its
# row says how many, and should be rerun with a longer DELAY_MS.
#
#   bench/alltoall-counts.sh [builddir]
#
# CPU time is that of every process of the job (mpiexec and helper threads included).
# Environment: RANKS (default "16 32"); ROUNDS (default 3, PMLs interleaved in each);
# ITERS (calls per run, default 16000/ranks); DELAY_MS (window start, default 4000 + 500 per rank);
# PMLS (default "swy ob1 ucx"); SIZE (bytes per peer, default 65536: the size must take the
# CMA rendezvous in every PML, or the call count is wrong; pml swy sends 64 KiB eagerly unless
# the host is oversubscribed, more than SWY_OVERSUBSCRIBED_PER_CORE ranks per core, so with fewer
# ranks set SWY_OVERSUBSCRIBED=yes or pick a size past the rendezvous threshold that
# `swy-info --proto` prints). Needs perf with the syscalls
# tracepoints (linux-perf; root or perf_event_paranoid <= -1). SWY_* variables pass through
# to pml swy. Not part of CI; prints the load at start and end.
set -euo pipefail

if [[ ${1:-} == -h || ${1:-} == --help ]]; then sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
build=$(cd "${1:-build}" && pwd)
read -ra ranks_list <<<"${RANKS:-16 32}"
read -ra pmls <<<"${PMLS:-swy ob1 ucx}"
rounds=${ROUNDS:-3}
size=${SIZE:-65536}
command -v perf >/dev/null || { echo "alltoall-counts: perf missing (apt-get install linux-perf)" >&2; exit 1; }
[[ -e $build/bin/swy_osu_alltoall ]] || { echo "alltoall-counts: $build/bin/swy_osu_alltoall missing" >&2; exit 1; }
pkglibdir=$(ompi_info --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
base_build=
# shellcheck source=bench/mpi-pml-args.sh
source "$(dirname "${BASH_SOURCE[0]}")/mpi-pml-args.sh"
swy_env=()
while IFS='=' read -r name _; do swy_env+=(-x "$name"); done < <(env | grep '^SWY_' || true)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
events=syscalls:sys_enter_process_vm_readv,syscalls:sys_enter_sched_yield,syscalls:sys_enter_mmap,context-switches,task-clock

echo "alltoall-counts: ranks ${ranks_list[*]}, $size B per peer, $rounds rounds, $(nproc) cores"
echo "alltoall-counts: load at start: $(uptime | sed 's/.*load average/load average/')"
printf '%-6s %-5s %-6s %7s %12s %12s %12s  %s\n' "ranks" "pml" "round" "calls" "cpu/call ms" \
    "yields/call" "switch/call" "note"
for ((r = 1; r <= rounds; ++r)); do
  for n in "${ranks_list[@]}"; do
    iters=${ITERS:-$((16000 / n))}
    delay=${DELAY_MS:-$((4000 + 500 * n))}
    for pml in "${pmls[@]}"; do
      extra=()
      [[ $pml == swy ]] && extra=("${swy_env[@]}")
      # shellcheck disable=SC2046 # the MCA arguments are meant to split into words
      if ! UCX_TLS=sm,self perf stat -D "$delay" -x, -e "$events" -o "$tmp/stat" \
          mpiexec -n "$n" --oversubscribe $(pml_args "$pml") "${extra[@]}" \
          "$build/bin/swy_osu_alltoall" -S "$size" -i "$iters" -I "$iters" -x 3 -X 3 \
          >"$tmp/out" 2>&1; then
        echo "alltoall-counts: $n ranks, pml $pml failed:" >&2
        tail -5 "$tmp/out" >&2
        continue
      fi
      awk -F, -v n="$n" -v p="$pml" -v r="$r" '
        $3 ~ /process_vm_readv/ { readv = $1 } $3 ~ /sched_yield/ { y = $1 }
        $3 ~ /mmap/ { mm = $1 } $3 ~ /context-switches/ { cs = $1 } $3 ~ /task-clock/ { ms = $1 }
        END {
          c = readv / (n * (n - 1))
          if (c < 1) { printf "%-6s %-5s %-6s %7s  window saw no call: lower DELAY_MS\n", n, p, r, 0; exit }
          printf "%-6s %-5s %-6s %7.0f %12.2f %12.0f %12.0f  %s\n", n, p, r, c, ms / c, y / c, cs / c,
                 (mm > 0 ? mm " mmap calls in the window (start-up?)" : "")
        }' "$tmp/stat"
    done
  done
done
echo "alltoall-counts: load at end: $(uptime | sed 's/.*load average/load average/')"
