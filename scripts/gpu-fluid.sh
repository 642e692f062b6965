#!/usr/bin/env bash
# The fluid GPU round, in one call on the GPU machine, from the repository root:
#   bash scripts/gpu-fluid.sh            # uses dist/gpu/murmur (PTX embedded at build time)
# Prints: the device; ptxas register/spill report of the lattice kernels (when ptxas and
# dist/gpu/murmur_kernels.ptx are there); `murmur fluid parity` (CPU vs CUDA after 100 steps,
# every model and boundary type, tolerance 1e-5); `murmur fluid validate --backend cuda` (full
# grids: TGV 64^3, Poiseuille 64, cavity Re 100 at 128^2 and Re 1000 at 256^2, all models);
# compute-sanitizer memcheck on a small run; `murmur fluid bench` at 128^3 and 256^3 (and 384^3
# for BGK). Logs go to $OUT (or ./gpu-logs) as well. Expected: well under 4 minutes on an H200.
set -u -o pipefail
M=${MURMUR:-dist/gpu/murmur}
PTX=${PTX:-dist/gpu/murmur_kernels.ptx}
LOG=${OUT:-gpu-logs}
mkdir -p "$LOG"
status=0
section() { echo; echo "=== $* ($(date +%T)) ==="; }

section device
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader

PTXAS=${PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
if [ -x "$PTXAS" ] && [ -f "$PTX" ]; then
  section "ptxas -v (registers, spills) of the lattice kernels"
  tail -n +2 "$PTX" > "$LOG/kernels.ptx"   # drop murmur's header line
  "$PTXAS" -arch=sm_90 -v "$LOG/kernels.ptx" -o /dev/null 2>&1 | grep -A3 "entry function 'lbm_" \
    | grep -E "Compiling|registers|spill" | tee "$LOG/ptxas.txt"
fi

section "fluid parity (CPU vs CUDA, 100 steps)"
"$M" fluid parity --steps 100 2>&1 | tee "$LOG/fluid-parity.md" || status=1

section "fluid validate --backend cuda (full grids)"
"$M" fluid validate --backend cuda 2>&1 | tee "$LOG/fluid-validate.md" || status=1

if command -v compute-sanitizer >/dev/null; then
  section "compute-sanitizer memcheck (obstacle scene, every model)"
  for m in bgk rm-mrt acm-mrt; do
    out=$(compute-sanitizer --tool memcheck --error-exitcode 9 "$M" fluid run assets/fluid/obstacle.toml \
          --backend cuda --model $m --steps 5 --quiet 2>&1)
    rc=$?
    echo "memcheck $m: exit $rc, $(echo "$out" | grep -E 'ERROR SUMMARY' | tr '\n' ' ')"
    [ $rc -eq 0 ] || { status=1; echo "$out" | tail -20; }
  done
fi

section "fluid bench (FP32, CUDA events)"
"$M" fluid bench --backend cuda --sizes 128,256 --steps 200 2>&1 | tee "$LOG/fluid-bench.md" || status=1
"$M" fluid bench --backend cuda --sizes 384 --models bgk,acm-mrt --steps 100 2>&1 | tail -n 3 | tee -a "$LOG/fluid-bench.md" || status=1

section "showcase run (obstacle, ACM-MRT, 2000 steps, final .vti)"
"$M" fluid run assets/fluid/obstacle.toml --backend cuda --steps 2000 --out "$LOG/obstacle.vti" --quiet 2>&1 | tail -4 || status=1

section "done: exit $status"
exit $status
