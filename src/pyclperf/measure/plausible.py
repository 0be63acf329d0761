"""Whether a row's figures are physically possible on its device; a row whose figures are not is
``suspect`` (pyclperf.measure.results.SUSPECT), never a plain ``ok``, and its ``suspect`` field says why.

Two tests, on every row of every experiment (and the first on every row of tune()):

* **The clock.** A time read from an event clock that failed its check (pyclperf.device.clocks) is no
  time, whatever it shows.
* **The ceiling.** A launch cannot move its bytes faster than the device's memory (or its PCIe
  link) allows. Of a launch's working set (the distinct bytes it touches:
  ``Sweep.footprint_bytes``; by default the bytes it needs to move), all but what a cache could
  hold must cross the DRAM interface, so its fastest launch lasts at least
  (working set - cache allowance) / theoretical peak. The cache allowance is the larger of 4x
  the global-memory cache the device reports and 256 MiB (the largest caches in front of a GPU's
  memory today; OpenCL reports only one level, and NVIDIA's drivers report a few MiB for a
  50 MiB L2). A PCIe transfer gets no allowance. Times shorter than that bound by more than
  PEAK_SLACK (2%: the ceiling's own inputs, NVML's clock and bus width, are rounded) are
  suspect, whichever clock measured them; this also catches a host-clock time shorter than the
  launch could take. Where no ceiling is known (no NVML, no ``--peak-gbps``) this test is not
  made.
"""

from __future__ import annotations

from typing import Any

from .results import OK, SUSPECT, TIMED
from .stats import MiB

CACHE_ALLOWANCE_MIN = 256 * MiB
CACHE_ALLOWANCE_FACTOR = 4
PEAK_SLACK = 0.02


def cache_allowance(info: Any) -> int:
    """Bytes of a working set that may be served by caches rather than memory."""
    return max(CACHE_ALLOWANCE_FACTOR * int(getattr(info, "global_mem_cache_bytes", 0) or 0),
               CACHE_ALLOWANCE_MIN)


def clock_problem(row: dict[str, Any], clock: Any) -> str:
    """Why ``row``'s times cannot be trusted to the clock that measured them ("" when they can):
    ``clock`` is the device's pyclperf.device.clocks.EventClock (or None where it was not checked)."""
    if clock is None or clock.usable or row.get("method") != "events" or row.get("min_ns") is None:
        return ""
    return f"timed by an event clock that failed its check ({clock.summary})"


def ceiling_problem(row: dict[str, Any], *, kind: str | None, ceiling_gbps: float | None,
                    source: str, footprint: int | None, allowance: int) -> str:
    """Why ``row``'s fastest time is shorter than its bytes allow ("" when it is not, or when
    nothing is known to hold it against)."""
    t = row.get("min_ns")
    if not ceiling_gbps or kind not in ("dram", "pcie") or not footprint or t is None:
        return ""
    must_cross = footprint - (allowance if kind == "dram" else 0)
    if must_cross <= 0:
        return ""
    bound_ns = must_cross / ceiling_gbps  # bytes / (1e9 bytes/s) = ns
    if float(t) * (1 + PEAK_SLACK) >= bound_ns:
        return ""
    what = "theoretical DRAM" if kind == "dram" else "PCIe"
    cached = (f" beyond the {allowance / MiB:.0f} MiB a cache might hold" if kind == "dram" else "")
    return (f"its fastest time, {float(t):.0f} ns, is shorter than the {bound_ns:.0f} ns that "
            f"{must_cross / MiB:.1f} MiB{cached} need at the {what} peak of {ceiling_gbps:g} GB/s "
            f"({source}): {must_cross / float(t) if t else float('inf'):.1f} GB/s")


def flag(row: dict[str, Any], problems: list[str]) -> None:
    """Make ``row`` suspect for ``problems`` (those that are not empty), if it ran at all: an
    ``ok`` or ``timed`` row becomes ``suspect``; ``verified`` keeps saying whether it was."""
    problems = [p for p in problems if p]
    if not problems or row.get("status") not in (OK, TIMED, SUSPECT):
        return
    row["suspect"] = "; ".join(([row["suspect"]] if row.get("suspect") else []) + problems)
    row["status"] = SUSPECT
