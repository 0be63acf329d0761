"""Where device profiles live, and how a profile file is checked.

Profiles are cached per device and driver as JSON under the user's cache directory
(``$XDG_CACHE_HOME/pyclperf/profiles/``, else ``~/.cache/pyclperf/profiles/``), one file per
device, driver and effort (``.quick`` for ``--quick`` profiles). A file is checked against
``profile.schema.json`` (shipped beside this module) with jsonschema where it is installed; where
it is not (jsonschema is a test dependency, not a core one: a profile must load on a bare
install), a structural check of the same required keys, figure fields and types runs instead.
A cached file that fails either check is measured again, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..measure.writer import write_json_atomic

SCHEMA = "pyclperf.profile/2"  # 2: each cache level has its copy figure
ENV_DIR = "PYCLPERF_PROFILES"  # overrides the folder (tests, shared machines)



class ProfileError(ValueError):
    """A profile file that does not hold a valid profile; the message names what is wrong."""


def profiles_dir(env: dict[str, str] | os._Environ[str] | None = None) -> Path:
    """The folder profiles are cached in."""
    env = os.environ if env is None else env
    if env.get(ENV_DIR):
        return Path(env[ENV_DIR])
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pyclperf" / "profiles"


KEY_FIELDS = ("platform_name", "name", "vendor", "compute_units", "global_mem_bytes", "driver_version")


def device_key(info: Any) -> str:
    """What one cached profile stands for: the device, its platform and its driver. ``info`` is
    a DeviceInfo or a results file's device dict (pyclperf.device.devices.device_summary). A
    CPU device's memory size is left out: PoCL reports a share of the memory free when the
    context opens, which moves from run to run (17.3 and 21.4 GB on one machine within the
    hour), and a profile keyed by it would never be found again."""
    get = info.get if isinstance(info, dict) else lambda k: getattr(info, k)
    kind = get("type") if isinstance(info, dict) else getattr(info, "type", "")
    fields = [k for k in KEY_FIELDS if not (k == "global_mem_bytes" and "CPU" in str(kind).upper())]
    return " | ".join(str(get(k)) for k in fields)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")[:48] or "device"


def profile_path(info: Any, quick: bool, folder: Path | None = None) -> Path:
    """The cache file of a device's profile: readable name, hashed key."""
    get = info.get if isinstance(info, dict) else lambda k: getattr(info, k)
    digest = hashlib.sha256(device_key(info).encode()).hexdigest()[:12]
    name = (f"{_slug(str(get('name')))}--{_slug(str(get('driver_version')))}--{digest}"
            f"{'.quick' if quick else ''}.json")
    return (folder or profiles_dir()) / name


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The profile's JSON schema (profile.schema.json)."""
    text = resources.files("pyclperf.roofline").joinpath("profile.schema.json").read_text("utf-8")
    return json.loads(text)


FIGURE_UNITS = ("GB/s", "GFLOP/s", "Gop/s", "ns")
FIGURE_STATUSES = ("ok", "skipped", "failed")


def _figure_problem(where: str, fig: Any) -> str:
    if not isinstance(fig, dict):
        return f"{where} is not an object"
    for key in ("value", "unit", "how", "status"):
        if key not in fig:
            return f"{where} has no {key!r}"
    if fig["unit"] not in FIGURE_UNITS or fig["status"] not in FIGURE_STATUSES:
        return f"{where}: unit {fig['unit']!r} or status {fig['status']!r} unknown"
    if not isinstance(fig["how"], str) or not fig["how"]:
        return f"{where}: 'how' must say how it was measured"
    if fig["status"] == "ok":
        if not isinstance(fig["value"], (int, float)) or isinstance(fig["value"], bool):
            return f"{where}: a figure that is ok needs a number"
        if "spread_pct" not in fig or "n" not in fig:
            return f"{where}: a measured figure needs its spread and launch count"
    elif fig["value"] is not None or not isinstance(fig.get("reason"), str):
        return f"{where}: a missing figure has value null and a reason"
    return ""


def structural_problem(data: Any) -> str:
    """What makes ``data`` no profile (the schema's required parts, checked by hand), or ""."""
    if not isinstance(data, dict):
        return "the file holds no JSON object"
    required = schema()["required"]
    missing = [k for k in required if k not in data]
    if missing:
        return f"missing key {missing[0]!r}"
    if data["schema"] != SCHEMA:
        return f"schema {data['schema']!r}, want {SCHEMA!r}"
    ceilings = data["ceilings"]
    if not isinstance(ceilings, dict):
        return "'ceilings' is not an object"
    for name in schema()["properties"]["ceilings"]["required"]:
        if name not in ceilings:
            return f"ceiling {name!r} missing"
    for name, fig in ceilings.items():
        problem = _figure_problem(f"ceiling {name!r}", fig)
        if problem:
            return problem
    if not isinstance(data["caches"], list):
        return "'caches' is not a list"
    for i, level in enumerate(data["caches"]):
        if not isinstance(level, dict) or not isinstance(level.get("size_bytes"), int):
            return f"cache level {i} has no integer size_bytes"
        absent = [k for k in schema()["$defs"]["level"]["required"] if k not in level]
        if absent:  # a profile of before levels were told from steps inside them
            return f"cache level {i} lacks {absent[0]!r}"
        for part in ("read", "copy", "latency"):
            if level.get(part) is not None or part == "copy":  # a copy figure, or why there is none
                problem = _figure_problem(f"cache level {i} {part}", level[part])
                if problem:
                    return problem
    return ""


def validate(data: Any) -> str:
    """Check a profile; returns how ("jsonschema" or "structural check"). ProfileError with
    the first problem otherwise."""
    if isinstance(data, dict) and data.get("schema") != SCHEMA:
        raise ProfileError(f"schema {data.get('schema')!r}, want {SCHEMA!r} (a profile of another "
                           "pyclperf version: measure again)")
    try:
        import jsonschema  # type: ignore[import-untyped]
    except ImportError:
        problem = structural_problem(data)
        if problem:
            raise ProfileError(f"not a valid profile: {problem}") from None
        return "structural check"
    try:
        jsonschema.validate(data, schema())
    except jsonschema.ValidationError as exc:
        path = "/".join(str(p) for p in exc.absolute_path) or "(top)"
        raise ProfileError(f"not a valid profile at {path}: {exc.message}") from None
    return "jsonschema"


def read(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A profile file's contents, checked (ProfileError names the problem)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ProfileError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    try:
        validate(data)
    except ProfileError as exc:
        raise ProfileError(f"{path}: {exc}") from None
    return data


def write(data: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Check ``data`` and write it atomically (a reader never sees half a file)."""
    validate(data)
    return write_json_atomic(data, path)


__all__ = ["ENV_DIR", "ProfileError", "SCHEMA", "device_key", "profile_path", "profiles_dir",
           "read", "schema", "structural_problem", "validate", "write"]
