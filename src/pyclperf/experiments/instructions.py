"""math, intops and buildopts: what instructions cost (Guide chapter 5, 5.1.1, 5.1.3, 5.1.4, A.2).

These are throughput experiments, not bandwidth ones: every work-item reads one value, runs a
loop of ``iters`` operations (a ``-D ITERS`` define) and writes one value that depends on every
operation, so arithmetic, not memory, sets the time. The metric is operations per second:

    gops = items * iters * ops_per_iter / median seconds / 1e9

where an "operation" is one evaluation of the thing under test (one math function call, one
division or shift, one multiply...); what else each loop iteration executes (the argument
update, the running sum) is the same in every variant of an experiment and is stated in its
kernel file. The rows also carry the usual timing statistics and, for completeness, the bytes
the kernel reads and writes (``gbps``), which stay far below any memory ceiling; they have no
``fraction_of_peak``.

* ``math``: sin, cos, exp, log, rsqrt against native_ and half_ (kernels/math.cl): throughput,
  and the error of one evaluation per element on fresh random inputs against NumPy float64.
* ``intops``: integer division and modulo by a power of two as written by the argument, by a
  literal and by shift/mask (unsigned and signed), mul24 against a 32-bit multiply, and a float
  multiplied by a literal with and without the f suffix (kernels/intops.cl).
* ``buildopts``: three arithmetic loops built with no options, -cl-mad-enable,
  -cl-fast-relaxed-math, -cl-denorms-are-zero and -cl-finite-math-only (kernels/buildopts.cl).
"""

from __future__ import annotations

import math as _pymath
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .. import _core
from ..checks import POISON_U32, compare, poison_device
from ..sweep import OK, SKIPPED, WRONG, timed_row, verdict
from .base import Sweep

FLOAT = 4  # bytes
FLT_MIN = 2.0**-126  # smallest normal float
EPS = 2.0**-23  # float ULP at 1.0: ulp(v) <= EPS * |v| for every normal float v
HALF_EPS = 2.0**-24  # largest relative rounding error of one correctly rounded float operation
# Loop kernels run on every work-item; their NumPy reference is costly (ITERS steps per item, in
# Python-driven array operations), so at most this many randomly chosen work-items are compared
# with it. Every output is still checked for having been written (float outputs: finite, since the
# poison is a NaN; integer outputs: any that equals the poison word joins the compared sample),
# and the one-evaluation kernels of `math` and the float-literal loops compare every element.
SAMPLE = 16384


def ulp32(ref: np.ndarray) -> np.ndarray:
    """ULP of float32 at each real value ``ref`` (float64): the gap between the two floats that
    enclose |ref| (the OpenCL C definition), 2^-149 below the normal range."""
    a = np.abs(np.asarray(ref, dtype=np.float64))
    _, e = np.frexp(a)  # a = m * 2**e with 0.5 <= m < 1, so the gap is 2**(e - 24)
    return np.where(a < FLT_MIN, 2.0**-149, np.ldexp(1.0, e - 24))


