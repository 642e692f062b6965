#!/usr/bin/env bash
# The checkpoint round on one GPU machine, from the repository root, in one call: the GPU tests
# of checkpoints (CUDA and CPU resuming each other's fluid checkpoints bit for bit, a rank's
# slab on the GPU and CPU ranks resuming each other's, the flock on CUDA with the radix sort),
# the checkpoint bench at 512^3 FP16S beside dd on the same disk, a run with checkpoints
# written beside it against one without, and a SIGTERM during a CUDA `fluid run` (one lattice,
# and one rank through the slab code), resumed.
# Needs dist/new/murmur.xz (PTX embedded) and dist/gpu/tests/*.xz (`cargo xtask gpu-test`).
# GPU_TESTS="fluid_checkpoint" limits the cargo GPU tests to those named.
set -u -o pipefail
O=${OUT:-gpu-logs}
mkdir -p "$O"
exec > >(tee -a "$O/log-checkpoint.txt") 2>&1
T=/tmp/murmur-checkpoint
mkdir -p "$T"
B=$T/murmur
xz -dc dist/new/murmur.xz > "$B" && chmod +x "$B"
status=0
section() { echo; echo "=== $* ($(date +%T)) ==="; }
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
mkdir -p target/release && cp "$B" target/release/murmur
section device
nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader
. scripts/gpu-nccl.sh
D=${CKDIR:-$PWD/ckbench}
mkdir -p "$D"
df -h "$D" /tmp | sed 's/^/  /'
section "GPU tests"
for t in dist/gpu/tests/*.xz; do n=$T/$(basename "$t" .xz); xz -dc "$t" > "$n"; chmod +x "$n"; done
for t in ${GPU_TESTS:-fluid_checkpoint fluid_checkpoint_ranks flock_checkpoint fluid_state flock_resume}; do
  echo "== $t"
  timeout 400 "$T/$t" --ignored --test-threads=1 2>&1 | grep -E "^(test |test result)|panicked|FAILED|assert" || status=1
done
section "checkpoint bench, 512^3 FP16S on CUDA, the file on $D"
/usr/bin/time -v "$B" fluid checkpoint-bench --size 512 --storage fp16s --backend cuda --dir "$D" --every 1000 2> "$T/time.txt" || status=1
grep -E "Maximum resident|Elapsed" "$T/time.txt" | sed 's/^\s*/  /'
section "checkpoint bench, 256^3 FP32 on CUDA"
"$B" fluid checkpoint-bench --size 256 --storage fp32 --backend cuda --dir "$D" --every 1000 || status=1
section "dd on the same disk: 9 GiB written with fsync inside the time, read back with O_DIRECT"
dd if=/dev/zero of="$D/dd.bin" bs=64M count=144 conv=fsync 2>&1 | tail -n 1
dd if="$D/dd.bin" of=/dev/null bs=64M iflag=direct 2>&1 | tail -n 1
rm -f "$D/dd.bin"
section "the Re 10,000 sphere on CUDA, 6,000 steps: no checkpoint, then one every 1,000 steps"
"$B" fluid run assets/fluid/sphere-re10000.toml --backend cuda --steps 6000 --quiet 2>&1 | grep -E "steps of|MLUPs" || status=1
"$B" fluid run assets/fluid/sphere-re10000.toml --backend cuda --steps 6000 --quiet --checkpoint-every 1000 --keep 2 --checkpoint-dir "$T/ck-every" 2>&1 | grep -E "steps of|MLUPs|checkpoints:" || status=1
rm -rf "$T/ck-every"
section "SIGTERM during a CUDA fluid run --gpus 1 (one rank through the slab code), then resumed"
C=$T/ck-slab
rm -rf "$C"
"$B" fluid run assets/fluid/sphere-re10000.toml --backend cuda --gpus 1 --steps 1000000 --quiet --checkpoint-dir "$C" > "$T/slab1.txt" 2> "$T/slab1.err" &
pid=$!
sleep 15
kill -TERM $pid
wait $pid; echo "exit $?"
cat "$T/slab1.err"
ls -l "$C"
S=$(ls "$C" | sed -n 's/.*-0*\([0-9][0-9]*\)\.manifest\.toml/\1/p' | tail -n 1)
"$B" fluid run assets/fluid/sphere-re10000.toml --backend cuda --gpus 1 --steps $((S + 200)) --quiet --resume "$C" --checkpoint-every $((S + 200)) 2>&1 | grep -E "resumed|steps of|checkpoints:|C_D" || status=1
rm -rf "$C"
section "SIGTERM during a CUDA fluid run (the Re 10,000 sphere), then resumed"
C=$T/ck
rm -rf "$C" "$T/sphere"
"$B" fluid run assets/fluid/sphere-re10000.toml --backend cuda --steps 1000000 --quiet --checkpoint-dir "$C" --out "$T/sphere" > "$T/run1.txt" 2> "$T/run1.err" &
pid=$!
sleep 25
kill -TERM $pid
wait $pid; echo "exit $?"
cat "$T/run1.err"
ls -l "$C"
S=$(ls "$C" | sed -n 's/.*-0*\([0-9][0-9]*\)\.npz/\1/p' | tail -n 1)
"$B" fluid run assets/fluid/sphere-re10000.toml --backend cuda --steps $((S + 200)) --quiet --resume "$C" --checkpoint-every $((S + 200)) --out "$T/sphere" 2>&1 | grep -E "resumed|steps of|checkpoints:|C_D" || status=1
rm -rf "$C" "$D"
echo; echo "status $status"
exit $status
