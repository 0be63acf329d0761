"""gridsync: a float sum in one launch, finished by the last work-group to arrive (an atomic
counter and memory fences), against two launches, and on a persistent grid of only as many
work-groups as can be resident (Quasar 9.8.2 opt_block_cnt, 9.8.3 memory fences;
kernels/gridsync.cl).

Variants:

* ``two_pass``: per-group sums, then a second launch of one work-group over them (both times count);
* ``last_group``: one launch; the last group to count itself in adds the per-group sums;
* ``persistent``: the same kernel on compute units x resident groups per unit (pyclperf.theory.limits'
  estimate on NVIDIA; one group per compute unit where nothing is known), each work-item
  striding over many more elements;
* ``no_fence``: ``last_group`` without its ordering (no fences; a relaxed increment with
  OpenCL 2.0 atomics). Nothing guarantees its result; whether this device can be caught giving
  a wrong one is what its row says.

How the last group learns that every other sum is stored (the rows' ``sync`` column): where the
device has acquire/release atomics at device scope (OpenCL C 2.0, or 3.0 with
``__opencl_c_atomic_order_acq_rel`` and ``__opencl_c_atomic_scope_device``; probed by building
a kernel), the program is built with ``-cl-std=CL2.0``/``CL3.0`` and each group's increment is
acq_rel, which makes its store of its sum visible to the group that comes last. On OpenCL 1.2
devices (and with ``atomics="1.2"``) the sums are stored and read through 1.2 atomics, with
``mem_fence`` around the increment: OpenCL 1.2 promises no ordering across work-groups, so that
variant relies on the fences doing what they do on the GPUs it was run on. Either way every
access another work-group can make at the same time is atomic: the kernel has no data race
(Oclgrind's race detector finds none).

The first two and ``no_fence`` use a large grid (``items_per_work_item`` elements each). Every
variant is checked over ``trials`` launches on fresh uniform [0, 1) floats, the total poisoned
before each, against NumPy's float64 sum within gamma_d * sum (d the longest chain of float32
roundings, as in `reduction`); a variant is right only if every launch is. Bandwidth counts the
input read once.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .. import _core
from ..device.turns import host_only
from ..measure.checks import compare_close, gamma, poison_device
from ..theory.limits import estimate
from ..measure.results import OK, WRONG, Results
from ..measure.staging import write_from
from ._kit import (DEFAULT_LOCAL_SIZE, FLOAT, by_variant, floats_to_sum, pick, positive,
                   probe_build, summed_floats, tree_local_size)
from .base import Check, Experiment, Launch, noise_note
from .claims import Claim, Figure, ratio

# The labels the claim below names its rows by (the rows' ``variant``).
TWO_PASS, LAST_GROUP, PERSISTENT, NO_FENCE = "two_pass", "last_group", "persistent", "no_fence"
VARIANTS = (TWO_PASS, LAST_GROUP, PERSISTENT, NO_FENCE)
ATOMICS = ("auto", "2.0", "1.2")

# Builds only where the device has what ATOMICS20 in gridsync.cl needs.
ATOMICS20_PROBE = """
#if __OPENCL_C_VERSION__ < 200
#error "OpenCL C before 2.0"
#endif
#if __OPENCL_C_VERSION__ >= 300 && (!defined(__opencl_c_atomic_order_acq_rel) || \\
                                    !defined(__opencl_c_atomic_scope_device))
