"""Device fixtures. PYCLPERF_TEST_DEVICES picks the devices the suite runs on: unset means the
default device, "all" every device, otherwise a comma-separated list of device specs (index,
"platform:device", "gpu"/"cpu" or a name substring)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import pyclperf


def _test_devices() -> list[pyclperf.DeviceInfo]:
    wanted = os.environ.get("PYCLPERF_TEST_DEVICES", "").strip()
    if not wanted:
        return [pyclperf.select_device(None)]
    if wanted == "all":
        return pyclperf.list_devices()
    return [pyclperf.select_device(spec) for spec in wanted.split(",")]


_DEVICES = _test_devices()
_CONTEXTS: dict[tuple[int, int], pyclperf.Context] = {}


@pytest.fixture(scope="session", params=_DEVICES, ids=lambda d: f"{d.platform_index}:{d.device_index}")
def ctx(request: pytest.FixtureRequest) -> pyclperf.Context:
    """One context per device for the whole session, so each program is built once (PoCL runs
    LLVM on first build)."""
    d = request.param
    key = (d.platform_index, d.device_index)
    if key not in _CONTEXTS:
        _CONTEXTS[key] = pyclperf.Context(d)
    return _CONTEXTS[key]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng()


@pytest.fixture
def gpu_ctx(ctx: pyclperf.Context) -> pyclperf.Context:
    if not ctx.info.is_gpu:
        pytest.skip(f"needs a GPU; the device under test is {ctx.info.type} '{ctx.info.name}'")
    return ctx
