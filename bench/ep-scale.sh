#!/usr/bin/env bash
# Endpoint scale against UCX and ob1 (issue #18), interleaved so both see the same load:
#   - idle cost of N endpoints (1, 100, 1000, 10000) from one worker to one worker in another
#     process, shm and tcp: swy_ep_idle_cost vs ucx_ep_idle_cost (ucp_ep_create, UCX_TLS=sm or
#     tcp), one process per measurement; each also times 1 024 endpoints wired up (best of 3);
#   - MPI_Init time and per-peer descriptors/mappings at NP ranks: pml swy vs ob1, best of REPS.
# At the end, a summary: heap bytes per idle endpoint (created, before any message; tcp:
# connected or still connecting, whichever it is after 100 progress calls) for Switchyard
# and UCX side by side, and their ratio (target: <= 2048 B per idle endpoint).
# Usage: bench/ep-scale.sh [builddir] (default build); NP (16), REPS (3), COUNTS override;
# LIMIT (600): seconds one measurement may take before it is reported as failed.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
counts=${COUNTS:-"1 100 1000 10000"}
limit=${LIMIT:-600}
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
np=${NP:-16}
reps=${REPS:-3}
bin=$build/bin
[[ -x $bin/swy_ep_idle_cost ]] || bin=$build/bench
swy=$bin/swy_ep_idle_cost
ucx=$bin/ucx_ep_idle_cost
echo "# load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
echo "#        N     rss B/ep    heap B/ep     fds/ep    maps/ep create us/ep"
for tr in shm tcp; do
  for n in $counts; do
    # Figures only: UCX logs its errors (out of descriptors at 10 000 tcp endpoints) on stdout.
    mine=$(timeout "$limit" "$swy" "$tr" "$n" 2>/dev/null | grep -E '^ +[0-9]' || true)
    echo "${mine:-  swy $n: failed}   (Switchyard $tr)"
    theirs=""
    if [[ -x $ucx ]]; then
      utls=$([[ $tr == shm ]] && echo sm,self || echo tcp,self)
      theirs=$(UCX_TLS=$utls timeout "$limit" "$ucx" "$n" 2>/dev/null | grep -E '^ +[0-9]' || true)
      echo "${theirs:-  ucx $n: failed}"
    fi
    # transport N swy-heap swy-fds ucx-heap ucx-fds swy-rss ucx-rss ("-": no figure)
    echo "$tr $n $(awk '{print $3, $4}' <<<"${mine:--  -  -}") $(awk '{print $3, $4}' <<<"${theirs:--  -  -}")" \
      "$(awk '{print $2}' <<<"${mine:--  -}") $(awk '{print $2}' <<<"${theirs:--  -}")" >>"$summary"
  done
  echo "# 1024 endpoints wired up, $tr:"
  "$swy" "$tr" 1 2>/dev/null | grep 'wired up' | sed 's/^/#   Switchyard /'
  [[ -x $ucx ]] && UCX_TLS=$([[ $tr == shm ]] && echo sm,self || echo tcp,self) "$ucx" 1 2>/dev/null |
    grep 'wired up' | sed 's/^/#   UCX /'
done
# UCX takes much of its endpoint memory from its own mmap'ed pools, which the heap figure
# does not see: compare RSS with UCX, heap between Switchyard versions.
echo "# bytes per idle endpoint (target <= 2048), Switchyard vs UCX in this run:"
echo "# transport        N  swy heap  swy RSS  UCX heap  UCX RSS  RSS swy/UCX  swy fds  UCX fds"
awk '{ r = ($7 != "-" && $8 != "-" && $8 > 0) ? sprintf("%12.2f", $7 / $8) : "           -";
       printf "  %-9s %8s %9s %8s %9s %8s %s %8s %8s\n", $1, $2, $3, $7, $5, $8, r, $4, $6 }' \
  "$summary"
init=$bin/swy_mpi_init_cost
if [[ -x $init && -f $build/lib/openmpi/mca_pml_swy.so ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  theirs=$(ompi_info --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')
  for ((i = 0; i < reps; ++i)); do
    for pml in ob1 swy; do
      if [[ $pml == swy ]]; then
        args=(--mca pml swy --mca btl self --mca mca_base_component_path "$build/lib/openmpi:$theirs")
      else
        args=(--mca pml ob1 --mca btl self,vader)
      fi
      echo "$pml $(mpirun --oversubscribe -np "$np" "${args[@]}" "$init" 2>/dev/null | grep '^np')"
    done
  done
fi
