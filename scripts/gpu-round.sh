#!/usr/bin/env bash
# One GPU round within a short device lease: the fluid checks and figures, the headless render,
# then the flock round (scripts/gpu-flock.sh: check, sanitizers, benchmarks, sort against CUB,
# ncu), each under its own time limit, logged to $OUT/log.txt as it goes (so a cut-short round
# still returns what it did).
#   bash scripts/gpu-round.sh        # from the repository root; bundle from `cargo xtask gpu-bundle`
set -u
M=${MURMUR:-dist/gpu/murmur}
O=${OUT:-gpu-logs}
mkdir -p "$O"
T=/tmp/murmur-round
mkdir -p "$T"
exec > >(tee -a "$O/log.txt") 2>&1
section() { echo; echo "=== $* ($(date +%T)) ==="; }
section device
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

section "fluid parity (CPU vs CUDA, 100 steps)"
timeout 90 "$M" fluid parity --steps 100
section "fluid validate --backend cuda"
timeout 150 "$M" fluid validate --backend cuda
section "fluid bench"
timeout 60 "$M" fluid bench --backend cuda --sizes 128,256 --steps 200

section "render (cuda vs cpu parity, 1M frame timings)"
OUT=$T timeout 100 bash scripts/gpu-render.sh
cp "$T/render/render-h200-1m.png" "$O/" 2>/dev/null; cp "$T/render/flock-h200-1m.gif" "$O/" 2>/dev/null

section "flock (scripts/gpu-flock.sh)"
OUT=$O MURMUR_LOGGED=1 bash scripts/gpu-flock.sh
