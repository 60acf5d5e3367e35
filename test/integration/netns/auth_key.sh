#!/usr/bin/env bash
# SWY_AUTH_KEY across hosts (docs/security-tcp.md): three hosts with the same key exchange
# every size, every byte checked; then one host with another key: each of the other two blames
# exactly that one (its connections fail authentication, nothing it sent is delivered) and
# finishes with the other, and the odd one out blames both.
# usage: auth_key.sh BUILD_BIN_DIR
set -uo pipefail
source "$(dirname "$0")/netns_lib.sh"
netns_bin_dir "${1:-}"
netns_setup 3

key_a=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
key_b=ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100

netns_log "alltoall over 3 hosts with one key, sizes 0:4M, 3 iterations"
export SWY_AUTH_KEY=$key_a
netns_exchange same 3 --pattern alltoall --sizes 0:4M --iters 3
netns_exchange_go same
netns_exchange_wait same 60
grep -h "failed:" "$NETNS_TMP"/same.rank*.log && netns_fail "same key: an endpoint failed"

odd=2
netns_log "rank $odd with another key: blamed by both others, and blames both"
mkdir -p "$NETNS_TMP/mixed.addr"
NETNS_RANK_PIDS=()
for r in 0 1 2; do
  key=$key_a
  (( r == odd )) && key=$key_b
  # A connect timeout far beyond --timeout on purpose: where the odd rank's connect crosses a
  # peer's, both connections fail their proof check at once (nothing is redirected before the
  # proof), so every rank must learn of the wrong key without waiting for that timeout.
  netns_spawn "$r" "$NETNS_TMP/mixed.rank$r.log" env SWY_AUTH_KEY="$key" SWY_TCP_CONNECT_TIMEOUT=60s \
    "$NETNS_BIN/swy_exchange" --rank "$r" --size 3 --dir "$NETNS_TMP/mixed.addr" \
    --wait-for "$NETNS_TMP/mixed.go" --pattern alltoall --sizes 0:64K --iters 3 \
    --tolerate-failures --timeout 20
  NETNS_RANK_PIDS+=("$NETNS_LAST_PID")
done
netns_exchange_go mixed
netns_exchange_wait mixed 60 "$odd"
netns_assert_only_failure mixed 3 "$odd"
# The odd rank finishes too (it tolerates the failures), having blamed both others.
netns_wait_pid "${NETNS_RANK_PIDS[$odd]}" 60 || true
grep -qE "^rank $odd: ep to rank 0 failed" "$NETNS_TMP/mixed.rank$odd.log" ||
  netns_fail "rank $odd did not blame rank 0"
grep -qE "^rank $odd: ep to rank 1 failed" "$NETNS_TMP/mixed.rank$odd.log" ||
  netns_fail "rank $odd did not blame rank 1"
grep -q "authentication failed" "$NETNS_TMP"/mixed.rank*.log ||
  netns_fail "no 'authentication failed' log line"
netns_log "PASS"
