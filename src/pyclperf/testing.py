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
    poison: bool | Sequence[int] = True,
) -> list[Any]:
    """Run a kernel once and assert its outputs match ``expected`` (parallel to ``args``; None
    where unchecked). Checked outputs are poisoned first unless ``poison`` says otherwise.
    Returns the arguments with arrays read back."""
    from .tuner import Verification, _Bound, KernelSpec, check_outputs

    if len(expected) != len(args):
        raise ValueError(f"expected has {len(expected)} entries for {len(args)} arguments")
    spec = KernelSpec(source, kernel_name, (1,), list(args), options)
    bound = _Bound(ctx, spec)
    checked = [i for i, e in enumerate(expected) if e is not None]
    bound.poison(checked if poison is True else [] if poison is False else list(poison))
    kernel = ctx.program(source, defines=defines, options=options).kernel(kernel_name)
    kernel.set_args(*bound.device)
    kernel.run(global_size, local_size)
    ok, detail = check_outputs(bound, Verification(list(expected), rtol, atol))
    assert ok, f"kernel '{kernel_name}': {detail}"
    return [bound.fetch(i) if isinstance(a, np.ndarray) else a for i, a in enumerate(args)]
