"""Conditions per point and cache residency on a real GPU, in one call:

    python benchmarks/conditions.py --device nvidia

1. ``run offset``, ``run bandwidth`` (reads, small) and a ``tune`` job: the clock, power,
   temperature, energy and throttle columns of their rows, as NVML gave them.
2. The same ``run offset`` while a second process keeps the GPU busy (a CuPy loop of large
   copies): every row's ``conditions`` flag names the other process.
3. ``tune`` of a float copy at 16 MiB, warm and ``cold=True``, beside the same copy at 1 GiB
   (a working set no cache holds): the cold 16 MiB figure within 5% of the 1 GiB one, the warm
   one above the DRAM peak and flagged.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

import numpy as np

COLUMNS = ("sm_clock_mhz", "mem_clock_mhz", "sm_clock_max_mhz", "power_w", "temperature_c",
           "energy_j", "throttle", "conditions")
COPY = """__kernel void copy(__global float* dst, __global const float* src) {
    const size_t i = get_global_id(0); dst[i] = src[i]; }"""
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


def _copy_gbps(ctx: Any, nbytes: int, cold: bool) -> dict[str, Any]:
    import pyclperf

    x = np.random.default_rng().standard_normal(nbytes // 4).astype(np.float32)
    res = pyclperf.tune(COPY, "copy", x.size, [np.empty_like(x), x], {"block_size_x": [256]},
                        ctx=ctx, answer=[x, None], cold=cold, min_time=0.2, progress=False)
    r = res.rows[0]
    return {"status": r["status"], "gbps": r.get("compulsory_gbps"), "cold": r.get("cold"),
            "cache_resident": r.get("cache_resident"), "residency": r.get("residency", ""),
            "suspect": r.get("suspect", ""), "conditions": r.get("conditions")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="nvidia")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    import pyclperf
    from pyclperf.device.peak import theoretical

    ctx = pyclperf.Context(args.device)
    out: dict[str, Any] = {"device": ctx.info.name, "driver": ctx.info.driver_version}
    out["peak_gbps"] = theoretical(ctx).dram_gbps
    out["offset"] = _conditions(pyclperf.run("offset", ctx, values=[0, 1, 2, 4]).rows)
    out["bandwidth"] = _conditions(pyclperf.run("bandwidth", ctx, nbytes=256 << 20,
                                                modes=["read"]).rows)
    x = np.random.default_rng().standard_normal(1 << 24).astype(np.float32)
    res = pyclperf.tune(COPY, "copy", x.size, [np.empty_like(x), x], {"block_size_x": [128, 256]},
                        ctx=ctx, answer=[x, None], progress=False)
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

    out["copy_16MiB_warm"] = _copy_gbps(ctx, 16 << 20, cold=False)
    out["copy_16MiB_cold"] = _copy_gbps(ctx, 16 << 20, cold=True)
    out["copy_1GiB"] = _copy_gbps(ctx, 1 << 30, cold=False)
    dram = out["copy_1GiB"]["gbps"]
    out["cold_over_dram"] = out["copy_16MiB_cold"]["gbps"] / dram if dram else None
    out["warm_over_peak"] = (out["copy_16MiB_warm"]["gbps"] / out["peak_gbps"]
                             if out["peak_gbps"] else None)
    print(json.dumps(out, indent=1, default=str))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
