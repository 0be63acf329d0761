"""Export tune() results in the T4 format (the open autotuning results/metadata schemas 1.0.0
that Kernel Tuner writes), so other autotuning tools and analyses can read them.

One T4 result per row: the configuration, the objective, the times (milliseconds, as Kernel
Tuner's ``metadata.timeunit`` says), the invalidity class and the measurements. T4 has no class
for "ran but was not verified": such rows are "correct" with ``correctness`` 1 (as Kernel Tuner,
which also never checks without a reference, writes every row), and carry a measurement
``verified`` = 0 so the difference is not lost.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any, Mapping, Sequence

from .rows import ROW_FIELDS, metric_names, param_names

SCHEMA_VERSION = "1.0.0"

# Our statuses -> T4's invalidity classes.
INVALIDITY = {
    "ok": "correct", "timed": "correct", "replayed": "correct",
    "wrong result": "correctness", "out of bounds": "correctness",
    "build failed": "compile",
    "launch failed": "runtime", "crashed": "runtime",
    "invalid": "constraints", "skipped": "constraints",
}
_UNITS = {"time_ms": "ms", "median_ns": "ns", "min_ns": "ns", "max_ns": "ns", "spread_pct": "%"}


def _ms(seconds: Any) -> float:
    return float(seconds or 0.0) * 1e3


def t4_result(row: Mapping[str, Any], params: Sequence[str], metrics: Sequence[str] = (),
              objective: str = "time") -> dict[str, Any]:
    """The T4 result object for one row."""
    status = str(row.get("status", "invalid"))
    out: dict[str, Any] = {}
    if row.get("timestamp"):
        out["timestamp"] = str(row["timestamp"])
    out["configuration"] = {p: row[p] for p in params if p in row}
    out["objectives"] = [objective]
    out["times"] = {
        "compilation_time": _ms(row.get("compile_s")),
        "runtimes": [float(t) / 1e6 for t in row.get("times_ns") or []],
        "framework": _ms(row.get("framework_s")),
        "search_algorithm": _ms(row.get("strategy_s")),
        "validation": _ms(row.get("verify_s")),
        "benchmark": _ms(row.get("benchmark_s")),   # not in the schema; Kernel Tuner adds it too
    }
    out["invalidity"] = INVALIDITY.get(status, "runtime")
    out["correctness"] = 0 if out["invalidity"] == "correctness" else 1
    measurements: list[dict[str, Any]] = []
    if row.get("time_ms") is not None:
        measurements.append({"name": "time", "value": float(row["time_ms"]), "unit": "ms"})
    for key in ("median_ns", "min_ns", "max_ns", "spread_pct"):
        if row.get(key) is not None:
            measurements.append({"name": key, "value": float(row[key]), "unit": _UNITS[key]})
    for m in metrics:
        if row.get(m) is not None:
            measurements.append({"name": m, "value": float(row[m]), "unit": ""})
    if out["invalidity"] == "correct":
        measurements.append({"name": "verified", "value": 1 if status == "ok" else 0, "unit": ""})
    if row.get("error"):
        measurements.append({"name": "error", "value": str(row["error"]), "unit": ""})
    out["measurements"] = measurements
    return out


def t4_results(rows: Sequence[Mapping[str, Any]], meta: Mapping[str, Any] | None = None, *,
               params: Sequence[str] | None = None, metrics: Sequence[str] | None = None,
               objective: str = "time") -> dict[str, Any]:
    """The T4 results document for ``rows`` (parameters and metrics from ``meta`` unless given)."""
    meta = meta or {}
    names = list(params) if params is not None else param_names(meta, rows)
    mets = list(metrics) if metrics is not None else [
        m for m in metric_names(meta) if m not in ROW_FIELDS]
    return {"schema_version": SCHEMA_VERSION,
            "results": [t4_result(r, names, mets, objective) for r in rows],
            "metadata": {"timeunit": "milliseconds"}}


def _requirements() -> list[str]:
    out = []
    for dist in ("pyclperf", "numpy", "pandas", "optuna"):
        try:
            out.append(f"{dist}=={importlib_metadata.version(dist)}")
        except importlib_metadata.PackageNotFoundError:
            continue
    return out


def t4_metadata(meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The T4 metadata document: operating system, device (from ``Results.meta["device"]``)
    and the versions of the Python packages that produced the results."""
    meta = meta or {}
    device = meta.get("device") or {}
    return {"schema_version": SCHEMA_VERSION,
            "metadata": {
                "hardware": {"operating_system": platform.platform()},
                "environment": {
                    "device_query": json.loads(json.dumps(dict(device), default=str)),
                    "requirements": _requirements() + [f"python=={sys.version.split()[0]}"],
                }}}


def write_t4(results: Any, path: str | os.PathLike[str], *, objective: str = "time",
             metadata_path: str | os.PathLike[str] | None = None) -> Path:
    """Write ``results`` (a Results) as T4 JSON to ``path``; with ``metadata_path``, the T4
    metadata too. Returns the results path."""
    path = Path(path)
    path.write_text(json.dumps(t4_results(results.rows, results.meta, objective=objective),
                               indent=1, default=str))
    if metadata_path is not None:
        Path(metadata_path).write_text(json.dumps(t4_metadata(results.meta), indent=1))
    return path


def _json_name(name: str | os.PathLike[str]) -> Path:
    path = Path(name)
    return path if path.suffix == ".json" else path.with_name(path.name + ".json")


def store_output_file(output_filename: str | os.PathLike[str], results: Sequence[Mapping[str, Any]],
                      tune_params: Mapping[str, Any], objective: str = "time") -> Path:
    """Kernel Tuner's ``file_utils.store_output_file``: tune_kernel's ``results`` as a T4
    results file (".json" appended where the name lacks it, as Kernel Tuner does), so a Kernel
    Tuner script that stores its output runs unchanged. Returns the path."""
    from .ktcache import extra_fields, rows_from_cache

    keys = list(tune_params)
    entries = {str(i): dict(r) for i, r in enumerate(results)}
    rows = rows_from_cache({"tune_params_keys": keys}, entries)
    metrics = list(dict.fromkeys(
        name for r in results for name, value in extra_fields(r, keys).items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)))
    path = _json_name(output_filename)
    path.write_text(json.dumps(t4_results(rows, params=keys, metrics=metrics, objective=objective),
                               indent=1, default=str))
    return path


def store_metadata_file(metadata_filename: str | os.PathLike[str]) -> Path:
    """Kernel Tuner's ``file_utils.store_metadata_file``: the T4 metadata of this machine and
    its Python packages (".json" appended where the name lacks it). Returns the path."""
    path = _json_name(metadata_filename)
    path.write_text(json.dumps(t4_metadata(), indent=1))
    return path
