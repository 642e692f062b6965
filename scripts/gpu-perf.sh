#!/usr/bin/env bash
# The performance-layer GPU round, in one call on the GPU machine, from the repository root:
#   bash scripts/gpu-perf.sh [all|tests|parity|bench|layout|boundary|ib|big|tune|validate|profile]...
# - tests: the GPU test binaries of dist/gpu/tests (parity per storage and layout, the half
#   conversions over all 2^32 inputs, the immersed-boundary spreading methods);
# - parity: `murmur fluid parity` for every storage, and compute-sanitizer memcheck;
# - bench: `murmur fluid bench` at 256^3 for every model, storage and streaming, SoA and CSoA-128
#   (and the baseline binary of dist/base when present);
# - layout: CSoA granularities and 3D thread blocks, BGK and ACM-MRT FP32;
# - boundary: the obstacle scene (walls, inlet, outlet; its sphere left out) against a periodic
#   box of its size (`murmur fluid boundary-bench`: MLUPs/s, the ratio and stage times for each
#   boundary launch: tail, beside-1, beside-2, serial), and ncu tables of the boundary, interior
#   and immersed-boundary kernels (obstacle with and without its sphere, its periodic box, the
#   torus channel);
# - ib: `murmur fluid ib-bench` on the torus channel (1.1M samples);
# - big: a 1300^3 Taylor-Green vortex, FP16S, 1000 steps, with its allocation;
# - tune: `murmur fluid tune` on the obstacle, the sphere at Re 10,000 and the trefoil mesh;
# - validate: `murmur fluid validate` for every storage;
# - profile: ncu on the stream-collide, boundary and immersed-boundary kernels.
# Logs go to $OUT.
set -u -o pipefail
M=${MURMUR:-dist/gpu/murmur}
# The metrics scripts/ncu-table.py turns into a table (its --metrics prints the same list).
NCU_METRICS=gpu__time_duration.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,dram__bytes.sum.per_second,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,smsp__thread_inst_executed_per_inst_executed.ratio
LOG=${OUT:-gpu-logs}
mkdir -p "$LOG"
status=0
section() { echo; echo "=== $* ($(date +%T)) ==="; }
want() { [[ " $WANT " == *" all "* ]] || [[ " $WANT " == *" $1 "* ]]; }
WANT=" ${*:-all} "

# ncu over `murmur ARGS...`, kernels matching $1, skipping $2 launches and profiling $3, as a
# markdown table under the title $4 (the raw output kept in $LOG/ncu-N.txt).
ncu_table() {
  local match=$1 skip=$2 count=$3 title=$4; shift 4
  local raw="$LOG/ncu-$((++NCU_N)).txt"
  ncu --clock-control none -k "regex:$match" -s "$skip" -c "$count" --metrics "$NCU_METRICS" \
    "$M" "$@" > "$raw" 2>&1 || { echo "ncu failed: $(tail -2 "$raw")"; status=1; }
  if command -v python3 >/dev/null; then
    python3 scripts/ncu-table.py --title "$title" < "$raw"
  else
    echo "$title"; grep -E "^  [a-z_]+ ?\(|__" "$raw"
  fi
}
NCU_N=0

# The boundary, interior and immersed-boundary kernels under ncu (one launch at a time, so the
# boundary kernel runs after the interior one).
profile_boundaries() {
  sed '/^\[\[solids\]\]/,/^position/d' assets/fluid/obstacle.toml > "$LOG/obstacle-nosolid.toml"
  sed -E 's/^([xyz]_(min|max)) = .*/\1 = { type = "periodic" }/' "$LOG/obstacle-nosolid.toml" \
    > "$LOG/obstacle-periodic.toml"
  ncu_table "lbm_stream_collide_" 5 1 \
    "periodic box of the obstacle's size, ACM-MRT, FP32 pull, step 6 (the interior kernel alone):" \
    fluid run "$LOG/obstacle-periodic.toml" --backend cuda --steps 8 --quiet --no-tuning
  for v in "fp32 pull" "fp16s pull" "fp32 in-place"; do
    set -- $v
    ncu_table "lbm_boundary_|lbm_stream_collide_" 10 2 \
      "obstacle without its sphere, ACM-MRT, $1 $2, steps 6 (interior kernel, then the boundary kernel):" \
      fluid run "$LOG/obstacle-nosolid.toml" --backend cuda --steps 8 --quiet --no-tuning \
      --storage "$1" --streaming "$2" --boundary-launch serial
  done
  # A step of the obstacle: ib_clear, ib_mark, ib_velocity, 3 x (ib_force, ib_update) and the
  # banded interior kernel; of the torus channel (block gather): ib_clear, ib_mark, ib_bin,
  # scan_cells, ib_place, ib_velocity, 3 x (ib_force, ib_gather) and the banded interior kernel.
  ncu_table "^ib_|lbm_stream_collide_band_" 20 10 \
    "obstacle with its sphere (scatter), ACM-MRT, FP32 pull, step 3:" \
    fluid run assets/fluid/obstacle.toml --backend cuda --steps 4 --quiet --no-tuning
  # The torus channel spreads by the scatter as shipped: the block gather named here.
  { cat assets/fluid/torus-channel.toml; printf '\n[immersed]\nspread = "blocks"\nblock = 4\n'; } \
    > "$LOG/torus-blocks.toml"
  ncu_table "^ib_|^scan_cells|lbm_stream_collide_band_" 26 13 \
    "torus channel (1.1M samples, block gather), FP32 pull, step 3:" \
    fluid run "$LOG/torus-blocks.toml" --backend cuda --steps 4 --quiet --no-tuning
}

