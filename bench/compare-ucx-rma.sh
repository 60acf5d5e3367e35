#!/usr/bin/env bash
# Interleaved comparison of swy-perf's one-sided and active-message tests with UCX's
# ucx_perftest, as shared/design/MEASURING.md prescribes (and bench/compare-ucx.sh does for the
# tag tests): A, B, A, B, ... for R rounds, processes pinned to cores 0 and 1, best figure of
# each side, ratio ours/peer.
#
#   swy-perf --test   ucx_perftest -t    what is compared
#   put_lat           ucp_put_lat        one-way latency (half a round trip of puts)
#   get_lat           ucp_get            time of one blocking get (window 1, ucx's default)
#   fadd_lat          ucp_fadd           time of one fetch-and-add
#   cswap_lat         ucp_cswap          time of one compare-and-swap
#   add_mr            ucp_add            posted atomic adds per second
#   put_bw            ucp_put_bw         bandwidth, 32 puts in flight (ucx's default window)
#   get_bw            ucp_get -O 32      bandwidth, 32 gets in flight
#   am_lat            ucp_am_lat         one-way active-message latency (header 0 B)
#   am_bw             ucp_am_bw          active messages per second / bandwidth, window 32
#   bw (tcp only)     tag_bw             tag bandwidth, the reference for tcp put/get
#
# usage: bench/compare-ucx-rma.sh [BUILD_DIR]      (default: build-perf, else build)
# env:   ROUNDS=5          rounds per case
#        PORT_BASE=13500   first TCP port for ucx_perftest (a fresh one per run)
#        MODE=shm          shm: swy-perf default transports vs UCX_TLS=posix,cma,self;
#                          tcp: swy-perf --tls tcp,self vs UCX_TLS=tcp on loopback
#                          (UCX_NET_DEVICES=lo)
#        CASES="..."       subset of cases (names in the table below)
#        SIDE=both         both | swy | ucx: run one side only (e.g. UCX's numbers while
#                          Switchyard's side is being built)
#        SWY_EXTRA="..."   extra swy-perf flags, e.g. "--register" (user memory mapped in
#                          place instead of swy_mem_map(ALLOCATE)) or "--check"
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-}
if [[ -z $build ]]; then
    for d in "$root/build-perf" "$root/build"; do [[ -x $d/bin/swy-perf ]] && { build=$d; break; }; done
fi
perf=${build:-$root/build-perf}/bin/swy-perf
side=${SIDE:-both}
if [[ $side != ucx ]]; then
    [[ -x $perf ]] || { echo "compare-ucx-rma: no swy-perf at $perf (build target swy-perf)" >&2; exit 1; }
fi
if [[ $side != swy ]]; then
    command -v ucx_perftest >/dev/null || { echo "compare-ucx-rma: ucx_perftest missing (apt-get install ucx-utils)" >&2; exit 1; }
fi

rounds=${ROUNDS:-5}
port=${PORT_BASE:-13500}
mode=${MODE:-shm}
read -r -a swy_extra <<<"${SWY_EXTRA:-}"
case $mode in
    shm) cases=${CASES:-"put_lat8 get_lat8 fadd8 cswap8 add_mr8 am_lat8 am_mr8 put_bw1M get_bw1M am_bw1M"}
         swy_tls=(); ucx_tls=posix,cma,self ;;
    tcp) cases=${CASES:-"put_lat8 get_lat8 fadd8 am_lat8 am_mr8 put_bw4M get_bw4M tag_bw4M"}
         swy_tls=(--tls tcp,self); ucx_tls=tcp
         export UCX_NET_DEVICES=lo ;;
    *) echo "compare-ucx-rma: MODE must be shm or tcp" >&2; exit 2 ;;
esac

