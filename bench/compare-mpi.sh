#!/usr/bin/env bash
# Compare Open MPI over Switchyard with Open MPI's own components, using the OSU-style
# programs of bench/osu/:
#   point-to-point: pml swy vs ob1 (vader shared memory) and ucx (UCX sm,self), with
#     swy_osu_latency and swy_osu_bw;
#   one-sided: osc swy (over pml swy) vs osc rdma (pml ob1 + btl vader), osc ucx (pml ucx,
#     UCX_TLS=sm,self) and osc pt2pt (pml ob1 + btl vader), with swy_osu_{put,get}_latency,
#     swy_osu_{put,get}_bw, swy_osu_put_bibw, swy_osu_{acc,fop,cas}_latency.
#
#   bench/compare-mpi.sh [builddir] [--p2p | --rma] [--png FILE] [--rma-png FILE]
#
# --p2p runs only the point-to-point part, --rma only the one-sided part (default: both).
# builddir (default: build) must hold the programs (bin/swy_osu_*) and
# lib/openmpi/mca_pml_swy.so (configure with Open MPI's libopenmpi-dev installed and build);
# without lib/openmpi/mca_osc_swy.so the one-sided table has no osc swy column.
# The components run interleaved, round after round (swy, ob1, ucx, swy, ob1, ucx, ...), so
# that a change of machine load hits all alike; each size keeps its best result over the
# rounds (lowest latency, highest bandwidth). The ranks are pinned, one to core 0 and one to
# core 1. The one-sided tables compare swy with the best of the others; a summary lists the
# targets of issue #15 (8-byte put/get latency, accumulate, fetch_and_op and
# compare_and_swap latency <= 0.8x the best other; put bandwidth at 1 MiB >= 1.2x).
#
# Environment: ROUNDS (default 5); LAT_ARGS, BW_ARGS (extra arguments for the point-to-point
# programs, e.g. "-m 0:64K -i 2000"); RMA_ARGS (for every one-sided program, e.g. "-w create"),
# RMA_LAT_ARGS (put/get/acc latency, e.g. "-s lock"), RMA_BW_ARGS (put/get bandwidth and put
# bibw), RMA_ATOMIC_ARGS (fop and cas latency); RMA_BENCHES (one-sided programs to run,
# default all: put_latency get_latency put_bw get_bw put_bibw acc_latency fop_latency
# cas_latency); OSCS (default "swy rdma ucx pt2pt"); RMA_TIMEOUT (seconds per one-sided run,
# default 300: a hung component fails the run instead of the script); CPUS (default 0,1);
# OUT (directory for raw outputs, default a temp dir that is kept and printed); MPIEXEC
# (default mpiexec).
# --png FILE draws the point-to-point table, --rma-png FILE the one-sided one, with gnuplot
# (Debian: gnuplot-nox). Not run by CI: the numbers mean something only on a quiet machine;
# the script prints the load it started and ended under.
set -euo pipefail

usage() { sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

build=build
png=
rma_png=
run_p2p=1
run_rma=1
while (( $# )); do
  case "$1" in
    --png) png=${2:?--png needs a file name}; shift 2 ;;
    --rma-png) rma_png=${2:?--rma-png needs a file name}; shift 2 ;;
    --p2p) run_rma=0; shift ;;
    --rma) run_p2p=0; shift ;;
    -h|--help) usage 0 ;;
    -*) echo "compare-mpi: unknown option $1" >&2; usage 1 ;;
    *) build=$1; shift ;;
  esac
done
if (( !run_p2p && !run_rma )); then
  echo "compare-mpi: --p2p and --rma exclude each other (give neither for both)" >&2
  exit 1
fi
if [[ -n $png ]] && (( !run_p2p )); then
  echo "compare-mpi: --png draws the point-to-point part, which --rma skips; use --rma-png" >&2
  exit 1
fi
if [[ -n $rma_png ]] && (( !run_rma )); then
  echo "compare-mpi: --rma-png draws the one-sided part, which --p2p skips" >&2
  exit 1
fi

