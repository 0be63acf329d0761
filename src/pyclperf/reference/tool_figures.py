"""Figures other tools measured on named devices (clpeak's read bandwidth on an H200, say), kept
as data in tool_figures.json beside this module, never as constants in an experiment.

An experiment sets such a figure beside its own only on the device it was measured on (the
OpenCL device name, compared without case or surrounding blanks): a figure of one GPU says
nothing of another. A figure given as an option (e.g. ``reference_read_gbps=``) wins over the
file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from .. import _core

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tool_figures.json")
SCHEMA = "pyclperf.tool_figures/1"
FIELDS = ("experiment", "metric", "value", "unit", "tool", "device", "measured", "what", "where")


@dataclass(frozen=True)
class ToolFigure:
    experiment: str
    metric: str
    value: float
    unit: str
    tool: str
    device: str
    measured: str  # ISO date
    what: str
    where: str = ""

    @property
    def label(self) -> str:
        """One line naming the tool, the device, when, what and the figure."""
        return (f"{self.tool} ({self.device}, measured {self.measured}): {self.what} "
                f"{self.value:g} {self.unit}")


def load(path: str = PATH) -> list[ToolFigure]:
    """Every figure in the file; InvalidArgumentError naming the file and entry if it is not one
    of these files."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise _core.InvalidArgumentError(f"{path}: not a tool-figures file (schema {SCHEMA})")
    out = []
    for i, entry in enumerate(data.get("figures", [])):
        missing = [k for k in FIELDS[:-1] if k not in entry]
        unknown = sorted(set(entry) - set(FIELDS))
        if missing or unknown or not isinstance(entry.get("value"), (int, float)):
            raise _core.InvalidArgumentError(
                f"{path}: figure {i} needs {', '.join(FIELDS[:-1])} (a number for value); "
                f"missing {missing}, unknown {unknown}")
        out.append(ToolFigure(**{**entry, "value": float(entry["value"])}))
    return out


def for_device(experiment: str, metric: str, info: Any, path: str = PATH) -> ToolFigure | None:
    """The newest figure of ``metric`` for ``experiment`` measured on ``info``'s device; None
    where there is none."""
    name = str(getattr(info, "name", "")).strip().casefold()
    hits = [f for f in load(path) if f.experiment == experiment and f.metric == metric
            and f.device.strip().casefold() == name]
    return max(hits, key=lambda f: f.measured) if hits else None
