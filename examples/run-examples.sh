#!/usr/bin/env bash
# Run the examples built in DIR and check what each prints. Every run is bounded.
#
#   examples/run-examples.sh DIR
set -euo pipefail
dir=${1:?usage: $0 DIR}
fail() {
  echo "run-examples: FAIL: $*" >&2
  exit 1
}
run() {  # run NAME EXPECTED_OUTPUT_REGEX COMMAND...
  local name=$1 expect=$2
  shift 2
  local out
  out=$(timeout 60 "$@" 2>&1) || fail "$name exited with $?: $out"
  grep -Eq "$expect" <<< "$out" || fail "$name printed '$out', expected /$expect/"
  echo "   $name: $(head -n1 <<< "$out")"
}
run pingpong 'rank 0 got 18 bytes with tag 42: hello from rank 1' "$dir/pingpong"
run epoll_loop 'epoll loop: 12 of 12 messages, 0 bad' "$dir/epoll_loop"
run cxx_rma_am 'cxx_rma_am: .*: ok' "$dir/cxx_rma_am"

# Listener: the server writes its port to a file, the client connects to it.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/swy-examples.XXXXXX")
trap 'rm -rf "$tmp"; [[ -n ${server:-} ]] && kill "$server" 2>/dev/null || true' EXIT
timeout 60 "$dir/listener_server" "$tmp/port" > "$tmp/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do
  [[ -s $tmp/port ]] && break
  sleep 0.1
done
[[ -s $tmp/port ]] || fail "listener_server wrote no port: $(cat "$tmp/server.log")"
run listener_client 'client: ping, pong, bye over ' "$dir/listener_client" "$(cat "$tmp/port")"
wait "$server" || fail "listener_server exited with $?: $(cat "$tmp/server.log")"
server=
grep -q 'server: ping, pong, bye' "$tmp/server.log" || fail "listener_server: $(cat "$tmp/server.log")"
echo "   listener_server: $(cat "$tmp/server.log")"