#error "no acquire/release atomics at device scope"
#endif
__kernel void probe(volatile __global atomic_uint* c, volatile __global atomic_float* f)
{
    atomic_store_explicit(f, 1.0f, memory_order_relaxed, memory_scope_device);
    atomic_fetch_add_explicit(c, 1u, memory_order_acq_rel, memory_scope_device);
}
"""
# What the device must claim for ATOMICS20 (OpenCL C 2.0 implies both).
ATOMICS20_NEEDS = {"__opencl_c_atomic_order_acq_rel": "acquire/release atomics",
                   "__opencl_c_atomic_scope_device": "device-scope atomics"}
SYNC_20 = "OpenCL C {std} atomics: acq_rel increment at device scope"
SYNC_12 = ("OpenCL 1.2 atomics + mem_fence: relies on the fences ordering a group's store before "
           "its increment for other groups, which OpenCL 1.2 does not promise")


def atomics20_options(ctx: Any) -> tuple[str | None, str]:
    """Build options under which this device compiles gridsync.cl's ATOMICS20 (None where none
    does), and what was found."""
    return probe_build(ctx, ATOMICS20_PROBE, "probe", ATOMICS20_NEEDS,
                       "device-scope acquire/release atomics")


def resident_groups(info: Any, local_size: int) -> tuple[int, str]:
    """Work-groups that can be resident at once, and where that number comes from."""
    est = estimate(info, local_size, local_size * FLOAT)
    if info.is_gpu and est.groups_per_cu:
        return info.compute_units * est.groups_per_cu, f"{info.compute_units} compute units x " \
            f"{est.groups_per_cu} groups ({est.limited_by}; {'exact' if est.complete else 'upper bound'})"
    return info.compute_units, f"{info.compute_units} compute units x 1 group (no residency limits known)"


def two_launches_over_one(results: Results) -> Figure:
    return ratio(results, "median_ns", {"variant": TWO_PASS}, {"variant": LAST_GROUP})


class GridSync(Experiment):
    id = "gridsync"
    description = ("a single-pass float sum finished by the last work-group (an atomic counter, "
                   "acquire/release where OpenCL 2.0 atomics exist, else 1.2 fences) "
                   "vs two launches vs a persistent resident grid, and whether the fence-less variant "
                   "can be caught wrong (Quasar 9.8.2-9.8.3; `--size` is floats)")
    order = 234
    # The guide runs it in a process of its own: its work-groups coordinate through an atomic
    # counter and fences, and the fence-less variant is run to see whether it goes wrong.
    isolate = True
    title = "Single-pass reduction: last work-group vs two launches vs persistent grid"
    x = "variant"
    x_label = "variant"
    guide = "Quasar 9.8.2 (opt_block_cnt, grid synchronisation), 9.8.3 (memory fences)"
    claim = Claim(
        "finishing a reduction inside one launch beats a second launch",
        "Quasar 9.8.2 (in words)", "time of two_pass / last_group", two_launches_over_one)
    plot = {"kind": "bars", "label": "variant"}
    size_arg, values_arg = "items", None

    def __init__(self, ctx: Any, items: int | None = None, local_size: int = DEFAULT_LOCAL_SIZE,
                 variants: Sequence[str] | None = None, items_per_work_item: int = 8,
                 trials: int | None = None, atomics: str = "auto") -> None:
        """``atomics``: "auto" (OpenCL 2.0 atomics where the device has them, else 1.2), "2.0"
        (refused where the device lacks them) or "1.2"."""
        super().__init__(ctx)
        info = ctx.info
        self.local_size = tree_local_size(self.id, local_size)
        self.variants = pick(self.id, VARIANTS, variants, "variants")
        if atomics not in ATOMICS:
            raise _core.InvalidArgumentError(f"{self.id}: atomics must be one of {ATOMICS}, got {atomics!r}")
        options, note = atomics20_options(ctx) if atomics != "1.2" else (None, "OpenCL 1.2 asked for")
        if atomics == "2.0" and options is None:
            raise _core.InvalidArgumentError(f"{self.id}: atomics='2.0': {note}")
        self.build_options = options or ""
        self.atomics_note = note
        self.sync = SYNC_20.format(std=options[-3:]) if options else SYNC_12
        self.items = floats_to_sum(self.id, info, items)
        if self.items > 2**31 or self.items * FLOAT > info.max_alloc_bytes:
            raise _core.InvalidArgumentError(
                f"{self.id}: {self.items} floats exceed 2^31 or the largest allocation")
        per_item = positive(self.id, "items per work-item", items_per_work_item)
        self.trials = positive(self.id, "trials", trials if trials is not None
                               else (50 if info.is_gpu else 5))
        self.groups = {"wide": max(1, -(-self.items // (per_item * self.local_size)))}
        self.groups["resident"], self.resident_note = resident_groups(info, self.local_size)
        most = max(self.groups.values())
        self.src = ctx.buffer(self.items * FLOAT)
        self.partial = ctx.buffer(most * FLOAT)
        self.count, self.total = ctx.buffer(FLOAT), ctx.buffer(FLOAT)
        self.count.fill(np.zeros(1, np.uint32))
        self.rng = np.random.default_rng()
        self._input: tuple[np.ndarray, float] | None = None  # (x, its float64 sum), once a run

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "items": self.items, "local_size": self.local_size,
                "groups": self.groups, "resident": self.resident_note, "trials": self.trials,
                "sync": self.sync, "atomics": self.atomics_note}

    def points(self) -> list[dict[str, Any]]:
        return [{"variant": v} for v in self.variants]

    def program(self, variant: str) -> Any:
        defines: dict[str, Any] = {"WG": self.local_size}
        if variant == NO_FENCE:
            defines["NO_FENCE"] = 1
        if self.build_options:
            defines["ATOMICS20"] = 1
        return self.ctx.program(file="gridsync.cl", defines=defines, options=self.build_options)

    def chain(self, groups: int) -> int:
        """The longest chain of float32 roundings from an element to the total."""
        tree = int(math.log2(self.local_size))
        private = -(-self.items // (groups * self.local_size))
        return private + tree + -(-groups // self.local_size) + tree

    def launch(self, point: dict[str, Any]) -> Launch:
        variant = point["variant"]
        groups = self.groups["resident" if variant == "persistent" else "wide"]
        g, l = groups * self.local_size, self.local_size
        program = self.program(variant)
        n = np.uint32(self.items)
        if variant == TWO_PASS:
            first = program.kernel("partial_sums").set_args(self.src, n, self.partial)
            second = program.kernel("partial_sums").set_args(self.partial, np.uint32(groups), self.total)
            steps = [(first, g, l), (second, l, l)]
        else:
            k = program.kernel("last_group").set_args(self.src, n, self.partial, self.count, self.total)
            steps = [(k, g, l)]
        d = self.chain(groups)
        return Launch(steps, self.items * FLOAT,
                      columns={"groups": groups, "launches": len(steps), "rounding_chain": d,
                               "rel_bound": gamma(d),
                               "sync": "two launches" if variant == TWO_PASS else self.sync})

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        if self._input is None:  # every variant sums the same floats, drawn once
            with host_only():
                self._input = summed_floats(self.rng, self.items)
        x, want = self._input
        write_from(self.src, x)
        tol = gamma(launch.columns["rounding_chain"]) * want
        self.count.fill(np.zeros(1, np.uint32))
        got = np.empty(self.trials, np.float32)
        one = np.empty(1, np.float32)
        for t in range(self.trials):
            poison_device(self.total)
            poison_device(self.partial)  # a sum read before it was stored shows as NaN
            launch.run()
            self.total.read(one)
            got[t] = one[0]
        passed, detail = compare_close(got, np.full(self.trials, want), tol, "launches' totals")
        with np.errstate(invalid="ignore"):  # the poison is a signalling NaN
            err = np.abs(got.astype(np.float64) - want)
            bad = int(np.sum(~(err <= tol)))
        finite = err[np.isfinite(err)]
        return Check(passed, detail, {"trials": self.trials, "wrong_trials": bad,
                                      "rel_error": float(finite.max()) / want if finite.size else float("nan")})

    def finish(self, results: Any) -> None:
        rows, ok = by_variant(results)
        parts = []
        two = rows.get(TWO_PASS)
        for r in ok:
            text = f"{r['variant']} {r['gbps']:.1f} GB/s ({r['groups']} groups){noise_note(r)}"
            if two and two.get("status") == OK and r is not two:
                text += f", {two['median_ns'] / r['median_ns']:.2f}x the speed of two launches"
            parts.append(text)
        nf = rows.get(NO_FENCE)
        if nf is None:
            fence = "the fence-less variant was not run"
        elif nf.get("status") == WRONG:
            fence = f"without fences the sum was shown wrong ({nf.get('error', '')})"
            results.meta["no_fence_shown_wrong"] = True
        elif nf.get("status") == OK:
            fence = (f"without fences all {nf['trials']} checked launches were right: the missing "
                     "fence cannot be shown wrong on this device, which proves nothing about others")
            results.meta["no_fence_shown_wrong"] = False
        else:
            fence = f"the fence-less variant did not run ({nf.get('status')})"
        results.meta["conclusion"] = (
            "; ".join(parts or ["no variant verified"]) + f". {fence}. The last group's ordering: "
            f"{self.sync}. Quasar 9.8.2-9.8.3: a grid "
            "that waits on itself must be no larger than what can be resident (opt_block_cnt), and "
            "memory fences keep a global store from being seen after what follows it.")

    summary_columns = ["variant", "status", "groups", "launches", "median_ns", "spread_pct",
                      "gbps", "fraction_of_peak", "wrong_trials", "trials", "rel_error",
                      "rel_bound"]
