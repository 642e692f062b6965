#!/usr/bin/env bash
# The immersed boundary's speed, on one GPU machine, from the repository root, in one call:
#   bash scripts/gpu-solids.sh [parity] [checks] [bench] [ncu]
# - parity: `murmur fluid parity` (CPU against CUDA, moving immersed solids included);
# - checks: the immersed-boundary GPU tests of dist/gpu/tests (TESTS="..." for some of them);
# - bench: `murmur fluid ib-bench` of the torus channel (1.1M samples, the scatter; every method
#   with the new binary), the Re 10,000 sphere at its shipped 24 cells per diameter and at 48,
#   with the binary before this round (dist/old/murmur.xz, when present) and the new one;
# - ncu: the immersed-boundary kernels of one step of the torus channel (the scatter), old and
#   new binaries.
# Needs dist/new/murmur.xz (PTX embedded) and, for checks, dist/gpu/tests/*.xz.
set -u -o pipefail
O=${OUT:-gpu-logs}
mkdir -p "$O"
exec > >(tee -a "$O/log-solids.txt") 2>&1
T=/tmp/murmur-solids
mkdir -p "$T"
B=$T/murmur
xz -dc dist/new/murmur.xz > "$B" && chmod +x "$B"
OLD=
if [ -f dist/old/murmur.xz ]; then OLD=$T/murmur-old; xz -dc dist/old/murmur.xz > "$OLD" && chmod +x "$OLD"; fi
status=0
section() { echo; echo "=== $* ($(date +%T)) ==="; }
want() { [[ " $WANT " == *" all "* ]] || [[ " $WANT " == *" $1 "* ]]; }
WANT=" ${*:-all} "
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
mkdir -p target/release && cp "$B" target/release/murmur
section device
nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader
sed 's/^resolution = 24 .*/resolution = 48/' assets/fluid/sphere-re10000.toml > "$T/sphere-48.toml"
grep -q "^resolution = 48" "$T/sphere-48.toml" || { echo "sphere-48.toml: no resolution line"; status=1; }
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
echo; echo "status $status"
exit $status