rounds=${ROUNDS:-5}
cpus=${CPUS:-0,1}
mpiexec=${MPIEXEC:-mpiexec}
build=$(cd "$build" && pwd)
read -ra rma_benches <<<"${RMA_BENCHES:-put_latency get_latency put_bw get_bw put_bibw acc_latency fop_latency cas_latency}"
needed=(lib/openmpi/mca_pml_swy.so)
if (( run_p2p )); then needed+=(bin/swy_osu_latency bin/swy_osu_bw); fi
if (( run_rma )); then
  for b in "${rma_benches[@]}"; do needed+=("bin/swy_osu_$b"); done
fi
for f in "${needed[@]}"; do
  if [[ ! -e $build/$f ]]; then
    echo "compare-mpi: $build/$f is missing; build the tree first (see docs/mpi.md)" >&2
    exit 1
  fi
done
if [[ -n $png$rma_png ]] && ! command -v gnuplot >/dev/null; then
  echo "compare-mpi: --png and --rma-png need gnuplot (Debian: apt-get install gnuplot-nox)" >&2
  exit 1
fi
pkglibdir=$(ompi_info --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')
out=${OUT:-$(mktemp -d /tmp/compare-mpi.XXXXXX)}
mkdir -p "$out"

# Open MPI refuses root unless told; the tests and CI run as root in containers.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# One core each from the list. (--cpu-set with --bind-to core leaves both ranks unbound on a
# 2-core machine: the set is the whole machine.)
bind=(--cpu-list "$cpus" --bind-to cpu-list:ordered)
echo "compare-mpi: $rounds rounds, cores $cpus, raw output in $out"
"$mpiexec" -n 2 "${bind[@]}" --report-bindings true 2>&1 | sed 's/^/compare-mpi: /'

# best-of-rounds per size over the raw outputs $out/NAME.COMPONENT.<round>: for latency the
# minimum, for bandwidth the maximum; prints "size value" lines
best() { # name component mode
  cat "$out/$1.$2".[0-9]* 2>/dev/null | awk -v mode="$3" '
    /^[0-9]/ { s = $1; v = $2
               if (!(s in b) || (mode == "min" ? v < b[s] : v > b[s])) b[s] = v }
    END { for (s in b) print s, b[s] }' | sort -n
}

# Runs one program: run FILE TIMEOUT MCA-ARGUMENTS PROGRAM [ARGUMENTS...]; stdout in FILE,
# stderr in FILE.err; a failed run leaves FILE empty. Prints "ok" or why not.
run() {
  local file=$1 limit=$2 mca=$3 rc=0
  shift 3
  # shellcheck disable=SC2086 # the MCA arguments are meant to split into words
  UCX_TLS=sm,self timeout "$limit" "$mpiexec" -n 2 "${bind[@]}" $mca "$@" >"$file" \
    2>"$file.err" || rc=$?
  if (( rc == 0 )); then
    echo ok
  else
    : >"$file"
    if (( rc == 124 )); then echo "TIMED OUT after $limit s (see $file.err)"
    else echo "FAILED (see $file.err)"; fi
  fi
}

# shellcheck source=bench/mpi-pml-args.sh
source "$(dirname "${BASH_SOURCE[0]}")/mpi-pml-args.sh"

echo "compare-mpi: load at start: $(uptime | sed 's/.*load average/load average/')"

if (( run_p2p )); then
  pmls=(swy ob1 ucx)
  for ((r = 1; r <= rounds; ++r)); do
    for bench in latency bw; do
      extra=LAT_ARGS
      [[ $bench == bw ]] && extra=BW_ARGS
      for pml in "${pmls[@]}"; do
        start=$SECONDS
        # shellcheck disable=SC2086 # the extra arguments are meant to split into words
        status=$(run "$out/$bench.$pml.$r" 100000 "$(pml_args "$pml")" \
                     "$build/bin/swy_osu_$bench" ${!extra:-})
        echo "round $r/$rounds: $bench over pml $pml: $status, $((SECONDS - start)) s"
      done
    done
  done

  # One row per size: latency swy ob1 ucx ratio, bandwidth swy ob1 ucx ratio. The ratio
  # compares swy with the better of the other two: latency swy/min(others) (below 1: swy is
  # faster), bandwidth swy/max(others) (above 1: swy moves more). Each input line carries the
  # number of its column, so a PML that failed leaves its column empty, not shifted.
  i=0
  for bench in latency bw; do
    mode=min
    [[ $bench == bw ]] && mode=max
    for pml in "${pmls[@]}"; do
      i=$((i + 1)) # here, not in the pipeline's subshell
      best "$bench" "$pml" "$mode" | sed "s/^/$i /"
    done
  done | awk '
    { v[$1, $2] = $3; sizes[$2] = 1 }
    function get(i, s) { return ((i, s) in v) ? v[i, s] : "" }
    function ratio(x, a, b, lower,   o) {
      if (x == "" || (a == "" && b == "")) return "-"
      o = (a == "") ? b : (b == "") ? a : (lower ? (a < b ? a : b) : (a > b ? a : b))
      return (o > 0) ? sprintf("%.2f", x / o) : "-"
    }
    function show(x) { return x == "" ? "-" : x }
    END {
      n = 0; for (s in sizes) list[++n] = s + 0
      for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) if (list[j] < list[i]) { t = list[i]; list[i] = list[j]; list[j] = t }
      printf "%-10s | %10s %10s %10s %8s | %10s %10s %10s %8s\n", "# size", "lat swy", "lat ob1", "lat ucx", "swy/best", "bw swy", "bw ob1", "bw ucx", "swy/best"
      printf "%-10s | %10s %10s %10s %8s | %10s %10s %10s %8s\n", "# bytes", "us", "us", "us", "", "MB/s", "MB/s", "MB/s", ""
      for (i = 1; i <= n; ++i) {
        s = list[i]
        printf "%-10d | %10s %10s %10s %8s | %10s %10s %10s %8s\n", s,
          show(get(1, s)), show(get(2, s)), show(get(3, s)), ratio(get(1, s), get(2, s), get(3, s), 1),
          show(get(4, s)), show(get(5, s)), show(get(6, s)), ratio(get(4, s), get(5, s), get(6, s), 0)
      }
    }' | tee "$out/table.txt"

  if [[ -n $png ]]; then
    # gnuplot reads "-" for missing values as missing data.
    awk 'NR > 2 { print $1, $3, $4, $5, $8, $9, $10 }' "$out/table.txt" >"$out/table.dat"
    gnuplot <<GNUPLOT
