#!/usr/bin/env bash
# The drag ladders of `fluid convergence` on one GPU machine, from the repository root:
#   bash scripts/gpu-convergence.sh [checks] [2d] [3d] [retraction]
# - checks: `murmur fluid parity` (its scenes include the cut-link solids) and the GPU tests
#   fluid_gpu_parity and fluid_graph of dist/gpu/tests;
# - 2d: DFG 2D-1 at 10, 20, 30 and 40 cells per diameter, three sub-cell positions each,
#   diffusive scaling (u_lb 0.05 at D 10), then the same with the lattice velocity held
#   (acoustic, one position);
# - 3d: DFG 3D-1Z at 10, 20 and 30 cells per diameter (D3="10,20" for fewer), one position each,
#   diffusive scaling.
# - retraction: DFG 3D-1Z at 10 and 20 cells per diameter, one position, diffusive, with the
#   immersed boundary's samples retracted by each of RETRACTIONS (default "0.3 0.35 0.4") cells
#   instead of 0.25 (docs/fluid/validation.md, the retraction against drag).
# Each ladder runs for every wall method of BOUNDARIES (default "interpolated-bounce-back
# immersed"). The CSVs go to $OUT. Needs dist/new/murmur.xz (PTX embedded), and for checks
# dist/gpu/tests/*.xz.
NAME=convergence ARGS="$*"
. scripts/gpu-old-new.sh

if want checks; then
  section "fluid parity (CPU vs CUDA, 100 steps)"
  timeout 200 "$B" fluid parity --steps 100 2>&1 | tail -n 30 || status=1
  for t in ${TESTS:-fluid_gpu_parity fluid_graph}; do
    [ -f dist/gpu/tests/$t.xz ] || { echo "no dist/gpu/tests/$t.xz"; continue; }
    section "GPU test: $t"
    xz -dc dist/gpu/tests/$t.xz > "$T/$t" && chmod +x "$T/$t"
    timeout ${TEST_TIMEOUT:-300} "$T/$t" --ignored --test-threads=1 ${TEST_FILTER:-} 2>&1 | grep -E "^(test |test result)|panicked|FAILED|assert" || status=1
  done
fi
for w in ${BOUNDARIES:-interpolated-bounce-back immersed}; do
  if want 2d; then
    section "fluid convergence dfg-2d-1 --boundary $w (diffusive, 3 positions)"
    timeout 250 "$B" fluid convergence dfg-2d-1 --backend cuda --boundary "$w" \
      --csv "$O/convergence-2d-1-$w.csv" || status=1
    section "fluid convergence dfg-2d-1 --boundary $w --scaling acoustic --offsets 1"
    timeout 100 "$B" fluid convergence dfg-2d-1 --backend cuda --boundary "$w" --scaling acoustic \
      --offsets 1 --csv "$O/convergence-2d-1-acoustic-$w.csv" || status=1
  fi
  if want 3d; then
    section "fluid convergence dfg-3d-1z --boundary $w --cells-per-d ${D3:-10,20,30} --offsets 1 (diffusive)"
    timeout 330 "$B" fluid convergence dfg-3d-1z --backend cuda --boundary "$w" \
      --cells-per-d "${D3:-10,20,30}" --offsets 1 --csv "$O/convergence-3d-1z-$w.csv" || status=1
  fi
done
if [[ " $WANT " == *" retraction "* ]]; then
  for r in ${RETRACTIONS:-0.3 0.35 0.4}; do
    section "fluid convergence dfg-3d-1z --cells-per-d 10,20 --offsets 1 --retraction $r"
    timeout 200 "$B" fluid convergence dfg-3d-1z --backend cuda --cells-per-d 10,20 --offsets 1 \
      --retraction "$r" --csv "$O/convergence-3d-1z-retraction-$r.csv" || status=1
  done
fi
section "done (status $status)"
exit $status
