#!/usr/bin/env bash
# Compare Open MPI over pml swy with ob1 (vader shared memory) and ucx (UCX sm,self), using
# the OSU-style latency and bandwidth programs of bench/osu/.
#
#   bench/compare-mpi.sh [builddir] [--png FILE]
#
# builddir (default: build) must hold bin/swy_osu_latency, bin/swy_osu_bw and
# lib/openmpi/mca_pml_swy.so (configure with Open MPI's libopenmpi-dev installed and build).
# The three PMLs run interleaved, round after round (swy, ob1, ucx, swy, ob1, ucx, ...), so
# that a change of machine load hits all three alike; each size keeps its best result over
# the rounds (lowest latency, highest bandwidth). The ranks are pinned, one to core 0 and one
# to core 1.
#
# Environment: ROUNDS (default 5); LAT_ARGS, BW_ARGS (extra arguments for the programs, e.g.
# "-m 0:64K -i 2000"); CPUS (default 0,1); OUT (directory for raw outputs, default a temp
# dir that is kept and printed); MPIEXEC (default mpiexec).
# --png FILE draws the table with gnuplot (Debian: gnuplot-nox). Not run by CI: the numbers
# mean something only on a quiet machine; the script prints the load it started under.
set -euo pipefail

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

build=build
png=
while (( $# )); do
  case "$1" in
    --png) png=${2:?--png needs a file name}; shift 2 ;;
    -h|--help) usage 0 ;;
    -*) echo "compare-mpi: unknown option $1" >&2; usage 1 ;;
    *) build=$1; shift ;;
  esac
done

rounds=${ROUNDS:-5}
cpus=${CPUS:-0,1}
mpiexec=${MPIEXEC:-mpiexec}
build=$(cd "$build" && pwd)
for f in bin/swy_osu_latency bin/swy_osu_bw lib/openmpi/mca_pml_swy.so; do
  if [[ ! -e $build/$f ]]; then
    echo "compare-mpi: $build/$f is missing; build the tree first (see docs/mpi.md)" >&2
    exit 1
  fi
done
if [[ -n $png ]] && ! command -v gnuplot >/dev/null; then
  echo "compare-mpi: --png needs gnuplot (Debian: apt-get install gnuplot-nox)" >&2
  exit 1
fi
pkglibdir=$(ompi_info --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')
out=${OUT:-$(mktemp -d /tmp/compare-mpi.XXXXXX)}
mkdir -p "$out"

# Open MPI refuses root unless told; the tests and CI run as root in containers.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

pmls=(swy ob1 ucx)
pml_args() {
  case "$1" in
    swy) echo "--mca pml swy --mca btl self --mca mca_base_component_path $build/lib/openmpi:$pkglibdir" ;;
    ob1) echo "--mca pml ob1 --mca btl self,vader" ;;
    ucx) echo "--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=sm,self" ;;
  esac
}

# One core each from the list. (--cpu-set with --bind-to core leaves both ranks unbound on a
# 2-core machine: the set is the whole machine.)
bind=(--cpu-list "$cpus" --bind-to cpu-list:ordered)
echo "compare-mpi: $rounds rounds, cores $cpus, raw output in $out"
"$mpiexec" -n 2 "${bind[@]}" --report-bindings true 2>&1 | sed 's/^/compare-mpi: /'

echo "compare-mpi: load at start: $(uptime | sed 's/.*load average/load average/')"
for ((r = 1; r <= rounds; ++r)); do
  for bench in latency bw; do
    extra=LAT_ARGS
    [[ $bench == bw ]] && extra=BW_ARGS
    for pml in "${pmls[@]}"; do
      start=$SECONDS
      file=$out/$bench.$pml.$r
      # shellcheck disable=SC2046 # the PML arguments are meant to split into words
      if UCX_TLS=sm,self "$mpiexec" -n 2 "${bind[@]}" $(pml_args "$pml") \
           "$build/bin/swy_osu_$bench" ${!extra:-} >"$file" 2>"$file.err"; then
        status=ok
      else
        status="FAILED (see $file.err)"
        : >"$file"
      fi
      echo "round $r/$rounds: $bench over pml $pml: $status, $((SECONDS - start)) s"
    done
  done
done

# best-of-rounds per size: for latency the minimum, for bandwidth the maximum
best() { # bench pml mode
  cat "$out/$1.$2".[0-9]* 2>/dev/null | awk -v mode="$3" '
    /^[0-9]/ { s = $1; v = $2
               if (!(s in b) || (mode == "min" ? v < b[s] : v > b[s])) b[s] = v }
    END { for (s in b) print s, b[s] }' | sort -n
}
for pml in "${pmls[@]}"; do
  best latency "$pml" min >"$out/best.latency.$pml"
  best bw "$pml" max >"$out/best.bw.$pml"
done

# One row per size: latency swy ob1 ucx ratio, bandwidth swy ob1 ucx ratio. The ratio
# compares swy with the better of the other two: latency swy/min(others) (below 1: swy is
# faster), bandwidth swy/max(others) (above 1: swy moves more).
awk '
  FNR == 1 { f++ }
  { v[f, $1] = $2; sizes[$1] = 1 }
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
  }' "$out/best.latency.swy" "$out/best.latency.ob1" "$out/best.latency.ucx" \
     "$out/best.bw.swy" "$out/best.bw.ob1" "$out/best.bw.ucx" | tee "$out/table.txt"
echo "compare-mpi: load at end: $(uptime | sed 's/.*load average/load average/')"

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
