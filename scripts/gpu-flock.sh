#!/usr/bin/env bash
# The flock part of a GPU round, time-boxed: correctness (check, sanitizers), the scale-100 and
# constant-density benchmarks behind docs/performance.md, the sort against CUB, a stage breakdown
# and an ncu profile of the update kernel. Logs to $OUT/log.txt as it goes, so a round cut short
# still returns what it did; CSVs and plots go to $OUT too.
#   bash scripts/gpu-flock.sh        # from the repository root; bundle from `cargo xtask gpu-bundle`
set -u
M=${MURMUR:-dist/gpu/murmur}
O=${OUT:-gpu-logs}
mkdir -p "$O"
T=/tmp/murmur-flock
mkdir -p "$T"
# Log to $O/log.txt unless a calling round already does.
[ -z "${MURMUR_LOGGED:-}" ] && exec > >(tee -a "$O/log.txt") 2>&1
section() { echo; echo "=== $* ($(date +%T)) ==="; }
section device
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader
# CUB's pairs sort, built in the background while the checks run.
(nvcc -O3 -arch=sm_90 -o "$T/cub_sort_pairs" scripts/cub_sort_pairs.cu > "$T/nvcc.log" 2>&1) &
NVCC=$!

section "flock check (every method against the CPU, the sort against a CPU sort)"
timeout 90 "$M" flock check --sizes 20000 --sort-max 1000000 | grep -E "fail|all checks|^\| 20000 \| 100 \| coherent \|"

section "compute-sanitizer"
for a in "coherent" "scattered" "coherent --sort radix" "naive" "coherent-shared"; do
  echo "memcheck $a: $(timeout 30 compute-sanitizer --tool memcheck --error-exitcode 9 "$M" flock run --backend cuda --n 3000 --steps 3 --method $a --quiet 2>&1 | grep -E 'ERROR SUMMARY')"
done
for a in "coherent --stages" "coherent --sort radix --stages"; do
  echo "racecheck $a: $(timeout 40 compute-sanitizer --tool racecheck --error-exitcode 9 "$M" flock run --backend cuda --n 20000 --steps 2 --method $a --quiet 2>&1 | grep -E 'RACECHECK SUMMARY|ERROR SUMMARY')"
done

section "100k: one CUDA event per step, none, and without programmatic dependent launch"
timeout 20 "$M" flock run --backend cuda --n 100000 --steps 6000 --quiet
timeout 20 "$M" flock run --backend cuda --n 100000 --steps 6000 --quiet --no-gpu-timer
printf '[sim]\npdl = false\n' > "$T/no-pdl.toml"
timeout 20 "$M" flock run --backend cuda --n 100000 --steps 6000 --quiet --config "$T/no-pdl.toml"

section "stages at 100k and 1M"
timeout 20 "$M" flock run --backend cuda --n 100000 --steps 300 --stages --block-size 256
timeout 20 "$M" flock run --backend cuda --n 1000000 --x-split 8 --steps 300 --stages --block-size 256

section "flock bench, scale 100 (warm-up 200, 1000 measured)"
timeout 240 "$M" flock bench --backend cuda --sizes 100000,1000000,5000000 --methods coherent \
  --factors 0.5,1 --x-splits 1,4,8 --block-sizes 256 --warmup 200 --steps 1000 --scale 100 --out "$T/b100"
cp "$T/b100/steps.csv" "$O/scale100-steps.csv"; cp "$T/b100/ms_per_step.png" "$O/scale100.png"
section "block sizes (cell width 1, x-split 4)"
timeout 60 "$M" flock bench --backend cuda --sizes 100000,1000000 --methods coherent --factors 1 --x-splits 4 \
  --block-sizes 64,128,256,512 --warmup 200 --steps 1000 --scale 100 --out "$T/bb" | grep "^| [0-9]"
cp "$T/bb/steps.csv" "$O/block-size-steps.csv"; cp "$T/bb/block_size.png" "$O/scale100-block-size.png"
section "8 cells (cell width 2x)"
timeout 40 "$M" flock bench --backend cuda --sizes 100000,1000000 --methods coherent --factors 2 \
  --x-splits 1,4 --block-sizes 256 --warmup 200 --steps 1000 --scale 100 --out "$T/b8" | grep "^| [0-9]"
timeout 30 "$M" flock run --backend cuda --n 5000000 --cell-width-factor 2 --x-split 4 --steps 100 --quiet

section "constant density: 1M, 10M, 100M, then 1e9 boids"
timeout 90 "$M" flock bench --backend cuda --sizes 1000000,10000000,100000000 --methods coherent --factors 1 \
  --x-splits 8 --block-sizes 256 --warmup 20 --steps 100 --constant-density --out "$T/bd"
cp "$T/bd/steps.csv" "$O/density-steps.csv"; cp "$T/bd/ms_per_step.png" "$O/density.png"
timeout 120 "$M" flock bench --backend cuda --sizes 1000000000 --methods coherent --factors 1 --x-splits 8 \
  --block-sizes 256 --warmup 1 --steps 3 --constant-density --out "$T/b1e9" | grep "^| [0-9]"

section "ncu: the step's kernels at 100k; update_boids_coherent at 1M (cell width 1, x-split 8)"
timeout 40 ncu --clock-control none --kernel-name regex:"scan_cells|scatter_cells|update_boids" --launch-skip 60 --launch-count 3 \
  --metrics gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum \
  "$M" flock run --backend cuda --n 100000 --block-size 256 --steps 40 --quiet 2>&1 | grep -E "^  [a-z_]+ \(|gpu__time|warps_active|issue_active|inst_executed.sum"
timeout 40 ncu --clock-control none --kernel-name update_boids_coherent --launch-skip 30 --launch-count 1 \
  --metrics gpu__time_duration.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__thread_inst_executed_per_inst_executed.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__t_sector_hit_rate.pct \
  "$M" flock run --backend cuda --n 1000000 --x-split 8 --block-size 256 --steps 35 --stages --quiet 2>&1 | grep -E "gpu__time|registers|warps_active|thread_inst|issue_active|inst_executed.sum|hit_rate"

section "sort: murmur against CUB (32-bit keys, 32-bit values)"
timeout 80 "$M" flock sort-bench --sizes 10000000,100000000 --bits 32 --repeat 2
# Wait for nvcc alone: a bare `wait` would also wait for the `tee` above, which never ends.
wait $NVCC
tail -3 "$T/nvcc.log"
timeout 20 stdbuf -oL "$T/cub_sort_pairs" 10000000,100000000
section done
