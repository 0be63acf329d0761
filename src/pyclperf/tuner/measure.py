"""One configuration of a user's kernel: build, bind, one guarded and verified launch, adaptive
timing, and the row that says how it ended. Nothing a configuration does (a build error, a
refused launch, a write past an array, an exception in a user callable) escapes as anything but
its row's status."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from .. import _core
from ..device.clocks import timing_for
from ..measure.plausible import clock_problem, flag
from ..measure.results import (BUILD_FAILED, INVALID, LAUNCH_FAILED, OUT_OF_BOUNDS, OUT_OF_MEMORY,
                               WRONG)
from ..measure.sweep import classify, timed_row, verdict
from .arguments import Arguments
from .ceiling import out_of_memory
from .console import stderr_text
from .space import Config, Geometry
from ..measure.residency import cache_flush, chained, conditions_of, residency_columns
from ..measure import timing_policy
from ..measure.timing import collect
from .verdict import inout_note, settle
from .verification import Verification, unwritten_note

# Build logs are kept in the row when the compiler said something; this much of them.
LOG_CHARS = 4000


class ConfigFailed(Exception):
    """Ends one configuration with a status (raised inside measure, caught there)."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


def user_call(what: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Call a user's callable; any exception becomes the configuration's ``invalid`` status
    naming the callable. KeyboardInterrupt passes: it stops the sweep."""
    try:
        return fn(*args)
    except ConfigFailed:
        raise
    except MemoryError as exc:
        raise ConfigFailed(OUT_OF_MEMORY, out_of_memory(
            f"{what} ran out of memory: {type(exc).__name__}: {exc}")) from None
    except Exception as exc:  # noqa: BLE001 - any user error is that configuration's status
        raise ConfigFailed(INVALID, f"{what} raised {type(exc).__name__}: {exc}") from None


@dataclass
class Job:
    """Everything that stays the same from one configuration to the next."""

    ctx: Any
    source: str
    kernel_name: str
    args: Sequence[Any]
    geometry: Geometry
    verification: Verification
    options: str = ""
    metrics: Mapping[str, Callable[[Config, float], float]] = field(default_factory=dict)
    poison: Any = True            # True, False, or argument indices/names
    inout: Sequence[Any] = ()     # argument indices/names
    reset_outputs: bool = False
    warmup: int = 3
    # The shared timing rule (measure.timing_policy), as the experiments use it.
    min_time: float = timing_policy.MIN_TIME_S
    min_repeats: int = timing_policy.MIN_SAMPLES
    max_repeats: int = timing_policy.MAX_SAMPLES
    pinned: bool = False
    check: str | None = None      # "memory": each configuration's launch first on Oclgrind
    cold: bool = False            # flush the caches before every timed launch
    method: str = "auto"          # the clock: "auto", "events" or "host" (pyclperf.device.clocks)

    def __post_init__(self) -> None:
        self.arguments = Arguments(self.ctx, self.pinned)
        # One configuration's resolved arguments, kept for the very next resolve_args call:
        # tune()'s harness check resolves the first configuration before the sweep measures
        # it, and argument callables may be costly (they build whole input arrays).
        self._ahead: tuple[str, list[Any]] | None = None

    def resolve_args(self, config: Config, keep: bool = False) -> list[Any]:
        """Arguments for this configuration: callables are called with it (once, when the
        previous call asked to ``keep`` them for this same configuration)."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None and ahead[0] == repr(config):
            return ahead[1]
        values = [user_call(f"argument {i} (a callable of the configuration)", a, config)
                  if callable(a) and not isinstance(a, type) else a
                  for i, a in enumerate(self.args)]
        if keep:
            self._ahead = (repr(config), values)
        return values

    def forget_args(self) -> None:
        """Drop arguments kept ahead (the sweep runs elsewhere: a fleet resolves its own)."""
        self._ahead = None


def restriction_verdict(config: Config, restrictions: Sequence[Callable[[Config], bool]]
                        ) -> str | None:
    """None when every restriction allows ``config``, "" when one rules it out, else why one
    raised (that configuration is then invalid, the others unaffected)."""
    try:
        if all(user_call(f"restriction {i}", r, config) for i, r in enumerate(restrictions)):
            return None
    except ConfigFailed as exc:
        return str(exc) or "a restriction raised"
    return ""


def prune(configs: Sequence[Config], restrictions: Sequence[Callable[[Config], bool]]
          ) -> tuple[list[Config], list[tuple[Config, str]]]:
    """(allowed configurations, [(configuration, why its restriction failed)]) of a list of
    configurations (searchspace.Space does the same lazily over a whole space)."""
    allowed, failed = [], []
    for config in configs:
        why = restriction_verdict(config, restrictions)
        if why is None:
            allowed.append(config)
        elif why:
            failed.append((config, why))
    return allowed, failed


def _indices(spec: Any, names: Sequence[str], what: str) -> list[int]:
    out = []
    for s in spec:
        if isinstance(s, str):
            if s not in names:
                raise ConfigFailed(INVALID, f"{what} names '{s}', which is no argument of the "
                                            f"kernel ({', '.join(names)})")
            out.append(names.index(s))
        else:
            if not 0 <= int(s) < len(names):
                raise ConfigFailed(INVALID, f"{what} index {s} is out of range")
            out.append(int(s))
    return out


def _build(job: Job, config: Config, row: dict[str, Any]) -> Any:
    """The configuration's kernel. The build log, and whatever the compiler printed on the
    console meanwhile ("2 warnings generated."), go into the row, not the terminal."""
    t0 = time.perf_counter()
    printed: list[str] = []
    try:
        with stderr_text(printed):
            program = job.ctx.program(job.source, defines=config, options=job.options)
    except _core.BuildError as exc:
        log = "\n".join([exc.log.strip()] + printed).strip()
        raise ConfigFailed(BUILD_FAILED, f"{exc.name}: {log[:LOG_CHARS]}") from None
    row["compile_s"] = time.perf_counter() - t0
    log = "\n".join([program.build_log.strip()] + printed).strip()
    if log:
        row["build_log"] = log[:LOG_CHARS]
    try:
        kernel = program.kernel(job.kernel_name)
    except _core.InvalidArgumentError as exc:
        raise ConfigFailed(INVALID, str(exc)) from None
    row["kernel_work_group_size"] = int(kernel.limits().work_group_size)
    return kernel


def launch_geometry(job: Job, config: Config) -> tuple[list[int], list[int] | None]:
    """The configuration's (global, local) sizes; a size that is no positive integer (a block
    size of 0, inf or 2**70), or a user's callable that raised, ends it as ``invalid``."""
    try:
        return job.geometry.ndrange(config)
    except _core.InvalidArgumentError as exc:
        raise ConfigFailed(INVALID, str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - problem_size/global_size/grid divisor callables
        raise ConfigFailed(INVALID, "the launch geometry (problem size, global_size or grid "
                                    f"divisor) raised {type(exc).__name__}: {exc}") from None


def _check_launch(kernel: Any, g: list[int], local: list[int] | None) -> None:
    try:
        _core.validate_launch(kernel, g, local or [])
    except _core.InvalidArgumentError as exc:  # a DeviceLimitError too: classify tells them apart
        limit = isinstance(exc, _core.DeviceLimitError)
        raise ConfigFailed(classify(exc), f"device limit: {exc}" if limit else str(exc)) from None


def _launch(kernel: Any, g: list[int], local: list[int] | None) -> None:
    try:
        kernel.run(g, local)
    except _core.ClError as exc:
        raise ConfigFailed(LAUNCH_FAILED, str(exc)) from None


def measure(job: Job, config: Config) -> dict[str, Any]:
    """The measured part of one configuration's row (never raises but KeyboardInterrupt)."""
    row: dict[str, Any] = {}
    try:
        _measure(job, config, row)
    except ConfigFailed as exc:
        row.update(status=exc.status, error=str(exc), verified=False)
    except MemoryError as exc:  # the device's memory, or the worker's ceiling (ceiling.py)
        row.update(status=OUT_OF_MEMORY, error=out_of_memory(f"MemoryError: {exc}"), verified=False)
    except (_core.PyclperfError, TypeError, ValueError) as exc:
        named = isinstance(exc, _core.PyclperfError)
        row.update(status=classify(exc), error=f"{type(exc).__name__}: {exc}" if named else str(exc),
                   verified=False)
    return row


def guarded_launch(job: Job, kernel: Any, g: list[int], local: list[int] | None,
                   values: list[Any], inout: list[int], poisoned: list[int]) -> None:
    """One launch with every guard zone and every const input checked after it; raises
    ConfigFailed(OUT_OF_BOUNDS) naming the arguments hit and how far the write went."""
    args = job.arguments
    seals = args.sealed(skip=poisoned)
    _launch(kernel, g, local)
    problem = args.guard_problem() or args.breached(seals)
    if problem:
        raise ConfigFailed(OUT_OF_BOUNDS, problem)


def memory_check(job: Job, config: Config, values: list[Any], g: list[int],
                 local: list[int] | None) -> float:
    """check="memory": the configuration's launch on Oclgrind first, the same arguments and
    sizes, before anything runs on the device. A finding ends the configuration: a write or
    read out of an array's (or a __local buffer's) bounds is ``out of bounds``; a data race, a
    use of an uninitialised value or a divergent barrier makes the outputs undefined, so
    ``wrong result``. Returns the seconds it took."""
    from .memcheck import MemcheckError, memcheck

    t0 = time.perf_counter()
    try:
        found = memcheck(job.source, job.kernel_name, values, g, local, options=job.options,
                         defines=config)
    except MemcheckError as exc:
        raise ConfigFailed(INVALID, f"memory check: {exc}") from None
    if found:
        status = OUT_OF_BOUNDS if any(f.kind == "out of bounds" for f in found) else WRONG
        raise ConfigFailed(status, "memory check (Oclgrind): " + "; ".join(map(str, found[:5]))
                           + (f"; and {len(found) - 5} more" if len(found) > 5 else ""))
    return time.perf_counter() - t0


def verified_launch(job: Job, config: Config, row: dict[str, Any],
                    judged: list[Any] | None = None) -> tuple[Any, list[int], list[int] | None, list[int]]:
    """Build, bind and launch once with outputs poisoned and guard zones checked; raises
    ConfigFailed unless the outputs pass. A poisoned output that does not match is explained
    by relaunches (verdict.settle): elements never written keep their input, an argument the
    kernel reads is given its input; ``row["notes"]`` says which. Returns what timing needs;
    ``judged``, when given, receives the outputs as they were judged (the device's buffers may
    hold a relaunch's poison where the kernel never writes)."""
    g, local = launch_geometry(job, config)
    row.update(global_size=str(tuple(g)), local_size=str(tuple(local)) if local else "auto")
    kernel = _build(job, config, row)
    _check_launch(kernel, g, local)
    names = [a.name for a in kernel.args]
    values = job.resolve_args(config)
    inout = _indices(job.inout, names, "inout")
    if job.check == "memory":
        row["memcheck_s"] = memory_check(job, config, values, g, local)

    # The guarded launch: every output poisoned, every guard zone checked afterwards. Which
    # outputs are poisoned is known before binding, so bind does not upload what the poison
    # overwrites at once.
    t0 = time.perf_counter()
    if job.verification.active:  # the arguments first: the answer is checked against them
        job.arguments.check(kernel, values)
    expected = user_call("the reference", job.verification.expected, config,
                         f"{config!r}", values, names) if job.verification.active else []
    checked = [i for i, e in enumerate(expected) if e is not None]
    if job.poison is True:
        poisoned = checked
    elif job.poison is False:
        poisoned = []
    else:
        poisoned = _indices(job.poison, names, "poison")
    poisoned = [i for i in poisoned if i not in inout]
    reference_s = time.perf_counter() - t0
    args = job.arguments
    args.bind(kernel, values, math.prod(g), inout, poisoned)
    t0 = time.perf_counter()
    poisoned = [i for i in poisoned if i in args.placed]

    def launch(poison_now: list[int], which: int) -> list[Any]:
        """One more guarded launch: every writable array's input again (the last launch may
        have changed it), poison ``which`` over ``poison_now``."""
        for i, p in args.placed.items():
            if p.writable and i not in poison_now:
                args.upload(i)
        for i in poison_now:
            args.poison(i, which)
        guarded_launch(job, kernel, g, local, values, inout, poison_now)
        return args.outputs()

    for i in poisoned:
        args.poison(i)
    guarded_launch(job, kernel, g, local, values, inout, poisoned)
    passed, detail, found, kept = True, "", [], []
    v = job.verification
    if v.active:
        outputs = args.outputs()
        masks = v.masks(outputs, expected)
        unwritten: dict[int, Any] = {}
        if any(masks.get(i) is not None for i in poisoned):
            settled = settle(outputs, launch, expected, poisoned,
                             {i: args.placed[i].host for i in poisoned}, v)
            outputs, unwritten = settled.outputs, settled.unwritten
            masks = v.masks(outputs, expected)
            for i in settled.inout:
                args.keep_input(i)
            inout = inout + settled.inout
            found = [inout_note(i, names[i]) for i in settled.inout]
        passed, detail = user_call("verify", v.judge, config, outputs, expected, names, masks,
                                   unwritten)
        kept = [unwritten_note(never, i, names[i]) for i, never in sorted(unwritten.items())
                if masks[i] is None or not (masks[i] & never).any()]
    if judged is not None:
        judged[:] = outputs if v.active else args.outputs()
    if found or kept:
        row["notes"] = "; ".join(found + kept)
    row["verify_s"] = reference_s + time.perf_counter() - t0
    if not passed:  # the error says how the arguments were verified when it was not as given
        raise ConfigFailed(WRONG, "; ".join([detail] + found))
    return kernel, g, local, inout


def _measure(job: Job, config: Config, row: dict[str, Any]) -> None:
    kernel, g, local, inout = verified_launch(job, config, row)
    t0 = time.perf_counter()
    restore: Callable[[], None] | None = None
    if job.reset_outputs:
        restore = job.arguments.upload_all
    elif inout:
        restore = job.arguments.restore_inout
    if job.cold:
        restore = chained(restore, cache_flush(job.ctx))
    watch = conditions_of(job.ctx)
    # The device's event clock is checked once per device and driver (pyclperf.device.clocks): where
    # it fails, "auto" times by the host clock, and events asked for anyway make the row suspect.
    timing = timing_for(job.ctx, job.method)
    try:
        if watch is not None:
            watch.begin()
        policy = replace(timing_policy.DEFAULT, min_samples=job.min_repeats,
                         min_time_s=job.min_time,
                         max_samples=max(job.max_repeats, job.min_repeats))
        samples = collect(kernel, g, local, warmup=job.warmup, policy=policy, reset=restore,
                          method=timing.method)
        times = samples.times
    except _core.ClError as exc:
        raise ConfigFailed(LAUNCH_FAILED, str(exc)) from None
    row["benchmark_s"] = time.perf_counter() - t0
    if watch is not None:
        row.update(watch.end())
    stats = timed_row(times, None, timing.method)
    seconds = stats["median_ns"] * 1e-9
    # A configuration that reaches timing has passed its verified launch (or was not asked to).
    row.update({**stats, **verdict(job.verification.active, True, "")},
               time_ms=stats["median_ns"] * 1e-6, times_ns=[float(t) for t in times],
               **samples.columns())
    if timing.reason:
        row["method_reason"] = timing.reason
    row.update(residency_columns(job.arguments, job.ctx.info, inout, seconds, job.cold))
    if row.get("energy_j"):
        row["energy_per_launch_j"] = row["energy_j"] / max(len(times), 1)
    for name, f in job.metrics.items():
        row[name] = float(user_call(f"metric '{name}'", f, config, seconds))
    flag(row, [clock_problem(row, timing.clock)])


def run_once(job: Job, config: Config) -> list[Any]:
    """run_kernel's path: one guarded launch; outputs back, or KernelRunError naming the
    problem (``invalid`` for a launch size or an argument the kernel cannot take)."""
    row: dict[str, Any] = {}
    try:
        g, local = launch_geometry(job, config)
        kernel = _build(job, config, row)
        _check_launch(kernel, g, local)
        values = job.resolve_args(config)
        inout = _indices(job.inout, [a.name for a in kernel.args], "inout")
        if job.check == "memory":
            memory_check(job, config, values, g, local)
        job.arguments.bind(kernel, values, math.prod(g), inout)
        guarded_launch(job, kernel, g, local, values, inout, [])
        return job.arguments.outputs()
    except ConfigFailed as exc:
        raise KernelRunError(exc.status, str(exc)) from None
    except (TypeError, ValueError, _core.InvalidArgumentError) as exc:
        raise KernelRunError(INVALID, str(exc)) from None


class KernelRunError(_core.PyclperfError):
    """run_kernel could not run the kernel as asked; ``status`` says how (as tune's rows do)."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status