section device
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader

if want tests; then
  section "GPU tests"
  for t in gpu_half fluid_gpu_parity fluid_ib_spread gpu_parity; do
    echo "== $t"
    [ -x dist/gpu/tests/$t ] || { echo "(not in this bundle)"; continue; }
    (cd dist/gpu/tests && ./$t --ignored --test-threads=1 2>&1 | grep -vE "^$|^running" | tail -12) || status=1
  done
fi

if want parity; then
  section "fluid parity (CPU vs CUDA, 100 steps, every storage)"
  "$M" fluid parity --steps 100 2>&1 | tee "$LOG/fluid-parity.md" | tail -3 || status=1
  if command -v compute-sanitizer >/dev/null; then
    section "compute-sanitizer memcheck (parity, 3 steps, ACM-MRT, FP16S)"
    compute-sanitizer --tool memcheck --error-exitcode 9 "$M" fluid parity --steps 3 --models acm-mrt --storage fp16s \
      > "$LOG/memcheck.txt" 2>&1; rc=$?
    tail -2 "$LOG/memcheck.txt"; [ $rc -eq 0 ] || { echo "memcheck rc $rc"; status=1; }
  fi
fi

if want bench; then
  section "fluid bench 256^3, every model and storage"
  "$M" fluid bench --backend cuda --sizes 256 --storage fp32,fp16s,fp16c --streaming pull,in-place \
    --layout soa,128 2>&1 | tee "$LOG/bench.md" | grep -v "^  "
  if [ -x dist/base/murmur ]; then
    section "baseline binary (before this round), 256^3 FP32"
    dist/base/murmur fluid bench --backend cuda --sizes 256 2>&1 | grep "^|"
  fi
fi

if want layout; then
  section "layouts and thread blocks, 256^3, FP32"
  "$M" fluid bench --backend cuda --sizes 256 --models bgk,acm-mrt --layout soa,32,128,1024 2>&1 | grep "^|"
  for b in 32x4x2 32x8x1 64x2x2 128x1x1; do
    "$M" fluid bench --backend cuda --sizes 256 --models bgk,acm-mrt --block $b 2>&1 | grep "^| [ab]" | sed "s/^/$b /"
  done
  "$M" fluid bench --backend cuda --sizes 256 --models bgk,acm-mrt --storage fp16s --layout soa,128 --streaming pull,in-place 2>&1 | grep "^| [ab]"
fi

if want boundary; then
  section "boundaries: obstacle (no sphere) against a periodic box of its size, every storage"
  "$M" fluid boundary-bench assets/fluid/obstacle.toml --backend cuda --steps 1000 \
    --storage fp32,fp16s,fp16c --streaming pull,in-place 2>&1 | tee "$LOG/boundary-bench.md" | grep -v "^  "
  if command -v ncu >/dev/null; then
    section "ncu: boundary, interior and immersed-boundary kernels"
    profile_boundaries
  fi
fi

if want ib; then
  section "immersed boundary: spreading methods on the torus channel"
  "$M" fluid ib-bench assets/fluid/torus-channel.toml --backend cuda --steps 50 2>&1 | tee "$LOG/ib-bench.md" | tail -25
fi

if want big; then
  section "1300^3 Taylor-Green, FP16S, in place, 1000 steps"
  sed -e 's/^resolution = .*/resolution = 1300/' -e 's/^steps = .*/steps = 1000/' -e 's/^output_every = .*//' \
    -e 's/^collision = .*/collision = "bgk"/' assets/fluid/taylor-green.toml > "$LOG/tg-1300.toml"
  /usr/bin/time -v "$M" fluid run "$LOG/tg-1300.toml" --backend cuda --storage fp16s --streaming in-place --quiet 2>&1 \
    | grep -E "^scene|steps of|health|error|Maximum resident|Elapsed" | cut -c1-300
  nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader
fi

if want tune; then
  section "fluid tune: obstacle, sphere, trefoil (time cap 40 s each)"
  for sc in obstacle sphere-re10000 trefoil; do
    MURMUR_TUNING_CACHE="$LOG/tuning.toml" "$M" fluid tune assets/fluid/$sc.toml --backend cuda --time-cap 40 --quiet 2>&1 | grep -vE "^murmur: warning|^solid" | tail -14
  done
fi

if want validate; then
  section "fluid validate (full sizes), every storage"
  "$M" fluid validate --backend cuda --storage fp32,fp16s,fp16c --no-ib 2>&1 | tee "$LOG/validate.md" | grep -vE "^  " | tail -45
  "$M" fluid validate --backend cuda --storage fp16s,fp16c 2>&1 | grep -E "^\| (dfg|galilean|couette)|exempt|passed|missed" | tail -20
fi

if want profile && command -v ncu >/dev/null; then
  section "ncu: stream-collide kernels, 256^3 (one launch each)"
  for m in bgk acm-mrt; do
    for st in fp32 fp16s; do
      ncu --clock-control none -k regex:lbm_stream_collide_ -c 1 -s 3 \
        --metrics launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,smsp__thread_inst_executed_per_inst_executed.ratio,gpu__time_duration.sum \
        "$M" fluid bench --backend cuda --sizes 256 --models $m --storage $st --steps 5 2>&1 | grep -E "lbm_|registers|warps_active|dram__|inst_executed|duration" | sed "s/^/$m $st /"
    done
  done
  if ! want boundary; then
    section "ncu: boundary, interior and immersed-boundary kernels"
    profile_boundaries
  fi
fi

echo; echo "status $status"
exit $status
