#!/usr/bin/env bash
# The immersed-boundary GPU round, in one call on the GPU machine, from the repository root:
#   bash scripts/gpu-ib.sh
# Prints: the device; ptxas registers/spills of the lattice and immersed-boundary kernels (when
# ptxas is there); `murmur fluid parity` (CPU vs CUDA after 100 steps, every model, including
# moving immersed solids: fields within 1e-5, forces within 1e-4); compute-sanitizer memcheck of
# a short parity run; `murmur fluid bench` at 256^3 (throughput without solids, against the
# baseline binary in dist/base when present); the GPU tests. Logs go to $OUT as well.
set -u -o pipefail
M=${MURMUR:-dist/gpu/murmur}
PTX=${PTX:-dist/gpu/murmur_kernels.ptx}
LOG=${OUT:-gpu-logs}
mkdir -p "$LOG"
status=0
section() { echo; echo "=== $* ($(date +%T)) ==="; }

section device
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader

PTXAS=${PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
if [ -x "$PTXAS" ] && [ -f "$PTX" ]; then
  section "ptxas -v of the lattice and immersed-boundary kernels"
  tail -n +2 "$PTX" > "$LOG/kernels.ptx"
  "$PTXAS" -arch=sm_90 -v "$LOG/kernels.ptx" -o /dev/null 2>&1 \
    | grep -A3 -E "entry function '(lbm_|ib_)" | grep -E "Compiling|registers|spill" | tee "$LOG/ptxas.txt"
fi

section "fluid parity (CPU vs CUDA, 100 steps)"
"$M" fluid parity --steps 100 2>&1 | tee "$LOG/fluid-parity.md" || status=1

if command -v compute-sanitizer >/dev/null; then
  section "compute-sanitizer memcheck (parity, 3 steps)"
  compute-sanitizer --tool memcheck --error-exitcode 9 "$M" fluid parity --steps 3 --models acm-mrt \
    > "$LOG/memcheck.txt" 2>&1; rc=$?
  tail -3 "$LOG/memcheck.txt"; [ $rc -eq 0 ] || { echo "memcheck rc $rc"; status=1; }
fi

section "fluid bench 256^3 (new, then the baseline)"
for m in bgk acm-mrt; do
  "$M" fluid bench --backend cuda --sizes 256 --models $m 2>&1 | tail -3
  [ -x dist/base/murmur ] && dist/base/murmur fluid bench --backend cuda --sizes 256 --models $m 2>&1 | tail -3
done

if [ -x dist/gpu/tests/run.sh ]; then
  section "GPU tests"
  bash dist/gpu/tests/run.sh 2>&1 | tail -15 || status=1
fi
exit $status
