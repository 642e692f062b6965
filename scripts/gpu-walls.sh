#!/usr/bin/env bash
# Boundaries at interior speed, on one GPU machine, from the repository root, in one call:
#   bash scripts/gpu-walls.sh [checks] [bench] [ncu]
# - checks: `murmur fluid parity` and the fluid GPU tests of dist/gpu/tests;
# - bench: `murmur fluid boundary-bench` of the obstacle (1.06M cells), the Re 10,000 sphere at
#   its shipped 24 cells per diameter (2.3M) and at 48 (18.1M), each with the binary before this
#   round (dist/old/murmur.xz, when present) and the new one, the new one also with --graph;
# - ncu: the interior and boundary kernels of the obstacle without its sphere, and every lattice
#   kernel of the sphere at 48 without it (the outlet layer's own kernel, then in the interior
#   kernel's), old and new binaries.
# Needs dist/new/murmur.xz (PTX embedded) and, for checks, dist/gpu/tests/*.xz.
NAME=walls ARGS="$*"
. scripts/gpu-old-new.sh

if want checks; then
  section "fluid parity (CPU vs CUDA, 100 steps)"
  timeout 200 "$B" fluid parity --steps 100 2>&1 | tail -n 45 || status=1
  . scripts/gpu-nccl.sh
  for t in fluid_gpu_parity fluid_graph fluid_checkpoint fluid_checkpoint_ranks fluid_state fluid_ib_spread \
           gpu_half fluid_health fluid_view api; do
    [ -f dist/gpu/tests/$t.xz ] || continue
    section "GPU test: $t"
    xz -dc dist/gpu/tests/$t.xz > "$T/$t" && chmod +x "$T/$t"
    timeout 300 "$T/$t" --ignored --test-threads=1 2>&1 | grep -E "^(test |test result)|panicked|FAILED|assert" || status=1
  done
fi

# boundary-bench ARGS... with the old binary (when present), the new one, the new one with --graph.
bench3() {
  if [ -n "$OLD" ]; then
    section "old binary: fluid boundary-bench $*"
    timeout 200 "$OLD" fluid boundary-bench "$@" 2>&1 | grep -v "^  " || status=1
  fi
  for g in "" "--graph"; do
    section "new binary: fluid boundary-bench $* $g"
    timeout 200 "$B" fluid boundary-bench "$@" $g 2>&1 | grep -v "^  " || status=1
  done
}

if want bench; then
  bench3 assets/fluid/obstacle.toml --backend cuda --steps 1000 --storage fp32,fp16s \
    --streaming pull,in-place --launches tail,beside-2,serial
  bench3 "$T/sphere-48.toml" --backend cuda --steps 300 --storage fp32,fp16s --streaming pull \
    --launches tail,beside-2,serial
  bench3 assets/fluid/sphere-re10000.toml --backend cuda --steps 1000 --storage fp32 --streaming pull \
    --launches tail,serial
  # The headline kernels (the periodic box) stay as they were.
  for bin in ${OLD:+$OLD} $B; do
    section "$(basename $bin): fluid bench --sizes 256, BGK and ACM-MRT, FP32 and FP16S, CSoA-128"
    timeout 200 "$bin" fluid bench --backend cuda --sizes 256 --models bgk,acm-mrt --storage fp32,fp16s --layout 128 2>&1 | grep "^|" || status=1
  done
fi

# ncu over `fluid run SCENE` (serial launches) with the old and the new binary: kernels matching
# $1, skipping $2 launches and profiling $3, over $4 steps of scene $5.
ncu_both() {
  local match=$1 skip=$2 count=$3 steps=$4 scene=$5 bin
  for bin in ${OLD:+$OLD} $B; do
    echo "-- $bin"
    ncu --clock-control none -k "regex:$match" -s "$skip" -c "$count" \
      --metrics gpu__time_duration.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,smsp__thread_inst_executed_per_inst_executed.ratio \
      "$bin" fluid run "$scene" --backend cuda --steps "$steps" --quiet --no-tuning --boundary-launch serial \
      > "$T/ncu.txt" 2>&1 || { echo "ncu failed: $(tail -3 "$T/ncu.txt")"; status=1; }
    python3 scripts/ncu-table.py --title "$(basename $bin)" < "$T/ncu.txt"
  done
}

if want ncu && command -v ncu >/dev/null; then
  section "ncu: obstacle without its sphere, ACM-MRT, FP32 pull, serial launches, one step"
  sed '/^\[\[solids\]\]/,/^position/d' assets/fluid/obstacle.toml > "$T/obstacle-nosolid.toml"
  ncu_both "lbm_boundary_|lbm_stream_collide_" 18 3 12 "$T/obstacle-nosolid.toml"
  section "ncu: the sphere at 48 cells per diameter without it, ACM-MRT, FP32 pull, serial launches, step 3"
  sed '/^\[\[solids\]\]/,/^position/d' "$T/sphere-48.toml" > "$T/sphere-48-nosolid.toml"
  # The old binary runs the layer in its own kernel, the new one in the interior kernel's.
  ncu_both "lbm_" 6 4 4 "$T/sphere-48-nosolid.toml"
fi
echo; echo "status $status"
exit $status
