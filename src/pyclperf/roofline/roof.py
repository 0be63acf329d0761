"""One ceiling of a roofline, as the profile measures it and the figure draws it (a module of its
own, so that profiling.py and plot.py both take it without importing each other)."""

from __future__ import annotations

from dataclasses import dataclass

from .memory import size_text


@dataclass(frozen=True)
class Roof:
    """One ceiling of the roofline: a memory level (GB/s; ``size_bytes`` for a cache) or a
    compute rate (GFLOP/s or Gop/s). ``traffic`` says what the figure of a memory level moved:
    "read", "write" or "copy" (reads and writes together); "" for a compute rate."""

    name: str
    value: float
    unit: str
    kind: str  # "cache", "dram", "local", "compute"
    size_bytes: int | None
    how: str
    spread_pct: float | None
    traffic: str = ""

    def label(self) -> str:
        size = f" ({size_text(self.size_bytes)})" if self.size_bytes else ""
        return f"{self.name}{size}: {self.value:,.1f} {self.unit}"


__all__ = ["Roof"]
