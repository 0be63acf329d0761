"""What every experiment declares, and the one function that runs any of them."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import Any, Mapping, Sequence

import numpy as np

from .. import _core
from ..peak import PeakBandwidth, theoretical
from ..results import Results
from ..sweep import TIMING_METHODS, base_meta, run_points, timed_row, verdict


def pick_variants(experiment: str, table: Mapping[str, Any], names: Sequence[str] | None) -> list[Any]:
    """The entries of ``table`` that ``names`` choose (all of them by default), in the order
    given; an unknown name or an empty choice raises InvalidArgumentError naming the known ones."""
    chosen = list(names) if names is not None else list(table)
    unknown = [n for n in chosen if n not in table]
    if unknown or not chosen:
        raise _core.InvalidArgumentError(
            f"{experiment}: unknown variant(s) {unknown}; known: {', '.join(table)}")
    return [table[n] for n in chosen]


class Sweep(ABC):
    """What the engine needs of any experiment: an id, its points, and how to measure one.

    ``measure`` returns a row's measured fields, including ``status`` (sweep.OK, WRONG, ...).
    The engine hands the experiment the theoretical ``peak`` before the first point and adds a
    ``fraction_of_peak`` column wherever ``peak_kind`` names a known ceiling.
    """

    id: str = ""
    title: str = ""
    x: str = ""
    x_label: str = ""
    guide: str = ""  # where in the source documents this comes from
    # How plot.plot_results draws the record: a kind ("bandwidth", "modes", "bars") and its
    # keyword arguments; None for no figure.
    plot: dict[str, Any] | None = {"kind": "bandwidth"}
    peak: PeakBandwidth | None = None

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx

    # The constructor arguments that pyclperf.run's generic knobs fill (the CLI's --size and
    # --local-size): what "size" and "values" mean is the experiment's to say. None: no such knob.
    size_arg: str | None = "items"
    values_arg: str | None = "values"
    local_size_arg: str | None = "local_size"

    @classmethod
    def configure(cls, ctx: Any, *, size: int | None = None, local_size: int = 256,
                  values: list[int] | None = None, **options: Any) -> "Sweep":
        """Build from the generic knobs of ``pyclperf.run``; ``options`` go to the constructor."""
        kwargs = dict(options)
        for knob, arg, value in (("size", cls.size_arg, size), ("values", cls.values_arg, values)):
            if value is None:
                continue
            if arg is None:
                raise _core.InvalidArgumentError(f"experiment {cls.id!r} takes no {knob}")
            kwargs[arg] = value
        if cls.local_size_arg is not None:
            kwargs[cls.local_size_arg] = local_size
        return cls(ctx, **kwargs)

    @abstractmethod
    def points(self) -> list[dict[str, Any]]: ...

    @abstractmethod
    def measure(self, point: dict[str, Any], *, warmup: int, repeats: int, method: str,
                verify: bool) -> dict[str, Any]: ...

    def peak_kind(self, row: dict[str, Any]) -> str | None:
        """Which ceiling a row's bandwidth is held against: "dram", "pcie" or None."""
        return "dram"

    def meta(self) -> dict[str, Any]:
        return {"experiment": self.id, "title": self.title, "x": self.x, "x_label": self.x_label,
                "guide": self.guide, "plot": self.plot}

    def finish(self, results: Results) -> None:
        """Add conclusions drawn from all rows to ``results.meta`` (default: none)."""

    @classmethod
    def summary(cls, results: Results) -> Any:
        """A short table (DataFrame) to print instead of the rows; None to print the rows."""
        return None


class Experiment(Sweep):
    """A sweep over one parameter of one kernel family.

    Subclasses declare the id, the swept parameter (``x``) and its label, the default problem
    size per device, the points, and how to prepare, verify and time one point. Everything
    else (statuses, statistics, bandwidth, metadata, saving, progress) is the engine's.
    """

    def __init__(self, ctx: Any, items: int | None = None, local_size: int = 256) -> None:
        super().__init__(ctx)
        self.local_size = int(local_size)
        if self.local_size <= 0:
            raise _core.InvalidArgumentError(f"work-group size must be positive, got {self.local_size}")
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
    def verify(self, point: dict[str, Any]) -> tuple[bool, str]:
        """Run once on fresh random input with poisoned output; (passed, what differed)."""

    @abstractmethod
    def time(self, point: dict[str, Any], warmup: int, repeats: int, method: str) -> np.ndarray:
        """Per-launch times in ns."""

    @abstractmethod
    def bytes_moved(self, point: dict[str, Any]) -> int:
        """Bytes the kernel needs to read plus write (effective bandwidth, Guide 2.2.2)."""

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "items": self.items, "local_size": self.local_size}

    def measure(self, point: dict[str, Any], *, warmup: int, repeats: int, method: str,
                verify: bool) -> dict[str, Any]:
        row: dict[str, Any] = {"items": self.items, "local_size": self.local_size}
        passed, detail = self.verify(point) if verify else (True, "not verified")
        times = self.time(point, warmup, repeats, method)
        row.update(timed_row(times, self.bytes_moved(point), method))
        row.update(verdict(verify, passed, detail))
        return row


def run_experiment(
    experiment: Sweep,
    *,
    warmup: int = 3,
    repeats: int = 20,
    method: str = "events",
    verify: bool = True,
    out: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    peak: PeakBandwidth | None = None,
) -> Results:
    """Run every point of ``experiment``; ``peak`` defaults to ``theoretical(ctx)`` (NVML)."""
    if method not in TIMING_METHODS:
        raise _core.InvalidArgumentError(f"timing method must be one of {TIMING_METHODS}, got {method!r}")
    if repeats < 1 or warmup < 0:
        raise _core.InvalidArgumentError(f"need repeats >= 1 and warmup >= 0, got {repeats}, {warmup}")
    ceilings = peak or experiment.peak or theoretical(experiment.ctx)
    experiment.peak = ceilings
    meta = base_meta(experiment.ctx, **experiment.meta(), method=method, warmup=warmup,
                     repeats=repeats, verified=verify, peak_gbps=ceilings.dram_gbps,
                     pcie_gbps=ceilings.pcie_gbps, peak=ceilings.as_meta())

    def measure(point: dict[str, Any]) -> dict[str, Any]:
        row = experiment.measure(point, warmup=warmup, repeats=repeats, method=method, verify=verify)
        ceiling = ceilings.gbps(experiment.peak_kind({**point, **row}))
        if ceiling and row.get("gbps") is not None:
            row["fraction_of_peak"] = row["gbps"] / ceiling
        return row

    results = run_points(experiment.points(), measure, meta=meta, out=out, progress=progress)
    if not results.meta.get("interrupted"):
        experiment.finish(results)
        if out is not None:  # the streamed file's first line predates finish(): rewrite it whole
            results.to_json(out)
    return results
