#!/usr/bin/env bash
# The flock on two GPUs (issue 15), on the nvidia-h200-x2 machine, from the repository root with
# the bundle of `cargo xtask gpu-bundle` (dist/gpu/murmur). In order: parity of 2 GPUs against 1
# (with the control: 1 GPU against itself), the gathered save, the launcher-variable form
# (RANK/WORLD_SIZE, file and TCP rendezvous), a killed rank, strong and weak scaling at constant
# density (and the slab path on one GPU), a flock of 4e9 boids (more than one H200 holds),
# compute-sanitizer last. Every long command runs under `timeout`; logs (and each hand-started
# rank's own log) go to $OUT as it goes. About 5 minutes of device time.
#   bash scripts/gpu-ranks-flock.sh
set -u
M=${MURMUR:-dist/gpu/murmur}
O=${OUT:-gpu-logs}
mkdir -p "$O"
T=/tmp/murmur-ranks-flock
rm -rf "$T"; mkdir -p "$T/lib"
[ -z "${MURMUR_LOGGED:-}" ] && exec > >(tee -a "$O/ranks-flock.txt") 2>&1
# Never a bare `wait` below: it would also wait for the `tee` above, which never ends. Wait for
# the processes started here by their ids.
export NCCL_NVLS_ENABLE=0
section() { echo; echo "=== $* ($(date +%T)) ==="; }
section device
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader
nvidia-smi topo -m 2>/dev/null | head -4

# NCCL: the system library, else PyTorch's wheel (libnccl.so.2 only: a libnccl.so link to it
# goes first on the library path of the processes started by hand; `--gpus N` does this itself).
NCCL_DIR=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) + "/lib")' 2>/dev/null \
  || python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "nccl", "lib"))' 2>/dev/null \
  || python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)
for f in "$NCCL_DIR/libnccl.so.2" $(ldconfig -p 2>/dev/null | awk '/libnccl.so.2/ {print $NF}' | head -1); do
  if [ -f "$f" ]; then ln -sf "$f" "$T/lib/libnccl.so"; echo "NCCL: $f"; break; fi
done
export LD_LIBRARY_PATH="$T/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

section "parity: 2 GPUs against 1 after 10 steps, by id; the check with each cell in id order (tolerance 1e-4), the control: 1 GPU against itself"
for n in 100000 1000000 5000000; do
  timeout 60 "$M" flock check-ranks --gpus 2 --n $n --steps 10; echo "rc $?"
done
echo "CPU ranks (the same slab code, memory copies):"
timeout 60 "$M" flock check-ranks --ranks 4 --n 100000 --steps 10; echo "rc $?"

section "save: gathered on rank 0, ordered by id"
timeout 60 "$M" flock run --gpus 2 --n 1000000 --steps 20 --quiet --save "$O/split-1M.npz"; echo "rc $?"
python3 -c "import numpy as np; d = np.load('$O/split-1M.npz'); print('ids in order:', bool((d['id'] == np.arange(len(d['id']))).all()), d['pos'].shape)" 2>&1

section "launcher variables (RANK / WORLD_SIZE / LOCAL_RANK), file and TCP rendezvous (logs: $O/env-*.txt)"
for rdv in "file:$T/rdv" "tcp:127.0.0.1:29517"; do
  kind=${rdv%%:*}
  echo "-- $rdv"
  for r in 0 1; do
    RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r timeout 60 "$M" flock run --n 10000000 --scale 215.44 --steps 50 --quiet \
      --rendezvous "$rdv" --rank-timeout 30 > "$O/env-$kind-$r.txt" 2>&1 &
    eval "E$r=$!"
  done
  wait "$E0"; rc0=$?; wait "$E1"; rc1=$?
  echo "rank 0 exit $rc0, rank 1 exit $rc1"
  cat "$O/env-$kind-0.txt" "$O/env-$kind-1.txt"
done

section "faults: a missing rendezvous, a rank killed mid-run (the other must stop within seconds)"
RANK=0 WORLD_SIZE=2 timeout 20 "$M" flock run --n 1000 --steps 1; echo "rc $?"
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r timeout 60 "$M" flock run --n 10000000 --scale 215.44 --steps 1000000 --quiet \
    --rendezvous tcp:127.0.0.1:29518 --rank-timeout 20 > "$O/kill-$r.txt" 2>&1 &
  eval "P$r=$!"
done
sleep 12; pkill -9 -P "$P1"; kill -9 "$P1"; t0=$(date +%s)
wait "$P0"; echo "rank 0 exit $? after $(( $(date +%s) - t0 )) s: $(tail -1 "$O/kill-0.txt")"
wait "$P1" 2>/dev/null

section "strong and weak scaling: 100M and 200M on 2 GPUs, 100M on 1 (constant density)"
timeout 150 "$M" flock scale --gpus 2 --sizes 100000000,200000000 --single 100000000 --warmup 3 --steps 20; echo "rc $?"
echo "the slab path on one GPU (one rank, no neighbours) against the single-GPU path:"
timeout 150 "$M" flock scale --gpus 1 --sizes 100000000 --single 100000000 --warmup 3 --steps 20; echo "rc $?"

section "4e9 boids on 2 GPUs (constant density: scale 1587.4), 3 steps"
timeout 150 "$M" flock run --gpus 2 --n 4000000000 --scale 1587.4 --steps 3 --quiet; echo "rc $?"

if command -v compute-sanitizer >/dev/null; then
  section "compute-sanitizer memcheck, 2 GPUs, 20k boids, 3 steps (last: dropped when time is short)"
  timeout 90 compute-sanitizer --target-processes all --tool memcheck --error-exitcode 9 \
    "$M" flock check-ranks --gpus 2 --n 20000 --steps 3 2>&1 | grep -E "ERROR SUMMARY|pass|FAIL|error" | head -8
fi
section done
