#!/usr/bin/env bash
# The fluid viewer's GPU round (issue 17), from the repository root with the bundle of
# `cargo xtask gpu-bundle` (binary dist/gpu/murmur, GPU tests dist/gpu/tests):
#   bash scripts/gpu-view.sh [all|tests|parity|time|figures|compare]...
# - tests:   the GPU test of the viewer (fluid_view::gpu_frames_equal_cpu_frames: the smoke and
#            every kind of frame of CUDA and CPU byte-identical) and the flock's frame test;
# - parity:  `murmur fluid render` of the same scene and steps on cuda and on cpu, slice,
#            volume and smoke frames compared with cmp;
# - time:    frame time at 256^3 (assets/fluid/smoke-256.toml) at 1280x720: a speed slice, a
#            vorticity slice, the Q volume and the smoke, one step per frame (render+copy per
#            frame beside the simulation; then the same after the first frame, split into the
#            backend's share and the host's, and the render stages' GPU times from CUDA
#            events), a summary of the four, and the smoke's advection against a step;
# - figures: the docs' pictures and GIFs: the rotating torus with smoke, the sphere wake at
#            Re 10,000 (vorticity slice and smoke);
# - compare: the three collision models side by side on the sphere at Re 10,000 (BGK and RM-MRT
#            give up there, ACM-MRT does not), frames and a GIF.
# Everything lands in $OUT/view (or ./gpu-logs/view); about 4 minutes of H200 time.
set -u -o pipefail
M=${MURMUR:-dist/gpu/murmur}
LOG=${OUT:-gpu-logs}
V="$LOG/view"
mkdir -p "$V"
status=0
section() { echo; echo "=== $* ($(date +%T)) ==="; }
want() { [[ " $WANT " == *" all "* ]] || [[ " $WANT " == *" $1 "* ]]; }
WANT=" ${*:-all} "
run() { echo "\$ murmur $*"; "$M" "$@" || { echo "FAILED: murmur $*"; status=1; }; }

section device
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

if want tests; then
  section "GPU tests: CUDA and CPU fluid frames byte-identical"
  for t in fluid_view view_render; do
    echo "== $t"
    [ -x dist/gpu/tests/$t ] || { echo "(not in this bundle)"; status=1; continue; }
    (cd dist/gpu/tests && ./$t --ignored --test-threads=1 2>&1 | grep -vE "^$|^running" | tail -8) \
      || status=1
  done
fi

if want parity; then
  section "render parity: the same scene and steps drawn by cuda and cpu"
  for view in "--view slice --quantity speed" "--view slice --quantity vorticity --axis y" \
              "--view volume --quantity q" "--view smoke"; do
    tag=$(echo "$view" | tr -d ' -' )
    for b in cuda cpu; do
      run fluid render assets/fluid/smoke-sphere.toml --backend $b --frames 2 --every 160 \
          --width 640 --height 360 $view --quiet --out "$V/parity-$tag-$b" > /dev/null
    done
    if cmp -s "$V/parity-$tag-cuda/frame_00001.png" "$V/parity-$tag-cpu/frame_00001.png"; then
      echo "render parity ($view): cuda and cpu frames are byte-identical"
    else
      echo "render parity ($view): FAIL: the cuda and cpu frames differ"; status=1
    fi
  done
fi

if want time; then
  section "frame time at 256^3, 1280x720, one step per frame (1,200 steps skipped first)"
  for view in "--view slice --quantity speed" "--view slice --quantity vorticity" \
              "--view volume --quantity q" "--view smoke"; do
    tag=$(echo "$view" | sed 's/--view //; s/ --quantity /-/')
    run fluid render assets/fluid/smoke-256.toml --backend cuda --skip 1200 --frames 41 \
        --every 1 --width 1280 --height 720 $view --quiet --out "$V/time-256" \
        > "$V/time-$tag.txt"
    cat "$V/time-$tag.txt"
  done
  section "frame time summary: render+copy per frame beside the simulation (target: 2 ms)"
  for tag in slice-speed slice-vorticity volume-q smoke; do
    echo "== $tag"
    grep -hoE "render\+copy [0-9.]+ ms|render\+copy after the first frame.*|render stages.*" \
      "$V/time-$tag.txt"
  done
  section "the smoke's advection against a step at 256^3 (8 steps per frame: one advection each)"
  run fluid render assets/fluid/smoke-256.toml --backend cuda --skip 1200 --frames 41 --every 8 \
      --width 1280 --height 720 --view smoke --quiet --out "$V/time-256"
  run fluid bench --backend cuda --sizes 256 --models acm-mrt --steps 200
  cp "$V/time-256/frame_00040.png" "$V/smoke-256-h200.png" 2>/dev/null
  rm -rf "$V/time-256"
fi

if want figures; then
  section "figure: the rotating torus with smoke (12,000 steps, 60 frames, GIF)"
  run fluid render assets/fluid/rotating-torus.toml --backend cuda --frames 61 --every 200 \
      --width 960 --height 540 --view smoke --spin 0.5 --quiet --out "$V/torus" \
      --gif "$V/rotating-torus-smoke.gif"
  cp "$V/torus/frame_00060.png" "$V/rotating-torus-smoke.png" 2>/dev/null
  section "figure: the rotating torus, Q-criterion volume at step 12,000"
  run fluid render assets/fluid/rotating-torus.toml --backend cuda --skip 12000 --frames 1 \
      --width 1280 --height 720 --view volume --quantity q --quiet --out "$V/torus-q"
  cp "$V/torus-q/frame_00000.png" "$V/rotating-torus-q.png" 2>/dev/null
  section "figure: the sphere wake at Re 10,000 (20,000 steps): vorticity slice, smoke, GIF"
  run fluid render assets/fluid/sphere-re10000.toml --backend cuda --frames 51 --every 400 \
      --width 1280 --height 540 --view slice --quantity vorticity --quiet --out "$V/sphere" \
      --gif "$V/sphere-re10000-vorticity.gif"
  cp "$V/sphere/frame_00050.png" "$V/sphere-re10000-vorticity.png" 2>/dev/null
  run fluid render assets/fluid/sphere-re10000.toml --backend cuda --skip 20000 --frames 1 \
      --width 1280 --height 540 --view smoke --quiet --out "$V/sphere-smoke"
  cp "$V/sphere-smoke/frame_00000.png" "$V/sphere-re10000-smoke.png" 2>/dev/null
  rm -rf "$V/torus" "$V/torus-q" "$V/sphere" "$V/sphere-smoke"
fi

if want compare; then
  section "the three models side by side: sphere at Re 10,000, 12,000 steps"
  run fluid render assets/fluid/sphere-re10000.toml --backend cuda --compare --frames 49 \
      --every 250 --width 1920 --height 400 --view slice --quantity vorticity --quiet \
      --out "$V/compare" --gif "$V/compare-re10000.gif"
  for k in 00008 00024 00048; do cp "$V/compare/frame_$k.png" "$V/compare-re10000-$k.png"; done
  rm -rf "$V/compare"
fi

echo "gpu-view exit status: $status"
exit $status
