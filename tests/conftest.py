"""Fixtures of the project's own tests, on top of the pyclperf pytest plugin (pyclperf.testing).
PYCLPERF_TEST_DEVICES picks the devices: unset means the default device, "all" every device,
otherwise a comma-separated list of device specs."""

from __future__ import annotations

import numpy as np
import pytest

import pyclperf


@pytest.fixture(scope="session")
def ctx(cl_ctx: pyclperf.Context) -> pyclperf.Context:
    """The device under test: pyclperf's own pytest plugin (pyclperf.testing) parametrises
    ``cl_ctx`` over the devices PYCLPERF_TEST_DEVICES selects, one context each per session."""
    return cl_ctx


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng()
