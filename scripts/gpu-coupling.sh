#!/usr/bin/env bash
# The coupled flock and the gusting inlet on one GPU machine, from the repository root:
#   bash scripts/gpu-coupling.sh [checks] [rides] [bench] [gust] [twoway] [tower] [mesh] [torus]
#                                [flocks2] [ranks]
# - checks: the GPU tests of dist/gpu/tests (TESTS="...": which; default the coupled flock's
#   CUDA parity and the immersed boundary's spreading, graph and parity tests);
# - rides: `fluid run assets/fluid/flock-sphere.toml` on the CPU and on CUDA, 60 steps: the
#   fluid backends agree bit for bit (the fields' files compared byte for byte), the flocks
#   (CPU on the CPU fluid, CUDA on the CUDA fluid) within 1e-5 m; then 2,000 steps on CUDA;
# - bench: `fluid coupling-bench`, two-way, 1M boids in 256^3 and 10M in 512^3, and one-way at
#   256^3;
# - twoway: flock-tower.toml with 20,000 boids at a quarter of its resolution, 150 steps on the
#   CPU, on CUDA and on CUDA as a graph: the fields and the boids compared byte for byte;
# - tower: the showcase flock-tower.toml at full size, 600 steps on CUDA, then its GIF
#   ($OUT/flock-tower.gif: 100 frames 60 steps apart after 1,500);
# - mesh: trefoil.toml with its knot turning and a flock of 20,000 around it at half its
#   resolution, 60 steps on the CPU and on CUDA: the fields the same bytes, the boids within 1e-5 m;
# - torus: `fluid flock-case torus` at full resolution, 1M boids for 10,000 steps on CUDA;
# - flocks2: flock-sphere.toml with a second flock, 60 steps on the CPU and on CUDA: both flocks'
#   boids within 1e-5 m (the air shared by two flocks on their own streams);
# - ranks: flock-tower.toml at a quarter of its resolution, 40 steps: `--gpus 1` (the slab path
#   on one GPU through NCCL, the boids on the host) against the CPU lattice, boids compared;
#   `--gpus 1` 20 steps with a checkpoint then resumed to 40, against 40 in one go (the same
#   bytes); `fluid flock-case ranks` with 200,000 boids on 4 CPU ranks at half resolution;
# - gust: the sphere scene with a gusting inlet, CPU against CUDA (plain and as a CUDA graph),
#   the final fields compared byte for byte.
# Needs dist/new/murmur.xz (PTX embedded) and, for checks, dist/gpu/tests/*.xz.
NAME=coupling ARGS="$*"
. scripts/gpu-old-new.sh

# same_boids A.npz B.npz: the same ids, positions within 1e-5 m and velocities within 1e-4 m/s.
same_boids() {
  python3 - "$1" "$2" <<'PY'
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
assert (a["id"] == b["id"]).all()
dp = np.abs(a["pos"] - b["pos"]).max(); dv = np.abs(a["vel"] - b["vel"]).max()
print(f"{sys.argv[1].split('_')[-1]}: max |pos| difference {dp:.3e} m, max |vel| difference {dv:.3e} m/s, identical bytes: {(a['pos'] == b['pos']).all() and (a['vel'] == b['vel']).all()}")
sys.exit(0 if dp < 1e-5 and dv < 1e-4 else 1)
PY
}

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
  section "the boids of both rides (CPU flock on the CPU fluid, CUDA flock on the CUDA fluid)"
  cmp "$T/ride-cpu/flock-sphere_0000060.npz" "$T/ride-cuda/flock-sphere_0000060.npz" && echo "fields: the same bytes" || { echo "fields: DIFFERENT"; status=1; }
  same_boids "$T/ride-cpu/flock-sphere_0000060_boids.npz" "$T/ride-cuda/flock-sphere_0000060_boids.npz" || status=1
  section "fluid run flock-sphere.toml --backend cuda --steps 2000"
  timeout 400 "$B" fluid run assets/fluid/flock-sphere.toml --backend cuda --steps 2000 --out "$T/ride-long" --quiet 2>&1 | grep -v "^  " || status=1
fi

