#!/usr/bin/env bash
# The middle sizes over shm against UCX (issue 17: "at every power of two from 16 KiB to
# 1 MiB >= 1.2x UCX tag_bw (posix,cma), and the curve never drops by more than 10 % from one
# size to the next"). Interleaved as shared/design/MEASURING.md prescribes: per round, one
# swy-perf run over every size for each configuration, then ucx_perftest per size; the best
# figure of each over the rounds, the ratio to UCX, the protocol swy-perf reported, and the
# drop from the previous size.
#
# usage: bench/compare-ucx-middle.sh [BUILD_DIR]
# env:   ROUNDS=5              rounds
#        TEST=bw               bw (MB/s, window 64) or lat (one-way us: half the median
#                              round trip of swy-perf, ucx_perftest's p50; a loaded host's
#                              scheduler makes means meaningless)
#        SIZES="16K 32K ..."   sizes (K/M suffixes); default every power of two 16K..1M
#        CONFIGS="auto"        swy-perf configurations, each "name" or "name:ENV=v;ENV2=w"
#                              (e.g. "auto get:SWY_RNDV_SCHEME=get pipe:SWY_RNDV_SCHEME=pipeline")
#        BYTES=268435456       bytes moved per size and run (iterations = BYTES / size)
#        UCX_TLS_MIDDLE=posix,cma,self
#        PORT_BASE=14400
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-}
if [[ -z $build ]]; then
    for d in "$root/build-perf" "$root/build"; do [[ -x $d/bin/swy-perf ]] && { build=$d; break; }; done
fi
perf=${build:-$root/build}/bin/swy-perf
[[ -x $perf ]] || { echo "compare-ucx-middle: no swy-perf at $perf" >&2; exit 1; }
command -v ucx_perftest >/dev/null || { echo "compare-ucx-middle: ucx_perftest missing" >&2; exit 1; }

rounds=${ROUNDS:-5}
test=${TEST:-bw}
sizes=${SIZES:-"16K 32K 64K 128K 256K 512K 1M"}
configs=${CONFIGS:-auto}
bytes=${BYTES:-268435456}
tls=${UCX_TLS_MIDDLE:-posix,cma,self}
port=${PORT_BASE:-14400}
case $test in
    bw) ucx_test=tag_bw; metric=bw ;;
    lat) ucx_test=tag_lat; metric=lat ;;
    *) echo "compare-ucx-middle: TEST must be bw or lat" >&2; exit 2 ;;
esac

to_bytes() {
    local s=$1
    case $s in
        *K) echo $((${s%K} * 1024)) ;;
        *M) echo $((${s%M} * 1048576)) ;;
        *) echo "$s" ;;
    esac
}
iters_for() {
    local n=$(($bytes / $1))
    ((n < 200)) && n=200
    ((n > 20000)) && n=20000
    echo "$n"
}

declare -A BEST PROTO
better() {  # better OLD NEW → the better of the two (nan/empty ignored)
    awk -v a="${1:-nan}" -v b="${2:-nan}" -v m="$metric" 'BEGIN {
        if (a == "nan" || a == "") { print b; exit }
        if (b == "nan" || b == "") { print a; exit }
        if (m == "lat") print (b + 0 < a + 0 ? b : a); else print (b + 0 > a + 0 ? b : a) }'
}

run_swy() {  # run_swy CONFIG_ENV → "size value protocol" lines
    local envs=$1 s
    local args=()
    [[ -n $envs ]] && IFS=";" read -r -a args <<<"$envs"
    # One run per size so each gets its own iteration count.
    for s in $sizes; do
        local n
        n=$(to_bytes "$s")
        env SWY_CALIBRATION_FILE="${SWY_CALIBRATION_FILE:-/dev/null}" "${args[@]}" \
            timeout 300 "$perf" --test "$test" --sizes "$n" --iters "$(iters_for "$n")" \
            --warmup "$(($(iters_for "$n") / 8 + 1))" --cpus 0,1 --csv 2>/dev/null |
            awk -F, -v m="$metric" 'NR == 2 { print $2, (m == "lat" ? $8 : $5), $7 }' || true
    done
}

run_ucx() {  # run_ucx SIZE_BYTES → value
    local n=$1 out srv it
    it=$(iters_for "$n")
    # timeout: under load the client can miss the server's port and leave it waiting.
    UCX_TLS=$tls timeout 120 taskset -c 0 ucx_perftest -p "$port" -t "$ucx_test" -s "$n" -n "$it" \
        -w "$((it / 8 + 1))" >/dev/null 2>&1 &
    srv=$!
    sleep 1
    out=$(UCX_TLS=$tls timeout 120 taskset -c 1 ucx_perftest 127.0.0.1 -p "$port" -t "$ucx_test" -s "$n" \
          -n "$it" -w "$((it / 8 + 1))" 2>&1) || true
    wait "$srv" 2>/dev/null || true
    awk -v m="$metric" '/Final:/ {
        for (i = 1; i <= NF; ++i) if ($i == "Final:") break
        if (m == "lat") print $(i + 2); else printf "%.2f\n", $(i + 6) * 1.048576
        found = 1 }
        END { if (!found) print "nan" }' <<<"$out"
}

loads=()
declare -A PREV
for ((r = 1; r <= rounds; ++r)); do
    for c in $configs; do
        name=${c%%:*}
        envs=""
        [[ $c == *:* ]] && envs=${c#*:}
        while read -r size value proto; do
            [[ -z ${size:-} ]] && continue
            BEST[$name,$size]=$(better "${BEST[$name,$size]:-}" "$value")
            PROTO[$name,$size]=$proto
        done < <(run_swy "$envs")
    done
    for s in $sizes; do
        n=$(to_bytes "$s")
        port=$((port + 1))
        BEST[ucx,$n]=$(better "${BEST[ucx,$n]:-}" "$(run_ucx "$n")")
    done
    loads+=("$(cut -d' ' -f1 /proc/loadavg)")
    echo "round $r/$rounds done, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done

echo "test $test ($([[ $metric == lat ]] && echo 'one-way us, lower is better' || echo 'MB/s, higher is better')); best of $rounds rounds; UCX_TLS=$tls"
echo "load average (1 min) after each round: ${loads[*]}; $(nproc) CPUs"
printf '%-8s' size
for c in $configs; do printf ' %12s %6s %-14s %6s' "${c%%:*}" "/ucx" "protocol" "step"; done
printf ' %12s\n' ucx
for s in $sizes; do
    n=$(to_bytes "$s")
    printf '%-8s' "$s"
    for c in $configs; do
        name=${c%%:*}
        v=${BEST[$name,$n]:-nan} u=${BEST[ucx,$n]:-nan} p=${PREV[$name]:-nan}
        ratio=$(awk -v s="$v" -v u="$u" 'BEGIN { if (s == "nan" || u == "nan" || u + 0 == 0) print "-"; else printf "%.2f", s / u }')
        step=$(awk -v s="$v" -v p="$p" 'BEGIN { if (s == "nan" || p == "nan" || p + 0 == 0) print "-"; else printf "%+.0f%%", (s / p - 1) * 100 }')
        printf ' %12s %6s %-14s %6s' "$v" "$ratio" "${PROTO[$name,$n]:-?}" "$step"
        PREV[$name]=$v
    done
    printf ' %12s\n' "${BEST[ucx,$n]:-nan}"
done
