"""tune()'s options, grouped by what they decide: how a configuration is built and launched,
how its outputs are checked, how it is timed, how the search picks configurations, where and
how safely it runs, and where the rows go.

Each group is a small frozen dataclass whose defaults are tune()'s, checked when made, so a
mistake is a one-line error at the call that makes it::

    tune(src, "copy", n, [dst, src_arr], {"block_size_x": [64, 128, 256]},
         verify=Verify(answer=[src_arr, None]),
         timing=Timing(min_time=0.05),
         search=Search("auto", max_fevals=50, seed=1),
         execution=Execution(timeout=30),
         out="copy.jsonl")

Kernel Tuner's flat names (answer=, strategy=, grid_div_x=, ...) stay those of
``pyclperf.tune_kernel``, which fills these groups.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ..measure import timing_policy
from .space import Config, Divisor


def _one_of(value: Any, allowed: Sequence[str], what: str) -> None:
    if value not in allowed:
        raise ValueError(f"{what} must be one of {', '.join(map(repr, allowed))}, not {value!r}")


def _count(value: Any, what: str, *, none: bool = False, least: int = 0) -> None:
    if value is None and none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{what} must be an integer of at least {least}, not {value!r}")


def _seconds(value: Any, what: str, *, none: bool = False) -> None:
    if value is None and none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"{what} must be a non-negative number of seconds, not {value!r}")


@dataclass(frozen=True)
class Launch:
    """How each configuration is built and launched. ``options``: compiler options (a string or
    a list). The global size is the problem size divided by ``grid_div_x/y/z`` (default: the
    block size), rounded up, times the block size (Kernel Tuner's rule), or
    ``global_size(config)``; ``block_size_names`` name the parameters that set the work-group
    (default block_size_x/y/z; a name may repeat, ``["TS", "TS"]``)."""

    options: str | Sequence[str] = ""
    global_size: Callable[[Config], Sequence[int]] | None = None
    grid_div_x: Divisor = None
    grid_div_y: Divisor = None
    grid_div_z: Divisor = None
    block_size_names: Sequence[str] | None = None

    def __post_init__(self) -> None:
        if self.global_size is not None and not callable(self.global_size):
            raise TypeError(f"Launch.global_size must be a function of the configuration, "
                            f"not {type(self.global_size).__name__}")


@dataclass(frozen=True)
class Verify:
    """How outputs are checked: ``answer`` (parallel to args, None where unchecked),
    ``reference(config, *args)`` returning such a list, and/or ``verify(config, outputs)`` ->
    bool or (bool, why). Floats pass within ``atol + rtol * |want|`` (``atol`` defaults to
    ``rtol`` times the answer's median ``|value|``). Checked outputs are ``poison``-ed first
    (True, False, or indices/names); ``inout`` arguments are restored before every launch."""

    answer: Sequence[Any] | None = None
    reference: Callable[..., Sequence[Any]] | None = None
    verify: Callable[[Config, list[Any]], Any] | None = None
    rtol: float = 1e-5
    atol: float | None = None
    poison: bool | Sequence[int | str] = True
    inout: Sequence[int | str] = ()

    def __post_init__(self) -> None:
        for name in ("reference", "verify"):
            f = getattr(self, name)
            if f is not None and not callable(f):
                raise TypeError(f"Verify.{name} must be a function, not {type(f).__name__}")
        if isinstance(self.answer, (str, bytes)):
            raise TypeError("Verify.answer must be a list parallel to the arguments, not a string")


@dataclass(frozen=True)
class Timing:
    """How each configuration is timed: ``warmup`` launches first, then at least
    ``min_repeats`` adding up to ``min_time`` seconds, more until the 95% interval on the
    median is within 1%, at most ``max_repeats`` (``iterations`` fixes the count, as Kernel
    Tuner's does). ``method``: the clock ("auto", "events", "host"). ``cold``: flush the caches
    before every timed launch. ``lock_clocks``: hold the GPU's clocks at their maxima where the
    driver allows. ``reset_outputs``: restore the outputs before every timed launch."""

    warmup: int = 3
    min_time: float = timing_policy.MIN_TIME_S
    min_repeats: int = timing_policy.MIN_SAMPLES
    max_repeats: int = timing_policy.MAX_SAMPLES
    iterations: int | None = None
    method: str = "auto"
    cold: bool = False
    lock_clocks: bool = False
    reset_outputs: bool = False

    def __post_init__(self) -> None:
        _count(self.warmup, "Timing.warmup")
        _seconds(self.min_time, "Timing.min_time")
        _count(self.min_repeats, "Timing.min_repeats", least=1)
        _count(self.max_repeats, "Timing.max_repeats", least=1)
        _count(self.iterations, "Timing.iterations", none=True, least=1)
        from ..device.clocks import check_method
        check_method(self.method)


@dataclass(frozen=True)
class Search:
    """How configurations are picked: ``strategy`` (any of tuner.strategies.STRATEGIES;
    "auto" measures everything that fits the budget, else searches by a model) with Kernel
    Tuner's ``options`` for it, within ``max_fevals`` evaluations and ``time_limit`` seconds,
    reproducible from ``seed``. ``objective``: the row field minimised ("time", a metric), or
    several for a Pareto front; ``higher_is_better`` for each."""

    strategy: str = "auto"
    options: Mapping[str, Any] | None = None
    max_fevals: int | None = None
    time_limit: float | None = None
    seed: int | None = None
    objective: str | Sequence[str] = "time"
    higher_is_better: bool | Sequence[bool] | None = None

    def __post_init__(self) -> None:
        from .strategies import NAMES

        _one_of(self.strategy, NAMES, "Search.strategy")
        if self.options is not None and not isinstance(self.options, Mapping):
            raise TypeError(f"Search.options must be a dict of the strategy's options, not "
                            f"{type(self.options).__name__}")
        _count(self.max_fevals, "Search.max_fevals", none=True)
        _seconds(self.time_limit, "Search.time_limit", none=True)
        _count(self.seed, "Search.seed", none=True)


@dataclass(frozen=True)
class Execution:
    """Where and how safely configurations run. By default (``isolate=True``) in a worker
    process, so a configuration that crashes, corrupts memory or hangs costs its own row:
    ``timeout`` seconds a configuration (default 10x the slowest so far, at least 30),
    ``memory_limit`` bytes or "2G" a worker may hold (default 75% of what is available).
    ``devices="all"`` or a list, or a Dask ``client``: a sweep over several devices.
    ``check="memory"``: each launch first on Oclgrind. ``pinned``: host arrays in pinned
    memory. ``progress``: a progress bar (default: at a terminal or in a notebook)."""

    isolate: bool = True
    timeout: float | None = None
    memory_limit: int | str | None = None
    devices: Any = None
    client: Any = None
    check: str | None = None
    pinned: bool = False
    progress: bool | None = None

    def __post_init__(self) -> None:
        if self.timeout is not None and (isinstance(self.timeout, bool) or not isinstance(
                self.timeout, (int, float)) or not self.timeout > 0):
            raise ValueError(f"Execution.timeout must be a positive number of seconds, not "
                             f"{self.timeout!r}")


@dataclass(frozen=True)
class Output:
    """Where rows go: ``path``, a JSON-lines file written as configurations finish (with
    ``resume``, an existing file of the same run continues); ``cache``, the same rows in Kernel
    Tuner's cache format."""

    path: str | os.PathLike[str] | None = None
    resume: bool = True
    cache: str | os.PathLike[str] | None = None


@dataclass(frozen=True)
class Replay:
    """A recorded run to search instead of measuring (tuner/replay.py): ``path`` a Kernel Tuner
    cache (gzipped too) or T4 file; a configuration it lacks is an error (``missing="error"``)
    or a skipped row (``missing="skip"``)."""

    path: str | os.PathLike[str]
    missing: str = "error"

    def __post_init__(self) -> None:
        _one_of(self.missing, ("error", "skip"), "Replay.missing")


GROUPS = {"launch": Launch, "verify": Verify, "timing": Timing, "search": Search,
          "execution": Execution}


def group(value: Any, cls: type, name: str) -> Any:
    """``value`` as a ``cls``: None gives the defaults; anything but a ``cls`` is a TypeError
    naming the keyword (a search may also be given as the strategy's name, an output or a
    replay as a path)."""
    if value is None:
        return cls() if cls is not Replay else None
    if isinstance(value, cls):
        return value
    if cls is Search and isinstance(value, str):
        return Search(value)
    if cls in (Output, Replay) and isinstance(value, (str, os.PathLike)):
        return cls(value)
    extra = {Search: " or a strategy name", Output: " or a path", Replay: " or a path"}.get(cls, "")
    raise TypeError(f"{name}= takes pyclperf.{cls.__name__}(...){extra}, not "
                    f"{type(value).__name__} (see pyclperf.tuner.options)")


# Kernel Tuner's and pyclperf's former flat keywords -> (group keyword, field).
FLAT = {
    "options": ("launch", "options"), "compiler_options": ("launch", "options"),
    "global_size": ("launch", "global_size"), "grid_div_x": ("launch", "grid_div_x"),
    "grid_div_y": ("launch", "grid_div_y"), "grid_div_z": ("launch", "grid_div_z"),
    "block_size_names": ("launch", "block_size_names"),
    "answer": ("verify", "answer"), "reference": ("verify", "reference"),
    "verify": ("verify", "verify"), "rtol": ("verify", "rtol"), "atol": ("verify", "atol"),
    "poison": ("verify", "poison"), "inout": ("verify", "inout"),
    "warmup": ("timing", "warmup"), "min_time": ("timing", "min_time"),
    "min_repeats": ("timing", "min_repeats"), "max_repeats": ("timing", "max_repeats"),
    "iterations": ("timing", "iterations"), "method": ("timing", "method"),
    "cold": ("timing", "cold"), "lock_clocks": ("timing", "lock_clocks"),
    "reset_outputs": ("timing", "reset_outputs"),
    "strategy": ("search", "strategy"), "strategy_options": ("search", "options"),
    "max_fevals": ("search", "max_fevals"), "time_limit": ("search", "time_limit"),
    "seed": ("search", "seed"), "objective": ("search", "objective"),
    "objective_higher_is_better": ("search", "higher_is_better"),
    "isolate": ("execution", "isolate"), "timeout": ("execution", "timeout"),
    "memory_limit": ("execution", "memory_limit"), "devices": ("execution", "devices"),
    "client": ("execution", "client"), "check": ("execution", "check"),
    "pinned": ("execution", "pinned"), "progress": ("execution", "progress"),
    "out": ("output", "path"), "resume": ("output", "resume"), "cache": ("output", "cache"),
    "replay": ("replay", "path"), "replay_missing": ("replay", "missing"),
}


def from_flat(flat: Mapping[str, Any]) -> dict[str, Any]:
    """tune()'s keywords from flat ones (a spec file's keys, tune_kernel's translation): the
    grouped ones made into their objects, the rest (restrictions, metrics, ctx, ...) as given."""
    out: dict[str, Any] = {}
    parts: dict[str, dict[str, Any]] = {}
    for key, value in flat.items():
        if key == "tune_params":            # Kernel Tuner's name for them
            key = "params"
        if key in FLAT:
            where, name = FLAT[key]
            parts.setdefault(where, {})[name] = value
        else:
            out[key] = value
    for where, values in parts.items():
        if where == "output":
            out["out"] = Output(**values)
        elif where == "replay":
            if values.get("path") is not None:
                out["replay"] = Replay(**values)
        else:
            out[where] = GROUPS[where](**values)
    return out


def to_flat(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """from_flat's inverse: tune()'s keywords with every group spread into the flat names
    (what a dry run shows, what a test of a translation compares)."""
    back = {(where, name): flat for flat, (where, name) in FLAT.items()
            if flat not in ("compiler_options",)}
    out: dict[str, Any] = {}
    for key, value in kwargs.items():
        where = "output" if key == "out" else key
        if isinstance(value, (Launch, Verify, Timing, Search, Execution, Output, Replay)):
            for name in value.__dataclass_fields__:
                out[back[(where, name)]] = getattr(value, name)
        elif key in ("out", "replay") and value is not None:
            out[key] = value
        else:
            out[key] = value
    return out


__all__ = ["Launch", "Verify", "Timing", "Search", "Execution", "Output", "Replay", "from_flat",
           "to_flat"]