if want bench; then
  for args in "--size 256 --boids 1000000" "--size 512 --boids 10000000" "--size 256 --boids 1000000 --coupling one-way"; do
    section "fluid coupling-bench $args"
    timeout 300 "$B" fluid coupling-bench $args --steps 100 2>&1 || status=1
  done
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
if want twoway; then
  sed 's/^count = 200000/count = 20000/' assets/fluid/flock-tower.toml > "$T/tower-20k.toml"
  grep -q "^count = 20000$" "$T/tower-20k.toml" || { echo "tower-20k.toml: no count line"; status=1; }
  for run in "cpu" "cuda" "cuda --graph"; do
    tag=${run// /}
    section "fluid run tower-20k.toml --backend $run --coarsen 4 --steps 150"
    rm -rf "$T/tw-$tag"
    timeout 300 "$B" fluid run "$T/tower-20k.toml" --backend $run --coarsen 4 --steps 150 --out "$T/tw-$tag" --quiet 2>&1 | grep -v "^  " || status=1
  done
  for tag in cuda cuda--graph; do
    for f in flock-tower_0000150.npz flock-tower_0000150_starlings.npz; do
      if cmp "$T/tw-cpu/$f" "$T/tw-$tag/$f"; then echo "two-way $tag $f: the same bytes as cpu"; else echo "two-way $tag $f: DIFFERENT from cpu"; status=1; fi
    done
  done
fi

if want tower; then
  section "fluid run flock-tower.toml --backend cuda --steps 600"
  timeout 300 "$B" fluid run assets/fluid/flock-tower.toml --backend cuda --steps 600 --out "$T/tower" --quiet 2>&1 | grep -v "^  " || status=1
  section "fluid render flock-tower.toml --gif"
  rm -rf "$T/tower-frames"
  timeout 400 "$B" fluid render assets/fluid/flock-tower.toml --backend cuda --frames 100 --every 60 --skip 1500 \
    --width 800 --height 300 --out "$T/tower-frames" --gif "$O/flock-tower.gif" --quiet 2>&1 | grep -v "^  " || status=1
  cp "$T/tower-frames/frame_00099.png" "$O/flock-tower-last.png" 2>/dev/null || true
  ls -la "$O"/flock-tower* || status=1
fi
if want mesh; then
  sed 's/^reference_area = 0.07 .*/reference_area = 0.07\nmotion = { type = "rotate", axis = [1, 0, 0], rate = 3.0 }/' \
    assets/fluid/trefoil.toml > assets/fluid/knot-flock.toml
  cat >> assets/fluid/knot-flock.toml <<'TOML'

[[flocks]]
count = 20000
spawn = { box = { lo = [0.2, 0.05, 0.05], hi = [0.5, 0.45, 0.45] } }
seed = 3
rates = [2.0, 40.0, 8.0]
radii = [0.02, 0.01, 0.02]
max_speed = 0.3
tau_p = 0.005
avoid = 0.05
avoid_rate = 40.0
substeps = 2
TOML
  grep -q 'rate = 3.0' assets/fluid/knot-flock.toml || { echo "knot-flock.toml: no motion line"; status=1; }
  for b in cpu cuda; do
    section "fluid run knot-flock.toml --backend $b --coarsen 2 --steps 60"
    rm -rf "$T/knot-$b"
    timeout 300 "$B" fluid run assets/fluid/knot-flock.toml --backend $b --coarsen 2 --steps 60 --out "$T/knot-$b" 2>&1 | grep -E "flock|mesh|signed|error|murmur:" | grep -v "^  " || true
  done
  cmp "$T/knot-cpu/trefoil_0000060.npz" "$T/knot-cuda/trefoil_0000060.npz" && echo "fields: the same bytes" || { echo "fields: DIFFERENT"; status=1; }
  same_boids "$T/knot-cpu/trefoil_0000060_boids.npz" "$T/knot-cuda/trefoil_0000060_boids.npz" || status=1
fi

if want flocks2; then
  cp assets/fluid/flock-sphere.toml "$T/two-flocks.toml"
  cat >> "$T/two-flocks.toml" <<'TOML'

[[flocks]]
name = "second"
count = 5000
spawn = { sphere = { center = [0.1, 0.2, 0.2], radius = 0.05 } }
seed = 9
rates = [1.0, 30.0, 4.0]
radii = [0.01, 0.005, 0.01]
max_speed = 0.2
tau_p = 0.02
substeps = 3
TOML
  for b in cpu cuda; do
    section "fluid run two-flocks.toml --backend $b --steps 60"
    rm -rf "$T/two-$b"
    timeout 300 "$B" fluid run "$T/two-flocks.toml" --backend $b --steps 60 --out "$T/two-$b" 2>&1 | grep -E "^flock|error|murmur:" || true
  done
  for f in boids second; do
    same_boids "$T/two-cpu/flock-sphere_0000060_$f.npz" "$T/two-cuda/flock-sphere_0000060_$f.npz" || status=1
  done
fi

if want torus; then
  section "fluid flock-case torus --coarsen 1 --boids 1000000 --steps 10000 --backend cuda"
  timeout 580 "$B" fluid flock-case torus --coarsen 1 --boids 1000000 --steps 10000 --backend cuda 2>&1 | tr '\r' '\n' | grep -v "step [0-9]*/" || status=1
fi
section "done (status $status)"
if want ranks; then
  . scripts/gpu-nccl.sh
  tower=(fluid run assets/fluid/flock-tower.toml --coarsen 4 --quiet)
  section "flock-tower --coarsen 4 --steps 40: the CPU lattice, then --gpus 1"
  rm -rf "$T"/rk-*
  timeout 300 "$B" "${tower[@]}" --backend cpu --steps 40 --out "$T/rk-cpu" 2>&1 | grep -E "^flocks|^scene" || status=1
  timeout 300 "$B" "${tower[@]}" --gpus 1 --steps 40 --out "$T/rk-g1" 2>&1 | grep -E "^flocks|^scene|error" || status=1
  same_boids "$T/rk-cpu/flock-tower_0000040_starlings.npz" "$T/rk-g1/flock-tower_0000040_starlings.npz" || status=1
  section "--gpus 1: 20 steps with a checkpoint, resumed to 40"
  timeout 300 "$B" "${tower[@]}" --gpus 1 --steps 20 --checkpoint-every 20 --checkpoint-dir "$T/rk-ck" --out "$T/rk-a" 2>&1 | grep -E "error" && status=1
  timeout 300 "$B" "${tower[@]}" --gpus 1 --steps 40 --resume "$T/rk-ck" --out "$T/rk-b" 2>&1 | grep -E "^resumed|error"
  cmp "$T/rk-g1/flock-tower_0000040_starlings.npz" "$T/rk-b/flock-tower_0000040_starlings.npz" && echo "boids after the resume: the same bytes" || { echo "boids after the resume: DIFFERENT"; status=1; }
  section "fluid flock-case ranks --ranks 4 --boids 200000 --steps 50 --coarsen 2 (CPU ranks)"
  timeout 400 "$B" fluid flock-case ranks --ranks 4 --boids 200000 --steps 50 --coarsen 2 2>&1 | tail -n 3 || status=1
fi

exit $status
