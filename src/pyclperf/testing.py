"""pytest support: device-parametrised fixtures and a kernel-checking assertion.

Installed as a pytest plugin (entry point ``pyclperf``), so any project's tests can ask for
``cl_ctx`` (one context per selected device, built once per session) and call
``assert_kernel``. PYCLPERF_TEST_DEVICES selects devices: unset means the default device,
"all" every device, otherwise a comma-separated list of specs (index, "platform:device",
"gpu"/"cpu" or a name substring).
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np
import pytest

ENV_VAR = "PYCLPERF_TEST_DEVICES"
_contexts: dict[tuple[int, int], Any] = {}


def selected_devices() -> list[Any]:
    import pyclperf

    wanted = os.environ.get(ENV_VAR, "").strip()
    if not wanted:
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
    if "cl_ctx" in metafunc.fixturenames:
        devices = selected_devices()
        metafunc.parametrize("cl_device", devices, ids=[f"{d.platform_index}:{d.device_index}" for d in devices],
                             scope="session")


@pytest.fixture(scope="session")
def cl_ctx(cl_device: Any) -> Any:
    """A pyclperf.Context on each device selected by PYCLPERF_TEST_DEVICES."""
    return context_for(cl_device)


def assert_kernel(
    ctx: Any,
    source: str,
    kernel_name: str,
    args: Sequence[Any],
    expected: Sequence[Any],
    global_size: Any,
    local_size: Any = None,
    *,
    defines: dict[str, Any] | None = None,
    options: str = "",
    rtol: float = 1e-5,
    atol: float = 1e-8,
    poison: bool | Sequence[int | str] = True,
    inout: Sequence[int | str] = (),
) -> list[Any]:
    """Run a kernel once and assert its outputs match ``expected`` (parallel to ``args``; None
    where unchecked). The launch runs as tune() runs a configuration: arrays checked against
    the kernel's declared types, placed in padded and guarded buffers, checked outputs poisoned
    first (unless ``poison`` says otherwise). Returns the arguments with arrays read back."""
    from .engine.measure import ConfigFailed, Job, verified_launch
    from .engine.space import Geometry
    from .engine.verification import Verification

    if len(expected) != len(args):
        raise ValueError(f"expected has {len(expected)} entries for {len(args)} arguments")
    dims = _dims(global_size)
    local = None if local_size is None else _dims(local_size)
    job = Job(ctx, source, kernel_name, list(args),
              Geometry(tuple(dims), global_size=lambda c: dims, local_size=local),
              Verification(list(expected), rtol=rtol, atol=atol), options, poison=poison,
              inout=list(inout))
    try:
        verified_launch(job, dict(defines or {}), {})
        return job.arguments.outputs()
    except ConfigFailed as exc:
        raise AssertionError(f"kernel '{kernel_name}': {exc.status}: {exc}") from None
    finally:
        job.arguments.release()


def _dims(value: Any) -> list[int]:
    """A size given as one number or a sequence, as a list of ints."""
    items: Sequence[Any] = value if isinstance(value, (list, tuple)) else [value]
    return [int(v) for v in items]