# case → swy-perf test, size (bytes), ucx test, extra ucx flags, metric (lat: lower is
# better, us; mr: M msg/s; bw: MB/s), iterations, warm-up. Windows are 32 on both sides.
declare -A C_SWY C_SIZE C_UCX C_UCXF C_METRIC C_ITERS C_WARM
def() { C_SWY[$1]=$2; C_SIZE[$1]=$3; C_UCX[$1]=$4; C_UCXF[$1]=$5; C_METRIC[$1]=$6; C_ITERS[$1]=$7; C_WARM[$1]=$8; }
def put_lat8  put_lat   8       ucp_put_lat ""      lat 20000  2000
def get_lat8  get_lat   8       ucp_get     "-O 1"  lat 20000  2000
def fadd8     fadd_lat  8       ucp_fadd    ""      lat 20000  2000
def cswap8    cswap_lat 8       ucp_cswap   ""      lat 20000  2000
def add_mr8   add_mr    8       ucp_add     ""      mr  200000 20000
def am_lat8   am_lat    8       ucp_am_lat  ""      lat 20000  2000
def am_mr8    am_bw     8       ucp_am_bw   "-O 32" mr  200000 20000
def put_bw1M  put_bw    1048576 ucp_put_bw  "-O 32" bw  2048   256
def get_bw1M  get_bw    1048576 ucp_get     "-O 32" bw  2048   256
def am_bw1M   am_bw     1048576 ucp_am_bw   "-O 32" bw  2048   256
def put_bw4M  put_bw    4194304 ucp_put_bw  "-O 32" bw  512    64
def get_bw4M  get_bw    4194304 ucp_get     "-O 32" bw  512    64
def tag_bw4M  bw        4194304 tag_bw      "-O 32" bw  512    64
if [[ $mode == tcp ]]; then
    # tcp: ~10 us per round trip (and UCX's software put_lat/get far more): fewer iterations
    # keep a round short.
    for c in "${!C_ITERS[@]}"; do
        if [[ ${C_METRIC[$c]} == lat ]]; then C_ITERS[$c]=2000 C_WARM[$c]=200
        elif [[ ${C_METRIC[$c]} == mr ]]; then C_ITERS[$c]=20000 C_WARM[$c]=2000; fi
    done
fi

# swy-perf: one CSV row; print the metric.
run_swy() {
    local c=$1 out
    out=$("$perf" "${swy_tls[@]}" --test "${C_SWY[$c]}" --sizes "${C_SIZE[$c]}" --iters "${C_ITERS[$c]}" \
          --warmup "${C_WARM[$c]}" --window 32 --cpus 0,1 --csv "${swy_extra[@]}" 2>/dev/null) || { echo "nan nan"; return; }
    # test,size,iters,latency_us,bandwidth_MBps,msg_rate_Mps,protocol,latency_median_us
    # lat: the mean, then the median (ucx_perftest's "typical"): under load the median is
    # the steadier of the two.
    awk -F, -v m="${C_METRIC[$c]}" 'NR == 2 {
        if (m == "lat") print $4, $8; else if (m == "bw") print $5; else print $6 }' <<<"$out"
}

# ucx_perftest: server on core 0, client on core 1, on $port (the caller moves it on: this
# runs in a command substitution, whose assignments are lost); parse the client's Final line.
run_ucx() {
    local c=$1 out srv
    local -a flags
    read -r -a flags <<<"${C_UCXF[$c]}"
    UCX_TLS=$ucx_tls timeout 120 taskset -c 0 ucx_perftest -p "$port" -t "${C_UCX[$c]}" "${flags[@]}" \
        -s "${C_SIZE[$c]}" -n "${C_ITERS[$c]}" -w "${C_WARM[$c]}" >/dev/null 2>&1 &
    srv=$!
    sleep 0.3
    out=$(UCX_TLS=$ucx_tls timeout 120 taskset -c 1 ucx_perftest 127.0.0.1 -p "$port" -t "${C_UCX[$c]}" \
          "${flags[@]}" -s "${C_SIZE[$c]}" -n "${C_ITERS[$c]}" -w "${C_WARM[$c]}" 2>&1) || true
    wait "$srv" 2>/dev/null || true
    # Final: iters  lat-typical lat-avg lat-overall(us)  bw-avg bw-overall(MiB/s)  rate-avg
    # rate-overall. Ping-pong tests report half a round trip, the others time per operation.
    awk -v m="${C_METRIC[$c]}" '/Final:/ {
        for (i = 1; i <= NF; ++i) if ($i == "Final:") break
        if (m == "lat") print $(i + 4), $(i + 2)
        else if (m == "bw") printf "%.2f\n", $(i + 6) * 1.048576
        else printf "%.4f\n", $(i + 8) / 1e6
        found = 1 }
        END { if (!found) print "nan nan" }' <<<"$out"
}

