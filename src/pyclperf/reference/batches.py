"""Batches of back-to-back launches timed by a clock of start and end marks: the part of the
honest CUDA reference (pyclperf.reference.cuda) that knows nothing of CUDA, so tests drive it with
a fake clock on machines without a GPU.

Why batches: an event recorded on an idle stream completes at once, and the device then waits
for the host to issue the call, so one call between two events holds the host's launch gap. One
untimed launch is queued first, N launches follow back to back, and N is chosen so a batch lasts
far longer than a stated bound on the gap; a batch shorter than a stated multiple of it is
refused rather than reported.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import numpy as np

# An upper bound on the host's launch gap (issue + driver latency per call): a few us on the
# H100/H200 machines, so 10 us leaves room. A batch must last at least MIN_GAP_MULTIPLE times it,
# so one gap can be at most 2% of a batch; calibration aims at TARGET_BATCH_S, where it is 0.05%.
LAUNCH_GAP_BOUND_S = 10e-6
MIN_GAP_MULTIPLE = 50.0
TARGET_BATCH_S = 20e-3
# Above this share of a batch's device time spent issuing it, the host may have set the pace.
HOST_BOUND_SHARE = 0.5

# For conclusions that name a reference without measuring it.
COPY_REFERENCE = "cudaMemcpyAsync device-to-device (CuPy)"
TIMED_AS = ("CUDA events around batches of back-to-back launches (one untimed launch queued "
            f"ahead, each batch >= {MIN_GAP_MULTIPLE:g}x a {1e6 * LAUNCH_GAP_BOUND_S:g} us "
            "launch-gap bound), per-launch median over batches")


class CudaUnavailableError(RuntimeError):
    """No CUDA reference can be measured here (CuPy missing, or no CUDA device)."""


class BatchTooShortError(ValueError):
    """A timed batch lasted too little for the launch gap to be negligible in it."""


class Clock(Protocol):
    """Marks a batch's start and end in the launches' own order (e.g. CUDA events on their stream)."""

    def record_start(self) -> None: ...

    def record_end(self) -> None: ...

    def elapsed_s(self) -> float:
        """Seconds from the start mark to the end mark (waits for the end)."""
        ...


@dataclass(frozen=True)
class BatchPolicy:
    gap_bound_s: float = LAUNCH_GAP_BOUND_S
    min_gap_multiple: float = MIN_GAP_MULTIPLE
    target_batch_s: float = TARGET_BATCH_S
    min_launches: int = 2
    max_launches: int = 100_000

    @property
    def shortest_batch_s(self) -> float:
        return self.gap_bound_s * self.min_gap_multiple


@dataclass
class Timing:
    """Per-launch seconds, one figure per batch, and how they were taken."""

    batch_per_launch_s: list[float]
    launches: int
    how: str
    # Host seconds spent issuing a batch over the batch's device seconds (median): near or above
    # 1 the host, not the device, set the pace, and the figure is a launch rate.
    host_issue_share: float = 0.0

    @property
    def median_s(self) -> float:
        return float(np.median(self.batch_per_launch_s))

    @property
    def min_s(self) -> float:
        return float(min(self.batch_per_launch_s))

    @property
    def max_s(self) -> float:
        return float(max(self.batch_per_launch_s))

    @property
    def spread_pct(self) -> float:
        return 100.0 * (self.max_s / self.min_s - 1.0)

    def as_dict(self) -> dict[str, Any]:
        return {"median_ns": 1e9 * self.median_s, "min_ns": 1e9 * self.min_s,
                "max_ns": 1e9 * self.max_s, "spread_pct": self.spread_pct,
                "batch_ns": [1e9 * s for s in self.batch_per_launch_s],
                "launches_per_batch": self.launches, "batches": len(self.batch_per_launch_s),
                "host_issue_share": self.host_issue_share, "how": self.how}


class BatchTimer:
    """Times ``launch`` (one call that queues work) in batches of back-to-back launches."""

    def __init__(self, launch: Callable[[], None], clock: Clock, policy: BatchPolicy = BatchPolicy(),
                 launches: int | None = None, clock_name: str = "CUDA events") -> None:
        self.launch, self.clock, self.policy = launch, clock, policy
        self.launches = launches
        self.clock_name = clock_name
        self.issue_shares: list[float] = []  # one per timed batch (see Timing.host_issue_share)

    def _batch_s(self, n: int) -> float:
        self.launch()  # untimed: keeps the stream busy while the start mark is queued
        self.clock.record_start()
        began = time.perf_counter()
        for _ in range(n):
            self.launch()
        self.clock.record_end()
        issued = time.perf_counter() - began
        total = self.clock.elapsed_s()
        self._last_share = issued / total if total > 0 else math.inf
        return total

    def calibrate(self) -> int:
        """The launches per batch that make a batch last about the target (grown from a trial)."""
        p = self.policy
        n = p.min_launches
        for _ in range(6):
            total = self._batch_s(n)
            if total >= p.target_batch_s or n >= p.max_launches:
                break
            # 10% over, since the trial's own gap made each launch look slower than it is.
            want = math.ceil(1.1 * n * p.target_batch_s / max(total, 1e-12))
            n = min(p.max_launches, max(want, n + 1))
        self.launches = n
        return n

    def batch(self) -> float:
        """Seconds per launch of one timed batch; BatchTooShortError if the batch was too short."""
        n = self.launches if self.launches is not None else self.calibrate()
        if n < self.policy.min_launches:
            raise BatchTooShortError(f"{n} launches per batch: at least {self.policy.min_launches}")
        total = self._batch_s(n)
        p = self.policy
        if total < p.shortest_batch_s:
            raise BatchTooShortError(
                f"a batch of {n} launches lasted {1e6 * total:.1f} us, under {p.min_gap_multiple:g}x "
                f"the {1e6 * p.gap_bound_s:g} us launch-gap bound ({1e6 * p.shortest_batch_s:g} us): "
                "the gap would be a visible part of the figure; use more launches or more data")
        self.issue_shares.append(self._last_share)
        return total / n

    def how(self, batches: int) -> str:
        text = (f"{self.clock_name} around {self.launches} back-to-back launches (one untimed "
                f"launch queued ahead), per-launch median of {batches} batches")
        if self.issue_shares and float(np.median(self.issue_shares)) > HOST_BOUND_SHARE:
            text += "; host-bound: the launches were issued no faster than they ran"
        return text

    def measure(self, batches: int = 5) -> Timing:
        self.issue_shares = []
        per = [self.batch() for _ in range(max(1, int(batches)))]
        return Timing(per, int(self.launches or 0), self.how(len(per)),
                      float(np.median(self.issue_shares)))
