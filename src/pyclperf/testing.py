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
    atol: float | None = None,
    poison: bool | Sequence[int | str] = True,
    inout: Sequence[int | str] = (),
    isolate: bool = True,
    timeout: float | None = None,
    memory_limit: int | str | None = None,
) -> list[Any]:
    """Run a kernel once and assert its outputs match ``expected`` (parallel to ``args``; None
    where unchecked). The launch runs as tune() runs a configuration: arrays checked against
    the kernel's declared types, placed in padded and guarded buffers, checked outputs poisoned
    first (unless ``poison`` says otherwise), and, unless ``isolate=False``, in a worker
    process, so a kernel that crashes, hangs (past ``timeout`` seconds) or allocates past
    ``memory_limit`` (see tune()) fails the assertion instead of the test session. The
    assertion's message is one line: the status and its cause, as run_kernel says it. Returns
    the arguments with arrays read back."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's insides
    from .tuner.measure import ConfigFailed, Job, verified_launch
    from .tuner.space import Geometry
    from .tuner.verification import Verification

    if len(expected) != len(args):
        raise ValueError(f"expected has {len(expected)} entries for {len(args)} arguments")
    dims = _dims(global_size)
    local = None if local_size is None else _dims(local_size)
    job = Job(None if isolate else ctx, source, kernel_name, list(args),
              Geometry(tuple(dims), global_size=lambda c: dims, local_size=local),
              Verification(list(expected), rtol=rtol, atol=atol), options, poison=poison,
              inout=list(inout))
    if isolate:
        from .tuner.run import supervised_call

        def failure(status: str, message: str) -> AssertionError:
            return AssertionError(f"kernel '{kernel_name}': {status}: {message}")

        from .tuner.ceiling import parse_limit

        return supervised_call(job, ctx, "check", dict(defines or {}), timeout, failure,
                               parse_limit(memory_limit))
    try:
        judged: list[Any] = []
        verified_launch(job, dict(defines or {}), {}, judged)
        return judged
    except ConfigFailed as exc:
        raise AssertionError(f"kernel '{kernel_name}': {exc.status}: {exc}") from None
    finally:
        job.arguments.release()


def _dims(value: Any) -> list[int]:
    """A size given as one number or a sequence, as a list of ints."""
    items: Sequence[Any] = value if isinstance(value, (list, tuple)) else [value]
    return [int(v) for v in items]
