"""guide.json: what ``pyclperf guide`` found, for programs (the page is for people).

Written beside guide.html: the device, every experiment's run (status, seconds, verified and
total points, a few key figures) with its verdict record, and the Appendix A scorecard
(guide_scorecard.py). Checked against ``guide.schema.json`` (shipped beside this module) when
written and when read, so a file that reaches ``pyclperf compare`` is known to hold what the
comparison reads. ``version`` grows when a reader of an older version could misread the file;
a reader refuses a newer version with a sentence that says so.
"""

from __future__ import annotations

import json
import math
import os
from datetime import datetime, timezone
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ..measure.writer import write_json_atomic
from . import scorecard as guide_scorecard

if TYPE_CHECKING:
    from .run import Outcome
    from ..measure.results import Results

FORMAT = "pyclperf-guide"
VERSION = 1
# Far beyond any real file (the full catalogue writes tens of KiB): larger is refused unread.
MAX_BYTES = 16 * 1024 * 1024
# Deeper nesting than this is refused before the schema check walks it: guide.json nests 3 levels.
MAX_DEPTH = 16

# Key figures of an experiment: the best verified value of each metric its rows carry.
_BEST: dict[str, str] = {"gbps": "max", "gflops": "max", "gops": "max", "median_ns": "min"}


class GuideFileError(ValueError):
    """A guide.json that cannot be used; the message names the file and the problem."""


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """guide.json's JSON Schema (guide.schema.json)."""
    return json.loads(resources.files("pyclperf.guide").joinpath("guide.schema.json").read_text("utf-8"))


def _depth(value: Any) -> int:
    """How deeply ``value`` nests lists and objects (iteratively: a hostile file cannot recurse)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            deepest = max(deepest, d + 1)
            if deepest > MAX_DEPTH:
                return deepest
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def validate(data: Any) -> None:
    """GuideFileError (without the file's name) naming the first problem; None if ``data`` is a
    valid guide document of this version."""
    import jsonschema  # type: ignore[import-untyped]

    if not isinstance(data, dict):
        raise GuideFileError(f"holds a JSON {type(data).__name__}, not an object")
    if data.get("format") != FORMAT:
        raise GuideFileError(f"format {data.get('format')!r}, not a pyclperf guide file ({FORMAT!r})")
    version = data.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
        raise GuideFileError(f"guide.json version {version} was written by a newer pyclperf; this "
                             f"one ({_version()}) reads version {VERSION}: upgrade pyclperf")
    if _depth(data) > MAX_DEPTH:
        raise GuideFileError(f"nested more than {MAX_DEPTH} levels deep")
    try:
        jsonschema.validate(data, schema())
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top)"
        raise GuideFileError(f"not a valid guide.json at {where}: {exc.message}") from None


def _version() -> str:
    from .._version import __version__

    return __version__


def _finite_float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"number {text[:20]!r} is out of range")
    return v


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def read(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A guide.json's contents, checked; GuideFileError names the file and the problem."""
    p = Path(path)
    try:
        with open(p, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise GuideFileError(f"{p}: cannot be read ({exc.strerror or exc})") from None
    if len(raw) > MAX_BYTES:
        raise GuideFileError(f"{p}: larger than {MAX_BYTES // (1024 * 1024)} MiB, not a guide.json")
    try:
        data = json.loads(raw.decode("utf-8"), parse_float=_finite_float,
                          parse_constant=_no_constant)
    except UnicodeDecodeError as exc:
        raise GuideFileError(f"{p}: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise GuideFileError(f"{p}: not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise GuideFileError(f"{p}: nested too deeply to be a guide.json") from None
    except ValueError as exc:  # a NaN, an infinite or a too-long number
        raise GuideFileError(f"{p}: not JSON this reader accepts ({exc})") from None
    try:
        validate(data)
    except GuideFileError as exc:
        raise GuideFileError(f"{p}: {exc}") from None
    return data


def key_figures(results: "Results | None") -> dict[str, float]:
    """The best verified value of each usual metric in the rows (best_gbps, best_median_ns ...)."""
    from ..measure.results import OK

    out: dict[str, float] = {}
    if results is None:
        return out
    for metric, best in _BEST.items():
        values = [float(r[metric]) for r in results.rows if r.get("status") == OK
                  and isinstance(r.get(metric), (int, float)) and math.isfinite(r[metric])]
        if values:
            out[f"best_{metric}"] = max(values) if best == "max" else min(values)
    return out


def _device(outcomes: Sequence["Outcome"]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for o in outcomes:
        if o.results is not None and isinstance(o.results.meta.get("device"), dict):
            meta = o.results.meta["device"]
            break

    def text(key: str) -> str | None:
        return str(meta[key]) if meta.get(key) is not None else None

    return {"name": text("name"), "vendor": text("vendor"), "driver": text("driver_version"),
            "opencl": text("version"), "type": text("type"), "platform": text("platform_name")}


def document(outcomes: Sequence["Outcome"], quick: bool = False,
             created: str | None = None) -> dict[str, Any]:
    """The guide.json document for a guide run's outcomes."""
    from ..measure.results import OK

    records = guide_scorecard.experiment_records(outcomes)
    experiments = []
    for o in outcomes:
        rows = o.results.rows if o.results is not None else []
        experiments.append({
            "experiment": o.experiment, "status": o.status, "seconds": round(max(o.seconds, 0.0), 3),
            "device_s": None if getattr(o, "device_s", None) is None else round(o.device_s, 3),
            "verified": sum(1 for r in rows if r.get("status") == OK), "points": len(rows),
            **records[o.experiment], "figures": key_figures(o.results)})
    return {"format": FORMAT, "version": VERSION, "pyclperf": _version(),
            "created": created or datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "quick": bool(quick), "device": _device(outcomes), "experiments": experiments,
            "recommendations": guide_scorecard.scorecard(records)}


def write(data: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Check ``data`` and write it atomically (a reader never sees half a file)."""
    validate(data)
    return write_json_atomic(data, path)


def write_guide_json(outcomes: Sequence["Outcome"], path: str | os.PathLike[str],
                     quick: bool = False) -> Path:
    """guide.json for a guide run, at ``path``."""
    return write(document(outcomes, quick=quick), path)


__all__: Sequence[str] = ["FORMAT", "GuideFileError", "MAX_BYTES", "VERSION", "document",
                          "key_figures", "read", "schema", "validate", "write", "write_guide_json"]
