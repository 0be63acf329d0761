"""GPU benchmark: every CUDA ratio RESULTS.md states, re-measured in one process
against the honest CUDA reference (pyclperf.reference.cuda).

Run on the GPU machine after `pip install --no-build-isolation .`:

    python3 benchmarks/honest_reference.py --device nvidia --json honest.json

pyclperf's figures are OpenCL event times, each command's own start and end. The CUDA figures
are CUDA events around a batch of back-to-back launches (one untimed launch queued ahead, each
batch calibrated to last ~20 ms), so neither side holds the host's launch gap. Each pair is
measured in alternating rounds (one pyclperf batch, one CUDA batch) so that clock and thermal
drift hit both alike: figures are medians over rounds, the ratio (pyclperf / CUDA speed) the
median of the per-round ratios with their range. Everything is verified; a row that fails says
so. Device copies count bytes read + written. The tiling figure comes from the `tiling`
experiment's own run (its cuBLAS line uses the same module). `--quick` shrinks every size (for
PoCL, where the CUDA side reports "skipped: CuPy not available").
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np

import pyclperf
from pyclperf.reference import cuda as rc
from pyclperf.measure.checks import compare, poison_device, random_bytes
from pyclperf.experiments._transfer import Mode, TransferRig
from pyclperf.experiments.vector import COPIES, VectorWidth
from pyclperf.measure.sweep import package_versions

MiB = 1 << 20
OPENCL_HOW = "OpenCL events (each command's own start/end), median of {r} launches per round"


@dataclass
class Side:
    """One side of a figure: what ran, a function timing one batch (seconds per operation)."""

    label: str
    sample: Callable[[], float]
    how: Callable[[int], str]  # rounds -> how it was timed
    amount: float  # bytes (or FLOP) per operation
    verified: bool
    detail: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    keep: Any = None  # what the timed launches use (buffers, arrays), alive as long as the side


def opencl_side(label: str, kernel: Any, global_size: int, local_size: int, amount: float,
                check: tuple[bool, str], repeats: int, config: dict[str, Any]) -> Side:
    def sample() -> float:
        return float(np.median(kernel.time(global_size, local_size, warmup=2, repeats=repeats))) / 1e9

    return Side(label, sample, lambda rounds: OPENCL_HOW.format(r=repeats), amount, *check,
                {**config, "global_size": global_size, "local_size": local_size})


def cuda_side(prepared: rc.Prepared) -> Side:
    amount = prepared.flops or prepared.nbytes
    return Side(prepared.name, prepared.timer.batch, prepared.timer.how, amount, prepared.verified,
                prepared.detail, prepared.config, keep=prepared)


def rounds_of(ours: Side, cuda: Side | None, rounds: int, unit: str) -> dict[str, Any]:
    """Alternating batches of both sides; speeds per round, and the per-round ratios."""
    scale = 1e-9  # bytes/s -> GB/s, FLOP/s -> GFLOP/s
    mine, theirs = [], []
    for _ in range(rounds):
        mine.append(ours.amount / ours.sample() * scale)
        if cuda is not None:
            theirs.append(cuda.amount / cuda.sample() * scale)
    out: dict[str, Any] = {"unit": unit, "pyclperf": describe(ours, mine, rounds)}
    if cuda is not None:
        ratios = [a / b for a, b in zip(mine, theirs)]
        out["cuda"] = describe(cuda, theirs, rounds)
        out["ratio"] = {"median": float(np.median(ratios)), "min": min(ratios), "max": max(ratios)}
    return out


def describe(side: Side, speeds: list[float], rounds: int) -> dict[str, Any]:
    return {"label": side.label, "value": float(np.median(speeds)), "rounds": speeds,
            "spread_pct": 100.0 * (max(speeds) / min(speeds) - 1.0), "how": side.how(rounds),
            "verified": side.verified, "detail": side.detail, "config": side.config}


# --- pyclperf's sides ---------------------------------------------------------------------

def transfer_side(ctx: Any, mode: Mode, nbytes: int, repeats: int) -> tuple[Side, Any]:
    rig = TransferRig(ctx, nbytes, [mode])
    row = rig.measure(mode, nbytes, warmup=2, repeats=repeats)  # verified on fresh random bytes
    what = {"h2d": "enqueueWriteBuffer", "d2h": "enqueueReadBuffer", "d2d": "enqueueCopyBuffer"}

    def sample() -> float:
        return float(np.median(rig.time(mode, nbytes, warmup=2, repeats=repeats))) / 1e9

    side = Side(f"{what[mode.direction]} ({mode.name})", sample,
                lambda rounds: OPENCL_HOW.format(r=repeats), mode.bytes_moved(nbytes),
                row["status"] == "ok", row.get("error", ""))
    return side, rig


def vector_best(ctx: Any, nbytes: int, repeats: int) -> tuple[Side, dict[str, Any]]:
    """The vector experiment's copies (1 GiB): its best variant, re-timed in rounds."""
    sweep = pyclperf.run("vector", ctx, size=nbytes, variants=[v.name for v in COPIES],
                         warmup=2, repeats=repeats, reference=False)  # compared below, in rounds
    best = sweep.meta.get("best_variant")
    if best is None:
        raise RuntimeError(f"no vector copy variant verified: {sweep.meta.get('conclusion')}")
    vector = VectorWidth(ctx, nbytes=nbytes, variants=[best], reference=False)
    v = vector.variants[0]
    row = vector.measure(vector.points()[0], warmup=1, repeats=2, method="events", verify=True)
    side = opencl_side(f"vector experiment's best copy ({best})", vector.kernel(v),
                       nbytes // v.item_bytes, vector.local_size, 2 * nbytes,
                       (row["status"] == "ok", row.get("error", "")), repeats, {"variant": best})
    return side, {r["variant"]: r.get("gbps") for r in sweep.rows}


