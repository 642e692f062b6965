#!/usr/bin/env bash
# Headless flock frames on the GPU machine (run by gpu-check.sh's "render" section, or alone):
#   bash scripts/gpu-render.sh            # from the repository root, binary at dist/gpu/murmur
# Writes PNG frames and a GIF under $OUT/render (or ./gpu-logs/render) and prints, per run, the
# time per frame of the simulation (steps, CUDA events) against rasterising + copying the frame
# back (issue 5, deliverable 5). First checks that the GPU and the CPU draw byte-identical frames
# of the same state.
set -u
M=${MURMUR:-dist/gpu/murmur}
LOG=${OUT:-gpu-logs}
R="$LOG/render"
mkdir -p "$R"
status=0

echo "--- render parity: the same snapshot drawn by cuda and cpu (frame 0, no steps)"
"$M" flock run --backend cuda --n 20000 --steps 100 --save "$R/s20k.npz" --quiet | head -1 || status=1
for b in cuda cpu; do
  "$M" flock render --backend $b --init "$R/s20k.npz" --frames 1 --width 640 --height 360 \
       --out "$R/parity-$b" || status=1
done
if cmp -s "$R/parity-cuda/frame_00000.png" "$R/parity-cpu/frame_00000.png"; then
  echo "render parity: cuda and cpu frames are byte-identical"
else
  echo "render parity: FAIL: the cuda and cpu frames differ"; status=1
fi

echo "--- 1M boids, scale 100, 1 step per frame, 1280x720 (what the viewer does per frame)"
"$M" flock render --backend cuda --n 1000000 --frames 60 --every 1 --width 1280 --height 720 \
     --out "$R/1m-every1" || status=1
echo "--- 1M boids, 20 steps per frame, 1280x720 (frame 29 = step 580: the docs figure)"
"$M" flock render --backend cuda --n 1000000 --frames 30 --every 20 --width 1280 --height 720 \
     --out "$R/1m" || status=1
cp "$R/1m/frame_00029.png" "$R/render-h200-1m.png" 2>/dev/null || status=1
echo "--- 5M boids, 1 step per frame, 1280x720"
"$M" flock render --backend cuda --n 5000000 --frames 20 --every 1 --width 1280 --height 720 \
     --out "$R/5m-every1" || status=1
echo "--- 1M boids, turning camera, animated GIF (640x360, 100 frames, 10 steps each)"
"$M" flock render --backend cuda --n 1000000 --frames 100 --every 10 --spin 1.5 --colour speed \
     --width 640 --height 360 --out "$R/1m-gif" --gif "$R/flock-h200-1m.gif" || status=1
# Keep only what is worth copying back: the figures, the GIF and the parity frames.
rm -rf "$R/1m-every1" "$R/5m-every1" "$R/1m-gif" "$R/s20k.npz"
echo "gpu-render exit status: $status"
exit $status
