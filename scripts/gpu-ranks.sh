#!/usr/bin/env bash
# The multi-GPU round on a machine of several GPUs (nvidia-h200-x2, -x4, -x8), one call, from the
# repository root with the release bundle in dist/gpu:
#   bash scripts/gpu-ranks.sh [all|smoke|check|ib|scale|scale-ce|one|run|faults|figures|flock]...
# - smoke: NCCL found, the GPUs and their links, a 64^3 ranks-check;
# - check: `fluid ranks-check` (one GPU vs N, bit for bit) on a periodic box per model and
#   storage, and on the obstacle scene (walls, inlet, outlet, slabs along x);
# - ib: immersed solids: `fluid ranks-check` of the rotating torus (slabs along x) and of its
#   flow-along-z variant (bit for bit, forces too), and `fluid scale --scene` of the latter;
# - scale: `fluid scale`: strong 512^3 and weak 512^3 per GPU, BGK FP32, and the exchange alone;
#   on 4 or more GPUs also the strong 1024x512x512 lattice;
# - scale-ce: the same with NCCL's copy-engine peer copies (NCCL_P2P_USE_CUDA_MEMCPY=1);
# - one: the slab paths on one GPU (--gpus 1: one rank, the fluid's faces exchanged with itself)
#   against the plain paths: what the split costs without a second GPU;
# - run: `fluid run --gpus N` of a scene with output: one file gathered by rank 0 (compared
#   byte for byte with one GPU's), and pieces with a .pvti;
# - faults: a rank killed mid-run (the launcher stops the others), ranks under a TCP rendezvous
#   with one killed (the watchdog names it; fluid and flock), a missing rendezvous, too many
#   ranks;
# - figures: the viewer's pictures on one GPU;
# - flock: scripts/gpu-ranks-flock.sh when present.
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0). Logs go to $OUT.
set -u -o pipefail
export NCCL_NVLS_ENABLE=0
M=${MURMUR:-dist/gpu/murmur}
LOG=${OUT:-gpu-logs}
mkdir -p "$LOG"
status=0
section() { echo; echo "=== $* ($(date +%T)) ==="; }
want() { [[ " $WANT " == *" all "* ]] || [[ " $WANT " == *" $1 "* ]]; }
WANT=" ${*:-all} "
N=$(nvidia-smi -L | wc -l)

# NCCL from the Python wheels when the system has none on the library path.
if ! ldconfig -p 2>/dev/null | grep -q libnccl.so; then
  for d in $(python3 - <<'PY' 2>/dev/null
import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
for r in roots:
    for p in glob.glob(os.path.join(r, "nvidia", "*", "lib", "libnccl.so*")) + glob.glob(os.path.join(r, "torch", "lib", "libnccl.so*")):
        print(os.path.dirname(p))
PY
  ); do export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; break; done
fi

if want smoke; then
  section "device: $N GPUs"
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader
  nvidia-smi topo -m 2>&1 | head -8
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  ls ${LD_LIBRARY_PATH%%:*}/libnccl* 2>/dev/null
  section "ranks-check 64^3 on $N GPUs"
  timeout 120 "$M" fluid ranks-check --gpus "$N" --size 64 --steps 50 2>&1 | tee "$LOG/smoke.txt" || status=1
fi

if want check; then
  section "ranks-check: one GPU vs $N, bit for bit"
  for ms in "bgk fp32" "rm-mrt fp32" "acm-mrt fp32" "acm-mrt fp16s" "bgk fp16c"; do
    set -- $ms
    timeout 200 "$M" fluid ranks-check --gpus "$N" --size 128 --steps 100 --model "$1" --storage "$2" 2>&1 | tee -a "$LOG/ranks-check.txt" | tail -2 || status=1
  done
  timeout 200 "$M" fluid ranks-check assets/fluid/wind-tunnel.toml --gpus "$N" --steps 200 --model acm-mrt 2>&1 | tee -a "$LOG/ranks-check.txt" | tail -2 || status=1
fi

