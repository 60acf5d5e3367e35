#!/usr/bin/env bash
# swy-perf latency and bandwidth between two hosts (namespaces) over tcp, 0 B to 64 MiB, with
# every byte checked. Prints the tables (numbers depend on the machine and its load).
# usage: perf_two_hosts.sh BUILD_BIN_DIR
set -uo pipefail
source "$(dirname "$0")/netns_lib.sh"
netns_bin_dir "${1:-}"
netns_setup 2

sizes=0,1,8,64,512,4K,32K,256K,1M,4M,16M,64M
nsizes=12
for test in lat bw; do
  netns_log "swy-perf --test $test --check, host 1 -> host 0, sizes $sizes"
  # Few iterations: this checks correctness across hosts; 64 MiB messages are slow to verify.
  netns_perf "$test" 0 1 "${NETNS_IP[0]}" --test "$test" --sizes "$sizes" --iters 5 --warmup 1 \
    --window 5 --check ||
    netns_fail "swy-perf --test $test failed"
  log="$NETNS_TMP/$test.client.log"
  cat "$log"
  t=$(netns_transport "$log")
  [[ "$t" == tcp ]] || netns_fail "$test: transport '$t', expected tcp"
  rows=$(grep -cE '^ +[0-9]+ +[0-9]+ ' "$log")
  (( rows == nsizes )) || netns_fail "$test: $rows result rows, expected $nsizes"
  grep -qE '^ +67108864 ' "$log" || netns_fail "$test: no 64 MiB row"
done
netns_log "PASS"
