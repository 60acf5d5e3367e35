#!/usr/bin/env bash
# Connection set-up under packet loss (issue #18): host 1 drops 30% of what it receives
# (nftables, as fault_loss.sh; this kernel has no netem) from before the first connect. Two
# ranks on host 0 and five on host 1 create their endpoints all at once (alltoall): 10
# cross-host endpoint pairs, each one tcp connection whose SYNs, hellos and first messages
# cross the lossy link. Every one must connect (attempts retried within
# SWY_TCP_CONNECT_TIMEOUT) and every byte arrive; before the retries, one 2 s attempt left
# 1-2 of 10 endpoints failed.
# Loss in both directions at 30% also stalls the data path for longer than swy_exchange's
# round timeout now and then (TCP retransmission backoff): that is not what is tested here.
# usage: connect_loss.sh BUILD_BIN_DIR
set -uo pipefail
source "$(dirname "$0")/netns_lib.sh"
netns_bin_dir "${1:-}"
netns_need_tool nft "Debian package nftables"
netns_setup 2

percent=30
netns_drop_input 1 "$percent" || netns_fail "cannot install the nftables drop rule on host 1"
netns_log "host 1 drops $percent% of its incoming packets (one direction, as netem on one link), from before the first connect"

# The 2 s keepalive (6 s TCP user timeout) aborts live connections whose retransmissions
# take longer at this loss rate: a data-path matter (issue #18, tcpfail), not connect.
export SWY_TLS=tcp,shm,self SWY_TCP_CONNECT_TIMEOUT=25s SWY_TCP_KEEPALIVE=20s
NETNS_PLACEMENT=(0 0 1 1 1 1 1)
netns_exchange lossy 7 --pattern alltoall --sizes 0,8,4K --iters 2 --timeout 60
netns_exchange_go lossy
netns_exchange_wait lossy 90
grep -h "^rank [0-9]: PASS" "$NETNS_TMP"/lossy.rank*.log
grep -h "failed:" "$NETNS_TMP"/lossy.rank*.log && netns_fail "an endpoint failed under packet loss"
d0=$(netns_dropped_packets 0)
d1=$(netns_dropped_packets 1)
(( ${d0:-0} + ${d1:-0} > 0 )) || netns_fail "the drop rules dropped nothing: the fault was not injected"
netns_log "10 of 10 cross-host endpoint pairs connected ($d0 + $d1 packets dropped)"
netns_log "PASS"
