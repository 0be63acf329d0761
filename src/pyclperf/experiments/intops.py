"""intops: integer division and modulo by a power of two as written by the argument, by a literal
and by shift/mask (unsigned and signed), mul24 against a 32-bit multiply, and a float multiplied
by a literal with and without the f suffix (Guide 5.1, 5.1.1, 5.1.3; kernels/intops.cl). See
_throughput.py for the metric."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .. import _core
from ..measure.checks import POISON_U32, compare
from ..device.turns import host_only, host_work
from ..measure.results import OK, Results
from ._kit import DEFAULT_LOCAL_SIZE, pick
from ._throughput import Throughput
from .base import Check, Launch
from .claims import Claim, Figure, ratio

LCG_A, LCG_C = 1664525, 1013904223
M32 = (1 << 32) - 1


@dataclass(frozen=True)
class IntOp:
    name: str  # the row's variant
    kernel: str
    group: str  # which operations are being compared
    # NumPy reference of the tested operation: (uint32 values as int64, divisor, shift) -> int64
    ref: Callable[[np.ndarray, int, int], np.ndarray] | None = None


def _as_signed(u: np.ndarray) -> np.ndarray:
    return np.where(u >= 1 << 31, u - (1 << 32), u)


def _trunc_div(v: np.ndarray, d: int) -> np.ndarray:
    """C division of signed values: the quotient truncated toward zero."""
    return np.sign(v) * (np.abs(v) // d)


# The labels the claim below names its rows by (the rows' ``variant``).
U32_DIV_ARG, U32_SHIFT = "u32 / d (argument)", "u32 >> s"
INT_OPS = (
    IntOp("loop only (x)", "int_baseline", "baseline", lambda u, d, s: u),
    IntOp(U32_DIV_ARG, "u32_div_var", "u32 divide", lambda u, d, s: u // d),
    IntOp("u32 / D (literal)", "u32_div_lit", "u32 divide", lambda u, d, s: u // d),
    IntOp(U32_SHIFT, "u32_div_shift", "u32 divide", lambda u, d, s: u >> s),
    IntOp("u32 % d (argument)", "u32_mod_var", "u32 modulo", lambda u, d, s: u % d),
    IntOp("u32 % D (literal)", "u32_mod_lit", "u32 modulo", lambda u, d, s: u % d),
    IntOp("u32 & (d-1)", "u32_mod_mask", "u32 modulo", lambda u, d, s: u & (d - 1)),
    IntOp("i32 / d (argument)", "i32_div_var", "i32 divide", lambda u, d, s: _trunc_div(_as_signed(u), d)),
    IntOp("i32 / D (literal)", "i32_div_lit", "i32 divide", lambda u, d, s: _trunc_div(_as_signed(u), d)),
    IntOp("i32 (v + bias) >> s", "i32_div_shift", "i32 divide",
          lambda u, d, s: _trunc_div(_as_signed(u), d)),
    IntOp("i32 % d (argument)", "i32_mod_var", "i32 modulo",
          lambda u, d, s: _as_signed(u) - d * _trunc_div(_as_signed(u), d)),
    IntOp("i32 % D (literal)", "i32_mod_lit", "i32 modulo",
          lambda u, d, s: _as_signed(u) - d * _trunc_div(_as_signed(u), d)),
    IntOp("i32 v - ((v + bias) & ~(d-1))", "i32_mod_mask", "i32 modulo",
          lambda u, d, s: _as_signed(u) - d * _trunc_div(_as_signed(u), d)),
    IntOp("24-bit operands only (x >> 8)", "u32_mul_shift24", "multiply", lambda u, d, s: u >> 8),
    IntOp("u32 * u32 (24-bit operands)", "u32_mul32", "multiply", None),
    IntOp("mul24 (24-bit operands)", "u32_mul24", "multiply", None),
    IntOp("float x * 0.999f", "float_literal_f", "float literal"),
    IntOp("float x * 0.999 (double)", "float_literal_double", "float literal"),
)
INT_VARIANTS = {op.name: op for op in INT_OPS}
SCALE = "0.999"  # a literal that float cannot represent exactly, so the two variants differ


@host_work
def int_reference(op: IntOp, seeds: np.ndarray, iters: int, d: int, s: int) -> np.ndarray:
    """What an integer kernel writes: the generator run ``iters`` times from each seed and the
    tested operation's results summed modulo 2^32 (all in int64, masked to 32 bits)."""
    x = seeds.astype(np.int64)
    b = x >> 8
    total = np.zeros_like(x)
    for _ in range(iters):
        x *= LCG_A
        x += LCG_C
        x &= M32
        total += op.ref(x, d, s) if op.ref is not None else (x >> 8) * b
        total &= M32
    return total.astype(np.uint32)


