# netns_lib.sh: "hosts" on one machine for the multi-host tests. Sourced by the test scripts.
#
# netns_setup N creates N hosts (network namespaces <prefix>-h0..h<N-1>) and a switch (namespace
# <prefix>-sw holding a bridge); each host has one veth ("veth0") whose peer is a port of the
# bridge. Nothing is added to the root namespace. Addresses come from the benchmarking range
# 198.18.0.0/15 only, one /24 per run (198.18.0.0/24 is left alone: another tool uses it).
# Cleanup runs on EXIT/INT/TERM: our processes are killed, our namespaces deleted (that removes
# their veths and the bridge), the temporary directory removed. Namespaces of earlier runs that
# died without cleaning up are removed at set-up. A test that cannot create namespaces exits 77
# (CTest's SKIP_RETURN_CODE).

NETNS_SKIP=77
NETNS_PREFIX="swyN$$"
NETNS_HOSTS=()        # namespace name of host i
NETNS_IP=()           # IPv4 address of host i
NETNS_DEV=veth0       # the host's interface to the switch
NETNS_PIDS=()         # background processes we started
NETNS_PLACEMENT=()    # netns_exchange: host of each rank, where not rank = host
NETNS_TMP=""
NETNS_T0=$(date +%s%N)

# Milliseconds since the test started.
netns_ms() {
  echo $(( ($(date +%s%N) - NETNS_T0) / 1000000 ))
}

netns_log() {
  local ms
  ms=$(netns_ms)
  printf '[netns %3d.%03ds] %s\n' $(( ms / 1000 )) $(( ms % 1000 )) "$*"
}

netns_skip() {
  echo "SKIP: $*"
  exit "$NETNS_SKIP"
}

