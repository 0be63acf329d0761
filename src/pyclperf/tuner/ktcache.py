"""Kernel Tuner's cache file: written as rows finish, read back (even when left unclosed).

The format is the one Kernel Tuner 1.x writes and reads (and that its cache schema 1.0.0
describes)::

    {"schema_version": "1.0.0", "device_name": ..., "kernel_name": ..., "problem_size": ...,
     "tune_params_keys": [names in order], "tune_params": {name: [values]}, "objective": "time",
     "cache": {
       "v1,v2,...": {<params>, "time": ms | "InvalidConfig" | "CompilationFailedConfig" |
                     "RuntimeFailedConfig", "times": [ms...], "compile_time": ms,
                     "verification_time": ms, "benchmark_time": ms, "strategy_time": ms,
                     "framework_time": ms, "timestamp": "...", <metrics>},
       ...}}

Entry keys are the parameter values joined by commas in ``tune_params_keys`` order. Like Kernel
Tuner, the writer keeps the file open-ended: the header lacks its two closing braces and each
entry is appended on its own line ending in a comma, so a crash loses at most the line being
written; ``close()`` removes the last comma and adds the braces. The reader accepts the open form
too (and drops a torn last line), so a Kernel Tuner session can resume from our file and ours from
its file. We add ``pyclperf_status``/``pyclperf_error`` to entries, which Kernel Tuner ignores: a
cache records no verification, so without our status a numeric time reads back as "timed".
Our "time" is the median of the launches (Kernel Tuner writes their mean), "times" all of them.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

SCHEMA_VERSION = "1.0.0"
INVALID = "InvalidConfig"
COMPILE_FAILED = "CompilationFailedConfig"
RUNTIME_FAILED = "RuntimeFailedConfig"
MARKERS = (INVALID, COMPILE_FAILED, RUNTIME_FAILED, "ErrorConfig")

# Our statuses -> KT's marker. KT has no marker for a wrong or out-of-bounds result or a crash:
# they are run-time failures as far as a KT reader is concerned (pyclperf_status keeps the detail).
_MARKER_OF = {
    "build failed": COMPILE_FAILED,
    "launch failed": RUNTIME_FAILED,
    "wrong result": RUNTIME_FAILED,
    "out of bounds": RUNTIME_FAILED,
    "crashed": RUNTIME_FAILED,
    "invalid": INVALID,
    "skipped": INVALID,
}
_STATUS_OF = {INVALID: "skipped", COMPILE_FAILED: "build failed", RUNTIME_FAILED: "launch failed",
              "ErrorConfig": "invalid"}
_HEADER_KEYS = ("device_name", "kernel_name", "problem_size", "tune_params_keys", "tune_params")
_CLOSE = "}\n}"
KT_FIELDS = ("time", "times", "compile_time", "verification_time", "benchmark_time",
             "strategy_time", "framework_time", "timestamp")


def _plain(o: Any) -> Any:
    """JSON fallback for numpy scalars/arrays and tuples inside params and metrics."""
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"{type(o).__name__} is not JSON serialisable")


def _dumps(o: Any, **kw: Any) -> str:
    return json.dumps(o, default=_plain, **kw)


def _as_list(v: Any) -> Any:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def cache_key(config: Mapping[str, Any], keys: Sequence[str]) -> str:
    """KT's entry key: the values in ``tune_params_keys`` order, str()-ed and comma-joined."""
    return ",".join(str(config[k]) for k in keys)


def parse_text(text: str) -> dict[str, Any]:
    """Parse a cache file's text, closing it first if it was left open (KT's own repair), and
    dropping a torn last entry line if a crash cut one short."""
    text = text.strip()
    try:
        return dict(json.loads(text))
    except json.JSONDecodeError:
        pass
    lines = text.split("\n")
    while lines:
        body = "\n".join(lines).rstrip()
        if body.endswith(","):
            body = body[:-1]
        try:
            return dict(json.loads(body + _CLOSE))
        except json.JSONDecodeError:
            lines.pop()                              # a torn last line: drop it and try again
    raise ValueError("not a Kernel Tuner cache file (no JSON object could be recovered)")