@host_work
def literal_reference(start: np.ndarray, iters: int, double: bool) -> np.ndarray:
    """x = x * 0.999 ``iters`` times: in float (0.999f), or in double rounded back to float."""
    x = start.copy()
    if double:
        scale = float(SCALE)
        for _ in range(iters):
            x = (x.astype(np.float64) * scale).astype(np.float32)
    else:
        f = np.float32(SCALE)
        for _ in range(iters):
            x *= f
    return x


def division_over_shift(results: Results) -> Figure:
    return ratio(results, "median_ns", {"variant": U32_DIV_ARG}, {"variant": U32_SHIFT})


class IntOps(Throughput):
    id = "intops"
    host_bound = True  # its references and checks: most of its seconds on a GPU
    description = ("`/` and `%` by a power of two vs shift and mask, `mul24` vs a 32-bit multiply, "
                   "`0.999` vs `0.999f` (Guide 5.1; `--size` is work-items)")
    order = 190
    title = "Integer division/modulo vs shift/mask, mul24, float literals"
    guide = "Guide 5.1 (mul24), 5.1.1, 5.1.3"
    claim = Claim(
        "a shift beats integer division by a power of two",
        "Guide 5.1.1 (in words: division and modulo are expensive)",
        "time of u32 / d (argument) / u32 >> s", division_over_shift)
    summary_extra = ("group", "time_vs_loop_only", "rel_diff_other_literal")

    def __init__(self, ctx: Any, items: int | None = None, local_size: int = DEFAULT_LOCAL_SIZE,
                 iters: int | None = None, divisor: int = 16,
                 variants: Sequence[str] | None = None) -> None:
        names = pick(self.id, list(INT_VARIANTS), variants, "variants")
        divisor = int(divisor)
        if divisor < 2 or divisor > 1 << 30 or divisor & (divisor - 1):
            raise _core.InvalidArgumentError(
                f"{self.id}: the divisor must be a power of two in 2..2^30, got {divisor}")
        self.variants = [INT_VARIANTS[n] for n in names]
        self.divisor, self.shift = divisor, divisor.bit_length() - 1
        self.fp64 = bool(ctx.info.has_extension("cl_khr_fp64"))
        super().__init__(ctx, items, local_size, iters)

    def points(self) -> list[dict[str, Any]]:
        return [{"variant": op.name, "kernel": op.kernel, "group": op.group} for op in self.variants]

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "divisor": self.divisor, "shift": self.shift, "fp64": self.fp64,
                "op": "one tested operation per loop iteration; integer loops also run one "
                      "multiply-add (the generator) and one add (the sum) per iteration, the "
                      "'loop only' row alone"}

    def program(self) -> Any:
        return self.ctx.program(file="intops.cl", defines=self.defines())

    def defines(self) -> dict[str, Any]:
        return {"ITERS": self.iters, "DIVISOR": self.divisor, "SCALE_D": SCALE,
                "SCALE_F": SCALE + "f", "FP64": int(self.fp64)}

    def kernel(self, op: IntOp) -> Any:
        k = self.program().kernel(op.kernel)
        if op.group == "float literal":
            return k.set_args(self.dst, self.src)
        return k.set_args(self.dst, self.src, np.uint32(self.divisor), np.uint32(self.shift))

    def skip(self, point: dict[str, Any]) -> str | None:
        if INT_VARIANTS[point["variant"]].kernel == "float_literal_double" and not self.fp64:
            return ("the device has no cl_khr_fp64: a literal without the f suffix is a double, "
                    "which it cannot compute")
        return None

    def launch(self, point: dict[str, Any]) -> Launch:
        return self.throughput(self.kernel(INT_VARIANTS[point["variant"]]), 1)

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        extra: dict[str, Any] = {}
        passed, detail = self._verify(launch.steps[0][0], INT_VARIANTS[point["variant"]], extra)
        return Check(passed, detail, extra)

    def _verify(self, kernel: Any, op: IntOp, extra: dict[str, Any]) -> tuple[bool, str]:
        """Integers: the outputs equal the NumPy simulation (a sample, see SAMPLE). Float
        literals: every output
        equal bit for bit to NumPy doing the same correctly rounded operations (one float
        multiply, or a double multiply rounded to float, per step), so no tolerance is needed."""
        if op.group == "float literal":
            start = self.rng.uniform(1.0, 2.0, self.items).astype(np.float32)
            got = self._launch(kernel, start, np.float32)
            double = op.kernel == "float_literal_double"
            want = literal_reference(start, self.iters, double)
            other = literal_reference(start, self.iters, not double)
            # How far the other literal's result lies (relative): the accuracy cost of the suffix.
            extra["rel_diff_other_literal"] = float(
                np.max(np.abs(want.astype(np.float64) - other) / np.abs(want.astype(np.float64))))
            return compare(got.view(np.uint32), want.view(np.uint32), "results (float bits)")
        with host_only():
            seeds = self.rng.integers(0, 2**32, self.items, dtype=np.uint32)
        got = self._launch(kernel, seeds, np.uint32)
        with host_only():
            # An output still holding the poison was probably never written: always check those.
            idx = self._sample(also=np.flatnonzero(got == POISON_U32))
            want = int_reference(op, seeds[idx], self.iters, self.divisor, self.shift)
            bad = np.flatnonzero(got[idx] != want)
            if bad.size:
                j = int(bad[0])
                return False, (f"{bad.size} of {idx.size} checked sums differ; first at work-item "
                               f"{int(idx[j])}: got {int(got[idx[j]])}, want {int(want[j])}")
            return True, ""

    def finish(self, results: Any) -> None:
        ok = {r["variant"]: r for r in results.rows if r.get("status") == OK}
        base = ok.get("loop only (x)")
        if base:  # integer loops: time relative to the loop alone (generator + sum)
            for r in results.rows:
                if r.get("status") == OK and r.get("group") != "float literal":
                    r["time_vs_loop_only"] = r["median_ns"] / base["median_ns"]
        parts = []

        def ratio(a: str, b: str, what: str) -> None:
            if a in ok and b in ok:
                parts.append(f"{what}: {ok[b]['median_ns'] / ok[a]['median_ns']:.2f}x")

        for sign in ("u32", "i32"):
            shift = f"{sign} >> s" if sign == "u32" else "i32 (v + bias) >> s"
            ratio(shift, f"{sign} / d (argument)", f"{sign} shift vs / by an argument")
            ratio(shift, f"{sign} / D (literal)", f"{sign} shift vs / by a literal")
            mask = "u32 & (d-1)" if sign == "u32" else "i32 v - ((v + bias) & ~(d-1))"
            ratio(mask, f"{sign} % d (argument)", f"{sign} mask vs % by an argument")
        ratio("mul24 (24-bit operands)", "u32 * u32 (24-bit operands)", "mul24 vs 32-bit multiply")
        ratio("float x * 0.999f", "float x * 0.999 (double)", "0.999f vs 0.999 (double)")
        double = ok.get("float x * 0.999 (double)")
        text = "speed-ups (time of the slower / time of the faster form): " + (
            "; ".join(parts) if parts else "none measured")
        if double and "rel_diff_other_literal" in double:
            text += (f"; the double and float literals' results differ by up to "
                     f"{double['rel_diff_other_literal']:.2g} (relative)")
        results.meta["conclusion"] = (
            text + ". Guide (2009): integer / and % are costly, shifts and masks cheap, and the "
            "compiler converts them itself when the divisor is a literal (5.1.1); mul24 runs at 8 "
            "ops/clock against 2 for a 32-bit multiply, but will be slower on future GPUs (5.1); "
            "a literal without f forces double conversions (5.1.3).")
