"""pyclperf's pytest plugin (entry point ``pyclperf``): the ``cl_ctx`` fixture.

pytest loads every installed plugin into every session on the machine, so this module lives
outside the ``pyclperf`` package (importing ``pyclperf.anything`` would run pyclperf's
``__init__``, which loads OpenCL, numpy and pandas) and imports nothing but pytest until a test
asks for ``cl_ctx``. ``pyclperf.testing`` holds the helpers tests call (``assert_kernel``).

Devices: PYCLPERF_TEST_DEVICES, else PyOpenCL's PYOPENCL_TEST (its syntax, see
``pyclperf.device.devices.pyopencl_test``), else the default device. PYCLPERF_TEST_DEVICES is "all"
or a comma-separated list of pyclperf device specs (index, "platform:device", "gpu"/"cpu" or a
name substring).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

ENV_VAR = "PYCLPERF_TEST_DEVICES"
PYOPENCL_TEST = "PYOPENCL_TEST"
_contexts: dict[tuple[int, int], Any] = {}


def selected_devices() -> list[Any]:
    import pyclperf
    from pyclperf.device.devices import pyopencl_test

    wanted = os.environ.get(ENV_VAR, "").strip()
    if not wanted:
        theirs = os.environ.get(PYOPENCL_TEST, "").strip()
        if theirs:
            return pyopencl_test(theirs, pyclperf.list_devices())
        return [pyclperf.select_device(None)]
    if wanted == "all":
        return pyclperf.list_devices()
    return [pyclperf.select_device(spec.strip()) for spec in wanted.split(",") if spec.strip()]


def context_for(device: Any) -> Any:
    """One shared Context per device, so programs are built once per session."""
    import pyclperf

    key = (device.platform_index, device.device_index)
    if key not in _contexts:
        _contexts[key] = pyclperf.Context(device)
    return _contexts[key]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # Only tests that use the fixture (directly or through another fixture) touch OpenCL.
    if "cl_ctx" in metafunc.fixturenames:
        devices = selected_devices()
        metafunc.parametrize("cl_device", devices, ids=[f"{d.platform_index}:{d.device_index}" for d in devices],
                             scope="session")


@pytest.fixture(scope="session")
def cl_ctx(cl_device: Any) -> Any:
    """A pyclperf.Context on each device selected by PYCLPERF_TEST_DEVICES (or PYOPENCL_TEST)."""
    return context_for(cl_device)
