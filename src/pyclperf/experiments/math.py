"""math: sin, cos, exp, log, rsqrt against native_ and half_, and rsqrt against 1.0f/sqrt(x)
(Guide 5.1.4, 5.1.2; kernels/math.cl):
throughput, and the error of one evaluation per element on fresh random inputs against NumPy
float64, held to the OpenCL C bounds. See _throughput.py for the metric."""

from __future__ import annotations

import math as _pymath
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ..measure.checks import ulp_error
from ..device.turns import host_only, host_work
from ..measure.results import OK, WRONG, Results
from ._kit import DEFAULT_LOCAL_SIZE, pick
from ._throughput import EPS, HALF_EPS, Throughput, fmt
from .base import Check, Launch
from .claims import Claim, Figure, ratio

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
IMPLS = ("precise", "native", "half", "recip")
# "recip": rsqrt written as 1.0f / sqrt(x) (Guide 5.1.2: the compiler may not turn it into rsqrt,
# since the two round differently). Its bound follows from the parts: sqrt <= 3 ulp and division
# <= 2.5 ulp (OpenCL C 7.4), relative errors up to 3 * 2^-23 and 2.5 * 2^-23 that add, and an ulp
# of the result is at least 2^-24 of it, so at most 2 x 5.5 = 11 ulp.
RECIP_ULP = 11.0
# How far native_ results may stray in the loop check: this many times the largest error one
# evaluation showed on the same range, per evaluation summed (their accuracy has no bound).
NATIVE_SLACK = 4.0


def math_call(function: str, impl: str) -> str:
    if impl == "recip":  # only rsqrt has this form (points() pairs it with nothing else)
        return "1.0f/sqrt"
    return function if impl == "precise" else f"{impl}_{function}"


def math_inputs(rng: np.random.Generator, lo: float, hi: float, n: int) -> np.ndarray:
    """``n`` float32 values uniform on [lo, hi], or on (0, hi] where lo is 0."""
    x = rng.uniform(lo, hi, n).astype(np.float32)
    if lo == 0.0:
        x[x <= 0] = np.float32(hi)
    return x


class _Inputs(NamedTuple):
    """One range's inputs and references, shared by the implementations of its function."""

    x: np.ndarray  # float32 arguments, one per work-item
    ref: np.ndarray  # float64 f(x), for the one-evaluation check
    idx: np.ndarray  # the work-items whose loop sums are checked
    loop_ref: np.ndarray  # float64 loop sums of those work-items
    loop_magnitude: np.ndarray  # sum of |f| over each of those loops (the tolerance's scale)


CLAIM_FUNCTION, CLAIM_DOMAIN = "sin", "[-pi,pi]"


def precise_over_native(results: Results) -> Figure:
    where = {"function": CLAIM_FUNCTION, "domain": CLAIM_DOMAIN}
    return ratio(results, "median_ns", {**where, "impl": "precise"}, {**where, "impl": "native"})


