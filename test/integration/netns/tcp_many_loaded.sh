#!/usr/bin/env bash
# Many processes over tcp on a loaded machine (issue #18): N ranks (default 128) spread over
# four hosts, every pair over tcp (SWY_TLS=tcp,self: also the pairs inside one host), an
# all-to-all of eager and rendezvous messages while spinning processes keep every core busy.
# Slow peers are not dead peers: no endpoint may fail, and every rank must receive every
# message of every round intact (swy_exchange checks each byte; a send that completed must
# have been received). Default settings (SWY_TCP_KEEPALIVE / SWY_TCP_USER_TIMEOUT) unless the
# environment sets them. Peers are exchanged with 16 at a time (--window), so that a rank holds
# at most 32 message buffers (128 ranks x 127 peers x 2 x 1 MiB would not fit in memory).
# Heavy: CTest labels netns and heavy.
# At 128 ranks on two loaded cores the 1 MiB round alone moves 17 GB through the bridge: about
# ten minutes; SIZES (default 8,4K,64K,1M) picks others.
# usage: tcp_many_loaded.sh BUILD_BIN_DIR [RANKS] [ITERS]   (defaults 128, 1)
set -uo pipefail
source "$(dirname "$0")/netns_lib.sh"
netns_bin_dir "${1:-}"
ranks=${2:-128}
iters=${3:-1}
hosts=4
netns_setup "$hosts"

NETNS_PLACEMENT=()
for (( r = 0; r < ranks; r++ )); do NETNS_PLACEMENT+=($(( r % hosts ))); done
export SWY_TLS=tcp,self
# Load: one spinning process per core, at the lowest priority (the ranks still compete).
spinners=$(nproc)
for (( i = 0; i < spinners; i++ )); do
  nice -n 19 bash -c 'while :; do :; done' &
  NETNS_PIDS+=($!)
done
netns_log "$ranks ranks on $hosts hosts, all pairs over tcp, $spinners spinning processes," \
  "sizes ${SIZES:-8,4K,64K,1M}, $iters iterations, keepalive ${SWY_TCP_KEEPALIVE:-default}," \
  "user timeout ${SWY_TCP_USER_TIMEOUT:-default}"
netns_exchange many "$ranks" --pattern alltoall --sizes "${SIZES:-8,4K,64K,1M}" --iters "$iters" \
  --window 16 --timeout 300 --progress-every 1000
netns_wait_all_connected "$NETNS_TMP/many" "$ranks" 600 ||
  netns_fail "many: not every rank connected within 600 s"

touch "$NETNS_TMP/many.go"
netns_log "all connected"
failed=0
for (( r = 0; r < ranks; r++ )); do
  rc=0
  netns_wait_pid "${NETNS_RANK_PIDS[$r]}" 1800 || rc=$?
  if (( rc != 0 )) || ! grep -q "^rank $r: PASS" "$NETNS_TMP/many.rank$r.log"; then
    failed=$(( failed + 1 ))
    echo "rank $r: exit $rc: $(grep -E "^rank $r: (FAIL|ep to)" "$NETNS_TMP/many.rank$r.log" | head -3)"
  fi
done
failures=$(cat "$NETNS_TMP"/many.rank*.log | grep -c "failed:")
netns_log "$failed of $ranks ranks did not receive everything; $failures failure lines"
(( failed == 0 && failures == 0 )) || netns_fail "messages lost or endpoints failed under load"
netns_log "PASS"