def ulp_error(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in ULPs of ``ref``; infinite where ``got`` is not finite. A result flushed to
    zero where the exact one is below the normal range counts as exact (OpenCL allows it)."""
    g = np.asarray(got, dtype=np.float64)
    err = np.abs(g - ref) / ulp32(ref)
    err[(np.abs(ref) < FLT_MIN) & (np.abs(g) < FLT_MIN)] = 0.0
    err[~np.isfinite(g)] = np.inf
    return err


def _pick(experiment: str, given: Sequence[str] | None, known: Sequence[str], what: str) -> list[str]:
    """The names chosen (all ``known`` ones by default); unknown or none raise."""
    names = list(given) if given is not None else list(known)
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise _core.InvalidArgumentError(
            f"{experiment}: unknown or missing {what} {unknown}; known: {', '.join(known)}")
    return names


def _fmt(value: float) -> str:
    return f"{value:.3g}"


class _Throughput(Sweep):
    """Shared by the three experiments: work-items, loop length, one float/uint in and out per
    work-item, and the row's timing and Gop/s columns."""

    x = "variant"
    x_label = "variant"
    plot = {"kind": "bars", "label": "variant", "value": "gops",
            "xlabel": "operations per second (Gop/s, median)"}
    size_arg, values_arg = "items", None
    # GPU defaults: 8192 work-items per compute unit (four full SMs' worth of resident threads on
    # an H100/H200) x 1024 operations each, so the cheapest loop still runs ~0.1 ms on such a
    # GPU and launch overhead and timer noise stay near 1% (at 4096 x 256 it ran 11 us, 9% spread).
    items_per_cu = 8192
    cpu_items = 4096
    gpu_iters, cpu_iters = 1024, 32

    def __init__(self, ctx: Any, items: int | None = None, local_size: int = 256,
                 iters: int | None = None) -> None:
        super().__init__(ctx)
        info = ctx.info
        self.local_size = int(local_size)
        if self.local_size <= 0 or self.local_size > info.max_work_group_size:
            raise _core.InvalidArgumentError(
                f"{self.id}: work-group size {self.local_size} is outside 1..{info.max_work_group_size} "
                "(the device's maximum)")
        if items is None:
            want = info.compute_units * self.items_per_cu if info.is_gpu else self.cpu_items
            items = max(self.local_size, want // self.local_size * self.local_size)
        self.items = int(items)
        if self.items <= 0 or self.items % self.local_size:
            raise _core.InvalidArgumentError(
                f"{self.id}: size {self.items} is not a positive multiple of the work-group size "
                f"{self.local_size}")
        if self.items * FLOAT > info.max_alloc_bytes:
            raise _core.InvalidArgumentError(
                f"{self.id}: {self.items} work-items need {self.items * FLOAT}-byte buffers, over "
                f"the device's largest allocation of {info.max_alloc_bytes} bytes")
        self.iters = int(iters) if iters is not None else (
            self.gpu_iters if info.is_gpu else self.cpu_iters)
        if not 1 <= self.iters <= 1 << 16:
            raise _core.InvalidArgumentError(
                f"{self.id}: iters must be in 1..65536 (operations per work-item), got {self.iters}")
        self.src = ctx.buffer(self.items * FLOAT)  # one float or uint per work-item
        self.dst = ctx.buffer(self.items * FLOAT)
        self.rng = np.random.default_rng()

    def peak_kind(self, row: dict[str, Any]) -> str | None:
        return None  # instruction throughput: no memory ceiling applies

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "items": self.items, "local_size": self.local_size,
                "iters": self.iters, "metric": "gops = items x iters x ops_per_iter / median s / 1e9"}

    def _timed(self, kernel: Any, ops_per_iter: int, *, warmup: int, repeats: int,
               method: str) -> dict[str, Any]:
        times = kernel.time(self.items, self.local_size, warmup=warmup, repeats=repeats, method=method)
        ops = self.items * self.iters * ops_per_iter
        row = {"items": self.items, "local_size": self.local_size, "iters": self.iters,
               "ops_per_iter": ops_per_iter, "ops": ops,
               **timed_row(times, 2 * FLOAT * self.items, method)}
        row["gops"] = ops / row["median_ns"] if row["median_ns"] > 0 else float("nan")
        row["gops_best"] = ops / row["min_ns"] if row["min_ns"] > 0 else float("nan")
        return row

    def _launch(self, kernel: Any, data: np.ndarray, dtype: Any) -> np.ndarray:
        """One verifying launch: ``data`` in, output poisoned first, result back."""
        self.src.write(np.ascontiguousarray(data))
        poison_device(self.dst)
        kernel.run(self.items, self.local_size)
        out = np.empty(self.items, dtype)
        self.dst.read(out)
        return out

    def _sample(self, also: np.ndarray | None = None) -> np.ndarray:
        """The work-items whose result is compared with NumPy's: all of them when there are at
        most SAMPLE, else SAMPLE chosen at random plus the indices in ``also``."""
        if self.items <= SAMPLE:
            return np.arange(self.items)
        chosen = self.rng.choice(self.items, SAMPLE, replace=False)
        return np.union1d(chosen, also) if also is not None else np.sort(chosen)

    @classmethod
    def summary(cls, results: Any) -> Any:
        df = results.df
        cols = ["variant", "status", "median_ns", "spread_pct", "gops", *cls.summary_extra]
        return df[[c for c in cols if c in df]]

    summary_extra: tuple[str, ...] = ()


# --------------------------------------------------------------------------------------------
# math: precise, native_ and half_ math functions
# --------------------------------------------------------------------------------------------

# Minimum accuracy of the precise single-precision functions, full profile: OpenCL C
# specification, section 7.4 "Relative Error as ULPs", table "ULP values for single precision
# built-in math functions": sin, cos <= 4 ulp; exp, log <= 3 ulp; rsqrt <= 2 ulp; every half_
# function <= 8192 ulp; native_* "implementation-defined". (The embedded profile allows 4 ulp for
# exp, log and rsqrt; pyclperf holds devices to the full profile.)
PRECISE_ULP = {"sin": 4.0, "cos": 4.0, "exp": 3.0, "log": 3.0, "rsqrt": 2.0}
HALF_ULP = 8192.0
# half_sin and half_cos are defined only for |x| <= 2^16 (OpenCL C, math functions table).
HALF_TRIG_LIMIT = 2.0**16

REFERENCE: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sin": np.sin, "cos": np.cos, "exp": np.exp, "log": np.log,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
}

