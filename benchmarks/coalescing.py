"""GPU benchmark for the offset and stride experiments, with CuPy's device copy as the reference.

Run on the GPU machine after `pip install --no-build-isolation .`:

    python3 benchmarks/coalescing.py --device nvidia --out OUTDIR

It runs both sweeps at their GPU defaults (every point verified), saves their results and
plots in OUTDIR, measures CuPy's device-to-device copy in the same process (through
pyclperf.reference.cuda: CUDA events around batches of back-to-back launches), and prints the
aligned copy's ratio to it. Figures go into benchmarks/RESULTS.md by hand, with the date.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("MPLBACKEND", "Agg")

import pyclperf
from pyclperf.reference import cuda as rc


def cuda_copy(ref: rc.CudaReference, nbytes: int) -> dict[str, Any]:
    """cupy.copyto of ``nbytes`` through pyclperf.reference.cuda: verified, and timed by CUDA
    events around batches of back-to-back launches (the host's launch gap stays out of it, as
    it does from pyclperf's event times). Bytes read + written."""
    prepared = ref.device_copy(nbytes, "copyto")
    if not prepared.verified:
        raise RuntimeError(f"CUDA reference copy produced a wrong result: {prepared.detail}")
    return prepared.measure(batches=7)


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
    same: dict[str, Any] | None
    big: dict[str, Any] | None
    try:
        ref = rc.CudaReference()
        same, big = cuda_copy(ref, offset_bytes), cuda_copy(ref, 1 << 30)
    except rc.CudaUnavailableError as exc:
        print(f"{exc}", file=sys.stderr)
        same = big = None
    if same is not None and big is not None:
        summary["cupy_d2d_same_size"] = same
        summary["cupy_d2d_1GiB"] = big
        print(f"\naligned offset copy (pyclperf, {offset_bytes >> 20} MiB/buffer): {aligned:.0f} GB/s")
        print(f"CuPy copy, same size: {same['gbps']:.0f} GB/s -> ratio {aligned / same['gbps']:.3f}")
        print(f"CuPy copy, 1 GiB:     {big['gbps']:.0f} GB/s -> ratio {aligned / big['gbps']:.3f}")
        print(f"CuPy timed by {big['how']}; pyclperf by OpenCL events")
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