if want ib; then
  section "immersed solids on $N GPUs: ranks-check (one GPU vs N) and the scene's strong scaling"
  timeout 300 "$M" fluid ranks-check assets/fluid/rotating-torus.toml --gpus "$N" --steps 100 --model acm-mrt 2>&1 | tee -a "$LOG/ranks-ib.txt" | tail -3 || status=1
  timeout 300 "$M" fluid ranks-check assets/fluid/rotating-torus-z.toml --gpus "$N" --steps 100 --model acm-mrt 2>&1 | tee -a "$LOG/ranks-ib.txt" | tail -3 || status=1
  # The torus mid-channel (across the cut), and moved upstream into the first slab.
  sed 's/position = \[0.4, 0.4, 0.8\]/position = [0.4, 0.4, 0.5]/' assets/fluid/rotating-torus-z.toml > "$LOG/torus-upstream.toml"
  for scene in assets/fluid/rotating-torus-z.toml "$LOG/torus-upstream.toml"; do
    for model in acm-mrt bgk; do
      timeout 300 "$M" fluid scale --gpus "$N" --scene "$scene" --model $model --steps 100 2>&1 | tee -a "$LOG/scale-ib.txt" || status=1
    done
  done
fi

if want scale; then
  section "fluid scale: 512^3 strong and weak, BGK FP32"
  timeout 400 "$M" fluid scale --gpus "$N" --size 512 --steps 100 2>&1 | tee "$LOG/scale.md" || status=1
  if [ "$N" -ge 4 ]; then
    section "fluid scale: 1024x512x512 strong"
    timeout 400 "$M" fluid scale --gpus "$N" --size 512 --dims 1024x512x512 --steps 100 2>&1 | tee "$LOG/scale-1024.md" || status=1
  fi
fi

if want scale-ce; then
  section "fluid scale with NCCL's copy-engine peer copies (NCCL_P2P_USE_CUDA_MEMCPY=1)"
  NCCL_P2P_USE_CUDA_MEMCPY=1 timeout 300 "$M" fluid scale --gpus "$N" --size 512 --steps 100 2>&1 | tee "$LOG/scale-ce.md" || status=1
fi

if want one; then
  section "the slab paths on one GPU (--gpus 1) against the plain paths"
  # --gpus 1 starts no launcher: NCCL must be loadable as libnccl.so by this process.
  d=${LD_LIBRARY_PATH:-}; d=${d%%:*}
  if [ -n "$d" ] && [ -e "$d/libnccl.so.2" ] && [ ! -e "$d/libnccl.so" ]; then
    mkdir -p /tmp/murmur-nccl && ln -sf "$d/libnccl.so.2" /tmp/murmur-nccl/libnccl.so
    export LD_LIBRARY_PATH="/tmp/murmur-nccl:$LD_LIBRARY_PATH"
  fi
  timeout 200 "$M" fluid ranks-check --gpus 1 --size 128 --steps 100 2>&1 | tail -1 | tee "$LOG/one.md" || status=1
  timeout 300 "$M" fluid scale --gpus 1 --size 512 --steps 100 2>&1 | tee -a "$LOG/one.md" || status=1
  timeout 300 "$M" fluid scale --gpus 1 --scene assets/fluid/rotating-torus-z.toml --steps 100 2>&1 | tee -a "$LOG/one.md" || status=1
  timeout 300 "$M" flock scale --gpus 1 --sizes 100000000 --single 100000000 --steps 10 2>&1 | tee -a "$LOG/one.md" || status=1
fi

if want run; then
  section "fluid run --gpus $N: one file (gathered by rank 0) against one GPU, and pieces + .pvti"
  rm -rf "$LOG/run-out"; mkdir -p "$LOG/run-out"
  timeout 200 "$M" fluid run assets/fluid/taylor-green.toml --gpus "$N" --steps 400 --out "$LOG/run-out/ranks.vti" --quiet 2>&1 | tail -3 || status=1
  timeout 200 "$M" fluid run assets/fluid/taylor-green.toml --steps 400 --out "$LOG/run-out/one.vti" --quiet --no-tuning 2>&1 | tail -1
  cmp "$LOG/run-out/ranks.vti" "$LOG/run-out/one.vti" && echo "the .vti of $N GPUs and of one GPU are byte-identical"
  timeout 200 "$M" fluid run assets/fluid/taylor-green.toml --gpus "$N" --steps 400 --out "$LOG/run-out/pieces" --quiet 2>&1 | tail -4 || status=1
  ls -la "$LOG/run-out/pieces" | head -12
  cat "$LOG/run-out/pieces/"*0000400.pvti
  rm -f "$LOG/run-out/"*.vti; rm -f "$LOG/run-out/pieces/"*00000[0-3]*
fi

