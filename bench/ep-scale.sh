#!/usr/bin/env bash
# Endpoint scale against UCX and ob1 (issue #18), interleaved so both see the same load:
#   - idle cost of N endpoints (1, 100, 1000, 10000) from one worker to one worker in another
#     process, shm and tcp: swy_ep_idle_cost vs ucx_ep_idle_cost (ucp_ep_create, UCX_TLS=sm or
#     tcp), one process per measurement; each also times 1 024 endpoints wired up (best of 3);
#   - MPI_Init time and per-peer descriptors/mappings at NP ranks: pml swy vs ob1, best of REPS.
# Usage: bench/ep-scale.sh [builddir] (default build); NP (16), REPS (3), COUNTS override.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
counts=${COUNTS:-"1 100 1000 10000"}
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
    "$swy" "$tr" "$n" 2>/dev/null | grep -v '^#' | sed "s/\$/   (Switchyard $tr)/"
    if [[ -x $ucx ]]; then
      utls=$([[ $tr == shm ]] && echo sm,self || echo tcp,self)
      UCX_TLS=$utls "$ucx" "$n" 2>/dev/null | grep -v '^#' || echo "  ucx $n: failed"
    fi
  done
  echo "# 1024 endpoints wired up, $tr:"
  "$swy" "$tr" 1 2>/dev/null | grep 'wired up' | sed 's/^/#   Switchyard /'
  [[ -x $ucx ]] && UCX_TLS=$([[ $tr == shm ]] && echo sm,self || echo tcp,self) "$ucx" 1 2>/dev/null |
    grep 'wired up' | sed 's/^/#   UCX /'
done
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
