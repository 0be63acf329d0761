"""Conditions per point and cache residency on a real GPU, in one call:

    python benchmarks/conditions.py --device nvidia

1. ``run offset``, ``run bandwidth`` (reads, small) and a ``tune`` job: the clock, power,
   temperature, energy and throttle columns of their rows, as NVML gave them.
2. The same ``run offset`` while a second process keeps the GPU busy (a CuPy loop of large
   copies): every row's ``conditions`` flag names the other process.
3. ``tune`` of a float4 copy (each work-item copies ITEMS float4, grid-stride, so every
   pass over the arrays is coalesced; ITEMS tuned over 1, 4 and 8) of 16 and 64 MiB per array,
   warm and ``cold=True``, beside the same copy of 1 GiB per array (a working set no cache
   holds): the cold 16 MiB figure within 5% of the 1 GiB one, the warm one above the DRAM peak
   and flagged ``cache_resident``. The table gives each figure's median launch time: a copy of
   16 MiB lasts microseconds, where a launch's ramp-up weighs.

``--parts cold`` runs 3 alone (no NVML or CuPy needed); ``--small`` copies 1 and 4 MiB beside
64 MiB (a CPU device's smoke test); ``--sizes-mib 16,32`` and ``--dram-mib 1024`` choose.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

import numpy as np
from pyclperf import Execution, Launch, Timing, Verify

COLUMNS = ("sm_clock_mhz", "mem_clock_mhz", "sm_clock_max_mhz", "power_w", "temperature_c",
           "energy_j", "throttle", "conditions")
# ITEMS float4 per work-item, a grid's width apart: each of the ITEMS passes is one coalesced
# sweep of the grid over the arrays (the global size is n4 / ITEMS).
COPY = """__kernel void copy(__global float4* restrict dst, __global const float4* restrict src) {
    const size_t gsz = get_global_size(0);
    size_t i = get_global_id(0);
    #pragma unroll
    for (int k = 0; k < ITEMS; ++k, i += gsz) dst[i] = src[i];
}"""
BLOCK = 256
ITEMS = (1, 4, 8)
BUSY = """
import cupy, time
a = cupy.ones(1 << 28, dtype=cupy.float32); b = cupy.empty_like(a)
print("busy", flush=True)
end = time.time() + {seconds}
while time.time() < end:
    for _ in range(50):
        cupy.copyto(b, a)
    cupy.cuda.Device().synchronize()
