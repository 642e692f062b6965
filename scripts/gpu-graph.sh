#!/usr/bin/env bash
# The fluid step as one CUDA graph, on one GPU machine, from the repository root, in one call:
# the GPU test that a replayed step stores the bits of the stage-by-stage step, then the periodic
# box at 64^3, 128^3 and 256^3 (BGK and ACM-MRT, FP32 and FP16S, CSoA-128), the shipped scenes
# (ramping inlets included) and the scenes with immersed solids (the Re 10,000 sphere, the torus
# channel), each without and with --graph.
# Needs dist/new/murmur.xz (PTX embedded) and dist/gpu/tests/fluid_graph.xz (`cargo xtask gpu-test`).
set -u -o pipefail
O=${OUT:-gpu-logs}
mkdir -p "$O"
exec > >(tee -a "$O/log-graph.txt") 2>&1
T=/tmp/murmur-graph
mkdir -p "$T"
B=$T/murmur
xz -dc dist/new/murmur.xz > "$B" && chmod +x "$B"
status=0
section() { echo; echo "=== $* ($(date +%T)) ==="; }
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
mkdir -p target/release && cp "$B" target/release/murmur
section device
nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader
if [ -z "${SKIP_TEST:-}" ]; then
section "GPU test: fluid_graph"
xz -dc dist/gpu/tests/fluid_graph.xz > "$T/fluid_graph" && chmod +x "$T/fluid_graph"
timeout 400 "$T/fluid_graph" --ignored --test-threads=1 2>&1 | grep -E "^(test |test result)|panicked|FAILED|assert" || status=1
fi
for g in "" "--graph"; do
  section "fluid bench, periodic box ${g:-(stage by stage)}"
  timeout 240 "$B" fluid bench --backend cuda --sizes 64,128,256 --models bgk,acm-mrt --storage fp32,fp16s --layout 128 --steps 1000 $g 2>/dev/null || status=1
done
for s in taylor-green wind-tunnel cavity-re1000 poiseuille; do
  for g in "" "--graph"; do
    section "fluid run assets/fluid/$s.toml --steps 20000 ${g:-(stage by stage)}"
    timeout 120 "$B" fluid run assets/fluid/$s.toml --backend cuda --steps 20000 --quiet $g 2>&1 | grep -E "steps of|stages" || status=1
  done
done
for s in "sphere-re10000 5000" "torus-channel 300"; do
  set -- $s
  for g in "" "--graph"; do
    section "fluid run assets/fluid/$1.toml --steps $2 ${g:-(stage by stage)}"
    timeout 150 "$B" fluid run assets/fluid/$1.toml --backend cuda --steps $2 --quiet $g 2>&1 | grep -E "steps of|stages" || status=1
  done
done
echo; echo "status $status"
exit $status
