#!/usr/bin/env bash
# MPICH one-sided communication over the real UCX 1.13 vs over Switchyard's UCP library
# (contrib/ucp), the same binaries: the OSU-style one-sided programs of bench/osu/, built with
# mpicc.mpich, run with mpirun.mpich plain (real libucp) and through swy-ucx-run (the library),
# interleaved round after round; the best figure of each size over the rounds is kept (min for
# latency, max for bandwidth). Prints one table per program: ucx, swy, and swy/ucx.
#
#   bench/compare-mpich-rma.sh [builddir]        (default build/)
#
# Settings (environment): ROUNDS (default 5); BENCHES (default "put_latency get_latency put_bw
# get_bw"); SIZES (osu -m, default 1:4M); OUT (raw outputs, default a fresh temp directory);
# MODES (default "ucx swy"; add swy_am for Switchyard with SWY_UCP_MEM_MAP=0, MPICH's active
# message path); UCX_TLS for the real UCX (default sm,self: same host).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$ROOT/build}" && pwd)
rounds=${ROUNDS:-5}
read -ra benches <<<"${BENCHES:-put_latency get_latency put_bw get_bw}"
read -ra modes <<<"${MODES:-ucx swy}"
sizes=${SIZES:-1:4M}
out=${OUT:-$(mktemp -d /tmp/compare-mpich-rma.XXXXXX)}
run=$build/bin/swy-ucx-run
[[ -x $run ]] || { echo "compare-mpich-rma: $run not found (build contrib/ucp)" >&2; exit 1; }
command -v mpicc.mpich >/dev/null || { echo "compare-mpich-rma: no mpicc.mpich" >&2; exit 1; }

mkdir -p "$out/bin"
for b in "${benches[@]}"; do
  mpicc.mpich -O2 -std=gnu11 -I"$ROOT/bench/osu" -o "$out/bin/osu_$b" "$ROOT/bench/osu/osu_$b.c"
done

# One run: mode, bench, round -> $out/<bench>.<mode>.<round>
one() {
  local mode=$1 b=$2 r=$3 f="$out/$2.$1.$3"
  case "$mode" in
    ucx) UCX_TLS=${UCX_TLS:-sm,self} mpirun.mpich -np 2 "$out/bin/osu_$b" -m "$sizes" >"$f" 2>&1 ;;
    swy) "$run" mpirun.mpich -np 2 "$out/bin/osu_$b" -m "$sizes" >"$f" 2>&1 ;;
    swy_am) SWY_UCP_MEM_MAP=0 "$run" mpirun.mpich -np 2 "$out/bin/osu_$b" -m "$sizes" >"$f" 2>&1 ;;
  esac || echo "compare-mpich-rma: $mode $b round $r failed (see $f)" >&2
}

for ((r = 1; r <= rounds; ++r)); do
  for b in "${benches[@]}"; do
    for m in "${modes[@]}"; do one "$m" "$b" "$r"; done
  done
done

# Best per size over the rounds: "size value" lines.
best() {
  local b=$1 m=$2 mode=$3
  cat "$out/$b.$m".* 2>/dev/null | awk -v mode="$mode" '
    /^[0-9]+[ \t]+[0-9.]+/ { s = $1; v = $2
      if (!(s in best) || (mode == "min" ? v < best[s] : v > best[s])) best[s] = v }
    END { for (s in best) print s, best[s] }' | sort -n
}

echo "# MPICH $(mpichversion 2>/dev/null | sed -n 's/MPICH Version:[ \t]*//p') one-sided, 2 ranks, best of $rounds interleaved rounds"
echo "# host: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); raw outputs in $out"
for b in "${benches[@]}"; do
  mode=max
  [[ $b == *_latency ]] && mode=min
  echo
  echo "## $b ($([[ $mode == min ]] && echo 'us, lower is better' || echo 'MB/s, higher is better'))"
  printf '%-10s' size
  for m in "${modes[@]}"; do printf '%12s' "$m"; done
  printf '%12s\n' "swy/ucx"
  join_all=$(best "$b" "${modes[0]}" "$mode")
  for m in "${modes[@]:1}"; do
    join_all=$(join -a1 -e - -o auto <(echo "$join_all") <(best "$b" "$m" "$mode"))
  done
  echo "$join_all" | awk -v n="${#modes[@]}" '{
      printf "%-10s", $1
      for (i = 2; i <= n + 1; ++i) printf "%12s", $i
      if ($2 != "-" && $3 != "-" && $2 > 0) printf "%12.2f", $3 / $2
      printf "\n" }'
done
