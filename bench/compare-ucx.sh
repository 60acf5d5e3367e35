#!/usr/bin/env bash
# Interleaved comparison of swy-perf with UCX's ucx_perftest on this machine, as
# docs in shared/design/MEASURING.md prescribe: A, B, A, B, ... for R rounds, processes pinned
# to cores 0 and 1, best figure of each side, ratio ours/peer.
#
# usage: bench/compare-ucx.sh [BUILD_DIR]      (default: build-perf, else build)
# env:   ROUNDS=5          rounds per case
#        PORT_BASE=13400   first TCP port for ucx_perftest (a fresh one per run)
#        CASES="lat8 mr8 bw1M bw4M lat64K"   subset of cases to run
#        MODE=shm          shm: swy-perf default transports vs UCX posix/cma;
#                          tcp: swy-perf --tls tcp,self vs UCX_TLS=tcp on loopback
#                          (UCX_NET_DEVICES=lo), default cases "lat8 mr8 bw1M bw4M bw64M"
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-}
if [[ -z $build ]]; then
    for d in "$root/build-perf" "$root/build"; do [[ -x $d/bin/swy-perf ]] && { build=$d; break; }; done
fi
perf=${build:-$root/build-perf}/bin/swy-perf
[[ -x $perf ]] || { echo "compare-ucx: no swy-perf at $perf (build target swy-perf)" >&2; exit 1; }
command -v ucx_perftest >/dev/null || { echo "compare-ucx: ucx_perftest missing (apt-get install ucx-utils)" >&2; exit 1; }

rounds=${ROUNDS:-5}
port=${PORT_BASE:-13400}
mode=${MODE:-shm}
case $mode in
    shm) cases=${CASES:-"lat8 mr8 bw1M bw4M lat64K"}; swy_tls=() ;;
    tcp) cases=${CASES:-"lat8 mr8 bw1M bw4M bw64M"}; swy_tls=(--tls tcp,self)
         export UCX_NET_DEVICES=lo ;;
    *) echo "compare-ucx: MODE must be shm or tcp" >&2; exit 2 ;;
esac

# case → swy-perf test, size (bytes), ucx test, UCX_TLS, metric (lat: lower is better,
# mr: M msg/s, bw: MB/s), iterations, warm-up
declare -A C_SWY C_SIZE C_UCX C_TLS C_METRIC C_ITERS C_WARM
def() { C_SWY[$1]=$2; C_SIZE[$1]=$3; C_UCX[$1]=$4; C_TLS[$1]=$5; C_METRIC[$1]=$6; C_ITERS[$1]=$7; C_WARM[$1]=$8; }
def lat8   lat 8       tag_lat posix,self     lat 20000  2000
def mr8    mr  8       tag_bw  posix,self     mr  200000 20000
def bw1M   bw  1048576 tag_bw  posix,cma,self bw  2048   256
def bw4M   bw  4194304 tag_bw  posix,cma,self bw  512    64
def lat64K lat 65536   tag_lat posix,cma,self lat 5000   500
def bw64M  bw  67108864 tag_bw posix,cma,self bw  64     8
if [[ $mode == tcp ]]; then
    for c in "${!C_TLS[@]}"; do C_TLS[$c]=tcp; done
fi

# swy-perf: one CSV row; print the metric.
run_swy() {
    local c=$1 out
    out=$("$perf" "${swy_tls[@]}" --test "${C_SWY[$c]}" --sizes "${C_SIZE[$c]}" --iters "${C_ITERS[$c]}" \
          --warmup "${C_WARM[$c]}" --cpus 0,1 --csv) || { echo "nan"; return; }
    # test,size,iters,latency_us,bandwidth_MBps,msg_rate_Mps,protocol
    awk -F, -v m="${C_METRIC[$c]}" 'NR == 2 {
        if (m == "lat") print $4; else if (m == "bw") print $5; else print $6 }' <<<"$out"
}

