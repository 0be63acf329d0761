"""banks: what a local-memory bank conflict costs (Guide 3.2.2.1, Slides "Bank conflicts").

Every work-item sums words of a local table at (lid * stride) mod WORDS, moved along by 32 words
per load (kernels/banks.cl), for strides 1..32 and a few larger, with the table stored plainly
and padded (one spare word after every 32). Each point's time is set beside the conflict degree
the bank model predicts for it (pyclperf.theory.bankmodel: 32 banks of 4 bytes, the largest number of
distinct words one bank must deliver to one warp), so the plot shows whether time follows the
model and whether padding takes the cost away.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import _core
from ..device.turns import host_only, host_work
from ..theory.bankmodel import strided_degree
from ..measure.checks import compare, poison_device
from ..measure.results import OK, Results
from ._kit import DEFAULT_LOCAL_SIZE, pick, positive, whole_groups
from .base import Check, Experiment, Launch
from .claims import Claim, Figure, ratio

WORD = 4  # bytes
LOADS_PER_STEP = 8  # kernels/banks.cl issues 8 loads per step
LAYOUTS = ("plain", "padded")


def two_way_over_none(results: Results) -> Figure:
    """Time at stride 2 over stride 1 in the plain layout (the rows' ``slowdown``)."""
    return ratio(results, "median_ns", {"layout": "plain", "stride": 2},
                 {"layout": "plain", "stride": 1})


class Banks(Experiment):
    id = "banks"
    description = ("strided local-memory reads, plain and padded, beside the conflict degree the 32-bank"
                   " model predicts (Guide 3.2.2.1)")
    order = 110
    title = "Local-memory bank conflicts: strided reads, plain and padded"
    x = "stride"
    x_label = "stride (32-bit words between neighbouring work-items)"
    guide = "Guide 3.2.2.1; Slides 'Shared Memory Architecture', 'Bank Conflicts'"
    claim = Claim(
        "a 2-way bank conflict doubles the time of a local-memory access",
        "Guide 3.2.2.1 (in words: accesses to one bank are serialised)",
        "time at stride 2 / stride 1 (plain layout)", two_way_over_none, source_ratio=2.0)
    plot = {"kind": "model", "group": "layout", "value": "slowdown", "model": "conflict_degree",
            "ylabel": "time / plain stride 1 (solid); conflict degree (dashed)"}
    size_arg, values_arg, local_size_arg = "items", "strides", "local_size"
    STRIDES = list(range(1, 33)) + [33, 48, 64, 65, 128, 256]

    def __init__(self, ctx: Any, items: int | None = None, local_size: int = DEFAULT_LOCAL_SIZE,
                 strides: Sequence[int] | None = None, words: int = 4096, steps: int | None = None,
                 layouts: Sequence[str] = LAYOUTS) -> None:
        super().__init__(ctx)
        info = ctx.info
        self.local_size = positive(self.id, "work-group size", local_size)
        self.items = whole_groups(self.id, items if items is not None else (
            self.local_size * 8 * info.compute_units * 4 if info.is_gpu else self.local_size * 4),
            self.local_size)
        self.words = int(words)
        if self.words < 32 or self.words & (self.words - 1):
            raise _core.InvalidArgumentError(f"banks: words must be a power of two >= 32, got {words}")
        padded_words = self.words + 8 * 32
        padded_words += padded_words // 32
        if padded_words * WORD > info.local_mem_bytes:
            raise _core.InvalidArgumentError(
                f"banks: a table of {self.words} words needs {padded_words * WORD} bytes of local "
                f"memory padded; the device has {info.local_mem_bytes}")
        # GPU: 128 steps x 8 loads per work-item is ~1e9 loads per launch, well past launch cost.
        default_steps = 128 if info.is_gpu else 8
        self.steps = positive(self.id, "steps", default_steps if steps is None else steps)
        self.strides = [int(s) for s in (strides if strides is not None else self.STRIDES)]
        if not self.strides or min(self.strides) < 1:
            raise _core.InvalidArgumentError(f"banks: strides must be >= 1, got {self.strides}")
        if (self.local_size - 1) * max(self.strides) + 256 * self.steps >= 2**32:
            raise _core.InvalidArgumentError("banks: stride x work-group size overflows uint")
        self.layouts = pick(self.id, LAYOUTS, layouts, "layouts")
        self.table = ctx.buffer(self.words * WORD)
        self.out = ctx.buffer(self.items * WORD)
        self.rng = np.random.default_rng()

    @property
    def loads(self) -> int:
        """Local-memory loads each work-item makes."""
        return LOADS_PER_STEP * self.steps

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "items": self.items, "local_size": self.local_size,
                "words": self.words, "steps": self.steps, "loads_per_item": self.loads,
                "banks": 32, "bank_bytes": 4, "warp": 32}

    def points(self) -> list[dict[str, Any]]:
        return [{"layout": layout, "stride": s,
                 "conflict_degree": strided_degree(s, self.words, layout == "padded",
                                                   self.local_size)}
                for layout in self.layouts for s in self.strides]

    def peak_kind(self, row: dict[str, Any]) -> str | None:
        return None  # local memory, not DRAM

    def kernel(self, padded: bool) -> Any:
        program = self.ctx.program(file="banks.cl", defines={
            "WORDS": self.words, "STEPS": self.steps, "PADDED": int(padded)})
        return program.kernel("strided_sum")

    @host_work
    def expected(self, table: np.ndarray, stride: int) -> np.ndarray:
        """Each work-item's sum (uint32, wrapping), the same for every work-group."""
        lid = np.arange(self.local_size, dtype=np.int64)[:, None]
        k = np.arange(self.loads, dtype=np.int64)[None, :]
        index = (lid * stride + 32 * k) % self.words
        sums = table.astype(np.uint64)[index].sum(axis=1) & 0xFFFFFFFF
        return np.tile(sums.astype(np.uint32), self.items // self.local_size)

    def launch(self, point: dict[str, Any]) -> Launch:
        kernel = self.kernel(point["layout"] == "padded")
        kernel.set_args(self.table, self.out, np.uint32(point["stride"]))
        # Bandwidth here is local-memory bandwidth: the bytes of the loads the kernel makes.
        return Launch.one(kernel, self.items, self.local_size, self.items * self.loads * WORD,
                          columns={"loads": self.items * self.loads})

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        with host_only():
            table = self.rng.integers(0, 2**32, self.words, dtype=np.uint32)
        self.table.write(table)
        poison_device(self.out)
        launch.run()
        got = np.empty(self.items, np.uint32)
        self.out.read(got)
        return Check(*compare(got, self.expected(table, point["stride"]), "work-item sums"))

    def finish(self, results: Any) -> None:
        """Slowdown against the plain stride-1 read, and whether padding takes a cost away."""
        ok = [r for r in results.rows if r.get("status") == OK]
        base = next((r for r in ok if r["layout"] == "plain" and r["stride"] == 1), None)
        if base is None:
            results.meta["conclusion"] = "banks: the plain stride-1 point did not verify; no baseline"
            return
        for r in ok:
            r["slowdown"] = r["median_ns"] / base["median_ns"]
        plain = {r["stride"]: r for r in ok if r["layout"] == "plain"}
        padded = {r["stride"]: r for r in ok if r["layout"] == "padded"}
        # Strides where the model says padding turns a conflict into none.
        fixed = [s for s in plain if s in padded and plain[s]["conflict_degree"] > 1
                 and padded[s]["conflict_degree"] == 1]
        worst = max(plain.values(), key=lambda r: r["slowdown"])
        text = (f"plain layout: slowest at stride {worst['stride']} ({worst['slowdown']:.1f}x "
                f"stride 1; model: {worst['conflict_degree']}-way conflict)")
        degrees = np.array([r["conflict_degree"] for r in plain.values()], dtype=float)
        slowdowns = np.array([r["slowdown"] for r in plain.values()])
        if len(plain) > 2 and np.ptp(degrees) > 0:
            corr = float(np.corrcoef(degrees, slowdowns)[0, 1])
            results.meta["degree_time_correlation"] = corr
            text += f"; time vs predicted degree correlation {corr:.2f}"
        if fixed:
            gains = {s: plain[s]["median_ns"] / padded[s]["median_ns"] for s in fixed}
            best = max(gains, key=lambda s: gains[s])
            noise = max(plain[best]["spread_pct"], padded[best]["spread_pct"]) / 100
            measurable = gains[best] > 1.1 + 2 * noise
            # Below 1x the padded table is slower: "nothing measurable" beside 0.84x misleads.
            slower = gains[best] < 1 / (1.1 + 2 * noise)
            effect = ("removes a measurable cost" if measurable else "makes it slower" if slower
                      else f"changes nothing beyond the noise (10% + twice the spread)")
            results.meta["padding_gain"] = {str(s): g for s, g in gains.items()}
            results.meta["padding_removes_cost"] = bool(measurable)
            text += (f". Padding {effect}: "
                     f"at stride {best} the padded table runs {gains[best]:.2f}x as fast "
                     f"({plain[best]['conflict_degree']}-way -> 1-way in the model; mean over "
                     f"{len(fixed)} such strides {np.mean(list(gains.values())):.2f}x)")
        results.meta["conclusion"] = text + (
            ". The Slides: cost = the largest number of simultaneous accesses to one bank; the "
            "Guide: padding the tile by one word removes its conflicts entirely")

    @classmethod
    def summary(cls, results: Any) -> Any:
        df = results.df
        if df.empty or "layout" not in df:
            return None
        cols = [c for c in ("conflict_degree", "median_ns", "slowdown") if c in df]
        wide = df.pivot_table(index="stride", columns="layout", values=cols, aggfunc="first")
        wide.columns = [f"{col} {layout}" for col, layout in wide.columns]
        return wide.reset_index()