def offset_copy_side(ctx: Any, nbytes: int, repeats: int) -> Side:
    """The coalescing experiment's aligned copy: offset 0, one float per work-item."""
    items = nbytes // 4
    src, dst = ctx.buffer(nbytes), ctx.buffer(nbytes)
    data = np.random.default_rng().integers(0, 2**32, size=items, dtype=np.uint32)
    src.write(data)
    poison_device(dst)
    kernel = ctx.program(file="copy.cl").kernel("offset_copy").set_args(dst, src, np.int32(0))
    kernel.run(items, 256)
    out = np.empty(items, np.uint32)
    dst.read(out)
    return opencl_side("offset_copy, offset 0 (coalescing experiment)", kernel, items, 256,
                       2 * nbytes, compare(out, data, "copied floats"), repeats, {"offset": 0})


def group_sizes(ctx: Any) -> list[int]:
    """Work-group sizes to try: up to the device's maximum (NVIDIA's per-kernel figure of 256
    is not a limit: the driver launches 1024)."""
    return [wg for wg in (128, 256, 512, 1024) if wg <= ctx.info.max_work_group_size]


def shapes(ctx: Any, count: int) -> list[tuple[int, int]]:
    """(global, local) launch shapes: a few work-groups per compute unit, or the whole grid."""
    cus = ctx.info.compute_units
    out = [(cus * per_cu * wg, wg) for wg in group_sizes(ctx) for per_cu in (4, 16, 64)]
    out += [(-(-count // wg) * wg, wg) for wg in group_sizes(ctx)]
    return out


def fastest(ctx: Any, kernel_for: Callable[[int], Any], count: int, repeats: int) -> tuple[int, int, dict[str, float]]:
    tried = {}
    for g, wg in shapes(ctx, count):
        k = kernel_for(wg)
        tried[f"{g}/{wg}"] = float(np.median(k.time(g, wg, warmup=2, repeats=repeats)))
    g, wg = (int(x) for x in min(tried, key=tried.__getitem__).split("/"))
    return g, wg, tried


def read_side(ctx: Any, nbytes: int, repeats: int) -> Side:
    """Read-only bandwidth: kernels/bandwidth.cl read_sum, fastest launch shape, verified."""
    data = np.random.default_rng().random(nbytes // 4, dtype=np.float32)  # [0, 1): |x| = x
    src, count = ctx.to_device(data), nbytes // 16
    most_groups = max(g // wg for g, wg in shapes(ctx, count))
    partial = ctx.buffer(4 * most_groups)
    programs = {wg: ctx.program(file="bandwidth.cl", defines={"WG": wg}) for wg in group_sizes(ctx)}

    def kernel_for(wg: int) -> Any:
        return programs[wg].kernel("read_sum").set_args(src, np.uint64(count), partial)

    g, wg, tried = fastest(ctx, kernel_for, count, repeats)
    kernel = kernel_for(wg)
    poison_device(partial)
    kernel.run(g, wg)
    sums = np.empty(g // wg, np.float32)
    partial.read(sums)
    got, want = float(sums.astype(np.float64).sum()), float(np.sum(data, dtype=np.float64))
    # Float32 sums of the float4s of each work-item, then the group's tree: |error| <= gamma * sum.
    tol = (4 * math.ceil(count / g) + 16) * 2.0 ** -24 * want
    ok = abs(got - want) <= tol
    detail = "" if ok else f"sum {got!r}, NumPy float64 {want!r}, tolerance {tol:.3g}"
    return opencl_side("read_sum (kernels/bandwidth.cl)", kernel, g, wg, nbytes, (ok, detail),
                       repeats, {"shapes_ns": tried})


def fill_side(ctx: Any, nbytes: int, repeats: int) -> Side:
    """Write-only bandwidth: kernels/bandwidth.cl fill, fastest launch shape, verified."""
    dst, count = ctx.buffer(nbytes), nbytes // 16
    value = np.float32(np.random.default_rng().uniform(1.0, 2.0))
    program = ctx.program(file="bandwidth.cl", defines={"WG": 256})

    def kernel_for(wg: int) -> Any:
        return program.kernel("fill").set_args(dst, value, np.uint64(count))

    g, wg, tried = fastest(ctx, kernel_for, count, repeats)
    kernel = kernel_for(wg)
    poison_device(dst)
    kernel.run(g, wg)
    out = np.empty(nbytes // 4, np.float32)
    dst.read(out)
    return opencl_side("fill (kernels/bandwidth.cl)", kernel, g, wg, nbytes,
                       compare(out, np.full_like(out, value), "filled floats"), repeats,
                       {"shapes_ns": tried, "value": float(value)})


def pinned_side(ctx: Any, direction: str, nbytes: int, repeats: int) -> Side:
    return transfer_side(ctx, Mode(direction, "pinned"), nbytes, repeats)[0]


def cuda_transfer(direction: str, nbytes: int) -> Callable[[rc.CudaReference], rc.Prepared]:
    return lambda c: c.transfer(direction, nbytes)


def cuda_copy(api: str, nbytes: int) -> Callable[[rc.CudaReference], rc.Prepared]:
    """CUDA's copy: "memcpy" (cudaMemcpyAsync), "copyto" (cupy.copyto) or "kernel" (float4)."""
    return lambda c: c.copy_kernel(nbytes) if api == "kernel" else c.device_copy(nbytes, api)


# --- the figures ----------------------------------------------------------------------------

def figure(name: str, unit: str, ours: Callable[[], Side],
           theirs: Callable[[rc.CudaReference], rc.Prepared], cuda: rc.CudaReference | None,
           skipped: str, rounds: int) -> dict[str, Any]:
    """One row: both sides set up (each verified), then timed in alternating rounds. A side that
    fails is recorded as failed with the reason, and the run goes on."""
    out: dict[str, Any] = {"figure": name, "unit": unit}
    try:
        mine = ours()
    except Exception as exc:  # noqa: BLE001 - one GPU run: record the failure, keep going
        return {**out, "error": f"pyclperf side failed: {type(exc).__name__}: {exc}"}
    other, missing = None, {"skipped": skipped}
    if cuda is not None:
        try:
            other = cuda_side(theirs(cuda))
        except Exception as exc:  # noqa: BLE001
            missing = {"failed": f"{type(exc).__name__}: {exc}"}
    try:
        out.update(rounds_of(mine, other, rounds, unit))
    except Exception as exc:  # noqa: BLE001 - e.g. BatchTooShortError from the CUDA side
        return {**out, "error": f"timing failed: {type(exc).__name__}: {exc}"}
    if other is None:
        out["cuda"] = missing
    print(f"  {cell(out, 'pyclperf')} | {cell(out, 'cuda')} | {ratio_cell(out)}   [{name}]", flush=True)
    return out


def tiling_figure(ctx: Any, n: int | None, repeats: int, cuda: rc.CudaReference | None,
                  skipped: str) -> dict[str, Any]:
    """The tiling experiment's fastest kernel against its cuBLAS line (reference_cuda)."""
    from pyclperf.experiments.tiling import REFERENCE

    res = pyclperf.run("tiling", ctx, size=n, warmup=2, repeats=repeats, reference=cuda is not None)
    ok = [r for r in res.rows if r.get("status") == "ok" and r["variant"] != REFERENCE]
    name = f"tiling: fastest kernel vs cuBLAS, n = {res.meta.get('size', n)}"
    out: dict[str, Any] = {"figure": name, "unit": "GFLOP/s", "conclusion": res.meta.get("conclusion")}
    if not ok:
        return {**out, "error": "no tiling variant verified"}
    best = max(ok, key=lambda r: r["gflops"])
    out["pyclperf"] = {"label": f"tiling.cl {best['variant']}", "value": best["gflops"],
                       "how": f"OpenCL events (each command's own start/end), median of {repeats} "
                              "launches, in the tiling experiment's run", "verified": True,
                       "spread_pct": best.get("spread_pct")}
    ref = next((r for r in res.rows if r["variant"] == REFERENCE), None)
    if ref is None:
        out["cuda"] = {"skipped": skipped or res.meta.get("reference")}
    elif not ref.get("gflops"):  # raised before timing: the row holds the status and error
        out["cuda"] = {"failed": f"{ref.get('status')}: {ref.get('error')}"}
    else:
        out["cuda"] = {"label": "cupy.matmul (cuBLAS)", "value": ref.get("gflops"), "how": ref.get("method"),
                       "verified": ref.get("status") == "ok", "detail": ref.get("error", ""),
                       "spread_pct": ref.get("spread_pct")}
        if ref.get("gflops"):
            out["ratio"] = {"median": best["gflops"] / ref["gflops"]}
    print(f"  {cell(out, 'pyclperf')} | {cell(out, 'cuda')} | {ratio_cell(out)}   [{name}]", flush=True)
    return out


def cell(row: dict[str, Any], side: str) -> str:
    s = row.get(side)
    if s is None:
        return row.get("error", "-") if side == "pyclperf" else "-"
    if "failed" in s:
        return f"**FAILED: {s['failed']}**"
    if "skipped" in s:
        return f"skipped: {s['skipped']}" if not str(s["skipped"]).startswith("skipped") else s["skipped"]
    text = f"{s['value']:.1f} {row['unit']} {s['label']}"
    if side == "cuda":
        text += f" ({s['how']})"
    return text + ("" if s.get("verified") else " **NOT VERIFIED: " + str(s.get("detail")) + "**")


def ratio_cell(row: dict[str, Any]) -> str:
    r = row.get("ratio")
    if r is None:
        return "-"
    if "min" in r:
        return f"{r['median']:.3f} ({r['min']:.3f}-{r['max']:.3f})"
    return f"{r['median']:.3f}"


def markdown(rows: list[dict[str, Any]], repeats: int, rounds: int) -> str:
    lines = ["| figure | pyclperf | CUDA reference (how timed) | ratio |", "| --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['figure']} | {cell(r, 'pyclperf')} | {cell(r, 'cuda')} | {ratio_cell(r)} |")
    lines.append(f"\npyclperf: {OPENCL_HOW.format(r=repeats)}; pairs in {rounds} alternating rounds, "
                 "ratio = pyclperf / CUDA speed, median of the per-round ratios (range); device "
                 "copies count bytes read + written.")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="nvidia", help="pyclperf device spec (default: nvidia)")
    ap.add_argument("--json", required=True, help="file for every figure, as JSON")
    ap.add_argument("--rounds", type=int, default=7, help="alternating rounds per pair (default 7)")
    ap.add_argument("--repeats", type=int, default=20, help="OpenCL launches per round (default 20)")
    ap.add_argument("--quick", action="store_true", help="small sizes (e.g. PoCL on a CPU)")
    ap.add_argument("--skip-cuda", action="store_true", help="pyclperf's figures alone")
    args = ap.parse_args(argv)
    big, transfer, offset, n = (1024, 256, 256, None) if not args.quick else (16, 4, 4, 64)
    args.copy_bytes, args.transfer_bytes, args.offset_bytes = big * MiB, transfer * MiB, offset * MiB
    args.tiling_n = n
    if args.quick:
        args.rounds, args.repeats = min(args.rounds, 3), min(args.repeats, 5)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    began = time.monotonic()
    ctx = pyclperf.Context(args.device)
    print(f"device: {ctx.info.name} | {ctx.info.platform_version} | driver {ctx.info.driver_version}")
    cuda, skipped = None, "skipped: --skip-cuda"
    if not args.skip_cuda:
        try:
            cuda = rc.CudaReference()
            skipped = ""
        except rc.CudaUnavailableError as exc:
            skipped = f"skipped: {exc}"
    print(f"CUDA reference: {'CuPy, CUDA device 0' if cuda else skipped}", flush=True)
    R, rep, big = args.rounds, args.repeats, args.copy_bytes
    mib = lambda n: f"{n // MiB} MiB"  # noqa: E731
    rows = []
    for d in ("h2d", "d2h"):
        rows.append(figure(f"pinned {d.upper()}, {mib(args.transfer_bytes)}", "GB/s",
                           partial(pinned_side, ctx, d, args.transfer_bytes, rep),
                           cuda_transfer(d, args.transfer_bytes), cuda, skipped, R))
    rows.append(figure(f"device copy, enqueueCopyBuffer, {mib(big)}", "GB/s",
                       lambda: transfer_side(ctx, Mode("d2d"), big, rep)[0],
                       cuda_copy("memcpy", big), cuda, skipped, R))
    best: dict[str, Any] = {}

    def best_copy() -> Side:
        if "side" not in best:
            best["side"], best["variants_gbps"] = vector_best(ctx, big, rep)
        return best["side"]  # type: ignore[no-any-return]

    for what, api in (("cudaMemcpyAsync", "memcpy"), ("the CUDA float4 copy kernel", "kernel"),
                      ("cupy.copyto", "copyto")):
        rows.append(figure(f"best copy kernel (vector experiment's best), {mib(big)}, vs {what}",
                           "GB/s", best_copy, cuda_copy(api, big), cuda, skipped, R))
    rows.append(figure(f"coalescing: aligned copy (offset 0), {mib(args.offset_bytes)}", "GB/s",
                       lambda: offset_copy_side(ctx, args.offset_bytes, rep),
                       cuda_copy("copyto", args.offset_bytes), cuda, skipped, R))
    rows.append(figure(f"read-only, {mib(big)}", "GB/s", lambda: read_side(ctx, big, rep),
                       lambda c: c.read_kernel(big), cuda, skipped, R))
    rows.append(figure(f"write-only (fill), {mib(big)}", "GB/s", lambda: fill_side(ctx, big, rep),
                       lambda c: c.fill_kernel(big), cuda, skipped, R))
    rows.append(tiling_figure(ctx, args.tiling_n, rep, cuda, skipped))
    record = {"device": ctx.summary(),
              "versions": {**package_versions(), "cupy": getattr(getattr(cuda, "cp", None), "__version__", None)},
              "config": {k: v for k, v in vars(args).items() if k != "json"},
              "policy": asdict(cuda.policy if cuda else rc.BatchPolicy()),
              "vector_variants_gbps": best.get("variants_gbps"), "figures": rows,
              "seconds": time.monotonic() - began}
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1, default=str))
    print(f"wrote {out} ({record['seconds']:.0f} s in all)\n")
    print(markdown(rows, rep, R))
    bad = [r["figure"] for r in rows if "error" in r or "failed" in r.get("cuda", {}) or any(
        isinstance(r.get(s), dict) and "value" in r[s] and not r[s].get("verified") for s in ("pyclperf", "cuda"))]
    if bad:
        print(f"\nfailed or unverified: {bad}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
