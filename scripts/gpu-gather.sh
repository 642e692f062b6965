#!/usr/bin/env bash
# The gathers per band brick (issue 31, deliverable 3) on one GPU machine, from the repository
# root, old binary beside new in one call:
#   bash scripts/gpu-gather.sh [bench] [ncu]
# - bench: `murmur fluid ib-bench` of the torus channel (1.1M samples) with every method (the
#   block gather at l = 2, 4, 8), old binary (dist/old/murmur.xz) and new; the Re 10,000 sphere
#   at 48 and at 24 cells per diameter with every method, new binary;
# - ncu: one pass of `ib_gather` of the torus channel, block gather at l = 2 and 4 and plain
#   gather (new binary), and the old block gather at l = 4: time, registers, occupancy,
#   instructions per thread, DRAM bytes, stall reasons (NCU_VARIANTS="blocks:4:new gather:-:new":
#   some of them; NO_OLD=1 leaves the old binary's torus row out).
# Needs dist/new/murmur.xz (PTX embedded).
NAME=gather ARGS="$*"
. scripts/gpu-old-new.sh

STALLS=
for r in long_scoreboard short_scoreboard no_instruction wait not_selected math_pipe_throttle \
  lg_throttle mio_throttle barrier selected; do
  STALLS=$STALLS,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio
done
STALLS=${STALLS#,},smsp__issue_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,lts__t_bytes.sum

# scene_with SPREAD [BLOCK] > file: the torus channel with that spreading.
scene_with() {
  sed -e '/^spread = /d' -e '/^block = /d' assets/fluid/torus-channel.toml
  printf '\n[immersed]\nspread = "%s"\n' "$1"
  [ -n "${2:-}" ] && printf 'block = %s\n' "$2"
}

if want bench; then
  if [ -n "$OLD" ] && [ -z "${NO_OLD:-}" ]; then
    section "old: fluid ib-bench torus-channel.toml (every method)"
    timeout 240 "$OLD" fluid ib-bench assets/fluid/torus-channel.toml --backend cuda --steps 20 --warmup 5 2>&1 | grep -v "^  " || status=1
  fi
  section "new: fluid ib-bench torus-channel.toml (every method)"
  timeout 240 "$B" fluid ib-bench assets/fluid/torus-channel.toml --backend cuda --steps 50 --warmup 5 2>&1 | grep -v "^  " || status=1
  section "new: fluid ib-bench sphere at 48 cells per diameter (every method)"
  timeout 200 "$B" fluid ib-bench "$T/sphere-48.toml" --backend cuda --steps 100 2>&1 | grep -v "^  " || status=1
  section "new: fluid ib-bench sphere-re10000.toml (every method)"
  timeout 200 "$B" fluid ib-bench assets/fluid/sphere-re10000.toml --backend cuda --steps 200 2>&1 | grep -v "^  " || status=1
fi

if want ncu && command -v ncu >/dev/null; then
  for v in ${NCU_VARIANTS:-blocks:4:new blocks:2:new gather:-:new blocks:4:old}; do
    IFS=: read -r sp blk which <<< "$v"
    set -- "$sp" "$blk" "$which"
    bin=$B; [ "$3" = old ] && bin=$OLD
    [ -n "$bin" ] || continue
    blk=$2; [ "$blk" = - ] && blk=
    scene_with "$1" $blk > "$T/torus-$1$blk.toml"
    section "ncu: ib_gather, torus channel, spread $1 $blk, $3 binary, one pass of step 3"
    ncu --clock-control none -k "regex:^ib_gather" -s 6 -c 1 \
      --metrics "$(python3 scripts/ncu-table.py --metrics),$STALLS" \
      "$bin" fluid run "$T/torus-$1$blk.toml" --backend cuda --steps 4 --quiet --no-tuning \
      > "$T/ncu-g.txt" 2>&1 || { echo "ncu failed: $(tail -3 "$T/ncu-g.txt")"; status=1; }
    python3 scripts/ncu-table.py --title "ib_gather $1 $blk $3" < "$T/ncu-g.txt"
    grep -E "stalled|issue_active|dram__bytes_read|lts__t_bytes" "$T/ncu-g.txt" | head -14
  done
fi
echo; echo "status $status"
exit $status
