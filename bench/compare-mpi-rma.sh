# The one-sided part of bench/compare-mpi.sh (sourced by it, not run alone: use
# `bench/compare-mpi.sh --rma`). It runs the one-sided OSU-style programs of bench/osu/ over
# osc swy (pml swy), osc rdma (pml ob1 + btl vader), osc ucx (pml ucx, UCX_TLS=sm,self) and
# osc pt2pt (pml ob1 + btl vader), interleaved round after round, keeps the best figure of
# each size over the rounds, and prints one table per program, a summary of issue #15's
# targets and, with --rma-png, a plot.
#
# Uses compare-mpi.sh's settings (out, rounds, build, pkglibdir, rma_benches, rma_png, cpus)
# and functions (run, best).
# shellcheck shell=bash disable=SC2154 # those settings are assigned by compare-mpi.sh

# The components compared; swy only where its module was built.
rma_oscs() {
  local osc
  for osc in ${OSCS:-swy rdma ucx pt2pt}; do
    if [[ $osc == swy && ! -e $build/lib/openmpi/mca_osc_swy.so ]]; then
      echo "compare-mpi: no $build/lib/openmpi/mca_osc_swy.so: the one-sided tables go without osc swy" >&2
      continue
    fi
    echo "$osc"
  done
}

# The MCA arguments that select an osc (and the PML and BTLs it runs over).
osc_args() {
  case "$1" in
    swy) echo "--mca pml swy --mca btl self --mca osc swy --mca mca_base_component_path $build/lib/openmpi:$pkglibdir" ;;
    rdma) echo "--mca pml ob1 --mca btl self,vader --mca osc rdma" ;;
    ucx) echo "--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=sm,self --mca osc ucx" ;;
    pt2pt) echo "--mca pml ob1 --mca btl self,vader --mca osc pt2pt" ;;
    *) echo "compare-mpi: unknown osc '$1' in OSCS (known: swy rdma ucx pt2pt)" >&2; return 1 ;;
  esac
}

# The extra arguments of a program: RMA_ARGS, then those of its kind.
rma_args() {
  local extra
  case "$1" in
    put_latency|get_latency) extra="${RMA_LAT_ARGS:-}" ;;
    acc_latency) extra="${RMA_LAT_ARGS:-} ${RMA_ACC_ARGS:-}" ;;
    put_bw|get_bw|put_bibw) extra="${RMA_BW_ARGS:-}" ;;
    fop_latency|cas_latency) extra="${RMA_ATOMIC_ARGS:-}" ;;
    *) echo "compare-mpi: unknown one-sided program '$1' in RMA_BENCHES" >&2; return 1 ;;
  esac
  echo "${RMA_ARGS:-} $extra"
}

# min for latency (lower is better), max for bandwidth.
rma_mode() { if [[ $1 == *_latency ]]; then echo min; else echo max; fi; }

rma_title() {
  case "$1" in
    put_latency) echo "MPI_Put latency (us)" ;;
    get_latency) echo "MPI_Get latency (us)" ;;
    put_bw) echo "MPI_Put bandwidth (MB/s)" ;;
    get_bw) echo "MPI_Get bandwidth (MB/s)" ;;
    put_bibw) echo "MPI_Put bidirectional bandwidth (MB/s)" ;;
    acc_latency) echo "MPI_Accumulate latency (us)" ;;
    fop_latency) echo "MPI_Fetch_and_op latency (us)" ;;
    cas_latency) echo "MPI_Compare_and_swap latency (us)" ;;
  esac
}

# What a program's header says about its run ("MPI_Win_allocate, MPI_Win_flush"), from the
# first raw output that has it.
rma_setup() {
  cat "$out/rma.$1".*.[0-9]* 2>/dev/null | awk -F': ' '
    /^# Window creation:/ && !w { w = $2 } /^# Synchronization:/ && !s { s = $2 }
    /^# Datatype:/ && !d { d = ", " $2 }
    END { if (w != "") print w ", " s d }'
}

# One table for a program: a row per size, a column per osc, then swy / the best other
# (latency: below 1, swy is faster; bandwidth: above 1, swy moves more). Also writes the
# columns to $out/rma.BENCH.dat for gnuplot ("-" where missing).
rma_table() {
  local bench=$1 osc
  for osc in "${oscs[@]}"; do
    best "rma.$bench" "$osc" "$(rma_mode "$bench")" | sed "s/^/$osc /"
  done | awk -v names="${oscs[*]}" -v mode="$(rma_mode "$bench")" \
             -v title="$(rma_title "$bench")" -v setup="$(rma_setup "$bench")" \
             -v dat="$out/rma.$bench.dat" '
    { v[$1, $2] = $3; if (!($2 in seen)) { seen[$2] = 1; list[++n] = $2 + 0 } }
    function show(x) { return x == "" ? "-" : x }
    END {
      k = split(names, name, " ")
      for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) if (list[j] < list[i]) { t = list[i]; list[i] = list[j]; list[j] = t }
      printf "# %s; %s\n", title, setup
      printf "%-10s |", "# size"
      for (i = 1; i <= k; ++i) printf " %10s", "osc " name[i]
      printf " | %8s\n", "swy/best"
      for (r = 1; r <= n; ++r) {
        s = list[r]; line = sprintf("%-10d |", s); row = s; x = ""; o = ""
        for (i = 1; i <= k; ++i) {
          val = ((name[i], s) in v) ? v[name[i], s] : ""
          line = line sprintf(" %10s", show(val)); row = row " " show(val)
          if (val == "") continue
          if (name[i] == "swy") x = val
          else if (o == "" || (mode == "min" ? val + 0 < o + 0 : val + 0 > o + 0)) o = val
        }
        print line sprintf(" | %8s", (x != "" && o != "" && o + 0 > 0) ? sprintf("%.2f", x / o) : "-")
        print row > dat
      }
      print ""
    }'
}

