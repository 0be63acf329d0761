"""What a results file may hold, checked line by line before anything uses it.

Results.load reads files that a killed process cut short, an older or newer pyclperf wrote, or a
person edited; report, compare and tune's resume then index into them. Every line is parsed and
its record checked here, so a damaged or hostile file is refused with one ResultsFileError that
names the file, the line and the field, instead of a TypeError deep inside pandas or a plot.
A line that is not JSON at all (a write cut by a kill) is not an error: the loader skips it and
says so, as it always has.

The checks are plain code rather than a JSON Schema: jsonschema is no dependency of the package,
and several rules (the row's ``x`` field, the plot spec's keys) depend on the metadata line.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from .plot_spec import FIGURES

SCHEMA = "pyclperf.results/1"

# Deeper values than this are refused: nothing pyclperf writes nests beyond a few levels, and
# pandas, matplotlib and json.dumps recurse into what they are given.
MAX_DEPTH = 32

# Row fields that hold one number (or null: a row that was not timed). Rates, times, ratios.
NUMBER_FIELDS = frozenset({
    "gbps", "gbps_best", "gflops", "gops", "fraction_of_peak", "slowdown", "relative",
    "median_ns", "min_ns", "max_ns", "mean_ns", "q1_ns", "q3_ns", "iqr_ns", "spread_pct",
    "time_ms", "bytes", "n", "host_median_ns", "host_gbps", "host_over_events", "ran_s",
})
# Row fields that hold a list of numbers (every launch's time).
NUMBER_LIST_FIELDS = frozenset({"times_ns"})
# Row fields that hold text (or null).
TEXT_FIELDS = frozenset({"status", "error", "config", "method", "device", "strategy"})
# Row fields that hold true/false (or null).
FLAG_FIELDS = frozenset({"verified", "noisy", "replayed", "pareto"})

# Metadata fields and the JSON types they may hold; null everywhere but in the two objects
# that readers look into unasked (meta["device"]["name"], meta["versions"]["pyclperf"]).
META_NOT_NULL = frozenset({"device", "versions"})
META_TYPES: dict[str, tuple[str, ...]] = {
    "experiment": ("string",), "x": ("string",), "x_label": ("string",),
    "title": ("string",), "description": ("string",), "conclusion": ("string",),
    "method": ("string",), "created": ("string",), "platform": ("string",),
    "driver": ("string",), "host": ("string",), "kernel": ("string",),
    # devices: a fleet run's labels -> device (object), a tuning run's worker labels (array).
    "device": ("object",), "devices": ("object", "array"), "versions": ("object",),
    "defining": ("object",), "plot": ("object",), "peak": ("object",),
    "params": ("object",), "tune_params": ("object",),
    "peak_gbps": ("number",), "pcie_gbps": ("number",),
    "load_warnings": ("array",), "metrics": ("array",),
    "interrupted": ("boolean",), "fleet": ("boolean",), "verified": ("boolean",),
    # a search's: what ran, what it minimised, its Pareto front, a replay's file and time
    "strategy": ("string",), "algorithm": ("string",), "objectives": ("array",),
    "pareto": ("array",), "replay": ("object",), "simulated_time_s": ("number",),
    "stop": ("object",),
}

# What a closing ("end") record may say: how the run that wrote the rows above it ended, and
# where it stopped early, why (tuner/stops.py).
STOP_TYPES: dict[str, tuple[str, ...]] = {
    "stopped": ("string",), "reason": ("string",), "in_flight": ("string",),
    "finished": ("number",), "total": ("number",),
}
END_TYPES: dict[str, tuple[str, ...]] = {"interrupted": ("boolean",), **STOP_TYPES}


class ResultsFileError(ValueError):
    """A results file that cannot be read as one: the message names the file, the line (where
    one is to blame) and what is wrong with it."""

    def __init__(self, path: Any, line: int | None, what: str) -> None:
        self.path, self.line, self.what = path, line, what
        super().__init__(f"{path}:{line}: {what}" if line else f"{path}: {what}")


class BadLine(Exception):
    """A line that is JSON but no record pyclperf can use (the loader adds file and line)."""


class TornLine(Exception):
    """A line that is not JSON: cut by a killed write, or not text at all."""


def parse(raw: bytes) -> Any:
    """The JSON value of one line. TornLine where it is not JSON; BadLine where it is but
    cannot be read (nested too deeply, an integer too long for Python to convert)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TornLine(f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TornLine(exc.msg) from None
    except RecursionError:
        raise BadLine(f"a value nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:  # e.g. an integer of thousands of digits
        raise BadLine(f"a value Python cannot read: {exc}") from None


def kind_of(value: Any) -> str:
    """The JSON type name of a parsed value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _show(value: Any) -> str:
    text = json.dumps(value, allow_nan=True) if _depth(value) <= MAX_DEPTH else "..."
    return text if len(text) <= 40 else text[:37] + "..."


def _depth(value: Any) -> int:
    """How deeply lists and objects nest in ``value`` (0 for a scalar); iterative, so a deep
    value cannot exhaust the stack here."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                return deepest
            stack.extend((v, depth) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def record(value: Any) -> tuple[str, dict[str, Any]]:
    """(kind, fields) of a parsed line: kind "meta", "row" or "end". BadLine otherwise."""
    if not isinstance(value, dict):
        raise BadLine(f"a JSON {kind_of(value)}, not a pyclperf results record (an object)")
    if _depth(value) > MAX_DEPTH:
        raise BadLine(f"a value nested more than {MAX_DEPTH} levels deep")
    fields = dict(value)
    kind = fields.pop("record", None)
    if kind not in ("meta", "row", "end"):
        raise BadLine(f"not a pyclperf results line (its 'record' is {_show(kind)}, "
                      "not 'meta', 'row' or 'end')")
    return str(kind), fields


def _typed(fields: dict[str, Any], types: dict[str, tuple[str, ...]], what: str,
           not_null: frozenset[str] = frozenset()) -> None:
    for key, allowed in types.items():
        if key not in fields:
            continue
        if kind_of(fields[key]) not in allowed + (() if key in not_null else ("null",)):
            raise BadLine(f"{what} field {key!r} must be {' or '.join(allowed)}, "
                          f"not {kind_of(fields[key])} {_show(fields[key])}")


def check_meta(fields: dict[str, Any]) -> dict[str, Any]:
    """The metadata line's fields, without ``schema``; BadLine naming a wrong one."""
    schema = fields.pop("schema", None)
    if schema != SCHEMA:
        raise BadLine(f"unknown results schema {_show(schema)} (want {SCHEMA})")
    _typed(fields, META_TYPES, "metadata", META_NOT_NULL)
    device = fields.get("device") or {}
    if "name" in device and not isinstance(device["name"], str):
        raise BadLine(f"metadata field 'device.name' must be string, not {kind_of(device['name'])}")
    if not all(isinstance(w, str) for w in fields.get("load_warnings") or []):
        raise BadLine("metadata field 'load_warnings' must be a list of strings")
    _check_plot(fields.get("plot"))
    return fields


def _check_plot(spec: dict[str, Any] | None) -> None:
    """``plot`` names a figure of plot_spec.FIGURES and only the arguments it takes."""
    if not spec:
        return
    kind = spec.get("kind")
    if kind is None:
        return
    if kind not in FIGURES:
        raise BadLine(f"metadata field 'plot.kind' must be one of {sorted(FIGURES)} or null, "
                      f"not {_show(kind)}")
    takes = FIGURES[kind]
    unknown = sorted(set(spec) - set(takes) - {"kind"})
    if unknown:
        raise BadLine(f"metadata field 'plot' has {unknown[0]!r}, which a {kind!r} figure does "
                      f"not take (it takes {sorted(takes)})")
    needed = [name for name, (_, required) in takes.items() if required]
    missing = [n for n in needed if n not in spec]
    if missing:
        raise BadLine(f"metadata field 'plot' lacks {missing[0]!r}, which a {kind!r} figure "
                      f"needs (it needs {needed})")
    for name, value in spec.items():
        if name != "kind" and not _is_kind(value, takes[name][0]):
            raise BadLine(f"metadata field 'plot.{name}' must be {' or '.join(sorted(takes[name][0]))}, "
                          f"not {_show(value)}")


def _is_kind(value: Any, kinds: frozenset[str]) -> bool:
    if kind_of(value) in kinds:
        return True
    return "object of strings" in kinds and kind_of(value) == "object" and \
        all(kind_of(v) == "string" for v in value.values())


def check_row(fields: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """A row's fields; BadLine naming the first field of the wrong type. A tuning run's own
    parameters (``meta["tune_params"]``) may have any name, so their values are not typed."""
    own = set(meta.get("tune_params") or ())
    for key, value in fields.items():
        kind = kind_of(value)
        if value is None or key in own:
            continue
        if key in NUMBER_FIELDS and not _float(value):
            raise BadLine(f"row field {key!r} must be a number, not {kind} {_show(value)}")
        if key in NUMBER_LIST_FIELDS and not (kind == "array" and all(map(_float, value))):
            raise BadLine(f"row field {key!r} must be a list of numbers, not {_show(value)}")
        if key in TEXT_FIELDS and kind != "string":
            raise BadLine(f"row field {key!r} must be a string, not {kind} {_show(value)}")
        if key in FLAG_FIELDS and kind != "boolean":
            raise BadLine(f"row field {key!r} must be true or false, not {kind} {_show(value)}")
    x = meta.get("x")
    if x and kind_of(fields.get(x)) in ("array", "object"):
        raise BadLine(f"row field {x!r} (the swept parameter) must be one value, not "
                      f"{_show(fields[x])}")
    return fields


def _float(value: Any) -> bool:
    """A JSON number that a float can hold (an integer of hundreds of digits cannot: NumPy,
    pandas and matplotlib would fail on it)."""
    return kind_of(value) == "number" and (isinstance(value, float) or abs(value) < _FLOAT_MAX)


_FLOAT_MAX = int(sys.float_info.max)


def check_end(fields: dict[str, Any]) -> dict[str, Any]:
    """A closing record's fields; BadLine for one it does not know."""
    unknown = sorted(set(fields) - set(END_TYPES))
    if unknown:
        raise BadLine(f"end record field {unknown[0]!r} is unknown (it may say {sorted(END_TYPES)})")
    _typed(fields, END_TYPES, "end record")
    return fields

