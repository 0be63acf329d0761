"""divergence: branching on the work-item id at granularity 1, 2, 4 ... 64 (Guide 6.1).

kernels/divergence.cl's ``branch`` sends runs of ``granularity`` consecutive work-items down one
of two paths of equal work; ``no_branch`` sends every work-item down the first path. Where a run
is shorter than a warp, a warp holds both paths and executes them one after the other, so the
Guide predicts about twice the baseline's time below the warp size and the baseline's time from
it up. Each row's ``slowdown`` is its time over the baseline's.

Branch predication (Guide 6.2): three more kernels choose between the same two paths per loop
step, with neighbouring work-items on different paths (granularity 1): a short if/else, select(),
and a loop of 0 or 1 trips. A compiler that predicates the short if/else makes it cost what
select() costs; the rows show whether it did.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import _core
from ..measure.checks import compare_close
from ..device.turns import host_only, host_work
from ..theory.limits import warp_size
from ..measure.results import OK, Results
from ._kit import DEFAULT_LOCAL_SIZE, FLOAT, round_trip, whole_groups
from .base import Check, Experiment, Launch
from .claims import Claim, Figure, largest, ratio

GRANULARITIES = (1, 2, 4, 8, 16, 32, 64)
BASELINE = "no branch"
BRANCH = "branch"  # the rows of the granularity sweep (their ``variant``)
# The kernel's two recurrences: path A x -> RA x + KA, path B x -> KB - RB x, summing every x.
PATH_A = (0.75, 0.125)
PATH_B = (-0.5, 0.375)
SERIAL_THRESHOLD = 1.25  # a slowdown above this counts as serialised paths
# Branch predication (Guide 6.2): variant -> kernel; all at granularity 1.
PREDICATION = {"if/else": "pred_ifelse", "select": "pred_select", "loop": "pred_loop"}


def path_sum(x: np.ndarray, iters: int, r: float, k: float) -> np.ndarray:
    """sum_{j=1..iters} x_j for x_{j+1} = r x_j + k, x_0 = x, in closed form (float64)."""
    c = k / (1 - r)  # the fixed point
    return iters * c + (x.astype(np.float64) - c) * r * (1 - r**iters) / (1 - r)


def on_path_b(local_size: int, granularity: int) -> np.ndarray:
    """Which local ids of a work-group take path B at this granularity (none at 0)."""
    if granularity == 0:
        return np.zeros(local_size, bool)
    return (np.arange(local_size) // granularity) % 2 == 1


@host_work
def choose_paths(a: np.ndarray, b: np.ndarray, local_size: int, granularity: int) -> np.ndarray:
    """Each work-item's path sum, a or b as ``branch``/``no_branch`` choose it. The choice repeats
    every work-group, so one group's pattern is broadcast over the rest (no per-item index)."""
    want = a.copy()
    np.copyto(want.reshape(-1, local_size), b.reshape(-1, local_size),
              where=on_path_b(local_size, granularity))
    return want


def reference(x: np.ndarray, local_size: int, granularity: int, iters: int) -> np.ndarray:
    """What ``branch`` (granularity > 0) or ``no_branch`` (granularity 0) writes for input x."""
    a = path_sum(x, iters, *PATH_A)
    if granularity == 0:
        return a
    return choose_paths(a, path_sum(x, iters, *PATH_B), local_size, granularity)


def diverged_over_uniform(results: Results) -> Figure:
    """Time when neighbouring work-items take different paths over the widest granularity."""
    wide = largest(results, "granularity", variant=BRANCH)
    return ratio(results, "median_ns", {"variant": BRANCH, "granularity": 1},
                 {"variant": BRANCH, "granularity": wide})


