#!/usr/bin/env bash
# One GPU round within a short device lease: the fluid checks and figures, the flock benchmarks,
# the headless render, sanitizers and the flock check, each under its own time limit, logged to
# $OUT/log.txt as it goes (so a cut-short round still returns what it did).
#   bash scripts/gpu-round.sh        # from the repository root; bundle from `cargo xtask gpu-bundle`
set -u
M=${MURMUR:-dist/gpu/murmur}
O=${OUT:-gpu-logs}
mkdir -p "$O"
T=/tmp/murmur-round
mkdir -p "$T"
exec > >(tee -a "$O/log.txt") 2>&1
section() { echo; echo "=== $* ($(date +%T)) ==="; }
section device
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

section "fluid parity (CPU vs CUDA, 100 steps)"
timeout 90 "$M" fluid parity --steps 100
section "fluid validate --backend cuda"
timeout 150 "$M" fluid validate --backend cuda
section "fluid bench"
timeout 60 "$M" fluid bench --backend cuda --sizes 128,256 --steps 200

section "flock bench, scale 100, 100k and 1M (warm-up 200, 1000 measured)"
timeout 120 "$M" flock bench --backend cuda --sizes 100000,1000000 --methods coherent,coherent-warp \
  --factors 0.5,1,2 --warmup 200 --steps 1000 --scale 100 --out "$T/b100"
cp "$T/b100/steps.csv" "$O/bench-scale100-steps.csv"; cp "$T/b100/ms_per_step.png" "$O/bench-scale100.png"
section "flock bench, scale 100, 5M"
timeout 80 "$M" flock bench --backend cuda --sizes 5000000 --methods coherent --factors 0.5,1 \
  --warmup 200 --steps 1000 --scale 100 --out "$T/b5m"
timeout 30 "$M" flock run --backend cuda --n 5000000 --cell-width-factor 2 --steps 100 --quiet
timeout 30 "$M" flock run --backend cuda --n 5000000 --cell-width-factor 0.5 --method coherent-warp --steps 300 --quiet

section "render (cuda vs cpu parity, 1M frame timings)"
OUT=$T timeout 100 bash scripts/gpu-render.sh
cp "$T/render/render-h200-1m.png" "$O/" 2>/dev/null; cp "$T/render/flock-h200-1m.gif" "$O/" 2>/dev/null

section "compute-sanitizer"
for a in "naive" "scattered --sort radix --stages" "coherent" "coherent-warp"; do
  echo "memcheck $a: $(timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 "$M" flock run --backend cuda --n 3000 --steps 2 --method $a --quiet 2>&1 | grep -E 'ERROR SUMMARY')"
done
for a in "coherent-shared --stages" "coherent --sort radix --stages"; do
  echo "racecheck $a: $(timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 "$M" flock run --backend cuda --n 3000 --steps 2 --method $a --quiet 2>&1 | grep -E 'RACECHECK SUMMARY|ERROR SUMMARY')"
done

section "flock check, N = 20k"
timeout 60 "$M" flock check --sizes 20000 --sort-max 5000

section "constant density: 100M and 1e9 boids"
timeout 60 "$M" flock bench --backend cuda --sizes 100000000 --methods coherent --factors 0.5,1 \
  --warmup 20 --steps 50 --constant-density --out "$T/bd"
timeout 60 "$M" flock bench --backend cuda --sizes 1000000000 --methods coherent --factors 1 \
  --warmup 1 --steps 2 --constant-density --out "$T/b1e9"

section "sort vs CUB"
timeout 50 "$M" flock sort-bench --sizes 10000000,100000000 --bits 32 --repeat 2
CUPY_ACCELERATORS=cub timeout 40 python3 scripts/sort_cub.py 10000000,100000000

section "ncu: update_velocity_coherent at 1M"
timeout 45 ncu --clock-control none --kernel-name update_velocity_coherent --launch-skip 30 --launch-count 1 \
  --metrics gpu__time_duration.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__thread_inst_executed_per_inst_executed.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__t_sector_hit_rate.pct \
  "$M" flock run --backend cuda --n 1000000 --steps 35 --stages --quiet 2>&1 | grep -E "gpu__time|registers|warps_active|thread_inst|issue_active|inst_executed.sum|hit_rate"
section done
