"""``pyclperf.profile(ctx)``: the device's measured ceilings, cached per device and driver.

What is measured (every figure verified, with how it was measured and its spread; every ceiling
the best over the launch shapes searched, with the shape that won):

* DRAM read, write and copy (memory.py, streams.py), cache levels found from the knees of the
  working-set curves (size, read bandwidth, load latency, beside the size the device reports,
  or on a CPU device the OS's caches: sweep.py, cpusweep.py), each level's copy bandwidth (a
  copy looped inside one launch over a set the level holds: levelcopy.py), DRAM load latency,
  host <-> device bandwidth pinned and pageable;
* local-memory bandwidth and launch latency (ceilings.py), FP32, FP64 and FP16 multiply-add
  throughput (where the device claims the extension) and 32-bit integer multiply-add
  throughput (compute.py).

``quick`` searches fewer shapes with fewer launches (a minute at most on a CPU device). The result is a
``Profile``: the JSON record (profile.schema.json) with the roofs a roofline draws.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .. import _core
from . import ceilings, compute, cpusweep, levelcopy, memory, store, sweep
from .memory import size_text
from .record import Effort, Figure, missing, usable
from .roof import Roof

# The parts of a profile, in the order they run.
PARTS = ("launch", "compute", "local", "dram", "caches", "transfers")


class Profile:
    """A device profile: ``data`` is the JSON record (profile.schema.json)."""

    def __init__(self, data: dict[str, Any], path: Path | None = None) -> None:
        store.validate(data)
        self.data = data
        self.path = path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Profile":
        return cls(store.read(path), Path(path))

    def save(self, path: str | os.PathLike[str]) -> Path:
        self.path = store.write(self.data, path)
        return self.path

    @property
    def device(self) -> str:
        return str(self.data["device"]["name"])

    @property
    def quick(self) -> bool:
        return bool(self.data["quick"])

    @property
    def ceilings(self) -> dict[str, Figure]:
        return self.data["ceilings"]

    @property
    def caches(self) -> list[dict[str, Any]]:
        return self.data["caches"]

    def value(self, name: str) -> float | None:
        """A ceiling's verified value, or None."""
        fig = self.ceilings.get(name)
        return float(fig["value"]) if usable(fig) else None

    def read_curve_at(self, nbytes: int) -> tuple[int, float | None, float | None]:
        """(size, GB/s) of the read curve's first verified point at ``nbytes`` or above ((0,
        None) past its end), and the GB/s of its last point (where it reads from DRAM)."""
        points = sorted((int(p["size"]), float(p["gbps"])) for p in self.data["curves"]["read"]
                        if p.get("status") == "ok" and p.get("gbps"))
        size, rate = next(((s, g) for s, g in points if s >= nbytes), (0, None))
        return size, rate, points[-1][1] if points else None

    def memory_roofs(self) -> list[Roof]:
        """Local memory, the cache levels (smallest first), DRAM read, copy and write. A cache
        level is a roof for reads where its read figure runs above the DRAM read ceiling, and
        for copies (reads and writes together, ``"<level> copy"``) where its copy figure runs
        above the DRAM copy ceiling: a figure below DRAM's bounds nothing (the kernel, not the
        cache, was the limit there: a CPU device's strided walk, for one), so it is no roof."""
        out = []
        local = self.ceilings.get("local")
        if usable(local):
            out.append(Roof("local memory", local["value"], "GB/s", "local", None, local["how"],
                            local.get("spread_pct"), "read"))
        floors = {"read": self.value("dram_read") or 0.0, "copy": self.value("dram_copy") or 0.0}
        for level in self.caches:
            for traffic, suffix in (("read", ""), ("copy", " copy")):
                fig = level.get(traffic)
                if usable(fig) and fig["value"] > floors[traffic]:
                    out.append(Roof(level["name"] + suffix, fig["value"], "GB/s", "cache",
                                    int(level["size_bytes"]), fig["how"], fig.get("spread_pct"), traffic))
        for name, label in (("dram_read", "DRAM read"), ("dram_copy", "DRAM copy"),
                            ("dram_write", "DRAM write")):
            fig = self.ceilings.get(name)
            if usable(fig):
                out.append(Roof(label, fig["value"], "GB/s", "dram", None, fig["how"], fig.get("spread_pct"),
                                name.split("_")[1]))
        return out

    def compute_roofs(self) -> list[Roof]:
        """The measured compute ceilings, highest first."""
        out = [Roof(name.upper(), fig["value"], fig["unit"], "compute", None, fig["how"], fig.get("spread_pct"))
               for name, fig in self.ceilings.items()
               if name in compute.PRECISIONS and usable(fig)]
        return sorted(out, key=lambda r: -r.value)

    def summary(self) -> str:
        """The profile as a few lines of text."""
        d = self.data
        lines = [f"{self.device} ({d['platform']}, driver {d['driver']}): "
                 f"{'quick ' if self.quick else ''}profile of {d['created']}, measured in {d['seconds']:.1f} s"]
        for name, fig in self.ceilings.items():
            lines.append("  " + _figure_line(name, fig))
        reported = d["reported"].get("global_mem_cache_bytes")
        lines.append(f"  cache levels found (the device reports a {size_text(reported)} "
                     "global-memory cache):" if reported else "  cache levels found:")
        for level in self.caches:
            lines += _level_lines(level, self.value("dram_read") or 0.0, self.value("dram_copy") or 0.0)
        if self.data.get("os", {}).get("virtual"):
            lines.append("    (a virtual machine: its CPU flags say hypervisor, so the OS reports the "
                         "host's caches, whose last level other guests share)")
        if not self.caches:
            lines.append("    none (no knee in the working-set curves)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Profile of '{self.device}'{' (quick)' if self.quick else ''}: {len(self.caches)} cache levels>"

    def _repr_html_(self) -> str:
        import html

        return f"<pre>{html.escape(self.summary())}</pre>"

    def plot(self, **kwargs: Any) -> Any:
        """The hierarchical roofline of this device (plot.plot_roofline)."""
        from .plot import plot_roofline

        return plot_roofline(self, **kwargs)


def _level_lines(level: dict[str, Any], dram_read: float, dram_copy: float) -> list[str]:
    """A cache level as the summary prints it: its size (per instance beside it on a CPU, with
    the OS's figure), what it was found from, its read and copy bandwidth and latency, its steps."""
    size = size_text(level["size_bytes"])
    unit, os = level.get("unit_bytes"), level.get("os")
    if os and unit and os.get("spanned", 1) > 1:
        size += f" over {os['spanned']} instances ({size_text(unit)} each)"
    parts = [f"{level['name']} {size}, {level.get('label', 'cache level')} "
             f"(from {' and '.join(level['found_from'])}, between "
             f"{size_text(level['bracket_bytes'][0])} and {size_text(level['bracket_bytes'][1])})"]
    if os:
        parts.append(f"the OS reports {os['name']} {size_text(os['size_bytes'])}"
                     + (" per instance" if os.get("spanned", 1) > 1 else "")
                     + f" ({os['ratio']:.2f}x{'' if os.get('named') else ': not named after it'})")
    if level.get("reported_bytes"):
        parts.append(f"the device reports {size_text(level['reported_bytes'])} "
                     f"({level['size_bytes'] / level['reported_bytes']:.2f}x)")
    for traffic, floor in (("read", dram_read), ("copy", dram_copy)):
        fig = level.get(traffic)
        if usable(fig):
            parts.append(f"{traffic} {fig['value']:,.1f} GB/s"
                         + (f" (no faster than DRAM {traffic}: no roof)" if fig["value"] <= floor else
                            f" ({size_text(fig['bytes'])} set)" if traffic == "copy" and fig.get("bytes") else ""))
    if usable(level.get("latency")):
        parts.append(f"latency {level['latency']['value']:.1f} ns")
    out = ["    " + ", ".join(parts)]
    for step in level.get("steps", []):
        after = step.get("read_after")
        out.append(f"      {step['label']} at {size_text(step['size_bytes'])} (from "
                   f"{' and '.join(step['found_from'])})"
                   + (f": read {after['value']:,.1f} GB/s after it" if usable(after) else ""))
    return out


def _figure_line(name: str, fig: Figure) -> str:
    if usable(fig):
        spread = f", spread {fig['spread_pct']:.1f}%" if fig.get("spread_pct") is not None else ""
        shape = f"; at {', '.join(f'{k} {v}' for k, v in fig['shape'].items())}" if fig.get("shape") else ""
        return f"{name:<15} {fig['value']:>12,.1f} {fig['unit']:<8} (n={fig.get('n')}{spread}{shape})"
    return f"{name:<15} {'-':>12} {fig['unit']:<8} ({fig['status']}: {fig.get('reason', '')})"


def _plain(v: Any) -> Any:
    """JSON-ready: NumPy scalars to Python, NaN and infinities to None, keys to str."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def measure(ctx: Any, quick: bool = False, progress: Callable[[str], None] | None = None,
            parts: tuple[str, ...] = PARTS) -> Profile:
    """Measure a profile now (no cache): ``parts`` a subset of PARTS (tests), ``progress``
    told the name of each part as it starts."""
    from ..measure.sweep import base_meta

    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise ValueError(f"unknown profile part(s) {unknown}; parts: {', '.join(PARTS)}")
    effort = Effort.of(quick)
    rng = np.random.default_rng()
    info = ctx.info
    start = time.monotonic()
    found: dict[str, Any] = {"ceilings": {}, "caches": [], "curves": {"read": [], "chase": []}}
    took: dict[str, float] = {}
    failed: dict[str, str] = {}  # part -> the error that stopped it
    steps: dict[str, Callable[[], None]] = {
        "launch": lambda: found["ceilings"].update(launch_latency=ceilings.launch_latency(ctx, effort, rng)),
        "compute": lambda: found["ceilings"].update(compute.compute(ctx, effort, rng)),
        "local": lambda: found["ceilings"].update(local=ceilings.local_memory(ctx, effort, rng)),
        "dram": lambda: found["ceilings"].update(memory.dram(ctx, effort, rng=rng)),
        "caches": lambda: _caches(ctx, effort, found),
        "transfers": lambda: found["ceilings"].update(memory.transfers(ctx, effort)),
    }
    for part in PARTS:
        if part not in parts:
            continue
        if progress is not None:
            progress(part)
        began = time.monotonic()
        try:
            steps[part]()
        except (_core.PyclperfError, MemoryError) as exc:  # the driver refused: that part only
            failed[part] = f"{type(exc).__name__}: {exc}"
        took[part] = time.monotonic() - began
    for name in store.schema()["properties"]["ceilings"]["required"]:
        part = _part_of(name)
        found["ceilings"].setdefault(name, missing(
            _unit(name), f"the profile's {part} part",
            failed[part] if part in failed else f"not measured (profile parts: {', '.join(parts)})",
            "failed" if part in failed else "skipped"))
    meta = base_meta(ctx)
    data = {"schema": store.SCHEMA, "created": meta["created"],
            "pyclperf_version": meta["versions"]["pyclperf"], "quick": bool(quick),
            "seconds": time.monotonic() - start, "key": store.device_key(info),
            "device": meta["device"], "driver": meta["driver"], "platform": meta["platform"],
            "ceilings": found["ceilings"], "caches": found["caches"],
            "reported": {"global_mem_cache_bytes": int(info.global_mem_cache_bytes),
                         "global_mem_cacheline_bytes": int(info.global_mem_cacheline_bytes),
                         "local_mem_bytes": int(info.local_mem_bytes),
                         "local_mem_is_dedicated": bool(info.local_mem_is_dedicated)},
            "curves": found["curves"], "timings": took,
            **({"os": found["os"]} if "os" in found else {}),
            **({"failed_parts": failed} if failed else {})}
    return Profile(_plain(data))


def _part_of(name: str) -> str:
    """Which part of the profile measures ceiling ``name``."""
    if name in compute.PRECISIONS:
        return "compute"
    return {"launch_latency": "launch", "local": "local", "dram_latency": "caches"}.get(
        name, "dram" if name.startswith("dram") else "transfers")


def _unit(name: str) -> str:
    if name in compute.PRECISIONS:
        return compute.PRECISIONS[name].unit
    return "ns" if name.endswith("latency") else "GB/s"


def _caches(ctx: Any, effort: Effort, found: dict[str, Any]) -> None:
    """The cache levels (each with its copy ceiling, levelcopy.py) and curves into ``found``,
    with the DRAM load latency."""
    swept = (sweep if ctx.info.is_gpu else cpusweep).caches(ctx, effort)
    levelcopy.add_copies(ctx, swept["levels"], effort)
    found["caches"], found["curves"] = swept["levels"], swept["curves"]
    found["ceilings"]["dram_latency"] = swept["dram_latency"]
    if "os" in swept:
        found["os"] = swept["os"]


def profile(ctx: Any = None, *, quick: bool = False, refresh: bool = False,
            folder: str | os.PathLike[str] | None = None, save: bool = True,
            progress: Callable[[str], None] | None = None) -> Profile:
    """The device's profile: the cached one for this device and driver where it exists and is
    valid (a full profile serves a ``quick`` request too), else measured now and cached.
    ``refresh`` measures again whatever is cached; ``folder`` overrides the cache folder
    (default store.profiles_dir()); ``save=False`` leaves the cache alone."""
    from ..device.context import Context

    ctx = Context() if ctx is None else ctx
    where = Path(folder) if folder is not None else None
    full, fast = store.profile_path(ctx.info, False, where), store.profile_path(ctx.info, True, where)
    if not refresh:
        for path in ((full, fast) if quick else (full,)):
            if path.is_file():
                try:
                    return Profile.load(path)
                except store.ProfileError:
                    pass  # an old or damaged file: measured again below, then replaced
    result = measure(ctx, quick=quick, progress=progress)
    if save:
        result.save(fast if quick else full)
    return result


def cached(info: Any, folder: str | os.PathLike[str] | None = None) -> Profile | None:
    """The cached profile of a device (full before quick), or None; measures nothing."""
    where = Path(folder) if folder is not None else None
    for quick in (False, True):
        path = store.profile_path(info, quick, where)
        if path.is_file():
            try:
                return Profile.load(path)
            except store.ProfileError:
                continue
    return None


__all__ = ["PARTS", "Profile", "Roof", "cached", "measure", "profile"]
