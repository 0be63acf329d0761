"""``tune_kernel``: Kernel Tuner's entry point, answered by pyclperf.tune().

A Kernel Tuner (KT) script moves over by changing its import::

    from pyclperf import tune_kernel          # was: from kernel_tuner import tune_kernel
    results, env = tune_kernel("vector_add", src, size, args, tune_params, answer=answer)

The arguments keep KT's meaning and are translated to tune()'s keywords; ``results`` is KT's list
of dicts (parameters, "time" and "times" in ms, the KT timing fields, metrics; a failed config
carries KT's marker string in "time") and ``env`` KT's environment dict, plus
``env["pyclperf_results"]``, the full Results. A KT feature pyclperf lacks is a
NotImplementedError naming it, never silently dropped. Configs removed by a restriction are left
out of ``results``, as KT leaves them out of its search space.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .ktcache import entry_from_row
from .options import from_flat
from .restrictions import compile_expression
from .strategies import NAMES as _STRATEGIES

# What only compiling and launching use: a simulation (replay) accepts and ignores them, as
# Kernel Tuner's simulation mode does, so a script written for CUDA or HIP replays too.
_LAUNCH_ONLY = ("lang", "smem_args", "cmem_args", "texmem_args", "compiler", "defines")


def tune(*args: Any, **kwargs: Any) -> Any:
    """pyclperf.tune (tests replace this function with a stub)."""
    from .tune import tune as tune_configurations
    return tune_configurations(*args, **kwargs)


def _context(platform: int, device: int) -> Any:
    from ..device.context import Context
    return Context(f"{platform}:{device}")


def _unsupported(feature: str, why: str = "") -> NotImplementedError:
    return NotImplementedError(f"tune_kernel: Kernel Tuner's {feature} is not supported by "
                               f"pyclperf{': ' + why if why else ''}")


def _source(kernel_source: Any) -> str:
    """KT accepts code or a filename (also a one-element list); pyclperf reads the file here."""
    if isinstance(kernel_source, (list, tuple)):
        if len(kernel_source) != 1:
            raise _unsupported("list of source files (host code tuning)")
        kernel_source = kernel_source[0]
    if callable(kernel_source):
        raise _unsupported("kernel_source as a function of the parameters",
                           "pass the code, and use the parameters as defines")
    if isinstance(kernel_source, Path) or (
            isinstance(kernel_source, str) and "\n" not in kernel_source
            and len(kernel_source) < 1024 and os.path.isfile(kernel_source)):
        return Path(kernel_source).read_text()
    if not isinstance(kernel_source, str):
        raise TypeError(f"kernel_source must be code or a filename, not {type(kernel_source).__name__}")
    return kernel_source


def _restriction(r: Any, names: Sequence[str]) -> Any:
    """One KT restriction as ours. KT calls a callable inside a list with the parameters as
    keywords (``lambda block_size_x, tile: ...``) and a (callable, [names]) tuple with just those;
    a callable whose arguments are not all parameter names gets the dict, like a lone callable."""
    if isinstance(r, str):
        return r
    if type(r).__module__.split(".")[0] == "constraint":
        raise _unsupported("python-constraint Constraint objects as restrictions",
                           "write the restriction as a string or a function")
    if isinstance(r, tuple) and len(r) in (2, 3) and callable(r[0]):
        f, used = r[0], list(r[1])
        return lambda cfg: f(**{n: cfg[n] for n in used})
    if callable(r):
        try:
            sig = inspect.signature(r)
        except (TypeError, ValueError):
            return r
        ps = list(sig.parameters.values())
        if any(p.kind is p.VAR_KEYWORD for p in ps):
            return lambda cfg: r(**cfg)
        if ps and all(p.name in names and p.kind is not p.VAR_POSITIONAL for p in ps):
            wanted = [p.name for p in ps]
            return lambda cfg: r(**{n: cfg[n] for n in wanted})
        return r
    raise TypeError(f"unknown restriction type {type(r).__name__} ({r!r})")


def _restrictions(restrictions: Any, names: Sequence[str]) -> list[Any]:
    if restrictions is None:
        return []
    if callable(restrictions) or isinstance(restrictions, str):
        return [restrictions]                       # a lone callable gets the dict, as in KT
    return [_restriction(r, names) for r in restrictions]


def _metrics(metrics: Mapping[str, Any] | None, names: Sequence[str]
             ) -> dict[str, Callable[[dict, float], float]] | None:
    """KT metrics (name -> f(p) or an expression over p, p holding the params, "time" in ms and
    the metrics defined before it) as ours (name -> f(config, seconds))."""
    if metrics is None:
        return None
    if not isinstance(metrics, Mapping):
        raise ValueError("metrics should be a dict (KT needs the order to compose metrics)")
    steps: list[tuple[str, Callable[[dict], Any]]] = []
    known = list(names) + ["time"]
    for name, m in metrics.items():
        if isinstance(m, str):
            steps.append((name, compile_expression(m, known, what=f"metric {name!r}")))
        elif callable(m):
            steps.append((name, m))
        else:
            raise ValueError(f"metric {name!r} must be a string expression or a callable")
        known.append(name)

    def metric(upto: int) -> Callable[[dict, float], float]:
        def f(config: dict, seconds: float) -> float:
            p: dict[str, Any] = {**config, "time": seconds * 1e3}
            for name, step in steps[: upto + 1]:
                p[name] = step(p)
            return float(p[steps[upto][0]])
        return f

    return {name: metric(i) for i, (name, _) in enumerate(steps)}


def _verify(verify: Callable[..., Any] | None, answer: Any, atol: float
            ) -> Callable[[dict, list], bool] | None:
    """KT's verify(answer, result_host, atol=...) as ours verify(config, outputs). KT passes None
    for the arguments the answer leaves out; so do we."""
    if verify is None:
        return None
    try:
        takes_atol = "atol" in inspect.signature(verify).parameters
    except (TypeError, ValueError):
        takes_atol = False

    def ours(config: dict, outputs: list) -> bool:
        host = [o if answer is None or answer[i] is not None else None
                for i, o in enumerate(outputs)]
        return bool(verify(answer, host, atol=atol) if takes_atol else verify(answer, host))
    return ours


def _kt_results(res: Any, names: Sequence[str], metric_names: Sequence[str]) -> list[dict]:
    out = []
    for row in res.rows:
        if row.get("status") == "skipped":
            continue
        figures = list(metric_names) + [n for n in res.meta.get("objectives", ())
                                        if n != "time" and n not in metric_names]
        entry = entry_from_row(row, names, figures)
        entry.pop("pyclperf_error", None)
        if "pareto" in row:
            entry["pyclperf_pareto"] = bool(row["pareto"])
        out.append(entry)
    return out


def _env(res: Any, results: list[dict], iterations: int, compiler_options: Any,
         objective: str, higher_is_better: bool) -> dict[str, Any]:
    dev = dict(res.meta.get("device") or {})
    env: dict[str, Any] = {
        "device_name": dev.get("name"), "platform_name": dev.get("platform_name"),
        "platform_version": dev.get("platform_version"), "device_version": dev.get("version"),
        "opencl_c_version": dev.get("opencl_c_version"),
        "driver_version": dev.get("driver_version"), "iterations": iterations,
        "compiler_options": compiler_options, "pyclperf_results": res,
        "strategy": res.meta.get("strategy"), "algorithm": res.meta.get("algorithm")}
    if res.meta.get("replay"):
        # KT's simulation mode reports the recorded tuning time it simulated, in ms.
        env["simulation"] = True
        env["simulated_time"] = float(res.meta.get("simulated_time_s") or 0.0) * 1e3
    if "pareto" in res.meta:
        env["pareto"] = [r for r in results if r.get("pyclperf_pareto")]
    scored = [r for r in results if isinstance(r.get(objective), (int, float))
              and not isinstance(r.get(objective), bool)]
    if scored:
        pick = max if higher_is_better else min
        env["best_config"] = pick(scored, key=lambda r: r[objective])
    return env


def tune_kernel(kernel_name: str, kernel_source: Any, problem_size: Any, arguments: list,
                tune_params: dict, grid_div_x: Any = None, grid_div_y: Any = None,
                grid_div_z: Any = None, restrictions: Any = None, answer: Any = None,
                atol: float = 1e-6, verify: Any = None, verbose: bool = False, lang: Any = None,
                device: int = 0, platform: int = 0, smem_args: Any = None, cmem_args: Any = None,
                texmem_args: Any = None, compiler: Any = None, compiler_options: Any = None,
                defines: Any = None, log: Any = None, iterations: int = 7,
                block_size_names: Any = None, quiet: bool = False, strategy: Any = None,
                strategy_options: Any = None, cache: Any = None, metrics: Any = None,
                simulation_mode: Any = False, parallel: Any = None, observers: Any = None,
                objective: Any = None, objective_higher_is_better: Any = None,
                objectives: Any = None, seed: Any = None) -> tuple[list[dict], dict[str, Any]]:
    """Tune an OpenCL kernel with Kernel Tuner's arguments; returns (results, env) like KT.

    See Kernel Tuner's documentation for each argument. Every Kernel Tuner strategy name runs
    (pyclperf.tuner.strategies says which algorithm each runs here), and ``strategy="auto"``.
    ``simulation_mode=True`` replays the times ``cache`` recorded (a Kernel Tuner cache, gzipped
    or not, or a T4 results file): no device is opened, nothing is built, and ``lang``,
    ``smem_args``, ``cmem_args``, ``texmem_args``, ``compiler`` and ``defines`` are accepted and
    ignored, as Kernel Tuner's simulation mode does; rows are marked replayed. Otherwise only
    OpenCL is tuned (``lang`` None or "OpenCL"). ``objective`` may name any figure of the rows
    (a metric); ``objectives`` ({name: higher_is_better}) tunes several at once with a
    multi-objective strategy (nsga2, nsga3, genetic_algorithm, tpe or auto), whose Pareto front
    is ``env["pareto"]``. Differences: "time" is the median of the launches (KT reports their
    mean; a median is not dragged by one slow launch); KT's verify gets the outputs of every
    array argument; metrics see the parameters, "time" (ms) and earlier metrics, not KT's other
    timing fields; ``verbose`` has no effect (every skipped or failed config's reason is in its
    row of ``env["pyclperf_results"]``); the NDRange has as many dimensions as the problem and
    the tuned block sizes span, where Kernel Tuner always launches 3 (the work-items in each
    dimension are the same: a 1-D problem with block_size_y tuned launches (n, block_size_y)).
    As in Kernel Tuner, a signed NumPy integer passes for an unsigned scalar parameter when
    its value fits.
    """
    simulating = bool(simulation_mode)
    launch_only = {"lang": lang, "smem_args": smem_args, "cmem_args": cmem_args,
                   "texmem_args": texmem_args, "compiler": compiler, "defines": defines}
    if not simulating:
        if lang is not None and str(lang).lower() != "opencl":
            raise _unsupported(f"lang={lang!r}", "pyclperf tunes OpenCL kernels only (a "
                               "simulation, simulation_mode=True, replays any language)")
        for feature in _LAUNCH_ONLY[1:]:
            if launch_only[feature]:
                raise _unsupported(feature)
    elif cache is None:
        raise ValueError("tune_kernel: simulation_mode=True replays a cache file: give cache=")
    for feature, value in (("log", log), ("observers", observers), ("parallel", parallel)):
        if value:
            raise _unsupported(feature)
    if strategy is None:
        strategy = "brute_force"
    if strategy not in _STRATEGIES:
        raise ValueError(f"tune_kernel: unknown strategy {strategy!r}; choose one of "
                         f"{', '.join(_STRATEGIES)}")
    goal, higher = _objectives(objective, objective_higher_is_better, objectives)
    if not isinstance(tune_params, Mapping):
        raise ValueError("tune_params must be a dict of parameter name -> list of values")
    names = list(tune_params)
    opts = dict(strategy_options or {})
    max_fevals = opts.pop("max_fevals", None)
    time_limit = opts.pop("time_limit", None)
    if cache is not None:
        cache = str(cache)
        # KT appends the suffix too; a replayed file is taken as named when it exists.
        if not cache.endswith(".json") and not (simulating and os.path.isfile(cache)):
            cache += ".json"
    kt_metrics = _metrics(metrics, names)
    # What a replay and a measured run both take, as tune()'s flat names.
    search = dict(restrictions=_restrictions(restrictions, names), metrics=kt_metrics,
                  strategy=strategy, strategy_options=opts or None, max_fevals=max_fevals,
                  time_limit=time_limit, seed=seed, progress=False if quiet else None,
                  objective=goal, objective_higher_is_better=higher)
    if simulating:
        res = tune("", kernel_name, problem_size, [], dict(tune_params),
                   **from_flat(dict(search, replay=cache)))
    else:
        res = _measure(kernel_name, kernel_source, problem_size, arguments, tune_params,
                       grid_div_x, grid_div_y, grid_div_z, answer, atol, verify, device,
                       platform, compiler_options, iterations, block_size_names,
                       dict(search, cache=cache))
    results = _kt_results(res, names, list(metrics or ()))
    first = goal if isinstance(goal, str) else goal[0]
    first_higher = higher if isinstance(higher, bool) else bool(higher and higher[0])
    env = _env(res, results, iterations, compiler_options, first, first_higher)
    if not quiet and "best_config" in env:
        best = env["best_config"]
        shown = ", ".join(f"{k}={best[k]}" for k in names + [first] if k in best)
        print(f"best performing configuration: {shown}")
    return results, env


def _objectives(objective: Any, higher: Any, objectives: Any) -> tuple[Any, Any]:
    """KT's objective / objective_higher_is_better / objectives as tune()'s."""
    if objectives:
        if not isinstance(objectives, Mapping):
            raise ValueError("objectives should be a dict of (objective, higher_is_better) pairs")
        return list(objectives), [bool(v) for v in objectives.values()]
    objective = objective or "time"
    if isinstance(objective, (list, tuple)):
        objective = list(objective)
    return objective, (False if higher is None else higher)


def _measure(kernel_name: str, kernel_source: Any, problem_size: Any, arguments: list,
             tune_params: Mapping[str, Any], grid_div_x: Any, grid_div_y: Any, grid_div_z: Any,
             answer: Any, atol: float, verify: Any, device: int, platform: int,
             compiler_options: Any, iterations: int, block_size_names: Any,
             search: dict[str, Any]) -> Any:
    """tune_kernel on the device: the KT arguments as tune()'s keywords."""
    return tune(
        _source(kernel_source),
        kernel_name,
        problem_size,
        arguments,
        dict(tune_params),
        **from_flat(
            dict(
                ctx=_context(platform, device),
                compiler_options=list(compiler_options) if compiler_options else "",
                grid_div_x=grid_div_x,
                grid_div_y=grid_div_y,
                grid_div_z=grid_div_z,
                block_size_names=block_size_names,
                answer=None if verify is not None else answer,
                verify=_verify(verify, answer, atol),
                atol=atol,
                iterations=iterations,
                **search,
            )
        ),
    )
