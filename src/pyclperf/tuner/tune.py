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
from . import ceiling, stops, supervisor
from .declared import kernel_parameter_names
from .inputs import check_kind, load_source, options_text, static_checks, supervise
from .measure import Job, measure
from .objectives import Objectives
from .options import Execution, Launch, Output, Replay, Search, Timing, Verify, group
from .searchspace import Space
from .space import Config, Geometry, compile_divisors, config_key
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
    params: Mapping[str, Sequence[Any]],
    *,
    restrictions: Sequence[Callable[[Config], bool] | str] | Callable[[Config], bool] | str = (),
    metrics: Mapping[str, Callable[[Config, float], float]] | None = None,
    ctx: Any = None,
    launch: Launch | None = None,
    verify: Verify | None = None,
    timing: Timing | None = None,
    search: Search | str | None = None,
    execution: Execution | None = None,
    out: Output | str | os.PathLike[str] | None = None,
    replay: Replay | str | os.PathLike[str] | None = None,
) -> Results:
    """Build, verify and time ``kernel_name`` for the configurations of ``params``.

    * ``params``: name -> values; each becomes ``-D name=value``. ``block_size_x/y/z`` set the
      work-group; a tuned block_size_y (z) makes the launch 2-D (3-D) even for a 1-D problem,
      as in Kernel Tuner. ``problem_size`` may be a callable of the configuration.
      ``restrictions``: Kernel Tuner's string expressions or callables of the configuration; a
      configuration they rule out is no part of the space and has no row (``meta["pruned"]``
      counts them). ``metrics``: name -> f(config, seconds), a column each.
    * ``args``: NumPy arrays (checked against the kernel's declared pointer types, placed in
      padded and guarded device buffers), numbers and NumPy scalars (checked against the
      declared type), ``LocalMemory(nbytes)``, or callables of the configuration returning any
      of these (so a ``TYPE`` parameter can choose dtypes).
    * The groups (pyclperf.tuner.options): ``launch=Launch(...)`` (compiler options, grid
      divisors, block size names, a global size function), ``verify=Verify(...)`` (answer,
      reference or verify function, tolerances, poison, inout), ``timing=Timing(...)``
      (warm-up, repeats, the clock, cold caches, locked clocks), ``search=Search(...)`` or a
      strategy name (strategy and its options, max_fevals, time_limit, seed, objectives),
      ``execution=Execution(...)`` (isolation, timeout, memory_limit, several devices, memory
      checks on Oclgrind, progress), ``out=`` a path or ``Output(...)`` (resume, a Kernel Tuner
      cache beside), ``replay=`` a path or ``Replay(...)`` (search a recorded run instead: no
      device, no build, rows "replayed"; tuner/replay.py). ``ctx``: the device (default
      $PYCLPERF_DEVICE, else the first GPU).
    * Statuses: ok (verified), timed (nothing to verify against), wrong result, out of bounds,
      out of memory, build failed, launch failed, crashed, timeout, stopped,
      skipped (a device limit), invalid (a harness mistake, a user callable or restriction that
      raised). 'ok'
      always means verified; every row says how its timing stopped and which strategy chose
      it. Ctrl-C or SIGTERM returns the finished rows; every stop is recorded (tuner/stops.py).
      A file that cannot be written stops the sweep with ``ResultsWriteError``, the finished
      rows safe. docs/tuning.md is the whole story.
    """
    from ..device.clocks import check_method
    from ..device.context import Context
    from .restrictions import compile_restrictions

    lau, ver, tim = (
        group(launch, Launch, "launch"),
        group(verify, Verify, "verify"),
        group(timing, Timing, "timing"),
    )
    sea, exe = group(search, Search, "search"), group(execution, Execution, "execution")
    output, replayed = group(out, Output, "out"), group(replay, Replay, "replay")
    check_method(tim.method)
    if not isinstance(params, Mapping):
        raise TypeError(
            f"params must be a dict of parameter name -> values, not " f"{type(params).__name__}"
        )
    space = dict(params)
    goals = Objectives(sea.objective, sea.higher_is_better)
    if replayed is not None:  # no device, no build: the arguments only name what was recorded
        from .replay import replay as replay_run

        return replay_run(
            replayed.path,
            kernel_name=kernel_name,
            params=space,
            restrictions=restrictions,
            metrics=dict(metrics or {}),
            search=sea,
            out=output.path,
            progress=exe.progress,
            missing=replayed.missing,
            goals=goals,
        )
    distributed = exe.devices is not None or exe.client is not None
    supervised = bool(exe.isolate) and not distributed
    if not distributed and not supervised:
        ctx = Context() if ctx is None else ctx
    limit = ceiling.parse_limit(exe.memory_limit)
    if supervised:
        supervisor.prestart(supervisor.device_spec(ctx), limit)
    if isinstance(restrictions, (str, bytes)) or callable(restrictions):
        restrictions = [restrictions]  # type: ignore[list-item]
    checks = compile_restrictions(list(restrictions), list(space))  # type: ignore[arg-type]
    static_checks(args)
    grid_div = compile_divisors((lau.grid_div_x, lau.grid_div_y, lau.grid_div_z), list(space))
    min_repeats, max_repeats = tim.min_repeats, tim.max_repeats
    if tim.iterations is not None:
        min_repeats = max(1, int(tim.iterations))
        max_repeats = max(max_repeats, min_repeats)
    job = Job(
        None if distributed or supervised else ctx,
        load_source(source),
        kernel_name,
        list(args),
        Geometry(
            problem_size,
            lau.global_size,
            (grid_div[0], grid_div[1], grid_div[2]),
            lau.block_size_names or ("block_size_x", "block_size_y", "block_size_z"),
        ),
        Verification(ver.answer, ver.reference, ver.verify, ver.rtol, ver.atol),
        options_text(lau.options, None),
        dict(metrics or {}),
        ver.poison,
        list(ver.inout),
        tim.reset_outputs,
        tim.warmup,
        tim.min_time,
        min_repeats,
        max_repeats,
        exe.pinned,
        check_kind(exe.check),
        bool(tim.cold),
        tim.method,
    )
    # Lazily: a strategy walks or samples it, restrictions applied as it goes.
    configs = Space(space, checks)
    failed = configs.failed
    _harness_check(job, configs)
    fleet = sup = None
    if distributed:
        from .distributed import Fleet  # lazily: only this path needs Dask

        fleet = Fleet.open(exe.devices, exe.client, limit)
        ctx = fleet.view
        job.forget_args()
    elif supervised:
        sup = supervise(job, ctx, limit)
        ctx = ctx if ctx is not None else supervisor.DeviceView(sup)
    try:
        with locked_clocks(getattr(ctx, "info", None), tim.lock_clocks) as lock:
            return _sweep(
                job,
                ctx,
                space,
                restrictions,
                configs,
                failed,
                fleet,
                sup,
                kernel_name,
                problem_size,
                sea,
                exe,
                output,
                lock,
                goals,
            )
    finally:
        if fleet is not None:
            fleet.close()
        if sup is not None:
            sup.close()
            supervisor.checkin(sup)


