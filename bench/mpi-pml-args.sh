# Sourced by the MPI comparison scripts (compare-mpi.sh, compare-mpi-mbw.sh,
# compare-alltoall.sh, callgrind-mpi.sh): the mpiexec arguments that select one PML, so that
# every script compares the same configurations.
#
# pml_args NAME prints them for NAME:
#   swy   pml swy of this build ($build)
#   base  pml swy of another build ($base_build, with its library first on the path)
#   ob1   pml ob1 over btl vader
#   ucx   pml ucx over UCX's shared memory
# Needs $build and $pkglibdir (Open MPI's component folder) set by the caller.
# shellcheck shell=bash

# shellcheck disable=SC2154 # build, base_build and pkglibdir are the sourcing script's
pml_args() {
  case "$1" in
    swy) echo "--mca pml swy --mca btl self --mca mca_base_component_path $build/lib/openmpi:$pkglibdir" ;;
    base) echo "--mca pml swy --mca btl self --mca mca_base_component_path $base_build/lib/openmpi:$pkglibdir -x LD_LIBRARY_PATH=$base_build/lib" ;;
    ob1) echo "--mca pml ob1 --mca btl self,vader" ;;
    ucx) echo "--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=sm,self" ;;
    *) echo "unknown PML $1" >&2; return 1 ;;
  esac
}
