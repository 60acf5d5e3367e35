#!/bin/sh
# Verbs transport tests on Soft-RoCE (rxe0) inside the throw-away VM of
# /work/shared/rxe-vm/run-in-rxe-vm (or any host with an ACTIVE RDMA port: RXE_VM=1 and the
# RXE_VM_* variables set by hand).
#
#   test/verbs/run-vm.sh BUILD_DIR [--quick | --scale | --filter PATTERN]
#
# Outside the VM it starts the VM and runs itself there; exit 77 (skip) when it cannot. Inside:
#   1. the device tests of unit_tests (Verbs*: eager, rendezvous get/put/pipeline, a buffer
#      re-mapped at the same address, the registration cache, peer death, device-memory PIO
#      emulated), byte for byte; then swy-info --calibrate and the selection table from the
#      figures it measured (used by the runs below);
#   2. swy-perf --tls verbs,self --check: latency 0 B .. 64 MiB and bandwidth, two processes;
#   3. forced protocols (SWY_PROTO, SWY_RNDV_SCHEME, SWY_RNDV_THRESH) around the thresholds;
#   4. perftest's ib_send_lat / ib_write_bw / ib_read_bw in the same VM and the ratios
#      (targets: 8 B latency <= 1.3x ib_send_lat, 1 MiB bandwidth >= 0.9x ib_write_bw;
#      reported, not enforced: TCG timing on a shared host is too noisy to gate on). Latency
#      goes through lat_compare.sh: interleaved rounds, avg vs avg and median vs t_typical,
#      and (not with --quick) system calls per round trip under strace.
#   5. connection scale (verbs_conn_scale): 64 peer workers in 2 processes against one worker
#      (past the old 63-connection limit), both directions at once, byte for byte, one QP per
#      pair, no RNR (device counters).
# --quick: fewer sizes (for scripts/test.sh).
# --scale: only the connection-scale test, at 256 peers in 8 processes (about 4 minutes under
#      TCG: a mode of its own, not in --quick).
# --filter PATTERN: only the device unit tests matching the gtest filter PATTERN (e.g.
#      'VerbsCrossing*'): a minute or two, for work on one part of the transport.
set -u
BUILD=${1:?usage: run-vm.sh BUILD_DIR [--quick|--scale|--filter PATTERN]}
QUICK=${2:-}
FILTER=${3:-}
if [ "$QUICK" = --filter ] && [ -z "$FILTER" ]; then
    echo "run-vm.sh: --filter needs a gtest filter pattern" >&2
    exit 2
