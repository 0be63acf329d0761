"""bandwidth: read-only, write-only and float-to-half bandwidth beside the copy, each at the
launch shape the sweep finds fastest (kernels/bandwidth.cl).

A copy moves as many bytes in as out, so it says nothing of how a device reads or writes alone;
clpeak reports a read figure and BabelStream a dot product for that reason. Three modes:

* ``read``: ``read_sum``, every work-item sums its float4s (a grid-stride loop), each work-group
  adds its work-items' sums in local memory and writes one float: the loads cannot be dropped,
  and the writes are a few bytes per work-group;
* ``write``: ``fill``, every float4 set to one value;
* ``convert``: ``to_half``, each float4 read and stored as four halves by ``vstore_half4``
  (4 + 2 bytes per element).

All three loop over the data with a grid stride, so any grid serves any size. The fast shape is
not known in advance (it differs between vendors, modes and sizes), so the sweep finds it: every
work-group size (powers of two, 128 to 1024, up to the device's limit; ``sizes`` for others) at
4, 8, 16 and 32 work-groups per compute unit, and at full coverage (one float4 per work-item). The conclusion
names the best read, write and convert and their shapes, and sets the best read beside another
tool's read on the same device: ``reference_read_gbps=`` (with ``reference_label=``), else the
newest such figure on record for this device in pyclperf/tool_figures.json (clpeak's on the
H200), else none.

Verification, per point, on fresh input with the outputs (and a guard band past them) poisoned:
``read`` each work-group's partial sum of uniform [0, 1) floats against NumPy's float64 sum of
the same float4s, within gamma_d * sum |x| (Higham 4.2; d the rounding chain,
``rounding_chain``); ``write`` every float equal, bit for bit, to a fresh random value;
``convert`` every half equal, bit for bit, to NumPy's float16 rounding (round to nearest even,
which OpenCL C fixes for vstore_half: no tie is excused), on inputs that include exact ties,
half subnormals, underflow to zero and overflow to infinity. Effective bandwidth counts the
bytes the kernel reads and writes (the partial sums included, at most 0.2% of a read's bytes:
4 per 128 float4s at full coverage with work-groups of 128).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .. import _core
from ..device.turns import host_only, host_work
from ..reference import tool_figures
from ..measure.checks import (FLT_MIN, POISON_U32, compare, compare_close, gamma, poison_device,
                      poison_pattern, random_bytes)
from ..measure.results import OK, Results
from ..measure.stats import MiB
from ..measure.staging import read_back, write_from
from ._kit import FLOAT, check_alloc, pick, table
from .base import Check, Experiment, Launch, noise_note
from .claims import Claim, Figure, NotMeasured, meta_number, row_se

MODES = ("read", "write", "convert")
# The default sweep: 128 to 1024 work-items a group, 4 to 32 groups per compute unit and full
# coverage. Smaller groups and fewer groups per unit never led on the GPUs tried, and each point
# costs a 256 MiB host check: the guide's whole run has to fit in minutes.
GROUP_SIZES = (128, 256, 512, 1024)
PER_CU = (4, 8, 16, 32)  # work-groups per compute unit
FULL = "full"  # the shape with one float4 per work-item
VEC = 16  # bytes of a float4, the unit each work-item moves per loop trip
GUARD = 4096  # bytes past each output that must keep their poison (a stray write shows)



def default_nbytes(info: Any) -> int:
    """Bytes per buffer: 256 MiB on a GPU (far past its last-level cache, a launch long beside its
    ramp), 1 MiB on a CPU device (seconds for the whole sweep on PoCL); never more than an eighth
    of the device's memory or its largest allocation, so the three buffers fit."""
    want = 256 * MiB if info.is_gpu else 1 * MiB
    limit = min(info.max_alloc_bytes, info.global_mem_bytes // 8)
    while want > 64 * VEC and want > limit:
        want //= 2
    return want


# Exponents of the rare convert inputs (10 in 256): two below the smallest half subnormal (they
# round to zero or to it), two in the half subnormal range, six past 65504 (they round to
# infinity). Rare because NumPy converts subnormal halves on a slow path (seconds for 64 Mi).
SPECIAL_EXPONENTS = np.array([127 - 28, 127 - 25, 127 - 20, 127 - 16] + [127 + 16 + i % 4 for i in range(6)],
                             np.uint32) << np.uint32(23)
# The exponent field for each value of a random byte: the 30 normal half exponents 2^-14 .. 2^15
# in turn for the first 246 values, the rare ones for the last 10.
EXPONENT_OF_BYTE = np.concatenate([
    ((np.arange(256 - SPECIAL_EXPONENTS.size, dtype=np.uint32) % np.uint32(30)) + np.uint32(127 - 14))
    << np.uint32(23), SPECIAL_EXPONENTS])
# Every TIE_STRIDE-th input (from a random start) is forced onto an exact tie. 17 is odd, so the
# ties fall on every lane of a float4 and at every offset of a work-item's loop alike.
TIE_STRIDE = 17
TIE_FRACTION = 1 / TIE_STRIDE


def convert_input(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` finite floats with random signs and mantissas: most over the normal half exponents
    2^-14 .. 2^15, some below the smallest half, in its subnormal range and past 65504 (see
    SPECIAL_EXPONENTS), and one in TIE_STRIDE with the 13 bits float16 drops set to exactly half
    an ulp, the case round-to-nearest-even decides.

    Built in place on random 32-bit words: each word's own exponent field (8 random bits) picks
    its exponent through EXPONENT_OF_BYTE, so no second draw, no index set and no float pass
    over the 64 Mi elements of a 256 MiB input are needed."""
    bits = random_bytes(rng, 4 * n).view(np.uint32)
    choice = (bits >> np.uint32(23)).astype(np.uint8)  # the exponent byte (and the sign's bit)
    bits &= np.uint32(0x807FFFFF)
    bits |= EXPONENT_OF_BYTE[choice]
    ties = bits[int(rng.integers(TIE_STRIDE)):: TIE_STRIDE]
    ties &= ~np.uint32(0x1FFF)  # clear the dropped bits of the chosen ones ...
    ties |= np.uint32(0x1000)  # ... and set them to 0x1000, half an ulp of a half
    return bits.view(np.float32)


def half_ties(x: np.ndarray) -> np.ndarray:
    """Where float16 rounding of ``x`` is an exact tie (for half normals: the dropped 13 bits are
    0x1000): a device that breaks ties another way differs from NumPy only there."""
    bits = x.view(np.uint32)
    return (bits & np.uint32(0x1FFF)) == np.uint32(0x1000)


@host_work
def group_sums(sums: np.ndarray, work_items: int, size: int) -> np.ndarray:
    """The float64 total each work-group of a grid-stride read adds up: float4 i (whose sum is
    ``sums[i]``) belongs to work-item i % work_items, of group (i % work_items) // size. Summed as
    rows of ``work_items`` (no index array over the 16 Mi float4s of 256 MiB)."""
    whole = sums.size // work_items * work_items
    per_item = np.zeros(work_items, np.float64)
    if whole:
        per_item += sums[:whole].reshape(-1, work_items).sum(axis=0)
    per_item[: sums.size - whole] += sums[whole:]
    return per_item.reshape(-1, size).sum(axis=1)


def read_over_reference(results: Results) -> Figure:
    """The best verified read over another tool's read on this device (where one is on record),
    with the best read row's own uncertainty."""
    if not results.meta.get("read_over_reference"):
        raise NotMeasured("no other tool's read figure is on record for this device")
    value = meta_number(results, "read_over_reference")
    best = meta_number(results, "best_read_gbps")
    row = next((r for r in results.rows if r.get("mode") == "read" and r.get("gbps") == best), None)
    return Figure.of(value, row_se(row) if row is not None else None)


class Bandwidth(Experiment):
    id, host_bound = "bandwidth", True  # host_bound: its checks are most of its seconds on a GPU
    description = ("read-only (a sum), write-only (a fill) and float-to-half bandwidth over work-group "
                   "sizes and grid-stride grids, the fastest launch shape found, beside another "
                   "tool's read on the same device where one is on record "
                   "(`--size` is bytes per buffer; values are work-group sizes)")
    order = 72
    title = "Read, write and float-to-half bandwidth by launch shape"
    x = "work_items"
    x_label = "work-items launched (work-groups x work-group size)"
    guide = "clpeak (global memory bandwidth), BabelStream (dot); Guide 2.2.2"
    claim = Claim(
        "the best read bandwidth matches what another tool measures on the same device",
        "no other tool's read figure on record for this device",
        "best verified read / the other tool's read", read_over_reference, kind="property",
        source_key="reference_source")
    # One line per mode through the median of the work-group sizes at each grid size; every size
    # is a dot beside it (fifteen lines, one per mode and size, were past telling apart).
    plot = {"kind": "lines", "y": "gbps", "group": "mode", "logx": True,
            "ylabel": "GB/s (dots: each work-group size)"}
    size_arg, values_arg, local_size_arg = "nbytes", "sizes", None
    quick_gpu = {"sizes": (256, 1024)}  # a property (no verdict): two of the four group sizes

    def __init__(self, ctx: Any, nbytes: int | None = None, sizes: Sequence[int] | None = None,
                 per_cu: Sequence[int] = PER_CU, full: bool = True,
                 modes: Sequence[str] | None = None, reference_read_gbps: float | None = None,
                 reference_label: str = "") -> None:
        """``nbytes``: bytes of each buffer (a multiple of 16: float4s); ``sizes``: work-group
        sizes (powers of two); ``per_cu``: work-groups per compute unit to try; ``full``: also
        the grid of one float4 per work-item; ``reference_read_gbps``: another tool's read
        bandwidth on this device to set the best read beside (``reference_label`` names it),
        instead of the figure on record in tool_figures.json."""
        super().__init__(ctx)
        info = ctx.info
        self.reference = self.reference_figure(info, reference_read_gbps, reference_label)
        self.modes = pick(self.id, MODES, modes, "modes")
        top = int(info.max_work_group_size)
        fitting = [s for s in GROUP_SIZES if s <= top] or [1 << (top.bit_length() - 1)]
        self.sizes = [int(s) for s in (sizes if sizes is not None else fitting)]
        # read_sum's local tree halves the group: only powers of two add every work-item's sum.
        if not self.sizes or any(s <= 0 or s & (s - 1) for s in self.sizes):
            raise _core.InvalidArgumentError(
                f"{self.id}: work-group sizes must be powers of two, got {self.sizes}")
        self.per_cu = [int(k) for k in per_cu]
        if any(k <= 0 for k in self.per_cu) or not (self.per_cu or full):
            raise _core.InvalidArgumentError(
                f"{self.id}: work-groups per compute unit must be positive, and some shape given "
                f"(per_cu {self.per_cu}, full {full})")
        self.full = bool(full)
        self.nbytes = int(nbytes) if nbytes is not None else default_nbytes(info)
        if self.nbytes <= 0 or self.nbytes % VEC:
            raise _core.InvalidArgumentError(
                f"{self.id}: {self.nbytes} bytes is not a positive multiple of {VEC} (float4s)")
        self.count = self.nbytes // VEC  # float4s
        check_alloc(self.id, info, self.nbytes + GUARD, "the fill's buffer")
        # Inputs carry a guard too: a kernel reading one float4 too far (a test's deliberate bug)
        # stays inside the allocation.
        self.src = ctx.buffer(self.nbytes + GUARD)
        self.dst = ctx.buffer(self.nbytes + GUARD) if "write" in self.modes else None
        self.half = ctx.buffer(self.nbytes // 2 + GUARD) if "convert" in self.modes else None
        most = max([self.groups(s, k) for s in self.sizes for k in self.shapes(s)])
        self.partial = ctx.buffer(most * FLOAT + GUARD) if "read" in self.modes else None
        self.rng = np.random.default_rng()
        self._inputs: dict[str, Any] = {}  # mode -> (input, reference), drawn on first use
        self._loaded = ""  # the mode whose input ``src`` holds

    def reference_figure(self, info: Any, gbps: float | None, label: str) -> tuple[float, str] | None:
        """(GB/s, what it is) of the read the best read is set beside; None where none is known."""
        if gbps is None:
            figure = tool_figures.for_device(self.id, "read_gbps", info)
            return (figure.value, figure.label) if figure is not None else None
        if not float(gbps) > 0:
            raise _core.InvalidArgumentError(f"{self.id}: reference_read_gbps must be a positive "
                                             f"number of GB/s, got {gbps!r}")
        return float(gbps), f"{label or 'the reference given'}: read {float(gbps):g} GB/s"

    def shapes(self, size: int) -> list[Any]:
        """The grids tried at work-group size ``size``: k work-groups per compute unit, dropped
        where that is already a full-coverage grid or more (its extra work-items would idle),
        then full coverage."""
        full_groups = -(-self.count // size)
        out: list[Any] = [k for k in self.per_cu if k * self.ctx.info.compute_units < full_groups]
        return out + [FULL] if self.full or not out else out

    def groups(self, size: int, shape: Any) -> int:
        if shape == FULL:
            return -(-self.count // size)
        return int(shape) * int(self.ctx.info.compute_units)

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "nbytes": self.nbytes, "float4s": self.count,
                "sizes": self.sizes, "per_cu": self.per_cu,
                "compute_units": int(self.ctx.info.compute_units),
                "reference_read_gbps": self.reference[0] if self.reference else None,
                "reference_source": self.reference[1] if self.reference else None}

    def points(self) -> list[dict[str, Any]]:
        out = []
        for mode in self.modes:
            for size in self.sizes:
                for shape in self.shapes(size):
                    groups = self.groups(size, shape)
                    out.append({"mode": mode, "local_size": size,
                                "shape": FULL if shape == FULL else f"{shape} x CU",
                                "groups": groups, "work_items": groups * size})
        return out

    def kernel(self, mode: str, size: int) -> Any:
        """The mode's kernel from the build for work-group size ``size`` (read_sum requires it;
        the builds are cached by the context, one per size)."""
        program = self.ctx.program(file="bandwidth.cl", defines={"WG": size})
        return program.kernel({"read": "read_sum", "write": "fill", "convert": "to_half"}[mode])

    def rounding_chain(self, work_items: int, size: int) -> int:
        """Float32 roundings an element's value may pass through on its way to its group's sum:
        two inside its float4, one per trip of its work-item's running sum, one per level of the
        group's tree."""
        return 2 + -(-self.count // work_items) + int(math.log2(size))

    def launch(self, point: dict[str, Any]) -> Launch:
        mode, size, groups = point["mode"], int(point["local_size"]), int(point["groups"])
        k = self.kernel(mode, size)
        limits = k.limits()
        count = np.uint64(self.count)
        if mode == "read":
            k.set_args(self.src, count, self.partial)
            read, written = self.nbytes, groups * FLOAT
        elif mode == "write":
            k.set_args(self.dst, np.float32(1.0), count)
            read, written = 0, self.nbytes
        else:
            k.set_args(self.src, count, self.half)
            read, written = self.nbytes, self.nbytes // 2
        work_items = groups * size
        # The kernel's reported CL_KERNEL_WORK_GROUP_SIZE is recorded, not obeyed (as blocksize
        # does): NVIDIA reports 256 and runs 1024. A launch the driver refuses is that point's
        # "launch failed"; the device's own limits are the launch check's.
        columns = {"float4s": self.count, "per_item": -(-self.count // work_items),
                   "bytes_read": read, "bytes_written": written,
                   "kernel_max_work_group_size": int(limits.work_group_size),
                   "over_kernel_limit": size > int(limits.work_group_size)}
        return Launch.one(k, work_items, size, read + written, columns=columns)

    # --- the inputs: drawn once per run --------------------------------------------------------
    # read_sum and to_half only read ``src`` (it is const in kernels/bandwidth.cl), so every point
    # of a mode reads the same fresh random input, drawn and reduced to its reference once: a
    # point that wrote into its input anyway would fail the points after it, whose references
    # come from the host's copy. The outputs are still poisoned before every point.

    def _load(self, mode: str) -> Any:
        """The mode's input in ``src`` (uploaded again only after the other mode's replaced it),
        and what its check needs: the float64 sum of each float4 (read), or the input and its
        float16 reference bits (convert)."""
        if mode not in self._inputs:
            with host_only():
                if mode == "read":
                    # Uniform [0, 1): non-negative, so sum |x| is the sum itself.
                    data = self.rng.random(4 * self.count, dtype=np.float32)
                    reference: Any = data.reshape(-1, 4).sum(axis=1, dtype=np.float64)
                else:
                    data = convert_input(self.rng, 4 * self.count)
                    with np.errstate(over="ignore"):  # past 65504 is infinity, as on the device
                        reference = (data, data.astype(np.float16).view(np.uint16))
            self._inputs[mode] = (data, reference)
        data, reference = self._inputs[mode]
        if self._loaded != mode:
            write_from(self.src, data)
            self._loaded = mode
        return reference

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        kernel = launch.steps[0][0]
        mode = point["mode"]
        if mode == "read":
            return self.check_read(point, launch)
        if mode == "write":
            value = np.float32(self.rng.standard_normal() * 2.0 ** self.rng.integers(-20, 20))
            kernel.set_scalar(1, value)  # fill(out, value, count): the rest as the launch bound it
            poison_device(self.dst)
            launch.run()
            got = read_back(self.dst, np.uint32)
            filled = self.nbytes // FLOAT
            ok, detail = compare(got[:filled], np.broadcast_to(value.view(np.uint32), filled),
                                 "filled floats")
            if ok:
                ok, detail = compare(got[filled:], np.full(GUARD // FLOAT, POISON_U32, np.uint32),
                                     "guard words after the filled floats")
            return Check(ok, detail, {"value": float(value)})
        data, want = self._load("convert")
        poison_device(self.half)
        launch.run()
        got = read_back(self.half, np.uint16)
        ok, detail = compare(got[: data.size], want, "halves")
        if not ok:
            wrong = np.flatnonzero(got[: data.size] != want)
            ties = int(half_ties(data[wrong]).sum())
            detail += (f"; {ties} of the {wrong.size} wrong halves are exact ties (round to nearest "
                       "even is what OpenCL C requires, so ties are not excused)")
            return Check(ok, detail)
        return Check(*compare(got[data.size:], poison_pattern(GUARD, self.nbytes // 2).view(np.uint16),
                              "guard halves after the last one"))

    def check_read(self, point: dict[str, Any], launch: Launch) -> Check:
        """Each work-group's partial sum against NumPy's float64 sum of the float4s its work-items
        visit (work-item g visits g, g + G, g + 2G ... for a grid of G), within the rounding
        bound; the words past the last group's must keep their poison."""
        size, groups = int(point["local_size"]), int(point["groups"])
        work_items = groups * size
        sums = self._load("read")
        poison_device(self.partial)
        launch.run()
        got = np.empty(groups + GUARD // FLOAT, np.float32)
        self.partial.read(got)
        want = group_sums(sums, work_items, size)
        chain = self.rounding_chain(work_items, size)
        # |error| <= gamma_d * sum |x| (here = want); a device flushing subnormal sums to zero
        # loses at most FLT_MIN per rounding.
        tol = gamma(chain) * want + chain * FLT_MIN
        ok, detail = compare_close(got[:groups], want, tol, "work-group sums")
        if ok:
            ok, detail = compare(got[groups:].view(np.uint32),
                                 np.full(GUARD // FLOAT, POISON_U32, np.uint32),
                                 "words past the last work-group's sum")
        total = float(got[:groups].astype(np.float64).sum())
        return Check(ok, detail, {"rounding_chain": chain, "sum_error": abs(total - want.sum()),
                                  "tolerance": float(tol.sum())})

    def finish(self, results: Any) -> None:
        """The fastest verified shape of each mode, and the best read beside the reference."""
        ok = [r for r in results.rows if r.get("status") == OK and r.get("gbps")]
        parts = []
        for mode in self.modes:
            rows = [r for r in ok if r["mode"] == mode]
            if not rows:
                parts.append(f"{mode}: no verified point")
                continue
            best, worst = max(rows, key=lambda r: r["gbps"]), min(rows, key=lambda r: r["gbps"])
            shape = (f"work-group {best['local_size']}, {best['groups']} work-groups "
                     f"({best['shape']})")
            results.meta[f"best_{mode}_gbps"] = best["gbps"]
            results.meta[f"best_{mode}_shape"] = {"local_size": best["local_size"],
                                                  "groups": best["groups"], "shape": best["shape"]}
            parts.append(f"best {mode} {best['gbps']:.1f} GB/s at {shape}{noise_note(best)}, "
                         f"{best['gbps'] / worst['gbps']:.2f}x its slowest shape")
        text = "; ".join(parts)
        if "best_read_gbps" in results.meta and self.reference is not None:
            ratio = results.meta["best_read_gbps"] / self.reference[0]
            results.meta["read_over_reference"] = ratio
            text += f". Best read beside {self.reference[1]}: {ratio:.3f}x"
        elif "read" in self.modes:
            text += (f". No other tool's read figure is on record for {self.ctx.info.name} "
                     "(pyclperf/tool_figures.json; reference_read_gbps= gives one)")
        results.meta["conclusion"] = text

    @classmethod
    def summary(cls, results: Any) -> Any:
        return table(results, ["mode", "local_size", "shape", "groups", "status", "median_ns",
                               "spread_pct", "gbps", "fraction_of_peak"])
