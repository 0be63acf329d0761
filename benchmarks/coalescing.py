"""GPU benchmark for the offset and stride experiments, with CuPy's device copy as the reference.

Run on the GPU machine after `pip install --no-build-isolation .`:

    python3 benchmarks/coalescing.py --device nvidia --out OUTDIR

It runs both sweeps at their GPU defaults (every point verified), saves their results and
plots in OUTDIR, measures CuPy's device-to-device copy in the same process, and prints the
aligned copy's ratio to it. Figures go into benchmarks/RESULTS.md by hand, with the date.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np

import pyclperf


def cupy_d2d_gbps(nbytes: int, repeats: int = 30, warmup: int = 5) -> dict[str, float]:
    """Median CuPy device-to-device copy bandwidth, bytes read + written, event-timed."""
    import cupy as cp

    n = nbytes // 4
    src = cp.random.random(n, dtype=cp.float32)
    dst = cp.empty_like(src)
    for _ in range(warmup):
        cp.copyto(dst, src)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(repeats):
        start.record()
        cp.copyto(dst, src)
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) * 1e6)  # ms -> ns
    if not bool(cp.array_equal(dst, src)):
        raise RuntimeError("CuPy reference copy produced a wrong result")
    med = float(np.median(times))
    return {"bytes": 2 * nbytes, "median_ns": med, "gbps": 2 * nbytes / med}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="nvidia")
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--repeats", type=int, default=50)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    ctx = pyclperf.Context(args.device)
    print(f"device: {ctx.info.name} | driver {ctx.info.driver_version} | {ctx.info.platform_version}")
    summary: dict[str, object] = {"device": ctx.summary()}
    for name in ("offset", "stride"):
        res = pyclperf.run(name, ctx, repeats=args.repeats, out=out / f"{name}.jsonl")
        res.to_csv(out / f"{name}.csv")
        pyclperf.save_plot(res, out / f"{name}.png")
        df = res.df
        x = res.meta["x"]
        print(f"\n{name}: items={res.meta['items']} all verified={res.all_verified}")
        print(df[[x, "status", "median_ns", "spread_pct", "gbps"]].to_string(index=False))
        summary[name] = {"items": res.meta["items"], "all_verified": res.all_verified,
                         "gbps": dict(zip(df[x].tolist(), df["gbps"].round(1).tolist()))}

    aligned = summary["offset"]["gbps"][0]  # type: ignore[index]
    offset_bytes = 4 * int(summary["offset"]["items"])  # type: ignore[index]
    try:
        same = cupy_d2d_gbps(offset_bytes)
        big = cupy_d2d_gbps(1 << 30)
    except ImportError:
        print("CuPy is not installed: no CUDA reference measured", file=sys.stderr)
        same = big = None
    if same is not None and big is not None:
        summary["cupy_d2d_same_size"] = same
        summary["cupy_d2d_1GiB"] = big
        print(f"\naligned offset copy (pyclperf, {offset_bytes >> 20} MiB/buffer): {aligned:.0f} GB/s")
        print(f"CuPy copy, same size: {same['gbps']:.0f} GB/s -> ratio {aligned / same['gbps']:.3f}")
        print(f"CuPy copy, 1 GiB:     {big['gbps']:.0f} GB/s -> ratio {aligned / big['gbps']:.3f}")
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
