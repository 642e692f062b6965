#!/usr/bin/env bash
# Turbulence statistics, the Smagorinsky model and the turbulent channel on one GPU machine, from
# the repository root:
#   bash scripts/gpu-statistics.sh [checks] [test] [cost] [stats-cost] [les-channel] [channel]
#                                   [channel-more] [coarse-models]
# - checks: `murmur fluid parity` (its scenes include the Smagorinsky poiseuille) and test;
# - test: the GPU test of dist/gpu/tests/fluid_statistics.xz;
# - cost: `fluid bench` at 256^3 with --les none,smagorinsky (and the old binary's plain rows
#   when dist/old is there), and stats-cost;
# - stats-cost: a 256^3 periodic box with statistics every 20 steps (profiles and whole
#   fields) against the same box without;
# - les-channel: `fluid case channel-180` on the coarse channel (four wall units per cell)
#   without the model and with it (assets/fluid/channel-180-les.toml), each to its end;
# - channel: the resolved channel from step 0 until DEADLINE (seconds since the script's start,
#   default 585), stopped by SIGTERM with a checkpoint in $RUN (kept on the machine); left out
#   when the coarse channel without the model stayed laminar;
# - coarse-models: the coarse channel without a model in RM-MRT, and in ACM-MRT at half the
#   lattice velocity (what moves its excess over the DNS); only when named;
# - channel-more: the resolved channel resumed from $RUN's newest checkpoint until DEADLINE,
#   compared with the DNS when it reaches its end.
# The runs stopped by a deadline get one SIGTERM (`timeout --foreground`: without it, timeout
# also signals its process group, and a second SIGTERM ends a run at once, without its
# checkpoint). Logs, profiles and plots go to $OUT. Needs dist/new/murmur.xz (PTX embedded).
NAME=statistics ARGS="$*"
START=$(date +%s)
. scripts/gpu-old-new.sh
RUN=/tmp/murmur-channel-run
left() { echo $(( ${DEADLINE:-585} - ($(date +%s) - START) )); }

if want checks; then
  section "fluid parity (CPU vs CUDA, 100 steps)"
  timeout 150 "$B" fluid parity --steps 100 2>&1 | tail -n 40 || status=1
fi
if want checks || want test; then
  t=fluid_statistics
  if [ -f dist/gpu/tests/$t.xz ]; then
    section "GPU test: $t"
    xz -dc dist/gpu/tests/$t.xz > "$T/$t" && chmod +x "$T/$t"
    timeout 120 "$T/$t" --ignored --test-threads=1 2>&1 | grep -E "^(test |test result)|panicked|FAILED|assert" || status=1
  fi
fi
if want cost; then
  section "fluid bench --sizes 256 --les none,smagorinsky (new)"
  timeout 120 "$B" fluid bench --backend cuda --sizes 256 --steps 200 --les none,smagorinsky 2>&1 | tail -n 12 || status=1
  if [ -n "$OLD" ]; then
    section "fluid bench --sizes 256 (old, before the subgrid model)"
    timeout 90 "$OLD" fluid bench --backend cuda --sizes 256 --steps 200 2>&1 | tail -n 6 || status=1
    section "fluid bench --sizes 256 (new, plain)"
    timeout 90 "$B" fluid bench --backend cuda --sizes 256 --steps 200 2>&1 | tail -n 6 || status=1
  fi
fi
if want cost || want stats-cost; then
  sed -e 's/^resolution = 64/resolution = 256/' -e 's/^collision = .*/collision = "acm-mrt"/' \
    assets/fluid/taylor-green.toml > "$T/tg256.toml"
  cp "$T/tg256.toml" "$T/tg256-profiles.toml"
  printf '\n[statistics]\nstart = 0\nevery = 20\naverage = ["x", "z"]\n' >> "$T/tg256-profiles.toml"
  cp "$T/tg256.toml" "$T/tg256-fields.toml"
  printf '\n[statistics]\nstart = 0\nevery = 20\n' >> "$T/tg256-fields.toml"
  for s in tg256 tg256-profiles tg256-fields; do
    section "statistics cost: $s, 2000 steps"
    timeout 60 "$B" fluid run "$T/$s.toml" --backend cuda --steps 2000 --quiet 2>&1 \
      | grep -E "^scene|MLUPs|^stages|^statistics" || status=1
  done
