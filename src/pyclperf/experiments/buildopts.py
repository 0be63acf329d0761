"""buildopts: three arithmetic loops built with no options, -cl-mad-enable,
-cl-fast-relaxed-math, -cl-denorms-are-zero and -cl-finite-math-only (Guide A.2;
kernels/buildopts.cl): speed, and error against float64. See _throughput.py for the metric."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .. import _core
from ..device.turns import host_only
from ..measure.results import OK, WRONG, Results
from ._kit import DEFAULT_LOCAL_SIZE, pick
from ._throughput import EPS, Throughput
from .base import Check, Launch
from .claims import Claim, Figure, ratio

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


def variant_label(kernel: str, options: str) -> str:
    """A row's ``variant``: the kernel and its build options ("(none)" for none)."""
    return f"{kernel} {options or '(none)'}"


MAD = "-cl-mad-enable"
CLAIM_KERNEL = "poly"  # a multiply and an add per step: what -cl-mad-enable fuses


def none_over_mad(results: Results) -> Figure:
    return ratio(results, "median_ns", {"variant": variant_label(CLAIM_KERNEL, "")},
                 {"variant": variant_label(CLAIM_KERNEL, MAD)})


class BuildOptions(Throughput):
    id = "buildopts"
    description = ("three loops built with no options, `-cl-mad-enable`, `-cl-fast-relaxed-math`, `-cl-"
                   "denorms-are-zero`, `-cl-finite-math-only`: speed and error (Guide A.2; `--size` is "
                   "work-items)")
    order = 200
    title = "Build options: -cl-mad-enable, -cl-fast-relaxed-math, ..."
    guide = "Guide chapter 5 introduction, A.2 (and 5.1.4)"
    claim = Claim(
        "-cl-mad-enable speeds up a multiply-add loop", "Guide A.2 (in words: large gains)",
        "time of poly with no options / with -cl-mad-enable", none_over_mad)
    summary_extra = ("speedup_vs_none", "max_rel_err", "max_rel_diff_vs_none")

    def __init__(self, ctx: Any, items: int | None = None, local_size: int = DEFAULT_LOCAL_SIZE,
                 iters: int | None = None, kernels: Sequence[str] | None = None,
                 options: Sequence[str] | None = None) -> None:
        names = pick(self.id, list(OPT_KERNELS), kernels, "kernels")
        opts = [str(o).strip() for o in options] if options is not None else list(BUILD_OPTIONS)
        if not opts:
            raise _core.InvalidArgumentError(f"{self.id}: no build options to compare")
        self.kernels = names
        # The option-free build is every comparison's reference: always measured, first.
        self.options = [""] + [o for o in dict.fromkeys(opts) if o]
        super().__init__(ctx, items, local_size, iters)

    def points(self) -> list[dict[str, Any]]:
        return [{"variant": variant_label(k, o), "kernel": k, "options": o}
                for k in self.kernels for o in self.options]

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "relaxed_limit": RELAXED_LIMIT,
                "op": "one floating-point operation as written in the kernel (sqrt, divide, sin and "
                      "exp count one each): " + "; ".join(
                          f"{k.name} {k.ops_per_iter} per iteration ({k.ops})" for k in OPT_KERNELS.values())}

    def build(self, options: str) -> dict[str, Any]:
        return {"file": "buildopts.cl", "defines": {"ITERS": self.iters}, "options": options}

    def builds(self, point: dict[str, Any]) -> list[dict[str, Any]]:
        return [self.build(point["options"])]

    def kernel(self, name: str, options: str) -> Any:
        return self.ctx.program(**self.build(options)).kernel(name).set_args(self.dst, self.src)

    def launch(self, point: dict[str, Any]) -> Launch:
        spec = OPT_KERNELS[point["kernel"]]
        return self.throughput(self.kernel(spec.name, point["options"]), spec.ops_per_iter)

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        extra: dict[str, Any] = {}
        passed, detail = self._verify(launch.steps[0][0], OPT_KERNELS[point["kernel"]],
                                      point["options"], extra)
        return Check(passed, detail, extra)

    def _verify(self, kernel: Any, spec: OptKernel, options: str,
                extra: dict[str, Any]) -> tuple[bool, str]:
        """Fresh inputs through this build and through the option-free build; errors against a
        float64 iteration on a sample of work-items, differences to the option-free build on all.
        The option-free build must stay within ``spec.bound``; others within RELAXED_LIMIT."""
        with host_only():
            x = self.rng.uniform(spec.lo, spec.hi, self.items).astype(np.float32)
        got = self._launch(kernel, x, np.float32)
        plain = got if not options else self._launch(self.kernel(spec.name, ""), x, np.float32)
        with host_only():  # the float64 iterations and comparisons: the device's turn is given up
            return self._judge(spec, options, x, got, plain, extra)

    def _judge(self, spec: OptKernel, options: str, x: np.ndarray, got: np.ndarray,
               plain: np.ndarray, extra: dict[str, Any]) -> tuple[bool, str]:
        """_verify's verdict on the outputs of this build (``got``) and the option-free one."""
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
