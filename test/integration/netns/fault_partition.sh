#!/usr/bin/env bash
# A partition with neighbours: two hosts with two ranks each (shm inside a host, tcp between).
# Host 1's link goes down mid-exchange: every rank must blame exactly the two ranks of the
# other host, never its neighbour, and keep exchanging with its neighbour over shm to the end.
# usage: fault_partition.sh BUILD_BIN_DIR
set -uo pipefail
source "$(dirname "$0")/netns_lib.sh"
netns_bin_dir "${1:-}"
netns_setup 2

iters=24
export SWY_TCP_KEEPALIVE=1s SWY_TCP_USER_TIMEOUT=3s
NETNS_PLACEMENT=(0 0 1 1)
netns_log "alltoall, ranks 0,1 on host 0 and 2,3 on host 1, 256K/1M/4M messages, $iters iterations"
netns_exchange part 4 --pattern alltoall --sizes 256K,1M,4M --iters "$iters" --tolerate-failures \
  --timeout 20
netns_exchange_go part
expect=("1=shm 2=tcp 3=tcp" "0=shm 2=tcp 3=tcp" "0=tcp 1=tcp 3=shm" "0=tcp 1=tcp 2=shm")
for r in 0 1 2 3; do
  grep -q "^rank $r: connected.*transports: ${expect[$r]}\$" "$NETNS_TMP/part.rank$r.log" ||
    netns_fail "rank $r: expected transports '${expect[$r]}'"
done
netns_wait_line "$NETNS_TMP/part.rank0.log" "^rank 0: iteration 4/" 40 || netns_fail "no progress"
netns_link_down 1
netns_log "link of host 1 down"

netns_exchange_wait part 60
netns_assert_blamed part 0 "2 3" "1"
netns_assert_blamed part 1 "2 3" "0"
netns_assert_blamed part 2 "0 1" "3"
netns_assert_blamed part 3 "0 1" "2"
netns_log "PASS"
