"""Small scenes for the tests (no pytest needed: test_device.py also runs without it)."""

from pathlib import Path

#: The repository's root (python/tests/ is two levels below it).
ROOT = Path(__file__).resolve().parents[2]


def tiny_cylinder(depth=0.125):
    """Flow past a cylinder on 34 x 18 x (depth / 0.125 m) cells, 8 cells across the cylinder,
    periodic along z, the inlet ramped over 0.5 s (80 steps): a few steps take milliseconds on
    the CPU. The default depth, one cell, is a 2D flow."""
    return {
        "name": "tiny-cylinder",
        "collision": "acm-mrt",
        "physical": {"length": 1.0, "velocity": 1.0, "viscosity": 0.05, "density": 1.0},
        "lattice": {"resolution": 8, "velocity": 0.05},
        "domain": {"size": [4.0, 2.0, depth]},
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
                "shape": {"type": "cylinder", "radius": 0.5, "length": depth, "caps": False},
                "position": [1.5, 1.0, depth / 2],
            }
        ],
        "forces": {"every": 5},
    }
