#!/usr/bin/env bash
# The drag ladders of `fluid convergence` on one GPU machine, from the repository root:
#   bash scripts/gpu-convergence.sh [2d] [3d]
# - 2d: DFG 2D-1 at 10, 20, 30 and 40 cells per diameter, three sub-cell positions each,
#   diffusive scaling (u_lb 0.05 at D 10), then the same with the lattice velocity held
#   (acoustic, one position);
# - 3d: DFG 3D-1Z at 10, 20 and 30 cells per diameter (D3="10,20" for fewer), one position each,
#   diffusive scaling.
# The CSVs go to $OUT. Needs dist/new/murmur.xz (PTX embedded).
NAME=convergence ARGS="$*"
. scripts/gpu-old-new.sh

if want 2d; then
  section "fluid convergence dfg-2d-1 (diffusive, 3 positions)"
  timeout 250 "$B" fluid convergence dfg-2d-1 --backend cuda --csv "$O/convergence-2d-1.csv" || status=1
  section "fluid convergence dfg-2d-1 --scaling acoustic --offsets 1"
  timeout 100 "$B" fluid convergence dfg-2d-1 --backend cuda --scaling acoustic --offsets 1 \
    --csv "$O/convergence-2d-1-acoustic.csv" || status=1
fi
if want 3d; then
  section "fluid convergence dfg-3d-1z --cells-per-d ${D3:-10,20,30} --offsets 1 (diffusive)"
  timeout 330 "$B" fluid convergence dfg-3d-1z --backend cuda --cells-per-d "${D3:-10,20,30}" --offsets 1 \
    --csv "$O/convergence-3d-1z.csv" || status=1
fi
section "done (status $status)"
exit $status
