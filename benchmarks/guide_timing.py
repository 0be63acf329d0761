"""How long `pyclperf guide` takes, experiment by experiment, and whether its verdicts hold up
under ten times the measurement.

Runs the guide on one device as `pyclperf guide` does (pyclperf.guide.run.run_guide) in each mode
asked (default: the default run, --thorough and --quick), each into its own folder, and prints
per experiment the seconds each mode took, the totals, and, for every mode against --thorough
(the reference), whether the verdict (holds / changed / reversed) and the direction of the
effect (the device's ratio above or below 1) agree. Verdicts come from DIR/<mode>/guide.json
where the guide writes one, else from guide_figures.compare_to_source on the results files.

    python benchmarks/guide_timing.py --device nvidia --out guide-timing --json guide-timing.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

MODES = ("default", "thorough", "quick")
REFERENCE = "thorough"


def run_mode(mode: str, out: Path, device: str | None, only: str | None) -> dict[str, Any]:
    """One guide run; its total and per-experiment seconds and statuses."""
    from pyclperf.guide.run import run_guide

    start = time.monotonic()
    _, outcomes = run_guide(out, device=device, quick=mode == "quick", thorough=mode == "thorough",
                            only=only, progress=True)
    return {"total_s": time.monotonic() - start,
            "seconds": {o.experiment: o.seconds for o in outcomes},
            "status": {o.experiment: o.status for o in outcomes}}


def verdicts(out: Path) -> dict[str, dict[str, Any]]:
    """experiment id -> {"verdict", "device_ratio"} of one guide folder."""
    page = out / "guide.json"
    if page.is_file():
        data = json.loads(page.read_text())
        rows = data.get("experiments", data) if isinstance(data, dict) else data
        found: dict[str, dict[str, Any]] = {}
        items = rows.items() if isinstance(rows, dict) else ((r.get("id") or r.get("experiment"), r)
                                                             for r in rows)
        for name, rec in items:
            if name and isinstance(rec, dict):
                found[str(name)] = {"verdict": rec.get("verdict"), "device_ratio": rec.get("device_ratio")}
        if found:
            return found
    from pyclperf.guide.figures import compare_to_source
    from pyclperf.measure.results import Results

    found = {}
    for path in sorted((out / "results").glob("*.jsonl")):
        try:
            results = Results.load(path)
        except ValueError:
            continue
        cmp = compare_to_source(results, path.stem)
        if cmp is not None:
            found[path.stem] = {"verdict": cmp["verdict"], "device_ratio": cmp["device_ratio"]}
    return found


def direction(ratio: Any) -> str:
    if ratio is None or not isinstance(ratio, (int, float)) or not math.isfinite(ratio):
        return "?"
    return "=" if ratio == 1 else (">1" if ratio > 1 else "<1")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default=None, help="device spec, as for pyclperf guide")
    p.add_argument("--out", default="guide-timing", help="folder; one subfolder per mode")
    p.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    p.add_argument("--only", default=None, help="comma-separated experiment ids (default: all)")
    p.add_argument("--json", default=None, help="also write every figure to this file")
    args = p.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        p.error(f"unknown mode(s) {', '.join(unknown)}; known: {', '.join(MODES)}")
    out = Path(args.out)
    runs: dict[str, dict[str, Any]] = {}
    for mode in modes:
        print(f"== {mode} ==", file=sys.stderr, flush=True)
        runs[mode] = run_mode(mode, out / mode, args.device, args.only)
        runs[mode]["verdicts"] = verdicts(out / mode)
    names = list(dict.fromkeys(n for r in runs.values() for n in r["seconds"]))
    ref = runs.get(REFERENCE)
    header = f"{'experiment':<14}" + "".join(f"{m + ' s':>12}" for m in modes)
    others = [m for m in modes if ref is not None and m != REFERENCE]
    header += "".join(f"  {m[:5] + ' vs ' + REFERENCE[:5]:<22}" for m in others)
    print(header)
    agree: dict[str, list[bool]] = {m: [] for m in others}
    for name in names:
        line = f"{name:<14}" + "".join(f"{runs[m]['seconds'].get(name, float('nan')):>12.1f}" for m in modes)
        for m in others:
            a, b = runs[m]["verdicts"].get(name), ref["verdicts"].get(name) if ref else None
            if a is None or b is None:
                line += f"  {'(no verdict)':<22}"
                continue
            same_v = a["verdict"] == b["verdict"]
            same_d = direction(a["device_ratio"]) == direction(b["device_ratio"])
            agree[m].append(same_v and same_d)
            line += f"  {('verdict ' + ('=' if same_v else '!=')) + (' dir ' + ('=' if same_d else '!=')):<22}"
        print(line)
    print(f"{'total':<14}" + "".join(f"{runs[m]['total_s']:>12.1f}" for m in modes))
    for m in others:
        print(f"{m} against {REFERENCE}: {sum(agree[m])} of {len(agree[m])} verdicts and directions agree")
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
