"""peak: the device's theoretical bandwidth (Guide 2.2.1), from NVML or the user's figures.

Nothing runs on the device; each row is one ceiling with the figures it came from. An unknown
ceiling is a "skipped" row saying how to make it known.
"""

from __future__ import annotations

from typing import Any

from ..measure.results import OK, SKIPPED, Results
from .base import Sweep
from .claims import Claim, Figure, meta_number

CEILINGS = {
    "dram": "device memory: clock x 2 (DDR) x bus width / 8",
    "pcie": "PCIe link, per direction: GT/s x lanes x encoding / 8",
}


GUIDE_PEAK_GBPS = 141.6  # Guide 2.2.1: GTX 280, 1107 MHz DDR on a 512-bit bus


def peak_over_guide(results: Results) -> Figure:
    """This device's theoretical DRAM bandwidth over the Guide's GTX 280."""
    return Figure.of(meta_number(results, "peak_gbps") / GUIDE_PEAK_GBPS)


class PeakExperiment(Sweep):
    id = "peak"
    description = "the theoretical DRAM and PCIe bandwidth from NVML or your figures (Guide 2.2.1)"
    order = 20
    title = "Theoretical bandwidth"
    x = "ceiling"
    x_label = "ceiling"
    guide = "Guide 2.2.1; GPU.md (PCIe)"
    claim = Claim(
        "theoretical bandwidth is memory clock x 2 x bus width; a GTX 280 gets 141.6 GB/s",
        "Guide 2.2.1 (GTX 280)", "theoretical DRAM bandwidth / 141.6 GB/s", peak_over_guide,
        kind="property")
    plot = None
    # No knobs: the user's figures reach it through the engine's ``peak``.
    size_arg = values_arg = local_size_arg = None

    def points(self) -> list[dict[str, Any]]:
        return [{"ceiling": kind, "formula": formula} for kind, formula in CEILINGS.items()]

    def measure(self, point: dict[str, Any], *, warmup: int, repeats: int, method: str,
                verify: bool) -> dict[str, Any]:
        assert self.peak is not None, "run_experiment sets the peak before measuring"
        kind = point["ceiling"]
        gbps = self.peak.gbps(kind)
        source = self.peak.dram_source if kind == "dram" else self.peak.pcie_source
        if gbps is None:
            return {"gbps": None, "source": source, "status": SKIPPED, "error": source}
        return {"gbps": gbps, "source": source, "status": OK, "error": ""}

    def peak_kind(self, row: dict[str, Any]) -> str | None:
        return None  # these rows are the ceilings

    @classmethod
    def summary(cls, results: Any) -> Any:
        df = results.df
        return df[[c for c in ("ceiling", "gbps", "source") if c in df]]
