"""Fixtures of the project's own tests, on top of the pyclperf pytest plugin (pyclperf.testing).
PYCLPERF_TEST_DEVICES picks the devices: unset means the default device, "all" every device,
otherwise a comma-separated list of device specs."""

from __future__ import annotations

import fcntl
import os
import signal

import numpy as np
import pytest

import pyclperf


def pytest_configure(config: pytest.Config) -> None:
    # The Ctrl-C tests (tune, the guide, the distributed client, a killed sweep) expect SIGINT
    # to raise KeyboardInterrupt, as at a terminal. A run started as a background job (CI)
    # begins with SIGINT ignored, which their interrupts, and the child processes they start,
    # would inherit: they would test nothing, or wait out a hung kernel's limit.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# `make gpu-check` starts the side-by-side part (its processes, their imports, their device
# lists: a quarter of a minute on a 16-core GPU host) while the timing tests run alone, and
# names a file here that those remove as they end: the session that hands out the tests waits
# for it before handing out the first.
START_AFTER_ENV = "PYCLPERF_TEST_START_AFTER"
START_AFTER_LIMIT_S = 900.0


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    gate = os.environ.get(START_AFTER_ENV)
    if not gate or os.environ.get("PYTEST_XDIST_WORKER") or session.config.option.collectonly:
        return  # only the session that hands out the tests waits (pytest-xdist's controller)
    import time

    deadline = time.monotonic() + START_AFTER_LIMIT_S
    while os.path.exists(gate):
        if time.monotonic() > deadline:
            raise pytest.UsageError(f"{gate} ({START_AFTER_ENV}) was not removed within "
                                    f"{START_AFTER_LIMIT_S:.0f} s")
        time.sleep(0.05)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The tests that touch an OpenCL device are those that ask for the device under test (the
    # plugin's cl_ctx, through ctx or not): marked ``device``, so that `make gpu-check` (pytest
    # -m device) runs them alone on a GPU after a change to launching or timing.
    for item in items:
        if "cl_ctx" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.device)
    # The longest tests first, by the seconds their ``slow`` mark gives (a stable sort keeps the
    # rest in order): where pytest-xdist hands tests out as processes free up (make gpu-check:
    # --maxschedchunk 1), the longest start first, spread over the processes, and overlap the
    # others instead of ending the run alone. In file order, on the H200 (2026-11-29), the
    # notebooks (24-45 s) started with a tenth of the tests left and ran on 38 s past the rest.
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None, -_slow_seconds(item)))


def _slow_seconds(item: pytest.Item) -> float:
    """The most seconds any ``slow`` mark of the item gives (its own or its parameter's)."""
    return max((float(m.args[0]) for m in item.iter_markers("slow") if m.args), default=0.0)


@pytest.fixture(scope="session")
def ctx(cl_ctx: pyclperf.Context) -> pyclperf.Context:
    """The device under test: pyclperf's own pytest plugin (pyclperf.testing) parametrises
    ``cl_ctx`` over the devices PYCLPERF_TEST_DEVICES selects, one context each per session.
    The verdict on its event clock is taken as it opens (device/clocks.py: measured once per
    device and driver into the user's cache, read from there afterwards): `make gpu-check`
    takes it in the part that has the device to itself, so that tests running side by side
    later read it instead of each judging the clock on a shared device."""
    from pyclperf.device import clocks

    clocks.event_clock(cl_ctx)
    return cl_ctx


@pytest.fixture(scope="session")
def benchmark_script():
    """A loader of the benchmarks/ scripts (not a package) as modules: benchmark_script("name")."""
    import importlib.util
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "benchmarks"

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng()


_PROFILES: dict[tuple[str, bool], tuple] = {}


def _session_profile(ctx: pyclperf.Context, tmp_path_factory: pytest.TempPathFactory,
                     quick: bool) -> tuple:
    """The device's profile (``quick`` or full), measured once per session and device by
    ``pyclperf profile`` into a folder of its own (never the user's cache): (folder, what the
    command printed). Cached here by device rather than by a session scope: the plugin's device
    parameter is a new object for every test, so pytest would measure it again for each."""
    import contextlib
    import io

    from pyclperf import cli

    spec = f"{ctx.info.platform_index}:{ctx.info.device_index}"
    if (spec, quick) not in _PROFILES:
        # pytest-xdist's processes share one base folder: the first to get here measures the
        # profile, under a lock, and the others read what it measured.
        base = tmp_path_factory.getbasetemp()
        shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
        name = f"profiles-{spec.replace(':', '-')}" + ("" if quick else "-full")
        folder = shared / name
        with open(shared / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            printed_file = folder / "printed.txt"
            if not printed_file.exists():
                folder.mkdir(parents=True, exist_ok=True)
                printed = io.StringIO()
                with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(printed):
                    mp.setenv("PYCLPERF_PROFILES", str(folder))
                    mp.setenv("MPLBACKEND", "Agg")
                    assert cli.main(["profile", *(["--quick"] if quick else []),
                                     "--device", spec]) == 0
                printed_file.write_text(printed.getvalue())
        _PROFILES[spec, quick] = (folder, printed_file.read_text())
    return _PROFILES[spec, quick]


@pytest.fixture
def roofline_profiles(ctx: pyclperf.Context, tmp_path_factory: pytest.TempPathFactory):
    """A quick profile of the device under test, measured once per session (_session_profile):
    (folder, what the command printed). Tests that explain kernels read it from there
    (roofline_env)."""
    return _session_profile(ctx, tmp_path_factory, quick=True)


@pytest.fixture
def full_profiles(ctx: pyclperf.Context, tmp_path_factory: pytest.TempPathFactory):
    """The folder of a full profile of the device under test, measured once per session: what
    a user's first ``pyclperf.profile(ctx)`` on a GPU measures (the roofline page's and
    notebook's call), which they then read from the cache, as a user's second run does. Each
    had measured its own side by side on the one GPU; now one measures while the other waits
    (on the H200 the check's wall time did not move: the two start together, and the page's
    test still takes about 61 s of it, the wait included)."""
    return _session_profile(ctx, tmp_path_factory, quick=False)[0]


@pytest.fixture
def roofline_env(roofline_profiles, ctx: pyclperf.Context, monkeypatch: pytest.MonkeyPatch):
    """The session's profile folder as the profile cache, the device under test as default."""
    monkeypatch.setenv("PYCLPERF_PROFILES", str(roofline_profiles[0]))
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return roofline_profiles[0]
