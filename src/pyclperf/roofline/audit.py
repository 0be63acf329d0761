"""Measured kernels against the profile's roofs: a roof is a ceiling, so no kernel may beat it.

For each verified row of a results file (a catalogue experiment's, or a tune run's), the roof
that binds it, named as ``explain`` names it (binding.memory_roof):

* a row with FLOPs (``flops``, ``gflops``) or other operations (``ops``, ``gops``): the compute
  roof (FP32 for FLOPs; the highest compute ceiling for operations, whose kind a row does not
  record) at the row's intensity against the memory roof of its working set, whichever is lower;
* a row of bytes alone: the memory roof of its working set (``working_set_bytes``, else
  ``bytes``): the cache level that holds it (its read figure for reads, the higher of its read
  and copy figures for traffic that writes), else DRAM; by the direction the row records (its
  ``mode`` read or write; ``workingset``'s ``kind`` read or copy), else the highest roof any
  direction could have (most experiments record none);
* local-memory traffic (``banks``): the local-memory roof;
* host transfers (``transfer``'s host rows, ``batching``, ``p2p``) and dependent-load chases: no
  roof of the roofline; they are listed as such.

An experiment's best point is its fastest row; ``BEATEN`` above its roof, the profile is wrong
there (refresh.py measures that ceiling again from the row's shape).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

from ..measure.results import OK, Results
from .refresh import BEATEN, Hints

LOCAL_EXPERIMENTS = ("banks",)
# What a row's traffic is, (reads, writes), by its ``mode``, or by its ``kind`` in the
# experiments whose kind names it.
DIRECTIONS = {"read": (True, False), "write": (False, True)}
KIND_DIRECTIONS = {"workingset": {"read": (True, False), "copy": (True, True)}}
HOST_EXPERIMENTS = ("batching", "p2p")
VECTOR = re.compile(r"(?:float|double|half|u?int|u?char|u?short|u?long)(\d+)")


@dataclass(frozen=True)
class Placement:
    """One row on the roofline: its rate, the roof that binds it, and the share reached."""

    experiment: str
    label: str
    rate: float
    unit: str
    roof: Any | None       # the binding Roof (None: no roof applies)
    attainable: float | None
    why: str
    hints: Hints

    @property
    def ratio(self) -> float | None:
        return self.rate / self.attainable if self.attainable else None

    @property
    def beaten(self) -> bool:
        return self.ratio is not None and self.ratio > BEATEN

    def line(self) -> str:
        """The row against its roof in one line (never a share above 100% as a result)."""
        head = f"{self.experiment} {self.label}: {self.rate:,.1f} {self.unit}"
        if self.roof is None or self.ratio is None:
            return f"{head}: no roof applies ({self.why})"
        r = self.ratio
        share = f"{100 * r:.1f}% of" if r <= 1 else "at" if r <= BEATEN else "ABOVE"
        text = f"{head}: {share} the {self.roof.name} roof ({self.attainable:,.1f} {self.unit}; {self.why})"
        if self.beaten:
            text += f"; the profile is wrong: {r:.2f}x a roof that should be a ceiling"
        return text


def _num(row: dict[str, Any], key: str) -> float | None:
    v = row.get(key)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) and f > 0 else None


def hints_of(row: dict[str, Any], working_set: float | None) -> Hints:
    """The launch shape a row records: its work-group size, the vector width its variant names."""
    local = _num(row, "local_size") or _num(row, "work_group_size")
    m = VECTOR.search(str(row.get("variant", "")))
    return Hints(int(local) if local else None, int(m.group(1)) if m else None,
                 int(working_set) if working_set else None)


def _label(row: dict[str, Any], x: str | None) -> str:
    parts = [f"{k}={row[k]}" for k in ("variant", "mode", "kind", x) if k and row.get(k) not in (None, "")]
    return "(" + ", ".join(dict.fromkeys(parts)) + ")" if parts else ""


def place(experiment: str, row: dict[str, Any], profile: Any, x: str | None = None) -> Placement | None:
    """One verified row on the profile's roofline (module docstring); None for a row with no rate."""
    from .binding import memory_roof

    label = _label(row, x)
    ws = _num(row, "working_set_bytes") or _num(row, "bytes")
    hints = hints_of(row, ws)
    gbps = _num(row, "gbps")
    mode = str(row.get("mode", ""))
    if experiment in HOST_EXPERIMENTS or mode.startswith(("h2d", "d2h")) or row.get("kind") == "chase":
        return Placement(experiment, label, gbps or 0.0, "GB/s", None, None,
                         "a host transfer or a latency, not a roofline figure", hints) if gbps else None
    if experiment in LOCAL_EXPERIMENTS:
        local = next((r for r in profile.memory_roofs() if r.kind == "local"), None)
        return Placement(experiment, label, gbps or 0.0, "GB/s", local, local.value if local else None,
                         "local-memory traffic", hints) if gbps else None
    mem = None
    direction = DIRECTIONS.get(mode) or KIND_DIRECTIONS.get(experiment, {}).get(str(row.get("kind")))
    if ws:
        if direction is not None:
            mem = memory_roof(profile, int(ws), *direction)
        else:  # no direction recorded: the highest roof any direction could have
            mem = max((memory_roof(profile, int(ws), r, w) for r, w in ((True, False), (False, True), (True, True))),
                      key=lambda m: m[0].value)
    for unit, key, amount in (("GFLOP/s", "gflops", "flops"), ("Gop/s", "gops", "ops")):
        rate = _num(row, key)
        if rate is None:
            continue
        if key == "gflops":
            compute = next((r for r in profile.compute_roofs() if r.name == "FP32"), None)
        else:
            compute = max(profile.compute_roofs(), key=lambda r: r.value, default=None)
        if compute is None:
            return None
        nbytes, ops = _num(row, "bytes"), _num(row, amount)
        if mem is not None and nbytes and ops and ops / nbytes * mem[0].value < compute.value:
            intensity = ops / nbytes
            return Placement(experiment, label, rate, unit, mem[0], intensity * mem[0].value,
                             f"memory-bound at {intensity:.3g} {amount[:-1] if amount == 'flops' else 'op'}s/byte; "
                             + mem[1], hints)
        return Placement(experiment, label, rate, unit, compute, compute.value, "compute-bound", hints)
    if gbps is None or mem is None:
        return None
    return Placement(experiment, label, gbps, "GB/s", mem[0], mem[0].value, mem[1], hints)


