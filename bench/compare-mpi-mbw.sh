#!/usr/bin/env bash
# Multi-pair bandwidth and message rate of Open MPI over pml swy against ob1 (btl vader) and
# ucx (UCX_TLS=sm,self): bench/osu's swy_osu_mbw_mr with NP ranks (rank i streams to
# i + NP/2), the components interleaved round after round, best of the rounds per size.
#
#   bench/compare-mpi-mbw.sh [builddir]
#
# Environment: NP (ranks, even; default 4), ROUNDS (default 5), MBW_ARGS (extra arguments of
# swy_osu_mbw_mr, e.g. "-m 1:64K"), OUT (raw outputs; default a kept temp dir), MPIEXEC,
# SWY_BASE: a second pml swy to compare with in the same run (a directory holding
# lib/openmpi/mca_pml_swy.so and the lib/libswitchyard.so* it was built with, e.g. a copy of
# another build's lib/): its column is "base", and the table gains base/best.
# The ranks are not bound (--bind-to none, --oversubscribe): with NP above the core count
# the scheduler places them, the same for every component. Prints MB/s per size and
# swy / best(ob1, ucx); the targets of issue 17 ask >= 0.8 at every size with 4 ranks.
# Not run by CI: numbers mean something only on a quiet machine (the load is printed).
set -euo pipefail

build=${1:-build}
build=$(cd "$build" && pwd)
np=${NP:-4}
rounds=${ROUNDS:-5}
mpiexec=${MPIEXEC:-mpiexec}
out=${OUT:-$(mktemp -d /tmp/compare-mpi-mbw.XXXXXX)}
mkdir -p "$out"
for f in lib/openmpi/mca_pml_swy.so bin/swy_osu_mbw_mr; do
  if [[ ! -e $build/$f ]]; then
    echo "compare-mpi-mbw: $build/$f is missing; build the tree first (docs/mpi.md)" >&2
    exit 1
  fi
done
if (( np < 2 || np % 2 != 0 )); then
  echo "compare-mpi-mbw: NP must be even and at least 2 (got $np)" >&2
  exit 1
fi
pkglibdir=$(ompi_info --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

components=(swy ob1 ucx)
[[ -n ${SWY_BASE:-} ]] && components=(base swy ob1 ucx)
base_build=${SWY_BASE:-}
# shellcheck source=bench/mpi-pml-args.sh
source "$(dirname "${BASH_SOURCE[0]}")/mpi-pml-args.sh"

echo "compare-mpi-mbw: $np ranks, $rounds rounds, raw output in $out"
echo "compare-mpi-mbw: load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; ++r)); do
  for c in "${components[@]}"; do
    rc=0
    # shellcheck disable=SC2046,SC2086 # the MCA and extra arguments are meant to split
    UCX_TLS=sm,self timeout 600 "$mpiexec" -n "$np" --oversubscribe --bind-to none $(pml_args "$c") \
      "$build/bin/swy_osu_mbw_mr" ${MBW_ARGS:-} >"$out/mbw.$c.$r" 2>"$out/mbw.$c.$r.err" || rc=$?
    (( rc == 0 )) || { : >"$out/mbw.$c.$r"; echo "round $r: $c FAILED (see $out/mbw.$c.$r.err)"; }
  done
  echo "round $r/$rounds done, load $(cut -d' ' -f1-3 /proc/loadavg)"
done

# One row per size: best MB/s of each component, then swy (and base) / best(ob1, ucx).
for c in "${components[@]}"; do
  cat "$out/mbw.$c".[0-9]* 2>/dev/null |
    awk -v c="$c" '/^[0-9]/ { if (!($1 in b) || $2 > b[$1]) b[$1] = $2 } END { for (s in b) print s, c, b[s] }'
done | sort -n -k1,1 | awk -v list="${components[*]}" '
  { v[$1, $2] = $3; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
  function best(s,   a, b) {
    a = ((s, "ob1") in v) ? v[s, "ob1"] : 0; b = ((s, "ucx") in v) ? v[s, "ucx"] : 0
    return a > b ? a : b
  }
  END {
    k = split(list, cs, " ")
    printf "%-9s", "# size"; for (i = 1; i <= k; ++i) printf " %11s", cs[i]
    for (i = 1; i <= k; ++i) if (cs[i] == "swy" || cs[i] == "base") printf " %10s", cs[i] "/best"
    printf "\n"
    for (j = 1; j <= n; ++j) {
      s = order[j]; printf "%-9s", s
      for (i = 1; i <= k; ++i) printf " %11s", ((s, cs[i]) in v) ? v[s, cs[i]] : "-"
      o = best(s)
      for (i = 1; i <= k; ++i) if (cs[i] == "swy" || cs[i] == "base")
        printf " %10s", (o > 0 && (s, cs[i]) in v) ? sprintf("%.2f", v[s, cs[i]] / o) : "-"
      printf "\n"
    }
  }' | tee "$out/table.txt"
echo "compare-mpi-mbw: load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