def _sweep(
    job: Job,
    ctx: Any,
    space: dict[str, Sequence[Any]],
    restrictions: Sequence[Any],
    configs: Space,
    failed: list[tuple[Config, str]],
    fleet: Any,
    sup: Any,
    kernel_name: str,
    problem_size: Any,
    sea: Search,
    exe: Execution,
    output: Output,
    extra_meta: Mapping[str, Any],
    goals: Objectives,
) -> Results:
    """tune()'s sweep once its inputs are checked: here (fleet None) or on a Dask fleet."""
    from . import strategies

    strategy, max_fevals, time_limit = sea.strategy, sea.max_fevals, sea.time_limit
    out, timeout = output.path, exe.timeout
    defining = fp.defining(job, space, list(restrictions), ctx)
    meta = base_meta(
        ctx,
        experiment=f"tune:{kernel_name}",
        kernel=kernel_name,
        params={k: list(v) for k, v in space.items()},
        tune_params={k: list(v) for k, v in space.items()},
        options=job.options,
        method=job.method,
        warmup=job.warmup,
        min_time_s=job.min_time,
        strategy=strategy,
        verified=job.verification.active,
        metrics=list(job.metrics),
        x=None,
        defining=defining,
        **_space_meta(configs),
        isolated=sup is not None or fleet is not None,
        **extra_meta,
        **({"devices": fleet.view.labels} if fleet is not None else {}),
    )
    done: set[str] = set()
    append = False
    if out is not None and output.resume and Path(out).is_file():
        done = fp.check_resume(Path(out), defining)
        append = True
    previous = stops.finished(Results.load(out)) if append else None  # type: ignore[arg-type]

    kt = None
    if output.cache is not None:  # Kernel Tuner's cache file beside (or instead of) the rows
        from .ktcache import CacheWriter

        kt = CacheWriter(
            output.cache,
            device_name=ctx.info.name,
            kernel_name=kernel_name,
            problem_size=problem_size,
            tune_params=space,
            metrics=list(job.metrics),
            resume=output.resume,
        )
    resumed = list(previous.rows) if previous is not None else []
    if kt is not None and previous is None:  # a Kernel Tuner cache alone: its entries are done
        from .ktcache import rows_from_cache

        resumed = rows_from_cache({"tune_params_keys": list(space)}, kt.entries, config_key=config_key)
        done |= {r["config"] for r in resumed}
    search = strategies.make_strategy(
        strategy,
        configs,
        seed=sea.seed,
        options=dict(sea.options or {}),
        max_fevals=max_fevals,
        time_limit=time_limit,
        objectives=len(goals),
    )
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
        stream = RowStream(
            Results(meta, resumed),
            out,
            total=todo,
            progress=exe.progress,
            append=append,
            sinks=[kt],
        )
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