fi
if want les-channel; then
  # The same coarse channel without the model, then with it.
  grep -v -e "^les = " -e "^smagorinsky = " assets/fluid/channel-180-les.toml \
    | sed -e 's/^name = "channel-180-les"/name = "channel-180-coarse"/' > "$T/channel-180-coarse.toml"
  for s in "$T/channel-180-coarse.toml" assets/fluid/channel-180-les.toml; do
    n=$(basename "$s" .toml)
    section "fluid case channel-180 --scene $s"
    timeout 200 "$B" fluid case channel-180 --scene "$s" --backend cuda --out "$T/$n-run" \
      --plot "$O/$n.png" 2>&1 | grep -v "^wrote .*slice" | tee "$T/$n.txt" || status=1
    cp "$T/$n-run/${n}_statistics.csv" "$O/" 2>/dev/null
  done
fi
if [[ " $WANT " == *" coarse-models "* ]]; then
  # What moves the coarse channel's excess: RM-MRT instead of ACM-MRT, then ACM-MRT at half the
  # lattice velocity (twice the steps, the statistics' start and the run's end in step counts).
  grep -v -e "^les = " -e "^smagorinsky = " assets/fluid/channel-180-les.toml \
    | sed -e 's/^name = .*/name = "channel-180-coarse-rm"/' -e 's/^collision = .*/collision = "rm-mrt"/' \
    > "$T/channel-180-coarse-rm.toml"
  grep -v -e "^les = " -e "^smagorinsky = " assets/fluid/channel-180-les.toml \
    | sed -e 's/^name = .*/name = "channel-180-coarse-slow"/' -e 's/^velocity = 0.1 .*/velocity = 0.05/' \
      -e 's/^start = 50000 .*/start = 100000/' -e 's/^steps = 215000 .*/steps = 430000/' \
    > "$T/channel-180-coarse-slow.toml"
  grep -q "^velocity = 0.05" "$T/channel-180-coarse-slow.toml" && grep -q "^steps = 430000" \
    "$T/channel-180-coarse-slow.toml" || { echo "coarse-slow: a line was not replaced"; status=1; }
  for n in channel-180-coarse-rm channel-180-coarse-slow; do
    section "fluid case channel-180 --scene $n.toml"
    timeout 300 "$B" fluid case channel-180 --scene "$T/$n.toml" --backend cuda --out "$T/$n-run" \
      --plot "$O/$n.png" 2>&1 | grep -v "^wrote .*slice" || status=1
    cp "$T/$n-run/${n}_statistics.csv" "$O/" 2>/dev/null
  done
fi
# The resolved run only when the coarse channel without the model turned turbulent (its peak
# of u_rms+ above 1).
turbulent() {
  [ ! -f "$T/channel-180-coarse.txt" ] && return 0
  awk '/peak u_rms\+/ { for (i = 1; i <= NF; i++) if ($i == "u_rms+") v = $(i + 1) } END { exit !(v > 1.0) }' \
    "$T/channel-180-coarse.txt"
}
if want channel && ! turbulent; then
  echo "channel: the coarse channel stayed laminar; the resolved run is left out"
elif want channel; then
  rm -rf "$RUN"
  s=$(( $(left) - 45 ))
  section "fluid case channel-180 (resolved) for $s s, then SIGTERM"
  timeout --foreground -s TERM "$s" "$B" fluid case channel-180 --backend cuda --out "$RUN" 2>&1 | tail -n 12
  ls -la "$RUN/checkpoints" 2>&1 | tail -n 3
  cp "$RUN"/*_statistics.csv "$O/" 2>/dev/null
fi
if want channel-more; then
  s=$(( $(left) - 45 ))
  section "fluid case channel-180 (resolved) resumed for $s s"
  if timeout --foreground -s TERM "$s" "$B" fluid case channel-180 --backend cuda --out "$RUN" \
      --resume "$RUN/checkpoints" --plot "$O/channel-180.png" 2>&1 | tail -n 14; then
    echo "channel: done"
  fi
  ls -la "$RUN/checkpoints" 2>&1 | tail -n 3
  cp "$RUN"/*_statistics.csv "$O/" 2>/dev/null
fi
section "done (status $status)"
exit $status