if want faults; then
  section "faults"
  echo "-- a rank killed mid-run (launcher)"
  "$M" fluid run assets/fluid/taylor-green.toml --gpus "$N" --steps 1000000 --quiet > "$LOG/kill.txt" 2>&1 &
  launcher=$!
  sleep 15
  victim=$(pgrep -P "$launcher" | tail -1)
  t0=$(date +%s%N); kill -9 "$victim"; wait "$launcher"; rc=$?
  echo "launcher exit $rc, $(( ($(date +%s%N) - t0) / 1000000 )) ms after killing rank pid $victim"; cat "$LOG/kill.txt"
  echo "-- TCP rendezvous, rank 1 killed (the watchdog of rank 0 names it)"
  RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 "$M" fluid run assets/fluid/taylor-green.toml --steps 1000000 --quiet --rendezvous tcp:127.0.0.1:29533 > "$LOG/tcp0.txt" 2>&1 &
  p0=$!
  RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 "$M" fluid run assets/fluid/taylor-green.toml --steps 1000000 --quiet --rendezvous tcp:127.0.0.1:29533 > "$LOG/tcp1.txt" 2>&1 &
  p1=$!
  sleep 15
  t0=$(date +%s%N); kill -9 "$p1"; wait "$p0"; rc=$?
  echo "rank 0 exit $rc, $(( ($(date +%s%N) - t0) / 1000000 )) ms after killing rank 1"; cat "$LOG/tcp0.txt"
  echo "-- the flock under a TCP rendezvous, rank 1 killed"
  RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 "$M" flock run --n 10000000 --scale 215.44 --steps 1000000 --quiet --rendezvous tcp:127.0.0.1:29534 > "$LOG/ftcp0.txt" 2>&1 &
  p0=$!
  RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 "$M" flock run --n 10000000 --scale 215.44 --steps 1000000 --quiet --rendezvous tcp:127.0.0.1:29534 > "$LOG/ftcp1.txt" 2>&1 &
  p1=$!
  sleep 15
  t0=$(date +%s%N); kill -9 "$p1"; wait "$p0"; rc=$?
  echo "flock rank 0 exit $rc, $(( ($(date +%s%N) - t0) / 1000000 )) ms after killing rank 1"; tail -2 "$LOG/ftcp0.txt"
  echo "-- missing rendezvous"
  RANK=0 WORLD_SIZE=2 "$M" fluid run assets/fluid/taylor-green.toml --steps 10 2>&1 | tail -1
  echo "-- rank 1 never starts (file rendezvous, 10 s timeout)"
  RANK=0 WORLD_SIZE=2 timeout 60 "$M" fluid run assets/fluid/taylor-green.toml --steps 10 --rendezvous file:/tmp/rdv-lonely --rank-timeout 10 2>&1 | tail -1
  echo "-- too many ranks for the lattice"
  "$M" fluid ranks-check --ranks 99 --size 32 2>&1 | tail -1
fi

if want figures; then
  section "viewer figures on one GPU (the docs' pictures)"
  F="$LOG/fig"; mkdir -p "$F"
  timeout 60 "$M" fluid render assets/fluid/sphere-re10000.toml --backend cuda --frames 51 --every 400 \
    --width 1280 --height 540 --view slice --quantity vorticity --quiet --out "$F/s" --gif "$F/sphere-re10000-vorticity.gif" 2>&1 | tail -1
  cp "$F/s/frame_00050.png" "$F/sphere-re10000-vorticity.png"; rm -rf "$F/s"
  timeout 60 "$M" fluid render assets/fluid/sphere-re10000.toml --backend cuda --skip 20000 --frames 1 \
    --width 1280 --height 540 --view smoke --quiet --out "$F/s" 2>&1 | tail -1
  cp "$F/s/frame_00000.png" "$F/sphere-re10000-smoke.png"; rm -rf "$F/s"
  timeout 90 "$M" fluid render assets/fluid/rotating-torus.toml --backend cuda --frames 61 --every 200 \
    --width 960 --height 540 --view smoke --spin 0.5 --quiet --out "$F/s" 2>&1 | tail -1
  cp "$F/s/frame_00060.png" "$F/rotating-torus-smoke.png"; rm -rf "$F/s"
fi

if want flock && [ -f scripts/gpu-ranks-flock.sh ]; then
  section "flock on $N GPUs"
  MURMUR_LOGGED=1 timeout 300 bash scripts/gpu-ranks-flock.sh > "$LOG/flock.txt" 2>&1 || status=1
  tail -60 "$LOG/flock.txt"
fi

section "done (status $status)"
exit $status
