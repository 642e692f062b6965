#!/usr/bin/env bash
# The immersed boundary's speed, on one GPU machine, from the repository root, in one call:
#   bash scripts/gpu-solids.sh [parity] [checks] [bench] [ncu] [sass] [gather] [small] [fp16]
# - parity: `murmur fluid parity` (CPU against CUDA, moving immersed solids included);
# - checks: the immersed-boundary GPU tests of dist/gpu/tests (TESTS="..." for some of them);
# - bench: `murmur fluid ib-bench` of the torus channel (1.1M samples, the scatter; every method
#   with the new binary), the Re 10,000 sphere at its shipped 24 cells per diameter and at 48,
#   with the binary before this round (dist/old/murmur.xz, when present) and the new one;
# - ncu: the immersed-boundary kernels of one step of the torus channel (the scatter), old and
#   new binaries;
# - sass: ncu's source counters of ib_force and ib_velocity (one launch each, torus channel, new
#   binary): per SASS instruction its executed count and stall samples, as CSV in $OUT;
# - gather: ncu of the plain and the block gather on the torus channel (new binary);
# - small: `fluid bench` at 64^3, 128^3, 256^3 without and with --graph, old and new binaries;
# - fp16: ncu of the FP32 and FP16S BGK / ACM-MRT kernels at 256^3 with their stall reasons.
# Needs dist/new/murmur.xz (PTX embedded) and, for checks, dist/gpu/tests/*.xz.
NAME=solids ARGS="$*"
. scripts/gpu-old-new.sh
# The scene as shipped spreads by the scatter; an older one named the block gather.
sed -e 's/^spread = .*/spread = "scatter"/' -e '/^block = /d' assets/fluid/torus-channel.toml > "$T/torus-scatter.toml"

if want parity; then
  section "fluid parity (CPU vs CUDA, 100 steps)"
  timeout 200 "$B" fluid parity --steps 100 2>&1 | tail -n 45 || status=1
fi

if want checks; then
  . scripts/gpu-nccl.sh
  for t in ${TESTS:-fluid_ib_spread fluid_gpu_parity fluid_state fluid_checkpoint api}; do
    [ -f dist/gpu/tests/$t.xz ] || continue
    section "GPU test: $t"
    xz -dc dist/gpu/tests/$t.xz > "$T/$t" && chmod +x "$T/$t"
    timeout 320 "$T/$t" --ignored --test-threads=1 2>&1 | grep -E "^(test |test result)|panicked|FAILED|assert" || status=1
  done
fi

# ib-bench ARGS... with the old binary (when present), then the new one.
bench2() {
  for bin in ${OLD:+$OLD} $B; do
    section "$(basename $bin): fluid ib-bench $*"
    timeout 280 "$bin" fluid ib-bench "$@" 2>&1 | grep -v "^  " || status=1
  done
}

if want bench; then
  bench2 assets/fluid/torus-channel.toml --backend cuda --steps 50 --method scatter
  bench2 "$T/sphere-48.toml" --backend cuda --steps 200 --method scatter
  bench2 assets/fluid/sphere-re10000.toml --backend cuda --steps 500 --method scatter
  [ -n "${NEW_ONLY:-}" ] || section "new binary: fluid ib-bench torus-channel, every method"
  [ -n "${NEW_ONLY:-}" ] || timeout 280 "$B" fluid ib-bench assets/fluid/torus-channel.toml --backend cuda --steps 20 --warmup 5 2>&1 \
    | grep -v "^  " || status=1
fi

if want ncu && command -v ncu >/dev/null; then
  section "ncu: the torus channel (scatter), the immersed-boundary kernels of step 3"
  # A step: ib_clear, ib_mark, ib_velocity, 3 x (ib_force, ib_update). NEW_ONLY=1: the new binary.
  for bin in $([ -n "${NEW_ONLY:-}" ] || echo ${OLD:+$OLD}) $B; do
    echo "-- $bin"
    ncu --clock-control none -k "regex:^ib_" -s 18 -c 9 \
      --metrics "$(python3 scripts/ncu-table.py --metrics)" \
      "$bin" fluid run "$T/torus-scatter.toml" --backend cuda --steps 4 --quiet --no-tuning \
      > "$T/ncu.txt" 2>&1 || { echo "ncu failed: $(tail -3 "$T/ncu.txt")"; status=1; }
    python3 scripts/ncu-table.py --title "$(basename $bin)" < "$T/ncu.txt"
  done
