"""pytest support: a kernel-checking assertion, beside the ``cl_ctx`` fixture.

The fixture comes from pyclperf's pytest plugin (the ``pyclperf_pytest`` module, entry point
``pyclperf``), loaded by pytest wherever pyclperf is installed: any project's tests can ask for
``cl_ctx`` (one context per selected device, built once per session) and call
``assert_kernel``. PYCLPERF_TEST_DEVICES (or PyOpenCL's PYOPENCL_TEST) selects the devices.
The plugin is a separate module so that sessions which never use it import nothing of pyclperf.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from pyclperf_pytest import ENV_VAR, context_for, selected_devices  # noqa: F401  (public before)


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
