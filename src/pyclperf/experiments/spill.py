"""spill: a private array indexed at run time (kept in off-chip "local memory" on CUDA devices)
against the same array with every index a constant (registers), at growing sizes (Guide 3.2.3,
3.2.6.1; kernels/spill.cl).

Both kernels do ROUNDS x N updates ``a[i] = fma(a[i], m, c)`` per work-item, visiting the elements
in the same order, so they compute the same result; the metric is updates per second
(``gupdates``). Where the driver reports registers (NVIDIA's ``-cl-nv-verbose``), rows carry the
registers per work-item, the stack frame (where a dynamically indexed array lives) and the spill
bytes; elsewhere those columns are empty and the meta says why.

Verification is exact (m = 1, integer c: every value an integer below 2^24), every work-item's
weighted sum against NumPy on fresh random integers, the output poisoned.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

from .. import _core
from ..measure.checks import compare
from ..theory.limits import parse_registers, verbose_build_options
from ..measure.results import OK, Results
from ._kit import DEFAULT_LOCAL_SIZE, FLOAT, pick, positive, round_trip, table
from .base import Check, Experiment, Launch, noise_note
from .claims import Claim, Figure, largest, ratio

SIZES = (4, 8, 16, 32, 64)
# The labels the claim below names its rows by (the rows' ``variant``).
UNROLLED, DYNAMIC = "unrolled", "dynamic"
VARIANTS = (UNROLLED, DYNAMIC)
C = 2.0  # the added constant: an integer, so the sums stay exact
_STACK = re.compile(r"(\d+)\s+bytes stack frame")


def reference(x: np.ndarray, n: int, rounds: int) -> np.ndarray:
    """The sum over k < n of (k + 1) (x + k + rounds C), for integer inputs x."""
    weights = n * (n + 1) / 2  # sum of k + 1
    return (weights * (x.astype(np.float64) + rounds * C) + (n - 1) * n * (n + 1) / 3).astype(np.float32)


def stack_bytes(build_log: str, kernel: str) -> int | None:
    """The stack frame ptxas reports for ``kernel`` in a verbose NVIDIA build log, else None."""
    log = build_log or ""
    start = log.find(f"Function properties for {kernel}")
    found = _STACK.search(log, start) if start >= 0 else None
    return int(found.group(1)) if found else None


def unrolled_over_dynamic(results: Results) -> Figure:
    """Updates per second unrolled over dynamically indexed, at the longest verified array."""
    longest = largest(results, "length", variant=DYNAMIC)
    return ratio(results, "gupdates", {"variant": UNROLLED, "length": longest},
                 {"variant": DYNAMIC, "length": longest})


class Spill(Experiment):
    id = "spill"
    description = ("a private float array of 4..64 elements indexed at run time (off-chip) vs "
                   "unrolled into registers: updates/s, with registers and spills from the build log "
                   "where the driver reports them (Guide 3.2.3; values are array lengths)")
    order = 208
    # The guide runs it in a process of its own: dynamically indexed private arrays that spill: a
    # driver may abort compiling one.
    isolate = True
    title = "Private arrays: dynamic indexing (local memory) vs unrolled (registers)"
    x = "length"
    x_label = "private array length (floats)"
    guide = "Guide 3.2.3 (CUDA local memory: off-chip, uncached), 3.2.6.1 (register pressure)"
    claim = Claim(
        "a dynamically indexed private array goes to slow off-chip memory",
        "Guide 3.2.3 (in words: local memory is off-chip and uncached)",
        "speed unrolled / dynamically indexed, at the longest array", unrolled_over_dynamic)
    plot = {"kind": "lines", "y": "gupdates", "ylabel": "updates per second (G, median)",
            "group": "variant", "logx": True}
    size_arg, values_arg = "items", "sizes"

    def __init__(self, ctx: Any, items: int | None = None, local_size: int = DEFAULT_LOCAL_SIZE,
                 sizes: Sequence[int] | None = None, rounds: int | None = None,
                 variants: Sequence[str] | None = None) -> None:
        super().__init__(ctx)
        info = ctx.info
        self.sizes = [int(n) for n in (sizes if sizes is not None else SIZES)]
        if not self.sizes or any(n < 1 or n & (n - 1) or n > 64 for n in self.sizes):
            raise _core.InvalidArgumentError(
                f"{self.id}: array lengths must be powers of two up to 64, got {self.sizes}")
        self.variants = pick(self.id, VARIANTS, variants, "variants")
        self.local_size = positive(self.id, "work-group size", local_size)
        items = items if items is not None else (
            info.compute_units * 4096 if info.is_gpu else 4096)
        self.items = positive(self.id, "work-items", items)
        if self.items % self.local_size:
            raise _core.InvalidArgumentError(
                f"{self.id}: {self.items} work-items is not a multiple of the work-group size "
                f"{self.local_size}")
        self.rounds = positive(self.id, "rounds", rounds if rounds is not None
                               else (64 if info.is_gpu else 8))
        n = max(self.sizes)
        if n * (n + 1) / 2 * (self.rounds * C + 1024 + n) >= 2**24:
            raise _core.InvalidArgumentError(f"{self.id}: {self.rounds} rounds would leave exact integers")
        self.options = verbose_build_options(info)
        self.src, self.dst = ctx.buffer(self.items * FLOAT), ctx.buffer(self.items * FLOAT)
        self.rng = np.random.default_rng()

    def meta(self) -> dict[str, Any]:
        why = ("from the driver's -cl-nv-verbose build log" if self.options else
               "unknown: this driver offers no register report (no cl_nv_compiler_options)")
        return {**super().meta(), "items": self.items, "local_size": self.local_size,
                "rounds": self.rounds, "registers": why}

    def points(self) -> list[dict[str, Any]]:
        return [{"variant": v, "length": n} for v in self.variants for n in self.sizes]

    def peak_kind(self, row: dict[str, Any]) -> str | None:
        return None

    def builds(self, point: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"file": "spill.cl", "options": self.options,
                 "defines": {"N": point["length"], "ROUNDS": self.rounds}}]

    def launch(self, point: dict[str, Any]) -> Launch:
        name = f"spill_{point['variant']}"
        program = self.ctx.program(**self.builds(point)[0])
        k = program.kernel(name).set_args(self.src, np.float32(1.0), np.float32(C), np.uint32(1), self.dst)
        log = program.build_log if self.options else ""
        report = parse_registers(log, name)
        updates = self.items * self.rounds * point["length"]
        return Launch.one(k, self.items, self.local_size, 2 * FLOAT * self.items, ops=updates,
                          ops_unit="updates",
                          columns={"items": self.items, "registers": report.registers,
                                   "stack_bytes": stack_bytes(log, name),
                                   "spill_store_bytes": report.spill_store_bytes,
                                   "spill_load_bytes": report.spill_load_bytes})

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        x = self.rng.integers(0, 1024, size=self.items).astype(np.float32)
        got = round_trip(self.src, self.dst, x, launch.run)
        return Check(*compare(got, reference(x, point["length"], self.rounds), "work-item sums"))

    def finish(self, results: Any) -> None:
        """Time per update, dynamic over unrolled, at each length; the Guide beside it."""
        ok = {(r["variant"], r["length"]): r for r in results.rows if r.get("status") == OK}
        parts, ratios = [], {}
        for n in self.sizes:
            dyn, unr = ok.get((DYNAMIC, n)), ok.get((UNROLLED, n))
            if dyn and unr:
                ratios[n] = unr["gupdates"] / dyn["gupdates"]
                regs = f", {unr['registers']} vs {dyn['registers']} registers" if unr.get("registers") else ""
                parts.append(f"{n} floats: dynamic {ratios[n]:.2f}x the time of unrolled{regs}"
                             f"{noise_note(dyn)}")
        results.meta["dynamic_over_unrolled"] = ratios
        results.meta["conclusion"] = (
            "; ".join(parts or ["no pair verified"]) + ". Guide 3.2.3 (2009): an array the compiler "
            "cannot keep in registers (dynamically indexed, or too large) goes to CUDA local memory, "
            "off-chip and uncached, as slow as global memory (later GPUs cache it in L1 and L2).")

    @classmethod
    def summary(cls, results: Any) -> Any:
        df = table(results, ["variant", "length", "status", "median_ns", "spread_pct", "gupdates",
                             "registers", "stack_bytes", "spill_store_bytes", "spill_load_bytes"])
        return df.astype(object).where(df.notna(), "unknown")
