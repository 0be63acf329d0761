"""The part of an experiment's row that comes from its timed launches (Experiment.measure):
statistics, bandwidth, how the timing stopped, energy, operation rates and the verdict.

It needs no device, so run_experiment has it done with the rest of the row's finishing while
the next point's launches run (measure.sweep.run_points' finish_row): Experiment.measure then
leaves it in the row under ``LATER``, for finish_row to take out and apply first.
"""

from __future__ import annotations

from typing import Any

from ..measure.conditions import energy_columns
from ..measure.sweep import timed_row, verdict

# The row's key for its timed columns still to be made (a callable taking the row).
LATER = "_timed_columns_later"


def timed_columns(samples: Any, launch: Any, method: str, verify: bool, passed: bool,
                  detail: str, watched: bool, row: dict[str, Any]) -> None:
    """Add to ``row`` what its launches' ``samples`` say (``watched``: NVML's readings are in
    the row, so energy can be told)."""
    times = samples.times
    row.update(timed_row(times, launch.nbytes, method))
    row.update(samples.columns())
    if watched:
        row.update(energy_columns(row, launch.nbytes * len(times), row.get("gbps")))
    if launch.ops is not None:  # e.g. "flops", "gflops" (per second, median), "gflops_best"
        unit = launch.ops_unit
        row[unit] = int(launch.ops)
        row[f"g{unit}"] = launch.ops / row["median_ns"] if row["median_ns"] > 0 else float("nan")
        row[f"g{unit}_best"] = launch.ops / row["min_ns"] if row["min_ns"] > 0 else float("nan")
    for name, amount in launch.rates.items():
        row[name] = amount / row["median_ns"] if row["median_ns"] > 0 else float("nan")
    row.update(verdict(verify, passed, detail))
