#!/usr/bin/env bash
# The GPU round, in one call on the GPU machine (built here by `cargo xtask gpu-bundle`):
#   bash dist/gpu/gpu-check.sh            # from the repository root
# Prints: the device, `murmur flock check` (every GPU method vs the CPU reference, the device sort
# vs a CPU sort), compute-sanitizer memcheck and racecheck on small runs of every kernel, and
# flock timings. Logs go to $OUT (or ./gpu-logs) as well.
set -u
M=${MURMUR:-dist/gpu/murmur}
LOG=${OUT:-gpu-logs}
mkdir -p "$LOG"
status=0
section() { echo; echo "=== $* ==="; }

section device
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader

section "flock check"
"$M" flock check 2>&1 | tee "$LOG/flock-check.md" || status=1

section "compute-sanitizer"
for tool in memcheck racecheck; do
  for m in naive scattered coherent coherent-shared; do
    out=$(compute-sanitizer --tool $tool --error-exitcode 9 "$M" flock run --backend cuda \
          --n 3000 --steps 2 --method $m --quiet 2>&1)
    rc=$?
    echo "$tool $m: exit $rc, $(echo "$out" | grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' | tr '\n' ' ')"
    [ $rc -eq 0 ] || { status=1; echo "$out" | tail -20; }
  done
  out=$(compute-sanitizer --tool $tool --error-exitcode 9 "$M" flock check --sizes 500 --sort-max 70000 2>&1)
  rc=$?
  echo "$tool sort+check: exit $rc, $(echo "$out" | grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' | tr '\n' ' ')"
  [ $rc -eq 0 ] || { status=1; echo "$out" | tail -20; }
done

section "flock timings (scale 100, CUDA events)"
for n in 100000 1000000 5000000; do
  for f in 1 2; do
    "$M" flock run --backend cuda --n $n --cell-width-factor $f --steps 300 --quiet 2>&1 | head -2
  done
done

[ -f scripts/gpu-fluid.sh ] && { section fluid; bash scripts/gpu-fluid.sh || status=1; }
[ -f scripts/gpu-render.sh ] && { section render; bash scripts/gpu-render.sh || status=1; }
echo
echo "gpu-check exit status: $status"
exit $status
