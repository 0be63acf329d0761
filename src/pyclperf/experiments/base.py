"""THE contract every experiment follows, and the one function that runs any of them.

An experiment (``Experiment``) declares:

* ``points()``: the rows it will produce, each a dict of parameters;
* ``launch(point)``: how to launch one point, a ``Launch`` (kernel(s) with arguments bound,
  global and local ranges, the bytes the launch needs to move, the operations it counts, an
  optional reset run before every launch, extra columns);
* ``check(point, launch)``: how to verify one point, a ``Check`` (passed, what differed, extra
  columns), normally by writing fresh input, poisoning the outputs, ``launch.run()`` and
  comparing with a NumPy reference (pyclperf.measure.checks);
* optionally ``skip(point)``: why a point cannot run here (a missing feature), else None.

The base class does the rest, once: skipping, the launch check (the core's validate_launch),
verifying, adaptive timing (measure.timing.time_steps: rounds of launches until the median's
confidence interval is narrow enough, measure.timing_policy), the row (statistics, bandwidth,
operations per second, spread, ``noisy``) and its status (measure.results). Sweeps timing
other than kernel launches (transfers, batching, timers, peak) write ``measure``.
"""

from __future__ import annotations

import functools
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .. import _core
from ..device.clocks import Timing, check_method, event_clock, timing_for
from ..measure.residency import conditions_of, sweep_begins
from ..measure import timing_policy
from ..measure.timing import time_steps
from ..measure.timing_policy import Policy, policy_named
from ..device.peak import PeakBandwidth, theoretical
from ..measure.plausible import cache_allowance, ceiling_problem, clock_problem, flag
from ..measure.refusal import refusal, refused_name
from ..measure.results import SKIPPED, Results
from ..measure.stats import NOISY_SPREAD_PCT
from ..measure.sweep import base_meta, classify, run_points
from ._kit import DEFAULT_LOCAL_SIZE, check_launch, table
from ._notes import noise_note, say_noise, say_suspect
from ._timed_columns import LATER, timed_columns
from ._warmcold import cold_reset, residency

# Adaptive timing (measure.timing_policy, shared with tune()): launches continue until the
# median's interval is narrow enough; never fewer than the ``repeats`` asked for, never more
# than MAX_REPEATS, and at least MIN_TIME_S of kernel time (none by default).
MIN_TIME_S = timing_policy.MIN_TIME_S
MAX_REPEATS = timing_policy.MAX_SAMPLES

# A step of a launch: a kernel with its arguments bound, its global and its local size.
Step = tuple[Any, Any, Any]

_REGISTRY: dict[str, type["Sweep"]] = {}


