"""An experiment's kernels on Oclgrind: every point verified once on the simulated device, and
what Oclgrind found wrong in each (pyclperf.tuner.memcheck does the same for one kernel).

``check_experiment("reduction", {"items": 4096, "local_size": 64})`` builds the experiment on
Oclgrind's device in a child process (pyclperf.device.oclgrind) and, point by point, runs its
verification (``Experiment.verify``: the launch check, fresh inputs, poisoned outputs, one
launch, the comparison with NumPy) untimed. Experiments that time something other than kernel
launches (``Sweep`` without ``verify``) run ``measure`` once, with one timed repeat. Oclgrind
simulates every work-item, so the options must make the experiment tiny.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..device.oclgrind import DEFAULT_TIMEOUT_S, Finding, parse, run_child, split


@dataclass
class PointCheck:
    """One point on Oclgrind: its parameters (None: the experiment's construction), whether it
    ran ("checked"), was skipped (a missing feature: ``reason`` says which) or raised
    ("failed", ``reason`` the exception), whether its verification passed, and the findings."""

    point: dict[str, Any] | None
    outcome: str
    reason: str = ""
    passed: bool | None = None
    findings: list[Finding] = field(default_factory=list)


def check_experiment(name: str, options: Mapping[str, Any] | None = None, *,
                     timeout_s: float = DEFAULT_TIMEOUT_S, data_races: bool = True,
                     uninitialized: bool = True) -> list[PointCheck]:
    """Verify every point of experiment ``name`` (built with ``options``, as pyclperf.run's
    keywords: size, local_size, values and the experiment's own) once on Oclgrind. The first
    entry is the construction (point None), holding what its own launches reported.

    API errors are not findings here: experiments probe for features by building kernels that
    may fail, and Oclgrind reports each such failure (on stderr) as it happens.

    Raises what building the experiment raises there, and MemcheckError where Oclgrind is
    missing, crashes or runs past ``timeout_s``."""
    run = run_child("pyclperf.experiments._memcheck:_verify_points",
                    {"name": name, "options": dict(options or {})}, timeout_s=timeout_s,
                    data_races=data_races, uninitialized=uninitialized)
    rows = run.result
    parts = split(run.log, [edge for row in rows for edge in (row["start"], row["end"])])
    checks = [PointCheck(None, "checked", findings=parse(parts[0])[0])]
    for i, row in enumerate(rows):
        found = parse(parts[2 * i + 1])[0]
        checks.append(PointCheck(row["point"], row["outcome"], row["reason"], row["passed"], found))
    return checks


def _verify_points(ctx: Any, payload: dict[str, Any], mark: Callable[[], int]) -> list[dict[str, Any]]:
    """In the child: build the experiment, then verify each point between two marks of the log."""
    from . import _refuse_unknown, get
    from .base import Experiment

    cls = get(payload["name"])
    options = dict(payload["options"])
    generic = {k: options.pop(k) for k in ("size", "local_size", "values") if k in options}
    _refuse_unknown(cls, options)
    experiment = cls.configure(ctx, **generic, **options)
    if isinstance(experiment, Experiment):
        experiment.min_time_s = 0.0
    else:
        from ..device.peak import theoretical

        experiment.peak = theoretical(ctx)
    rows = []
    for point in experiment.points():
        start = mark()
        row: dict[str, Any] = {"point": point, "outcome": "checked", "reason": "", "passed": None}
        try:
            if isinstance(experiment, Experiment):
                reason = experiment.skip(point)
                if reason:
                    row.update(outcome="skipped", reason=reason)
                else:
                    row["passed"] = bool(experiment.verify(point).passed)
            else:
                measured = experiment.measure(point, warmup=0, repeats=1, method="events", verify=True)
                status = measured.get("status")
                if status == "skipped":
                    row.update(outcome="skipped", reason=str(measured.get("error", "")))
                else:
                    row["passed"] = bool(measured.get("verified", status == "ok"))
                    if status not in ("ok", "timed"):
                        row["reason"] = f"{status}: {measured.get('error', '')}"
        except Exception as exc:  # noqa: BLE001 - one point's failure is that point's outcome
            row.update(outcome="failed", reason=f"{type(exc).__name__}: {exc}")
        row["end"] = mark()
        row["start"] = start
        rows.append(row)
    return rows
