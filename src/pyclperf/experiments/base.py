"""What every experiment declares, and the one function that runs any of them."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from .. import _core
from ..results import Results
from ..sweep import OK, TIMING_METHODS, WRONG, base_meta, run_points, timed_row

# Bit pattern written over outputs before a verified run: a NaN no kernel computes by accident,
# and not zero, which would hide unwritten outputs.
POISON_U32 = np.uint32(0x7FBADBAD)


class Experiment(ABC):
    """A sweep over one parameter of one kernel family.

    Subclasses declare the id, the swept parameter (``x``) and its label, the default problem
    size per device, the points, and how to prepare, verify and time one point. Everything
    else (statuses, statistics, bandwidth, metadata, saving, progress) is the engine's.
    """

    id: str = ""
    title: str = ""
    x: str = ""
    x_label: str = ""
    guide: str = ""  # where in the source documents this comes from

    def __init__(self, ctx: Any, items: int | None = None, local_size: int = 256) -> None:
        self.ctx = ctx
        self.local_size = int(local_size)
        self.items = int(items) if items is not None else self.default_items(ctx.info)
        if self.items <= 0:
            raise _core.InvalidArgumentError(f"size must be positive, got {self.items}")
        if self.items % self.local_size:
            raise _core.InvalidArgumentError(
                f"size {self.items} is not a multiple of the work-group size {self.local_size}"
            )

    @abstractmethod
    def default_items(self, info: _core.DeviceInfo) -> int: ...

    @abstractmethod
    def points(self) -> list[dict[str, Any]]: ...

    @abstractmethod
    def verify(self, point: dict[str, Any]) -> tuple[bool, str]:
        """Run once on fresh random input with poisoned output; (passed, what differed)."""

    @abstractmethod
    def time(self, point: dict[str, Any], warmup: int, repeats: int, method: str) -> np.ndarray:
        """Per-launch times in ns."""

    @abstractmethod
    def bytes_moved(self, point: dict[str, Any]) -> int:
        """Bytes the kernel needs to read plus write (effective bandwidth, Guide 2.2.2)."""

    def meta(self) -> dict[str, Any]:
        return {"experiment": self.id, "title": self.title, "x": self.x, "x_label": self.x_label,
                "items": self.items, "local_size": self.local_size, "guide": self.guide}

    def measure(self, point: dict[str, Any], *, warmup: int, repeats: int, method: str,
                verify: bool) -> dict[str, Any]:
        row: dict[str, Any] = {"items": self.items, "local_size": self.local_size}
        passed, detail = self.verify(point) if verify else (True, "not verified")
        row["verified"] = bool(verify and passed)
        times = self.time(point, warmup, repeats, method)
        row.update(timed_row(times, self.bytes_moved(point), method))
        row["status"] = OK if passed else WRONG
        row["error"] = "" if passed else detail
        return row


def run_experiment(
    experiment: Experiment,
    *,
    warmup: int = 3,
    repeats: int = 20,
    method: str = "events",
    verify: bool = True,
    out: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
) -> Results:
    if method not in TIMING_METHODS:
        raise _core.InvalidArgumentError(f"timing method must be one of {TIMING_METHODS}, got {method!r}")
    if repeats < 1 or warmup < 0:
        raise _core.InvalidArgumentError(f"need repeats >= 1 and warmup >= 0, got {repeats}, {warmup}")
    meta = base_meta(experiment.ctx, **experiment.meta(), method=method, warmup=warmup,
                     repeats=repeats, verified=verify)
    return run_points(
        experiment.points(),
        lambda p: experiment.measure(p, warmup=warmup, repeats=repeats, method=method, verify=verify),
        meta=meta,
        out=out,
        progress=progress,
    )
