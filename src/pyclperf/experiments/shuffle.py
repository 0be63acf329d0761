"""shuffle: a work-group sum combined by a local-memory tree, by sub-group shuffles, by
``sub_group_reduce_add`` and by ``work_group_reduce_add`` (Quasar 9.8; kernels/shuffle.cl).

Every work-item loads one float; each work-group writes the sum of its ``local_size`` floats, so
the combining step, not the load, is what differs between variants. Variants:

* ``tree``: halving tree in local memory (works everywhere);
* ``shuffle``: a butterfly of ``sub_group_shuffle_xor`` (cl_khr_subgroup_shuffle) or, failing
  that, ``intel_sub_group_shuffle_xor`` (cl_intel_subgroups), then the sub-groups' sums added;
* ``subgroup``: ``sub_group_reduce_add`` (cl_khr_subgroups or OpenCL C 3.0 ``__opencl_c_subgroups``);
* ``workgroup``: ``work_group_reduce_add`` (OpenCL C 2.0, or 3.0 with
  ``__opencl_c_work_group_collective_functions``).

Each variant other than the tree is built under ``-cl-std=CL3.0`` (OpenCL 3.0 devices), then
``-cl-std=CL2.0``, then default options; if none builds, its point is ``skipped`` with the build's
reason. Bandwidth counts the input read and the per-group sums written.

Verification: fresh uniform [0, 1) floats, the sums poisoned, each group's sum against NumPy's
float64 within gamma_d * sum |x| (Higham's bound for d chained float32 roundings): d = log2(local
size) for the tree; for the others, whose order of additions is unspecified, d = local size (a
linear chain inside the sub-group or group plus one across sub-groups, at most that many).
"""

from __future__ import annotations

import math
import re
from typing import Any, Sequence

import numpy as np

from .. import _core
from ..device.turns import host_only
from ..device.devices import build_std, missing
from ..measure.checks import compare_close, gamma, poison_device
from ..measure.results import OK, SKIPPED, Results
from ._kit import DEFAULT_LOCAL_SIZE, FLOAT, floats_to_sum, pick, tree_local_size
from .base import Check, Experiment, Launch, noise_note
from .claims import Claim, Figure, ratio

# variant -> the defines to try, in order (shuffle: the Khronos extension, then Intel's).
# The labels the claim below names its rows by (the rows' ``variant``).
TREE, SHUFFLE = "tree", "shuffle"
VARIANTS: dict[str, tuple[str, ...]] = {
    TREE: ("TREE",), SHUFFLE: ("SHUFFLE_KHR", "SHUFFLE_INTEL"),
    "subgroup": ("SUBGROUP",), "workgroup": ("WORKGROUP",),
}


# What each variant's built-ins need the device to claim (devices.missing): a driver may
# compile them on a device that claims none of it, and then compute wrong sums.
NEEDS = {
    TREE: {},
    SHUFFLE: {"cl_khr_subgroup_shuffle|cl_intel_subgroups": "sub-group shuffles"},
    "subgroup": {"cl_khr_subgroups|__opencl_c_subgroups|cl_intel_subgroups": "sub-groups"},
    "workgroup": {"__opencl_c_work_group_collective_functions": "work-group collective functions"},
}


def build_tries(info: Any, variant: str) -> list[str]:
    """Build options to try for a variant: the tree needs none; the others need OpenCL C 2.0 or
    later for their built-ins, tried only in the versions the device claims."""
    if variant == TREE:
        return [""]
    return build_std(info) + [""]


def tree_over_shuffle(results: Results) -> Figure:
    return ratio(results, "median_ns", {"variant": TREE}, {"variant": SHUFFLE})


