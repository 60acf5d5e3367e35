#!/usr/bin/env bash
# Compare MPICH (Debian's 4.0, ch4:ucx) over the real UCX 1.13 with the same MPICH over
# Switchyard through the UCP compatibility library (contrib/ucp, swy-ucx-run): OSU-style
# point-to-point latency and bandwidth, the same binaries (bench/osu/ built with mpicc.mpich)
# run with and without the launcher.
#
#   bench/compare-mpich.sh [builddir] [--png FILE]
#
# builddir (default: build) must hold bin/swy-ucx-run and lib/switchyard/ucp/libucp.so.0.
# The two run interleaved, round after round (ucx, swy, ucx, swy, ...), so that a change of
# machine load hits both alike; each size keeps its best result over the rounds (lowest
# latency, highest bandwidth). The summary gives the targets of issue #16: 8-byte latency
# <= 0.8x MPICH over UCX, 4 MiB bandwidth >= 1.3x, and the sizes where Switchyard is more
# than 10 % slower.
#
# Environment: ROUNDS (default 5); LAT_ARGS, BW_ARGS (extra arguments for osu_latency and
# osu_bw, e.g. "-m 0:64K -i 2000"); OUT (directory for raw outputs, default a temp dir that
# is kept and printed); MPIRUN (default mpirun.mpich), MPICC (default mpicc.mpich).
# --png FILE draws both tables with gnuplot (Debian: gnuplot-nox). Not run by CI: the
# numbers mean something only on a quiet machine; the script prints the load it started and
# ended under.
set -euo pipefail

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

build=build
png=
while (($#)); do
  case "$1" in
    -h | --help) usage ;;
    --png) png=$2; shift 2 ;;
    -*) echo "compare-mpich: unknown option $1" >&2; usage 2 ;;
    *) build=$1; shift ;;
  esac
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
run=$build/bin/swy-ucx-run
[[ -x $run ]] || { echo "compare-mpich: $run not found (build with SWY_BUILD_UCP)" >&2; exit 1; }
mpirun=${MPIRUN:-mpirun.mpich}
mpicc=${MPICC:-mpicc.mpich}
rounds=${ROUNDS:-5}
out=${OUT:-$(mktemp -d /tmp/compare-mpich.XXXXXX)}
mkdir -p "$out"

for b in latency bw; do
  "$mpicc" -O2 -std=gnu11 -Wno-stringop-overflow -I"$root/bench/osu" -o "$out/osu_$b" "$root/bench/osu/osu_$b.c" -lm
done

echo "# load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; ++r)); do
  for who in ucx swy; do
    pre=()
    [[ $who == swy ]] && pre=("$run")
    # shellcheck disable=SC2086 # LAT_ARGS/BW_ARGS are word lists
    "${pre[@]}" "$mpirun" -np 2 -bind-to core "$out/osu_latency" ${LAT_ARGS:-} \
      > "$out/lat.$who.$r" 2>&1 || { echo "latency ($who) failed: $out/lat.$who.$r" >&2; exit 1; }
    # shellcheck disable=SC2086
    "${pre[@]}" "$mpirun" -np 2 -bind-to core "$out/osu_bw" ${BW_ARGS:-} \
      > "$out/bw.$who.$r" 2>&1 || { echo "bw ($who) failed: $out/bw.$who.$r" >&2; exit 1; }
  done
done
echo "# load at end:   $(cut -d' ' -f1-3 /proc/loadavg)"

# best <kind> <who> <min|max>: "size value" lines, best over the rounds.
best() {
  cat "$out/$1.$2".* | awk -v m="$3" '/^[0-9]+ +[0-9.]+$/ {
      s = $1; v = $2
      if (!(s in b) || (m == "min" && v < b[s]) || (m == "max" && v > b[s])) b[s] = v
    } END { for (s in b) print s, b[s] }' | sort -n
}

best lat ucx min > "$out/lat.ucx"
best lat swy min > "$out/lat.swy"
best bw ucx max > "$out/bw.ucx"
best bw swy max > "$out/bw.swy"

echo
echo "# Latency (us, best of $rounds): MPICH over UCX vs over Switchyard; ratio swy/ucx (lower is better)"
printf "%-10s %12s %12s %8s\n" size ucx swy ratio
join "$out/lat.ucx" "$out/lat.swy" | awk '{ printf "%-10s %12.2f %12.2f %8.2f\n", $1, $2, $3, $3 / $2 }' |
  tee "$out/lat.table"
echo
echo "# Bandwidth (MB/s, best of $rounds); ratio swy/ucx (higher is better)"
printf "%-10s %12s %12s %8s\n" size ucx swy ratio
join "$out/bw.ucx" "$out/bw.swy" | awk '{ printf "%-10s %12.1f %12.1f %8.2f\n", $1, $2, $3, $3 / $2 }' |
  tee "$out/bw.table"

echo
echo "# Targets (issue #16)"
awk '$1 == 8 { printf "8 B latency: %.2fx MPICH-over-UCX (target <= 0.8)\n", $4 }' "$out/lat.table"
awk '$1 == 1048576 { printf "1 MiB bandwidth: %.2fx (for reference)\n", $4 }' "$out/bw.table"
awk '$1 == 4194304 { printf "4 MiB bandwidth: %.2fx (target >= 1.3)\n", $4 }' "$out/bw.table"
slow=$( (awk '$4 > 1.1 { printf "%s(lat %.2fx) ", $1, $4 }' "$out/lat.table"
         awk '$4 < 1/1.1 { printf "%s(bw %.2fx) ", $1, $4 }' "$out/bw.table") || true)
echo "sizes where Switchyard is more than 10 % slower: ${slow:-none}"
echo "# raw outputs: $out"

if [[ -n $png ]]; then
  command -v gnuplot > /dev/null || { echo "compare-mpich: gnuplot not found (gnuplot-nox)" >&2; exit 1; }
  gnuplot <<EOF
set terminal png size 1200,500
set output "$png"
set multiplot layout 1,2
set logscale x 2
set key left top
set xlabel "message size (bytes)"
set title "MPICH latency (us, lower is better)"
set logscale y
plot "$out/lat.table" using 1:2 with linespoints title "over UCX 1.13", \
     "$out/lat.table" using 1:3 with linespoints title "over Switchyard"
set title "MPICH bandwidth (MB/s, higher is better)"
unset logscale y
plot "$out/bw.table" using 1:2 with linespoints title "over UCX 1.13", \
     "$out/bw.table" using 1:3 with linespoints title "over Switchyard"
unset multiplot
EOF
  echo "# plot: $png"
fi
