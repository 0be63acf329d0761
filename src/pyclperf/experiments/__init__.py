"""The experiment catalogue: one class per id of EXPERIMENTS.md, run through one engine."""

from __future__ import annotations

import os
from typing import Any

from ..results import Results
from .base import Experiment, run_experiment
from .coalescing import OffsetCopy, StrideCopy

REGISTRY: dict[str, type[Experiment]] = {cls.id: cls for cls in (OffsetCopy, StrideCopy)}


def names() -> list[str]:
    return sorted(REGISTRY)


def get(name: str) -> type[Experiment]:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown experiment {name!r}; available: {', '.join(names())}") from None


def run(
    name: str,
    ctx: Any = None,
    *,
    size: int | None = None,
    local_size: int = 256,
    values: list[int] | None = None,
    warmup: int = 3,
    repeats: int = 20,
    method: str = "events",
    verify: bool = True,
    out: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
) -> Results:
    """Run experiment ``name`` on ``ctx`` (default: pyclperf.Context()) and return its Results.

    ``size`` is the number of work-items (default: per device kind), ``values`` the swept
    parameter's values (default: the experiment's), ``out`` a JSON-lines file written as points
    finish.
    """
    from ..context import Context

    cls = get(name)
    ctx = Context() if ctx is None else ctx
    kwargs: dict[str, Any] = {"items": size, "local_size": local_size}
    if values is not None:
        kwargs["values"] = values
    experiment = cls(ctx, **kwargs)
    return run_experiment(experiment, warmup=warmup, repeats=repeats, method=method,
                          verify=verify, out=out, progress=progress)


__all__ = ["Experiment", "REGISTRY", "get", "names", "run", "run_experiment"]