# ucx_perftest: server on core 0, client on core 1, on $port; parse the client's Final line.
# The caller moves $port on before each run: this function runs inside $(...), where an
# increment would be lost and every run would reuse the first port.
run_ucx() {
    local c=$1 out srv
    UCX_TLS=${C_TLS[$c]} taskset -c 0 ucx_perftest -p "$port" -t "${C_UCX[$c]}" \
        -s "${C_SIZE[$c]}" -n "${C_ITERS[$c]}" -w "${C_WARM[$c]}" >/dev/null 2>&1 &
    srv=$!
    sleep 0.3
    out=$(UCX_TLS=${C_TLS[$c]} taskset -c 1 ucx_perftest 127.0.0.1 -p "$port" -t "${C_UCX[$c]}" \
          -s "${C_SIZE[$c]}" -n "${C_ITERS[$c]}" -w "${C_WARM[$c]}" 2>&1) || true
    wait "$srv" 2>/dev/null || true
    # Final: iters  lat-p50 lat-avg lat-overall(us)  bw-avg bw-overall(MiB/s)  rate-avg rate-overall
    awk -v m="${C_METRIC[$c]}" '/Final:/ {
        for (i = 1; i <= NF; ++i) if ($i == "Final:") break
        if (m == "lat") print $(i + 4)
        else if (m == "bw") printf "%.2f\n", $(i + 6) * 1.048576
        else printf "%.4f\n", $(i + 8) / 1e6
        found = 1 }
        END { if (!found) print "nan" }' <<<"$out"
}

# best of a list: min for latency, max otherwise (nan ignored)
best() {
    local metric=$1; shift
    printf '%s\n' "$@" | awk -v m="$metric" '$1 != "nan" && $1 != "" {
        v = $1 + 0; if (!n || (m == "lat" ? v < b : v > b)) b = v; n++ }
        END { if (n) print b; else print "nan" }'
}

unit() { case $1 in lat) echo "us (one-way)";; bw) echo "MB/s";; mr) echo "M msg/s";; esac; }

declare -A BEST_SWY BEST_UCX
for c in $cases; do
    [[ -n ${C_SWY[$c]:-} ]] || { echo "compare-ucx: unknown case $c" >&2; exit 2; }
    swy_vals=() ucx_vals=()
    for ((r = 1; r <= rounds; ++r)); do
        s=$(run_swy "$c")
        port=$((port + 1))
        u=$(run_ucx "$c")
        swy_vals+=("$s") ucx_vals+=("$u")
        printf '%-7s round %d/%d: swy %-10s ucx %-10s %-14s load %s\n' "$c" "$r" "$rounds" \
            "$s" "$u" "$(unit "${C_METRIC[$c]}")" "$(cut -d' ' -f1-3 /proc/loadavg)"
    done
    BEST_SWY[$c]=$(best "${C_METRIC[$c]}" "${swy_vals[@]}")
    BEST_UCX[$c]=$(best "${C_METRIC[$c]}" "${ucx_vals[@]}")
done

echo
echo "mode $mode; uptime:$(uptime)"
echo "best of $rounds rounds (swy-perf vs ucx_perftest $(ucx_info -v 2>/dev/null | awk '/Version/ {print $3; exit}'))"
printf '%-7s %-14s %12s %12s %10s\n' case unit swy ucx "swy/ucx"
for c in $cases; do
    s=${BEST_SWY[$c]} u=${BEST_UCX[$c]}
    ratio=$(awk -v s="$s" -v u="$u" 'BEGIN { if (s == "nan" || u == "nan" || u + 0 == 0) print "-";
                                            else printf "%.2f", s / u }')
    printf '%-7s %-14s %12s %12s %10s\n' "$c" "$(unit "${C_METRIC[$c]}")" "$s" "$u" "$ratio"
done
echo "(latency: ratio < 1 is better for swy; bandwidth and rate: ratio > 1 is better)"
