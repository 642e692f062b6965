"""Type stubs of murmur's native module (the docstrings are the module's own)."""

import os
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt

_Path = Union[str, "os.PathLike[str]"]

__version__: str
#: The rule parameters' names, in order: rule1_distance, rule2_distance, rule3_distance,
#: rule1_scale, rule2_scale, rule3_scale, max_speed, scale, dt.
RULE_NAMES: List[str]

class UnhealthyError(RuntimeError):
    """A fluid left its health bounds (NaN, density or Mach number); the message names the step
    and the cell."""

class StaleArrayError(RuntimeError):
    """A DeviceArray was used after its owner stepped (or changed state): ask for it again."""

def kernels_missing() -> Optional[str]:
    """Why this build carries no GPU kernels (then only the CPU backend runs), or None."""

def gpu_usable() -> bool:
    """Whether a CUDA GPU is usable now (a driver, a GPU, and this build's kernels)."""

def gpu_status() -> Optional[str]:
    """Why no CUDA GPU is usable (None when one is)."""

class Flock:
    """A flock of boids (Reynolds' rules) on the CPU or a CUDA GPU.

    ``n`` boids uniform in ``[-scale, scale]^3`` (seeded by ``seed``), velocities zero;
    ``method`` one of ``naive``, ``scattered``, ``coherent``, ``coherent-shared``; ``backend``
    ``auto``, ``cpu``, ``cuda`` or ``cuda:N``; rule parameters (``RULE_NAMES``) as keywords.
    An unknown keyword raises ``ValueError``.
    """

    def __init__(
        self,
        n: Optional[int] = 100_000,
        seed: Optional[int] = 1,
        method: Optional[str] = "coherent",
        backend: str = "auto",
        cell_width_factor: Optional[float] = None,
        x_split: Optional[int] = None,
        **rules: float,
    ) -> None: ...
    @staticmethod
    def load(
        path: _Path,
        method: Optional[str] = "coherent",
        backend: str = "auto",
        cell_width_factor: Optional[float] = None,
        x_split: Optional[int] = None,
        **rules: float,
    ) -> "Flock":
        """A flock from a ``.npz`` snapshot (``pos``, ``vel``, ``id``)."""
    def step(self, k: int = 1) -> int:
        """Advances ``k`` steps (GIL released; Ctrl-C stops between steps). Returns the steps taken."""
    def pos(self, device: bool = False) -> Any:
        """Positions, float32 (N, 3) ordered by id; ``device=True``: a DeviceArray (CUDA only)."""
    def vel(self, device: bool = False) -> Any:
        """Velocities, float32 (N, 3) ordered by id; ``device=True``: a DeviceArray (CUDA only)."""
    def id(self, device: bool = False) -> Any:
        """Ids, uint32 (N,); ``device=True``: the ids beside ``pos(device=True)`` (CUDA only)."""
    def save(self, path: _Path) -> None:
        """Writes the state, ordered by id, to a ``.npz`` snapshot."""
    @property
    def rules(self) -> Dict[str, float]:
        """The rule parameters, ``{name: value}``."""
    def set_rules(self, **rules: float) -> None:
        """Changes rule parameters between steps (checked first)."""
    def render(
        self,
        width: int = 640,
        height: int = 480,
        colour: str = "heading",
        yaw: Optional[float] = None,
        pitch: Optional[float] = None,
        distance: Optional[float] = None,
    ) -> npt.NDArray[np.uint8]:
        """An (H, W, 3) uint8 frame of the flock."""
    def synchronize(self) -> None:
        """Waits until every queued step has finished."""
    @property
    def backend(self) -> str:
        """The backend stepping it, e.g. ``"cpu (rayon, 8 threads)"``."""
    @property
    def fallback(self) -> Optional[str]:
        """With ``backend="auto"`` where CUDA was not usable: why; else None."""
    @property
    def method(self) -> str:
        """The neighbour search method's name."""
    def __len__(self) -> int: ...

