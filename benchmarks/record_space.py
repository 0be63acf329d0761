"""Brute-force a tiled SGEMM (benchmarks/kernels/sgemm_tiled.cl) over every configuration and
record the search space as a Kernel Tuner cache file (gzipped), which tune(replay=...) and
Kernel Tuner's simulation mode replay on any machine, no device needed.

Every configuration is verified against NumPy (float64 product of fresh random inputs, the
output poisoned first) before it is timed, so the recording holds only correct kernels' times.

    python benchmarks/record_space.py --device nvidia --size 1024 --out sgemm_h200.json.gz
    python benchmarks/record_space.py --size 256 --out sgemm_pocl.json.gz        # a CPU device

The recording pyclperf ships (pyclperf.tuner.recording.EXAMPLE) was made by the second line
(996 configurations in 50 minutes on a busy 2-core machine).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from pyclperf import Launch, Output, Timing, Verify

HERE = Path(__file__).resolve().parent
PARAMS = {"block_size_x": [8, 16, 32], "block_size_y": [1, 2, 4, 8, 16], "WPX": [1, 2, 4, 8],
          "WPY": [1, 2, 4], "TK": [8, 16, 32], "USE_LOCAL": [0, 1]}
RESTRICTIONS = ["block_size_x * block_size_y <= 256",
                "USE_LOCAL == 0 or (block_size_y * WPY * TK + TK * block_size_x * WPX) * 4 <= 32768"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--size", type=int, default=512, help="M = N = K (a multiple of 256)")
    p.add_argument("--out", required=True, help="the recording (.json.gz)")
    p.add_argument("--min-time", type=float, default=0.01)
    args = p.parse_args(argv)
    import pyclperf

    n = args.size
    if n % 256:
        sys.exit("--size must be a multiple of 256 (the largest tile)")
    rng = np.random.default_rng(2026)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    c = np.empty_like(want)
    ctx = pyclperf.Context(args.device)
    print(f"recording sgemm {n}^3 on {ctx.info.name} ({ctx.info.platform_name})", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache.json"
        start = time.perf_counter()
        args_ = [a.ravel(), b.ravel(), c.ravel(), np.int32(n), np.int32(n), np.int32(n)]
        res = pyclperf.tune(
            HERE / "kernels" / "sgemm_tiled.cl", "sgemm", (n, n), args_, PARAMS,
            restrictions=RESTRICTIONS, ctx=ctx,
            metrics={"GFLOP/s": lambda cfg, s: 2 * n ** 3 / s / 1e9},
            launch=Launch(grid_div_x=["block_size_x", "WPX"], grid_div_y=["block_size_y", "WPY"]),
            verify=Verify(answer=[None, None, want.ravel(), None, None, None], rtol=1e-3),
            timing=Timing(min_time=args.min_time), search="brute_force",
            out=Output(cache=cache))
        seconds = time.perf_counter() - start
        doc = json.loads(cache.read_text())
    statuses: dict[str, int] = {}
    for r in res.rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    doc["pyclperf_recording"] = {
        "device": ctx.info.name, "platform": ctx.info.platform_name,
        "driver": ctx.info.driver_version, "size": n, "restrictions": RESTRICTIONS,
        "seconds": round(seconds, 1), "statuses": statuses,
        "created": time.strftime("%Y-%m-%d")}
    out = Path(args.out)
    out.write_bytes(gzip.compress(json.dumps(doc).encode()))
    best = res.best()
    print(f"{len(res.rows)} configurations in {seconds:.0f} s: {statuses}; best "
          f"{best['time_ms']:.3f} ms ({best['GFLOP/s']:.0f} GFLOP/s); wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
