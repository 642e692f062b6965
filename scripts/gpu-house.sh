#!/usr/bin/env bash
# The structure round on the GPU machine, from the repository root, in two calls (each well under
# ten minutes):
#   bash scripts/gpu-house.sh checks   # GPU tests, flock check, fluid parity, ranks-check
#                                      # --gpus 1, compute-sanitizer on the new build
#   bash scripts/gpu-house.sh bench    # the same benchmarks of the earlier and the new build,
#                                      # interleaved old / new / old / new
# Needs dist/new/murmur.xz (this build, PTX embedded), dist/base/murmur.xz (the build to compare
# against) and dist/gpu/tests/ (`cargo xtask gpu-test`, test binaries xz-compressed). Logs go to
# $OUT as well.
set -u -o pipefail
O=${OUT:-gpu-logs}
mkdir -p "$O"
exec > >(tee -a "$O/log-$1.txt") 2>&1
T=/tmp/murmur-house
mkdir -p "$T/bin"
for b in new base; do
  [ -x "$T/bin/$b" ] || xz -dc "dist/$b/murmur.xz" > "$T/bin/$b"
  chmod +x "$T/bin/$b"
done
NEW=$T/bin/new
OLD=$T/bin/base
status=0
section() { echo; echo "=== $* ($(date +%T)) ==="; }

checks() {
  # The test binaries run the binary and read assets where they were built (/work/main).
  [ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
  mkdir -p target/release && cp "$NEW" target/release/murmur
  section device
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader
  section "GPU tests (cargo xtask gpu-test)"
  for t in dist/gpu/tests/*.xz; do xz -dc "$t" > "$T/$(basename "$t" .xz)"; chmod +x "$T/$(basename "$t" .xz)"; done
  for t in gpu_parity fluid_gpu_parity fluid_ib_spread gpu_half view_render fluid_view; do
    echo "== $t"
    (cd "$PWD" && timeout 200 "$T/$t" --ignored --test-threads=1 2>&1) \
      | grep -E "^(test |test result)|panicked|FAILED" || status=1
  done
  section "flock check"
  timeout 120 "$NEW" flock check --sizes 1000,20000,100000 --sort-max 1000000 > "$T/check.md" 2>&1 || status=1
  grep -E "fail|all checks" "$T/check.md"; grep -c "| pass" "$T/check.md" | sed 's/^/rows passing: /'
  section "fluid parity"
  timeout 150 "$NEW" fluid parity --steps 50 2>&1 | tail -n 40 || status=1
  section "fluid ranks-check --gpus 1"
  timeout 60 "$NEW" fluid ranks-check --gpus 1 --size 128 --steps 20 2>&1 | tail -n 3 || status=1
  timeout 120 "$NEW" fluid ranks-check assets/fluid/rotating-torus.toml --gpus 1 --steps 20 2>&1 | tail -n 3 || status=1
  section "compute-sanitizer memcheck (new build)"
  for a in "coherent" "coherent --sort radix" "scattered"; do
    echo "memcheck flock $a: $(timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 "$NEW" flock run --backend cuda --n 3000 --steps 3 --method $a --quiet 2>&1 | grep -E 'ERROR SUMMARY')"
  done
  for s in obstacle smoke-sphere torus-channel; do
    echo "memcheck fluid $s: $(timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 "$NEW" fluid run assets/fluid/$s.toml --backend cuda --steps 3 --quiet 2>&1 | grep -E 'ERROR SUMMARY')"
  done
}

bench() { # $1 = label, $2 = binary
  section "fluid bench $1"
  timeout 120 "$2" fluid bench --backend cuda --sizes 256 --steps 200 --storage fp32,fp16s 2>&1 | grep -E "^\|"
  section "boundary-bench obstacle $1"
  timeout 90 "$2" fluid boundary-bench assets/fluid/obstacle.toml --backend cuda --warmup 20 --steps 200 2>&1 | grep -E "^\|"
  section "ib-bench torus-channel $1"
  timeout 120 "$2" fluid ib-bench assets/fluid/torus-channel.toml --backend cuda --steps 50 2>&1 | grep -E "^\|"
  section "flock bench $1"
  timeout 120 "$2" flock bench --backend cuda --sizes 100000,1000000,5000000 --methods coherent \
    --block-sizes 256 --warmup 200 --steps 1000 --scale 100 --out "$T/fb-$1" 2>&1 | grep -E "^\| [0-9]"
}

case "$1" in
  checks) checks ;;
  bench)
    for round in 1 2; do
      bench "old-$round" "$OLD"
      bench "new-$round" "$NEW"
    done ;;
esac
section done
exit $status