def placements(results: Results, profile: Any) -> list[Placement]:
    """Every verified row of ``results`` placed (rows with no rate left out)."""
    x = results.meta.get("x")
    out = []
    for row in results.rows:
        if row.get("status") != OK:
            continue
        found = place(results.experiment, row, profile, x)
        if found is not None:
            out.append(found)
    return out


def best_point(results: Results, profile: Any) -> Placement | None:
    """The experiment's best point (its fastest row: the highest rate in the unit most rows
    have) on the roofline, or None where no row has a rate."""
    placed = placements(results, profile)
    if not placed:
        return None
    unit = max({p.unit for p in placed}, key=lambda u: sum(p.unit == u for p in placed))
    return max((p for p in placed if p.unit == unit), key=lambda p: p.rate)


def highest(results: Results, profile: Any) -> Placement | None:
    """The row nearest its roof (or furthest above it)."""
    placed = [p for p in placements(results, profile) if p.ratio is not None]
    return max(placed, key=lambda p: p.ratio or 0.0, default=None)


def check(files: Sequence[Any], profile: Any) -> list[tuple[str, Placement | None, Placement | None]]:
    """(experiment, best point, the row nearest its roof) of each results file."""
    out = []
    for f in files:
        res = f if isinstance(f, Results) else Results.load(f)
        out.append((res.experiment, best_point(res, profile), highest(res, profile)))
    return out


__all__ = ["DIRECTIONS", "HOST_EXPERIMENTS", "KIND_DIRECTIONS", "LOCAL_EXPERIMENTS", "Placement", "best_point", "check", "highest",
           "hints_of", "place", "placements"]
