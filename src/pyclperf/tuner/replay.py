"""tune(..., replay=PATH): a search replayed from a recorded run instead of measured.

The strategy sees the times a file recorded (a Kernel Tuner cache, gzipped or not, or a T4
results file: tuner.recording) for the configurations it asks for; no device is opened and
nothing is built, so a script written for CUDA or HIP replays too. Each row says it was
replayed (``replayed`` True, status "replayed" where the file holds a time, else the failure it
recorded): a replayed time is never called measured, and ``Results.best`` lets replayed rows
compete only in a replayed run. The budget counts unique evaluations, and a time limit counts
the compile, verification and benchmark time the file recorded for each configuration, as
Kernel Tuner's simulation mode counts it (``meta["simulated_time_s"]``).

A configuration the file lacks is an error naming it (``missing="error"``), or a "skipped" row
saying so (``missing="skip"``), which costs no evaluation.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import time
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..measure.results import SKIPPED, Results
from ..measure.sweep import RowStream, package_versions
from .objectives import Objectives
from .recording import Recording
from .searchspace import Space
from .space import Config, config_key

MISSING = ("error", "skip")
REPLAYED = "replayed"


@lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int, size: int) -> Recording:
    return Recording(path)


def load(path: str | os.PathLike[str]) -> Recording:
    """The recording at ``path``, read once per process while the file is unchanged (a
    benchmark replays one file many times)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"replay: no file {str(p)!r}")
    st = p.stat()
    return _load(str(p.resolve()), st.st_mtime_ns, st.st_size)


class MissingConfig(KeyError):
    """A configuration the strategy asked for is not in the replayed file."""

    def __str__(self) -> str:                 # KeyError quotes its message; say it plainly
        return str(self.args[0])


def replay(
    path: str | os.PathLike[str],
    *,
    kernel_name: str,
    params: Mapping[str, Sequence[Any]],
    restrictions: Any,
    metrics: Mapping[str, Callable[[Config, float], float]],
    search: Any,
    out: Any,
    progress: bool | None,
    missing: str = "error",
    goals: Objectives | None = None,
) -> Results:
    """The rows of ``search`` (an options.Search) over ``params`` with the times ``path``
    recorded."""
    from . import strategies

    strategy, max_fevals, time_limit, seed = (
        search.strategy,
        search.max_fevals,
        search.time_limit,
        search.seed,
    )
    strategy_options = search.options
    if missing not in MISSING:
        raise ValueError(f"replay_missing must be one of {', '.join(MISSING)}, not {missing!r}")
    from .restrictions import compile_restrictions

    rec = load(path)
    rec.check_params(list(params))
    if isinstance(restrictions, (str, bytes)) or callable(restrictions):
        restrictions = [restrictions]
    restrictions = list(restrictions or [])
    configs = Space(params, compile_restrictions(restrictions, list(params)))
    goals = goals or Objectives()
    recorded_names = set(rec.figures()) | {"time"}
    unknown = [n for n in goals.names if n not in recorded_names and n not in metrics]
    if unknown:
        raise ValueError(f"replay: {rec.path} records no {', '.join(map(repr, unknown))} and no "
                         f"metric computes it; it records {', '.join(sorted(recorded_names))}")
    search = strategies.make_strategy(strategy, configs, seed=seed,
                                      options=dict(strategy_options or {}),
                                      max_fevals=max_fevals, time_limit=time_limit,
                                      objectives=len(goals))
    budget = getattr(search, "budget", None)
    meta = {
        "experiment": f"tune:{kernel_name}", "kernel": kernel_name,
        "device": {"name": f"{rec.device_name or 'a recorded device'} (replayed)"},
        "replay": {"path": str(rec.path), "format": rec.kind, "device_name": rec.device_name,
                   "kernel_name": rec.kernel_name, "missing": missing},
        "params": {k: list(v) for k, v in params.items()},
        "tune_params": {k: list(v) for k, v in params.items()},
        "restrictions": [r if isinstance(r, str) else getattr(r, "__name__", "callable")
                         for r in restrictions],
        "strategy": strategy, "algorithm": getattr(search, "algorithm", strategy),
        "objectives": goals.names, "verified": False, "metrics": list(metrics), "seed": seed,
        "max_fevals": max_fevals, "time_limit": time_limit, "x": None,
        "space_size": configs.size - (configs.pruned or 0), "pruned": configs.pruned,
        "versions": package_versions(), "host": platform.node(),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    count = configs.allowed_count
    total = count if max_fevals is None else min(count or max_fevals, max_fevals)
    stream = RowStream(Results(meta, []), out, total=total or 0, progress=progress)
    simulated = 0.0
    started = time.perf_counter()
    try:
        with stream.batch():
            while (config := search.ask()) is not None:
                recorded = rec.lookup(config)
                if recorded is None:
                    if missing == "error":
                        raise MissingConfig(
                            f"replay: {rec.path} has no entry for {config} (pass "
                            "replay_missing='skip' to pass such configurations over)")
                    row = {**config, "config": config_key(config), "status": SKIPPED,
                           "error": f"not in the replayed file {rec.path.name}",
                           "replayed": True, "verified": False}
                    search.tell(config, None)
                    _uncount(search)
                    stream.add(row)
                    continue
                row = _row(config, recorded, metrics)
                row["strategy"] = getattr(search, "algorithm", strategy)
                simulated += recorded.cost_s
                row["simulated_s"] = round(simulated, 6)
                if budget is not None:
                    budget.charge(recorded.cost_s)
                search.tell(config, goals.value(row) if row["status"] == REPLAYED else None)
                stream.add(row)
    except KeyboardInterrupt:
        stream.results.meta["interrupted"] = True
    finally:
        close = getattr(search, "close", None)
        if close is not None:
            close()
        stream.results.meta.update(simulated_time_s=round(simulated, 6),
                                   fevals=sum(1 for r in stream.results.rows if r["status"] != SKIPPED),
                                   replay_s=round(time.perf_counter() - started, 6))
        stream.close()
    if len(goals) > 1:
        stream.results.meta["pareto"] = goals.mark_front(stream.results.rows, (REPLAYED,))
    return stream.results


def _uncount(search: Any) -> None:
    """A configuration the file lacks was not evaluated: it costs no budget."""
    budget = getattr(search, "budget", None)
    if budget is not None:
        budget.fevals = max(0, budget.fevals - 1)


def _row(config: Config, recorded: Any, metrics: Mapping[str, Callable[[Config, float], float]]
         ) -> dict[str, Any]:
    row: dict[str, Any] = {**config, "config": config_key(config), "status": recorded.status,
                           "error": recorded.error, "replayed": True, "verified": False,
                           "time_ms": recorded.time_ms,
                           "times_ns": [t * 1e6 for t in recorded.times_ms],
                           "compile_s": recorded.compile_ms / 1e3,
                           "verify_s": recorded.verification_ms / 1e3,
                           "benchmark_s": recorded.benchmark_ms / 1e3}
    for name, value in recorded.figures.items():
        if name not in row and isinstance(value, (int, float, str)) and not isinstance(value, bool):
            row[name] = value
    if recorded.time_ms is not None:
        for name, f in metrics.items():
            try:
                row[name] = float(f(config, recorded.time_ms / 1e3))
            except Exception as e:  # noqa: BLE001 - a failing metric is noted, the row stays
                row["error"] = f"metric {name!r} raised {type(e).__name__}: {e}"
    return row
