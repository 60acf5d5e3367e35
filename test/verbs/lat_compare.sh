#!/bin/sh
# 8-byte one-way latency of swy-perf against perftest's ib_send_lat, like with like, on one
# RDMA port (inside the Soft-RoCE VM: run by run-vm.sh, or by hand through run-in-rxe-vm).
#
#   lat_compare.sh SWY_PERF ROUNDS [LABEL=LIBDIR]...
#
# What is compared. ib_send_lat (client side) prints t_typical, the median, and t_avg, the
# mean, of half round trips; it sends inline and busy-polls its CQ. swy-perf --test lat prints
# the mean one-way time (latency_us) and half the median round trip (latency_median_us). So
# avg goes with avg and median with typical. The programs run one after the other, never
# together, in ROUNDS interleaved rounds (the order rotates from round to round), because on a
# shared TCG host the level moves between minutes: only ratios inside one round mean much.
# Both programs pin their two processes to cores 0 and 1 (taskset; swy-perf --cpus 0,1). Besides the means over the rounds, the best
# round of each column is reported (../shared/design/MEASURING.md): a TCG guest on a loaded
# host stalls whole rounds to the scheduler tick (medians of 4-6 ms), whichever program runs.
#
# Each LABEL=LIBDIR runs the same swy-perf binary against the libswitchyard.so in LIBDIR
# (LD_LIBRARY_PATH; e.g. main's library beside this tree's); without any, the binary's own.
#
# With strace in the guest (SWY_LAT_STRACE=0 turns it off), one more pass counts the system
# calls of both processes per round trip: each program runs with N and 5N iterations and the
# difference is divided by 4N, so set-up and tear-down cancel out.
set -u
PERF=${1:?usage: lat_compare.sh SWY_PERF ROUNDS [LABEL=LIBDIR]...}
ROUNDS=${2:-3}
shift 2
VARIANTS=${*:-swy=}
DEV=${RXE_VM_DEV:-rxe0}
GIDX=${RXE_VM_GID_INDEX:-1}
IP=${RXE_VM_IP:-198.18.0.1}
ITERS=${SWY_LAT_ITERS:-1000}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# ib_lat STRACE_STEM FLAGS...: ib_send_lat's server in the background, its client in the
# foreground after a head start of $HEAD s; prints the client's output. A non-empty
# STRACE_STEM counts each side's system calls into STEM.srv and STEM.cli.
HEAD=1
ib_lat() {
    stem=$1
    shift
    set -- ib_send_lat -d "$DEV" -x "$GIDX" -s 8 "$@"
    if [ -n "$stem" ]; then
        timeout 120 taskset -c 1 strace -f -c -o "$stem.srv" "$@" >/dev/null 2>&1 &
        srv=$!
        sleep "$HEAD"
        timeout 120 taskset -c 0 strace -f -c -o "$stem.cli" "$@" "$IP" 2>&1
    else
        timeout 120 taskset -c 1 "$@" >/dev/null 2>&1 &
        srv=$!
        sleep "$HEAD"
        timeout 120 taskset -c 0 "$@" "$IP" 2>&1
    fi
    # A client that never connected leaves its server listening: don't wait out its timeout.
    i=0
    while kill -0 "$srv" 2>/dev/null && [ $i -lt 50 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    kill "$srv" 2>/dev/null
    wait "$srv" 2>/dev/null
}
# swy_lat LIBDIR ITERS [PREFIX...]: swy-perf's CSV line for 8 B.
swy_lat() {
    lib=$1
    iters=$2
    shift 2
    LD_LIBRARY_PATH=${lib:-${LD_LIBRARY_PATH:-}} timeout 300 "$@" "$PERF" --tls verbs,self \
        --test lat --sizes 8 --iters "$iters" --warmup 50 --cpus 0,1 --csv 2>/dev/null |
        awk -F, '$2 == 8'
}

header="round   ib_send_lat typical    avg"
for v in $VARIANTS; do header="$header |  ${v%%=*} avg  median"; done
echo "8 B one-way latency (us), $ITERS round trips each, programs one at a time:"
echo "$header"
# measure K: one program's figures into $TMP/fig.K (0: ib_send_lat, k: the k-th variant).
measure() {
    if [ "$1" = 0 ]; then
        fig=
        for HEAD in 1 2 4; do  # the server may not listen yet after its head start: retry
            fig=$(ib_lat "" -n "$ITERS" | awk '$1 == 8 {printf "%19s %6s", $5, $6}')
            [ -n "$fig" ] && break
        done
        HEAD=1
        echo "${fig:-                  ?      ?}" > "$TMP/fig.0"
    else
        v=$(echo "$VARIANTS" | tr ' ' '\n' | sed -n "${1}p")
        fig=$(swy_lat "${v#*=}" "$ITERS" | awk -F, '{printf "%9.1f %7.1f", $4, $8}')
        echo "${fig:-        ?       ?}" > "$TMP/fig.$1"
    fi
}
NPROG=$(($(echo "$VARIANTS" | wc -w) + 1))
for r in $(seq 1 "$ROUNDS"); do
    # The order rotates from round to round, so no program always runs first or after the
    # same one.
    for i in $(seq 0 $((NPROG - 1))); do measure $(((i + r - 1) % NPROG)); done
    line=$(printf "%-7s %s" "$r" "$(cat "$TMP/fig.0")")
    for i in $(seq 1 $((NPROG - 1))); do line="$line | $(cat "$TMP/fig.$i")"; done
    echo "$line"
done | tee "$TMP/rounds"
# Means over the complete rounds, and the ratios the target is about (columns: 2 typical,
# 3 avg, then per variant: "|", avg, median).
awk -v vars="$VARIANTS" '
    function low(x, y) { return (y == "" || x < y) ? x : y }
    /[?]/ { next }  # a round with a missing figure does not count
    { n++; typ += $2; avg += $3; btyp = low($2, btyp); bavg = low($3, bavg); k = 0
      for (i = 4; i <= NF; i += 3) {
          k++; a[k] += $(i + 1); m[k] += $(i + 2)
          ba[k] = low($(i + 1), ba[k]); bm[k] = low($(i + 2), bm[k])
      } }
    END {
        if (n == 0 || avg == 0) exit
        split(vars, name, " ")
        printf "mean    %19.1f %6.1f", typ / n, avg / n
        for (j = 1; j <= k; j++) printf " | %9.1f %7.1f", a[j] / n, m[j] / n
        printf "\nbest    %19.1f %6.1f", btyp, bavg
        for (j = 1; j <= k; j++) printf " | %9.1f %7.1f", ba[j], bm[j]
        printf "\n"
        for (j = 1; j <= k; j++) {
            sub(/=.*/, "", name[j])
            printf "ratio %s/ib_send_lat: avg/avg %.2f, median/typical %.2f (means); " \
                   "%.2f, %.2f (best rounds; target <= 1.3)\n", name[j], a[j] / avg,
                   (typ > 0 ? m[j] / typ : 0), ba[j] / bavg, (btyp > 0 ? bm[j] / btyp : 0)
        }
    }' "$TMP/rounds"

[ "${SWY_LAT_STRACE:-1}" = 1 ] && command -v strace >/dev/null 2>&1 || exit 0
# System calls per round trip, both processes together, with the calls that make them up.
N=200
per_rtt() {  # per_rtt FILE_N FILE_5N: "total  name count  name count ..." per round trip
    awk -v d=$((4 * N)) '
        FNR == 1 { f++ }
        $1 ~ /^[0-9.]+$/ && $NF ~ /^[a-z_0-9]+$/ && $NF != "total" && NF >= 5 {
            c[f, $NF] += $4; names[$NF] = 1 }
        END {
            for (s in names) { x = (c[2, s] - c[1, s]) / d; t += x; if (x >= 0.01) out = out sprintf("  %s %.2f", s, x) }
            printf "%6.2f %s\n", t, out
        }' "$1" "$2"
}
echo "system calls per round trip (client + server, strace -f -c, ${N} vs $((5 * N)) round trips):"
HEAD=2
for n in $N $((5 * N)); do
    ib_lat "$TMP/ib.$n" -n "$n" >/dev/null
    cat "$TMP/ib.$n.srv" "$TMP/ib.$n.cli" > "$TMP/ib.$n" 2>/dev/null
done
printf "  %-18s %s\n" "ib_send_lat" "$(per_rtt "$TMP/ib.$N" "$TMP/ib.$((5 * N))")"
for v in $VARIANTS; do
    for n in $N $((5 * N)); do
        swy_lat "${v#*=}" "$n" strace -f -c -o "$TMP/swy.$n" >/dev/null
    done
    printf "  %-18s %s\n" "${v%%=*}" "$(per_rtt "$TMP/swy.$N" "$TMP/swy.$((5 * N))")"
done
