#!/usr/bin/env bash
# Builds the murmur Python package's abi3 wheel (CPython 3.9 and later, Linux x86-64) into
# dist/python/ (ignored by git), for a machine without maturin or a network, such as the GPU
# machine:
#   bash scripts/python-wheel.sh          # here, from the repository root
# It builds the kernels' PTX first when it is missing or stale (`cargo xtask build-ptx`), so the
# wheel embeds them, and checks that an import of the wheel finds them. maturin comes from the
# package index into a virtual environment under target/ (target/py, made on first use). Then,
# on the GPU machine, from the repository root:
#   bash scripts/gpu-python.sh
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/py
if [ ! -x "$venv/bin/maturin" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q 'maturin>=1.9.4,<2' numpy
fi
cargo xtask build-ptx
rm -rf dist/python
"$venv/bin/maturin" build --release -m python/Cargo.toml --out dist/python
wheel=$(ls dist/python/*.whl)
"$venv/bin/pip" install -q --force-reinstall --no-deps "$wheel"
(cd / && "$OLDPWD/$venv/bin/python" -W error -c 'import murmur; print("kernels embedded:", murmur.kernels_embedded)')
echo "built $wheel"