"""


def _conditions(rows: list[dict[str, Any]]) -> dict[str, Any]:
    first = rows[0] if rows else {}
    return {c: first.get(c) for c in COLUMNS} | {
        "rows_with_columns": sum(1 for r in rows if r.get("sm_clock_mhz") is not None),
        "rows": len(rows), "flags": sorted({str(r.get("conditions")) for r in rows})}


def conditions_runs(ctx: Any) -> dict[str, Any]:
    """Parts 1 and 2: the NVML columns of three runs, then of one beside a busy process."""
    import pyclperf

    out: dict[str, Any] = {}
    out["offset"] = _conditions(pyclperf.run("offset", ctx, values=[0, 1, 2, 4]).rows)
    out["bandwidth"] = _conditions(pyclperf.run("bandwidth", ctx, nbytes=256 << 20,
                                                modes=["read"]).rows)
    x = np.random.default_rng().standard_normal(1 << 24).astype(np.float32)
    res = pyclperf.tune(
        COPY,
        "copy",
        x.size // 4,
        [np.empty_like(x), x],
        {"block_size_x": [128, 256], "ITEMS": [1]},
        ctx=ctx,
        verify=Verify(answer=[x, None]),
        execution=Execution(progress=False),
    )
    out["tune"] = _conditions(res.rows)

    busy = subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=60)],
                            stdout=subprocess.PIPE, text=True)
    try:
        busy.stdout.readline()  # it has started copying
        time.sleep(1.0)
        out["offset_busy"] = _conditions(pyclperf.run("offset", ctx, values=[0, 1, 2, 4]).rows)
    finally:
        busy.kill()
        busy.wait()
    return out


def _copy(ctx: Any, per_array: int, cold: bool) -> dict[str, Any]:
    """The fastest verified float4 copy of ``per_array`` bytes (one source, one destination),
    warm or cold: compulsory GB/s (bytes read + written over the median launch time)."""
    import pyclperf

    x = np.random.default_rng().standard_normal(per_array // 4).astype(np.float32)
    n4 = x.size // 4
    items = [k for k in ITEMS if n4 % (k * BLOCK) == 0] or [1]
    res = pyclperf.tune(
        COPY,
        "copy",
        n4,
        [np.empty_like(x), x],
        {"block_size_x": [BLOCK], "ITEMS": items},
        ctx=ctx,
        launch=Launch(global_size=lambda c: (n4 // c["ITEMS"],)),
        verify=Verify(answer=[x, None]),
        timing=Timing(cold=cold, min_time=0.2, max_repeats=2000),
        execution=Execution(progress=False),
    )
    ok = [r for r in res.rows if r["status"] == "ok" and r.get("compulsory_gbps")]
    if not ok:
        bad = res.rows[0] if res.rows else {}
        return {"status": bad.get("status", "no rows"), "error": bad.get("error")}
    r = max(ok, key=lambda r: r["compulsory_gbps"])
    return {"status": r["status"], "gbps": r["compulsory_gbps"], "items": r["ITEMS"],
            "median_us": r["median_ns"] / 1e3, "cold": r.get("cold"),
            "cache_resident": r.get("cache_resident"), "residency": r.get("residency", ""),
            "suspect": r.get("suspect", ""), "conditions": r.get("conditions"),
            "by_items": {str(q["ITEMS"]): q.get("compulsory_gbps") for q in ok}}


def _ratio(a: dict[str, Any], b: dict[str, Any]) -> float | None:
    return a["gbps"] / b["gbps"] if a.get("gbps") and b.get("gbps") else None


def cold_table(ctx: Any, sizes: list[int], dram_size: int, peak: float | None) -> dict[str, Any]:
    """Each size warm and cold, and the DRAM-sized copy: the figures and their ratios."""
    dram = _copy(ctx, dram_size, cold=False)
    rows = []
    for size in sizes:
        warm, cold = _copy(ctx, size, cold=False), _copy(ctx, size, cold=True)
        cold_ratio = _ratio(cold, dram)
        rows.append({"per_array_mib": size / (1 << 20), "warm": warm, "cold": cold,
                     "cold_over_dram": cold_ratio, "warm_over_dram": _ratio(warm, dram),
                     "warm_over_peak": warm["gbps"] / peak if peak and warm.get("gbps") else None,
                     "cold_within_5pct": abs(cold_ratio - 1) <= 0.05 if cold_ratio is not None else None})
    return {"dram": {"per_array_mib": dram_size / (1 << 20), **dram}, "peak_gbps": peak, "rows": rows}


def _f(v: Any, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def markdown(table: dict[str, Any]) -> str:
    """The cold/warm table: GB/s and median launch time per figure, ratios to the DRAM-sized
    copy and to the DRAM peak, and the flags."""
    d = table["dram"]
    lines = [f"DRAM-sized copy, {d['per_array_mib']:g} MiB per array: {_f(d.get('gbps'), ',.1f')} GB/s "
             f"({_f(d.get('median_us'), '.1f')} us a launch, ITEMS={d.get('items')}); DRAM peak "
             f"{_f(table['peak_gbps'], ',.1f')} GB/s",
             "| MiB per array | warm GB/s (us) | cold GB/s (us) | cold / DRAM-sized | "
             "warm / DRAM peak | warm flagged cache_resident | cold within 5% |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in table["rows"]:
        w, c = r["warm"], r["cold"]
        lines.append(f"| {r['per_array_mib']:g} | {_f(w.get('gbps'), ',.1f')} ({_f(w.get('median_us'), '.1f')}) "
                     f"| {_f(c.get('gbps'), ',.1f')} ({_f(c.get('median_us'), '.1f')}) "
                     f"| {_f(r['cold_over_dram'], '.3f')} | {_f(r['warm_over_peak'], '.3f')} "
                     f"| {w.get('cache_resident')} | {r['cold_within_5pct']} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="nvidia")
    ap.add_argument("--json", default=None)
    ap.add_argument("--parts", default="conditions,cold",
                    help="comma-separated: conditions (1 and 2), cold (3)")
    ap.add_argument("--sizes-mib", default=None, help="bytes per array of the warm/cold copies, MiB")
    ap.add_argument("--dram-mib", type=int, default=None, help="bytes per array of the DRAM-sized copy, MiB")
    ap.add_argument("--small", action="store_true", help="1 and 4 MiB beside 64 MiB (a CPU device)")
    args = ap.parse_args(argv)
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    if not parts or parts - {"conditions", "cold"}:
        ap.error(f"--parts takes conditions and/or cold, got {args.parts!r}")
    args.parts = parts
    default_sizes, default_dram = ((1, 4), 64) if args.small else ((16, 64), 1024)
    try:
        args.sizes = ([int(float(v) * (1 << 20)) for v in args.sizes_mib.split(",")]
                      if args.sizes_mib else [m << 20 for m in default_sizes])
    except ValueError:
        ap.error(f"--sizes-mib takes numbers separated by commas, got {args.sizes_mib!r}")
    if any(s < (1 << 16) or s % (1 << 16) for s in args.sizes):
        ap.error("--sizes-mib: each size must be a multiple of 1/16 MiB")
    args.dram = (args.dram_mib or default_dram) << 20
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import pyclperf
    from pyclperf.device.peak import theoretical

    ctx = pyclperf.Context(args.device)
    out: dict[str, Any] = {"device": ctx.info.name, "driver": ctx.info.driver_version}
    out["peak_gbps"] = theoretical(ctx).dram_gbps
    if "conditions" in args.parts:
        out.update(conditions_runs(ctx))
    if "cold" in args.parts:
        out["cold_table"] = cold_table(ctx, args.sizes, args.dram, out["peak_gbps"])
    print(json.dumps(out, indent=1, default=str))
    if "cold" in args.parts:
        print(markdown(out["cold_table"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