class Shuffle(Experiment):
    id = "shuffle"
    description = ("a work-group sum by local-memory tree vs sub-group shuffles vs "
                   "`sub_group_reduce_add` vs `work_group_reduce_add`, each skipped where the device "
                   "lacks it: GB/s and error within a derived bound (Quasar 9.8; `--size` is floats)")
    order = 232
    title = "Work-group sum: local-memory tree vs shuffles vs sub-group and work-group reductions"
    x = "variant"
    x_label = "variant"
    guide = "Quasar 9.8 (warp shuffles, cooperative groups)"
    claim = Claim(
        "warp shuffles sum a work-group faster than a tree in local memory",
        "Quasar 9.8 (in words)", "time of tree / shuffle", tree_over_shuffle)
    plot = {"kind": "bars", "label": "variant"}
    size_arg, values_arg = "items", None

    def __init__(self, ctx: Any, items: int | None = None, local_size: int = DEFAULT_LOCAL_SIZE,
                 variants: Sequence[str] | None = None) -> None:
        super().__init__(ctx)
        info = ctx.info
        self.local_size = tree_local_size(self.id, local_size)
        self.variants = pick(self.id, list(VARIANTS), variants, "variants")
        self.items = floats_to_sum(self.id, info, items)
        if self.items % self.local_size or self.items * FLOAT > info.max_alloc_bytes:
            raise _core.InvalidArgumentError(
                f"{self.id}: {self.items} floats must be a multiple of the work-group size "
                f"{self.local_size} and fit one allocation ({info.max_alloc_bytes} bytes)")
        self.groups = self.items // self.local_size
        self.src = ctx.buffer(self.items * FLOAT)
        self.dst = ctx.buffer(self.groups * FLOAT)
        self.built: dict[str, tuple[Any, str]] = {}  # variant -> (kernel or None, how / why not)
        self.rng = np.random.default_rng()
        self._input: tuple[np.ndarray, np.ndarray] | None = None  # (x, its group sums), once a run

    def build(self, variant: str) -> tuple[Any, str]:
        """The variant's kernel and how it was built, or None and why no build succeeded."""
        if variant not in self.built:
            errors: dict[str, list[str]] = {}  # what the build said -> under which options
            for define in VARIANTS[variant]:
                for options in build_tries(self.ctx.info, variant):
                    try:
                        program = self.ctx.program(file="shuffle.cl", options=options,
                                                   defines={"WG": self.local_size, define: 1})
                        kernel = program.kernel("group_sum")
                    except _core.ClError as exc:
                        # A failed build; or a build that holds no kernel (Oclgrind 21.10 under
                        # -cl-std=CL2.0: clCreateKernel answers CL_INVALID_KERNEL_NAME).
                        errors.setdefault(_first_error(str(exc)), []).append(options or "default options")
                        continue
                    self.built[variant] = (kernel, f"{define} with {options or 'default options'}")
                    break
                if variant in self.built:
                    break
            else:
                said = "; ".join(f"{e} ({', '.join(dict.fromkeys(o))})" for e, o in errors.items())
                self.built[variant] = (None, f"{variant} does not build on {self.ctx.info.version}: {said}")
        return self.built[variant]

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "items": self.items, "local_size": self.local_size,
                "groups": self.groups}

    def points(self) -> list[dict[str, Any]]:
        return [{"variant": v} for v in self.variants]

    def skip(self, point: dict[str, Any]) -> str | None:
        unclaimed = missing(self.ctx.info, NEEDS[point["variant"]])
        if unclaimed:
            return unclaimed
        kernel, how = self.build(point["variant"])
        return how if kernel is None else None

    def chain(self, variant: str) -> int:
        return int(math.log2(self.local_size)) if variant == TREE else self.local_size

    def launch(self, point: dict[str, Any]) -> Launch:
        kernel, how = self.build(point["variant"])
        kernel.set_args(self.src, self.dst)
        d = self.chain(point["variant"])
        return Launch.one(kernel, self.items, self.local_size, (self.items + self.groups) * FLOAT,
                          columns={"items": self.items, "local_size": self.local_size,
                                   "built": how, "rounding_chain": d, "rel_bound": gamma(d)})

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        if self._input is None:  # every variant sums the same groups: drawn once, off the device's turn
            with host_only():
                x = self.rng.random(self.items, dtype=np.float32)
                self._input = x, x.reshape(self.groups, self.local_size).astype(np.float64).sum(axis=1)
        x, want = self._input
        self.src.write(x)
        poison_device(self.dst)
        launch.run()
        got = np.empty(self.groups, np.float32)
        self.dst.read(got)
        tol = gamma(launch.columns["rounding_chain"]) * want  # x >= 0: sum |x| = sum x
        with np.errstate(invalid="ignore"):
            rel = np.abs(got.astype(np.float64) - want) / np.where(want > 0, want, 1.0)
        return Check(*compare_close(got, want, tol, "group sums"),
                     {"max_rel_error": float(np.nanmax(rel)) if np.isfinite(rel).any() else float("nan")})

    def finish(self, results: Any) -> None:
        ok = [r for r in results.rows if r.get("status") == OK]
        skipped = "".join(f"; {r['variant']} skipped ({r['error']})"
                          for r in results.rows if r.get("status") == SKIPPED)
        tree = next((r for r in ok if r["variant"] == TREE), None)
        parts = [f"{r['variant']} {r['gbps']:.1f} GB/s{noise_note(r)}"
                 + (f" ({tree['median_ns'] / r['median_ns']:.2f}x the tree's speed)" if tree and r is not tree else "")
                 + f", max relative error {r['max_rel_error']:.1e} (bound {r['rel_bound']:.1e})"
                 for r in ok]
        results.meta["conclusion"] = (
            ("; ".join(parts) if parts else "no variant verified") + skipped + ". Quasar 9.8: "
            "shuffles (Kepler and later) pass values between a warp's lanes through registers "
            "instead of shared memory, which may speed up reductions.")

    summary_columns = ["variant", "status", "built", "median_ns", "spread_pct", "gbps",
                      "fraction_of_peak", "max_rel_error", "rel_bound", "error"]


def _first_error(log: str) -> str:
    """What a failed build said: the kernel's own #error text where it stopped there, else the
    first line that mentions an error (compilers put a temporary file's path before it)."""
    for line in log.splitlines():
        if "error" in line.lower():
            quoted = re.search(r'"([^"]+)"', line)
            return quoted.group(1) if quoted else line.strip()[:160]
    return log.strip()[:160]
