#!/usr/bin/env bash
# The WALE subgrid model on one GPU machine, from the repository root:
#   bash scripts/gpu-wale.sh [channel|resume]
# - `murmur fluid parity --steps 100` (its scenes include WALE past an obstacle between an
#   inlet and an outlet, and under a moving lid);
# - `fluid bench` at 256^3 with --les none,smagorinsky,wale, and the plain rows of the build
#   before the model (dist/before/murmur.xz, build 49e83d7, when there) beside them;
# - a WALE run on CUDA resumed from a checkpoint against the unbroken run (the final
#   checkpoints' populations and velocity field, by their SHA-256).
# - with `channel` only: the coarse channel (assets/fluid/channel-180-les.toml, four wall units
#   per cell) with WALE instead of the Smagorinsky model, to its end, compared with the DNS.
# - with `resume` only: the resume check (and the build before's rows unless QUICK is set).
# Needs dist/wale/murmur.xz (PTX embedded). Logs go to $OUT/log-wale.txt.
set -u -o pipefail
O=${OUT:-gpu-logs}
mkdir -p "$O"
exec > >(tee -a "$O/log-wale.txt") 2>&1
T=/tmp/murmur-wale
mkdir -p "$T"
W=$T/murmur
xz -dc dist/wale/murmur.xz > "$W" && chmod +x "$W"
status=0
section() { echo; echo "=== $* ($(date +%T)) ==="; }
section device
nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader
if [ "${1:-}" = channel ]; then
  sed -e 's/^les = .*/les = "wale"/' -e '/^smagorinsky = /d' \
    -e 's/^name = "channel-180-les"/name = "channel-180-wale"/' \
    assets/fluid/channel-180-les.toml > "$T/channel-180-wale.toml"
  grep -q '^les = "wale"' "$T/channel-180-wale.toml" || { echo "no les line"; exit 1; }
  section "fluid case channel-180 --scene channel-180-wale.toml"
  timeout 200 "$W" fluid case channel-180 --scene "$T/channel-180-wale.toml" --backend cuda \
    --out "$T/channel-180-wale-run" --plot "$O/channel-180-wale.png" 2>&1 | grep -v "^wrote .*slice" \
    || status=1
  cp "$T/channel-180-wale-run/channel-180-wale_statistics.csv" "$O/" 2>/dev/null
  section "done (status $status)"
  exit $status
fi
# `resume`: only the resume check below (with the build before's bench rows when QUICK is unset).
if [ "${1:-}" = resume ]; then
  SKIP_PARITY=1
fi
# QUICK=1: parity in FP32 storage only, no bench of the build before.
STORAGE=fp32,fp16s,fp16c
[ -n "${QUICK:-}" ] && STORAGE=fp32
if [ -z "${SKIP_PARITY:-}" ]; then
section "fluid parity (CPU vs CUDA, 100 steps, storage $STORAGE; the WALE rows and the verdict)"
timeout 150 "$W" fluid parity --steps 100 --storage "$STORAGE" 2>&1 \
  | grep -E "WALE|parity|worst|rror" || status=1
section "fluid bench --sizes 256 --les none,smagorinsky,wale (with WALE)"
timeout 60 "$W" fluid bench --backend cuda --sizes 256 --steps 200 --les none,smagorinsky,wale 2>&1 \
  | grep -E "^\|" || status=1
fi
if [ -f dist/before/murmur.xz ] && [ -z "${QUICK:-}" ]; then
  xz -dc dist/before/murmur.xz > "$T/murmur-before" && chmod +x "$T/murmur-before"
  section "fluid bench --sizes 256 (the build before WALE)"
  timeout 40 "$T/murmur-before" fluid bench --backend cuda --sizes 256 --steps 200 2>&1 \
    | grep -E "^\|" || status=1
fi
section "WALE on CUDA: 60 steps against 25 + a resume to 60"
sed 's/^\[lattice\]/[lattice]\nles = "wale"/' assets/fluid/obstacle.toml > "$T/obstacle-wale.toml"
rm -rf "$T/a" "$T/b"
run() { timeout 60 "$W" fluid run "$T/obstacle-wale.toml" --backend cuda --quiet "$@" 2>&1 | tail -n 3; }
run --out "$T/a" --steps 60 --checkpoint-every 60
run --out "$T/b" --steps 25 --checkpoint-every 25
run --out "$T/b" --steps 60 --checkpoint-every 60 --resume "$T/b/checkpoints"
python3 - "$T" <<'PY' || status=1
import glob, os, sys
import numpy as np
t = sys.argv[1]
newest = lambda d: sorted(glob.glob(os.path.join(t, d, "checkpoints", "*.npz")))[-1]
a, b = np.load(newest("a")), np.load(newest("b"))
print("checkpoints:", os.path.basename(newest("a")), os.path.basename(newest("b")))
for n in ["populations", "wale_velocity"]:
    same = n in a and n in b and a[n].tobytes() == b[n].tobytes()
    print(f"{n}: {'the same bytes' if same else 'DIFFERENT or missing'}")
    if not same:
        sys.exit(1)
PY
section "done (status $status)"
exit $status