class MathFunctions(Throughput):
    id = "math"
    host_bound = True  # its references and checks: most of its seconds on a GPU
    description = ("sin, cos, exp, log, rsqrt against `native_` and `half_` (and rsqrt against "
                   "`1.0f/sqrt`): Gop/s and ULP error vs "
                   "float64 held to the OpenCL C bounds (Guide 5.1.4; `--size` is work-items)")
    order = 180
    title = "Math functions: precise vs native_ vs half_"
    guide = "Guide 5.1.4 (and 5.1, 5.1.2); OpenCL C 7.4 ULP table"
    claim = Claim(
        "native_ functions run about ten times faster than the precise ones",
        "Guide 5.1.4: native ~1 op/clock, precise ~10x slower",
        "time of precise sin / native sin, on [-pi,pi]", precise_over_native, source_ratio=10.0)
    summary_extra = ("max_ulp", "mean_ulp", "bound_ulp")

    def __init__(self, ctx: Any, items: int | None = None, local_size: int = DEFAULT_LOCAL_SIZE,
                 iters: int | None = None, functions: Sequence[str] | None = None,
                 impls: Sequence[str] | None = None) -> None:
        self.functions = pick(self.id, list(DOMAINS), functions, "functions")
        self.impls = pick(self.id, IMPLS, impls, "impls")
        super().__init__(ctx, items, local_size, iters)
        self._shared: tuple[tuple[str, float, float], _Inputs] | None = None

    @host_work
    def _inputs(self, point: dict[str, Any]) -> "_Inputs":
        """The random inputs of one function and range with their float64 references, drawn and
        computed once for all its implementations (precise, native_, half_, 1/sqrt): they
        compute the same function, so one reference serves them all. Only the latest range is
        kept (points() lists each range's implementations together)."""
        key = (point["function"], float(point["lo"]), float(point["hi"]))
        if self._shared is None or self._shared[0] != key:
            self._shared = None  # let the previous range's arrays go before drawing the next
            f = REFERENCE[point["function"]]
            x = math_inputs(self.rng, point["lo"], point["hi"], self.items)
            idx = self._sample()
            # Work-item i's loop calls f on x_i, then on each next float up (ITERS of them).
            args = x[idx].view(np.uint32)[:, None] + np.arange(self.iters, dtype=np.uint32)[None, :]
            terms = f(args.view(np.float32).astype(np.float64))
            self._shared = key, _Inputs(x, f(x.astype(np.float64)), idx, terms.sum(axis=1),
                                        np.abs(terms, out=terms).sum(axis=1))
        return self._shared[1]

    def points(self) -> list[dict[str, Any]]:
        return [{"variant": f"{math_call(f, i)} {name}", "function": f, "impl": i,
                 "call": math_call(f, i), "domain": name, "lo": lo, "hi": hi}
                for f in self.functions for name, lo, hi in DOMAINS[f] for i in self.impls
                if i != "recip" or f == "rsqrt"]

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "op": "one call of the function (each loop iteration also adds "
                "1 to an integer and the result to a float sum)",
                "precise_ulp_bounds": PRECISE_ULP, "half_ulp_bound": HALF_ULP}

    def build(self, call: str) -> dict[str, Any]:
        return {"file": "math.cl", "defines": {"FUNC": call, "ITERS": self.iters}}

    def builds(self, point: dict[str, Any]) -> list[dict[str, Any]]:
        return [self.build(point["call"])]

    def program(self, call: str) -> Any:
        return self.ctx.program(**self.build(call))

    def skip(self, point: dict[str, Any]) -> str | None:
        lo, hi = point["lo"], point["hi"]
        if point["impl"] == "half" and point["function"] in ("sin", "cos") and max(-lo, hi) > HALF_TRIG_LIMIT:
            return f"{point['call']} is defined only for |x| <= 2^16 (OpenCL C)"
        return None

    def launch(self, point: dict[str, Any]) -> Launch:
        loop = self.program(point["call"]).kernel("math_loop").set_args(self.dst, self.src)
        return self.throughput(loop, 1)

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        """One evaluation per element against float64 (the OpenCL C bound), then the loop."""
        evaluate = self.program(point["call"]).kernel("math_eval").set_args(self.dst, self.src)
        passed, detail, stats = self._accuracy(evaluate, point)
        if passed:
            passed, detail = self._verify_loop(launch.steps[0][0], point, stats["max_abs_err"])
        return Check(passed, detail, stats)

    def _accuracy(self, kernel: Any, point: dict[str, Any]) -> tuple[bool, str, dict[str, Any]]:
        """One evaluation per element on fresh inputs: max absolute and ULP error vs float64."""
        shared = self._inputs(point)
        x, ref = shared.x, shared.ref
        got = self._launch(kernel, x, np.float32)
        with host_only():
            finite = np.isfinite(got)
            ulps = ulp_error(got, ref)
            abs_err = np.abs(got.astype(np.float64) - ref)
            bound = PRECISE_ULP[point["function"]] if point["impl"] == "precise" else (
                HALF_ULP if point["impl"] == "half" else RECIP_ULP if point["impl"] == "recip" else None)
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
        shared = self._inputs(point)
        got = self._launch(kernel, shared.x, np.float32)
        if not np.isfinite(got).all():
            first = int(np.flatnonzero(~np.isfinite(got))[0])
            return False, f"loop sum of work-item {first} is {got[first]!r} (not finite or not written)"
        idx, ref, magnitude = shared.idx, shared.loop_ref, shared.loop_magnitude
        if point["impl"] == "native":
            tol = NATIVE_SLACK * max_abs_err * self.iters + self.iters * HALF_EPS * magnitude
        else:
            bound = PRECISE_ULP[point["function"]] if point["impl"] == "precise" else (
                RECIP_ULP if point["impl"] == "recip" else HALF_ULP)
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
                                 f"(max error {fmt(native['max_ulp'])} ulp vs {fmt(precise['max_ulp'])})")
            narrow = rows.get((f, DOMAINS[f][0][0], "precise"))
            wide = rows.get((f, DOMAINS[f][-1][0], "precise"))
            if narrow and wide and wide is not narrow:
                parts.append(f"{f} on {DOMAINS[f][-1][0]}: {narrow['gops'] / wide['gops']:.1f}x the "
                             f"time per call on {DOMAINS[f][0][0]} (range reduction)")
        rsq = {i: rows.get(("rsqrt", DOMAINS["rsqrt"][0][0], i)) for i in ("precise", "recip", "native")}
        if rsq["precise"] and (rsq["recip"] or rsq["native"]):
            parts.append("against rsqrt: " + ", ".join(
                f"{math_call('rsqrt', i)} at {r['gops'] / rsq['precise']['gops']:.2f}x its speed "
                f"(max {fmt(r['max_ulp'])} ulp)" for i, r in rsq.items() if r and i != "precise")
                + " (Guide 5.1.2: call rsqrt() explicitly; 1.0f/sqrt(x) becomes rsqrt only where "
                "IEEE-754 allows)")
        results.meta["native_speedup"] = speedups
        wrong = [r["variant"] for r in results.rows if r.get("status") == WRONG]
        text = "; ".join(parts) if parts else "no precise/native pair verified"
        if wrong:
            text += f". Outside the OpenCL C accuracy bounds (or not finite): {', '.join(wrong)}"
        results.meta["conclusion"] = (
            text + ". Guide 5.1.4 (2009): native_sin/cos/exp run at 1 op per clock per multiprocessor, "
            "the precise functions are much slower and about 10x slower again when the argument "
            "needs range reduction.")