class Fluid:
    """A lattice Boltzmann fluid (D3Q27) on the CPU or a CUDA GPU, opened from a scene file.

    Host arrays are SI (m/s, kg/m^3, 1/s), shape ``(nz, ny, nx, ...)``; device arrays are
    lattice units.
    """

    def __init__(self, path: _Path, backend: str = "auto") -> None: ...
    @staticmethod
    def from_dict(
        scene: Dict[str, Any], backend: str = "auto", dir: Optional[_Path] = None
    ) -> "Fluid":
        """The scene as a dict of the scene file's tables; errors name the key path."""
    def step(self, k: int = 1) -> int:
        """Advances ``k`` steps (GIL released; Ctrl-C stops between steps). Returns the steps taken."""
    def velocity(self, device: bool = False, lattice: Optional[bool] = None) -> Any:
        """Velocity, float32 (nz, ny, nx, 3), m/s (``lattice=True``: cells per step);
        ``device=True``: a DeviceArray in lattice units (CUDA only)."""
    def density(self, device: bool = False, lattice: Optional[bool] = None) -> Any:
        """Density, float32 (nz, ny, nx), kg/m^3 (``lattice=True``: 1 at rest);
        ``device=True``: a DeviceArray in lattice units (CUDA only)."""
    def vorticity(self) -> npt.NDArray[np.float32]:
        """Vorticity ``curl u``, float32 (nz, ny, nx, 3), 1/s."""
    def forces(self) -> Dict[str, Dict[str, npt.NDArray[Any]]]:
        """``{solid: {"step", "time", "force", "torque", "cd", "cl"}}`` as NumPy arrays."""
    def render(
        self,
        width: int = 640,
        height: int = 480,
        quantity: Optional[str] = None,
        axis: Optional[str] = None,
        at: Optional[int] = None,
        range: Optional[Tuple[float, float]] = None,
        view: Optional[str] = None,
    ) -> npt.NDArray[np.uint8]:
        """An (H, W, 3) uint8 frame: a slice or a volume."""
    def set_inlet_scale(self, scale: float) -> None:
        """Scales every inlet's velocity (0..4; 1: the scene's) from the next step on."""
    @property
    def shape(self) -> Tuple[int, int, int]:
        """``(nz, ny, nx)``: the shape of ``density()``."""
    @property
    def units(self) -> Dict[str, float]:
        """``{"dx": m, "dt": s, "rho0": kg/m^3}``."""
    @property
    def time(self) -> float:
        """Simulated time since the start, s."""
    @property
    def step_count(self) -> int:
        """Steps taken since the start."""
    @property
    def name(self) -> str:
        """The scene's name."""
    @property
    def warnings(self) -> List[str]:
        """Warnings the scene raised when it was built."""
    @property
    def backend(self) -> str:
        """The backend, e.g. ``"cuda (NVIDIA H200)"``."""
    @property
    def fallback(self) -> Optional[str]:
        """With ``backend="auto"`` where CUDA was not usable: why; else None."""
    @property
    def tuning(self) -> str:
        """Where the kernel knobs came from."""

class DeviceArray:
    """A strided array in GPU memory owned by a Flock or a Fluid, valid until its owner's next
    step (then ``StaleArrayError``). Read it with ``torch.from_dlpack`` or ``cupy.asarray``."""

    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def strides(self) -> Tuple[int, ...]:
        """Bytes between neighbours along each axis."""
    @property
    def dtype(self) -> str:
        """``float32`` or ``uint32``."""
    @property
    def typestr(self) -> str:
        """``<f4`` or ``<u4``."""
    @property
    def device(self) -> int:
        """The CUDA device ordinal."""
    @property
    def ptr(self) -> int:
        """Device address of element ``[0, ...]``."""
    @property
    def stream(self) -> int:
        """The ``CUstream`` handle murmur writes the array on."""
    @property
    def is_current(self) -> bool:
        """False after the owner's next step."""
    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]: ...
    def __dlpack__(
        self,
        *,
        stream: Optional[int] = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    def __len__(self) -> int: ...
