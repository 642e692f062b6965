#!/usr/bin/env bash
# The typed-kernel-interface round, in one call on the GPU machine, from the repository root:
#   bash scripts/gpu-house.sh
# Needs `cargo xtask gpu-bundle` and `cargo xtask gpu-test` (new build in dist/gpu/) and the build
# to compare against in dist/base/ (binary + PTX of an earlier commit). Prints: the GPU tests;
# `flock check`; `fluid parity`; `fluid validate --backend cuda`; compute-sanitizer on the new
# build; then the same benchmarks for the earlier and the new build, alternating, twice:
# `flock bench` at 100k / 1M / 5M (scale 100) and `fluid bench` at 256^3, and the 100k
# `--no-gpu-timer` row. Logs go to $OUT as well.
set -u -o pipefail
NEW=${NEW:-dist/gpu/murmur}
OLD=${OLD:-dist/base/murmur}
O=${OUT:-gpu-logs}
mkdir -p "$O"
exec > >(tee -a "$O/log.txt") 2>&1
T=/tmp/murmur-house
mkdir -p "$T"
status=0
section() { echo; echo "=== $* ($(date +%T)) ==="; }

section device
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader

if [ -x dist/fresh/murmur ]; then
  section "the binary \`cargo xtask run\` built in a fresh clone (no build-ptx by hand)"
  timeout 60 dist/fresh/murmur flock run --n 100000 --steps 200 2>&1 | head -2
fi

section "flock run with the grid picked for the density (1M, 5M)"
timeout 60 "$NEW" flock run --backend cuda --n 1000000 --steps 1000 --quiet 2>&1 | head -1
timeout 60 "$NEW" flock run --backend cuda --n 5000000 --steps 200 --quiet 2>&1 | head -1

section "coherent-shared (blocks of 256) against coherent, same grids"
for n in 100000 1000000; do
  for m in coherent-shared coherent; do
    echo "$m $n: $(timeout 60 "$NEW" flock run --backend cuda --n $n --method $m --cell-width-factor 1 --x-split 4 --steps 300 --quiet 2>&1 | head -1 | sed 's/.*wall, //')"
  done
done

section "GPU tests (cargo xtask gpu-test)"
timeout 240 bash dist/gpu/tests/run.sh 2>&1 | grep -E "^(==|test |test result)|panicked|FAILED" || status=1

section "flock check"
timeout 120 "$NEW" flock check --sizes 1000,20000,100000 --sort-max 1000000 > "$T/check.md" 2>&1 || status=1
grep -E "fail|all checks" "$T/check.md"; grep -c "| pass" "$T/check.md" | sed 's/^/rows passing: /'
grep -E "FAIL|fail" "$T/check.md" | head

section "fluid parity and validate --backend cuda"
timeout 120 "$NEW" fluid parity --steps 100 2>&1 | tail -n 20 || status=1
timeout 300 "$NEW" fluid validate --backend cuda 2>&1 | tail -n 25 || status=1

section "compute-sanitizer memcheck (new build)"
for a in "coherent" "scattered" "coherent --sort radix" "naive" "coherent-shared"; do
  echo "memcheck flock $a: $(timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 "$NEW" flock run --backend cuda --n 3000 --steps 3 --method $a --quiet 2>&1 | grep -E 'ERROR SUMMARY')"
done
for m in bgk acm-mrt; do
  echo "memcheck fluid $m: $(timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 "$NEW" fluid run assets/fluid/obstacle.toml --backend cuda --model $m --steps 3 --quiet 2>&1 | grep -E 'ERROR SUMMARY')"
done
echo "racecheck coherent --stages: $(timeout 40 compute-sanitizer --tool racecheck --error-exitcode 9 "$NEW" flock run --backend cuda --n 20000 --steps 2 --stages --quiet 2>&1 | grep -E 'RACECHECK SUMMARY|ERROR SUMMARY')"

bench() { # $1 = label, $2 = binary
  section "flock bench $1"
  timeout 150 "$2" flock bench --backend cuda --sizes 100000,1000000,5000000 --methods coherent \
    --factors 0.5,1 --x-splits 4,8 --block-sizes 256 --warmup 200 --steps 1000 --scale 100 \
    --out "$T/fb-$1" 2>&1 | grep -E "^\| [0-9]"
  section "fluid bench $1"
  timeout 120 "$2" fluid bench --backend cuda --sizes 256 --steps 200 2>&1 | grep -E "^\|"
  section "100k, --no-gpu-timer, $1"
  timeout 30 "$2" flock run --backend cuda --n 100000 --steps 6000 --no-gpu-timer --quiet
}
for round in 1 2; do
  bench "old-$round" "$OLD"
  bench "new-$round" "$NEW"
done
section done
exit $status