# Input ranges: trigonometric functions near zero and where range reduction has work to do
# (beyond 105615, CUDA's single-precision sine switches to its slow Payne-Hanek reduction).
DOMAINS: dict[str, tuple[tuple[str, float, float], ...]] = {
    "sin": (("[-pi,pi]", -_pymath.pi, _pymath.pi), ("[-1e4,1e4]", -1e4, 1e4), ("[-1e6,1e6]", -1e6, 1e6)),
    "cos": (("[-pi,pi]", -_pymath.pi, _pymath.pi), ("[-1e4,1e4]", -1e4, 1e4), ("[-1e6,1e6]", -1e6, 1e6)),
    "exp": (("[-80,80]", -80.0, 80.0),),
    "log": (("(0,1e6]", 0.0, 1e6),),
    "rsqrt": (("(0,1e6]", 0.0, 1e6),),
}
IMPLS = ("precise", "native", "half")
# How far native_ results may stray in the loop check: this many times the largest error one
# evaluation showed on the same range, per evaluation summed (their accuracy has no bound).
NATIVE_SLACK = 4.0


def math_call(function: str, impl: str) -> str:
    return function if impl == "precise" else f"{impl}_{function}"


def math_inputs(rng: np.random.Generator, lo: float, hi: float, n: int) -> np.ndarray:
    """``n`` float32 values uniform on [lo, hi], or on (0, hi] where lo is 0."""
    x = rng.uniform(lo, hi, n).astype(np.float32)
    if lo == 0.0:
        x[x <= 0] = np.float32(hi)
    return x


