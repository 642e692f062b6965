"""murmur.Fluid on the CPU backend: scene files and dicts, fields in SI and lattice units,
forces, frames, and its errors."""

import numpy as np
import pytest

import murmur
from scenes import ROOT


def test_a_scene_file():
    f = murmur.Fluid(ROOT / "assets" / "fluid" / "cavity-re100.toml", backend="cpu")
    assert f.name == "cavity-re100"
    nz, ny, nx = f.shape
    assert nz == 1 and ny == nx >= 128  # 128 fluid cells across, and the walls
    assert f.step(2) == 2
    assert f.velocity().shape == (nz, ny, nx, 3)
    assert f.forces() == {}


def test_a_dict_scene_steps_and_reads_its_fields(scene):
    f = murmur.Fluid.from_dict(scene, backend="cpu")
    assert f.backend.startswith("cpu") and f.fallback is None
    assert f.name == "tiny-cylinder"
    nz, ny, nx = f.shape
    assert (nz, ny, nx) == (1, 18, 34)
    u = f.units
    assert u["dx"] == pytest.approx(0.125) and u["rho0"] == 1.0
    assert f.step_count == 0 and f.time == 0.0
    assert f.step(20) == 20
    assert f.step_count == 20 and f.time == pytest.approx(20 * u["dt"])

    v = f.velocity()
    assert v.shape == (nz, ny, nx, 3) and v.dtype == np.float32
    assert np.abs(v[..., 0]).max() > 0
    v_lattice = f.velocity(lattice=True)
    np.testing.assert_allclose(v_lattice * (u["dx"] / u["dt"]), v, rtol=1e-6)
    rho = f.density()
    assert rho.shape == (nz, ny, nx) and rho.dtype == np.float32
    np.testing.assert_allclose(f.density(lattice=True) * u["rho0"], rho, rtol=1e-6)
    assert abs(float(rho[rho > 0].mean()) - 1.0) < 0.05
    w = f.vorticity()
    assert w.shape == (nz, ny, nx, 3) and np.abs(w[..., 2]).max() > 0


def test_forces_are_a_dict_of_arrays(scene):
    f = murmur.Fluid.from_dict(scene, backend="cpu")
    f.step(10)
    forces = f.forces()
    assert list(forces) == ["cyl"]
    rows = forces["cyl"]
    assert set(rows) == {"step", "time", "force", "torque", "cd", "cl"}
    k = len(rows["step"])
    assert k >= 2 and rows["step"][-1] == 10
    assert rows["force"].shape == (k, 3) and rows["torque"].shape == (k, 3)
    assert rows["time"].shape == rows["cd"].shape == rows["cl"].shape == (k,)
    np.testing.assert_allclose(rows["time"], rows["step"] * f.units["dt"])
    assert rows["force"][-1, 0] > 0 and rows["cd"][-1] > 0  # drag pushes downstream


def test_render_slices_and_volumes(scene):
    f = murmur.Fluid.from_dict(scene, backend="cpu")
    f.step(5)
    img = f.render(width=80, height=40)
    assert img.shape == (40, 80, 3) and img.dtype == np.uint8
    for kw in ({"quantity": "ux"}, {"axis": "x", "at": 10}, {"range": (0.0, 0.01)},
               {"view": "volume"}):
        assert f.render(width=32, height=24, **kw).shape == (24, 32, 3)
    for kw, msg in (({"quantity": "heat"}, "speed, ux"), ({"axis": "w"}, "x, y or z"),
                    ({"axis": "x", "at": 34}, "outside the lattice"),
                    ({"range": (1.0, 0.0)}, "lo < hi"), ({"view": "smoke"}, "smoke"),
                    ({"width": 0}, "pixels")):
        with pytest.raises(ValueError, match=msg):
            f.render(**kw)


def test_the_inlet_scale(scene):
    speeds = []
    for s in (1.0, 0.0):
        f = murmur.Fluid.from_dict(scene, backend="cpu")
        f.set_inlet_scale(s)
        f.step(5)
        speeds.append(np.abs(f.velocity()).max())
    assert speeds[1] < 1e-3 * speeds[0]
    with pytest.raises(ValueError, match="outside 0..4"):
        f.set_inlet_scale(9.0)


def test_a_bad_scene_key_names_its_path(scene):
    scene["lattice"]["velocty"] = 0.05
    with pytest.raises(ValueError, match=r"lattice\.velocty") as e:
        murmur.Fluid.from_dict(scene, backend="cpu")
    assert "(line" not in str(e.value)  # a line of the TOML written from the dict


def test_a_bad_value_in_a_list_names_its_path(scene):
    scene["solids"][0]["shape"]["radius"] = "wide"
    with pytest.raises(ValueError, match=r"solids\[0\]"):
        murmur.Fluid.from_dict(scene, backend="cpu")
    scene["solids"][0]["shape"]["radius"] = object()
    with pytest.raises(ValueError, match=r"scene key solids\[0\]\.shape\.radius"):
        murmur.Fluid.from_dict(scene, backend="cpu")
    scene["solids"][0]["shape"] = {1: "x"}
    with pytest.raises(ValueError, match="keys must be strings"):
        murmur.Fluid.from_dict(scene, backend="cpu")


def test_numpy_values_and_none_in_a_dict(scene):
    scene["domain"]["size"] = np.array([4.0, 2.0, 0.125]).tolist()
    scene["lattice"]["velocity"] = np.float32(0.05)
    scene["lattice"]["resolution"] = np.int64(8)
    scene["description"] = None
    f = murmur.Fluid.from_dict(scene, backend="cpu")
    assert f.shape == (1, 18, 34)


def test_a_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(OSError, match="cannot read scene"):
        murmur.Fluid(tmp_path / "none.toml", backend="cpu")


def test_a_flow_out_of_bounds_is_unhealthy(scene):
    scene["faces"]["x_min"] = {"type": "inlet"}  # no ramp: an impulsive start
    f = murmur.Fluid.from_dict(scene, backend="cpu")
    with pytest.raises(murmur.UnhealthyError, match="left its bounds"):
        f.step(50)


def test_device_arrays_need_cuda(scene):
    f = murmur.Fluid.from_dict(scene, backend="cpu")
    for read in (f.velocity, f.density):
        with pytest.raises(ValueError, match="device arrays need the CUDA backend"):
            read(device=True)
        with pytest.raises(ValueError, match="lattice units"):
            read(device=True, lattice=False)
