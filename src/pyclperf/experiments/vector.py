"""vector: how wide each access is and how much each work-item moves.

A float..float16 copy with 1, 2 or 4 elements per work-item (kernels/vector.cl, one build per
variant), and the Reverse document's byte reversal with 1, 16 and 64 bytes per work-item (the
reverse_* kernels of the same file). The fastest verified copy is what pyclperf reports as the
device's achievable bandwidth (``meta["best_gbps"]``, ``meta["best_variant"]``). Its conclusion names
the CUDA reference for it, CUDA's own device copy (pyclperf.reference.cuda, timed by CUDA events
around batches of back-to-back launches), and with ``reference=True`` measures it where CuPy
reaches an NVIDIA device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .. import _core
from ..device.turns import host_only
from ..measure.checks import compare, poison_device, random_bytes
from ..measure.staging import read_back, write_from
from ..measure.stats import GiB, MiB
from ..measure.results import OK, Results
from ._kit import DEFAULT_LOCAL_SIZE, is_nvidia, pick, positive
from .base import Check, Experiment, Launch, noise_note
from .claims import Claim, Figure, ratio


@dataclass(frozen=True)
class Variant:
    name: str
    kernel: str  # "copy" or "reverse"
    element: str  # the OpenCL C type of one access
    element_bytes: int
    per_item: int = 1

    @property
    def item_bytes(self) -> int:
        """Bytes one work-item moves."""
        return self.element_bytes * self.per_item

    def fields(self) -> dict[str, Any]:
        return {"variant": self.name, "kernel": self.kernel, "element": self.element,
                "per_item": self.per_item, "item_bytes": self.item_bytes}


COPIES = tuple(
    Variant(f"{element} x{k}", "copy", element, 4 * width, k)
    for element, width in (("float", 1), ("float2", 2), ("float4", 4), ("float8", 8), ("float16", 16))
    for k in (1, 2, 4)
)
# The variants' labels (the rows' ``variant``); the claim below names its rows through them.
REVERSE_CHAR, REVERSE_CHAR16, REVERSE_UINT16 = "reverse uchar", "reverse uchar16", "reverse uint16"
REVERSALS = (
    Variant(REVERSE_CHAR, "reverse", "uchar", 1),
    Variant(REVERSE_CHAR16, "reverse", "uchar16", 16),
    Variant(REVERSE_UINT16, "reverse", "uint16", 64),
)
VARIANTS = {v.name: v for v in COPIES + REVERSALS}


def _largest_power_of_two(limit: int) -> int:
    return 1 << (int(limit).bit_length() - 1)


def char_over_uint16(results: Results) -> Figure:
    return ratio(results, "median_ns", {"variant": REVERSE_CHAR}, {"variant": REVERSE_UINT16})


def reversed_bytes(data: np.ndarray) -> np.ndarray:
    """``data`` (uint8) back to front, contiguous: as 64-bit words reversed and byte-swapped
    where the length allows (a byte-wise flip of a GiB took the host seconds)."""
    if data.size % 8 or data.ctypes.data % 8:
        return np.ascontiguousarray(np.flip(data))
    words = data.view(np.uint64)[::-1].copy()  # a copy: the swap below is in place
    return words.byteswap(inplace=True).view(np.uint8)


class VectorWidth(Experiment):
    id = "vector"
    description = ("float..float16 copies with 1-4 elements per work-item and the Reverse document's "
                   "byte reversals; its best copy is the device's achievable bandwidth (`--size` is "
                   "bytes)")
    order = 70
    title = "Access width: vector copies and byte reversal"
    x = "variant"
    x_label = "variant"
    guide = "Reverse (byte-reverse kernels); Guide 3.2.1"
    claim = Claim(
        "moving 64 bytes per work-item reverses a byte buffer far faster than one",
        "Reverse (9600 GT): char 26.0 ms -> uint16 1.48 ms",
        "time of reverse uchar / reverse uint16", char_over_uint16, source_ratio=26.0 / 1.48)
    plot = {"kind": "bars", "label": "variant"}
    size_arg, values_arg = "nbytes", None  # bytes per buffer

    def __init__(self, ctx: Any, nbytes: int | None = None, local_size: int = DEFAULT_LOCAL_SIZE,
                 variants: Sequence[str] | None = None, reference: bool = False) -> None:
        """``reference``: also measure the CUDA reference copy in ``finish`` where it can be
        (``reference=True``; off by default: loading CuPy and compiling its kernels costs a
        plain run seconds, and no verdict reads it)."""
        super().__init__(ctx)
        self.reference = reference
        self.local_size = positive(self.id, "work-group size", local_size)
        self.variants = pick(self.id, VARIANTS, variants)
        info = ctx.info
        if nbytes is None:
            # Far past any cache on a GPU; small enough for PoCL to finish in seconds.
            want = GiB if info.is_gpu else 16 * MiB
            nbytes = min(want, _largest_power_of_two(min(info.max_alloc_bytes, info.global_mem_bytes // 4)))
        self.nbytes = int(nbytes)
        unit = max(v.item_bytes for v in self.variants) * self.local_size
        if self.nbytes <= 0 or self.nbytes % unit:
            raise _core.InvalidArgumentError(
                f"{self.id}: {self.nbytes} bytes is not a positive multiple of {unit} (the widest "
                f"variant's bytes per work-item x the work-group size {self.local_size})")
        self.src = ctx.buffer(self.nbytes)
        self.dst = ctx.buffer(self.nbytes)
        self.rng = np.random.default_rng()
        self._data: np.ndarray | None = None  # the input, drawn on first use
        self._reversed: np.ndarray | None = None

    @classmethod
    def quick_options(cls, info: Any) -> dict[str, Any]:
        # 256 MiB per buffer is still four times a GPU's largest cache (about 60 MiB); the
        # claim's ratio is between two kernels reading and writing the same bytes.
        if not info.is_gpu:
            return {}
        return {"nbytes": min(256 * MiB, _largest_power_of_two(min(info.max_alloc_bytes,
                                                                    info.global_mem_bytes // 4)))}

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "nbytes": self.nbytes, "local_size": self.local_size}

    def points(self) -> list[dict[str, Any]]:
        return [v.fields() for v in self.variants]

    def build(self, v: Variant) -> dict[str, Any]:
        if v.kernel == "copy":
            return {"file": "vector.cl", "defines": {"ELEMENT": v.element, "PER_ITEM": v.per_item}}
        return {"file": "vector.cl"}

    def builds(self, point: dict[str, Any]) -> list[dict[str, Any]]:
        return [self.build(VARIANTS[point["variant"]])]

    def kernel(self, v: Variant) -> Any:
        """The variant's kernel with its buffers bound (builds are cached by the context)."""
        program = self.ctx.program(**self.build(v))
        name = "vector_copy" if v.kernel == "copy" else f"reverse_{v.element}"
        return program.kernel(name).set_args(self.dst, self.src)

    def launch(self, point: dict[str, Any]) -> Launch:
        v = VARIANTS[point["variant"]]
        items = self.nbytes // v.item_bytes
        return Launch.one(self.kernel(v), items, self.local_size, 2 * self.nbytes,
                          columns={"items": items, "local_size": self.local_size})

    def _input(self, kernel: str) -> np.ndarray:
        """The run's input, drawn and uploaded on first use, and what ``kernel`` makes of it.

        Every variant only reads ``src`` (const in kernels/vector.cl), so all read the same fresh
        random bytes: a GiB drawn per point cost the guide most of a minute. A variant that wrote
        into its input anyway fails the variants after it, whose references are the host's copy.
        """
        if self._data is None:
            self._data = random_bytes(self.rng, self.nbytes)
            write_from(self.src, self._data)
        if kernel != "reverse":
            return self._data
        if self._reversed is None:
            with host_only():
                self._reversed = reversed_bytes(self._data)
        return self._reversed

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        want = self._input(VARIANTS[point["variant"]].kernel)
        poison_device(self.dst)  # every point's output starts poisoned
        launch.run()
        # The read overwrites every byte of the host copy (or raises), so only the device's
        # poison above decides whether the kernel wrote its output.
        got = read_back(self.dst, np.uint8, self.nbytes)
        return Check(*compare(got, want, "output bytes"))

    def finish(self, results: Any) -> None:
        """The fastest verified copy is the device's achievable bandwidth."""
        copies = [r for r in results.rows if r.get("kernel") == "copy" and r.get("status") == OK]
        if not copies:
            results.meta["conclusion"] = "no copy variant verified: achievable bandwidth unknown"
            return
        best = max(copies, key=lambda r: r["gbps"])
        results.meta["best_variant"] = best["variant"]
        results.meta["best_gbps"] = best["gbps"]
        text = (f"achievable bandwidth: {best['gbps']:.1f} GB/s ({best['variant']}, verified)"
                + noise_note(best))
        if best.get("fraction_of_peak") is not None:
            results.meta["best_fraction_of_peak"] = best["fraction_of_peak"]
            text += f", {100 * best['fraction_of_peak']:.0f}% of the theoretical peak"
        results.meta["conclusion"] = f"{text}; {self._against_cuda(best, results.meta)}"

    def _against_cuda(self, best: dict[str, Any], meta: dict[str, Any]) -> str:
        """The best copy against CUDA's own copy of the same bytes where CuPy can measure it;
        otherwise which reference applies, how it is timed, and why it was not measured."""
        from ..reference import cuda as rc

        applies = (f"the CUDA reference that applies is {rc.COPY_REFERENCE} of the same "
                   f"{self.nbytes} bytes, timed by {rc.TIMED_AS}")
        if not self.reference:
            return f"no CUDA reference measured (not requested); {applies}"
        if not is_nvidia(self.ctx.info):
            return f"no CUDA reference measured ({self.ctx.info.name} is not an NVIDIA device); {applies}"
        try:
            ref = rc.CudaReference().device_copy(self.nbytes, "memcpy").measure(batches=5)
        except (rc.CudaUnavailableError, rc.BatchTooShortError) as exc:
            return f"no CUDA reference measured ({exc}); {applies}"
        meta["cuda_reference"] = ref
        if not ref["verified"]:
            return f"the CUDA reference ({ref['name']}) failed its own check: {ref['detail']}"
        meta["fraction_of_reference"] = best["gbps"] / ref["gbps"]
        return (f"{meta['fraction_of_reference']:.3f}x the CUDA reference, {ref['name']} at "
                f"{ref['gbps']:.1f} GB/s, timed by {ref['how']}")

    @classmethod
    def summary(cls, results: Any) -> Any:
        df = results.df
        cols = ["variant", "status", "items", "median_ns", "spread_pct", "noisy", "gbps",
                "fraction_of_peak"]
        return df[[c for c in cols if c in df]]
