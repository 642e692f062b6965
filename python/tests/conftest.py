"""Shared pieces of the murmur package's tests: the repository's paths and a small scene."""

import copy
import os
from pathlib import Path

import pytest

#: The repository's root (python/tests/ is two levels below it).
ROOT = Path(__file__).resolve().parents[2]


def tiny_cylinder():
    """A 2D flow past a cylinder on 34 x 18 x 1 cells (8 cells across the cylinder), the inlet
    ramped over 0.5 s (80 steps): a few steps take milliseconds on the CPU."""
    return copy.deepcopy(
        {
            "name": "tiny-cylinder",
            "collision": "acm-mrt",
            "physical": {"length": 1.0, "velocity": 1.0, "viscosity": 0.05, "density": 1.0},
            "lattice": {"resolution": 8, "velocity": 0.05},
            "domain": {"size": [4.0, 2.0, 0.125]},
            "faces": {
                "x_min": {"type": "inlet", "ramp": 0.5},
                "x_max": {"type": "outlet"},
                "y_min": {"type": "free-slip"},
                "y_max": {"type": "free-slip"},
                "z_min": {"type": "periodic"},
                "z_max": {"type": "periodic"},
            },
            "solids": [
                {
                    "name": "cyl",
                    "shape": {"type": "cylinder", "radius": 0.5, "length": 0.125, "caps": False},
                    "position": [1.5, 1.0, 0.0625],
                }
            ],
            "forces": {"every": 5},
        }
    )


@pytest.fixture
def scene():
    """A fresh copy of ``tiny_cylinder()``."""
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
