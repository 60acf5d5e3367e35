#!/usr/bin/env bash
# All-to-all scaling: MPI_Alltoall over pml swy vs pml ob1 (btl vader) vs pml ucx (UCX sm),
# from 2 ranks up to many more ranks than cores (oversubscribed), at 8 B and 64 KiB per peer,
# with bench/osu/osu_alltoall.c (bin/swy_osu_alltoall).
#
#   bench/compare-alltoall.sh [builddir]
#
# The PMLs run interleaved (for each round, each rank count: swy, ob1, ucx), so a change of
# machine load hits all alike; each (ranks, size, PML) keeps its best median over the rounds
# (the median of one call, the largest over the ranks: bench/osu/osu_alltoall.c). The table
# gives swy / best(ob1, ucx): below 1 swy is faster. A second table gives the CPU time of one
# call summed over the ranks (best over the rounds), which a loaded machine disturbs less.
# Not part of CI: it takes minutes and the numbers mean something only beside each other; the
# load at start and end is printed.
#
# Environment: RANKS (default "2 4 8 16 32 64"); SIZES (default 8,64K); ROUNDS (default 3);
# ITERS (timed calls per size, default 2000/ranks, at least 10); PMLS (default "swy ob1 ucx");
# TIMEOUT (seconds per run, default 600); OUT (raw outputs, default a kept temp dir); MPIEXEC;
# BASE_BUILD: the build directory of another version of Switchyard, run as PML "base" (pml
# swy from there, its libswitchyard first in LD_LIBRARY_PATH) and added to PMLS: before/after
# tables in one run.
# Ranks are not pinned (--oversubscribe lets Open MPI yield when idle, as it does for any
# oversubscribed job); SWY_* variables pass through to pml swy (e.g. SWY_OVERSUBSCRIBED=no to
# see the choice without the oversubscription rule).
set -euo pipefail

if [[ ${1:-} == -h || ${1:-} == --help ]]; then sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
build=$(cd "${1:-build}" && pwd)
read -ra ranks_list <<<"${RANKS:-2 4 8 16 32 64}"
read -ra pmls <<<"${PMLS:-swy ob1 ucx}"
base=${BASE_BUILD:+$(cd "$BASE_BUILD" && pwd)}
[[ -n $base ]] && pmls=(base "${pmls[@]}")
sizes=${SIZES:-8,64K}
rounds=${ROUNDS:-3}
limit=${TIMEOUT:-600}
mpiexec=${MPIEXEC:-mpiexec}
for f in bin/swy_osu_alltoall lib/openmpi/mca_pml_swy.so; do
  if [[ ! -e $build/$f ]]; then
    echo "compare-alltoall: $build/$f is missing; build the tree first (docs/mpi.md)" >&2
    exit 1
  fi
done
pkglibdir=$(ompi_info --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')
out=${OUT:-$(mktemp -d /tmp/compare-alltoall.XXXXXX)}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

base_build=${base:-}
# shellcheck source=bench/mpi-pml-args.sh
source "$(dirname "${BASH_SOURCE[0]}")/mpi-pml-args.sh"
# Every SWY_* variable of this shell, for pml swy's ranks.
swy_env=()
while IFS='=' read -r name _; do swy_env+=(-x "$name"); done < <(env | grep '^SWY_' || true)

echo "compare-alltoall: ranks ${ranks_list[*]}, sizes $sizes, $rounds rounds, $(nproc) cores, raw output in $out"
echo "compare-alltoall: load at start: $(uptime | sed 's/.*load average/load average/')"
for ((r = 1; r <= rounds; ++r)); do
  for n in "${ranks_list[@]}"; do
    iters=${ITERS:-$(( 2000 / n > 10 ? 2000 / n : 10 ))}
    for pml in "${pmls[@]}"; do
      file=$out/$n.$pml.$r
      start=$SECONDS
      extra=()
      [[ $pml == swy || $pml == base ]] && extra=("${swy_env[@]}")
      # shellcheck disable=SC2046 # the MCA arguments are meant to split into words
      if UCX_TLS=sm,self timeout "$limit" "$mpiexec" -n "$n" --oversubscribe $(pml_args "$pml") \
           "${extra[@]}" "$build/bin/swy_osu_alltoall" -S "$sizes" -i "$iters" -I "$iters" \
           -x 3 -X 3 >"$file" 2>"$file.err"; then
        status=ok
      else
        status="FAILED (see $file.err)"
        : >"$file"
      fi
      echo "round $r/$rounds: $n ranks, pml $pml: $status, $((SECONDS - start)) s"
    done
  done
done
echo "compare-alltoall: load at end: $(uptime | sed 's/.*load average/load average/')"

# table COLUMN TITLE: rows "ranks size pml value" of swy_osu_alltoall's column COLUMN (best
# over rounds), then one table line per (ranks, size).
table() {
echo "# $2"
for n in "${ranks_list[@]}"; do
  for pml in "${pmls[@]}"; do
    cat "$out/$n.$pml".[0-9]* 2>/dev/null |
      awk -v n="$n" -v p="$pml" -v c="$1" '/^[0-9]/ && NF >= c { if (!($1 in b) || $c < b[$1]) b[$1] = $c }
                                            END { for (s in b) print n, s, p, b[s] }'
  done
done | awk -v pmls="${pmls[*]}" '
  BEGIN { np = split(pmls, P, " ") }
  { v[$1, $2, $3] = $4; key = $1 " " $2; if (!(key in seen)) { seen[key] = 1; order[++k] = key } }
  END {
    printf "%-6s %-8s", "# ranks", "size"
    for (i = 1; i <= np; ++i) printf " %12s", P[i] " (us)"
    for (i = 1; i <= np; ++i) if (P[i] == "swy" || P[i] == "base") printf " %10s", P[i] "/best"
    printf "\n"
    for (j = 1; j <= k; ++j) {
      split(order[j], f, " "); best = ""
      printf "%-7s %-8s", f[1], f[2]
      for (i = 1; i <= np; ++i) {
        x = ((f[1], f[2], P[i]) in v) ? v[f[1], f[2], P[i]] : ""
        printf " %12s", x == "" ? "-" : x
        if (P[i] != "swy" && P[i] != "base" && x != "" && (best == "" || x + 0 < best + 0)) best = x
      }
      for (i = 1; i <= np; ++i) {
        if (P[i] != "swy" && P[i] != "base") continue
        s = ((f[1], f[2], P[i]) in v) ? v[f[1], f[2], P[i]] : ""
        printf " %10s", (s == "" || best == "" || best + 0 == 0) ? "-" : sprintf("%.2f", s / best)
      }
      printf "\n"
    }
  }'
}
{
  table 2 "median time of one call (us), the largest over the ranks"
  # With more ranks than cores the cores never idle: a call takes at least its CPU time over
  # the cores, and CPU time moves far less with the machine's other load than the clock.
  table 5 "CPU time of one call (us), summed over the ranks"
} | tee "$out/table.txt"