class Sweep(ABC):
    """What the engine needs of any experiment: an id, a one-line description, its points, and
    how to measure one.

    ``measure`` returns a row's measured fields, including ``status`` (pyclperf.measure.results). The
    engine hands the experiment the theoretical ``peak`` before the first point and adds a
    ``fraction_of_peak`` column wherever ``peak_kind`` names a known ceiling. Defining a subclass
    with an ``id`` registers it (pyclperf.experiments.REGISTRY): there is no list to edit.
    """

    id: str = ""
    description: str = ""  # one line: what it measures (the CLI's help, the docs' catalogue)
    title: str = ""
    x: str = ""
    x_label: str = ""
    guide: str = ""  # where in the source documents this comes from
    # How plot.plot_results draws the record: a kind ("bandwidth", "modes", "bars"), its options.
    plot: dict[str, Any] | None = {"kind": "bandwidth"}
    peak: PeakBandwidth | None = None
    # The clock the run times by and the device's event clock verdict (run_experiment sets it).
    timing: Timing | None = None
    # How long each point is timed (run_experiment sets both per run). ``adaptive``: the sweep
    # times its points by them (``rule``); False for one that times a fixed number of repeats
    # on purpose (timers) or nothing (peak), which --min-time-s is then refused for.
    min_time_s: float = MIN_TIME_S
    policy: Policy = timing_policy.DEFAULT
    adaptive: bool = False
    order: int = 1000  # place in the catalogue: the source documents' order (timing first)
    # The guide's handling (guide/run.py, lanes.py). isolate: a process of its own (a kernel that
    # spins, builds a driver may abort on, another runtime). quiet: host work disturbs what it
    # measures (bus, clocks): no lane works beside it. host_bound: the lanes start it first.
    isolate: bool = False
    quiet: bool = False
    host_bound: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("id"):
            _REGISTRY[cls.id] = cls

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx

    # The constructor arguments that pyclperf.run's generic knobs fill (the CLI's --size,
    # --local-size, values): what "size" and "values" mean is the experiment's to say. None:
    # the experiment takes no such knob, and giving it is refused.
    size_arg: str | None = "items"
    values_arg: str | None = "values"
    local_size_arg: str | None = "local_size"

    @classmethod
    def configure(cls, ctx: Any, *, size: int | None = None, local_size: int | None = None,
                  values: list[int] | None = None, **options: Any) -> "Sweep":
        """Build from the generic knobs of ``pyclperf.run``; ``options`` go to the constructor.
        A knob the experiment does not take is refused, naming the experiment and the knob."""
        kwargs = dict(options)
        for knob, arg, value in (("size", cls.size_arg, size), ("local_size", cls.local_size_arg, local_size),
                                 ("values", cls.values_arg, values)):
            if value is None:
                continue
            if arg is None:
                flag = f" (--{knob.replace('_', '-')})" if knob != "values" else ""
                raise _core.InvalidArgumentError(
                    f"experiment {cls.id!r} takes no {knob}{flag}: it sets its own")
            kwargs[arg] = value
        return cls(ctx, **kwargs)

    # Constructor options of a quick run on a GPU (quick_options' default), where the defaults
    # are GPU-sized: smaller sizes or fewer points where the claim's verdict does not need them.
    quick_gpu: dict[str, Any] = {}

    @classmethod
    def quick_options(cls, info: Any) -> dict[str, Any]:
        """Constructor options of a quick run on the device ``info`` describes (``pyclperf run
        --quick``, ``pyclperf guide --quick``): ``quick_gpu`` on a GPU, {} elsewhere (a CPU
        device's defaults are small already). Options the user gives override these."""
        return dict(cls.quick_gpu) if info.is_gpu else {}

    @abstractmethod
    def points(self) -> list[dict[str, Any]]: ...

    @abstractmethod
    def measure(self, point: dict[str, Any], *, warmup: int, repeats: int, method: str,
                verify: bool) -> dict[str, Any]: ...

    def rule(self, repeats: int) -> Policy:
        """How long one point is timed: the run's policy floored by its repeats and minimum time."""
        return self.policy.at_least(repeats, self.min_time_s)

    def peak_kind(self, row: dict[str, Any]) -> str | None:
        """Which ceiling a row's bandwidth is held against: "dram", "pcie" or None."""
        return "dram"

    def footprint_bytes(self, row: dict[str, Any]) -> int | None:
        """The distinct bytes a row's launch touches (its working set), which the plausibility
        test (pyclperf.measure.plausible) holds against the ceiling: by default the bytes it needs to
        move. An experiment whose launches read the same bytes again says so here."""
        nbytes = row.get("bytes")
        return int(nbytes) if nbytes is not None else None

    def meta(self) -> dict[str, Any]:
        return {"experiment": self.id, "title": self.title, "description": self.description,
                "x": self.x, "x_label": self.x_label, "guide": self.guide, "plot": self.plot}

    def finish(self, results: Results) -> None:
        """Add conclusions drawn from all rows to ``results.meta`` (default: none)."""

    # The columns of the short table ``summary`` prints (those the results have, in order).
    summary_columns: Sequence[str] = ()

    @classmethod
    def summary(cls, results: Results) -> Any:
        """A short table (DataFrame) to print instead of the rows; None to print the rows."""
        return table(results, cls.summary_columns) if cls.summary_columns else None


@dataclass
class Launch:
    """How one point is launched: ``steps`` run in order (a launch's time is the sum of their
    event times), ``reset`` before each launch as its own command (never timed), ``nbytes`` the
    bytes the launch needs to read and write (effective bandwidth, Guide 2.2.2), ``ops`` the
    operations it counts (None where the metric is bandwidth alone) in ``ops_unit`` (the row
    gets ``<unit>``, ``g<unit>`` per second at the median and ``g<unit>_best``), ``columns`` extra fields
    for the row, ``rates`` columns computed as amount / median ns (e.g. {"mpix_per_s": pixels *
    1e3})."""

    steps: list[Step]
    nbytes: int
    ops: int | None = None
    ops_unit: str = "ops"
    reset: Callable[[], None] | None = None
    columns: dict[str, Any] = field(default_factory=dict)
    rates: dict[str, float] = field(default_factory=dict)

    @classmethod
    def one(cls, kernel: Any, global_size: Any, local_size: Any, nbytes: int,
            **kwargs: Any) -> "Launch":
        """A launch of a single kernel."""
        return cls([(kernel, global_size, local_size)], nbytes, **kwargs)

    def run(self) -> None:
        """One launch: the reset (if any), then every step in order, waiting for each."""
        if self.reset is not None:
            self.reset()
        for kernel, g, l in self.steps:
            kernel.run(g, l)