class Divergence(Experiment):
    id = "divergence"
    description = ("a branch on (local id / granularity) % 2 for granularities 1..64 against a branch-"
                   "free baseline, and a per-step choice as if/else, `select()` or a loop (Guide 6.1, "
                   "6.2; `--size` is work-items)")
    order = 210
    title = "Branch divergence by granularity"
    x = "granularity"
    x_label = "branch granularity (consecutive work-items on one path)"
    guide = "Guide 6.1 (branching and divergence)"
    claim = Claim(
        "work-items of one warp that take different paths run them one after the other",
        "Guide 6.1 (in words: both paths serialised, about twice the time)",
        "time at divergence granularity 1 / the widest granularity", diverged_over_uniform,
        source_ratio=2.0)
    plot = {"kind": "lines", "y": "slowdown", "ylabel": "time / no-branch time", "logx": True,
            "hlines": {"no branch": 1.0, "both paths serialised": 2.0},
            "vlines": {"warp size": "warp_size"}, "group": "variant"}
    size_arg, values_arg, local_size_arg = "items", "granularities", "local_size"

    def __init__(self, ctx: Any, items: int | None = None, local_size: int = DEFAULT_LOCAL_SIZE,
                 granularities: Sequence[int] | None = None, iters: int | None = None,
                 predication: bool = True) -> None:
        """``items``: work-items per launch; ``iters``: loop trips of each path; ``predication``:
        add the three Guide 6.2 kernels at granularity 1."""
        super().__init__(ctx)
        info = ctx.info
        self.granularities = [int(g) for g in (granularities if granularities is not None
                                                else GRANULARITIES)]
        self.local_size = int(local_size)
        if not self.granularities or min(self.granularities) < 1:
            raise _core.InvalidArgumentError(
                f"{self.id}: granularities must be >= 1, got {self.granularities}")
        if self.local_size < 2 * max(self.granularities):
            raise _core.InvalidArgumentError(
                f"{self.id}: the work-group size ({self.local_size}) must be at least twice the "
                f"largest granularity ({max(self.granularities)}), so both paths occur in a "
                "work-group")
        self.items = whole_groups(
            self.id, items if items is not None else (1 << 24 if info.is_gpu else 1 << 15), self.local_size)
        self.iters = int(iters) if iters is not None else (256 if info.is_gpu else 32)
        if not 1 <= self.iters <= 1 << 16:
            raise _core.InvalidArgumentError(f"{self.id}: iters must lie in 1..65536, got {self.iters}")
        if self.items * FLOAT > info.max_alloc_bytes:
            raise _core.InvalidArgumentError(f"{self.id}: {self.items} floats exceed the largest allocation")
        program = ctx.program(file="divergence.cl")
        self.branch = program.kernel("branch")
        self.no_branch = program.kernel("no_branch")
        self.predication = {v: program.kernel(k) for v, k in PREDICATION.items()} if predication else {}
        self.src, self.dst = ctx.buffer(self.items * FLOAT), ctx.buffer(self.items * FLOAT)
        self.rng = np.random.default_rng()
        # One random input per run and its two path sums (float64), shared by every point: each
        # point's reference is a per-item choice between them.
        self._input: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def _paths(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(x, path A's sums, path B's sums), drawn and computed on first use."""
        if self._input is None:
            with host_only():  # host work: the device's turn is given up meanwhile
                x = self.rng.random(self.items, dtype=np.float32)
                self._input = x, path_sum(x, self.iters, *PATH_A), path_sum(x, self.iters, *PATH_B)
        return self._input

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "items": self.items, "local_size": self.local_size,
                "iters": self.iters, "warp_size": warp_size(self.ctx.info),
                "note": "slowdown = median time / the no-branch kernel's median time; "
                        "warp_size is the driver's (NVIDIA), None where it does not say"}

    def points(self) -> list[dict[str, Any]]:
        return [{"variant": BASELINE, "granularity": 0}] + [
            {"variant": BRANCH, "granularity": g} for g in self.granularities] + [
            {"variant": v, "granularity": 1} for v in self.predication]

    def peak_kind(self, row: dict[str, Any]) -> str | None:
        return None  # arithmetic-bound

    def launch(self, point: dict[str, Any]) -> Launch:
        g = int(point["granularity"])
        if point["variant"] in self.predication:
            kernel = self.predication[point["variant"]].set_args(self.dst, self.src, np.int32(self.iters))
        elif g == 0:
            kernel = self.no_branch.set_args(self.dst, self.src, np.int32(self.iters))
        else:
            kernel = self.branch.set_args(self.dst, self.src, np.int32(self.iters), np.uint32(g))
        return Launch.one(kernel, self.items, self.local_size, 2 * self.items * FLOAT,
                          columns={"items": self.items, "local_size": self.local_size,
                                   "iters": self.iters})

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        x, a, b = self._paths()
        got = round_trip(self.src, self.dst, x, launch.run)
        with host_only():
            want = choose_paths(a, b, self.local_size, int(point["granularity"]))
            # A float32 running sum of iters terms of similar size: a few roundoffs per term
            # (worked in place: the arrays are 128 MiB at the GPU size).
            tolerance = np.abs(want)
            tolerance *= 4 * (self.iters + 8) * 2.0**-24
            tolerance += 1e-6
        return Check(*compare_close(got, want, tolerance, "outputs"))

    def finish(self, results: Any) -> None:
        base = next((r for r in results.rows if r.get("granularity") == 0 and r.get("status") == OK), None)
        for r in results.rows:
            r["slowdown"] = (r["median_ns"] / base["median_ns"]
                             if base is not None and r.get("status") == OK else None)
        rows = [r for r in results.rows if r.get("variant") == BRANCH and r.get("status") == OK
                and r.get("slowdown") is not None]
        warp = warp_size(self.ctx.info)
        warp_text = f"the warp size is {warp}" if warp else "the warp size is unknown here (32 on NVIDIA)"
        if not rows:
            results.meta["conclusion"] = f"no branch point verified against a baseline; {warp_text}"
            return
        serial = [r["granularity"] for r in rows if r["slowdown"] > SERIAL_THRESHOLD]
        free = [r["granularity"] for r in rows if r["slowdown"] <= SERIAL_THRESHOLD]
        # The smallest granularity from which no branch costs time, where the data draw a line.
        results.meta["divergence_free_from"] = (min(free) if free and serial and max(serial) < min(free)
                                                else None)
        slow = ", ".join(f"{r['granularity']}: {r['slowdown']:.2f}x" for r in rows)
        if serial and free and max(serial) < min(free):
            verdict_text = (f"paths serialised up to granularity {max(serial)}, not from "
                            f"{min(free)} on")
        elif serial:
            verdict_text = f"slowdown over {SERIAL_THRESHOLD}x at granularities {serial}"
        else:
            verdict_text = f"no granularity slower than {SERIAL_THRESHOLD}x the baseline"
        pred = [r for r in results.rows if r.get("variant") in PREDICATION and r.get("status") == OK
                and r.get("slowdown") is not None]
        pred_text = ("; per-step choice at granularity 1: " + ", ".join(
            f"{r['variant']} {r['slowdown']:.2f}x" for r in pred) + " (Guide 6.2: a branch of up to "
            "4 instructions, 7 where divergence is likely, is predicated, never diverging)") if pred else ""
        results.meta["conclusion"] = (
            f"time over the no-branch baseline by granularity: {slow}; {verdict_text}{pred_text}; "
            f"{warp_text}. Guide 6.1: a warp whose work-items take different paths runs them "
            "one after the other, so granularities below the warp size should take about twice "
            "as long and those from the warp size up should not.")

    @classmethod
    def summary(cls, results: Any) -> Any:
        df = results.df
        cols = ["variant", "granularity", "status", "median_ns", "spread_pct", "slowdown"]
        return df[[c for c in cols if c in df]]
