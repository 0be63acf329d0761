"""Adaptive timing shared by tune() and the experiments: launches are collected in rounds of
back-to-back launches until the median is known well enough (measure.timing_policy: a
confidence interval on the median narrower than a relative target), within caps.

The measured time is only what the clock says. A clock that does not advance (a driver whose
event timestamps are placeholders) would never add up to a minimum time, and a noisy one might
never converge; so the host's own clock bounds the loop too: no more rounds once the loop has
spent ``wall_limit_s(min_time_s, max_wall_s)`` of wall time, and no round larger than what fits
in the rest.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from . import timing_policy
from .timing_policy import Policy, median_interval, relative_half_width

# The wall time adaptive timing may spend: this many times the minimum time it is asked to add
# up, plus the policy's own cap (timing_policy.MAX_WALL_S by default).
WALL_FACTOR = 10.0
WALL_FLOOR_S = timing_policy.MAX_WALL_S

# How a point's collecting ended (a row's ``stopped``).
CONVERGED = "interval"      # the interval on the median reached the target
ENOUGH = "samples"          # no interval goal: the samples (and minimum time) asked for
SAMPLE_CAP = "sample cap"   # max_samples reached before the target
WALL_CAP = "wall cap"       # the wall-time cap reached before the target


def wall_limit_s(min_time_s: float, max_wall_s: float = WALL_FLOOR_S) -> float:
    """Seconds of wall time after which adaptive timing starts no more rounds."""
    return WALL_FACTOR * float(min_time_s) + float(max_wall_s)


@dataclass
class Samples:
    """A point's timed launches (ns) and how collecting them ended."""

    times: np.ndarray
    stopped: str
    rounds: int
    interval: tuple[float, float] | None  # the median's confidence interval (ns), if any
    half_width: float                     # its larger side over the median (inf: none)

    def columns(self) -> dict[str, Any]:
        """The row's record of it: ``stopped``, ``rounds``, ``ci_low_ns``/``ci_high_ns`` and
        ``ci_pct`` (the interval's larger side, % of the median)."""
        out: dict[str, Any] = {"stopped": self.stopped, "rounds": self.rounds}
        if self.interval is not None:
            out.update(ci_low_ns=self.interval[0], ci_high_ns=self.interval[1],
                       ci_pct=100.0 * self.half_width if math.isfinite(self.half_width) else None)
        return out


def collect(kernel: Any, g: list[int], local: list[int] | None, *, warmup: int,
            policy: Policy = timing_policy.DEFAULT, reset: Callable[[], None] | None = None,
            method: str = "events") -> Samples:
    """Launch ``kernel`` in rounds of back-to-back launches, timed by ``method`` ("events" or
    "host"), until ``policy`` is met: at least ``min_samples`` launches adding up to at least
    ``min_time_s``, and (with a ``rel_target``) a ``confidence`` interval on the median within
    ``rel_target`` of it; or until ``max_samples`` or the wall-time cap.

    With ``reset``, inputs are restored before every launch; the event covers only the kernel,
    so the restoring copy never enters a figure (with "host" it is outside the bracket too).
    """
    return time_steps([(kernel, g, local)], warmup=warmup, policy=policy, reset=reset, method=method)


def time_steps(steps: Sequence[tuple[Any, Any, Any]], *, warmup: int,
               policy: Policy = timing_policy.DEFAULT, reset: Callable[[], None] | None = None,
               method: str = "events") -> Samples:
    """``collect`` for a launch of one or more steps (kernel, global size, local size) run in
    turn: a sample is one launch of them all, its time the sum of theirs."""
    steps = list(steps)

    def launch() -> None:
        for kernel, g, local in steps:
            kernel.run(g, local)

    def batch(count: int, warm: int) -> list[float]:
        if reset is None and len(steps) == 1:
            # Warm-ups and launches queued back to back with one wait, as a hand-written loop
            # does, not one launch-and-wait from Python each.
            kernel, g, local = steps[0]
            return np.asarray(kernel.time(g, local, warmup=warm, repeats=count, method=method),
                              dtype=float).tolist()
        out = []
        for i in range(warm + count):
            if reset is not None:
                reset()
            if i < warm:
                launch()
            else:
                out.append(sum(float(k.time(g, local, warmup=0, repeats=1, method=method)[0])
                               for k, g, local in steps))
        return out

    return collect_rounds(batch, warmup=warmup, policy=policy)


