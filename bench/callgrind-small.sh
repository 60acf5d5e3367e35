#!/usr/bin/env bash
# Instructions per 8-byte tagged message, counted with callgrind (deterministic where the
# clock of this machine is not): Switchyard's `swy-perf --loopback` (two workers in one
# process, one thread) against UCX's in-process loopback `ucx_perftest -l -t tag_lat` under
# UCX_TLS=posix. Each program runs twice, with N and 2N iterations; the difference of the two
# totals divided by the extra messages is the work per message, start-up cost cancelled.
#
# A ping-pong iteration of swy-perf is two messages (ping and pong), one of ucx_perftest -l
# one message (it sends to itself, then receives it): both are reported per message, i.e.
# per send + matching receive.
#
# With ROUNDS > 0 (default 3) it then times, interleaved best-of-ROUNDS, the 8-byte one-way
# latency of swy-perf (two processes on cores 0,1), ucx_perftest tag_lat (posix,self) and
# shm_fifo_bench's raw ring ping-pong (the physical floor of this machine), and prints the
# ratios. A REPORT only: it exits 0 whatever the numbers are (non-zero only if a program is
# missing or fails to run).
#
# usage: bench/callgrind-small.sh [BUILD_DIR]      (default: build-perf, else build)
# env:   N=2000         iterations of the shorter run (the longer one runs 2N)
#        ROUNDS=3       timing rounds (0: instruction counts only, as CI runs it)
#        TLS=shm        transport of the swy-perf loopback (shm, tcp, self)
#        PORT_BASE=13700  first TCP port for the ucx_perftest timing runs
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-}
if [[ -z $build ]]; then
    for d in "$root/build-perf" "$root/build"; do [[ -x $d/bin/swy-perf ]] && { build=$d; break; }; done
fi
bin=${build:-$root/build-perf}/bin
perf=$bin/swy-perf
n=${N:-2000}
rounds=${ROUNDS:-3}
tls=${TLS:-shm}
port=${PORT_BASE:-13700}

[[ -x $perf ]] || { echo "callgrind-small: no swy-perf at $perf (build target swy-perf)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "callgrind-small: valgrind missing (apt-get install valgrind)" >&2; exit 1; }
have_ucx=1
command -v ucx_perftest >/dev/null || { have_ucx=0; echo "callgrind-small: ucx_perftest missing: UCX columns skipped" >&2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Total instructions of one callgrind run of "$@" (the program's own output is discarded).
count() {
    local out=$tmp/cg.$RANDOM
    if ! valgrind --tool=callgrind --callgrind-out-file="$out" "$@" >"$out.log" 2>&1; then
        echo "callgrind-small: failed under valgrind: $*" >&2
        tail -20 "$out.log" >&2
        return 1
    fi
    sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$out.log"
}

# Per-message instructions: (total(2N) - total(N)) / (N * messages per iteration).
per_message() {
    local per_iter=$1
    shift
    local a b
    a=$(count "$@" "$n") || return 1
    b=$(count "$@" "$((2 * n))") || return 1
    awk -v a="$a" -v b="$b" -v n="$n" -v m="$per_iter" 'BEGIN { printf "%.0f", (b - a) / (n * m) }'
}

echo "# instructions per 8-byte message (send + matching receive), callgrind, N=$n and $((2 * n))"
swy=$(per_message 2 "$perf" --loopback --tls "$tls" --test lat --sizes 8 --warmup 0 --iters) || exit 1
printf "%-44s %8s\n" "swy-perf --loopback --tls $tls (lat)" "$swy"
if ((have_ucx)); then
    ucx=$(export UCX_TLS=posix; per_message 1 ucx_perftest -l -t tag_lat -s 8 -w 0 -n) || exit 1
    printf "%-44s %8s\n" "ucx_perftest -l -t tag_lat (UCX_TLS=posix)" "$ucx"
    awk -v s="$swy" -v u="$ucx" 'BEGIN { printf "%-44s %8.2f   (target <= 0.70)\n", "ratio swy/ucx", s / u }'
fi

((rounds > 0)) || exit 0

# ---- timing: 8-byte one-way latency, interleaved, best of ROUNDS ----------------------------
fifo=$bin/shm_fifo_bench
echo
# Medians (swy-perf: half the median round trip; ucx_perftest: its p50), which a loaded
# machine disturbs less than means; the ring benchmark reports a mean.
echo "# 8-byte one-way latency (us, median; ring: mean), best of $rounds interleaved rounds," \
     "cores 0,1; load: $(cut -d' ' -f1-3 /proc/loadavg)"
best_swy="" best_ucx="" best_ring=""
min() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || (b != "" && b + 0 < a + 0)) print b; else print a }'; }
for ((r = 0; r < rounds; ++r)); do
    v=$("$perf" --test lat --sizes 8 --iters 20000 --warmup 2000 --cpus 0,1 --csv 2>/dev/null |
        awk -F, 'NR == 2 { print $8 }') || v=""
    best_swy=$(min "$best_swy" "$v")
    if ((have_ucx)); then
        port=$((port + 1))
        UCX_TLS=posix,self taskset -c 0 ucx_perftest -p "$port" -t tag_lat -s 8 -n 20000 -w 2000 \
            >/dev/null 2>&1 &
        server=$!
        sleep 0.3
        v=$(UCX_TLS=posix,self taskset -c 1 ucx_perftest 127.0.0.1 -p "$port" -t tag_lat -s 8 \
                -n 20000 -w 2000 2>/dev/null | awk '/^Final:/ { print $3 }') || v=""
        wait "$server" 2>/dev/null || true
        best_ucx=$(min "$best_ucx" "$v")
    fi
    if [[ -x $fifo ]]; then
        # Google Benchmark reports the round trip in ns: one-way = half, in us.
        v=$("$fifo" --benchmark_filter='PingPong/private/8/' --benchmark_format=csv 2>/dev/null |
            awk -F, '/PingPong\/private\/8\// { printf "%.4f", $3 / 2000 }') || v=""
        best_ring=$(min "$best_ring" "$v")
    fi
done
printf "%-44s %8s\n" "swy-perf lat 8 B (shm, two processes)" "${best_swy:-n/a}"
[[ -n $best_ucx ]] && printf "%-44s %8s\n" "ucx_perftest tag_lat 8 B (posix,self)" "$best_ucx"
[[ -n $best_ring ]] && printf "%-44s %8s\n" "shm_fifo_bench PingPong/private/8 (floor)" "$best_ring"
if [[ -n $best_swy && -n $best_ucx ]]; then
    awk -v s="$best_swy" -v u="$best_ucx" 'BEGIN { printf "%-44s %8.2f   (target <= 0.80)\n", "ratio swy/ucx", s / u }'
fi
if [[ -n $best_swy && -n $best_ring ]]; then
    awk -v s="$best_swy" -v f="$best_ring" 'BEGIN { printf "%-44s %8.2f   (target <= 1.15)\n", "ratio swy/floor", s / f }'
fi
exit 0
