#!/usr/bin/env bash
# The flock part of a GPU round: correctness (check, sanitizers), the scale-100 and
# constant-density benchmarks, a stage breakdown and an ncu profile of the update kernel, each
# under its own time limit, logged to $OUT/log.txt as it goes.
#   bash scripts/gpu-flock.sh [quick]     # from the repository root; bundle from `cargo xtask gpu-bundle`
set -u
M=${MURMUR:-dist/gpu/murmur}
O=${OUT:-gpu-logs}
MODE=${1:-full}
mkdir -p "$O"
T=/tmp/murmur-flock
mkdir -p "$T"
exec > >(tee -a "$O/log.txt") 2>&1
section() { echo; echo "=== $* ($(date +%T)) ==="; }
section device
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader

section "flock check, N = 20k"
timeout 90 "$M" flock check --sizes 1000,20000 --sort-max 100000

if [ "$MODE" != quick ]; then
section "compute-sanitizer"
for a in "naive" "scattered" "scattered --sort radix --stages" "coherent" "coherent --sort radix" "coherent-warp" "coherent --cell-width-factor 0.25"; do
  echo "memcheck $a: $(timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 "$M" flock run --backend cuda --n 3000 --steps 3 --method $a --quiet 2>&1 | grep -E 'ERROR SUMMARY')"
done
for a in "coherent --stages" "coherent-shared --stages"; do
  echo "racecheck $a: $(timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 "$M" flock run --backend cuda --n 30000 --steps 2 --method $a --quiet 2>&1 | grep -E 'RACECHECK SUMMARY|ERROR SUMMARY')"
done
fi

section "stages at 100k and 1M"
timeout 20 "$M" flock run --backend cuda --n 100000 --steps 300 --stages
timeout 20 "$M" flock run --backend cuda --n 1000000 --cell-width-factor 0.34 --steps 300 --stages

section "flock bench, scale 100 (warm-up 200, 1000 measured)"
F=0.25,0.34,0.5,1
[ "$MODE" = quick ] && F=0.34,0.5
timeout 150 "$M" flock bench --backend cuda --sizes 100000,1000000 --methods coherent \
  --factors $F,2 --warmup 200 --steps 1000 --scale 100 --out "$T/b100"
timeout 150 "$M" flock bench --backend cuda --sizes 5000000 --methods coherent \
  --factors $F --warmup 200 --steps 1000 --scale 100 --out "$T/b5m"
cp "$T/b100/steps.csv" "$O/bench-scale100-steps.csv" 2>/dev/null
cp "$T/b5m/steps.csv" "$O/bench-5m-steps.csv" 2>/dev/null

section "ncu: update_boids_coherent"
for cfg in "100000 1" "1000000 0.34" "5000000 0.25"; do
  set -- $cfg
  echo "--- n=$1 factor=$2"
  timeout 60 ncu --clock-control none --kernel-name update_boids_coherent --launch-skip 30 --launch-count 1 \
    --metrics gpu__time_duration.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__thread_inst_executed_per_inst_executed.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct,dram__bytes.sum \
    "$M" flock run --backend cuda --n $1 --cell-width-factor $2 --steps 35 --stages --quiet 2>&1 | grep -E "gpu__time|registers|warps_active|thread_inst|issue_active|inst_executed.sum|hit_rate|dram__bytes"
done
[ "$MODE" = quick ] && { section done; exit 0; }

section "constant density: 10M, 100M and 1e9 boids"
timeout 120 "$M" flock bench --backend cuda --sizes 10000000,100000000 --methods coherent --factors 0.34,0.5 \
  --warmup 20 --steps 100 --constant-density --out "$T/bd"
cp "$T/bd/steps.csv" "$O/bench-density-steps.csv" 2>/dev/null
timeout 90 "$M" flock bench --backend cuda --sizes 1000000000 --methods coherent --factors 1 \
  --warmup 1 --steps 3 --constant-density --out "$T/b1e9"
section done
