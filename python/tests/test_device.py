"""GPU tests: device arrays read by PyTorch and CuPy without a copy, compared with the NumPy
copies (sums and elements), their staleness, their lifetime, and the DLPack stream protocol.

Skipped unless ``murmur.gpu_usable()``. Runs under pytest, or without it as
``python3 python/tests/test_device.py`` (it prints ``N passed, N failed``). Needs torch and
cupy; a missing one skips its tests.
"""

import gc
import sys

import numpy as np

import murmur
from scenes import tiny_cylinder

try:
    import pytest
except ImportError:  # the plain runner below
    pytest = None

try:
    import torch
except ImportError:
    torch = None

try:
    import cupy
except ImportError:
    cupy = None

if pytest is not None:
    pytestmark = pytest.mark.skipif(
        not murmur.gpu_usable(), reason=f"no usable CUDA GPU: {murmur.gpu_status()}"
    )


class Skip(Exception):
    """A test that cannot run here (no torch, no cupy)."""


def need(module, name):
    if module is None:
        if pytest is not None:
            pytest.skip(f"{name} is not installed")
        raise Skip(f"{name} is not installed")
    return module


def raises(exc, fn, *args, **kw):
    """Asserts that fn(*args, **kw) raises exc; returns the exception."""
    try:
        fn(*args, **kw)
    except exc as e:
        return e
    raise AssertionError(f"{fn} did not raise {exc.__name__}")


def fluid(depth=1.0, steps=20):
    """The tiny cylinder, 8 cells deep, on CUDA, stepped."""
    f = murmur.Fluid.from_dict(tiny_cylinder(depth), backend="cuda")
    f.step(steps)
    return f


def test_fluid_fields_through_torch():
    torch_ = need(torch, "torch")
    f = fluid()
    nz, ny, nx = f.shape
    n = nx * ny * nz
    assert nz > 1
    host_u = f.velocity(lattice=True)
    host_rho = f.density(lattice=True)

    du = f.velocity(device=True)
    assert du.shape == (nz, ny, nx, 3) and du.dtype == "float32"
    assert du.strides == (4 * nx * ny, 4 * nx, 4, 4 * n)
    assert du.__dlpack_device__() == (2, du.device)
    t = torch_.from_dlpack(du)
    assert t.is_cuda and t.dtype == torch_.float32
    assert tuple(t.shape) == (nz, ny, nx, 3)
    assert t.stride() == (nx * ny, nx, 1, n)
    np.testing.assert_allclose(
        t.double().sum(dim=(0, 1, 2)).cpu().numpy(),
        host_u.astype(np.float64).sum(axis=(0, 1, 2)),
        rtol=1e-9, atol=1e-12,
    )
    assert np.array_equal(t.cpu().numpy(), host_u)
    assert np.abs(host_u).max() > 0

    drho = f.density(device=True)
    assert drho.strides == (4 * nx * ny, 4 * nx, 4)
    r = torch_.from_dlpack(drho)
    np.testing.assert_allclose(
        float(r.double().sum()), host_rho.astype(np.float64).sum(), rtol=1e-12
    )
    assert np.array_equal(r.cpu().numpy(), host_rho)


def test_fluid_fields_through_cupy():
    cp = need(cupy, "cupy")
    f = fluid()
    host_u = f.velocity(lattice=True)
    host_rho = f.density(lattice=True)
    du = f.velocity(device=True)
    cai = du.__cuda_array_interface__
    assert cai["version"] == 3 and cai["typestr"] == "<f4"
    assert cai["shape"] == du.shape and cai["strides"] == du.strides
    assert cai["data"] == (du.ptr, False)
    assert cai["stream"] == du.stream and du.stream != 0
    c = cp.asarray(du)
    assert c.strides == du.strides and int(c.data.ptr) == du.ptr
    np.testing.assert_allclose(
        float(c.astype(cp.float64).sum()), host_u.astype(np.float64).sum(), rtol=1e-9
    )
    assert np.array_equal(cp.asnumpy(c), host_u)
    d = cp.from_dlpack(f.density(device=True))
    assert np.array_equal(cp.asnumpy(d), host_rho)