# Issue #15's targets, each as "program size bound comparison what".
rma_targets=(
  "put_latency 8 0.8 <= 8-byte put latency (us)"
  "get_latency 8 0.8 <= 8-byte get latency (us)"
  "put_bw 1048576 1.2 >= put bandwidth at 1 MiB (MB/s)"
  "acc_latency 8 0.8 <= 8-byte accumulate latency (us)"
  "fop_latency 8 0.8 <= fetch_and_op latency (us)"
  "cas_latency 8 0.8 <= compare_and_swap latency (us)"
)

rma_summary() {
  local target bench size bound cmp what osc
  printf "# issue #15 targets: swy / the best other osc, each figure the best of %s rounds\n" "$rounds"
  printf "%-36s |" "# figure"
  for osc in "${oscs[@]}"; do printf " %10s" "osc $osc"; done
  printf " | %8s %8s %6s\n" "swy/best" "target" "met"
  for target in "${rma_targets[@]}"; do
    read -r bench size bound cmp what <<<"$target"
    [[ " ${rma_benches[*]} " == *" $bench "* ]] || continue
    for osc in "${oscs[@]}"; do
      best "rma.$bench" "$osc" "$(rma_mode "$bench")" | awk -v o="$osc" -v s="$size" '$1 == s { print o, $2 }'
    done | awk -v names="${oscs[*]}" -v what="$what" -v bound="$bound" -v cmp="$cmp" '
      { v[$1] = $2 }
      END {
        k = split(names, name, " "); line = sprintf("%-36s |", what); x = ""; o = ""
        for (i = 1; i <= k; ++i) {
          val = (name[i] in v) ? v[name[i]] : ""
          line = line sprintf(" %10s", val == "" ? "-" : val)
          if (val == "") continue
          if (name[i] == "swy") x = val
          else if (o == "" || (cmp == "<=" ? val + 0 < o + 0 : val + 0 > o + 0)) o = val
        }
        r = (x != "" && o != "" && o + 0 > 0) ? x / o : ""
        met = (r == "") ? "-" : ((cmp == "<=" ? r <= bound : r >= bound) ? "yes" : "no")
        printf "%s | %8s %8s %6s\n", line, r == "" ? "-" : sprintf("%.2f", r), cmp " " bound, met
      }'
  done
}

# Draws the tables with gnuplot: latency programs above, bandwidth programs below, both on
# logarithmic axes (the large sizes run at a tenth of the in-cache bandwidth here).
rma_plot() {
  local bench panels=() n cols rows script
  for bench in put_latency get_latency acc_latency put_bw get_bw put_bibw; do
    [[ -s $out/rma.$bench.dat ]] && panels+=("$bench")
  done
  n=${#panels[@]}
  if (( n == 0 )); then
    echo "compare-mpi: nothing to plot" >&2
    return 0
  fi
  cols=$(( n < 3 ? n : 3 ))
  rows=$(( (n + cols - 1) / cols ))
  script="set terminal pngcairo size $((cols * 600)),$((rows * 450)) noenhanced
set output \"$rma_png\"
set datafile missing \"-\"
set multiplot layout $rows,$cols title \"Open MPI one-sided, 2 ranks on cores $cpus, best of $rounds rounds\"
set logscale x 2
set logscale y
set format x \"%.0b%BB\"
set xlabel \"message size\"
set grid
names = \"${oscs[*]}\"
"
  for bench in "${panels[@]}"; do
    if [[ $(rma_mode "$bench") == min ]]; then
      script+="set key top left
set ylabel \"latency (us)\"
set title \"$(rma_title "$bench"), lower is better\"
"
    else
      script+="set key bottom left
set ylabel \"bandwidth (MB/s)\"
set title \"$(rma_title "$bench"), higher is better\"
"
    fi
    script+="plot for [i=1:words(names)] \"$out/rma.$bench.dat\" using 1:(column(i+1)) with linespoints title \"osc \".word(names, i)
"
  done
  script+="unset multiplot
"
  gnuplot <<<"$script"
  echo "compare-mpi: wrote $rma_png"
}

rma_compare() {
  local r bench osc start status
  mapfile -t oscs < <(rma_oscs)
  for osc in "${oscs[@]}"; do osc_args "$osc" >/dev/null || exit 1; done
  for bench in "${rma_benches[@]}"; do rma_args "$bench" >/dev/null || exit 1; done
  echo "compare-mpi: one-sided over osc ${oscs[*]}: ${rma_benches[*]}"
  for ((r = 1; r <= rounds; ++r)); do
    for bench in "${rma_benches[@]}"; do
      for osc in "${oscs[@]}"; do
        start=$SECONDS
        # shellcheck disable=SC2046 # the program's arguments are meant to split into words
        status=$(run "$out/rma.$bench.$osc.$r" "${RMA_TIMEOUT:-300}" "$(osc_args "$osc")" \
                     "$build/bin/swy_osu_$bench" $(rma_args "$bench"))
        echo "round $r/$rounds: $bench over osc $osc: $status, $((SECONDS - start)) s"
      done
    done
  done
  for bench in "${rma_benches[@]}"; do rma_table "$bench"; done | tee "$out/rma-table.txt"
  rma_summary | tee "$out/rma-summary.txt"
  if [[ -n $rma_png ]]; then rma_plot; fi
}
