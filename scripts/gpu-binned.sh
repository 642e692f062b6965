#!/usr/bin/env bash
# The binned scatter of the immersed boundary, and the profiles behind the walls and FP16
# targets, on one GPU machine, from the repository root, in one or two calls:
#   bash scripts/gpu-binned.sh [parity] [checks] [bench] [ncu] [sass] [walls] [fp16] [fx3d]
# - parity: `murmur fluid parity` (CPU against CUDA);
# - checks: the immersed-boundary GPU tests of dist/gpu/tests (every spreading method against the
#   CPU, the fluid parity tests);
# - bench: `murmur fluid ib-bench` of the torus channel (1.1M samples), the Re 10,000 sphere at
#   48 cells per diameter and at its shipped 24: the old binary's scatter (dist/old/murmur.xz),
#   the new binary's scatter and binned scatter;
# - variants: the binned scatter of the torus channel with each kernel variant of dist/ptx
#   (`scripts/ptx-variant.sh`: other run lengths, one thread per bin) through MURMUR_PTX
#   (VARIANTS="dist/ptx/A.ptx.xz ...": some of them);
# - ncu: the immersed-boundary kernels of one step of the torus channel, binned scatter;
# - ncuforce: ncu of one ib_force launch of the torus channel (scatter) with its stall reasons;
# - sass: ncu's source counters of ib_force_bins (per SASS opcode, scripts/sass-hot.py);
# - walls: the boundary kernel of the sphere at 48 cells per diameter (solids left out, serial
#   launches) with its stall reasons, beside the interior kernel;
# - fp16: `fluid bench` at 256^3 (BGK, ACM-MRT; FP32, FP16S; CSoA-128), the figures FluidX3D's
#   stand beside;
# - fx3d: FluidX3D's D3Q27 benchmark, FP32 and FP16S (`scripts/gpu-fluidx3d.sh`, needs .fx3d
#   carried).
# Needs dist/new/murmur.xz (PTX embedded) and, for checks, dist/gpu/tests/*.xz.
NAME=binned ARGS="$*"
. scripts/gpu-old-new.sh
sed -e 's/^spread = .*/spread = "scatter"/' -e '/^block = /d' assets/fluid/torus-channel.toml > "$T/torus-scatter.toml"
{ sed -e '/^spread = /d' -e '/^block = /d' assets/fluid/torus-channel.toml; printf '\n[immersed]\nspread = "binned"\n'; } > "$T/torus-binned.toml"

STALLS=
for r in long_scoreboard short_scoreboard no_instruction imc_miss wait not_selected \
  math_pipe_throttle lg_throttle mio_throttle branch_resolving barrier drain dispatch_stall selected; do
  STALLS=$STALLS,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio
done
STALLS=${STALLS#,},smsp__issue_active.avg.pct_of_peak_sustained_active

if want parity; then
  section "fluid parity (CPU vs CUDA, 100 steps)"
  timeout 240 "$B" fluid parity --steps 100 2>&1 | tail -n 45 || status=1
fi

if want checks; then
  . scripts/gpu-nccl.sh
  for t in ${TESTS:-fluid_ib_spread fluid_gpu_parity}; do
    [ -f dist/gpu/tests/$t.xz ] || { echo "no dist/gpu/tests/$t.xz"; continue; }
    section "GPU test: $t"
    xz -dc dist/gpu/tests/$t.xz > "$T/$t" && chmod +x "$T/$t"
    timeout 320 "$T/$t" --ignored --test-threads=1 2>&1 | grep -E "^(test |test result)|panicked|FAILED|assert" || status=1
  done
fi

# ib-bench SCENE STEPS: the old binary's scatter, then the new binary's scatter and binned.
bench3() {
  local scene=$1 steps=$2
  if [ -n "$OLD" ]; then
    section "old: fluid ib-bench $(basename $scene) --method scatter"
    timeout 200 "$OLD" fluid ib-bench "$scene" --backend cuda --steps $steps --method scatter 2>&1 | grep -v "^  " || status=1
  fi
  section "new: fluid ib-bench $(basename $scene) --method scatter,binned"
  timeout 200 "$B" fluid ib-bench "$scene" --backend cuda --steps $steps --method scatter,binned 2>&1 | grep -v "^  " || status=1
}

if want bench; then
  bench3 assets/fluid/torus-channel.toml 50
  bench3 "$T/sphere-48.toml" 200
  bench3 assets/fluid/sphere-re10000.toml 500
fi

if want variants; then
  for v in ${VARIANTS:-dist/ptx/*.ptx.xz}; do
    [ -f "$v" ] || continue
    n=$(basename "$v" .ptx.xz)
    xz -dc "$v" > "$T/$n.ptx"
    section "variant $n: fluid ib-bench torus-channel --method binned"
    MURMUR_PTX="$T/$n.ptx" timeout 200 "$B" fluid ib-bench assets/fluid/torus-channel.toml --backend cuda \
      --steps 50 --method binned 2>&1 | grep -E "^\| (binned|no solids)|rror" || status=1
  done
fi

if want ncu && command -v ncu >/dev/null; then
  section "ncu: the torus channel (binned), the IB kernels of step 3"
  # A step: ib_clear, ib_mark, ib_bin, scan_cells, ib_place, ib_velocity, 3 x (ib_force_bins, ib_update).
  ncu --clock-control none -k "regex:^ib_|^scan_cells" -s 24 -c 12 \
    --metrics "$(python3 scripts/ncu-table.py --metrics),$STALLS" \
    "$B" fluid run "$T/torus-binned.toml" --backend cuda --steps 4 --quiet --no-tuning \
    > "$T/ncu.txt" 2>&1 || { echo "ncu failed: $(tail -3 "$T/ncu.txt")"; status=1; }
  python3 scripts/ncu-table.py --title "binned" < "$T/ncu.txt"
  grep -E "^\s+ib_force_bins|stalled|issue_active" "$T/ncu.txt" | head -20
fi

if want ncuforce && command -v ncu >/dev/null; then
  section "ncu: ib_force of the torus channel (scatter), new binary, one launch of step 3"
  ncu --clock-control none -k "regex:^ib_force" -s 6 -c 1 \
    --metrics "$(python3 scripts/ncu-table.py --metrics),$STALLS" \
    "$B" fluid run "$T/torus-scatter.toml" --backend cuda --steps 4 --quiet --no-tuning \
    > "$T/ncu-f.txt" 2>&1 || { echo "ncu failed: $(tail -3 "$T/ncu-f.txt")"; status=1; }
  python3 scripts/ncu-table.py --title "ib_force" < "$T/ncu-f.txt"
  grep -E "stalled|issue_active" "$T/ncu-f.txt" | head -20
fi

if want sass && command -v ncu >/dev/null; then
  section "ncu source counters: ib_force_bins, the torus channel, step 3"
  ncu --clock-control none -k "regex:^ib_force_bins" -s 6 -c 1 \
    --section SourceCounters --section WarpStateStats -o "$O/sass-ib_force_bins" -f \
    "$B" fluid run "$T/torus-binned.toml" --backend cuda --steps 4 --quiet --no-tuning \
    > "$T/ncu-s.txt" 2>&1 || { echo "ncu failed: $(tail -3 "$T/ncu-s.txt")"; status=1; }
  ncu -i "$O/sass-ib_force_bins.ncu-rep" --page source --csv --print-source sass > "$T/sass.csv" 2>&1 \
    && python3 scripts/sass-hot.py "$T/sass.csv" | head -40 \
    || { echo "ncu source page failed: $(head -3 "$T/sass.csv")"; status=1; }
  rm -f "$O/sass-ib_force_bins.ncu-rep"
fi

if want walls && command -v ncu >/dev/null; then
  section "ncu: the sphere at 48 cells per diameter (solids left out), FP32 pull, serial launches"
  # boundary-bench runs the periodic box first, then the scene: the kernels of one scene step.
  ncu --clock-control none -k "regex:lbm_boundary_|lbm_stream_collide_layer_" -c 2 \
    --metrics "$(python3 scripts/ncu-table.py --metrics),$STALLS" \
    "$B" fluid boundary-bench "$T/sphere-48.toml" --backend cuda --steps 2 --warmup 1 \
      --launches serial --storage fp32 --streaming pull \
    > "$T/ncu-w.txt" 2>&1 || { echo "ncu failed: $(tail -3 "$T/ncu-w.txt")"; status=1; }
  python3 scripts/ncu-table.py --title "sphere-48 walls" < "$T/ncu-w.txt"
  grep -E "^\s+lbm_|stalled|issue_active" "$T/ncu-w.txt" | head -40
fi

if want fp16; then
  section "fluid bench 256^3, BGK and ACM-MRT, FP32 and FP16S, CSoA-128"
  timeout 200 "$B" fluid bench --backend cuda --sizes 256 --models bgk,acm-mrt --storage fp32,fp16s \
    --layout 128 --steps 100 2>&1 | grep -E "^\||copy" || status=1
fi

if want fx3d; then
  FX3D_VARIANTS=${FX3D_VARIANTS:-fp32 fp16s} bash scripts/gpu-fluidx3d.sh || status=1
fi
echo; echo "status $status"
exit $status
