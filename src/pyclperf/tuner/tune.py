"""tune(): build, verify and time a user's kernel for every configuration a strategy picks;
run_kernel(): one configuration, outputs back.

Compared with Kernel Tuner: each configuration is warmed up and timed until a minimum total
time; every launch stays inside padded, guarded buffers; a wrong result, a refused launch or an
exception in a user callable is that configuration's status, never the end of the run; 'ok'
always means verified; and a results file resumes only when everything that defines its rows
is unchanged.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..measure.results import INVALID, TIMEOUT, Results
from ..measure.sweep import RowStream, base_meta
from . import fingerprint as fp
from ..device.clock_lock import locked_clocks
from ..measure import timing_policy
from . import ceiling, stops, supervisor
from .declared import kernel_parameter_names
from .inputs import check_kind, load_source, options_text, static_checks, supervise
from .measure import Job, measure
from .objectives import Objectives
from .searchspace import Space
from .space import Config, Divisor, Geometry, compile_divisors, config_key
from .verification import Verification


def _harness_check(job: Job, configs: Space) -> None:
    """Answer/reference mistakes (another length, dtype or size) raise before the sweep."""
    if not job.verification.active:
        return
    first = configs.first()
    if first is None:
        return
    try:
        values = job.resolve_args(first, keep=True)  # the sweep's first measure reuses them
    except Exception:  # noqa: BLE001 - a failing argument callable is that config's status
        return
    # No program is built yet: the names come from the source, where it says them plainly.
    names = kernel_parameter_names(job.source, job.kernel_name)
    if names is None or len(names) != len(values):
        names = [""] * len(values)
    job.verification.expected(first, repr(first), values, names)


def tune(
    source: str | os.PathLike[str],
    kernel_name: str,
    problem_size: int | Sequence[int] | Callable[[Config], Any],
    args: Sequence[Any],
    params: Mapping[str, Sequence[Any]] | None = None,
    *,
    tune_params: Mapping[str, Sequence[Any]] | None = None,
    ctx: Any = None,
    restrictions: Sequence[Callable[[Config], bool] | str] | Callable[[Config], bool] | str = (),
    options: str | Sequence[str] = "",
    compiler_options: Sequence[str] | None = None,
    global_size: Callable[[Config], Sequence[int]] | None = None,
    grid_div_x: Divisor = None,
    grid_div_y: Divisor = None,
    grid_div_z: Divisor = None,
    block_size_names: Sequence[str] | None = None,
    answer: Sequence[Any] | None = None,
    reference: Callable[..., Sequence[Any]] | None = None,
    verify: Callable[[Config, list[Any]], Any] | None = None,
    rtol: float = 1e-5,
    atol: float | None = None,
    poison: bool | Sequence[int | str] = True,
    inout: Sequence[int | str] = (),
    metrics: Mapping[str, Callable[[Config, float], float]] | None = None,
    warmup: int = 3,
    min_time: float = timing_policy.MIN_TIME_S,
    min_repeats: int = timing_policy.MIN_SAMPLES,
    max_repeats: int = timing_policy.MAX_SAMPLES,
    iterations: int | None = None,
    reset_outputs: bool = False,
    pinned: bool = False,
    strategy: str = "auto",
    strategy_options: Mapping[str, Any] | None = None,
    max_fevals: int | None = None,
    time_limit: float | None = None,
    seed: int | None = None,
    out: str | os.PathLike[str] | None = None,
    resume: bool = True,
    cache: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    devices: Any = None,
    client: Any = None,
    isolate: bool = True,
    timeout: float | None = None,
    memory_limit: int | str | None = None,
    check: str | None = None,
    cold: bool = False,
    method: str = "auto",
    lock_clocks: bool = False,
    replay: str | os.PathLike[str] | None = None,
    replay_missing: str = "error",
    objective: str | Sequence[str] = "time",
    objective_higher_is_better: bool | Sequence[bool] | None = None,
) -> Results:
    """Build, verify and time ``kernel_name`` for the configurations of ``params``.

    * ``params`` (or Kernel Tuner's ``tune_params``): name -> values; each becomes
      ``-D name=value``. ``block_size_x/y/z`` (or ``block_size_names``, which may repeat a
      name for a square work-group: ``["TS", "TS"]``) set the work-group; the global size is
      the problem size divided by ``grid_div_x/y/z`` (default: the block size), rounded up,
      times the block size — Kernel Tuner's rule — or ``global_size(config)``. A tuned
      block_size_y (z) makes the launch 2-D (3-D) even for a 1-D problem, as in Kernel Tuner.
      ``problem_size`` may be a callable of the configuration.
    * ``args``: NumPy arrays (checked against the kernel's declared pointer types, placed in
      padded and guarded device buffers), numbers and NumPy scalars (checked against the
      declared type), ``LocalMemory(nbytes)``, or callables of the configuration returning any
      of these (so a ``TYPE`` parameter can choose dtypes).
    * Verification: ``answer`` (parallel to args, None where unchecked), ``reference(config,
      *args)`` returning such a list, and/or ``verify(config, outputs) -> bool | (bool, str)``.
      Checked outputs are poisoned first (``poison``: True, False, or indices/names); when
      one does not match, relaunches find elements the kernel never writes (they keep their
      input) and arguments it reads (verified with their input, then restored as ``inout``
      arguments are: never poisoned nor left changed between timed launches); the row's
      ``notes`` say which. Floats pass within ``atol + rtol * |want|``; ``atol`` defaults to
      ``rtol`` times the answer's median |value| (docs/tuning.md: "Floats are compared on the
      answer's scale").
    * Statuses: ok (verified), timed (nothing to verify against), wrong result, out of bounds,
      build failed, launch failed, invalid (a harness mistake, a user callable that raised, a
      restriction that raised), skipped (a device limit). A configuration a restriction rules
      out is no part of the search space and leaves no row, as in Kernel Tuner; how many there
      were is ``meta["pruned"]`` (None where the space is too big to count).
    * ``strategy``: "auto" (default: every configuration where the space fits the budget,
      else a model-guided search), or any of Kernel Tuner's 21 names (tuner.strategies says
      what each runs; ``pip install "pyclperf[tune]"``), bounded by ``max_fevals`` and
      ``time_limit`` seconds. ``objective`` (a field: "time", a metric) or several of them
      (a Pareto front, ``meta["pareto"]``), ``objective_higher_is_better`` per objective.
    * ``replay``: a Kernel Tuner cache (gzipped too) or T4 file whose recorded times the
      strategy searches instead: no device, no build, rows "replayed" (tuner/replay.py).
    * ``out``: JSON-lines file written as configurations finish; with ``resume``, an existing
      file continues only if every defining input (source, options, parameter names,
      arguments, answer, launch geometry, restrictions, device, driver, version) is unchanged.
      ``cache``: the same rows in Kernel Tuner's cache format. Ctrl-C (or SIGTERM) returns the
      finished rows with ``meta["interrupted"]``; every stop is recorded (tuner/stops.py). A
      file that cannot be written (a full disk) stops the sweep with ``ResultsWriteError``: the
      file keeps every whole row written, and the error's ``results`` holds the same rows.
    * Supervision (``isolate=True``, the default): the kernel runs in a worker process that
      holds the context and buffers, so a configuration that crashes, corrupts memory or hangs
      costs its own row (``crashed``, ``out of bounds``, ``timeout``), never this process.
      ``timeout`` bounds one configuration (build + verification + timing) in seconds; by
      default 10x the slowest so far, at least 30 s. ``memory_limit`` ("2G"): what a worker may
      hold, past which a configuration is ``out of memory`` (tuner/ceiling.py). ``isolate=False``
      runs in this process, unprotected: a kernel that corrupts memory can take it down.
    * Residency and conditions: each row records its working set beside the device's cache,
      the compulsory traffic and the GB/s it implies; ``cold=True`` flushes the caches before
      every timed launch (outside the timed events), so a working set that fits in the cache
      is timed from DRAM. Where NVML knows the GPU, rows carry its clocks, throttle reasons,
      power, temperature and energy, and a ``conditions`` flag when it throttled, ran below
      its maximum clock or had another process on it. ``lock_clocks=True`` holds the GPU's
      clocks at their maxima for the sweep where the driver allows it, and restores them
      (``meta["clock_lock"]`` says what happened; device/clock_lock.py).
    * ``check="memory"``: each configuration's launch runs first on Oclgrind, a simulator that
      finds out-of-bounds accesses (global and __local, reads too), data races and uses of
      uninitialised values, naming the source line; a finding is the row's status. Slow (every
      work-item is interpreted): for small problem sizes. Needs Oclgrind (``make deps``, the
      Debian package, or ``pip install "pyclperf[memcheck]"``).
    * ``method``: the clock. "auto" (the default) times by OpenCL events where the device's
      event clock passes its check against the host clock (pyclperf.device.clocks; once per device and
      driver), else by the host clock; "events" or "host" are obeyed, and events on a clock that
      failed its check make every row ``suspect``. Each row's ``method`` says which clock timed
      it (``method_reason`` why, where that is not events). Timing follows the experiments'
      rule (measure.timing_policy): at least ``min_repeats`` launches adding up to ``min_time``,
      more until the 95% interval on the median is within 1% of it, at most ``max_repeats``
      and 10x ``min_time`` + 0.25 s of wall time, whatever the clock says; each row says how it
      stopped (``stopped``, ``ci_pct``).
    * Many devices (``pip install "pyclperf[distributed]"``): ``devices="all"`` (every GPU
      here) or a list of device specs runs the configurations on a local Dask cluster, one
      worker process per device; ``client`` uses an existing Dask cluster instead (see
      tuner/distributed.py for the ``dask worker`` line). Rows carry a ``device`` column;
      one that kills its worker twice is ``crashed``.
    """
    from ..device.clocks import check_method
    from ..device.context import Context
    from .restrictions import compile_restrictions

    check_method(method)
    if (params is None) == (tune_params is None):
        raise TypeError("give the tunable parameters as params= or tune_params=, exactly once")
    space = dict(params if params is not None else tune_params or {})
    goals = Objectives(objective, objective_higher_is_better)
    if replay is not None:  # no device, no build: the arguments only name what was recorded
        from .replay import replay as replay_run

        return replay_run(replay, kernel_name=kernel_name, params=space,
                          restrictions=restrictions, metrics=dict(metrics or {}),
                          strategy=strategy, strategy_options=strategy_options,
                          max_fevals=max_fevals, time_limit=time_limit, seed=seed, out=out,
                          progress=progress, missing=replay_missing, goals=goals)
    distributed = devices is not None or client is not None
    supervised = bool(isolate) and not distributed
    if not distributed and not supervised:
        ctx = Context() if ctx is None else ctx
    limit = ceiling.parse_limit(memory_limit)
    if supervised:
        supervisor.prestart(supervisor.device_spec(ctx), limit)
    if isinstance(restrictions, (str, bytes)) or callable(restrictions):
        restrictions = [restrictions]  # type: ignore[list-item]
    checks = compile_restrictions(list(restrictions), list(space))  # type: ignore[arg-type]
    static_checks(args)
    grid_div = compile_divisors((grid_div_x, grid_div_y, grid_div_z), list(space))
    if iterations is not None:
        min_repeats = max(1, int(iterations))
        max_repeats = max(max_repeats, min_repeats)
    job = Job(None if distributed or supervised else ctx, load_source(source), kernel_name, list(args),
              Geometry(problem_size, global_size, (grid_div[0], grid_div[1], grid_div[2]),
                       block_size_names or ("block_size_x", "block_size_y", "block_size_z")),
              Verification(answer, reference, verify, rtol, atol),
              options_text(options, compiler_options), dict(metrics or {}), poison,
              list(inout), reset_outputs, warmup, min_time, min_repeats, max_repeats, pinned,
              check_kind(check), bool(cold), method)
    # Lazily: a strategy walks or samples it, restrictions applied as it goes.
    configs = Space(space, checks)
    failed = configs.failed
    _harness_check(job, configs)
    fleet = sup = None
    if distributed:
        from .distributed import Fleet  # lazily: only this path needs Dask

        fleet = Fleet.open(devices, client, limit)
        ctx = fleet.view
        job.forget_args()
    elif supervised:
        sup = supervise(job, ctx, limit)
        ctx = ctx if ctx is not None else supervisor.DeviceView(sup)
    try:
        with locked_clocks(getattr(ctx, "info", None), lock_clocks) as lock:
            return _sweep(job, ctx, space, restrictions, configs, failed, fleet, sup, timeout,
                          kernel_name, problem_size, warmup, min_time, strategy, strategy_options,
                          max_fevals, time_limit, seed, out, resume, cache, progress, lock, goals)
    finally:
        if fleet is not None:
            fleet.close()
        if sup is not None:
            sup.close()
            supervisor.checkin(sup)


def _sweep(job: Job, ctx: Any, space: dict[str, Sequence[Any]], restrictions: Sequence[Any],
           configs: Space, failed: list[tuple[Config, str]], fleet: Any, sup: Any,
           timeout: float | None, kernel_name: str, problem_size: Any, warmup: int,
           min_time: float, strategy: str,
           strategy_options: Mapping[str, Any] | None, max_fevals: int | None,
           time_limit: float | None, seed: int | None, out: Any, resume: bool, cache: Any,
           progress: bool | None, extra_meta: Mapping[str, Any], goals: Objectives) -> Results:
    """tune()'s sweep once its inputs are checked: here (fleet None) or on a Dask fleet."""
    from . import strategies
    defining = fp.defining(job, space, list(restrictions), ctx)
    meta = base_meta(ctx, experiment=f"tune:{kernel_name}", kernel=kernel_name,
                     params={k: list(v) for k, v in space.items()},
                     tune_params={k: list(v) for k, v in space.items()}, options=job.options,
                     method=job.method, warmup=warmup, min_time_s=min_time, strategy=strategy,
                     verified=job.verification.active, metrics=list(job.metrics), x=None,
                     defining=defining, **_space_meta(configs),
                     isolated=sup is not None or fleet is not None, **extra_meta,
                     **({"devices": fleet.view.labels} if fleet is not None else {}))
    done: set[str] = set()
    append = False
    if out is not None and resume and Path(out).is_file():
        done = fp.check_resume(Path(out), defining)
        append = True
    previous = stops.finished(Results.load(out)) if append else None  # type: ignore[arg-type]

    kt = None
    if cache is not None:  # Kernel Tuner's cache file beside (or instead of) the JSON lines
        from .ktcache import CacheWriter

        kt = CacheWriter(cache, device_name=ctx.info.name, kernel_name=kernel_name,
                         problem_size=problem_size, tune_params=space,
                         metrics=list(job.metrics), resume=resume)
    resumed = list(previous.rows) if previous is not None else []
    if kt is not None and previous is None:  # a Kernel Tuner cache alone: its entries are done
        from .ktcache import rows_from_cache

        resumed = rows_from_cache({"tune_params_keys": list(space)}, kt.entries, config_key=config_key)
        done |= {r["config"] for r in resumed}
    search = strategies.make_strategy(strategy, configs, seed=seed,
                                      options=dict(strategy_options or {}),
                                      max_fevals=max_fevals, time_limit=time_limit,
                                      objectives=len(goals))
    meta.update(algorithm=getattr(search, "algorithm", strategy), objectives=goals.names)
    told: set[str] = set()
    for old in resumed:
        allowed = configs.allowed_row(old)
        if allowed is not None:
            search.tell(allowed, _objective(old, goals))
            told.add(old["config"])

    count = configs.allowed_count
    todo = (configs.size if count is None else count) - len(told)
    if max_fevals is not None:
        todo = min(todo, max(0, int(max_fevals) - len(resumed)))
    try:
        stream = RowStream(Results(meta, resumed), out, total=todo, progress=progress,
                           append=append, sinks=[kt])
    except BaseException:  # a file that cannot be written (or is locked): nothing ran
        job.arguments.release()
        if kt is not None:
            kt.close()
        raise

    def finish(config: Config, measured: dict[str, Any]) -> None:
        """One configuration's row: into the strategy, the results, the files and the bar."""
        flight.land()
        key = config_key(config)
        row: dict[str, Any] = {**config, "config": key, **measured}
        row["timestamp"] = time.time()
        row["strategy"] = getattr(search, "algorithm", strategy)  # what chose it (auto's phase)
        done.add(key)
        search.tell(config, _objective(row, goals))
        stream.add(row)

    def invalid(config: Config, why: str) -> None:
        """A restriction that raised: that configuration is invalid."""
        if config_key(config) not in done:
            stream.add({**config, "config": config_key(config), "status": INVALID,
                        "error": why, "verified": False})
            done.add(config_key(config))

    configs.on_failed = invalid  # those a big space's walk meets, as it meets them
    flight = stops.Flight(stream, todo, len(told) + todo, time_limit)  # what a stop records
    try:
        for config, why in failed:
            invalid(config, why)
        if fleet is not None:
            # Tasks sent, chunks a dead worker split, seconds the workers measured: for the
            # returned Results only (the file's header was written before the sweep began).
            stream.results.meta["dask"] = fleet.sweep(job, search, strategy, done, finish, todo,
                                                      stream.batch)
        started = time.monotonic()
        while fleet is None and (config := search.ask()) is not None:
            if config_key(config) in done:
                continue
            left = None if time_limit is None else float(time_limit) - (time.monotonic() - started)
            if sup is not None and left is not None and left <= 0:
                break
            flight.begin(config)
            if sup is None:
                finish(config, measure(job, config))
                continue
            own = sup.limit(timeout)
            row = sup.measure(config, timeout, cap=left)
            if row["status"] == TIMEOUT and left is not None and left < own:
                break  # cut by the run's time limit: its row says so (flight.stop)
            finish(config, row)
        flight.time_limit_passed()
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (stops.Terminated)
        flight.interrupted(exc)
    finally:
        flight.give_back_sigterm()
        getattr(search, "close", lambda: None)()
        stream.close()
        job.arguments.release()
    if len(goals) > 1:
        stream.results.meta["pareto"] = goals.mark_front(stream.results.rows, ("ok", "timed"))
    return stream.results


def _space_meta(configs: Space) -> dict[str, Any]:
    """space_size: the configurations not pruned (allowed, or whose restriction raised), and
    pruned: those the restrictions ruled out; where the space is too big to count, space_size
    is the whole product and pruned is None (unknown)."""
    pruned = configs.pruned
    return {"space_size": configs.size - (pruned or 0), "pruned": pruned}


def _objective(row: Mapping[str, Any], goals: Objectives) -> Any:
    """What the strategies minimise: the objectives of a verified (or merely timed) row."""
    if row.get("status") in ("ok", "timed"):
        return goals.value(row)
    return None


from .run import run_kernel  # noqa: E402,F401  (public here before it had a module)
