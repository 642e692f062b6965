#!/usr/bin/env bash
# A kernel variant for one GPU call: the PTX of the working tree with one source file edited by a
# sed expression, stamped with the unedited tree's source hash so that this tree's binary loads it
# through MURMUR_PTX=FILE (the same kernels and argument structs, another body):
#   bash scripts/ptx-variant.sh NAME FILE 'SED-EXPRESSION'
# writes dist/ptx/NAME.ptx.xz (`xz -dc` it there, then MURMUR_PTX=... murmur ...). The edited
# file is restored, and the tree's own PTX rebuilt, before it returns. The sed expression must
# change the file (else it stops).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 NAME FILE SED-EXPRESSION"; exit 2; }
name=$1 file=$2 expr=$3
ptx=target/ptx/murmur_kernels.ptx
clean=$(head -1 "$ptx" | sed -n 's/.*source-hash=\([0-9a-f]*\).*/\1/p')
[ -n "$clean" ] || { echo "no source hash in $ptx: run cargo xtask build-ptx first"; exit 1; }
backup=$(mktemp)
cp "$file" "$backup"
restore() { cp "$backup" "$file"; rm -f "$backup"; }
trap restore EXIT
sed -i -e "$expr" "$file"
if cmp -s "$file" "$backup"; then echo "the expression changes nothing in $file"; exit 1; fi
echo "variant $name: $(diff "$backup" "$file" | grep '^>' | head -5 | tr '\n' ' ')"
cargo xtask build-ptx >/dev/null
mkdir -p dist/ptx
sed "1s/source-hash=[0-9a-f]*/source-hash=$clean/" "$ptx" | xz -T2 -6 > "dist/ptx/$name.ptx.xz"
restore
trap - EXIT
cargo xtask build-ptx >/dev/null
head -1 "$ptx" | grep -q "source-hash=$clean" || { echo "the tree's PTX did not come back to $clean"; exit 1; }
ls -la "dist/ptx/$name.ptx.xz"
