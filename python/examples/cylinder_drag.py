"""Flow past a cylinder at Re 100 (a von Karman vortex street), driven from Python.

Opens the shipped scene ``assets/fluid/cylinder-2d.toml`` (a 2D channel, 400 x 160 cells, an
immersed cylinder 20 cells across), steps it in chunks while the drag and lift coefficients
accumulate, then saves two pictures with matplotlib: the drag and lift history, and a slice of
the vorticity at the end.

    python python/examples/cylinder_drag.py                 # GPU when usable, else the CPU
    python python/examples/cylinder_drag.py --backend cpu --steps 4000 --out cylinder-out

The scene's inlet ramps up over its first 5 s; the street sheds from about t = 30 s on.
"""

import argparse
import pathlib
import sys
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import murmur  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scene", default=str(ROOT / "assets/fluid/cylinder-2d.toml"))
    p.add_argument("--backend", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument("--steps", type=int, default=20_000, help="lattice steps in all")
    p.add_argument("--chunk", type=int, default=500, help="steps between progress lines")
    p.add_argument("--out", default="cylinder-out", help="folder for the two PNG files")
    a = p.parse_args()

    fluid = murmur.Fluid(a.scene, backend=a.backend)
    if fluid.fallback:
        print(f"murmur: {fluid.fallback}", file=sys.stderr)
    nz, ny, nx = fluid.shape
    print(f"{nx} x {ny} x {nz} cells on {fluid.backend}; dt = {fluid.units['dt']:.3e} s")

    t0 = time.perf_counter()
    done = 0
    while done < a.steps:
        k = min(a.chunk, a.steps - done)
        fluid.step(k)
        done += k
        f = next(iter(fluid.forces().values()))
        print(f"step {done:6d}  t = {fluid.time:6.2f} s  cd = {f['cd'][-1]:.3f}  cl = {f['cl'][-1]:+.3f}")
    wall = time.perf_counter() - t0
    print(f"{done} steps in {wall:.1f} s ({nx * ny * nz * done / wall / 1e6:.1f} MLUPs/s)")

    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    name, f = next(iter(fluid.forces().items()))
    t, cd, cl = f["time"], f["cd"], f["cl"]
    late = t > 0.5 * t[-1]
    mean_cd = float(np.mean(cd[late])) if late.any() else float("nan")

    fig, ax = plt.subplots(figsize=(8, 3.2), dpi=120)
    ax.plot(t, cd, label="drag $C_d$")
    ax.plot(t, cl, label="lift $C_l$")
    ax.axhline(mean_cd, color="grey", lw=0.8, ls="--", label=f"mean $C_d$ (second half) = {mean_cd:.3f}")
    ax.set_xlabel("time, s")
    ax.set_ylabel("coefficient")
    ax.set_title(f"{name}: Re 100, {fluid.backend}")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "cylinder-drag.png")

    w = fluid.vorticity()[0, :, :, 2]  # (ny, nx) of the single z plane, 1/s
    lim = float(np.percentile(np.abs(w), 99)) or 1.0
    dx = fluid.units["dx"]
    fig, ax = plt.subplots(figsize=(8, 3.4), dpi=120)
    im = ax.imshow(w, origin="lower", cmap="RdBu_r", vmin=-lim, vmax=lim,
                   extent=(0, nx * dx, 0, ny * dx))
    ax.set_xlabel("x, m")
    ax.set_ylabel("y, m")
    ax.set_title(f"vorticity $\\omega_z$ at t = {fluid.time:.1f} s")
    fig.colorbar(im, ax=ax, label="1/s", shrink=0.8)
    fig.tight_layout()
    fig.savefig(out / "cylinder-vorticity.png")
    print(f"mean cd over the second half: {mean_cd:.3f}")
    print(f"wrote {out / 'cylinder-drag.png'} and {out / 'cylinder-vorticity.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