class MathFunctions(_Throughput):
    id = "math"
    title = "Math functions: precise vs native_ vs half_"
    guide = "Guide 5.1.4 (and 5.1, 5.1.2); OpenCL C 7.4 ULP table"
    summary_extra = ("max_ulp", "mean_ulp", "bound_ulp")

    def __init__(self, ctx: Any, items: int | None = None, local_size: int = 256,
                 iters: int | None = None, functions: Sequence[str] | None = None,
                 impls: Sequence[str] | None = None) -> None:
        self.functions = _pick(self.id, functions, list(DOMAINS), "function(s)")
        self.impls = _pick(self.id, impls, IMPLS, "impl(s)")
        super().__init__(ctx, items, local_size, iters)

    def points(self) -> list[dict[str, Any]]:
        return [{"variant": f"{math_call(f, i)} {name}", "function": f, "impl": i,
                 "call": math_call(f, i), "domain": name, "lo": lo, "hi": hi}
                for f in self.functions for name, lo, hi in DOMAINS[f] for i in self.impls]

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "op": "one call of the function (each loop iteration also adds "
                "1 to an integer and the result to a float sum)",
                "precise_ulp_bounds": PRECISE_ULP, "half_ulp_bound": HALF_ULP}

    def program(self, call: str) -> Any:
        return self.ctx.program(file="math.cl", defines={"FUNC": call, "ITERS": self.iters})

    def measure(self, point: dict[str, Any], *, warmup: int, repeats: int, method: str,
                verify: bool) -> dict[str, Any]:
        impl, lo, hi = point["impl"], point["lo"], point["hi"]
        if impl == "half" and point["function"] in ("sin", "cos") and max(-lo, hi) > HALF_TRIG_LIMIT:
            return {"status": SKIPPED, "verified": False,
                    "error": f"{point['call']} is defined only for |x| <= 2^16 (OpenCL C)"}
        program = self.program(point["call"])
        row: dict[str, Any] = {}
        passed, detail = True, "not verified"
        if verify:
            passed, detail, row = self._accuracy(program.kernel("math_eval").set_args(self.dst, self.src),
                                                 point)
        loop = program.kernel("math_loop").set_args(self.dst, self.src)
        if verify and passed:
            passed, detail = self._verify_loop(loop, point, row["max_abs_err"])
        row.update(self._timed(loop, 1, warmup=warmup, repeats=repeats, method=method))
        row.update(verdict(verify, passed, detail))
        return row

    def _accuracy(self, kernel: Any, point: dict[str, Any]) -> tuple[bool, str, dict[str, Any]]:
        """One evaluation per element on fresh inputs: max absolute and ULP error vs float64."""
        x = math_inputs(self.rng, point["lo"], point["hi"], self.items)
        got = self._launch(kernel, x, np.float32)
        ref = REFERENCE[point["function"]](x.astype(np.float64))
        finite = np.isfinite(got)
        ulps = ulp_error(got, ref)
        abs_err = np.abs(got.astype(np.float64) - ref)
        bound = PRECISE_ULP[point["function"]] if point["impl"] == "precise" else (
            HALF_ULP if point["impl"] == "half" else None)
        max_ulp = float(ulps.max())
        stats = {"samples": int(x.size), "nonfinite": int((~finite).sum()), "max_ulp": max_ulp,
                 "mean_ulp": float(ulps[finite].mean()) if finite.any() else float("inf"),
                 "max_abs_err": float(abs_err.max()) if finite.all() else float("inf"),
                 "bound_ulp": bound}
        if not finite.all():
            first = int(np.flatnonzero(~finite)[0])
            return False, (f"{stats['nonfinite']} of {x.size} results are not finite; first at {first}: "
                           f"{point['call']}({x[first]!r}) gave {got[first]!r}"), stats
        if bound is not None and max_ulp > bound:
            worst = int(np.argmax(ulps))
            return False, (f"max error {max_ulp:.3g} ulp exceeds the OpenCL C bound of "
                           f"{bound:g} ulp: {point['call']}({x[worst]!r}) gave {got[worst]!r}, "
                           f"float64 says {ref[worst]!r}"), stats
        return True, "", stats

    def _verify_loop(self, kernel: Any, point: dict[str, Any], max_abs_err: float) -> tuple[bool, str]:
        """The loop's sums: all finite; a sample of them within a tolerance of the float64 sum.

        Tolerance per work-item, with S the sum of |f| over its ITERS arguments: for a function
        with a bound of B ulp, B * 2^-23 * S (each term's error, as ulp(v) <= 2^-23 |v|) plus
        ITERS * 2^-24 * S (rounding of the running sum). For native_ functions, whose error has no
        bound, NATIVE_SLACK times the largest absolute error one evaluation showed on this range,
        per term, plus the same rounding allowance.
        """
        x = math_inputs(self.rng, point["lo"], point["hi"], self.items)
        got = self._launch(kernel, x, np.float32)
        if not np.isfinite(got).all():
            first = int(np.flatnonzero(~np.isfinite(got))[0])
            return False, f"loop sum of work-item {first} is {got[first]!r} (not finite or not written)"
        idx = self._sample()
        args = (x[idx].view(np.uint32)[:, None] + np.arange(self.iters, dtype=np.uint32)[None, :])
        terms = REFERENCE[point["function"]](args.view(np.float32).astype(np.float64))
        ref = terms.sum(axis=1)
        magnitude = np.abs(terms).sum(axis=1)
        if point["impl"] == "native":
            tol = NATIVE_SLACK * max_abs_err * self.iters + self.iters * HALF_EPS * magnitude
        else:
            bound = PRECISE_ULP[point["function"]] if point["impl"] == "precise" else HALF_ULP
            tol = (bound * EPS + self.iters * HALF_EPS) * magnitude
        err = np.abs(got[idx].astype(np.float64) - ref)
        bad = np.flatnonzero(err > tol)
        if bad.size:
            j = int(bad[0])
            return False, (f"{bad.size} of {idx.size} checked loop sums differ from float64 beyond "
                           f"the tolerance; work-item {int(idx[j])}: got {got[idx[j]]!r}, want "
                           f"{ref[j]:.9g} +- {tol[j]:.3g}")
        return True, ""

    def finish(self, results: Any) -> None:
        """Speed of native_ (and half_) against the precise function per range, and the cost of
        range reduction, beside the Guide's claim."""
        rows = {(r["function"], r["domain"], r["impl"]): r for r in results.rows if r.get("status") == OK}
        speedups: dict[str, float] = {}
        parts = []
        for f in self.functions:
            for name, _, _ in DOMAINS[f]:
                precise, native = rows.get((f, name, "precise")), rows.get((f, name, "native"))
                if precise and native:
                    s = native["gops"] / precise["gops"]
                    speedups[f"{f} {name}"] = s
                    parts.append(f"native_{f} {name}: {s:.1f}x the speed of {f} "
                                 f"(max error {_fmt(native['max_ulp'])} ulp vs {_fmt(precise['max_ulp'])})")
            narrow = rows.get((f, DOMAINS[f][0][0], "precise"))
            wide = rows.get((f, DOMAINS[f][-1][0], "precise"))
            if narrow and wide and wide is not narrow:
                parts.append(f"{f} on {DOMAINS[f][-1][0]}: {narrow['gops'] / wide['gops']:.1f}x the "
                             f"time per call on {DOMAINS[f][0][0]} (range reduction)")
        results.meta["native_speedup"] = speedups
        wrong = [r["variant"] for r in results.rows if r.get("status") == WRONG]
        text = "; ".join(parts) if parts else "no precise/native pair verified"
        if wrong:
            text += f". Outside the OpenCL C accuracy bounds (or not finite): {', '.join(wrong)}"
        results.meta["conclusion"] = (
            text + ". Guide 5.1.4 (2009): native_sin/cos/exp run at 1 op per clock per multiprocessor, "
            "the precise functions are much slower and about 10x slower again when the argument "
            "needs range reduction.")


