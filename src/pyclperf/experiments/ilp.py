"""ilp: 1, 2, 4 and 8 independent FMA chains per work-item, at low and at full occupancy
(Guide 3.2.6, 4.3; kernels/ilp.cl).

Every work-item runs the same number of FMAs (``total``), split over ``acc`` accumulators. Two
launch shapes:

* ``low``: one work-group of ``low_local_size`` work-items (one warp's worth) per compute unit, so
  almost nothing else is resident to cover an FMA's latency: only independent chains in the same
  work-item can;
* ``full``: ``full_groups_per_cu`` work-groups of ``local_size`` per compute unit, far more than
  the Guide's 192 threads (6 warps) per multiprocessor that hide the ~24-cycle register
  read-after-write latency.

GFLOP/s counts 2 per FMA. Verification is exact: m = 1 and an integer c keep every value an
integer below 2^24 (see the kernel), compared element by element with NumPy on fresh random
integers, the output poisoned.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import _core
from ..measure.checks import compare
from ..theory.limits import warp_size
from ..measure.results import OK, Results
from ._kit import DEFAULT_LOCAL_SIZE, FLOAT, positive, round_trip
from .base import Check, Experiment, Launch, noise_note
from .claims import Claim, Figure, largest, ratio

ACCUMULATORS = (1, 2, 4, 8)
OCCUPANCIES = ("low", "full")
GUIDE_LATENCY_CYCLES = 24
GUIDE_THREADS = 192  # per multiprocessor, to hide that latency (6 warps)
C = 3.0  # the added constant: an integer, so the float arithmetic stays exact


def reference(x: np.ndarray, acc: int, total: int) -> np.ndarray:
    """What the kernel writes for integer inputs x: sum over k < acc of (k + 1)(x + k + (total / acc) C)."""
    weights = acc * (acc + 1) / 2
    return (weights * (x.astype(np.float64) + total / acc * C)
            + (acc - 1) * acc * (acc + 1) / 3).astype(np.float32)


def many_chains_over_one(results: Results) -> Figure:
    """GFLOP/s with the most independent chains over one, at low occupancy."""
    most = largest(results, "acc", occupancy="low")
    return ratio(results, "gflops", {"occupancy": "low", "acc": most}, {"occupancy": "low", "acc": 1})


class Ilp(Experiment):
    id = "ilp"
    description = ("1, 2, 4, 8 independent FMA chains per work-item at low occupancy (one small "
                   "work-group per compute unit) and full occupancy: GFLOP/s (Guide 4.3; values are "
                   "accumulator counts)")
    order = 205
    title = "Instruction-level parallelism: independent accumulators vs occupancy"
    x = "acc"
    x_label = "independent accumulators per work-item"
    guide = "Guide 3.2.6 (register read-after-write latency), 4.3 (hiding it with 192 threads)"
    claim = Claim(
        "at low occupancy, independent instructions hide the latency that threads cannot",
        "Guide 3.2.6, 4.3 (in words: ~24 cycles, hidden by 192 threads)",
        "GFLOP/s with the most accumulators / one, at low occupancy", many_chains_over_one)
    plot = {"kind": "lines", "y": "gflops", "ylabel": "GFLOP/s (median)", "group": "occupancy",
            "logx": True, "label_format": "{} occupancy"}
    size_arg, values_arg = None, "accumulators"

    def __init__(self, ctx: Any, accumulators: Sequence[int] | None = None,
                 local_size: int = DEFAULT_LOCAL_SIZE, low_local_size: int | None = None,
                 full_groups_per_cu: int = 32, total: int | None = None,
                 occupancies: Sequence[str] = OCCUPANCIES) -> None:
        super().__init__(ctx)
        info = ctx.info
        self.accumulators = [int(a) for a in (accumulators if accumulators is not None else ACCUMULATORS)]
        if not self.accumulators or any(a not in (1, 2, 4, 8, 16) for a in self.accumulators):
            raise _core.InvalidArgumentError(
                f"{self.id}: accumulators must be among 1, 2, 4, 8, 16, got {self.accumulators}")
        self.occupancies = [o for o in occupancies]
        if not self.occupancies or set(self.occupancies) - set(OCCUPANCIES):
            raise _core.InvalidArgumentError(
                f"{self.id}: occupancies must be among {OCCUPANCIES}, got {self.occupancies}")
        self.local_size = positive(self.id, "work-group size", local_size)
        self.low_local_size = positive(self.id, "low-occupancy work-group size",
                                       low_local_size or warp_size(info) or 32)
        self.total = positive(self.id, "FMAs per work-item", total if total is not None
                              else (4096 if info.is_gpu else 256))
        # Largest sum (16 chains): 136 (1023 + 15) + 8.5 total C, kept below 2^24 with room.
        if self.total % max(self.accumulators) or 9 * self.total * C + 150_000 >= 2**24:
            raise _core.InvalidArgumentError(
                f"{self.id}: FMAs per work-item ({self.total}) must be a multiple of every "
                "accumulator count and keep the weighted sums exact integers (below 2^24)")
        cu = info.compute_units
        self.shapes = {"low": (cu, self.low_local_size),
                       "full": (positive(self.id, "groups per compute unit", full_groups_per_cu) * cu,
                                self.local_size)}
        most = max(g * l for g, l in self.shapes.values())
        self.src, self.dst = ctx.buffer(most * FLOAT), ctx.buffer(most * FLOAT)
        self.rng = np.random.default_rng()

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "total_fmas": self.total, "shapes": self.shapes,
                "op": "one FMA = 2 flops"}

    def points(self) -> list[dict[str, Any]]:
        return [{"occupancy": o, "acc": a} for o in self.occupancies for a in self.accumulators]

    def peak_kind(self, row: dict[str, Any]) -> str | None:
        return None

    def builds(self, point: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"file": "ilp.cl", "defines": {"ACC": point["acc"], "TOTAL": self.total}}]

    def launch(self, point: dict[str, Any]) -> Launch:
        groups, local = self.shapes[point["occupancy"]]
        items = groups * local
        program = self.ctx.program(**self.builds(point)[0])
        k = program.kernel("ilp").set_args(self.src, np.float32(1.0), np.float32(C), self.dst)
        return Launch.one(k, items, local, 2 * FLOAT * items, ops=2 * items * self.total,
                          ops_unit="flops", columns={"groups": groups, "local_size": local,
                                                     "items": items, "fmas_per_item": self.total})

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        items = launch.columns["items"]
        x = self.rng.integers(0, 1024, size=items).astype(np.float32)
        got = round_trip(self.src, self.dst, x, launch.run)
        return Check(*compare(got, reference(x, point["acc"], self.total), "work-item sums"))

    def finish(self, results: Any) -> None:
        """The gain of 8 (the most) chains over 1 at each occupancy, beside the Guide."""
        ok = {(r["occupancy"], r["acc"]): r for r in results.rows if r.get("status") == OK}
        lo_acc, hi_acc = min(self.accumulators), max(self.accumulators)
        parts, gains = [], {}
        for o in self.occupancies:
            one, many = ok.get((o, lo_acc)), ok.get((o, hi_acc))
            if one and many and one is not many:
                gains[o] = many["gflops"] / one["gflops"]
                parts.append(f"{o} occupancy ({one['items']} work-items): {one['gflops']:.1f} GFLOP/s "
                             f"with {lo_acc} chain{noise_note(one)}, {many['gflops']:.1f} with "
                             f"{hi_acc}{noise_note(many)} ({gains[o]:.2f}x)")
        results.meta["ilp_gain"] = gains
        results.meta["conclusion"] = (
            "; ".join(parts or ["no pair verified"]) + f". Guide 4.3 (2009): a result is usable "
            f"~{GUIDE_LATENCY_CYCLES} cycles after its instruction, and {GUIDE_THREADS} resident threads "
            "per multiprocessor hide that completely, so independent chains should pay at low "
            "occupancy and not at full.")

    summary_columns = ["occupancy", "acc", "items", "status", "median_ns", "spread_pct",
                      "gflops"]
