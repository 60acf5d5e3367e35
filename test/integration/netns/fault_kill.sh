#!/usr/bin/env bash
# SIGKILL one host's process in the middle of an all-to-all of large messages: the survivors
# must report the failure on their endpoint to that rank only, and finish every iteration
# with each other, every byte checked.
# usage: fault_kill.sh BUILD_BIN_DIR
set -uo pipefail
source "$(dirname "$0")/netns_lib.sh"
netns_bin_dir "${1:-}"
netns_setup 4

victim=2
iters=24
netns_log "alltoall over 4 hosts, 256K/1M/4M messages, $iters iterations, --tolerate-failures"
netns_exchange kill 4 --pattern alltoall --sizes 256K,1M,4M --iters "$iters" --tolerate-failures \
  --timeout 20
netns_exchange_go kill
netns_wait_line "$NETNS_TMP/kill.rank$victim.log" "^rank $victim: iteration 4/" 40 ||
  netns_fail "rank $victim made no progress"
netns_log "SIGKILL rank $victim (pid ${NETNS_RANK_PIDS[$victim]}, $(cat /proc/${NETNS_RANK_PIDS[$victim]}/comm 2>/dev/null)) on host $victim"
kill -KILL "${NETNS_RANK_PIDS[$victim]}"
kill_ms=$(netns_ms)
netns_wait_line "$NETNS_TMP/kill.rank0.log" "^rank 0: ep to rank $victim failed" 30 ||
  netns_fail "rank 0 did not notice within 30 s"
netns_log "rank 0 noticed after $(( $(netns_ms) - kill_ms )) ms (polling every 50 ms)"
rc=0
netns_wait_pid "${NETNS_RANK_PIDS[$victim]}" 10 || rc=$?
(( rc == 137 )) || netns_fail "rank $victim: exit status $rc, expected 137 (SIGKILL)"
# Did it die before the end? (it would otherwise have printed its summary)
grep -q "^rank $victim: \(PASS\|FAIL\)" "$NETNS_TMP/kill.rank$victim.log" &&
  netns_fail "rank $victim finished before it was killed: make the run longer"

netns_exchange_wait kill 60 "$victim"
netns_assert_only_failure kill 4 "$victim"
netns_log "PASS"
