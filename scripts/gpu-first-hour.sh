#!/usr/bin/env bash
# The first-hour round on one GPU machine, from the repository root, in one call: the GPU tests,
# every shipped scene through `fluid run` (its own steps, the torus channel and the vertical torus
# shortened) and `fluid render` on CUDA with the device defaults, a 256^3 run without a tuning
# cache against SoA, and the slice picture of the rotating torus for the docs.
# Needs dist/new/murmur.xz (PTX embedded) and dist/gpu/tests/*.xz (`cargo xtask gpu-test`).
set -u -o pipefail
O=${OUT:-gpu-logs}
mkdir -p "$O"
exec > >(tee -a "$O/log-first-hour.txt") 2>&1
T=/tmp/murmur-first-hour
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
for t in $(ls dist/gpu/tests/ | sed 's/\.xz$//'); do
  echo "== $t"
  timeout 420 "$T/$t" --ignored --test-threads=1 2>&1 | grep -E "^(test |test result)|panicked|FAILED" || status=1
done
section "every shipped scene: fluid run on CUDA"
for f in assets/fluid/*.toml; do
  s=$(basename "$f" .toml); extra=""
  case $s in torus-channel) extra="--steps 600";; rotating-torus-z) extra="--steps 3000";; esac
  out=""; [ "$s" = rotating-torus ] && out="--out $T/rt"
  echo "== $s $extra"
  timeout 120 "$B" fluid run "$f" --backend cuda --quiet $extra $out 2>&1 | grep -vE "^\s*$" | tail -n 6 || status=1
done
cp "$T/rt/rotating-torus_0012000_slice.png" "$O/" 2>/dev/null || echo "no rotating-torus slice"
section "every shipped scene: fluid render on CUDA (4 frames, every 50 steps)"
for f in assets/fluid/*.toml; do
  s=$(basename "$f" .toml)
  printf "%-20s " "$s"
  timeout 60 "$B" fluid render "$f" --backend cuda --frames 4 --every 50 --out "$T/render-$s" --quiet 2>&1 | tail -n 1 || status=1
done
section "256^3 without a tuning cache: device defaults against SoA"
sed -e 's/^resolution = 64/resolution = 256/' assets/fluid/taylor-green.toml > "$T/tg256.toml"
for l in "" "--layout soa"; do
  timeout 120 "$B" fluid run "$T/tg256.toml" --backend cuda --model bgk --steps 1000 --quiet $l 2>&1 | grep -E "tuning|MLUPs|steps" | head -n 4
done
section "compute-sanitizer memcheck"
for s in cavity-re100 obstacle; do
  echo "memcheck fluid $s: $(timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 "$B" fluid run assets/fluid/$s.toml --backend cuda --steps 20 --check-every 10 --quiet 2>&1 | grep -E 'ERROR SUMMARY')"
done
echo; echo "status $status"
exit $status
