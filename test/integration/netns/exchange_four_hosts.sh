#!/usr/bin/env bash
# A ring and an all-to-all exchange across four hosts (namespaces), 0 B to 4 MiB, every byte
# of every message checked by swy_exchange.
# usage: exchange_four_hosts.sh BUILD_BIN_DIR
set -uo pipefail
source "$(dirname "$0")/netns_lib.sh"
netns_bin_dir "${1:-}"
netns_setup 4

for pattern in ring alltoall; do
  netns_log "$pattern over 4 hosts, sizes 0:4M, 3 iterations"
  netns_exchange "$pattern" 4 --pattern "$pattern" --sizes 0:4M --iters 3
  netns_exchange_go "$pattern"
  netns_exchange_wait "$pattern" 60
  for r in 0 1 2 3; do
    log="$NETNS_TMP/$pattern.rank$r.log"
    # Every endpoint crosses hosts: tcp only.
    grep -q "transports:.*=\(shm\|self\|cma\)" "$log" && netns_fail "rank $r: a local transport between hosts"
    grep -E "^rank $r: (PASS|ep to)" "$log"
  done
  # Nobody may see a failure before everyone finished.
  grep -h "failed:" "$NETNS_TMP/$pattern".rank*.log && netns_fail "$pattern: an endpoint failed"
done
netns_log "PASS"
