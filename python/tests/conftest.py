"""Shared fixtures of the murmur package's tests: a small scene and the release binary."""

import os
from pathlib import Path

import pytest

from scenes import ROOT, tiny_cylinder


@pytest.fixture
def scene():
    """``tiny_cylinder()``, a new dict for each test."""
    return tiny_cylinder()


@pytest.fixture
def murmur_bin():
    """The release binary (``MURMUR_BIN`` or target/release/murmur); a clear failure without it."""
    path = Path(os.environ.get("MURMUR_BIN", ROOT / "target" / "release" / "murmur"))
    if not path.is_file():
        pytest.fail(
            f"the murmur binary is missing at {path}: build it first "
            "(cargo build --release -p murmur) or set MURMUR_BIN"
        )
    return path