def test_a_step_makes_device_arrays_stale():
    f = fluid()
    du = f.velocity(device=True)
    assert du.is_current
    f.step(1)
    assert not du.is_current
    for use in (lambda: du.ptr, lambda: du.__cuda_array_interface__, du.__dlpack__,
                du.__dlpack_device__):
        raises(murmur.StaleArrayError, use)
    if torch is not None:
        raises(murmur.StaleArrayError, torch.from_dlpack, du)
    assert f.velocity(device=True).is_current


def test_a_tensor_keeps_the_fluid_alive():
    torch_ = need(torch, "torch")
    f = fluid()
    expected = float(f.density(lattice=True).astype(np.float64).sum())
    t = torch_.from_dlpack(f.density(device=True))
    del f
    gc.collect()
    torch_.cuda.synchronize()
    np.testing.assert_allclose(float(t.double().sum()), expected, rtol=1e-12)
    del t
    gc.collect()
    # A capsule nobody consumed frees its tensor when it goes.
    g = fluid(steps=1)
    capsule = g.velocity(device=True).__dlpack__()
    del capsule
    gc.collect()


def test_the_dlpack_stream_protocol():
    torch_ = need(torch, "torch")
    f = fluid()
    host_u = f.velocity(lattice=True)
    du = f.velocity(device=True)
    side = torch_.cuda.Stream()
    with torch_.cuda.stream(side):
        t = torch_.from_dlpack(du)  # torch passes stream=side.cuda_stream
        total = t.double().sum()
    side.synchronize()
    np.testing.assert_allclose(
        float(total), host_u.astype(np.float64).sum(), rtol=1e-9, atol=1e-12
    )
    for stream in (None, 0, 1, 2, -1, side.cuda_stream):
        du.__dlpack__(stream=stream)
    raises(ValueError, du.__dlpack__, stream=-5)
    raises(BufferError, du.__dlpack__, copy=True)
    raises(BufferError, du.__dlpack__, dl_device=(1, 0))
    du.__dlpack__(dl_device=(2, du.device), copy=False, max_version=(1, 0))


def test_flock_views_in_cell_order_with_their_ids():
    cp = need(cupy, "cupy")
    fl = murmur.Flock(n=5_000, seed=2, backend="cuda")
    assert fl.backend.startswith("cuda")
    fl.step(10)
    host_pos, host_vel = fl.pos(), fl.vel()
    p, v, i = fl.pos(device=True), fl.vel(device=True), fl.id(device=True)
    assert p.shape == (5_000, 3) and p.strides == (16, 4) and p.dtype == "float32"
    assert v.shape == (5_000, 3) and v.strides == (12, 4)
    assert i.shape == (5_000,) and i.strides == (16,) and i.dtype == "uint32"
    assert i.ptr == p.ptr + 12
    ids = cp.asarray(i)
    assert sorted(cp.asnumpy(ids).tolist()) == list(range(5_000))
    order = cp.argsort(ids)
    assert np.array_equal(cp.asnumpy(cp.asarray(p)[order]), host_pos)
    assert np.array_equal(cp.asnumpy(cp.asarray(v)[order]), host_vel)
    if torch is not None:
        tp = torch.from_dlpack(p)
        assert tp.stride() == (4, 1)
        np.testing.assert_allclose(
            tp.double().sum(dim=0).cpu().numpy(), host_pos.astype(np.float64).sum(axis=0),
            rtol=1e-9,
        )
    fl.step(1)
    raises(murmur.StaleArrayError, lambda: p.__cuda_array_interface__)


def main():
    """Runs every test here without pytest; exits non-zero when one fails."""
    if not murmur.gpu_usable():
        print(f"skipped: no usable CUDA GPU: {murmur.gpu_status()}")
        print("0 passed, 0 failed")
        return 0
    passed = failed = skipped = 0
    for name, test in sorted(globals().items()):
        if not (name.startswith("test_") and callable(test)):
            continue
        try:
            test()
        except Skip as e:
            skipped += 1
            print(f"SKIP {name}: {e}")
        except Exception as e:  # report every failure, then go on
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}")
        else:
            passed += 1
            print(f"ok   {name}")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
