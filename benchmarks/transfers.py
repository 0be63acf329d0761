"""GPU benchmark: host <-> device transfers and the best device copy, against CuPy (CUDA) in
the same process.

Run on the GPU machine after `pip install --no-build-isolation .`:

    python3 benchmarks/transfers.py --device nvidia --out transfers.json

pyclperf: pinned and pageable host-to-device and device-to-host at 256 MiB (direct
read/write, event-timed, every batch verified), enqueueCopyBuffer of 1 GiB, and the fastest
verified vector copy variant on 1 GiB buffers. CuPy: the same transfers through
cudaMemcpyAsync timed by CUDA events, and a 1 GiB device-to-device copy. Every figure is the
median of --batches batches of --repeats timed runs; the spread of the batch medians
(max / min - 1) says how far a ratio can be trusted. Device copies count bytes read + written.
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
from pyclperf.checks import random_bytes
from pyclperf.results import OK
from pyclperf.experiments._transfer import Mode, TransferRig
from pyclperf.experiments.vector import VectorWidth
from pyclperf.sweep import package_versions

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

    sweep = pyclperf.run("vector", ctx, size=args.copy_bytes, **timing)
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


# --- CuPy (CUDA) -----------------------------------------------------------------------------

def cupy_or_exit() -> Any:
    """CuPy with a usable CUDA device, or a clear message and exit status 2."""
    try:
        import cupy as cp

        cp.cuda.runtime.getDeviceCount()
        return cp
    except ImportError:
        why = "CuPy is not installed (e.g. pip install cupy-cuda12x)"
    except Exception as exc:  # CUDARuntimeError and friends: no driver, no device
        why = f"CuPy cannot reach a CUDA device ({exc})"
    print(f"{why}, so the CUDA reference cannot be measured; pass --skip-cupy for pyclperf's "
          "figures alone.", file=sys.stderr)
    raise SystemExit(2)


def cupy_event_times(cp: Any, copy: Callable[[Any], None], warmup: int, repeats: int) -> np.ndarray:
    """ns per ``copy(stream)``, each bracketed by CUDA events on one non-blocking stream."""
    stream = cp.cuda.Stream(non_blocking=True)
    # The arrays were filled on the default stream, which a non-blocking stream does not wait
    # for: without this the copy can run before the poison lands and the check fails.
    cp.cuda.runtime.deviceSynchronize()
    for _ in range(warmup):
        copy(stream)
    stream.synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(repeats):
        start.record(stream)
        copy(stream)
        end.record(stream)
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) * 1e6)  # ms -> ns
    return np.asarray(times)


def cupy_transfer_batch(cp: Any, mode: Mode, nbytes: int, args: argparse.Namespace) -> tuple[float, bool]:
    import cupyx

    rt = cp.cuda.runtime
    device = cp.empty(nbytes, dtype=cp.uint8)
    if mode.host_memory == "pinned":
        host = cupyx.empty_pinned((nbytes,), dtype=np.uint8)  # page-locked, cudaHostAlloc
    else:
        host = np.empty(nbytes, np.uint8)
    data = random_bytes(np.random.default_rng(), nbytes)
    if mode.direction == "h2d":
        host[:] = data
        device.fill(0xAD)  # poison
        dst, src, kind = device.data.ptr, host.ctypes.data, rt.memcpyHostToDevice
    else:
        device.set(data)
        host[:] = 0xAD
        dst, src, kind = host.ctypes.data, device.data.ptr, rt.memcpyDeviceToHost
    times = cupy_event_times(cp, lambda s: rt.memcpyAsync(dst, src, nbytes, kind, s.ptr),
                             args.warmup, args.repeats)
    landed = device.get() if mode.direction == "h2d" else host
    return float(np.median(times)), bool(np.array_equal(landed, data))


def cupy_copy_batch(cp: Any, nbytes: int, args: argparse.Namespace) -> tuple[float, bool]:
    rt = cp.cuda.runtime
    src = cp.asarray(random_bytes(np.random.default_rng(), nbytes))
    dst = cp.full(nbytes, 0xAD, dtype=cp.uint8)
    times = cupy_event_times(
        cp, lambda s: rt.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes, rt.memcpyDeviceToDevice, s.ptr),
        args.warmup, args.repeats)
    return float(np.median(times)), bool(cp.array_equal(dst, src))


def cupy_figures(cp: Any, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    figures = {}
    for mode in HOST_MODES:
        name = figure_name(mode)
        figures[name] = batched(lambda m=mode: cupy_transfer_batch(cp, m, args.transfer_bytes, args),
                                args.transfer_bytes, args.batches)
        print(f"  CuPy {name}: {figures[name]['gbps']:.1f} GB/s", flush=True)
    figures["d2d copy"] = batched(lambda: cupy_copy_batch(cp, args.copy_bytes, args),
                                  2 * args.copy_bytes, args.batches)
    figures["best copy kernel"] = figures["d2d copy"]  # CUDA's own copy is the reference for both
    print(f"  CuPy device copy: {figures['d2d copy']['gbps']:.0f} GB/s", flush=True)
    return figures


# --- report ----------------------------------------------------------------------------------

def comparison(ours: dict[str, dict[str, Any]], cuda: dict[str, dict[str, Any]] | None,
               peak: pyclperf.peak.PeakBandwidth) -> list[dict[str, Any]]:
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
    print("GB/s medians of batch medians; spread = max/min - 1 of the batch medians "
          "(pyclperf/CuPy); device copies count bytes read + written")


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
    cp = None if args.skip_cupy else cupy_or_exit()
    ctx = pyclperf.Context(args.device)
    peak = pyclperf.peak.theoretical(ctx, peak_gbps=args.peak_gbps, pcie_gbps=args.pcie_gbps)
    print(f"device: {ctx.info.name} | {ctx.info.platform_version} | driver {ctx.info.driver_version}")
    print(f"peak: DRAM {peak.dram_source}; PCIe {peak.pcie_source}", flush=True)
    ours = pyclperf_figures(ctx, args)
    cuda = cupy_figures(cp, args) if cp is not None else None
    rows = comparison(ours, cuda, peak)
    print_table(rows)
    record = {
        "device": ctx.summary(),
        "versions": {**package_versions(), "cupy": getattr(cp, "__version__", None)},
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