# Prints the log files of this run, then fails the test.
netns_fail() {
  echo "FAIL: $*"
  local f
  for f in "$NETNS_TMP"/*.log; do
    [[ -f "$f" ]] || continue
    echo "----- $(basename "$f") (last 40 lines) -----"
    tail -n 40 "$f"
  done
  exit 1
}

# Root, CAP_NET_ADMIN and iproute2 are needed; checked by trying, since a container can be
# root without the capability.
netns_require() {
  command -v ip >/dev/null 2>&1 || netns_skip "iproute2 ('ip') is not installed"
  [[ $(id -u) -eq 0 ]] || netns_skip "network namespaces need root"
  local probe="${NETNS_PREFIX}-probe"
  if ! ip netns add "$probe" 2>/dev/null; then
    netns_skip "cannot create network namespaces here (no CAP_NET_ADMIN?)"
  fi
  if ! ip -n "$probe" link add br0 type bridge 2>/dev/null; then
    ip netns del "$probe" 2>/dev/null
    netns_skip "cannot create a bridge inside a network namespace"
  fi
  ip netns del "$probe"
}

netns_need_tool() {
  command -v "$1" >/dev/null 2>&1 || netns_skip "$1 is not installed ($2)"
}

# Namespaces named swyN<pid>-... whose run (that pid) is gone.
netns_remove_stale() {
  local ns pid
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^swyN[0-9]+-(sw|h[0-9]+|probe)$'); do
    pid=${ns#swyN}
    pid=${pid%%-*}
    if ! kill -0 "$pid" 2>/dev/null; then
      netns_kill_inside "$ns"
      ip netns del "$ns" 2>/dev/null && echo "netns: removed stale namespace $ns"
    fi
  done
}

# Temporary directories (/tmp/swy-netns.<pid>.*) of runs that are gone.
netns_remove_stale_tmp() {
  local d pid
  for d in /tmp/swy-netns.*.*; do
    [[ -d "$d" ]] || continue
    pid=${d#/tmp/swy-netns.}
    pid=${pid%%.*}
    [[ "$pid" =~ ^[0-9]+$ ]] && ! kill -0 "$pid" 2>/dev/null && rm -rf "$d"
  done
}

# Kills every process still inside namespace $1 (ours: the name is unique to our run).
netns_kill_inside() {
  local pid
  for pid in $(ip netns pids "$1" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
}

netns_cleanup() {
  local rc=$? pid ns
  trap - EXIT INT TERM
  exec 2>/dev/null  # bash's "Killed" notices for the processes killed below
  for pid in "${NETNS_PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  for ns in "${NETNS_HOSTS[@]}" "${NETNS_PREFIX}-sw"; do
    netns_kill_inside "$ns"
    ip netns del "$ns" 2>/dev/null
  done
  wait 2>/dev/null
  # NETNS_KEEP_LOGS=1 keeps the per-rank logs for a post-mortem (the path goes to stdout).
  if [[ -n "$NETNS_TMP" && -d "$NETNS_TMP" ]]; then
    if [[ ${NETNS_KEEP_LOGS:-0} == 1 ]]; then
      echo "netns: logs kept in $NETNS_TMP"
    else
      rm -rf "$NETNS_TMP"
    fi
  fi
  exit "$rc"
}

# netns_setup N: N hosts on one switch.
netns_setup() {
  local n=$1 i ns
  netns_require
  trap netns_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  netns_remove_stale
  netns_remove_stale_tmp
  NETNS_TMP=$(mktemp -d "/tmp/swy-netns.$$.XXXXXX")
  # 198.18.1.0/24 .. 198.19.255.0/24 by pid: concurrent runs are isolated anyway (each has its
  # own switch), distinct subnets only make their traces easier to tell apart.
  local slot=$(( $$ % 511 ))
  local net="198.$(( 18 + (slot + 1) / 256 )).$(( (slot + 1) % 256 ))"
  ip netns add "${NETNS_PREFIX}-sw" || netns_fail "cannot create the switch namespace"
  ip -n "${NETNS_PREFIX}-sw" link add br0 type bridge || netns_fail "cannot create the bridge"
  ip -n "${NETNS_PREFIX}-sw" link set br0 up
  for (( i = 0; i < n; i++ )); do
    ns="${NETNS_PREFIX}-h$i"
    ip netns add "$ns" || netns_fail "cannot create namespace $ns"
    NETNS_HOSTS+=("$ns")
    NETNS_IP+=("$net.$(( i + 1 ))")
    # Both ends are created directly inside their namespaces: nothing appears in the root one.
    ip link add "$NETNS_DEV" netns "$ns" type veth peer name "port$i" netns "${NETNS_PREFIX}-sw" ||
      netns_fail "cannot create the veth pair of host $i"
    ip -n "${NETNS_PREFIX}-sw" link set "port$i" master br0 up
    ip -n "$ns" addr add "${NETNS_IP[$i]}/24" dev "$NETNS_DEV"
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "$NETNS_DEV" up
  done
  # The bridge forwards once its ports leave the listening state (immediate without STP);
  # check that every host reaches every other before any test starts.
  netns_wait_reachable || netns_fail "hosts cannot reach each other over the bridge"
  netns_log "$n hosts on ${net}.0/24: ${NETNS_HOSTS[*]} (switch ${NETNS_PREFIX}-sw)"
}

# Waits (up to 10 s) until every port of the bridge forwards. Without STP that is at once,
# but a test must not race the bridge if its defaults ever change.
netns_wait_reachable() {
  local tries
  for (( tries = 0; tries < 100; tries++ )); do
    if [[ $(bridge -n "${NETNS_PREFIX}-sw" link show 2>/dev/null | grep -c 'state forwarding') \
          -ge ${#NETNS_HOSTS[@]} ]]; then
      return 0
    fi
    sleep 0.1
  done
  bridge -n "${NETNS_PREFIX}-sw" link show
  return 1
}

# netns_exec I CMD...: run CMD on host I (foreground).
netns_exec() {
  local i=$1
  shift
  ip netns exec "${NETNS_HOSTS[$i]}" "$@"
}

# netns_spawn I LOG CMD...: run CMD on host I in the background, output to LOG; sets
# NETNS_LAST_PID.
netns_spawn() {
  local i=$1 log=$2
  shift 2
  ip netns exec "${NETNS_HOSTS[$i]}" "$@" >"$log" 2>&1 &
  NETNS_LAST_PID=$!
  NETNS_PIDS+=("$NETNS_LAST_PID")
}

# netns_wait_line FILE REGEX SECONDS: wait until FILE has a line matching REGEX.
netns_wait_line() {
  local file=$1 re=$2 deadline=$(( $(date +%s) + $3 ))
  while ! grep -qE "$re" "$file" 2>/dev/null; do
    (( $(date +%s) < deadline )) || return 1
    sleep 0.05
  done
}

# netns_wait_pid PID SECONDS: wait for a background process; its exit status, 124 on timeout
# (then it is killed).
netns_wait_pid() {
  local pid=$1 deadline=$(( $(date +%s) + $2 ))
  while kill -0 "$pid" 2>/dev/null; do
    if (( $(date +%s) >= deadline )); then
      kill -KILL "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
      return 124
    fi
    sleep 0.05
  done
  wait "$pid"
}

# Faults ---------------------------------------------------------------------------------

# netns_link_down I: cut host I off the switch (its side of the veth).
netns_link_down() {
  ip -n "${NETNS_HOSTS[$1]}" link set "$NETNS_DEV" down
}

# netns_drop_input I PERCENT: drop PERCENT% of the packets host I receives from the network
# (nftables inside its namespace; the kernel here has no netem). Loopback traffic is spared:
# it is not the network, and libraries probe local services through it (hwloc's X11 probe).
netns_drop_input() {
  local ns=${NETNS_HOSTS[$1]}
  ip netns exec "$ns" nft add table inet swy_loss &&
    ip netns exec "$ns" nft add chain inet swy_loss input \
      '{ type filter hook input priority 0; policy accept; }' &&
    ip netns exec "$ns" nft add rule inet swy_loss input iifname "$NETNS_DEV" \
      numgen random mod 100 '<' "$2" counter drop
}

# Packets dropped so far by netns_drop_input on host I.
netns_dropped_packets() {
  ip netns exec "${NETNS_HOSTS[$1]}" nft list chain inet swy_loss input 2>/dev/null |
    sed -n 's/.*counter packets \([0-9]*\) .*/\1/p' | head -n1
}

