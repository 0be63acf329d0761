"""What tune() and run_kernel() share before anything runs: the source, the harness checks on
the arguments, the build options, and the worker process a job is sent to."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..device.sources import load_source  # noqa: F401  (tune and run_kernel take it from here)
from . import supervisor
from .measure import Job


def static_checks(args: Sequence[Any]) -> None:
    """Harness mistakes in the arguments themselves, before anything touches the device."""
    from ..device.argtypes import check_plain_array

    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            check_plain_array(i, a)
        elif isinstance(a, (list, tuple)):
            raise TypeError(f"argument {i} is a {type(a).__name__}: pass a NumPy array "
                            "(np.asarray(values, dtype=...)) so its element type is explicit")


def options_text(options: str | Sequence[str], compiler_options: Sequence[str] | None) -> str:
    parts = [options] if isinstance(options, str) else list(options)
    parts += list(compiler_options or [])
    return " ".join(p for p in parts if p)



# A configuration's time limit grows by this when it is first run on Oclgrind (check="memory").
MEMCHECK_ALLOWANCE_S = 120.0


def supervise(job: Job, ctx: Any, memory_limit: int | None = None) -> supervisor.Supervisor:
    """A supervisor for ``job`` on ``ctx``'s device (the default device when None), the job
    serialised for its workers, each of which may hold ``memory_limit`` bytes (ceiling.py)."""
    from .remote import JobSpec

    job.forget_args()
    sup = supervisor.checkout(supervisor.device_spec(ctx), memory_limit)
    if job.check == "memory":  # each configuration runs on Oclgrind first: slow by design
        sup.allowance_s = MEMCHECK_ALLOWANCE_S
    try:
        sup.load(JobSpec.of(job, "").fields)
    except BaseException:
        supervisor.checkin(sup)
        raise
    return sup


def check_kind(check: str | None) -> str | None:
    """tune()'s and run_kernel()'s ``check``: None, or "memory" where Oclgrind is installed."""
    if check not in (None, "memory"):
        raise ValueError(f"check={check!r}: the one check there is is check=\"memory\" (Oclgrind)")
    if check == "memory":
        from ..device.oclgrind import library_or_raise

        library_or_raise()  # not installed: say so now, not in every row
    return check
