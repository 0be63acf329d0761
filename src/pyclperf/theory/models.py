"""Models drawn beside the measurements: the memory-sector model of coalescing (offset, stride)
and a roofline for the compute experiments (matmul, aat, math, tiling).

Both are deliberately simple, and their assumptions are stated where they are drawn: a model
that matches says the mechanism is understood; one that does not says where to look.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from ..measure.results import OK

# Today's NVIDIA and AMD GPUs move global memory in 32-byte sectors, grouped in 128-byte cache
# lines; the Guide's 2009 GPUs moved whole 32/64/128-byte segments. A warp (wavefront) is the
# group of work-items whose accesses are combined.
SECTOR_BYTES = 32
LINE_BYTES = 128
WARP = 32
WORD = 4  # the copy kernels move 32-bit floats


def sectors_touched(addresses: Iterable[int], access_bytes: int = WORD, sector: int = SECTOR_BYTES) -> int:
    """How many distinct ``sector``-byte sectors the accesses (byte addresses, each
    ``access_bytes`` long) touch."""
    touched: set[int] = set()
    for a in addresses:
        touched.update(range(a // sector, (a + access_bytes - 1) // sector + 1))
    return len(touched)


def offset_efficiency(offset: int, warp: int = WARP, word: int = WORD, sector: int = SECTOR_BYTES) -> float:
    """Useful / moved bytes of one warp's accesses in offsetCopy at ``offset`` elements: the warp
    reads ``warp * word`` contiguous bytes starting at ``offset * word``; a misaligned start
    touches one sector more than an aligned one."""
    if offset < 0:
        raise ValueError(f"offset must be >= 0, got {offset}")
    addresses = [(offset + i) * word for i in range(warp)]
    return warp * word / (sectors_touched(addresses, word, sector) * sector)


def stride_efficiency(stride: int, warp: int = WARP, word: int = WORD, sector: int = SECTOR_BYTES) -> float:
    """Useful / moved bytes of one warp's accesses in strideCopy at ``stride`` elements: from a
    stride of sector/word on, every work-item needs a sector of its own."""
    if stride < 1:
        raise ValueError(f"stride must be >= 1, got {stride}")
    addresses = [i * stride * word for i in range(warp)]
    return warp * word / (sectors_touched(addresses, word, sector) * sector)


def sector_model(x: str, values: Iterable[int], baseline_gbps: float,
                 sector: int = SECTOR_BYTES) -> list[float]:
    """Predicted bandwidth at each offset or stride: the aligned, unit-stride figure scaled by
    the fraction of moved bytes that are useful (``x`` is "offset" or "stride")."""
    efficiency = offset_efficiency if x == "offset" else stride_efficiency
    return [baseline_gbps * efficiency(int(v), sector=sector) for v in values]


# Assumed single-precision FLOPs per clock per compute unit, by device type: an NVIDIA SM since
# Ampere has 128 FP32 lanes doing one FMA (2 FLOPs) per clock; a CPU core with two 8-wide FMA
# units does 32. These are assumptions stated beside the roofline, not queried figures.
FLOPS_PER_CLOCK_PER_CU = {"gpu": 256, "cpu": 32}


@dataclass(frozen=True)
class Roofline:
    """Attainable FLOP/s = min(peak FLOP/s, arithmetic intensity x DRAM bandwidth)."""

    peak_gflops: float
    dram_gbps: float
    assumption: str

    @property
    def ridge(self) -> float:
        """The arithmetic intensity (FLOP/byte) where the two ceilings meet."""
        return self.peak_gflops / self.dram_gbps

    def attainable(self, intensity: float) -> float:
        """GFLOP/s attainable at ``intensity`` FLOP/byte."""
        if intensity <= 0:
            raise ValueError(f"arithmetic intensity must be positive, got {intensity}")
        return min(self.peak_gflops, intensity * self.dram_gbps)

    def bound(self, intensity: float) -> str:
        return "memory-bound" if intensity < self.ridge else "compute-bound"


def peak_gflops(clock_mhz: float, compute_units: int, flops_per_clock_per_cu: float) -> float:
    """Theoretical GFLOP/s: clock x compute units x FLOPs per clock per compute unit."""
    if clock_mhz <= 0 or compute_units <= 0 or flops_per_clock_per_cu <= 0:
        raise ValueError("clock, compute units and FLOPs per clock must be positive, got "
                         f"{clock_mhz}, {compute_units}, {flops_per_clock_per_cu}")
    return clock_mhz * 1e6 * compute_units * flops_per_clock_per_cu / 1e9


def roofline_for(meta: dict[str, Any], flops_per_clock_per_cu: float | None = None) -> Roofline | None:
    """The roofline of the device a results record ran on; None where its theoretical DRAM
    bandwidth or clock is unknown (a roofline on a guessed ceiling would mislead)."""
    dev = meta.get("device", {})
    dram = meta.get("peak_gbps")
    clock, cus = dev.get("max_clock_mhz"), dev.get("compute_units")
    if not dram or not clock or not cus:
        return None
    kind = "gpu" if "GPU" in str(dev.get("type", "")).upper() else "cpu"
    per_cu = flops_per_clock_per_cu or FLOPS_PER_CLOCK_PER_CU[kind]
    assumption = (f"peak = {clock} MHz x {cus} compute units x {per_cu:g} FLOP/clock/CU (assumed for a "
                  f"{kind.upper()}); DRAM {float(dram):.0f} GB/s (theoretical)")
    return Roofline(peak_gflops(float(clock), int(cus), per_cu), float(dram), assumption)


def copy_conclusion(results: Any, baseline: int) -> str:
    """One line for offset and stride: the slowest point against the aligned (offset 0) or
    unit-stride figure, beside what the 32-byte-sector model predicts for it."""
    x = results.meta["x"]
    ok = [r for r in results.rows if r.get("status") == OK and r.get("gbps")]
    base = next((r for r in ok if r[x] == baseline), None)
    if base is None:
        return f"{results.experiment}: {x} {baseline} did not verify; no baseline to compare with"
    worst = min(ok, key=lambda r: r["gbps"])
    model = sector_model(x, [worst[x]], 1.0)[0]
    return (f"{results.experiment}: slowest at {x} {worst[x]}: {worst['gbps']:.1f} GB/s, "
            f"{worst['gbps'] / base['gbps']:.2f}x the {x}-{baseline} figure ({base['gbps']:.1f} GB/s); "
            f"the 32-byte-sector model predicts {model:.2f}x")