# netns_rate_limit I RATE: shape what host I sends with a token bucket (e.g. 50mbit).
netns_rate_limit() {
  tc -n "${NETNS_HOSTS[$1]}" qdisc add dev "$NETNS_DEV" root tbf rate "$2" burst 32kbit latency 400ms
}

# Programs ---------------------------------------------------------------------------------

# netns_bin_dir DIR: where swy-perf and swy_exchange are (the build's bin directory).
netns_bin_dir() {
  NETNS_BIN=$1
  [[ -n "$NETNS_BIN" && -x "$NETNS_BIN/swy-perf" && -x "$NETNS_BIN/swy_exchange" ]] ||
    { echo "FAIL: usage: $0 BUILD_BIN_DIR (with swy-perf and swy_exchange), got '$NETNS_BIN'"; exit 1; }
}

# netns_perf NAME SERVER_HOST CLIENT_HOST CLIENT_TARGET_IP SWY-PERF-ARGS...: swy-perf's server
# on one host, its client on another (or the same), addresses exchanged over TCP port 13337
# (each namespace has its own ports: no clash with concurrent runs). The client's report goes
# to $NETNS_TMP/NAME.client.log. Returns non-zero if either side fails or takes over 60 s.
netns_perf() {
  local name=$1 s=$2 c=$3 target=$4
  shift 4
  local port=13337 spid crc=0 src=0
  netns_spawn "$s" "$NETNS_TMP/$name.server.log" timeout 60 "$NETNS_BIN/swy-perf" --server "$port" "$@"
  spid=$NETNS_LAST_PID
  netns_exec "$c" timeout 60 "$NETNS_BIN/swy-perf" --client "$target:$port" "$@" \
    >"$NETNS_TMP/$name.client.log" 2>&1 || crc=$?
  netns_wait_pid "$spid" 30 || src=$?
  if (( crc != 0 || src != 0 )); then
    echo "swy-perf $name: client exit $crc, server exit $src"
    return 1
  fi
}

# netns_transport LOG: the transport swy-perf reported ("# transport tcp, ...").
netns_transport() {
  sed -n 's/^# transport \([a-z]*\).*/\1/p' "$1" | head -n1
}

# netns_exchange NAME N ARGS...: N swy_exchange ranks, rank r on host r (or on host
# NETNS_PLACEMENT[r] where that array is set), in the background; rank r logs to $NETNS_TMP/NAME.rank<r>.log; pids in NETNS_RANK_PIDS. Addresses
# go through $NETNS_TMP/NAME.addr/ (the hosts share the file system). The ranks connect, then
# wait for netns_exchange_go NAME before their first round, so that a fault can be injected
# between connection set-up and data transfer.
netns_exchange() {
  local name=$1 n=$2 r
  shift 2
  mkdir -p "$NETNS_TMP/$name.addr"
  NETNS_RANK_PIDS=()
  for (( r = 0; r < n; r++ )); do
    local host=$r
    [[ -n "${NETNS_PLACEMENT[$r]:-}" ]] && host=${NETNS_PLACEMENT[$r]}
    # No `timeout` wrapper: the pid must be swy_exchange's own (`ip netns exec` execs it),
    # so that a fault test can kill it; netns_exchange_wait bounds the run instead.
    netns_spawn "$host" "$NETNS_TMP/$name.rank$r.log" "$NETNS_BIN/swy_exchange" \
      --rank "$r" --size "$n" --dir "$NETNS_TMP/$name.addr" --wait-for "$NETNS_TMP/$name.go" "$@"
    NETNS_RANK_PIDS+=("$NETNS_LAST_PID")
  done
}

