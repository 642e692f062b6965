#!/usr/bin/env bash
# The library round on one GPU machine, from the repository root, in one call: the GPU tests the
# library touches, the Python package's tests on CUDA (zero-copy arrays read by PyTorch and
# CuPy), and the cylinder example script on CUDA for the docs' pictures.
# Needs dist/new/murmur.xz (PTX embedded), dist/gpu/tests/*.xz (`cargo xtask gpu-test`) and the
# abi3 wheel in dist/python/ (`bash scripts/python-wheel.sh`).
# GPU_TESTS="api gpu_parity" limits the cargo GPU tests to those named.
set -u -o pipefail
O=${OUT:-gpu-logs}
mkdir -p "$O"
exec > >(tee -a "$O/log-library.txt") 2>&1
T=/tmp/murmur-library
mkdir -p "$T"
B=$T/murmur
xz -dc dist/new/murmur.xz > "$B" && chmod +x "$B"
status=0
section() { echo; echo "=== $* ($(date +%T)) ==="; }
# The test binaries run the binary and read assets where they were built (/work/main).
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
mkdir -p target/release && cp "$B" target/release/murmur
section device
nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader
section "GPU tests"
for t in dist/gpu/tests/*.xz; do n=$T/$(basename "$t" .xz); xz -dc "$t" > "$n"; chmod +x "$n"; done
for t in ${GPU_TESTS:-$(ls dist/gpu/tests/ | sed 's/\.xz$//')}; do
  echo "== $t"
  timeout 300 "$T/$t" --ignored --test-threads=1 2>&1 | grep -E "^(test |test result)|panicked|FAILED" || status=1
done
section "Python package: its tests, the device ones on CUDA (scripts/gpu-python.sh)"
MURMUR_BIN=$B timeout 300 bash scripts/gpu-python.sh 2>&1 | tail -n 30 || status=1
export PYTHONPATH=${TMPDIR:-/tmp}/murmur-site
section "the Rust examples on CUDA (dist/new/examples/*.xz)"
for e in dist/new/examples/*.xz; do
  n=$T/$(basename "$e" .xz); xz -dc "$e" > "$n"; chmod +x "$n"
done
(cd "$T" && ./flock_save --backend cuda --n 1000000 --steps 200 --out "$T/flock.npz" 2>&1 | tail -n 4) || status=1
(cd "$T" && ./fluid_in_code --backend cuda 2>&1 | tail -n 6) || status=1
(cd "$T" && ./rule_sweep --backend cuda 2>&1 | tail -n 8) || status=1
(cd "$T" && ./render_frames --backend cuda --out "$T/frames" 2>&1 | tail -n 3) || status=1
section "cylinder example on CUDA"
timeout 240 python3 python/examples/cylinder_drag.py --backend cuda --out "$O/cylinder" 2>&1 | tail -n 8 || status=1
echo; echo "status $status"
exit $status