fi
BUILD=$(cd "$BUILD" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
VM=${RXE_VM_SCRIPT:-/work/shared/rxe-vm/run-in-rxe-vm}

if [ "${RXE_VM:-}" != 1 ]; then
    if [ ! -x "$VM" ]; then
        echo "run-vm.sh: SKIP: $VM not found (no Soft-RoCE VM on this machine)"
        exit 77
    fi
    NEEDED="unit_tests swy-perf swy-info"
    [ "$QUICK" = --scale ] && NEEDED=verbs_conn_scale
    [ "$QUICK" = --filter ] && NEEDED=unit_tests
    for bin in $NEEDED; do
        if [ ! -x "$BUILD/bin/$bin" ]; then
            echo "run-vm.sh: SKIP: $BUILD/bin/$bin not built"
            exit 77
        fi
    done
    cd "$BUILD" || exit 1
    # The registration cost probe is plain C against libibverbs; built here, run in the VM.
    cc -O2 -o "$BUILD/verbs_reg_cost" "$HERE/reg_cost.c" -libverbs 2>/dev/null ||
        echo "run-vm.sh: note: cannot build reg_cost.c (no cc or libibverbs-dev)"
    # The guest sees the host's files read-only except the current directory (the build)
    # and --rw paths, and gets a fresh /tmp: share this script's directory too, or a tree
    # cloned under /tmp (as CI does) would not find it.
    # 257 workers (--scale) each register their own buffers: more guest memory than the default.
    "$VM" --timeout "${RXE_VM_TIMEOUT:-900}" --mem "${RXE_VM_MEM:-3G}" --rw "$HERE" -- \
        sh "$HERE/run-vm.sh" "$BUILD" "$QUICK" "$FILTER"
    rc=$?
    if [ $rc -eq 125 ]; then
        echo "run-vm.sh: SKIP: the VM could not start (exit 125)"
        exit 77
    fi
    exit $rc
fi

# ---------------------------------------------------------------------------- inside the VM
cd "$BUILD" || exit 1
PERF="$BUILD/bin/swy-perf"
failures=0
step() { echo; echo "=== $*"; }
check() {  # check DESCRIPTION COMMAND...: run, count a failure on a non-zero exit
    what=$1
    shift
    if "$@"; then echo "--- ok: $what"; else echo "--- FAILED ($?): $what"; failures=$((failures + 1)); fi
}
conn_scale() {  # conn_scale PROCS WORKERS MESSAGES
    if [ ! -x "$BUILD/bin/verbs_conn_scale" ]; then
        echo "--- skipped: $BUILD/bin/verbs_conn_scale not built"
        return
    fi
    t0=$(date +%s)
    check "verbs_conn_scale $*: one worker, $(($1 * $2)) peers" timeout 900 "$BUILD/bin/verbs_conn_scale" "$@"
    echo "(verbs_conn_scale $*: $(($(date +%s) - t0)) s)"
}

if [ "$QUICK" = --scale ]; then
    step "connection scale: 256 peer workers in 8 processes, one hub worker"
    conn_scale 8 32 8
    [ $failures -eq 0 ] && { echo "run-vm.sh: all verbs checks passed"; exit 0; }
    echo "run-vm.sh: $failures check(s) FAILED"
    exit 1
fi
if [ "$QUICK" = --filter ]; then
    step "device unit tests matching $FILTER"
    check "unit_tests $FILTER" timeout 600 "$BUILD/bin/unit_tests" --gtest_filter="$FILTER"
    [ $failures -eq 0 ] && { echo "run-vm.sh: all verbs checks passed"; exit 0; }
    echo "run-vm.sh: $failures check(s) FAILED"
    exit 1
fi
perf() { timeout 600 "$PERF" --tls verbs,self --check "$@"; }

step "device unit tests"
check "unit_tests Verbs*" timeout 600 "$BUILD/bin/unit_tests" --gtest_filter='Verbs*' --gtest_brief=1

step "protocol suite over verbs (integration_tests Net*: every threshold, forced protocols, 256 MiB)"
if [ -x "$BUILD/bin/integration_tests" ]; then
    check "SWY_ITEST_NET=verbs integration_tests Net*" env SWY_ITEST_NET=verbs \
        timeout 900 "$BUILD/bin/integration_tests" --gtest_filter='Net*' --gtest_brief=1
else
    echo "--- skipped: $BUILD/bin/integration_tests not built"
fi

step "connection scale: 64 peer workers in 2 processes, one hub worker"
conn_scale 2 32 4

step "calibration: this VM's verbs lane, and the selection table from the measured figures"
# The selector's verbs figures (latency, overhead, bandwidths, registration and cache-hit
# costs) are measured here, so the table below is what this device gets; the runs that
# follow use it (SWY_CALIBRATION_FILE) unless they force a protocol.
CAL="$BUILD/verbs-calibration.conf"
check "swy-info --calibrate" timeout 600 "$BUILD/bin/swy-info" --calibrate --force --output "$CAL"
if [ -s "$CAL" ]; then
    export SWY_CALIBRATION_FILE="$CAL"
    check "swy-info --proto --tls verbs (calibrated)" "$BUILD/bin/swy-info" --proto --tls verbs
fi

if [ "$QUICK" = --quick ]; then
    LAT_SIZES=0,1,8,248,249,8176,8177,65536,1M,4M
    BW_SIZES=8,64K,1M
    BW_FLAGS="--iters 2 --warmup 1 --window 8"
else
    LAT_SIZES=0:64M
    BW_SIZES=1:64M
    BW_FLAGS="--iters 1 --warmup 1 --window 2"  # TCG moves ~10-20 MB/s: keep 64 MiB short
fi
step "swy-perf latency, two processes on rxe0, every byte checked"
check "lat $LAT_SIZES" perf --test lat --sizes "$LAT_SIZES" --iters 3 --warmup 1
step "swy-perf bandwidth"
# shellcheck disable=SC2086
check "bw $BW_SIZES" perf --test bw --sizes "$BW_SIZES" $BW_FLAGS

step "forced protocols"
for scheme in get put pipeline; do
    check "SWY_RNDV_SCHEME=$scheme" env SWY_RNDV_SCHEME=$scheme \
        timeout 600 "$PERF" --tls verbs,self --check --sizes 100K,1M,3M --iters 2 --warmup 1
done
check "SWY_PROTO=eager_bcopy" env SWY_PROTO=eager_bcopy \
    timeout 600 "$PERF" --tls verbs,self --check --sizes 0,248,249,8177,1M --iters 2 --warmup 1
check "SWY_RNDV_THRESH=1K" env SWY_RNDV_THRESH=1K \
    timeout 600 "$PERF" --tls verbs,self --check --sizes 1023,1024,1025 --iters 3 --warmup 1

step "device-memory PIO (emulated: rxe has no device memory), two processes"
# Sizes around the inline limit (248 B payload) and the 2 KiB cell (2040 B payload).
check "SWY_VERBS_DM_EMULATE=y" env SWY_VERBS_DM_EMULATE=y \
    timeout 600 "$PERF" --tls verbs,self --check --sizes 247,248,249,2039,2040,2041,8177 \
    --iters 20 --warmup 2
check "SWY_VERBS_DM_EMULATE=y bw" env SWY_VERBS_DM_EMULATE=y \
    timeout 600 "$PERF" --tls verbs,self --check --test bw --sizes 1K,2040 --iters 4 --warmup 1 \
    --window 32

if [ -x "$BUILD/verbs_reg_cost" ]; then
    step "registration cost (per transfer and side, no cache)"
    timeout 120 "$BUILD/verbs_reg_cost"
fi
if [ -x "$BUILD/bin/verbs_rcache_cost" ]; then
    step "registration cache: register+deregister vs validated hit"
    timeout 300 "$BUILD/bin/verbs_rcache_cost"
fi

step "comparison with perftest (same VM, same device)"
DEV=${RXE_VM_DEV:-rxe0}
GIDX=${RXE_VM_GID_INDEX:-1}
IP=${RXE_VM_IP:-198.18.0.1}
pt() {  # pt TOOL ARGS...: server in the background, client in the foreground; client output
    tool=$1
    shift
    timeout 120 "$tool" -d "$DEV" -x "$GIDX" "$@" >/dev/null 2>&1 &
    sleep 1
    timeout 120 "$tool" -d "$DEV" -x "$GIDX" "$@" "$IP" 2>&1
    wait
}
# 8 B latency: like with like (avg with avg, median with ib_send_lat's t_typical), several
# rounds with the programs interleaved, and (full run) system calls per round trip.
LAT_ROUNDS=3
[ "$QUICK" = --quick ] && LAT_ROUNDS=2 && : "${SWY_LAT_STRACE:=0}"
SWY_LAT_STRACE=${SWY_LAT_STRACE:-1} sh "$HERE/lat_compare.sh" "$PERF" "$LAT_ROUNDS" |
    tee /tmp/lat_compare.out
grep -q '^ratio ' /tmp/lat_compare.out ||
    { echo "--- FAILED: a latency figure is missing"; failures=$((failures + 1)); }
ib_wbw=$(pt ib_write_bw -s 1048576 -n 200 | awk '$1 == 1048576 {print $4}')
ib_rbw=$(pt ib_read_bw -s 1048576 -n 200 | awk '$1 == 1048576 {print $4}')
our_bw_get=$(SWY_RNDV_SCHEME=get "$PERF" --tls verbs,self --test bw --sizes 1M --iters 40 --warmup 2 --csv 2>/dev/null |
             awk -F, '$2 == 1048576 {print $5}')
our_bw_put=$(SWY_RNDV_SCHEME=put "$PERF" --tls verbs,self --test bw --sizes 1M --iters 40 --warmup 2 --csv 2>/dev/null |
             awk -F, '$2 == 1048576 {print $5}')
echo "1 MiB bandwidth (MB/s):      swy get ${our_bw_get:-?}  put ${our_bw_put:-?}   ib_write_bw ${ib_wbw:-?}   ib_read_bw ${ib_rbw:-?}"
awk -v g="${our_bw_get:-0}" -v p="${our_bw_put:-0}" -v w="${ib_wbw:-0}" 'BEGIN {
        if (w > 0) printf "bandwidth ratio swy/ib_write_bw = get %.2f, put %.2f (target >= 0.9)\n", g / w, p / w;
    }'

echo
if [ $failures -ne 0 ]; then
    echo "run-vm.sh: $failures check(s) FAILED"
    exit 1
fi
echo "run-vm.sh: all verbs checks passed"
exit 0
