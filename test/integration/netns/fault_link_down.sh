#!/usr/bin/env bash
# Take one host's link down in the middle of an all-to-all: nothing closes the connections,
# so the survivors must notice through TCP keepalive (idle connections) or the user timeout
# (data waiting: SWY_TCP_USER_TIMEOUT=3s), report the failure (SWY_ERR_TIMED_OUT) on their
# endpoint to that rank only, and finish with each other. The cut-off host must blame every
# other rank.
# usage: fault_link_down.sh BUILD_BIN_DIR
set -uo pipefail
source "$(dirname "$0")/netns_lib.sh"
netns_bin_dir "${1:-}"
netns_setup 4

victim=3
iters=24
export SWY_TCP_KEEPALIVE=1s SWY_TCP_USER_TIMEOUT=3s
netns_log "alltoall over 4 hosts, 256K/1M/4M messages, $iters iterations, SWY_TCP_KEEPALIVE=$SWY_TCP_KEEPALIVE"
netns_exchange down 4 --pattern alltoall --sizes 256K,1M,4M --iters "$iters" --tolerate-failures \
  --timeout 20
netns_exchange_go down
netns_wait_line "$NETNS_TMP/down.rank$victim.log" "^rank $victim: iteration 4/" 40 ||
  netns_fail "rank $victim made no progress"
netns_link_down "$victim"
down_ms=$(netns_ms)
netns_log "link of host $victim down"
netns_wait_line "$NETNS_TMP/down.rank0.log" "^rank 0: ep to rank $victim failed" 30 ||
  netns_fail "rank 0 did not notice within 30 s"
netns_log "rank 0 noticed after $(( $(netns_ms) - down_ms )) ms"
# A silent peer is a timeout, not a reset (nothing closed anything).
grep -q "^rank 0: ep to rank $victim failed: timed out" "$NETNS_TMP/down.rank0.log" ||
  netns_fail "rank 0 did not report the silent peer as timed out: $(grep 'failed:' "$NETNS_TMP/down.rank0.log")"

netns_exchange_wait down 60
netns_assert_only_failure down 4 "$victim"
# The isolated rank saw every peer go (and only them), and carried on alone.
netns_assert_blamed down "$victim" "0 1 2" ""
netns_log "PASS"
