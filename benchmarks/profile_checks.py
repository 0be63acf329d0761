"""The rows benchmarks/profile_h200.py adds beside its references: the catalogue against the
roofs, and (on a CPU device) the cache levels against the operating system's.

* ``run_catalogue``: ``pyclperf guide`` (every experiment, each in a process of its own, with
  its own timeouts) into a folder, after the profile; its results files.
* ``catalogue_rows``: each experiment's best point against the roof that binds it on the
  profile just measured, as ``pyclperf explain`` names it (pyclperf.roofline.audit): at most
  1.05x, or the profile is wrong there.
* ``os_rows``: on a CPU device, each cache the OS reports (sysfs, else lscpu) against the level
  named after it (within 25%), and a row that counts levels the OS does not list.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CATALOGUE_LIMIT = 1.05
OS_TOLERANCE = 0.25


def run_catalogue(device: str, out: Path, profiles: Path, quick: bool, only: str | None,
                  timeout_s: float) -> dict[str, Any]:
    """``pyclperf guide`` on the device into ``out`` (the profile folder given, so nothing
    measures one again); its results files and how long it took."""
    cmd = [sys.executable, "-m", "pyclperf", "guide", "--device", device, "--out", str(out)]
    cmd += ["--quick"] if quick else []
    cmd += ["--only", only] if only else []
    env = {**os.environ, "PYCLPERF_PROFILES": str(profiles), "MPLBACKEND": "Agg"}
    began = time.monotonic()
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
        code, tail = done.returncode, (done.stdout + done.stderr)[-1500:]
    except subprocess.TimeoutExpired:
        code, tail = -1, f"stopped after {timeout_s:.0f} s"
    files = sorted((out / "results").glob("*.jsonl"))
    return {"command": " ".join(cmd), "seconds": time.monotonic() - began, "returncode": code,
            "tail": tail, "files": [str(f) for f in files]}


def catalogue_rows(files: list[str], data: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per experiment: its best point, the roof that binds it, the ratio (<= 1.05x)."""
    from pyclperf.measure.results import Results
    from pyclperf.roofline.audit import best_point
    from pyclperf.roofline.profiling import Profile

    profile = Profile(data)
    rows = []
    for f in files:
        res = Results.load(f)
        best = best_point(res, profile)
        if best is None:
            rows.append({"figure": f"catalogue {res.experiment}", "ours": None, "unit": "",
                         "reference": None, "ref_how": "no verified row with a rate (not run here?)",
                         "ratio": None, "criterion": f"<= {CATALOGUE_LIMIT}x the binding roof", "met": None})
            continue
        roof = best.roof.name if best.roof is not None else "no roof"
        rows.append({"figure": f"catalogue {res.experiment}, best point {best.label}".rstrip(),
                     "ours": best.rate, "unit": best.unit, "reference": best.attainable,
                     "ref_how": f"{roof} roof: {best.why}", "ratio": best.ratio,
                     "criterion": f"<= {CATALOGUE_LIMIT}x the binding roof",
                     "met": None if best.ratio is None else best.ratio <= CATALOGUE_LIMIT})
    return rows


def os_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """On a CPU device: the OS's caches against the levels named after them, and extra levels."""
    os_caches = (data.get("os") or {}).get("caches") or []
    if not os_caches:
        return []
    levels = data["caches"]
    rows = []
    for cache in os_caches:
        named = [lv for lv in levels if (lv.get("os") or {}).get("name") == cache["name"]]
        level = named[0] if named else None
        unit = level.get("unit_bytes") if level else None
        ratio = unit / cache["size_bytes"] if unit else None
        how = (f"{level['name']}, from {' and '.join(level['found_from'])}"
               + ("" if level["os"].get("named") else ": not named after it") if level else "no level found")
        rows.append({"figure": f"cache level against the OS's {cache['name']} (per instance; {how})",
                     "ours": unit, "unit": "bytes", "reference": cache["size_bytes"],
                     "ref_how": f"{cache['source']}: {cache['instances']} instance(s), "
                                f"{cache['cpus_per_instance']} CPU(s) each",
                     "ratio": ratio, "criterion": f"within {OS_TOLERANCE:.0%}",
                     "met": ratio is not None and abs(ratio - 1) <= OS_TOLERANCE})
    extra = [lv["name"] for lv in levels if not (lv.get("os") or {}).get("named")]
    rows.append({"figure": "cache levels the OS does not list", "ours": float(len(extra)), "unit": "",
                 "reference": None, "ref_how": ", ".join(extra) or "none", "ratio": None,
                 "criterion": "none", "met": not extra})
    if (data.get("os") or {}).get("virtual"):
        rows[-1]["ref_how"] += " (a virtual machine: the OS reports the host's caches)"
    return rows


__all__ = ["CATALOGUE_LIMIT", "OS_TOLERANCE", "catalogue_rows", "os_rows", "run_catalogue"]