@dataclass
class Check:
    """The verdict on one point: whether it passed, what differed, extra columns for the row."""

    passed: bool
    detail: str = ""
    columns: dict[str, Any] = field(default_factory=dict)


class Experiment(Sweep):
    """The contract: ``points``, ``launch``, ``check`` (and optionally ``skip``); the base class
    measures. See the module docstring."""

    adaptive = True
    cold: bool = False  # flush the last-level cache before every timed launch (experiments/_warmcold.py)
    finish_later = False  # measure leaves its timed columns to run_experiment's finish_row

    @abstractmethod
    def launch(self, point: dict[str, Any]) -> Launch:
        """How to launch ``point``: kernels with arguments bound, ranges, bytes, operations."""

    @abstractmethod
    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        """Verify ``point`` once on fresh input with poisoned outputs (``launch.run()``)."""

    def skip(self, point: dict[str, Any]) -> str | None:
        """Why ``point`` cannot run on this device (a missing feature); None to run it."""
        return None

    def builds(self, point: dict[str, Any]) -> list[dict[str, Any]]:
        """The programs ``point``'s launch will build (ctx.program's keyword arguments each), so
        that the engine builds a sweep's variants side by side before its first point
        (Context.prebuild); [] where the experiment builds what it needs up front."""
        return []

    def verify(self, point: dict[str, Any]) -> Check:
        """Verify ``point`` once, untimed: its launch, the launch check, then ``check``."""
        launch = self.launch(point)
        for kernel, g, l in launch.steps:
            check_launch(self.id, kernel, g, l)
        return self.check(point, launch)

    def measure(self, point: dict[str, Any], *, warmup: int, repeats: int, method: str,
                verify: bool) -> dict[str, Any]:
        reason = self.skip(point)
        if reason:
            return {"status": SKIPPED, "verified": False, "error": reason}
        launch = self.launch(point)
        if self.cold:
            launch.reset = cold_reset(self.ctx, launch.reset)
        row: dict[str, Any] = dict(launch.columns)
        for kernel, g, l in launch.steps:
            check_launch(self.id, kernel, g, l)
        passed, detail = True, "not verified"
        watch = conditions_of(self.ctx)  # the GPU's clocks and power, where NVML knows it
        try:
            if verify:
                result = self.check(point, launch)
                passed, detail = result.passed, result.detail
                row.update(result.columns)
            if watch is not None:
                watch.begin()
            samples = time_steps(launch.steps, warmup=warmup, policy=self.rule(repeats),
                                 reset=launch.reset, method=method)
        except _core.ClError as exc:
            # The row keeps what the launch declared and says what OpenCL answered: a launch
            # the device declined for resources it lacks (measure.refusal) is skipped with the
            # reason, a finding about the point; anything else failed.
            why = refusal(exc, self.ctx)
            if why is not None:
                return {**row, "status": SKIPPED, "verified": False, "error": why,
                        "refused": refused_name(exc)}
            return {**row, "status": classify(exc), "verified": False, "error": str(exc)}
        if watch is not None:
            row.update(watch.end())
        tail = functools.partial(timed_columns, samples, launch, method, verify, passed, detail,
                                 watch is not None)
        if self.finish_later:  # run_experiment's finish_row makes them, as the next point runs
            row[LATER] = tail
        else:
            tail(row)
        return row