fi
# Where ib_force's and ib_velocity's instructions go: per SASS instruction, executed warp
# instructions and warp-stall samples (ncu's source page as CSV, summarised by scripts/sass-hot.py).
if want sass && command -v ncu >/dev/null; then
  for k in ib_force ib_velocity; do
    section "ncu source counters: $k, the torus channel (scatter), step 3"
    ncu --clock-control none -k "regex:^$k" -s $([ $k = ib_force ] && echo 6 || echo 2) -c 1 \
      --section SourceCounters --section WarpStateStats -o "$O/sass-$k" -f \
      "$B" fluid run "$T/torus-scatter.toml" --backend cuda --steps 4 --quiet --no-tuning \
      > "$T/ncu-s.txt" 2>&1 || { echo "ncu failed: $(tail -3 "$T/ncu-s.txt")"; status=1; continue; }
    ncu -i "$O/sass-$k.ncu-rep" --page source --csv --print-source sass > "$O/sass-$k.csv" 2>&1 \
      || { echo "ncu source page failed: $(head -3 "$O/sass-$k.csv")"; status=1; continue; }
    python3 scripts/sass-hot.py "$O/sass-$k.csv" | head -40
  done
fi
# The gathers' profile (deliverable 3 of the IB round): one step of the torus channel with the
# plain gather and with the block gather at l = 2, the new binary; per kernel its time,
# registers, occupancy, instructions per thread and the L1/L2 bytes it moves.
if want gather && command -v ncu >/dev/null; then
  for g in 'spread = "gather"' $'spread = "blocks"\nblock = 2'; do
    { cat "$T/torus-scatter.toml" | sed '/^spread = /d'; printf '\n[immersed]\n%b\n' "$g"; } > "$T/torus-g.toml"
    section "ncu: the torus channel, $(echo "$g" | tr '\n' ' '), the IB kernels of step 3"
    # A step: ib_clear, ib_mark, ib_bin, scan_cells, ib_place, ib_velocity, 3 x (ib_force, ib_gather).
    ncu --clock-control none -k "regex:^ib_|^scan_cells" -s 24 -c 12 \
      --metrics "$(python3 scripts/ncu-table.py --metrics),l1tex__t_bytes.sum,lts__t_bytes.sum" \
      "$B" fluid run "$T/torus-g.toml" --backend cuda --steps 4 --quiet --no-tuning \
      > "$T/ncu-g.txt" 2>&1 || { echo "ncu failed: $(tail -3 "$T/ncu-g.txt")"; status=1; }
    python3 scripts/ncu-table.py --title "$g" < "$T/ncu-g.txt"
    grep -E "^\s+(ib_gather|ib_force)|l1tex__t_bytes.sum|lts__t_bytes.sum" "$T/ncu-g.txt" | head -24
  done
fi

# Small lattices (deliverable 5): the periodic box at 64^3, 128^3 and 256^3 without and with the
# step as one CUDA graph, old and new binaries.
if want small; then
  for bin in ${OLD:+$OLD} $B; do
    for g in "" "--graph"; do
      section "$(basename $bin): fluid bench --sizes 64,128,256 $g"
      timeout 200 "$bin" fluid bench --backend cuda --sizes 64,128,256 --models bgk,acm-mrt $g 2>&1 \
        | grep "^|" || status=1
    done
  done
fi

# FP16S near the roof (deliverable 4): the BGK and ACM-MRT FP16S kernels at 256^3 with their
# stall reasons, beside FP32.
if want fp16 && command -v ncu >/dev/null; then
  stalls=smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
  stalls=$stalls,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio
  stalls=$stalls,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio
  stalls=$stalls,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio
  stalls=$stalls,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio
  stalls=$stalls,smsp__issue_active.avg.pct_of_peak_sustained_active
  for st in fp32 fp16s; do
    section "ncu: fluid bench 256^3, BGK and ACM-MRT, $st, CSoA-128"
    ncu --clock-control none -k "regex:lbm_stream_collide_" -s 20 -c 2 \
      --metrics "$(python3 scripts/ncu-table.py --metrics),$stalls" \
      "$B" fluid bench --backend cuda --sizes 256 --models bgk,acm-mrt --storage $st --layout 128 --steps 30 \
      > "$T/ncu-h.txt" 2>&1 || { echo "ncu failed: $(tail -3 "$T/ncu-h.txt")"; status=1; }
    python3 scripts/ncu-table.py --title "$st" < "$T/ncu-h.txt"
    grep -E "^\s+lbm_stream_collide|stalled|issue_active" "$T/ncu-h.txt" | head -20
  done
fi
echo; echo "status $status"
exit $status