# netns_wait_all_connected PREFIX COUNT SECONDS: wait until PREFIX.rank<r>.log has a line
# "rank <r>: connected" for every r < COUNT (one grep over all the logs per look: a loop of
# one grep per rank crawls on a machine that many ranks keep busy).
netns_wait_all_connected() {
  local prefix=$1 count=$2 deadline=$(( $(date +%s) + $3 ))
  while :; do
    local have
    have=$(grep -l -E "^rank [0-9]+: connected" "$prefix".rank*.log 2>/dev/null | wc -l)
    (( have >= count )) && return 0
    (( $(date +%s) < deadline )) || return 1
    sleep 1
  done
}

# netns_exchange_connected NAME: wait until every rank has connected to every other.
netns_exchange_connected() {
  local name=$1 r
  for (( r = 0; r < ${#NETNS_RANK_PIDS[@]}; r++ )); do
    netns_wait_line "$NETNS_TMP/$name.rank$r.log" "^rank $r: connected" 30 ||
      netns_fail "$name: rank $r did not connect"
  done
}

# netns_exchange_go NAME: once every rank is connected, let them start.
netns_exchange_go() {
  netns_exchange_connected "$1"
  touch "$NETNS_TMP/$1.go"
}

# netns_exchange_wait NAME SECONDS [SKIP_RANK]: every rank (but SKIP_RANK) must exit 0 and
# print PASS.
netns_exchange_wait() {
  local name=$1 secs=$2 skip=${3:--1} r rc
  for (( r = 0; r < ${#NETNS_RANK_PIDS[@]}; r++ )); do
    (( r == skip )) && continue
    rc=0
    netns_wait_pid "${NETNS_RANK_PIDS[$r]}" "$secs" || rc=$?
    (( rc == 0 )) || netns_fail "$name: rank $r exited with status $rc"
    grep -q "^rank $r: PASS" "$NETNS_TMP/$name.rank$r.log" || netns_fail "$name: rank $r did not PASS"
  done
}

# netns_assert_blamed NAME R "BLAMED" "LIVE": rank R reported exactly the endpoints to the
# ranks in BLAMED (space-separated, ascending) failed, passed, and ran its last iteration with
# exactly the ranks in LIVE.
netns_assert_blamed() {
  local name=$1 r=$2 blamed_want=$3 live_want=$4 log blamed last
  log="$NETNS_TMP/$name.rank$r.log"
  grep -E "^rank $r: (ep to|PASS|FAIL)" "$log"
  blamed=$(grep -oE "ep to rank [0-9]+ failed:" "$log" | grep -oE "[0-9]+" | sort -n | tr '\n' ' ')
  [[ "${blamed% }" == "$blamed_want" ]] ||
    netns_fail "$name: rank $r blamed ranks '${blamed% }', expected '$blamed_want'"
  grep -q "^rank $r: PASS.*failed eps: ${blamed_want:-none}\$" "$log" ||
    netns_fail "$name: rank $r: no PASS line with failed eps: ${blamed_want:-none}"
  last=$(grep "^rank $r: iteration" "$log" | tail -n1)
  [[ "$last" =~ live\ peers:\ (.*)$ ]] || netns_fail "$name: rank $r: no final iteration"
  [[ "${BASH_REMATCH[1]}" == "${live_want:-none}" ]] ||
    netns_fail "$name: rank $r ended with live peers '${BASH_REMATCH[1]}', expected '${live_want:-none}'"
}

# netns_assert_only_failure NAME N DEAD: every rank but DEAD reported exactly one failed
# endpoint, the one to DEAD, kept exchanging with the others to the last iteration, and
# passed.
netns_assert_only_failure() {
  local name=$1 n=$2 dead=$3 r p live
  for (( r = 0; r < n; r++ )); do
    (( r == dead )) && continue
    live=""
    for (( p = 0; p < n; p++ )); do (( p != r && p != dead )) && live+="$p "; done
    netns_assert_blamed "$name" "$r" "$dead" "${live% }"
  done
}

# netns_elapsed NAME R: the seconds rank R's summary reports.
netns_elapsed() {
  sed -n 's/^rank '"$2"': PASS: .* verified in \([0-9.]*\) s .*/\1/p' "$NETNS_TMP/$1.rank$2.log"
}
