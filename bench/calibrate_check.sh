#!/usr/bin/env bash
# Smoke check of `swy-info --calibrate` and `--proto`: calibrate into a temporary file, check
# that every cost figure was written as a positive number, and that --proto then reports
# that file and prints both shm tables and the tcp table. Usage: bench/calibrate_check.sh [path/to/swy-info]
set -euo pipefail

info=${1:-build/bin/swy-info}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
file=$dir/sub/calibration.conf   # sub/ does not exist: --calibrate must create it

"$info" --calibrate --output "$file" >"$dir/calibrate.out"
for key in memcpy_bw_Bps shm_copy_bw_Bps cma_bw_Bps cma_call_s fifo_latency_s \
           cell_overhead_s pio_overhead_s bcopy_overhead_s tcp_latency_s tcp_overhead_s \
           tcp_bw_Bps; do
    awk -v k="$key" '$1 == k && $2 == "=" && $3 + 0 > 0 { found = 1 } END { exit !found }' \
        "$file" || { echo "FAIL: $key missing or not positive in $file"; exit 1; }
done

SWY_CALIBRATION_FILE=$file "$info" --proto --tls shm >"$dir/proto.out"
grep -q "cost figures: $file" "$dir/proto.out" || { echo "FAIL: --proto ignores $file"; exit 1; }
grep -q "endpoint with a PIO lane" "$dir/proto.out" || { echo "FAIL: no PIO table"; exit 1; }
grep -q "endpoint without PIO" "$dir/proto.out" || { echo "FAIL: no FIFO table"; exit 1; }
# tcp's table comes from tcp's own figures, which the file now holds.
SWY_CALIBRATION_FILE=$file "$info" --proto --tls tcp >"$dir/tcp.out"
grep -q "tcp transport" "$dir/tcp.out" || { echo "FAIL: no tcp table"; exit 1; }
grep -q "rndv_pipeline" "$dir/tcp.out" || { echo "FAIL: tcp table without rendezvous"; exit 1; }

if "$info" --proto --memtype cuda 2>/dev/null; then echo "FAIL: --memtype cuda accepted"; exit 1; fi
echo "PASS: calibration written and used ($(grep -c ' = ' "$file") figures)"
sed -n '/^Calibrating/,/^$/p' "$dir/calibrate.out"