# --------------------------------------------------------------------------------------------
# intops: division/modulo vs shift/mask, mul24, float literals
# --------------------------------------------------------------------------------------------

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


INT_OPS = (
    IntOp("loop only (x)", "int_baseline", "baseline", lambda u, d, s: u),
    IntOp("u32 / d (argument)", "u32_div_var", "u32 divide", lambda u, d, s: u // d),
    IntOp("u32 / D (literal)", "u32_div_lit", "u32 divide", lambda u, d, s: u // d),
    IntOp("u32 >> s", "u32_div_shift", "u32 divide", lambda u, d, s: u >> s),
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


class IntOps(_Throughput):
    id = "intops"
    title = "Integer division/modulo vs shift/mask, mul24, float literals"
    guide = "Guide 5.1 (mul24), 5.1.1, 5.1.3"
    summary_extra = ("group", "time_vs_loop_only", "rel_diff_other_literal")

    def __init__(self, ctx: Any, items: int | None = None, local_size: int = 256,
                 iters: int | None = None, divisor: int = 16,
                 variants: Sequence[str] | None = None) -> None:
        names = _pick(self.id, variants, list(INT_VARIANTS), "variant(s)")
        divisor = int(divisor)
        if divisor < 2 or divisor > 1 << 30 or divisor & (divisor - 1):
            raise _core.InvalidArgumentError(
                f"{self.id}: the divisor must be a power of two in 2..2^30, got {divisor}")
        super().__init__(ctx, items, local_size, iters)
        self.variants = [INT_VARIANTS[n] for n in names]
        self.divisor, self.shift = divisor, divisor.bit_length() - 1
        self.fp64 = bool(ctx.info.has_extension("cl_khr_fp64"))

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

    def measure(self, point: dict[str, Any], *, warmup: int, repeats: int, method: str,
                verify: bool) -> dict[str, Any]:
        op = INT_VARIANTS[point["variant"]]
        if op.kernel == "float_literal_double" and not self.fp64:
            return {"status": SKIPPED, "verified": False,
                    "error": "the device has no cl_khr_fp64: a literal without the f suffix is a "
                             "double, which it cannot compute"}
        kernel = self.kernel(op)
        extra: dict[str, Any] = {}
        passed, detail = self._verify(kernel, op, extra) if verify else (True, "not verified")
        row = {**extra, **self._timed(kernel, 1, warmup=warmup, repeats=repeats, method=method)}
        row.update(verdict(verify, passed, detail))
        return row

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
        seeds = self.rng.integers(0, 2**32, self.items, dtype=np.uint32)
        got = self._launch(kernel, seeds, np.uint32)
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


# --------------------------------------------------------------------------------------------
# buildopts: the same kernels under different build options
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OptKernel:
    name: str
    ops_per_iter: int  # floating-point operations per iteration, as written
    ops: str  # which they are
    lo: float  # input range
    hi: float
    step: Callable[[np.ndarray, np.ndarray], np.ndarray]  # float64 map y -> f(y, x)
    start: float
    # Standard-precision error bound of the no-option build, relative to |y| (see the kernel
    # file): the per-step rounding allowed by the OpenCL C ULP table, divided by (1 - L) where
    # L < 1 bounds |df/dy| on the input range, times a safety factor of about two.
    bound: Callable[[np.ndarray], np.ndarray]


OPT_KERNELS = {k.name: k for k in (
    # y' = x y + 0.5: two roundings of <= 2^-24 * (|x y| + |y'|) <= 2^-23 * Ymax per step with
    # Ymax = 0.5 / (1 - |x|); errors shrink by |x| per step: |e| <= 2^-23 Ymax / (1 - |x|).
    # Tolerance 4x that, as a fraction of Ymax.
    OptKernel("poly", 2, "mul, add", -0.9, 0.9, lambda y, x: y * x + 0.5, 0.0,
              lambda x: 4 * EPS / (1 - np.abs(x))),
    # y' = x / (sqrt(y) + 1) + 0.5, x in [1, 4]: sqrt <= 3 ulp, divide <= 2.5, two adds 0.5 each:
    # <= 6.5 ulp per step; |df/dy| <= 0.5, so <= 13 ulp; tolerance 32 ulp.
    OptKernel("divsqrt", 4, "sqrt, add, divide, add", 1.0, 4.0,
              lambda y, x: x / (np.sqrt(y) + 1.0) + 0.5, 1.0, lambda x: np.full(x.shape, 32 * EPS)),
    # y' = x sin(y) + exp(-y), x in [0.25, 0.5]: sin <= 4 ulp, exp <= 3, mul and add 0.5 each:
    # <= 8 ulp per step; |df/dy| <= 0.4, so <= 14 ulp; tolerance 32 ulp.
    OptKernel("transcendental", 4, "sin, mul, exp, add", 0.25, 0.5,
              lambda y, x: x * np.sin(y) + np.exp(-y), 1.0, lambda x: np.full(x.shape, 32 * EPS)),
)}
BUILD_OPTIONS = ("", "-cl-mad-enable", "-cl-fast-relaxed-math", "-cl-denorms-are-zero",
                 "-cl-finite-math-only")
# A build under options that relax the arithmetic fails only when its results are not finite or
# farther than this (relative) from float64: ten times what the OpenCL C relaxed-math table lets
# these loops accumulate (sin's absolute error of 2^-11 over a contraction with L <= 0.4 gives
# about 1.5e-3 relative on the transcendental kernel; the others far less).
RELAXED_LIMIT = 1e-2


class BuildOptions(_Throughput):
    id = "buildopts"
    title = "Build options: -cl-mad-enable, -cl-fast-relaxed-math, ..."
    guide = "Guide chapter 5 introduction, A.2 (and 5.1.4)"
    summary_extra = ("speedup_vs_none", "max_rel_err", "max_rel_diff_vs_none")

    def __init__(self, ctx: Any, items: int | None = None, local_size: int = 256,
                 iters: int | None = None, kernels: Sequence[str] | None = None,
                 options: Sequence[str] | None = None) -> None:
        names = _pick(self.id, kernels, list(OPT_KERNELS), "kernel(s)")
        opts = [str(o).strip() for o in options] if options is not None else list(BUILD_OPTIONS)
        if not opts:
            raise _core.InvalidArgumentError(f"{self.id}: no build options to compare")
        super().__init__(ctx, items, local_size, iters)
        self.kernels = names
        # The option-free build is every comparison's reference: always measured, first.
        self.options = [""] + [o for o in dict.fromkeys(opts) if o]

    def points(self) -> list[dict[str, Any]]:
        return [{"variant": f"{k} {o or '(none)'}", "kernel": k, "options": o}
                for k in self.kernels for o in self.options]

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "relaxed_limit": RELAXED_LIMIT,
                "op": "one floating-point operation as written in the kernel (sqrt, divide, sin and "
                      "exp count one each): " + "; ".join(
                          f"{k.name} {k.ops_per_iter} per iteration ({k.ops})" for k in OPT_KERNELS.values())}

    def kernel(self, name: str, options: str) -> Any:
        program = self.ctx.program(file="buildopts.cl", defines={"ITERS": self.iters}, options=options)
        return program.kernel(name).set_args(self.dst, self.src)

    def measure(self, point: dict[str, Any], *, warmup: int, repeats: int, method: str,
                verify: bool) -> dict[str, Any]:
        spec = OPT_KERNELS[point["kernel"]]
        kernel = self.kernel(spec.name, point["options"])
        extra: dict[str, Any] = {}
        passed, detail = self._verify(kernel, spec, point["options"], extra) if verify else (
            True, "not verified")
        row = {**extra, **self._timed(kernel, spec.ops_per_iter, warmup=warmup, repeats=repeats,
                                      method=method)}
        row.update(verdict(verify, passed, detail))
        return row

    def _verify(self, kernel: Any, spec: OptKernel, options: str,
                extra: dict[str, Any]) -> tuple[bool, str]:
        """Fresh inputs through this build and through the option-free build; errors against a
        float64 iteration on a sample of work-items, differences to the option-free build on all.
        The option-free build must stay within ``spec.bound``; others within RELAXED_LIMIT."""
        x = self.rng.uniform(spec.lo, spec.hi, self.items).astype(np.float32)
        got = self._launch(kernel, x, np.float32)
        plain = got if not options else self._launch(self.kernel(spec.name, ""), x, np.float32)
        g64, p64 = got.astype(np.float64), plain.astype(np.float64)
        finite = np.isfinite(got)
        diff = np.abs(g64 - p64)
        with np.errstate(invalid="ignore", divide="ignore"):
            extra["max_abs_diff_vs_none"] = float(diff.max())
            extra["max_rel_diff_vs_none"] = float(np.max(diff / np.abs(p64)))
        extra["identical_to_none"] = bool(np.array_equal(got.view(np.uint32), plain.view(np.uint32)))
        extra["nonfinite"] = int((~finite).sum())
        idx = self._sample()
        xs = x[idx].astype(np.float64)
        y = np.full(xs.shape, spec.start)
        for _ in range(self.iters):
            y = spec.step(y, xs)
        err = np.abs(g64[idx] - y)
        scale = np.abs(y) if spec.name != "poly" else 0.5 / (1 - np.abs(xs))  # poly: vs Ymax
        with np.errstate(invalid="ignore"):
            rel = err / scale
        extra["max_abs_err"] = float(err.max())
        extra["max_rel_err"] = float(np.max(err / np.abs(y)))
        if not finite.all():
            first = int(np.flatnonzero(~finite)[0])
            return False, (f"{extra['nonfinite']} of {x.size} results are not finite or not written; "
                           f"first at {first}: {got[first]!r}")
        limit = spec.bound(xs) if not options else np.full(xs.shape, RELAXED_LIMIT)
        bad = np.flatnonzero(~(rel <= limit))
        if bad.size:
            j = int(bad[0])
            what = "the standard's precision" if not options else f"the relaxed limit {RELAXED_LIMIT:g}"
            return False, (f"{bad.size} of {idx.size} checked results exceed {what}; work-item "
                           f"{int(idx[j])} (x = {xs[j]!r}): got {got[idx[j]]!r}, float64 {y[j]:.9g}")
        return True, ""

    def finish(self, results: Any) -> None:
        plain = {r["kernel"]: r for r in results.rows if r.get("status") == OK and not r["options"]}
        parts = []
        for r in results.rows:
            base = plain.get(r.get("kernel", ""))
            if r.get("status") == OK and base is not None:
                r["speedup_vs_none"] = base["median_ns"] / r["median_ns"]
                if r["options"]:
                    same = "identical results" if r.get("identical_to_none") else (
                        f"results differ by up to {r['max_rel_diff_vs_none']:.2g} (relative)")
                    parts.append(f"{r['kernel']} {r['options']}: {r['speedup_vs_none']:.2f}x, {same}")
        wrong = [r["variant"] for r in results.rows if r.get("status") == WRONG]
        text = "time of the option-free build / time with the option: " + (
            "; ".join(parts) if parts else "nothing to compare")
        if wrong:
            text += f". Failed verification: {', '.join(wrong)}"
        results.meta["conclusion"] = (
            text + ". Guide (2009, chapter 5 and A.2, high priority): use -cl-mad-enable (mul+add "
            "fused into one FMAD instruction, 'large performance gains'); consider "
            "-cl-fast-relaxed-math.")


__all__ = ["BuildOptions", "IntOps", "MathFunctions", "ulp32", "ulp_error"]
