#!/usr/bin/env bash
# The sweep behind the device-class defaults of `fluid run` (host/src/fluid/defaults.rs), on one
# GPU machine, from the repository root, in one call: every layout of the periodic bench at 256^3
# (BGK and ACM-MRT, FP32 and FP16S), then `fluid tune` on scenes with walls, inlets and solids.
# Needs dist/new/murmur.xz (PTX embedded). Logs go to $OUT as well.
set -u -o pipefail
O=${OUT:-gpu-logs}
mkdir -p "$O"
exec > >(tee -a "$O/log-defaults.txt") 2>&1
B=/tmp/murmur-defaults
xz -dc dist/new/murmur.xz > "$B" && chmod +x "$B"
section() { echo; echo "=== $* ($(date +%T)) ==="; }
section device
nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader
section "fluid bench: layouts, 256^3, pull, flat"
timeout 240 "$B" fluid bench --backend cuda --sizes 256 --steps 200 --models bgk,acm-mrt \
  --storage fp32,fp16s --layout soa,32,64,128,256 2>&1 | grep -E "^\|"
for s in obstacle sphere-re10000 cavity-re1000 wind-tunnel torus-channel; do
  section "fluid tune $s"
  timeout 120 "$B" fluid tune "assets/fluid/$s.toml" --backend cuda --time-cap 30 --no-cache --quiet 2>&1 | tail -n 70
done
