"""One work-item's dependent loads over a working set of any size, on a CPU device.

The ``workingset`` experiment's ws_chase (kernels/workingset.cl) over a random cycle of the
set's words (experiments/_chain.py), in a buffer on huge pages (hugepages.py) so the loads
measure the caches rather than the TLB. Every point draws a fresh cycle, checks that one launch
of ``steps`` loads ends where the cycle's closed form says (after the end word was poisoned),
then times launches that continue along the cycle. The figure is the fastest launch's time per
load; ``again`` times a point once more on the same cycle (the sweep's later rounds). Writing the cycle leaves a set that fits a cache in it, as a repeated walk would.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..experiments._chain import BLOCK_WORDS, FULL_PERMUTATION_WORDS, cycle
from ..measure.checks import compare, poison_device
from ..measure.results import OK
from .hugepages import sweep_buffer
from .record import Effort, latency, timings

STEPS = 4096     # loads per launch: 0.7 ms at DRAM latency under a hypervisor
MIN_LAUNCHES = 30  # a chase point: the fastest of at least this many (short launches, some of
# them while no other process evicts the set from a shared last level)


class ChaseRig:
    """The chase over sets of up to ``top`` bytes."""

    def __init__(self, ctx: Any, top: int, rng: np.random.Generator, steps: int = STEPS) -> None:
        self.ctx, self.rng, self.steps = ctx, rng, int(steps)
        self.next, self.huge, offset = sweep_buffer(ctx, int(top))
        self.first = offset // 4  # the word the sets begin at (hugepages.py)
        self.pos, self.end = ctx.buffer(4), ctx.buffer(4)
        self.kernel = ctx.program(file="workingset.cl").kernel("ws_chase")
        # size -> its verified cycle as placed (links shifted to ``first``, the walk's start),
        # for the rounds after the first
        self.cycles: dict[int, tuple[np.ndarray, int]] = {}

    @staticmethod
    def words(size: int) -> int:
        """Words of a set of about ``size`` bytes: past a million, whole blocks of the structured
        cycle (its build takes a few passes instead of a full permutation's)."""
        n = max(16, int(size) // 4)
        return n // BLOCK_WORDS * BLOCK_WORDS if n > FULL_PERMUTATION_WORDS else n

    def measure(self, size: int, effort: Effort) -> dict[str, Any]:
        n = self.words(size)
        chain = cycle(self.rng, n)
        # the links shifted once here, not in every round: a set's cycle is millions of words
        placed = (chain.next + np.uint32(self.first)).astype(np.uint32), self.first + chain.after(0)
        self.place(*placed)
        kernel = self.kernel.set_args(self.next, np.uint32(self.steps), self.pos, self.end)
        poison_device(self.end)
        kernel.run(1, 1)
        got = np.empty(1, np.uint32)
        self.end.read(got)
        row: dict[str, Any] = {"kind": "chase", "size": n * 4, "kernel": "ws_chase",
                               "steps": self.steps, "huge_pages": self.huge}
        want = np.array([self.first + chain.after(self.steps)], np.uint32)
        ok, detail = compare(got, want, "chase end position")
        if not ok:
            return {**row, "status": "wrong result", "error": detail}
        self.cycles[n * 4] = placed
        fig = latency(timings(kernel, 1, 1, self._effort(effort)), float(self.steps), "")
        return {**row, "status": OK, "latency_ns": fig["best"], "latency_median_ns": fig["value"],
                "spread_pct": fig["spread_pct"], "n": fig["n"], "min_ns": fig["best"] * self.steps,
                "median_ns": fig["median_ns"], "rounds": 1}

    def place(self, links: np.ndarray, start: int) -> None:
        """Write a cycle's links (shifted to ``first``) from word ``first`` on, the walk at
        ``start``."""
        self.next.write(links, self.first * 4)
        self.pos.write(np.array([start], np.uint32))

    @staticmethod
    def _effort(effort: Effort) -> Effort:
        return Effort(max(effort.warmup, 1), max(effort.repeats, MIN_LAUNCHES), effort.min_time_s, effort.quick)

    def again(self, row: dict[str, Any], effort: Effort) -> float:
        """Time a verified point once more on its own cycle, keeping the faster figure in
        ``row``; returns this round's own figure (ns per load)."""
        self.place(*self.cycles[int(row["size"])])
        kernel = self.kernel.set_args(self.next, np.uint32(self.steps), self.pos, self.end)
        fig = latency(timings(kernel, 1, 1, self._effort(effort)), float(self.steps), "")
        row["rounds"] = int(row.get("rounds", 1)) + 1
        if fig["best"] < row["latency_ns"]:
            row.update(latency_ns=fig["best"], latency_median_ns=fig["value"], spread_pct=fig["spread_pct"],
                       n=fig["n"], min_ns=fig["best"] * self.steps, median_ns=fig["median_ns"])
        return float(fig["best"])

    def release(self) -> None:
        self.next.release()
        self.cycles.clear()


__all__ = ["ChaseRig", "MIN_LAUNCHES", "STEPS"]