set terminal pngcairo size 1200,500 noenhanced
set output "$png"
set datafile missing "-"
set multiplot layout 1,2 title "Open MPI point-to-point, 2 ranks on cores $cpus, best of $rounds rounds"
set logscale x 2
set format x "%.0b%BB"
set xlabel "message size"
set key top left
set grid
set logscale y
set ylabel "one-way latency (us)"
set title "latency (lower is better)"
plot "$out/table.dat" using (\$1 > 0 ? \$1 : 0.5):2 with linespoints title "pml swy", \
     "" using (\$1 > 0 ? \$1 : 0.5):3 with linespoints title "pml ob1 (vader)", \
     "" using (\$1 > 0 ? \$1 : 0.5):4 with linespoints title "pml ucx (sm,self)"
unset logscale y
set ylabel "bandwidth (MB/s)"
set title "bandwidth, window 64 (higher is better)"
plot "$out/table.dat" using 1:5 with linespoints title "pml swy", \
     "" using 1:6 with linespoints title "pml ob1 (vader)", \
     "" using 1:7 with linespoints title "pml ucx (sm,self)"
unset multiplot
GNUPLOT
    echo "compare-mpi: wrote $png"
  fi
fi

if (( run_rma )); then
  # shellcheck source=bench/compare-mpi-rma.sh
  source "$(dirname "${BASH_SOURCE[0]}")/compare-mpi-rma.sh"
  rma_compare
fi
echo "compare-mpi: load at end: $(uptime | sed 's/.*load average/load average/')"
