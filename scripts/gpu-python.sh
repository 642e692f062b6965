#!/usr/bin/env bash
# The Python package's GPU tests on the GPU machine, from the repository root, with the wheel
# that `bash scripts/python-wheel.sh` built into dist/python/ (carried along) and the machine's
# own python3, torch and cupy:
#   bash scripts/gpu-python.sh
# Installs the wheel into a folder of its own (no network, no dependencies: numpy is there),
# then runs python/tests/test_device.py (under pytest when it is installed) and the CPU tests.
set -u
cd "$(dirname "$0")/.."
site=${TMPDIR:-/tmp}/murmur-site
rm -rf "$site"
python3 -m pip install -q --no-index --no-deps --target "$site" dist/python/*.whl || exit 1
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
python3 -c 'import murmur, torch, cupy; print("murmur", murmur.__version__, "| gpu:", murmur.gpu_status() or "usable", "| torch", torch.__version__, "| cupy", cupy.__version__)'
if python3 -c 'import pytest' 2>/dev/null; then
  python3 -m pytest -q -rs python/tests
else
  echo "(no pytest here: the device tests by their own runner; the CPU tests need pytest)"
  python3 python/tests/test_device.py
fi
