"""The package itself: the import warning, the exceptions, the GPU probes, and Ctrl-C during a
long step (which also shows the GIL is released while stepping)."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import murmur


def test_import_says_cpu_only_exactly_when_the_kernels_are_missing():
    run = subprocess.run(
        [sys.executable, "-c", "import murmur"], capture_output=True, text=True, cwd="/"
    )
    assert run.returncode == 0, run.stderr
    assert ("murmur: CPU only:" in run.stderr) == (not murmur.kernels_embedded)
    assert (murmur.kernels_missing() is None) == murmur.kernels_embedded


def test_the_gpu_probes_agree():
    assert isinstance(murmur.gpu_usable(), bool)
    status = murmur.gpu_status()
    assert (status is None) == murmur.gpu_usable()
    if not murmur.kernels_embedded:
        assert not murmur.gpu_usable()


def test_the_exceptions_are_runtime_errors():
    assert issubclass(murmur.UnhealthyError, RuntimeError)
    assert issubclass(murmur.StaleArrayError, RuntimeError)
    assert murmur.UnhealthyError.__module__ == "murmur"
    assert isinstance(murmur.__version__, str)


def interrupt_after(seconds):
    """Sends SIGINT to this process from another thread after `seconds`."""
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


@pytest.mark.parametrize("what", ["flock", "fluid"])
def test_ctrl_c_stops_a_long_step_between_steps(what, scene):
    if what == "flock":
        sim = murmur.Flock(n=1_000, backend="cpu")
    else:
        del scene["solids"], scene["forces"]
        sim = murmur.Fluid.from_dict(scene, backend="cpu")
    # A million steps would take minutes; the timer thread can only fire while step() has
    # released the GIL.
    timer = interrupt_after(0.3)
    start = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            sim.step(1_000_000)
    finally:
        timer.cancel()
    assert time.monotonic() - start < 10
    # The steps taken stay taken, and the simulation steps on.
    assert sim.step(2) == 2
    if what == "fluid":
        assert 2 < sim.step_count < 1_000_000
