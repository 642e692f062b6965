# Sourced by the old-against-new GPU scripts (gpu-walls.sh, gpu-solids.sh, gpu-binned.sh) after `NAME=...`:
# the log $OUT/log-$NAME.txt, the scratch folder $T, the new binary $B from dist/new/murmur.xz and,
# when dist/old/murmur.xz is there, the old one $OLD; `section`, `want` (the script's arguments,
# default all), `status`; the device's line; the Re 10,000 sphere at 48 cells per diameter in
# $T/sphere-48.toml.
set -u -o pipefail
O=${OUT:-gpu-logs}
mkdir -p "$O"
exec > >(tee -a "$O/log-$NAME.txt") 2>&1
T=/tmp/murmur-$NAME
mkdir -p "$T"
B=$T/murmur
xz -dc dist/new/murmur.xz > "$B" && chmod +x "$B"
OLD=
if [ -f dist/old/murmur.xz ]; then OLD=$T/murmur-old; xz -dc dist/old/murmur.xz > "$OLD" && chmod +x "$OLD"; fi
status=0
section() { echo; echo "=== $* ($(date +%T)) ==="; }
want() { [[ " $WANT " == *" all "* ]] || [[ " $WANT " == *" $1 "* ]]; }
WANT=" ${ARGS:-all} "
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
mkdir -p target/release && cp "$B" target/release/murmur
section device
nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader
sed 's/^resolution = 24 .*/resolution = 48/' assets/fluid/sphere-re10000.toml > "$T/sphere-48.toml"
grep -q "^resolution = 48" "$T/sphere-48.toml" || { echo "sphere-48.toml: no resolution line"; status=1; }
