"""murmur: flocks of millions of boids and D3Q27 lattice Boltzmann fluids, on the CPU or an
NVIDIA GPU, with kernels written in Rust.

- ``Flock``: a flock stepped by Reynolds' rules; positions and velocities as NumPy arrays
  ordered by id; snapshots; frames.
- ``Fluid``: a fluid scene (a TOML file or a dict); velocity, density and vorticity as NumPy
  arrays in SI units; the forces on immersed solids; frames.
- ``DeviceArray``: a field left on the GPU (CUDA backend), for PyTorch and CuPy without a copy.
- Errors: ``ValueError`` (bad input), ``RuntimeError`` (the GPU), ``OSError`` (files),
  ``UnhealthyError`` (a flow left its bounds) and ``StaleArrayError`` (a device array used after
  its owner stepped).

Stepping releases the GIL; Ctrl-C stops a long ``step(k)`` between steps. Everything is the
``murmur`` Rust library's API, bound by ``murmur._murmur``.
"""

import warnings as _warnings

from murmur._murmur import (
    RULE_NAMES,
    DeviceArray,
    Flock,
    Fluid,
    StaleArrayError,
    UnhealthyError,
    __version__,
    gpu_status,
    gpu_usable,
    kernels_missing,
)

#: Whether this build carries the GPU kernels (without them only the CPU backend runs).
kernels_embedded: bool = kernels_missing() is None

if not kernels_embedded:
    _warnings.warn(f"murmur: CPU only: {kernels_missing()}", RuntimeWarning, stacklevel=2)

__all__ = [
    "RULE_NAMES",
    "DeviceArray",
    "Flock",
    "Fluid",
    "StaleArrayError",
    "UnhealthyError",
    "__version__",
    "gpu_status",
    "gpu_usable",
    "kernels_embedded",
    "kernels_missing",
]
