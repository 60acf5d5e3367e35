#!/usr/bin/env bash
# mpirun.sh NP PROGRAM [ARGS...]: start NP copies of PROGRAM under Open MPI's mpirun (which
# runs the PMIx server the bootstrap talks to). Exit 77 (ctest: skipped) without mpirun.
set -uo pipefail
np=$1
shift
if ! command -v mpirun >/dev/null 2>&1; then
  echo "mpirun.sh: mpirun not found (Debian: openmpi-bin): skipping" >&2
  exit 77
fi
# Open MPI refuses root unless told; CI containers run as root.
if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# In sanitizer builds: libpmix's own small leaks at exit are not ours (lsan.supp).
here=$(cd "$(dirname "$0")" && pwd)
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$here/lsan.supp:print_suppressions=0"
# --oversubscribe: more ranks than cores on small machines; --bind-to none: oversubscribed
# ranks must not share one core. The timeout turns a hang into a failure with a message.
exec timeout --signal=TERM --kill-after=10 200 \
  mpirun --oversubscribe --bind-to none -np "$np" "$@"
