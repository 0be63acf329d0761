"""reduction: a float sum, combined per work-group by a local-memory tree, by sub-group
reductions, or by atomics (Quasar 9.2.3.3, 9.8; kernels/reduction.cl).

Variants (each work-item first sums its grid-stride share of the input privately):

* ``tree``: a halving tree in local memory per work-group writes one sum per group; a second
  launch of the same kernel as one work-group sums those (both kernels' event times count);
* ``subgroup``: ``sub_group_reduce_add`` instead of the tree, then the same second pass. Needs
  cl_khr_subgroups or OpenCL C 3.0 with ``__opencl_c_subgroups``; probed by building a tiny
  kernel (with ``-cl-std=CL3.0`` where the device is OpenCL 3.0). Where that fails the point is
  ``skipped`` with the reason;
* ``atomic``: the tree, then one float add per work-group into a single global total through a
  32-bit ``atomic_cmpxchg`` loop; one launch, the total zeroed by a fill before it (outside the
  event).

Verification: fresh uniform [0, 1) floats, the per-group sums and the total poisoned, compared
with NumPy's float64 sum. The tolerance is the classical bound for recursive summation: an
element that passes through at most d float32 roundings on its way to the total gives
|sum - exact| <= gamma_d * sum |x_i|, gamma_d = d u / (1 - d u), u = 2^-24 (Higham, "Accuracy
and Stability of Numerical Algorithms", 4.2). d is counted per variant (``rounding_chain``): the
private loop's length, the tree's depth (or, for sub-group reductions whose order is unspecified,
a linear chain per sub-group), the second pass, and for atomics one rounding per work-group,
since the groups arrive in any order. Rows report the bound (``tolerance``) and the actual
error. Effective bandwidth counts the input read once (4 n bytes).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .. import _core
from ..device.turns import host_only
from ..measure.checks import compare_close, gamma, poison_device
from ..measure.results import OK, SKIPPED, Results
from ..measure.staging import write_from
from ._kit import (DEFAULT_LOCAL_SIZE, FLOAT, default_groups, pick, probe_build, summed_floats,
                   tree_local_size)
from .base import Check, Experiment, Launch, noise_note
from .claims import Claim, Figure, ratio

# The labels the claim below names its rows by (the rows' ``variant``).
TREE, SUBGROUP, ATOMIC = "tree", "subgroup", "atomic"
VARIANTS = (TREE, SUBGROUP, ATOMIC)

PROBE = """
#if !defined(cl_khr_subgroups) && !defined(__opencl_c_subgroups)
#error "neither cl_khr_subgroups nor __opencl_c_subgroups is available"
#endif
#ifdef cl_khr_subgroups
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
__kernel void probe(__global float* x) { x[get_global_id(0)] = sub_group_reduce_add(x[get_global_id(0)]); }
"""


SUBGROUP_NEEDS = {"cl_khr_subgroups|__opencl_c_subgroups|cl_intel_subgroups": "sub-groups"}


def subgroup_options(ctx: Any) -> tuple[str | None, str]:
    """Build options under which this device compiles ``sub_group_reduce_add`` (None if none
    does), and what was found."""
    return probe_build(ctx, PROBE, "probe", SUBGROUP_NEEDS, "sub-groups")


def tree_over_subgroup(results: Results) -> Figure:
    return ratio(results, "median_ns", {"variant": TREE}, {"variant": SUBGROUP})


class Reduction(Experiment):
    id = "reduction"
    description = ("a float sum by a local-memory tree, `sub_group_reduce_add` where sub-groups exist, "
                   "and float atomics, within a derived rounding bound (Quasar 9.2, 9.8; `--size` is the"
                   " float count)")
    order = 230
    title = "Float sum: local-memory tree vs sub-group reduction vs atomics"
    x = "variant"
    x_label = "variant"
    guide = "Quasar 9.2.3.3 (parallel reduction), 9.8 (warp shuffles)"
    claim = Claim(
        "sub-group (warp) reductions beat a tree in local memory",
        "Quasar 9.2.3.3, 9.8 (in words)", "time of tree / subgroup", tree_over_subgroup)
    plot = {"kind": "bars", "label": "variant"}
    size_arg, values_arg = "items", None  # items = floats summed

    def __init__(self, ctx: Any, items: int | None = None, local_size: int = DEFAULT_LOCAL_SIZE,
                 groups: int | None = None, variants: Sequence[str] = VARIANTS) -> None:
        super().__init__(ctx)
        info = ctx.info
        self.local_size = tree_local_size(self.id, local_size)
        self.variants = pick(self.id, VARIANTS, variants, "variants")
        if items is None:
            # 512 MiB of floats on a GPU (far past its caches), 4 MiB on a CPU device.
            items = 1 << 27 if info.is_gpu else 1 << 20
        self.items = int(items)
        if self.items <= 0 or self.items > 2**31:
            # The kernels' uint index plus the global size must not wrap around.
            raise _core.InvalidArgumentError(f"{self.id}: {self.items} floats: need 1 .. 2^31")
        if self.items * FLOAT > info.max_alloc_bytes:
            raise _core.InvalidArgumentError(
                f"{self.id}: {self.items} floats exceed the device's largest allocation "
                f"({info.max_alloc_bytes} bytes)")
        self.groups = int(groups) if groups is not None else default_groups(info, self.items, self.local_size)
        if self.groups <= 0:
            raise _core.InvalidArgumentError(f"{self.id}: need at least one work-group, got {self.groups}")
        self.program = ctx.program(file="reduction.cl", defines={"WG": self.local_size})
        # Probed now, built at its point: a failing build is that point's status, not a crash.
        self.subgroup_options, self.subgroup_note = (
            subgroup_options(ctx) if SUBGROUP in self.variants else (None, "not requested"))
        self.data = ctx.buffer(self.items * FLOAT)
        self.partial = ctx.buffer(self.groups * FLOAT)
        self.total = ctx.buffer(FLOAT)
        self.rng = np.random.default_rng()
        self._input: tuple[np.ndarray, float] | None = None  # (data, its float64 sum), once a run

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "items": self.items, "local_size": self.local_size,
                "groups": self.groups, "subgroups": self.subgroup_note}

    def points(self) -> list[dict[str, Any]]:
        return [{"variant": v} for v in self.variants]

    def kernel(self, variant: str) -> Any:
        """The variant's kernel, unbound (None for sub-groups where the device has none)."""
        if variant == SUBGROUP:
            if self.subgroup_options is None:
                return None
            program = self.ctx.program(file="reduction.cl", options=self.subgroup_options,
                                       defines={"WG": self.local_size, "SUBGROUPS": 1})
            return program.kernel("reduce_subgroup")
        return self.program.kernel("reduce_atomic" if variant == "atomic" else "reduce_tree")

    def steps(self, variant: str) -> list[tuple[Any, int, int]]:
        """The launch: one kernel over the input, plus the second pass for tree and subgroup."""
        g, l = self.groups * self.local_size, self.local_size
        if variant == "atomic":
            return [(self.kernel(variant).set_args(self.data, np.uint32(self.items), self.total), g, l)]
        first = self.kernel(variant).set_args(self.data, np.uint32(self.items), self.partial)
        second = self.kernel(variant).set_args(self.partial, np.uint32(self.groups), self.total)
        return [(first, g, l), (second, l, l)]

    def rounding_chain(self, variant: str) -> int:
        """The most float32 roundings an input element can pass through on its way to the total."""
        wg = self.local_size
        private = -(-self.items // (self.groups * wg))
        second = -(-self.groups // wg)
        if variant == "atomic":
            return private + int(math.log2(wg)) + self.groups
        # A sub-group reduction's order is unspecified: count it as linear, twice (the
        # sub-groups' own sums, then their combination) plus the combining loop.
        combine = int(math.log2(wg)) if variant == TREE else 3 * wg
        return private + combine + second + combine

    def reset(self) -> None:
        self.total.fill(np.zeros(1, np.float32))

    def skip(self, point: dict[str, Any]) -> str | None:
        return self.subgroup_note if self.kernel(point["variant"]) is None else None

    def launch(self, point: dict[str, Any]) -> Launch:
        variant = point["variant"]
        chain = self.rounding_chain(variant)
        return Launch(self.steps(variant), self.items * FLOAT,
                      reset=self.reset if variant == "atomic" else None,
                      columns={"items": self.items, "local_size": self.local_size,
                               "groups": self.groups, "rounding_chain": chain,
                               "rel_bound": gamma(chain)})

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        if self._input is None:  # every variant sums the same floats, drawn once
            with host_only():
                self._input = summed_floats(self.rng, self.items)
        data, want = self._input
        write_from(self.data, data)
        tolerance = gamma(launch.columns["rounding_chain"]) * want  # sum |x_i| = sum x_i: x >= 0
        poison_device(self.partial)
        poison_device(self.total)
        launch.run()
        got = np.empty(1, np.float32)
        self.total.read(got)
        return Check(*compare_close(got, np.array([want]), tolerance, "totals"),
                     {"result": float(got[0]), "reference": want, "tolerance": tolerance,
                      "rel_error": abs(float(got[0]) - want) / want if want else float("nan")})

    def finish(self, results: Any) -> None:
        """Name the fastest verified variant and how the others compare."""
        ok = [r for r in results.rows if r.get("status") == OK]
        skipped = [r for r in results.rows if r.get("status") == SKIPPED]
        note = "".join(f"; {r['variant']} skipped ({r['error']})" for r in skipped)
        if not ok:
            results.meta["conclusion"] = "no variant verified" + note
            return
        best = max(ok, key=lambda r: r["gbps"])
        results.meta["best_variant"] = best["variant"]
        results.meta["best_gbps"] = best["gbps"]
        others = ", ".join(f"{r['variant']} {r['gbps']:.1f} GB/s ({r['median_ns'] / best['median_ns']:.2f}x "
                           "its time)" for r in ok if r is not best)
        text = f"fastest: {best['variant']} at {best['gbps']:.1f} GB/s{noise_note(best)}"
        if best.get("fraction_of_peak") is not None:
            text += f" ({100 * best['fraction_of_peak']:.0f}% of peak)"
        results.meta["conclusion"] = text + (f"; {others}" if others else "") + note

    @classmethod
    def summary(cls, results: Any) -> Any:
        df = results.df
        cols = ["variant", "status", "median_ns", "spread_pct", "gbps", "fraction_of_peak",
                "rel_error", "rel_bound"]
        return df[[c for c in cols if c in df]]
