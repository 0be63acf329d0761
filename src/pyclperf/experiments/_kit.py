"""What several experiments need and no single one owns: the default work-group size, the one
variant picker, the one launch check (the core's validate_launch) and the argument checks.

No experiment imports another experiment; what two of them share lives here (or in measure/checks.py
for comparisons)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .. import _core
from ..device.turns import host_only, host_work
from ..measure.checks import POISON_U32, compare, poison_device, same_bits
from ..measure.device_check import DeviceCheck
from ..measure.results import OK, SKIPPED
from ..measure.staging import read_back, write_from

# The work-group size every experiment that takes one starts from (the CLI's --local-size).
DEFAULT_LOCAL_SIZE = 256

FLOAT = 4  # bytes of a float, an int or a uint
EPS32 = 2.0**-23  # float32 machine epsilon (np.finfo(np.float32).eps)


def pick(experiment: str, known: Mapping[str, Any] | Sequence[str], given: Sequence[str] | None,
         what: str = "variants") -> list[Any]:
    """The entries ``given`` chooses among ``known`` (all of them when ``given`` is None), in the
    order given: the table's values where ``known`` is a mapping, else the names.

    An unknown name or an empty choice raises InvalidArgumentError naming the known ones."""
    names = list(known)
    chosen = list(given) if given is not None else names
    unknown = [n for n in chosen if n not in names]
    if unknown or not chosen:
        raise _core.InvalidArgumentError(
            f"{experiment}: unknown or no {what} {unknown}; known: {', '.join(map(str, names))}")
    if isinstance(known, Mapping):
        return [known[n] for n in chosen]
    return chosen


def probe_build(ctx: Any, source: str, kernel_name: str, needs: Mapping[str, str],
                what: str) -> tuple[str | None, str]:
    """Build options under which ``ctx``'s device compiles ``source`` for a feature (None when
    none does), and what was found. The device must first claim what ``needs`` names
    (devices.missing): a driver may compile code for a feature it does not claim and compute
    wrong results with it. Then -cl-std at each OpenCL C version of 2.0 or later it lists, then
    its default."""
    from ..device.devices import build_std, missing

    unclaimed = missing(ctx.info, needs)
    if unclaimed:
        return None, f"no {what}: {unclaimed}"
    tries = build_std(ctx.info) + [""]
    for options in tries:
        try:
            ctx.program(source, options=options).kernel(kernel_name)
        except _core.ClError:
            continue
        return options, f"{what} built with {options or 'default options'!r}"
    return None, (f"no {what}: the device claims it, but no probe built "
                  f"(tried {', '.join(repr(t) for t in tries)})")


def check_launch(experiment: str, kernel: Any, global_size: Any, local_size: Any) -> None:
    """Refuse (InvalidArgumentError) a launch the device cannot take: the core's own check
    (``_core.validate_launch``: dimensions, CL_DEVICE_MAX_WORK_GROUP_SIZE and _ITEM_SIZES, a
    local size that divides the global size). What the driver refuses beyond that (a kernel's
    own limit) is the launch's to report: a ClError, the row's "launch failed"."""
    g = [int(v) for v in (global_size if isinstance(global_size, (list, tuple)) else [global_size])]
    if local_size is None:
        l: list[int] = []
    else:
        l = [int(v) for v in (local_size if isinstance(local_size, (list, tuple)) else [local_size])]
    try:
        _core.validate_launch(kernel, g, l)
    except _core.InvalidArgumentError as exc:  # the same type: a device limit stays one
        raise type(exc)(f"{experiment}: {exc}") from None


def positive(experiment: str, name: str, value: Any) -> int:
    """``value`` as a positive int, else InvalidArgumentError."""
    v = int(value)
    if v <= 0:
        raise _core.InvalidArgumentError(f"{experiment}: {name} must be positive, got {v}")
    return v


def tree_local_size(experiment: str, local_size: Any) -> int:
    """A work-group size for a halving tree in local memory (reduction, shuffle, gridsync): a
    positive power of two, else InvalidArgumentError."""
    n = positive(experiment, "work-group size", local_size)
    if n & (n - 1):
        raise _core.InvalidArgumentError(
            f"{experiment}: work-group size {n} must be a power of two (a halving tree)")
    return n


def floats_to_sum(experiment: str, info: Any, items: Any) -> int:
    """How many floats a sum experiment adds up: ``items``, or 64 Mi on a GPU (far past its
    caches) and 1 Mi on a CPU device; positive, else InvalidArgumentError."""
    return positive(experiment, "floats", items if items is not None
                    else (1 << 26 if info.is_gpu else 1 << 20))


@host_work
def summed_floats(rng: np.random.Generator, items: int) -> tuple[np.ndarray, float]:
    """A sum experiment's input and reference: ``items`` fresh uniform [0, 1) floats and their
    float64 sum, drawn off the device's turn (every variant of a run sums the same floats)."""
    x = rng.random(items, dtype=np.float32)
    return x, float(np.sum(x, dtype=np.float64))


