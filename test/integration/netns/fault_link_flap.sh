#!/usr/bin/env bash
# A link that goes down for 1 s and comes back is not a failure: with SWY_TCP_KEEPALIVE=2s
# (peers declared dead after about 6 s) TCP retransmits across the gap, no endpoint may fail
# and every byte must arrive. The other side of fault_link_down.sh.
# usage: fault_link_flap.sh BUILD_BIN_DIR
set -uo pipefail
source "$(dirname "$0")/netns_lib.sh"
netns_bin_dir "${1:-}"
netns_setup 4

flappy=2
iters=16
export SWY_TCP_KEEPALIVE=2s
netns_log "alltoall over 4 hosts, 256K/1M/4M messages, $iters iterations, SWY_TCP_KEEPALIVE=$SWY_TCP_KEEPALIVE"
netns_exchange flap 4 --pattern alltoall --sizes 256K,1M,4M --iters "$iters" --timeout 20
netns_exchange_go flap
netns_wait_line "$NETNS_TMP/flap.rank$flappy.log" "^rank $flappy: iteration 3/" 40 ||
  netns_fail "rank $flappy made no progress"
netns_link_down "$flappy"
netns_log "link of host $flappy down"
sleep 1
ip -n "${NETNS_HOSTS[$flappy]}" link set "$NETNS_DEV" up
netns_log "link of host $flappy up again"
# The link was really cut: that rank cannot have finished while it was down.
grep -q "^rank $flappy: iteration $iters/" "$NETNS_TMP/flap.rank$flappy.log" &&
  netns_fail "rank $flappy finished before the link came back: make the run longer"

netns_exchange_wait flap 60
grep -h "^rank [0-9]: PASS" "$NETNS_TMP"/flap.rank*.log
grep -h "failed:" "$NETNS_TMP"/flap.rank*.log && netns_fail "an endpoint failed over a 1 s outage"
netns_log "PASS"
