"""The experiment catalogue: one class per experiment id, found by discovery, run through one
engine (base.py holds the contract)."""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import pkgutil
from typing import Any

from ..measure.results import Results
from ._kit import DEFAULT_LOCAL_SIZE
from .base import _REGISTRY, Check, Experiment, Launch, Sweep, run_experiment

# Discovery: every module of this package is imported, and every class with an ``id`` registers
# itself as it is defined (Sweep.__init_subclass__). Adding an experiment is one module here (plus
# its kernels/<id>.cl and its test): no list to edit.
for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")

REGISTRY: dict[str, type[Sweep]] = _REGISTRY


def names() -> list[str]:
    return sorted(REGISTRY)


def catalogue() -> list[type[Sweep]]:
    """Every registered experiment in catalogue order (each class's ``order``, then its id)."""
    return sorted(REGISTRY.values(), key=lambda cls: (cls.order, cls.id))


def catalogue_markdown() -> str:
    """The experiment list of the documentation's catalogue: one line per experiment, from
    its own description (``python -m pyclperf.experiments`` prints it)."""
    return "\n".join(f"- `{cls.id}`: {cls.description}." for cls in catalogue())


def get(name: str) -> type[Sweep]:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown experiment {name!r}; available: {', '.join(names())}") from None


def run(
    name: str,
    ctx: Any = None,
    *,
    size: int | None = None,
    local_size: int | None = None,
    values: list[int] | None = None,
    warmup: int = 3,
    repeats: int | None = None,
    method: str = "auto",
    verify: bool = True,
    out: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    min_time_s: float | None = None,
    policy: str = "default",
    peak_gbps: float | None = None,
    memory_clock_mhz: float | None = None,
    bus_width_bits: int | None = None,
    pcie_gbps: float | None = None,
    cold: bool = False,
    cold_check: bool = False,
    lock_clocks: bool = False,
    quick: bool = False,
    **options: Any,
) -> Results:
    """Run experiment ``name`` on ``ctx`` (default: pyclperf.Context()) and return its Results.

    ``size`` is the problem size (work-items for kernel sweeps, bytes for transfers: see each
    experiment), ``local_size`` the work-group size (default DEFAULT_LOCAL_SIZE where the
    experiment takes one; refused where it does not), ``values`` the swept parameter's values
    (default: the experiment's), ``out`` a JSON-lines file written as points finish,
    ``repeats`` the least number of timed launches per point and ``min_time_s`` their least total
    time (defaults: ``policy``'s), ``policy`` the adaptive timing rule (measure.timing_policy:
    "default", "thorough" or "quick"), ``method`` the clock: "auto" (events where the device's event clock passes
    its check, else the host clock; pyclperf.device.clocks), "events" or "host". ``peak_gbps``, ``memory_clock_mhz`` with ``bus_width_bits``, and
    ``pcie_gbps`` override the theoretical ceilings NVML would give (``fraction_of_peak``);
    ``options`` go to the experiment's constructor. ``cold`` flushes the last-level cache
    before every timed launch; ``cold_check`` measures again cold the cache-resident points
    the guide's source figure uses (``meta["warm_cold"]``; experiments/_warmcold.py).
    ``lock_clocks`` holds the GPU's clocks at their maxima for the run where the driver allows
    it, and restores them (``meta["clock_lock"]`` says what happened; device/clock_lock.py).
    ``quick`` takes the experiment's quick sizes on this device (``Sweep.quick_options``:
    smaller sizes or fewer points where its verdict does not need the defaults), under the
    options given here; ``meta["quick_options"]`` records what they changed. The timing stays
    ``policy``'s (``pyclperf run --quick`` also asks for the "quick" policy).

    Ctrl-C returns the finished points with ``meta["interrupted"]`` (``out`` records it too).
    A full disk (or an ``out`` that cannot be written) stops the sweep with ResultsWriteError:
    ``out`` keeps every whole row written, and the error's ``results`` holds the same rows.
    """
    from ..device.clock_lock import locked_clocks
    from ..device.context import Context
    from ..device.peak import theoretical

    cls = get(name)
    _refuse_unknown(cls, options)
    ctx = Context() if ctx is None else ctx
    smaller = cls.quick_options(ctx.info) if quick else {}
    knobs = {"size": size, "local_size": local_size, "values": values}
    given = set(options) | {getattr(cls, f"{k}_arg") for k, v in knobs.items() if v is not None}
    smaller = {k: v for k, v in smaller.items() if k not in given}
    options = {**smaller, **options}
    peak = theoretical(ctx, peak_gbps=peak_gbps, memory_clock_mhz=memory_clock_mhz,
                       bus_width_bits=bus_width_bits, pcie_gbps=pcie_gbps)
    experiment = cls.configure(ctx, size=size, local_size=local_size, values=values, **options)
    with locked_clocks(ctx.info, lock_clocks) as lock:
        results = run_experiment(experiment, warmup=warmup, repeats=repeats, method=method,
                                 verify=verify, out=out, progress=progress, peak=peak,
                                 min_time_s=min_time_s, policy=policy, cold=cold)
    results.meta.update(lock)
    if quick:
        results.meta["quick_options"] = {k: _plain(v) for k, v in smaller.items()}
    rewrite = bool(lock) or quick  # the streamed file's first line predates what follows the run
    # Only an Experiment has kernel launches of its own to time cold.
    if cold_check and not cold and isinstance(experiment, Experiment) and \
            not results.meta.get("interrupted"):
        from ._warmcold import cold_check as check

        # The counts the run resolved from its timing policy (the arguments may be None).
        found = check(experiment, results, warmup=results.meta.get("warmup", warmup),
                      repeats=results.meta.get("repeats", repeats),
                      method=results.meta.get("method", method))
        if found is not None:
            results.meta["warm_cold"] = found
            rewrite = True
    if rewrite and out is not None:
        results.to_json(out)
    return results


def _plain(value: Any) -> Any:
    """A quick option as JSON holds it (a tuple of sizes as a list)."""
    return list(value) if isinstance(value, tuple) else value


@functools.lru_cache(maxsize=None)
def _options_of(cls: type[Sweep]) -> tuple[str, ...] | None:
    """The keyword options cls's constructor takes; None where it takes any (**kwargs).
    Cached: inspect.signature costs ~0.1 ms, on every pyclperf.run."""
    params = inspect.signature(cls.__init__).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return None
    return tuple(p for p in params if p not in ("self", "ctx"))


def _refuse_unknown(cls: type[Sweep], options: dict[str, Any]) -> None:
    """An option the experiment's constructor does not take, named with the experiment (not as
    a TypeError from some class's __init__)."""
    known = _options_of(cls)
    if known is None:
        return
    unknown = sorted(set(options) - set(known))
    if unknown:
        from .. import _core

        raise _core.InvalidArgumentError(
            f"experiment {cls.id!r} takes no option {', '.join(map(repr, unknown))}; "
            f"its options: {', '.join(known) or 'none'}")


__all__ = ["Check", "DEFAULT_LOCAL_SIZE", "Experiment", "Launch", "REGISTRY", "Sweep", "catalogue",
           "catalogue_markdown", "get", "names", "run", "run_experiment"]
