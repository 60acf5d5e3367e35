#!/usr/bin/env bash
# Host identity: a worker address carries the boot id and the network namespace, so processes
# in two namespaces are two hosts (tcp), and two processes in one namespace share memory (shm).
# usage: host_identity.sh BUILD_BIN_DIR
set -uo pipefail
source "$(dirname "$0")/netns_lib.sh"
netns_bin_dir "${1:-}"
netns_setup 2

netns_log "swy-perf between host 0 and host 1 (expect tcp)"
netns_perf cross 0 1 "${NETNS_IP[0]}" --sizes 8,64K --iters 20 --check || netns_fail "swy-perf across hosts failed"
grep -E '^ +[0-9]+ ' "$NETNS_TMP/cross.client.log"
t=$(netns_transport "$NETNS_TMP/cross.client.log")
[[ "$t" == tcp ]] || netns_fail "two namespaces: swy-perf used '$t', expected tcp"

netns_log "swy-perf between two processes on host 0 (expect shm)"
netns_perf same 0 0 127.0.0.1 --sizes 8,64K --iters 20 --check || netns_fail "swy-perf on one host failed"
grep -E '^ +[0-9]+ ' "$NETNS_TMP/same.client.log"
t=$(netns_transport "$NETNS_TMP/same.client.log")
[[ "$t" == shm ]] || netns_fail "one namespace: swy-perf used '$t', expected shm"

# Three ranks, two of them on host 0: each endpoint picks its transport by host.
netns_log "swy_exchange: ranks 0 and 1 on host 0, rank 2 on host 1"
dir="$NETNS_TMP/addr"
mkdir "$dir"
pids=()
for r in 0 1 2; do
  h=$(( r / 2 ))
  netns_spawn "$h" "$NETNS_TMP/rank$r.log" timeout 60 "$NETNS_BIN/swy_exchange" --rank "$r" --size 3 \
    --dir "$dir" --pattern alltoall --sizes 0,8K,1M --iters 2
  pids+=("$NETNS_LAST_PID")
done
for r in 0 1 2; do
  netns_wait_pid "${pids[$r]}" 60 || netns_fail "rank $r exited with status $?"
done
expect=("1=shm 2=tcp" "0=shm 2=tcp" "0=tcp 1=tcp")
for r in 0 1 2; do
  line=$(grep -m1 'transports:' "$NETNS_TMP/rank$r.log")
  echo "$line"
  [[ "$line" == *"transports: ${expect[$r]}" ]] || netns_fail "rank $r: expected transports '${expect[$r]}'"
done
netns_log "PASS"
