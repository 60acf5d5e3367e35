#!/usr/bin/env bash
# Rate limit: one host's link sends at most 50 Mbit/s (tc tbf). Every byte must still arrive
# intact, and the run cannot beat the shaper: what that host sent takes at least
# bytes*8/50e6 seconds (checked, with the shaper's own byte count).
# usage: fault_rate_limit.sh BUILD_BIN_DIR
set -uo pipefail
source "$(dirname "$0")/netns_lib.sh"
netns_bin_dir "${1:-}"
netns_need_tool tc "Debian package iproute2"
netns_setup 4

slow=1
rate_mbit=50
iters=3
# 0 + 4K + 64K + 1M = 1118208 bytes per peer and iteration.
args=(--pattern alltoall --sizes 0,4K,64K,1M --iters "$iters" --timeout 40)
payload=$(( 3 * iters * (4096 + 65536 + 1048576) ))
netns_rate_limit "$slow" "${rate_mbit}mbit" || netns_fail "cannot install the tbf qdisc"
netns_log "host $slow sends at most $rate_mbit Mbit/s; alltoall over 4 hosts, it sends $payload payload bytes"
netns_exchange shaped 4 "${args[@]}"
netns_exchange_go shaped
netns_exchange_wait shaped 90
grep -h "^rank [0-9]: PASS" "$NETNS_TMP"/shaped.rank*.log
grep -h "failed:" "$NETNS_TMP"/shaped.rank*.log && netns_fail "an endpoint failed under the rate limit"
stats=$(tc -s -n "${NETNS_HOSTS[$slow]}" qdisc show dev "$NETNS_DEV")
echo "$stats"
sent=$(sed -n 's/.*Sent \([0-9]*\) bytes.*/\1/p' <<<"$stats" | head -n1)
(( ${sent:-0} >= payload )) || netns_fail "the shaper passed ${sent:-0} bytes, less than the $payload payload bytes"
t=$(netns_elapsed shaped "$slow")
floor_ms=$(( payload * 8 / (rate_mbit * 1000) ))
t_ms=$(awk -v t="$t" 'BEGIN { printf "%d", t * 1000 }')
netns_log "rank $slow: $t s; at $rate_mbit Mbit/s its payload alone needs $floor_ms ms"
(( t_ms >= floor_ms * 9 / 10 )) || netns_fail "faster than the shaper allows: not shaped?"
netns_log "PASS"
