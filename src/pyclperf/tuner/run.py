"""run_kernel(): one configuration of a user's kernel, run once in guarded buffers (in a
worker process by default), its outputs back or an exception that says what went wrong."""

from __future__ import annotations

import os
from typing import Any, Callable, Mapping, Sequence

from ..measure.results import INVALID, LAUNCH_FAILED, OUT_OF_BOUNDS, OUT_OF_MEMORY, TIMEOUT
from . import supervisor
from .ceiling import parse_limit
from .inputs import check_kind, load_source, options_text, static_checks, supervise
from .measure import Job, KernelRunError, run_once
from .space import Config, Divisor, Geometry
from .verification import Verification


def run_kernel(
    source: str | os.PathLike[str],
    kernel_name: str,
    problem_size: int | Sequence[int] | Callable[[Config], Any],
    args: Sequence[Any],
    params: Mapping[str, Any] | None = None,
    *,
    ctx: Any = None,
    options: str | Sequence[str] = "",
    global_size: Callable[[Config], Sequence[int]] | None = None,
    grid_div_x: Divisor = None,
    grid_div_y: Divisor = None,
    grid_div_z: Divisor = None,
    block_size_names: Sequence[str] | None = None,
    inout: Sequence[int | str] = (),
    isolate: bool = True,
    timeout: float | None = None,
    check: str | None = None,
    memory_limit: int | str | None = None,
) -> list[Any]:
    """Build and run one configuration once, inside padded and guarded buffers; return the
    arguments with arrays read back. A write past an array's end, a refused launch, a crash,
    a hang past ``timeout`` seconds or a wrong argument raises KernelRunError (its ``status``
    as tune's rows say) or an exception that names the argument. As in tune(), the kernel runs
    in a worker process unless ``isolate=False``, which may hold ``memory_limit`` bytes (see
    tune()); ``check="memory"`` runs the launch on Oclgrind first (see tune())."""
    from ..device.context import Context

    limit = parse_limit(memory_limit)
    if not isolate:
        ctx = Context() if ctx is None else ctx
    else:
        supervisor.prestart(supervisor.device_spec(ctx), limit)
    static_checks(args)
    job = Job(ctx if not isolate else None, load_source(source), kernel_name, list(args),
              Geometry(problem_size, global_size, (grid_div_x, grid_div_y, grid_div_z),
                       block_size_names or ("block_size_x", "block_size_y", "block_size_z")),
              Verification(), options_text(options, None), inout=list(inout),
              check=check_kind(check))
    if isolate:
        return supervised_call(job, ctx, "run_once", dict(params or {}), timeout,
                               lambda status, message: KernelRunError(status, message), limit)
    try:
        return run_once(job, dict(params or {}))
    finally:
        job.arguments.release()


def supervised_call(job: Job, ctx: Any, kind: str, config: Config, timeout: float | None,
                    failure: Callable[[str, str], BaseException],
                    memory_limit: int | None = None) -> Any:
    """One request about one configuration in a worker: its outputs, or ``failure(status,
    message)`` raised for a refusal, a crash or a timeout."""
    __tracebackhide__ = True  # under pytest (assert_kernel): the failure, not these insides
    sup = supervise(job, ctx, memory_limit)
    try:
        reply = sup.run(kind, config, timeout, lambda status, why: ("failed", status, why))
        if reply[0] == "outputs":
            return reply[1]
        if reply[0] == "failed":
            if reply[1] in (LAUNCH_FAILED, OUT_OF_BOUNDS, OUT_OF_MEMORY):  # may be damaged
                sup.retire()
            raise failure(reply[1], reply[2])
        if reply[0] == "timeout":
            raise failure(TIMEOUT, reply[1])
        raise failure(INVALID, f"the worker process could not run it: {reply[1]}")
    finally:
        sup.close()
        supervisor.checkin(sup)