def whole_groups(experiment: str, items: Any, sizes: Any) -> int:
    """``items`` as an int, refused unless it is a positive multiple of every work-group size in
    ``sizes`` (one or several): each experiment's size knob must fill whole work-groups. (Whether
    a work-group size itself fits the device is the core's launch check, per point.)"""
    n = int(items)
    sizes = [int(s) for s in (sizes if isinstance(sizes, (list, tuple)) else [sizes])]
    if not sizes or min(sizes) <= 0:
        raise _core.InvalidArgumentError(f"{experiment}: work-group sizes must be positive, got {sizes}")
    bad = [s for s in sizes if n <= 0 or n % s]
    if bad:
        raise _core.InvalidArgumentError(
            f"{experiment}: size {n} is not a positive multiple of the work-group size "
            f"{', '.join(map(str, bad))}")
    return n


def check_alloc(experiment: str, info: Any, nbytes: int, what: str = "a buffer") -> int:
    """``nbytes`` if one allocation of it fits the device, else InvalidArgumentError."""
    if nbytes > info.max_alloc_bytes:
        raise _core.InvalidArgumentError(
            f"{experiment}: {what} of {nbytes} bytes exceeds the device's largest allocation of "
            f"{info.max_alloc_bytes} bytes (CL_DEVICE_MAX_MEM_ALLOC_SIZE)")
    return int(nbytes)


