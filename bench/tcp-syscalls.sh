#!/usr/bin/env bash
# System calls per message over tcp on loopback, Switchyard (swy-perf --tls tcp,self) against
# UCX (ucx_perftest, UCX_TLS=tcp UCX_NET_DEVICES=lo), counted with `strace -c -f`: a count
# does not depend on the load of the machine the way a time does (only the number of empty
# polls does: they are listed apart, as "failed" calls).
#
# usage: bench/tcp-syscalls.sh [BUILD_DIR]     (default: build)
# env:   LAT_ITERS=5000  8-byte ping-pong iterations (2 messages each)
#        BW_ITERS=256    4 MiB streaming iterations (one message each; rounded up to a
#                        multiple of 64, swy-perf's window; 64 warm-up messages on top)
#        PORT=13900      ucx_perftest's port (PORT and PORT+1)
# Prints, per case, the I/O system calls (send/recv/epoll/ioctl/sockopt/timerfd...) of both
# processes together per message, successful and failed (EAGAIN) apart. Set-up calls are
# left out; the failed ones are empty polls, whose number depends on timing and load (so is
# an epoll_wait that found nothing, counted as successful: a sender waiting for room).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
perf=$build/bin/swy-perf
[[ -x $perf ]] || { echo "tcp-syscalls: no swy-perf at $perf" >&2; exit 1; }
command -v strace >/dev/null || { echo "tcp-syscalls: strace missing (apt-get install strace)" >&2; exit 1; }
command -v ucx_perftest >/dev/null || { echo "tcp-syscalls: ucx_perftest missing" >&2; exit 1; }

lat_iters=${LAT_ITERS:-5000}
# swy-perf rounds a stream's iterations and warm-up up to whole windows (64 messages): so do
# we, or the count per message would be divided by too few messages (by 272 for 320 sent)
bw_iters=$(((${BW_ITERS:-256} + 63) / 64 * 64))
bw_warm=64
port=${PORT:-13900}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# strace -c summaries (both processes of a run) → calls per message of the I/O system calls,
# successful and failed (EAGAIN: an empty poll or a full socket) apart
per_msg() {
    local msgs=$1 label=$2; shift 2
    awk -v n="$msgs" -v label="$label" '
        /^-+ / { body = !body; next }
        body && NF >= 5 && $NF != "total" {
            name = $NF
            if (name !~ /^(send|recv|epoll|poll|select|ioctl|setsockopt|getsockopt|timerfd|read$|write$|sched_yield)/) next
            calls[name] += $4; errs[name] += (NF == 6) ? $5 : 0
        }
        END {
            for (k in calls) {
                ok = (calls[k] - errs[k]) / n; bad = errs[k] / n; okt += ok; badt += bad
                printf "  %-4s %-12s %8.2f ok %8.2f failed\n", label, k, ok, bad
            }
            printf "  %-4s %-12s %8.2f ok %8.2f failed\n", label, "TOTAL", okt, badt
        }' "$@"
}

run_case() {
    local name=$1 swy_test=$2 ucx_test=$3 size=$4 iters=$5 warm=$6 msgs=$7
    echo "== $name: I/O system calls per message, both processes together ($msgs messages) =="
    strace -f -c -o "$tmp/swy.txt" "$perf" --tls tcp,self --test "$swy_test" --sizes "$size" \
        --iters "$iters" --warmup "$warm" --cpus 0,1 --csv >"$tmp/swy.out"
    echo "  swy: $(tail -1 "$tmp/swy.out")"
    per_msg "$msgs" swy "$tmp/swy.txt" | sort -k2
    UCX_TLS=tcp UCX_NET_DEVICES=lo taskset -c 0 strace -f -c -o "$tmp/ucx-srv.txt" \
        ucx_perftest -p "$port" -t "$ucx_test" -s "$size" -n "$iters" -w "$warm" >/dev/null 2>&1 &
    local srv=$!
    sleep 0.5
    UCX_TLS=tcp UCX_NET_DEVICES=lo taskset -c 1 strace -f -c -o "$tmp/ucx-cli.txt" \
        ucx_perftest 127.0.0.1 -p "$port" -t "$ucx_test" -s "$size" -n "$iters" -w "$warm" \
        >"$tmp/ucx.out" 2>&1 || true
    wait "$srv" || true
    port=$((port + 1))
    echo "  ucx: $(grep Final: "$tmp/ucx.out" || echo none)"
    per_msg "$msgs" ucx "$tmp/ucx-srv.txt" "$tmp/ucx-cli.txt" | sort -k2
}

# lat: a ping and a pong per iteration
run_case lat8 lat tag_lat 8 "$lat_iters" 100 $((2 * (lat_iters + 100)))
# bw: one message per iteration
run_case bw4M bw tag_bw 4194304 "$bw_iters" "$bw_warm" $((bw_iters + bw_warm))
# bw, both workers in one thread (swy-perf --loopback): the receiver never outruns the
# sender, so the count does not depend on how the two processes happen to be scheduled
# (every frame header is waiting when a payload ends). Switchyard only.
echo "== bw4M-loopback: I/O system calls per message, one thread ($((bw_iters + bw_warm)) messages) =="
strace -f -c -o "$tmp/swy-lb.txt" "$perf" --loopback --tls tcp --test bw --sizes 4194304 \
    --iters "$bw_iters" --warmup "$bw_warm" --csv >"$tmp/swy-lb.out"
echo "  swy: $(tail -1 "$tmp/swy-lb.out")"
per_msg $((bw_iters + bw_warm)) swy "$tmp/swy-lb.txt" | sort -k2
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (strace slows every call: failed polls depend on timing)"