def collect_rounds(batch: Callable[[int, int], Sequence[float]], *, warmup: int,
                   policy: Policy = timing_policy.DEFAULT) -> Samples:
    """The rounds of ``collect`` for anything timed in batches: ``batch(count, warmup)`` runs
    ``warmup`` untimed and then ``count`` timed repetitions back to back and returns their times
    (ns). Kernels, host transfers and device copies all stop by this one rule."""
    start = time.perf_counter()
    min_samples = min(policy.min_samples, policy.max_samples)
    times = list(map(float, batch(min_samples, warmup)))
    rounds = 1
    goal_ns = policy.min_time_s * 1e9
    limit = wall_limit_s(policy.min_time_s, policy.max_wall_s)
    while True:
        ordered = sorted(times)
        width = (relative_half_width(ordered, policy.confidence)
                 if policy.rel_target is not None else 0.0)
        total = sum(times)
        if total >= goal_ns and (policy.rel_target is None or width <= policy.rel_target):
            stopped = CONVERGED if policy.rel_target is not None else ENOUGH
            break
        if len(times) >= policy.max_samples:
            stopped = SAMPLE_CAP
            break
        spent = time.perf_counter() - start
        if spent >= limit:
            stopped = WALL_CAP
            break
        n = len(times)
        need = 1
        if total < goal_ns:  # launches still missing for the minimum time, at the median
            need = max(need, math.ceil((goal_ns - total) / max(ordered[(n - 1) // 2], 1.0)))
        if policy.rel_target is not None and width > policy.rel_target:
            # The interval narrows as 1/sqrt(n): the samples it would take at this spread,
            # grown at least by half and at most four-fold a round (the first estimates are
            # rough: a busy device's first launches can be several times slower than the rest).
            wanted = n * (width / policy.rel_target) ** 2 if math.isfinite(width) else 4 * n
            need = max(need, min(math.ceil(wanted) - n, 4 * n), max(1, n // 2))
        # Launches that fit in the wall time left, at the wall time each has cost so far.
        fits = max(1, int((limit - spent) / (spent / n))) if spent > 0 else need
        times += [float(t) for t in batch(min(policy.max_samples - n, need, fits), 0)]
        rounds += 1
    if policy.rel_target is None:  # the loop asked for no width: the row still records it
        width = relative_half_width(ordered, policy.confidence)
    return Samples(np.asarray(times), stopped, rounds, median_interval(ordered, policy.confidence),
                   width)


def time_adaptively(kernel: Any, g: list[int], local: list[int] | None, *, warmup: int,
                    min_time_s: float, min_repeats: int, max_repeats: int,
                    reset: Callable[[], None] | None = None, method: str = "events",
                    rel_target: float | None = None,
                    confidence: float = timing_policy.CONFIDENCE,
                    max_wall_s: float = WALL_FLOOR_S) -> np.ndarray:
    """The times (ns) of ``collect`` under a policy given piece by piece: at least
    ``min_repeats`` launches (at most ``max_repeats``) adding up to ``min_time_s``, and with
    ``rel_target`` an interval on the median that narrow."""
    policy = Policy(min_samples=min_repeats, rel_target=rel_target, confidence=confidence,
                    min_time_s=min_time_s, max_samples=max(max_repeats, min_repeats),
                    max_wall_s=max_wall_s)
    return collect(kernel, g, local, warmup=warmup, policy=policy, reset=reset, method=method).times