def default_groups(info: Any, work_items_wanted: int, local_size: int, per_unit: int = 32) -> int:
    """Work-groups for a grid-stride kernel: enough to fill every compute unit several times
    over (``per_unit`` groups each), never more than the input gives one work-item each."""
    return max(1, min(-(-work_items_wanted // local_size), per_unit * info.compute_units))


def by_variant(results: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A variant experiment's rows by variant name, and those that verified (status OK)."""
    return ({r["variant"]: r for r in results.rows},
            [r for r in results.rows if r.get("status") == OK])


def conclude_variants(results: Any, parts: list[str], source: str) -> None:
    """``meta["conclusion"]``: the verified variants' ``parts``, then each skipped one and why
    ("no variant verified" where there is neither), then what the ``source`` documents say."""
    skipped = [f"{r['variant']} skipped ({r['error']})" for r in results.rows
               if r.get("status") == SKIPPED]
    verdicts = "; ".join(parts + skipped or ["no variant verified"])
    results.meta["conclusion"] = f"{verdicts}. {source}"


def table(results: Any, columns: Sequence[str]) -> Any:
    """A summary table: those of ``columns`` the results have, in that order."""
    df = results.df
    return df[[c for c in columns if c in df]]


def round_trip(src: Any, dst: Any, data: np.ndarray, run: Any, dtype: Any = None,
               shape: Any = None) -> np.ndarray:
    """One verifying launch: ``data`` into ``src``, ``dst`` poisoned (so an element nobody wrote
    shows), ``run()``, and ``dst`` read back (``shape`` and ``dtype`` default to the data's)."""
    write_from(src, data)
    poison_device(dst)
    run()
    # A view of dst's pinned mirror on a GPU (measure.staging): valid until dst is read again.
    return read_back(dst, data.dtype if dtype is None else dtype,
                     shape=data.shape if shape is None else shape)


def check_copy(rng: np.random.Generator, src: Any, dst: Any, run: Any, span: int,
               touched: slice, what: str = "copied floats",
               words: np.ndarray | None = None) -> tuple[bool, str]:
    """Verify a 32-bit copy: ``span`` fresh random words into ``src`` (or the first ``span`` of
    ``words``, random words drawn once by the caller for many points), ``dst`` poisoned,
    ``run()`` (one launch), then ``dst``'s first ``span`` words must equal the input at
    ``touched`` and still hold the poison everywhere else (a guard against stray writes)."""
    with host_only():
        data = (rng.integers(0, 2**32, size=span, dtype=np.uint32) if words is None
                else np.ascontiguousarray(words[:span]))
    write_from(src, data)
    poison_device(dst)
    run()
    out = read_back(dst, np.uint32, span)
    start, stop, step = touched.indices(span)
    if step == 1 and start <= stop:
        # A contiguous stretch: compared in place with the input and the poison around it, with
        # no span-sized expected array built per point (hundreds of MiB at the GPU's sizes).
        for part, want in ((slice(start, stop), data[start:stop]),
                           (slice(0, start), np.full(start, POISON_U32, np.uint32)),
                           (slice(stop, span), np.full(span - stop, POISON_U32, np.uint32))):
            if not same_bits(out[part], want):
                break
        else:
            return True, ""
    want = np.full(span, POISON_U32, dtype=np.uint32)
    want[touched] = data[touched]
    return compare(out, want, what)


# Above this many elements a copy is verified on the device (measure/device_check.py: the input
# generated there, the output compared in place, the verdict read back) instead of through a host
# round trip of the whole buffer: at a GPU's sizes, hundreds of MiB written, read back and
# compared per point were most of the time a copy sweep held the device.
DEVICE_CHECK_ELEMENTS = 1 << 24


class CopyCheck:
    """check_copy at any size: on the host up to ``device_elements`` words, on the device past
    it. On the host each call draws fresh random words, or with ``same_words`` every call copies
    the same ones, drawn once a run (a sweep whose points all copy the same span: hundreds of
    MiB drawn per point cost the guide seconds). Returns (passed, detail, the columns saying
    where it was checked), the arguments of a Check."""

    def __init__(self, ctx: Any, rng: np.random.Generator, same_words: bool = False,
                 device_elements: int = DEVICE_CHECK_ELEMENTS) -> None:
        self.ctx, self.rng, self.same_words, self.device_elements = ctx, rng, same_words, device_elements
        self._device: DeviceCheck | None = None
        self._words: np.ndarray | None = None

    def __call__(self, src: Any, dst: Any, run: Any, span: int, touched: slice,
                 what: str = "copied floats") -> tuple[bool, str, dict[str, str]]:
        if span <= self.device_elements:
            if self.same_words and (self._words is None or self._words.size < span):
                self._words = self.rng.integers(0, 2**32, size=span, dtype=np.uint32)
            words = self._words if self.same_words else None
            passed, detail = check_copy(self.rng, src, dst, run, span, touched, what, words)
            return passed, detail, {"checked_on": "host"}
        if self._device is None:
            self._device = DeviceCheck(self.ctx)
        seed = int(self.rng.integers(0, 2**63))
        self._device.fill(src, span, seed)
        poison_device(dst)
        run()
        passed, detail = self._device.compare_copy(dst, span, seed, touched, what)
        return passed, detail, {"checked_on": "device"}


# --- images (constant, texture) ---------------------------------------------------------------

def image_bytes(info: Any, width: int, height: int) -> int:
    """Bytes of a width x height float image; InvalidArgumentError past the allocation limit or
    the kernels' int index range."""
    nbytes = width * height * FLOAT
    if nbytes > info.max_alloc_bytes or width * height >= 2**31:
        raise _core.InvalidArgumentError(
            f"{width} x {height} floats ({nbytes} bytes) exceed the device's largest allocation "
            f"of {info.max_alloc_bytes} bytes or the kernels' int index range")
    return nbytes


def no_images_reason(ctx: Any) -> str:
    return f"needs image support, which {ctx.info.name} lacks (CL_DEVICE_IMAGE_SUPPORT = false)"


def check_image_side(info: Any, width: int, height: int, what: str) -> None:
    if info.image_support and (width > info.image2d_max_width or height > info.image2d_max_height):
        raise _core.InvalidArgumentError(
            f"{what}: {width} x {height} exceeds the device's largest 2-D image of "
            f"{info.image2d_max_width} x {info.image2d_max_height} (CL_DEVICE_IMAGE2D_MAX_WIDTH/HEIGHT)")


def is_nvidia(info: _core.DeviceInfo) -> bool:
    """Whether a CUDA reference (CuPy) can describe the same GPU: NVIDIA's OpenCL platform."""
    return "NVIDIA" in f"{info.vendor} {info.platform_name}".upper()
