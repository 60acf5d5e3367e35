#!/usr/bin/env bash
# Install what building and testing Switchyard needs, from Debian 12's own repositories.
# Idempotent: installs only what is missing, and runs `apt-get update` only then.
# Uses sudo only when not already root.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  libhwloc-dev hwloc
  libibverbs-dev rdma-core
  libpmix-dev
  libssl-dev
  openmpi-bin libopenmpi-dev
  iproute2 nftables
  clang-14 libclang-rt-14-dev clang-format
  librdmacm-dev ibverbs-utils
  ucx-utils libucx-dev
  python3
  mpich libmpich-dev
)

# MPICH (for the UCP compatibility library's tests, contrib/ucp) installs beside Open MPI;
# Open MPI stays what `mpicc`/`mpirun` name (MPICH is `mpicc.mpich`/`mpirun.mpich`).
# Debian's alternatives already prefer Open MPI; pin them so an MPICH install cannot switch.
prefer_openmpi() {
  local name target sudo=()
  [[ $(id -u) -ne 0 ]] && sudo=(sudo)
  for name in mpi mpirun; do
    target=/usr/bin/mpicc.openmpi
    [[ $name == mpirun ]] && target=/usr/bin/mpirun.openmpi
    [[ -x $target ]] || continue
    if [[ $(readlink -f "/etc/alternatives/$name" 2>/dev/null) != "$target" ]] ||
       update-alternatives --query "$name" 2>/dev/null | grep -q '^Status: auto'; then
      "${sudo[@]}" update-alternatives --quiet --set "$name" "$target" || true
    fi
  done
}

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: this script needs a Debian/Ubuntu system (dpkg and apt-get)" >&2
  exit 1
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  if [[ "$status" != "installed" ]]; then
    missing+=("$pkg")
  fi
done

if (( ${#missing[@]} == 0 )); then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  prefer_openmpi
  exit 0
fi

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-deps: missing packages (${missing[*]}) and not root, and sudo is not available" >&2
    exit 1
  fi
  SUDO=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-deps: installing ${missing[*]}"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}"
prefer_openmpi
echo "install-deps: done"