# best of a list: min for latency, max otherwise (nan ignored)
best() {
    local metric=$1; shift
    printf '%s\n' "$@" | awk -v m="$metric" '$1 != "nan" && $1 != "" {
        v = $1 + 0; if (!n || (m == "lat" ? v < b : v > b)) b = v; n++ }
        END { if (n) print b; else print "nan" }'
}

unit() { case $1 in lat) echo "us";; bw) echo "MB/s";; mr) echo "M msg/s";; esac; }

declare -A BEST_SWY BEST_UCX MED_SWY MED_UCX
for c in $cases; do
    [[ -n ${C_SWY[$c]:-} ]] || { echo "compare-ucx-rma: unknown case $c" >&2; exit 2; }
    swy_vals=() ucx_vals=() swy_meds=() ucx_meds=()
    for ((r = 1; r <= rounds; ++r)); do
        s="nan nan" u="nan nan"
        [[ $side == ucx ]] || s=$(run_swy "$c")
        [[ $side == swy ]] || { port=$((port + 1)); u=$(run_ucx "$c"); }
        read -r s sm <<<"$s"
        read -r u um <<<"$u"
        swy_vals+=("$s") ucx_vals+=("$u") swy_meds+=("${sm:-nan}") ucx_meds+=("${um:-nan}")
        printf '%-9s round %d/%d: swy %-10s ucx %-10s %-8s%s load %s\n' "$c" "$r" "$rounds" \
            "$s" "$u" "$(unit "${C_METRIC[$c]}")" \
            "$([[ ${C_METRIC[$c]} == lat ]] && echo " (median swy ${sm:-nan} ucx ${um:-nan})")" \
            "$(cut -d' ' -f1-3 /proc/loadavg)"
    done
    BEST_SWY[$c]=$(best "${C_METRIC[$c]}" "${swy_vals[@]}")
    BEST_UCX[$c]=$(best "${C_METRIC[$c]}" "${ucx_vals[@]}")
    MED_SWY[$c]=$(best lat "${swy_meds[@]}")
    MED_UCX[$c]=$(best lat "${ucx_meds[@]}")
done

ratio() {
    awk -v s="$1" -v u="$2" 'BEGIN { if (s == "nan" || u == "nan" || u + 0 == 0) print "-";
                                     else printf "%.2f", s / u }'
}

echo
echo "mode $mode; swy-perf ${swy_tls[*]} ${swy_extra[*]}; uptime:$(uptime)"
echo "best of $rounds rounds (swy-perf vs ucx_perftest $(ucx_info -v 2>/dev/null | awk '/Version/ {print $3; exit}'), UCX_TLS=$ucx_tls)"
printf '%-9s %-10s %-16s %-8s %12s %12s %8s\n' case swy-test ucx-test unit swy ucx "swy/ucx"
for c in $cases; do
    printf '%-9s %-10s %-16s %-8s %12s %12s %8s\n' "$c" "${C_SWY[$c]}" "${C_UCX[$c]} ${C_UCXF[$c]}" \
        "$(unit "${C_METRIC[$c]}")" "${BEST_SWY[$c]}" "${BEST_UCX[$c]}" \
        "$(ratio "${BEST_SWY[$c]}" "${BEST_UCX[$c]}")"
done
echo "(latency: ratio < 1 is better for swy; bandwidth and rate: ratio > 1 is better)"
echo "latency medians (swy-perf median column, ucx_perftest typical), best of $rounds:"
for c in $cases; do
    [[ ${C_METRIC[$c]} == lat ]] || continue
    printf '%-9s %-10s %-16s %-8s %12s %12s %8s\n' "$c" "${C_SWY[$c]}" "${C_UCX[$c]} ${C_UCXF[$c]}" \
        us "${MED_SWY[$c]}" "${MED_UCX[$c]}" "$(ratio "${MED_SWY[$c]}" "${MED_UCX[$c]}")"
done
# tcp target: one-sided bandwidth against the same library's tag bandwidth.
for c in put_bw4M get_bw4M; do
    if [[ -n ${BEST_SWY[$c]:-} && -n ${BEST_SWY[tag_bw4M]:-} ]]; then
        echo "swy $c / swy tag_bw4M: $(ratio "${BEST_SWY[$c]}" "${BEST_SWY[tag_bw4M]}")" \
             "(ucx: $(ratio "${BEST_UCX[$c]}" "${BEST_UCX[tag_bw4M]}"))"
    fi
done
