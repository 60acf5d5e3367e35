#!/usr/bin/env bash
# Packet loss: one host drops 5% of what it receives (nftables `numgen random` inside its
# namespace; this kernel has no netem). TCP retransmits: every byte must still arrive intact,
# only later. Prints the time with and without loss.
# usage: fault_loss.sh BUILD_BIN_DIR
set -uo pipefail
source "$(dirname "$0")/netns_lib.sh"
netns_bin_dir "${1:-}"
netns_need_tool nft "Debian package nftables"
netns_setup 4

lossy=1
percent=5
args=(--pattern alltoall --sizes 0,1,4K,64K,1M,4M --iters 4 --timeout 40)
netns_log "alltoall over 4 hosts without loss"
netns_exchange clean 4 "${args[@]}"
netns_exchange_go clean
netns_exchange_wait clean 60

# Loss starts once the ranks are connected: it is the data path under test. (Connection
# set-up gives up after one 2 s connect attempt, which a lost SYN and its retry can exceed.)
netns_exchange lossy 4 "${args[@]}"
netns_exchange_connected lossy
netns_drop_input "$lossy" "$percent" || netns_fail "cannot install the nftables drop rule"
netns_log "host $lossy now drops $percent% of its incoming packets"
netns_exchange_go lossy
netns_exchange_wait lossy 90
dropped=$(netns_dropped_packets "$lossy")
grep -h "^rank [0-9]: PASS" "$NETNS_TMP"/lossy.rank*.log
grep -h "failed:" "$NETNS_TMP"/lossy.rank*.log && netns_fail "an endpoint failed under packet loss"
(( ${dropped:-0} > 0 )) || netns_fail "the drop rule dropped nothing: the fault was not injected"
netns_log "rank $lossy: $(netns_elapsed clean $lossy) s without loss, $(netns_elapsed lossy $lossy) s with $percent% loss ($dropped packets dropped)"
netns_log "PASS"
