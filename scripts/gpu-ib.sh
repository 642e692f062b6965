#!/usr/bin/env bash
# The immersed-boundary GPU round, in one call on the GPU machine, from the repository root:
#   bash scripts/gpu-ib.sh [all|parity|bench|stability|cases|tests]...   (default: all)
# - parity: `murmur fluid parity` (CPU vs CUDA after 100 steps, every model, moving immersed
#   solids included) and compute-sanitizer memcheck of a short parity run;
# - bench: `murmur fluid bench` at 256^3 (no solids) beside the baseline binary in dist/base when
#   present, and the stage times of the Re 10,000 sphere scene;
# - stability: the sphere of assets/fluid/sphere-re10000.toml (24 cells per diameter, lattice
#   velocity 0.05) at several Reynolds numbers, 20,000 steps, every model: the step each run
#   stopped at, or that it finished (MODELS="acm-mrt" for one row);
# - validate: `murmur fluid validate --backend cuda` (full sizes, immersed-boundary rows included);
# - torus: the rotating-torus showcase, its slice pictures and forces copied to $OUT;
# - cases: `murmur fluid case` for the DFG benchmarks, the Galilean check and Couette flow;
# - tests: the GPU test binaries of dist/gpu/tests.
# Logs go to $OUT as well.
set -u -o pipefail
M=${MURMUR:-dist/gpu/murmur}
LOG=${OUT:-gpu-logs}
mkdir -p "$LOG"
status=0
section() { echo; echo "=== $* ($(date +%T)) ==="; }
want() { [ $# -eq 0 ] || [[ " $WANT " == *" all "* ]] || [[ " $WANT " == *" $1 "* ]]; }
WANT=" ${*:-all} "

section device
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader

if want parity; then
  section "fluid parity (CPU vs CUDA, 100 steps)"
  "$M" fluid parity --steps 100 2>&1 | tee "$LOG/fluid-parity.md" || status=1
  if command -v compute-sanitizer >/dev/null; then
    section "compute-sanitizer memcheck (parity, 3 steps)"
    compute-sanitizer --tool memcheck --error-exitcode 9 "$M" fluid parity --steps 3 --models acm-mrt \
      > "$LOG/memcheck.txt" 2>&1; rc=$?
    tail -2 "$LOG/memcheck.txt"; [ $rc -eq 0 ] || { echo "memcheck rc $rc"; status=1; }
  fi
fi

if want bench; then
  section "fluid bench 256^3 without solids (new, then the baseline)"
  for m in ${MODELS:-bgk rm-mrt acm-mrt}; do
    "$M" fluid bench --backend cuda --sizes 256 --models $m 2>&1 | tail -1
    [ -x dist/base/murmur ] && dist/base/murmur fluid bench --backend cuda --sizes 256 --models $m 2>&1 | tail -1
  done
  section "stage times with an immersed sphere (sphere-re10000, 2000 steps)"
  "$M" fluid run assets/fluid/sphere-re10000.toml --backend cuda --steps 2000 --quiet 2>&1 | grep -E "steps of|stages|solid sphere|error"
fi

if want stability; then
  section "stability: sphere, 24 cells per diameter, u 0.05, 20000 steps"
  for m in ${MODELS:-bgk rm-mrt acm-mrt}; do
    for re in 300 1000 3000 10000 30000 100000; do
      nu=$(python3 -c "print(0.1/$re)")
      sed -e "s/^viscosity = .*/viscosity = $nu/" -e "s/^collision = .*/collision = \"$m\"/" \
        assets/fluid/sphere-re10000.toml > "$LOG/sphere.toml"
      out=$("$M" fluid run "$LOG/sphere.toml" --backend cuda --steps 20000 --quiet 2>&1)
      line=$(echo "$out" | grep -E "flow left|steps of" | head -1 | cut -c1-150)
      h=$(echo "$out" | grep -E "^health" | head -1)
      cd=$(echo "$out" | grep -E "^sphere:" | head -1 | cut -c1-90)
      echo "| $m | Re $re | $line | $h | $cd |"
    done
  done 2>&1 | tee "$LOG/stability.md"
fi

if want validate; then
  section "fluid validate --backend cuda (full: core cases and the immersed-boundary rows)"
  "$M" fluid validate --backend cuda 2>&1 | tee "$LOG/fluid-validate.md" | grep -vE "^  " || status=1
fi

if want torus; then
  section "rotating torus (assets/fluid/rotating-torus.toml), 12000 steps"
  tmp="$LOG/../torus-run"; rm -rf "$tmp"; mkdir -p "$tmp"
  "$M" fluid run assets/fluid/rotating-torus.toml --backend cuda --out "$tmp" --quiet 2>&1 | tail -8
  cp "$tmp"/*_slice.png "$tmp"/*_forces.csv "$LOG"/ 2>/dev/null
  rm -rf "$tmp"
fi

if want cases; then
  section "immersed-boundary cases"
  C() { echo "--- fluid case $*"; "$M" fluid case "$@" --backend cuda 2>&1 | tail -3; }
  C couette
  C dfg-2d-1 --cells-per-d 20
  C dfg-2d-1 --cells-per-d 40
  C dfg-2d-2 --cells-per-d 20
  C dfg-2d-2 --cells-per-d 40
  C dfg-3d-1z --cells-per-d 20
  C galilean --cells-per-d 16
fi 2>&1 | tee "$LOG/cases.md"

if want tests && [ -f dist/gpu/tests/run.sh ]; then
  section "GPU tests"
  bash dist/gpu/tests/run.sh 2>&1 | tail -12 || status=1
fi
exit $status