def read_cache(path: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(header, entries) of a KT cache file, closed or left open by an interrupted run."""
    data = parse_text(Path(path).read_text())
    missing = [k for k in ("kernel_name", "tune_params_keys", "cache") if k not in data]
    if missing:
        raise ValueError(f"{path}: not a Kernel Tuner cache file (no {', '.join(missing)})")
    entries = data.pop("cache")
    if not isinstance(entries, dict):
        raise ValueError(f"{path}: 'cache' is a {type(entries).__name__}, not an object")
    return data, entries


def entry_from_row(row: Mapping[str, Any], keys: Sequence[str],
                   metrics: Sequence[str] = ()) -> dict[str, Any]:
    """A KT cache entry for one pyclperf row (times in ms, as KT records them)."""
    entry: dict[str, Any] = {k: row[k] for k in keys}
    status = str(row.get("status", "invalid"))
    marker = _MARKER_OF.get(status)
    if marker is None and row.get("time_ms") is not None:
        entry["time"] = float(row["time_ms"])
        entry["times"] = [float(t) / 1e6 for t in (row.get("times_ns") or [])]
    else:
        entry["time"] = marker or INVALID            # "ok"/"timed" without a time: not usable
    for kt, ours in (("compile_time", "compile_s"), ("verification_time", "verify_s"),
                     ("benchmark_time", "benchmark_s"), ("strategy_time", "strategy_s"),
                     ("framework_time", "framework_s")):
        entry[kt] = float(row.get(ours) or 0.0) * 1e3
    entry["timestamp"] = str(row.get("timestamp") or datetime.now(timezone.utc).isoformat())
    if marker is None:
        for m in metrics:
            if row.get(m) is not None:
                entry[m] = row[m]
    entry["pyclperf_status"] = status
    if row.get("error"):
        entry["pyclperf_error"] = str(row["error"])
    return entry


def _default_config_key(config: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={config[k]!r}" for k in sorted(config))


def rows_from_cache(header: Mapping[str, Any], entries: Mapping[str, Mapping[str, Any]], *,
                    config_key: Callable[[dict], str] = _default_config_key) -> list[dict]:
    """pyclperf rows from KT cache entries. A numeric time is "timed" (a cache holds no proof of
    verification) unless our own ``pyclperf_status`` says otherwise; KT's markers become
    skipped (InvalidConfig), build failed, launch failed. Other numeric fields come through as
    metrics under their own names."""
    keys = list(header["tune_params_keys"])
    rows = []
    for entry in entries.values():
        config = {k: entry[k] for k in keys if k in entry}
        time = entry.get("time")
        numeric = isinstance(time, (int, float)) and not isinstance(time, bool)
        ms = float(time) if numeric and time is not None else None
        status = entry.get("pyclperf_status") or ("timed" if numeric else
                                                  _STATUS_OF.get(str(time), "invalid"))
        times_ns = [float(t) * 1e6 for t in entry.get("times") or []] if numeric else []
        row: dict[str, Any] = {**config, "config": config_key(config), "status": status,
                               "error": entry.get("pyclperf_error") or ("" if numeric else str(time)),
                               "verified": status == "ok",
                               "time_ms": ms,
                               "times_ns": times_ns,
                               "median_ns": float(np.median(times_ns)) if times_ns else None,
                               "min_ns": min(times_ns) if times_ns else None,
                               "max_ns": max(times_ns) if times_ns else None,
                               "compile_s": float(entry.get("compile_time") or 0) / 1e3,
                               "verify_s": float(entry.get("verification_time") or 0) / 1e3,
                               "benchmark_s": float(entry.get("benchmark_time") or 0) / 1e3,
                               "timestamp": entry.get("timestamp")}
        row.update(extra_fields(entry, keys))
        rows.append(row)
    return rows


def extra_fields(entry: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """What a KT entry holds besides its parameters, KT's own fields and pyclperf's: the
    metrics and objectives the run added, under their own names."""
    return {name: value for name, value in entry.items()
            if name not in keys and name not in KT_FIELDS
            and not name.startswith(("pyclperf_", "__"))}


class CacheWriter:
    """Appends one KT cache entry per finished row; resumes an existing file of the same run.

    Use as a context manager, or call ``close()``: an unclosed file is still readable by both
    Kernel Tuner and ``read_cache``. ``entries`` holds what the file had (resumed) plus what was
    added, so the engine can skip configs already measured.
    """

    def __init__(self, path: str | os.PathLike[str], *, device_name: str, kernel_name: str,
                 problem_size: Any, tune_params: Mapping[str, Iterable[Any]],
                 objective: str = "time", metrics: Sequence[str] = (), resume: bool = True) -> None:
        self.path = Path(path)
        self.keys = list(tune_params)
        self.metrics = list(metrics)
        if isinstance(problem_size, tuple):
            problem_size = list(problem_size)
        elif callable(problem_size):
            problem_size = "callable"                 # what KT records for a callable size
        self.header: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION, "device_name": device_name,
            "kernel_name": kernel_name, "problem_size": problem_size,
            "tune_params_keys": self.keys,
            "tune_params": {k: list(v) for k, v in tune_params.items()}, "objective": objective}
        self.entries: dict[str, dict[str, Any]] = {}
        if resume and self.path.exists() and self.path.stat().st_size > 0:
            old, self.entries = read_cache(self.path)
            self._check_same_run(old)
        # Rewrite in the open form: normalises a closed or torn file before appending to it.
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w") as f:
            f.write(_dumps({**self.header, "cache": {}}, indent="")[: -len(_CLOSE)])
            for key, entry in self.entries.items():
                f.write("\n" + _dumps({key: entry})[1:-1] + ",")
        os.replace(tmp, self.path)
        # The file is opened per entry, as KT does: nothing stays open between rows, so a run
        # that dies (or forgets close()) leaves no handle and at most one torn line.
        self._closed = False

    def _check_same_run(self, old: Mapping[str, Any]) -> None:
        """Refuse to mix results of another device, kernel, size or parameter set (as KT does)."""
        for k in _HEADER_KEYS:
            if k == "tune_params":
                continue                             # value lists may grow between runs
            mine, theirs = json.loads(_dumps(self.header[k])), old.get(k, None)
            if k == "problem_size":                  # KT compares sizes as arrays: 4096 == [4096]
                mine, theirs = _as_list(mine), _as_list(theirs)
            if k in old and theirs != mine:
                raise ValueError(f"{self.path} holds a cache of another run: its {k} is {old[k]!r}, "
                                 f"this run's is {mine!r} (use another cache file)")

    def __contains__(self, config: Mapping[str, Any]) -> bool:
        return cache_key(config, self.keys) in self.entries

    def add(self, row: Mapping[str, Any]) -> None:
        """Append the entry for a finished row (flushed and synced: it survives a crash)."""
        if self._closed:
            raise ValueError(f"{self.path} is closed")
        key = cache_key(row, self.keys)
        entry = entry_from_row(row, self.keys, self.metrics)
        self.entries[key] = entry
        with open(self.path, "a") as f:
            f.write("\n" + _dumps({key: entry})[1:-1] + ",")
            f.flush()
            os.fsync(f.fileno())

    def close(self) -> None:
        """Finish the file as plain JSON (drop the last comma, add the closing braces)."""
        if self._closed:
            return
        self._closed = True
        text = self.path.read_text().rstrip()
        # Like KT's close_cache, only a file with entries is closed: KT reopens a closed file by
        # cutting the braces and appending a comma, which would break an empty "cache": {}.
        if text.endswith(","):
            self.path.write_text(text[:-1] + _CLOSE + "\n")

    def __enter__(self) -> CacheWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
