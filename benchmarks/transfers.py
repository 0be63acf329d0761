"""GPU benchmark: host <-> device transfers and the best device copy, against CuPy (CUDA) in
the same process.

Run on the GPU machine after `pip install --no-build-isolation .`:

    python3 benchmarks/transfers.py --device nvidia --out transfers.json

pyclperf: pinned and pageable host-to-device and device-to-host at 256 MiB (direct
read/write, event-timed, every batch verified), enqueueCopyBuffer of 1 GiB, and the fastest
verified vector copy variant on 1 GiB buffers. CUDA (pyclperf.reference.cuda, through CuPy):
the same transfers through cudaMemcpyAsync and a 1 GiB device-to-device copy, each verified,
timed by CUDA events around batches of back-to-back launches so that the host's launch gap is
no part of the figure (as it is none of OpenCL's event times). pyclperf's figures are the median
of --batches batches of --repeats timed runs, CUDA's the per-launch median of --batches
batches; the spread of the batch figures (max / min - 1) says how far a ratio can be trusted.
Device copies count bytes read + written. benchmarks/honest_reference.py re-measures all the
ratios in alternating rounds.
CuPy uses CUDA device 0: on a machine with several GPUs, select the same one for both.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np

import pyclperf
from pyclperf.reference import cuda as rc
from pyclperf.measure.results import OK
from pyclperf.experiments._transfer import Mode, TransferRig
from pyclperf.experiments.vector import VectorWidth
from pyclperf.measure.sweep import package_versions

MiB = 1 << 20
HOST_MODES = [Mode(d, h) for h in ("pinned", "pageable") for d in ("h2d", "d2h")]


def figure_name(mode: Mode) -> str:
    return f"{mode.host_memory} {mode.direction}"


def batched(measure: Callable[[], tuple[float, bool]], nbytes: int, batches: int) -> dict[str, Any]:
    """Runs ``measure`` (one batch: its median ns and whether it verified) ``batches`` times."""
    medians, verified = [], True
    for _ in range(batches):
        median_ns, ok = measure()
        medians.append(median_ns)
        verified = verified and ok
    median = float(np.median(medians))
    return {
        "bytes": nbytes,
        "median_ns": median,
        "gbps": nbytes / median,
        "batch_gbps": [nbytes / m for m in medians],
        "spread_pct": 100.0 * (max(medians) / min(medians) - 1.0),
        "verified": verified,
    }


# --- pyclperf ----------------------------------------------------------------------------------

def pyclperf_figures(ctx: Any, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    timing = {"warmup": args.warmup, "repeats": args.repeats}
    figures: dict[str, dict[str, Any]] = {}
    rig = TransferRig(ctx, args.transfer_bytes, HOST_MODES)
    for mode in HOST_MODES:
        def one_batch(mode: Mode = mode) -> tuple[float, bool]:
            row = rig.measure(mode, args.transfer_bytes, **timing)
            return row["median_ns"], row["status"] == OK

        name = figure_name(mode)
        figures[name] = batched(one_batch, args.transfer_bytes, args.batches)
        print(f"  pyclperf {mode.name}: {figures[name]['gbps']:.1f} GB/s", flush=True)
    rig.release()

    copy_rig = TransferRig(ctx, args.copy_bytes, [Mode("d2d")])

    def copy_batch() -> tuple[float, bool]:
        row = copy_rig.measure(Mode("d2d"), args.copy_bytes, **timing)
        return row["median_ns"], row["status"] == OK

    figures["d2d copy"] = batched(copy_batch, 2 * args.copy_bytes, args.batches)
    copy_rig.release()
    print(f"  pyclperf enqueueCopyBuffer: {figures['d2d copy']['gbps']:.0f} GB/s", flush=True)

    # reference=False: the CUDA copy is measured below, by the same module.
    sweep = pyclperf.run("vector", ctx, size=args.copy_bytes, reference=False, **timing)
    best = sweep.meta.get("best_variant")
    if best is None:
        raise SystemExit(f"no vector copy variant verified: {sweep.meta.get('conclusion')}")
    vector = VectorWidth(ctx, nbytes=args.copy_bytes, variants=[best])
    point = vector.points()[0]

    def vector_batch() -> tuple[float, bool]:
        row = vector.measure(point, method="events", verify=True, **timing)
        return row["median_ns"], row["status"] == OK

    figures["best copy kernel"] = {**batched(vector_batch, 2 * args.copy_bytes, args.batches),
                                   "variant": best,
                                   "all_variants_gbps": {r["variant"]: r.get("gbps") for r in sweep.rows}}
    print(f"  pyclperf best copy ({best}): {figures['best copy kernel']['gbps']:.0f} GB/s", flush=True)
    return figures


# --- CUDA (CuPy), through pyclperf.reference.cuda ------------------------------------------

def cuda_reference_or_exit() -> rc.CudaReference:
    """The CUDA reference, or a clear message and exit status 2."""
    try:
        return rc.CudaReference()
    except rc.CudaUnavailableError as exc:
        print(f"{exc}; pass --skip-cupy for pyclperf's figures alone.", file=sys.stderr)
        raise SystemExit(2) from None


def reference_figure(prepared: rc.Prepared, batches: int) -> dict[str, Any]:
    """A reference timed by CUDA events around batches of back-to-back launches (so the host's
    launch gap stays out, as it does from pyclperf's event times), in this script's shape."""
    r = prepared.measure(batches)
    return {"bytes": r["bytes"], "median_ns": r["median_ns"], "gbps": r["gbps"],
            "batch_gbps": [r["bytes"] / ns for ns in r["batch_ns"]],
            "spread_pct": r["spread_pct"], "verified": r["verified"], "how": r["how"],
            "what": r["name"]}


def cupy_figures(ref: rc.CudaReference, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    figures = {}
    for mode in HOST_MODES:
        name = figure_name(mode)
        prepared = ref.transfer(mode.direction, args.transfer_bytes, mode.host_memory)
        figures[name] = reference_figure(prepared, args.batches)
        print(f"  CUDA {name}: {figures[name]['gbps']:.1f} GB/s", flush=True)
    figures["d2d copy"] = reference_figure(ref.device_copy(args.copy_bytes, "memcpy"), args.batches)
    figures["best copy kernel"] = figures["d2d copy"]  # CUDA's own copy is the reference for both
    print(f"  CUDA device copy: {figures['d2d copy']['gbps']:.0f} GB/s "
          f"({figures['d2d copy']['how']})", flush=True)
    return figures


# --- report ----------------------------------------------------------------------------------

def comparison(ours: dict[str, dict[str, Any]], cuda: dict[str, dict[str, Any]] | None,
               peak: pyclperf.device.peak.PeakBandwidth) -> list[dict[str, Any]]:
    rows = []
    for name, fig in ours.items():
        ceiling = peak.gbps("pcie" if name.endswith(("h2d", "d2h")) else "dram")
        ref = cuda.get(name) if cuda else None
        rows.append({
            "what": name + (f" ({fig['variant']})" if "variant" in fig else ""),
            "pyclperf_gbps": fig["gbps"],
            "cupy_gbps": ref["gbps"] if ref else None,
            "ratio": fig["gbps"] / ref["gbps"] if ref else None,
            "fraction_of_peak": fig["gbps"] / ceiling if ceiling else None,
            "spread_pct": fig["spread_pct"],
            "cupy_spread_pct": ref["spread_pct"] if ref else None,
            "cupy_how": ref.get("how") if ref else None,
            "verified": fig["verified"] and (ref["verified"] if ref else True),
        })
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    def f(v: Any, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    print(f"\n{'what':<32} {'pyclperf':>9} {'CuPy':>9} {'ratio':>6} {'of peak':>8} {'spread %':>13} ok")
    for r in rows:
        spread = f"{r['spread_pct']:.1f}/{f(r['cupy_spread_pct'], '.1f')}"
        print(f"{r['what']:<32} {r['pyclperf_gbps']:>9.1f} {f(r['cupy_gbps'], '9.1f'):>9} "
              f"{f(r['ratio'], '.3f'):>6} {f(r['fraction_of_peak'], '.1%'):>8} {spread:>13} "
              f"{'yes' if r['verified'] else 'NO'}")
    print("GB/s medians of batch figures; spread = max/min - 1 of the batch figures "
          "(pyclperf/CuPy); device copies count bytes read + written")
    print("pyclperf: OpenCL events, each command's own start/end; CuPy: "
          + (next((r["cupy_how"] for r in rows if r["cupy_how"]), None) or "not measured"))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="nvidia", help="pyclperf device spec (default: nvidia)")
    ap.add_argument("--out", required=True, help="JSON file for every figure")
    ap.add_argument("--transfer-mib", type=int, default=256)
    ap.add_argument("--copy-mib", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=20, help="timed runs per batch (default 20)")
    ap.add_argument("--batches", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--peak-gbps", type=float, default=None, help="DRAM ceiling instead of NVML's")
    ap.add_argument("--pcie-gbps", type=float, default=None, help="PCIe ceiling instead of NVML's")
    ap.add_argument("--skip-cupy", action="store_true", help="pyclperf's figures alone")
    args = ap.parse_args(argv)
    args.transfer_bytes, args.copy_bytes = args.transfer_mib * MiB, args.copy_mib * MiB
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    ref = None if args.skip_cupy else cuda_reference_or_exit()
    ctx = pyclperf.Context(args.device)
    peak = pyclperf.device.peak.theoretical(ctx, peak_gbps=args.peak_gbps, pcie_gbps=args.pcie_gbps)
    print(f"device: {ctx.info.name} | {ctx.info.platform_version} | driver {ctx.info.driver_version}")
    print(f"peak: DRAM {peak.dram_source}; PCIe {peak.pcie_source}", flush=True)
    ours = pyclperf_figures(ctx, args)
    cuda = cupy_figures(ref, args) if ref is not None else None
    rows = comparison(ours, cuda, peak)
    print_table(rows)
    record = {
        "device": ctx.summary(),
        "versions": {**package_versions(), "cupy": getattr(getattr(ref, "cp", None), "__version__", None)},
        "config": {k: v for k, v in vars(args).items() if k != "out"},
        "peak": peak.as_meta(),
        "pyclperf": ours,
        "cupy": cuda,
        "comparison": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1, default=str))
    print(f"wrote {out}")
    return 0 if all(r["verified"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
