"""murmur.Flock on the CPU backend: settings, state, rules, snapshots, frames, errors, and the
CLI's `flock run` snapshot reproduced byte for byte."""

import subprocess

import numpy as np
import pytest

import murmur


def small(**kw):
    kw.setdefault("n", 2_000)
    kw.setdefault("backend", "cpu")
    return murmur.Flock(**kw)


def test_a_new_flock_is_a_random_cube_at_rest():
    f = small(seed=3)
    assert len(f) == 2_000
    assert f.backend.startswith("cpu")
    assert f.fallback is None
    assert f.method == "coherent"
    pos, vel, ids = f.pos(), f.vel(), f.id()
    assert pos.shape == (2_000, 3) and pos.dtype == np.float32
    assert vel.shape == (2_000, 3) and vel.dtype == np.float32
    assert ids.dtype == np.uint32 and np.array_equal(ids, np.arange(2_000))
    scale = f.rules["scale"]
    assert np.abs(pos).max() <= scale and np.abs(pos).max() > 0.9 * scale
    assert not vel.any()
    assert np.array_equal(small(seed=3).pos(), pos)
    assert not np.array_equal(small(seed=4).pos(), pos)


def test_stepping_moves_the_boids_and_counts_its_steps():
    f = small()
    before = f.pos()
    assert f.step(5) == 5
    assert f.step() == 1
    assert not np.array_equal(f.pos(), before)
    assert f.vel().any()
    assert np.abs(f.pos()).max() <= f.rules["scale"]


def test_rules_read_and_change():
    f = small(rule1_scale=0.02)
    r = f.rules
    assert list(r) == murmur.RULE_NAMES
    assert r["rule1_scale"] == 0.02
    assert r["dt"] == 0.2
    f.set_rules(rule3_scale=0.05, max_speed=2.0)
    assert f.rules["rule3_scale"] == 0.05 and f.rules["max_speed"] == 2.0
    with pytest.raises(ValueError, match="dt"):
        f.set_rules(dt=-1.0)
    assert f.rules["dt"] == 0.2
    with pytest.raises(ValueError, match="rule1_distance, rule2_distance"):
        f.set_rules(rule4_scale=1.0)


def test_an_unknown_keyword_names_the_known_ones():
    with pytest.raises(ValueError) as e:
        small(cohesion=0.1)
    message = str(e.value)
    assert '"cohesion"' in message
    for name in murmur.RULE_NAMES:
        assert name in message
    with pytest.raises(ValueError, match="a number"):
        small(rule1_scale="lots")


def test_bad_settings_are_value_errors():
    with pytest.raises(ValueError, match="naive, scattered, coherent"):
        small(method="fastest")
    with pytest.raises(ValueError, match="auto, cpu, cuda or cuda:N"):
        small(backend="gpu")
    with pytest.raises(ValueError):
        small(n=0)


def test_save_and_load_round_trip(tmp_path):
    f = small(seed=5)
    f.step(3)
    path = tmp_path / "flock.npz"
    f.save(path)
    g = murmur.Flock.load(str(path), backend="cpu")
    assert len(g) == len(f)
    assert np.array_equal(g.pos(), f.pos()) and np.array_equal(g.vel(), f.vel())
    f.step(4)
    g.step(4)
    assert np.array_equal(g.pos(), f.pos())
    with pytest.raises(ValueError, match="scale"):
        murmur.Flock.load(path, backend="cpu", scale=1.0)
    with pytest.raises(ValueError, match="takes no n"):
        murmur.Flock.load(path, backend="cpu", n=10)


def test_a_missing_snapshot_is_an_os_error(tmp_path):
    with pytest.raises(OSError):
        murmur.Flock.load(tmp_path / "none.npz", backend="cpu")


def test_render_is_an_rgb_image():
    f = small()
    img = f.render(width=96, height=64)
    assert img.shape == (64, 96, 3) and img.dtype == np.uint8
    assert img.min() < img.max()
    side = f.render(width=96, height=64, colour="speed", yaw=1.0, pitch=0.3)
    assert side.shape == (64, 96, 3) and not np.array_equal(side, img)
    with pytest.raises(ValueError, match="heading or speed"):
        f.render(colour="rainbow")
    with pytest.raises(ValueError):
        f.render(width=0, height=10)


def test_device_arrays_need_cuda():
    f = small()
    for read in (f.pos, f.vel, f.id):
        with pytest.raises(ValueError, match="device arrays need the CUDA backend"):
            read(device=True)


def test_the_clis_snapshot_byte_for_byte(tmp_path, murmur_bin):
    n, seed, steps = 3_000, 7, 25
    cli = tmp_path / "cli.npz"
    run = subprocess.run(
        [murmur_bin, "flock", "run", "--backend", "cpu", "--n", str(n), "--seed", str(seed),
         "--steps", str(steps), "--set", "rule1_scale=0.02", "--save", str(cli)],
        capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stderr
    f = murmur.Flock(n=n, seed=seed, backend="cpu", rule1_scale=0.02)
    assert f.step(steps) == steps
    ours = tmp_path / "py.npz"
    f.save(ours)
    snap = np.load(cli)
    assert np.array_equal(snap["pos"], f.pos())
    assert np.array_equal(snap["vel"], f.vel())
    assert np.array_equal(snap["id"], f.id())
    assert cli.read_bytes() == ours.read_bytes()