def run_experiment(
    experiment: Sweep,
    *,
    warmup: int = 3,
    repeats: int | None = None,
    method: str = "auto",
    verify: bool = True,
    out: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    peak: PeakBandwidth | None = None,
    min_time_s: float | None = None,
    policy: str | Policy = "default",
    cold: bool = False,
) -> Results:
    """Run every point of ``experiment``; ``peak`` defaults to ``theoretical(ctx)`` (NVML).

    ``method``: "auto" (events where the device's event clock passes its check, else the host
    clock: pyclperf.device.clocks), "events" or "host"; the metadata says which clock timed the run
    and why (``method``, ``method_asked``, ``method_reason``, ``event_clock``), and so does
    every timed row (``method``, ``method_reason``). Kernel launches are timed adaptively under
    ``policy`` (measure.timing_policy: "default", "thorough", "quick" or a Policy): at least
    ``repeats`` of them (default: the policy's), adding up to at least ``min_time_s`` seconds
    (default: the policy's), more until the median's confidence interval is within the
    policy's target; each row says how its timing stopped (``stopped``, ``ci_pct``). Every timed
    row carries its spread (IQR / median, %) and a ``noisy`` flag where that spread exceeds
    stats.NOISY_SPREAD_PCT; a row whose figures the device cannot reach is ``suspect``
    (pyclperf.measure.plausible). Every row records its working set and whether it fits what the
    caches may hold (``working_set_bytes``, ``cache_resident``); ``cold`` flushes the
    last-level cache before every timed launch (experiments/_warmcold.py).
    """
    check_method(method)
    try:
        rule = policy_named(policy) if isinstance(policy, str) else policy
    except ValueError as exc:
        raise _core.InvalidArgumentError(str(exc)) from None
    repeats = rule.min_samples if repeats is None else repeats
    if min_time_s is None:  # the policy's own floor (quick's); a fixed-repeats sweep has none
        min_time_s = rule.min_time_s if experiment.adaptive else 0.0
    if repeats < 1 or warmup < 0:
        raise _core.InvalidArgumentError(f"need repeats >= 1 and warmup >= 0, got {repeats}, {warmup}")
    if min_time_s < 0:
        raise _core.InvalidArgumentError(f"min_time_s must be >= 0, got {min_time_s}")
    ceilings = experiment.peak = peak or experiment.peak or theoretical(experiment.ctx)
    if not experiment.adaptive and min_time_s > 0:
        raise _core.InvalidArgumentError(
            f"{experiment.id} times a fixed number of repeats (--repeats): a minimum time per "
            "point (--min-time-s) does not apply")
    experiment.min_time_s, experiment.policy = min_time_s, rule
    if isinstance(experiment, Experiment):
        experiment.cold = bool(cold)
    elif cold:
        raise _core.InvalidArgumentError(f"{experiment.id} times no kernel launches of its own: "
                                         "cold (a cache flush before each) does not apply")
    # The clock is checked whatever the method: the record says it, and timers is held to it.
    clock = event_clock(experiment.ctx)
    timing = experiment.timing = timing_for(experiment.ctx, method)
    allowance = cache_allowance(experiment.ctx.info)
    meta = base_meta(experiment.ctx, **experiment.meta(), method=timing.method,
                     method_asked=method, method_reason=timing.reason,
                     event_clock=clock.as_meta(), warmup=warmup, repeats=repeats,
                     min_time_s=min_time_s, timing_policy=policy if isinstance(policy, str) else "custom",
                     rel_target=rule.rel_target, confidence=rule.confidence,
                     max_wall_s=rule.max_wall_s, verified=verify, noisy_spread_pct=NOISY_SPREAD_PCT,
                     peak_gbps=ceilings.dram_gbps, pcie_gbps=ceilings.pcie_gbps,
                     peak=ceilings.as_meta(), cache_allowance_bytes=allowance, cold=bool(cold))

    measure = functools.partial(experiment.measure, warmup=warmup, repeats=repeats,
                                method=timing.method, verify=verify)

    def finish_row(row: dict[str, Any]) -> None:
        later = row.pop(LATER, None)  # the timed columns Experiment.measure left (first)
        if later is not None:
            later(row)
        whole = dict(row)  # as measured: the fields added below are not what it is judged on
        kind = experiment.peak_kind(whole)
        ceiling = ceilings.gbps(kind)
        if ceiling and row.get("gbps") is not None:
            row["fraction_of_peak"] = row["gbps"] / ceiling
        if row.get("spread_pct") is not None:
            row["noisy"] = bool(row["spread_pct"] > NOISY_SPREAD_PCT)
        if timing.reason and row.get("method") == timing.method:
            row["method_reason"] = timing.reason
        # Residency matters where the row is held against DRAM (not PCIe, local memory, ALUs).
        footprint = experiment.footprint_bytes(whole)
        row.update(residency(footprint if kind == "dram" else None, allowance, bool(cold)))
        flag(row, [clock_problem(whole, clock), ceiling_problem(
            whole, kind=kind, ceiling_gbps=ceiling, footprint=footprint, allowance=allowance,
            source=ceilings.dram_source if kind == "dram" else ceilings.pcie_source)])

    points = experiment.points()
    sweep_begins(experiment.ctx)  # its first point reads no energy, whatever the last run's lasted
    if isinstance(experiment, Experiment):
        experiment.ctx.prebuild([r for p in points if experiment.skip(p) is None
                                 for r in experiment.builds(p)])
    experiment.finish_later = isinstance(experiment, Experiment)  # type: ignore[attr-defined]
    try:
        results = run_points(points, measure, meta=meta, out=out, progress=progress,
                             finish_row=finish_row)
    finally:
        experiment.finish_later = False  # type: ignore[attr-defined]
    if not results.meta.get("interrupted"):
        experiment.finish(results)
        say_noise(results)
        say_suspect(results)
        if out is not None:  # the streamed file's first line predates finish(): rewrite it whole
            results.to_json(out)
    return results


__all__ = ["Check", "DEFAULT_LOCAL_SIZE", "Experiment", "Launch", "MIN_TIME_S", "Sweep",
           "noise_note", "run_experiment"]
