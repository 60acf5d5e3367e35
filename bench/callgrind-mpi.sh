#!/usr/bin/env bash
# Instructions per osu_latency iteration (one blocking MPI_Send and one blocking MPI_Recv of
# 8 bytes on one rank) of pml swy, pml ob1 (btl vader) and pml ucx (UCX_TLS=sm,self), counted
# with callgrind: deterministic where this machine's clock is not (issue #17).
#
# It runs bench/mpi_lat_work.c (swy_mpi_lat_work): rank 0 under callgrind, collecting only
# inside MPI_Send and MPI_Recv, rank 1 natively. Rank 0 waits for the reply outside MPI, so
# its MPI_Recv finds the message on its first progress pass: the count is the software work
# of a message each way (send, post, one progress that matches and completes it), without
# the empty polls whose number depends on the clock. Each PML runs with N and 2N iterations;
# the difference of the two totals divided by N is the work per iteration (connection and
# first-use costs cancel). The figure includes Open MPI's MPI_Send/MPI_Recv wrappers
# (argument checks, about 150 instructions), the same for every PML.
#
# A REPORT only: exits 0 whatever the numbers are (non-zero only if a program is missing).
# A PML that does not run here (no UCX, ...) leaves its row as "n/a".
#
# usage: bench/callgrind-mpi.sh [BUILD_DIR]      (default: build)
# env:   N=1000        iterations of the shorter run (the longer one runs 2N)
#        SIZE=8        message size in bytes
#        PMLS="swy ob1 ucx"
#        MPIEXEC=mpiexec
#        PROFILE_DIR   keep each PML's callgrind output of the 2N run there (for
#                      callgrind_annotate --inclusive=yes DIR/swy.out)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
n=${N:-1000}
size=${SIZE:-8}
read -ra pmls <<<"${PMLS:-swy ob1 ucx}"
mpiexec=${MPIEXEC:-mpiexec}
prog=$build/bin/swy_mpi_lat_work

[[ -x $prog ]] || { echo "callgrind-mpi: no $prog (build target swy_mpi_lat_work)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "callgrind-mpi: valgrind missing (apt-get install valgrind)" >&2; exit 1; }
command -v "$mpiexec" >/dev/null || { echo "callgrind-mpi: no $mpiexec" >&2; exit 1; }
pkglibdir=$(ompi_info --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')

# Open MPI refuses root unless told; CI runs as root in containers.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=bench/mpi-pml-args.sh
source "$(dirname "${BASH_SOURCE[0]}")/mpi-pml-args.sh"

# Instructions rank 0 spent inside MPI_Send/MPI_Recv in one run: count PML ITERS
count() {
    local pml=$1 iters=$2 out=$tmp/$1.$2 args
    args=$(pml_args "$pml") || { echo "callgrind-mpi: unknown PML $pml" >&2; return 1; }
    # shellcheck disable=SC2086 # the MCA arguments are meant to split into words
    if ! timeout 600 "$mpiexec" -n 1 --bind-to none $args \
            valgrind --tool=callgrind --toggle-collect='*MPI_Send' --toggle-collect='*MPI_Recv' \
            --log-file="$out.log" --callgrind-out-file="$out.out" \
            "$prog" -i "$iters" -s "$size" : -n 1 --bind-to none $args "$prog" -i "$iters" -s "$size" \
            >"$out.txt" 2>&1; then
        echo "callgrind-mpi: pml $pml failed to run (last lines follow)" >&2
        tail -5 "$out.txt" >&2
        return 1
    fi
    sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$out.log"
}

echo "# instructions per osu_latency iteration ($size-byte MPI_Send + MPI_Recv on one rank), callgrind, N=$n and $((2 * n))"
declare -A per
for pml in "${pmls[@]}"; do
    if a=$(count "$pml" "$n") && b=$(count "$pml" "$((2 * n))") && [[ -n $a && -n $b ]]; then
        per[$pml]=$(awk -v a="$a" -v b="$b" -v n="$n" 'BEGIN { printf "%.0f", (b - a) / n }')
        if [[ -n ${PROFILE_DIR:-} ]]; then
            mkdir -p "$PROFILE_DIR"
            cp "$tmp/$pml.$((2 * n)).out" "$PROFILE_DIR/$pml.out"
        fi
    else
        per[$pml]=n/a
    fi
    printf "%-40s %8s\n" "pml $pml" "${per[$pml]}"
done
if [[ ${per[swy]:-n/a} != n/a ]]; then
    for pml in "${pmls[@]}"; do
        [[ $pml == swy || ${per[$pml]} == n/a ]] && continue
        awk -v s="${per[swy]}" -v o="${per[$pml]}" -v p="$pml" \
            'BEGIN { printf "%-40s %8.2f\n", "ratio swy/" p, s / o }'
    done
fi
exit 0
