#!/usr/bin/env bash
# Flock performance round on the GPU machine (issue targets; docs/performance.md), from the
# repository root with the bundle of `cargo xtask gpu-bundle` in dist/gpu/:
#   bash scripts/gpu-perf.sh [scale100|density|all]
# Writes bench folders and logs under $OUT (or ./gpu-logs).
set -u
M=${MURMUR:-dist/gpu/murmur}
LOG=${OUT:-gpu-logs}
mkdir -p "$LOG"
what=${1:-all}
section() { echo; echo "=== $* ==="; }

if [ "$what" = scale100 ] || [ "$what" = all ]; then
  section "bench, scale 100 (warm-up 200, measured 1000 steps)"
  "$M" flock bench --backend cuda --sizes 100000,1000000,5000000 --methods coherent,coherent-warp \
    --factors 0.5,1,2 --warmup 200 --steps 1000 --scale 100 --out "$LOG/bench-scale100"
  section "sort: murmur radix sort vs CUB"
  "$M" flock sort-bench --sizes 10000000,100000000 --bits 32
  CUPY_ACCELERATORS=cub python3 scripts/sort_cub.py 10000000,100000000
  section "ncu: velocity kernels at 1M, scale 100"
  ncu --clock-control none --kernel-name regex:update_velocity_coherent --launch-skip 40 --launch-count 2 \
    --metrics gpu__time_duration.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__thread_inst_executed_per_inst_executed.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__t_sector_hit_rate.pct,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    "$M" flock run --backend cuda --n 1000000 --steps 45 --stages --quiet 2>&1 | grep -E "update_velocity|gpu__time|registers|warps_active|thread_inst|issue_active|inst_executed.sum|hit_rate|sm__throughput|dram__"
  ncu --clock-control none --kernel-name regex:update_velocity_coherent_warp --launch-skip 40 --launch-count 1 \
    --metrics gpu__time_duration.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__thread_inst_executed_per_inst_executed.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__t_sector_hit_rate.pct \
    "$M" flock run --backend cuda --n 1000000 --steps 45 --stages --method coherent-warp --quiet 2>&1 | grep -E "update_velocity|gpu__time|registers|warps_active|thread_inst|issue_active|inst_executed.sum|hit_rate"
fi

if [ "$what" = density ] || [ "$what" = all ]; then
  section "bench, constant density (1M boids at scale 100)"
  "$M" flock bench --backend cuda --sizes 1000000,10000000,100000000 --methods coherent,coherent-warp \
    --factors 0.5,1 --warmup 50 --steps 200 --constant-density --out "$LOG/bench-density"
  section "1e9 boids, constant density (scale 1000)"
  "$M" flock bench --backend cuda --sizes 1000000000 --methods coherent --factors 1 --warmup 1 --steps 3 \
    --constant-density --out "$LOG/bench-1e9"
  section "block sizes at 1M, scale 100"
  "$M" flock bench --backend cuda --sizes 1000000 --methods coherent --factors 1 \
    --block-sizes 64,128,256,512,1024 --warmup 100 --steps 500 --out "$LOG/bench-blocks"
fi
