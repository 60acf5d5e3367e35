#!/usr/bin/env bash
# Build the pml swy example programs with mpicc and run each over pml swy; exit 1 if any
# fails. Usage: contrib/ompi/examples/run.sh <builddir>   (default: build)
# The programs check their results themselves (payloads byte for byte, statuses, errors).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
ours="$build/lib/openmpi"
[[ -f "$ours/mca_pml_swy.so" ]] || { echo "run.sh: $ours/mca_pml_swy.so not built" >&2; exit 1; }
theirs=$(ompi_info --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run() { # np program [args]
  local np=$1; shift
  local log="$out/$1.$np.log"
  if timeout 300 mpirun --oversubscribe -np "$np" --mca pml swy --mca btl self \
       --mca mca_base_component_path "$ours:$theirs" --mca pml_swy_verbose 1 ${SWY_TLS:+-x SWY_TLS} \
       "$out/$@" >"$log" 2>&1 && [[ $(grep -c "pml swy selected" "$log") -eq $np ]]; then
    echo "PASS  $1 (np $np${SWY_TLS:+, SWY_TLS=$SWY_TLS})"
  else
    echo "FAIL  $1 (np $np${SWY_TLS:+, SWY_TLS=$SWY_TLS})"; tail -20 "$log"; failed=1
  fi
}
failed=0
for p in pingpong features collectives threads latency rma; do
  mpicc -O2 -Wall -Werror -o "$out/$p" "$here/$p.c" -lpthread
done
run 2 pingpong
run 2 features
run 4 features
run 5 features
run 2 collectives
run 4 collectives
run 8 collectives
run 2 threads
# one-sided: osc swy is the default under pml swy
run 2 rma
run 4 rma
# the same over Switchyard's tcp transport (what crosses hosts)
export SWY_TLS=tcp,self
run 2 pingpong
run 4 features
RMA_NO_SHARED=1 run 4 rma
run 5 features
run 4 collectives
exit $failed
