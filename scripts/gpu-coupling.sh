#!/usr/bin/env bash
# The coupled flock and the gusting inlet on one GPU machine, from the repository root:
#   bash scripts/gpu-coupling.sh [checks] [rides] [gust]
# - checks: the GPU tests of dist/gpu/tests (TESTS="...": which; default the coupled flock's
#   CUDA parity and the immersed boundary's spreading, graph and parity tests);
# - rides: `fluid run assets/fluid/flock-sphere.toml` on the CPU and on CUDA, 60 steps: the
#   fluid backends agree bit for bit, so the boids' files must be the same bytes; then 2,000
#   steps on CUDA with the figures;
# - gust: the sphere scene with a gusting inlet, CPU against CUDA (plain and as a CUDA graph),
#   the final fields compared byte for byte.
# Needs dist/new/murmur.xz (PTX embedded) and, for checks, dist/gpu/tests/*.xz.
NAME=coupling ARGS="$*"
. scripts/gpu-old-new.sh

if want checks; then
  . scripts/gpu-nccl.sh
  for t in ${TESTS:-coupling_gpu fluid_ib_spread fluid_graph fluid_gpu_parity}; do
    [ -f dist/gpu/tests/$t.xz ] || { echo "no dist/gpu/tests/$t.xz"; continue; }
    section "GPU test: $t"
    xz -dc dist/gpu/tests/$t.xz > "$T/$t" && chmod +x "$T/$t"
    timeout 320 "$T/$t" --ignored --test-threads=1 2>&1 | grep -E "^(test |test result)|panicked|FAILED|assert" || status=1
  done
fi

if want rides; then
  for b in cpu cuda; do
    section "fluid run flock-sphere.toml --backend $b --steps 60"
    rm -rf "$T/ride-$b"
    timeout 300 "$B" fluid run assets/fluid/flock-sphere.toml --backend $b --steps 60 --out "$T/ride-$b" --quiet 2>&1 | grep -v "^  " || status=1
  done
  section "the boids of both rides"
  for f in flock-sphere_0000060_boids.npz flock-sphere_0000060.npz; do
    if cmp "$T/ride-cpu/$f" "$T/ride-cuda/$f"; then echo "$f: the same bytes"; else echo "$f: DIFFERENT"; status=1; fi
  done
  section "fluid run flock-sphere.toml --backend cuda --steps 2000"
  timeout 400 "$B" fluid run assets/fluid/flock-sphere.toml --backend cuda --steps 2000 --out "$T/ride-long" --quiet 2>&1 | grep -v "^  " || status=1
fi

if want gust; then
  sed 's/^x_min = { type = "inlet", ramp = 0.3 }/x_min = { type = "inlet", ramp = 0.02, gust = { intensity = 0.2, time_scale = 0.01, seed = 7 } }/' \
    assets/fluid/smoke-sphere.toml > "$T/gust.toml"
  grep -q "gust =" "$T/gust.toml" || { echo "gust.toml: no inlet line"; status=1; }
  for run in "cpu" "cuda" "cuda --graph"; do
    tag=${run// /}
    section "fluid run gust.toml --backend $run --steps 200"
    timeout 300 "$B" fluid run "$T/gust.toml" --backend $run --steps 200 --out "$T/gust-$tag.npz" --quiet 2>&1 | grep -v "^  " || status=1
  done
  for tag in cuda cuda--graph; do
    if cmp "$T/gust-cpu.npz" "$T/gust-$tag.npz"; then echo "gust $tag: the same bytes as cpu"; else echo "gust $tag: DIFFERENT from cpu"; status=1; fi
  done
fi
section "done (status $status)"
exit $status
