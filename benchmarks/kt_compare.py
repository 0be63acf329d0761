"""The same tuning job through Kernel Tuner and through pyclperf.tune, each in its own process.

Job: a float4 copy of 256 MiB, block_size_x 32..1024 x ELEMS 1..8 (24 configurations), 20
iterations each, the answer checked. Reports per tool: configurations run and verified, the best
time, and wall time per verified configuration (the whole tuning call, builds and checks
included). pyclperf runs twice per process: supervised (its default: the kernel in a worker
process) as the first call of the process (the worker starts during it) and as the second (the
worker is warm), and in its own process with isolate=False (the unprotected path). Run on the
GPU machine:

    python benchmarks/kt_compare.py --device nvidia --json kt.json

Kernel Tuner runs through PyOpenCL, whose wheel bundles its own ICD loader: give it a vendors
directory naming NVIDIA's library (--vendors DIR, made here if missing).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from pyclperf import Execution, Launch, Timing, Verify

SOURCE = """
__kernel void copy4(__global float4* dst, __global const float4* src) {
    const size_t base = get_group_id(0) * (size_t)(block_size_x * ELEMS) + get_local_id(0);
    for (int k = 0; k < ELEMS; ++k)
        dst[base + k * block_size_x] = src[base + k * block_size_x];
}
"""
PARAMS = {"block_size_x": [32, 64, 128, 256, 512, 1024], "ELEMS": [1, 2, 4, 8]}
GRID_DIV = ["block_size_x", "ELEMS"]


def _arrays(nbytes: int) -> tuple[np.ndarray, np.ndarray]:
    src = np.random.default_rng(7).standard_normal(nbytes // 4).astype(np.float32)
    return np.zeros_like(src), src


def run_kernel_tuner(nbytes: int, iterations: int) -> dict[str, Any]:
    import kernel_tuner

    dst, src = _arrays(nbytes)
    start = time.perf_counter()
    results, env = kernel_tuner.tune_kernel(
        "copy4", SOURCE, src.size // 4, [dst, src], PARAMS, grid_div_x=GRID_DIV,
        answer=[src, None], iterations=iterations, lang="OpenCL", quiet=True)
    wall = time.perf_counter() - start
    ran = [r for r in results if isinstance(r.get("time"), (int, float))]
    best = min(ran, key=lambda r: r["time"])
    return {"tool": f"Kernel Tuner {kernel_tuner.__version__}", "device": env.get("device_name"),
            "configs": len(results), "verified": len(ran), "wall_s": wall,
            "best_ms": best["time"], "best": {k: best[k] for k in PARAMS},
            "ran": sorted((r["block_size_x"], r["ELEMS"]) for r in ran)}


def _pyclperf_once(ctx: Any, nbytes: int, iterations: int, isolate: bool, label: str
                   ) -> dict[str, Any]:
    import pyclperf

    dst, src = _arrays(nbytes)
    start = time.perf_counter()
    res = pyclperf.tune(
        SOURCE,
        "copy4",
        src.size // 4,
        [dst, src],
        PARAMS,
        ctx=ctx,
        launch=Launch(grid_div_x=GRID_DIV),
        verify=Verify(answer=[src, None]),
        timing=Timing(iterations=iterations, min_time=0.0, max_repeats=iterations),
        execution=Execution(progress=False, isolate=isolate),
    )
    wall = time.perf_counter() - start
    ok = [r for r in res.rows if r["status"] == "ok"]
    best = res.best()
    return {"tool": f"pyclperf {pyclperf.__version__} {label}", "device": ctx.info.name,
            "configs": len(res.rows), "verified": len(ok), "wall_s": wall,
            "best_ms": best["time_ms"], "best": {k: best[k] for k in PARAMS},
            "ran": sorted((r["block_size_x"], r["ELEMS"]) for r in ok),
            "statuses": sorted({r["status"] for r in res.rows}),
            "kernel_work_group_size": sorted({r.get("kernel_work_group_size") for r in ok})}


def run_pyclperf(nbytes: int, iterations: int, device: str, isolate: bool) -> list[dict[str, Any]]:
    """Supervised: the process's first call (the worker starts in it) and its second (warm);
    in-process: one call."""
    import pyclperf

    ctx = pyclperf.Context(device)
    if not isolate:
        return [_pyclperf_once(ctx, nbytes, iterations, False, "in-process")]
    return [_pyclperf_once(ctx, nbytes, iterations, True, "supervised, first call"),
            _pyclperf_once(ctx, nbytes, iterations, True, "supervised, warm worker")]


def _vendors(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for lib in ("/usr/lib/libnvidia-opencl.so", "/usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1"):
        if os.path.exists(lib):
            (path / "nvidia.icd").write_text(lib + "\n")
            break
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="nvidia")
    ap.add_argument("--mib", type=int, default=256, help="bytes copied per launch, MiB")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--tool", choices=["both", "kt", "pyclperf", "pyclperf-inprocess"],
                    default="both")
    ap.add_argument("--vendors", default="/tmp/kt-vendors")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of the tools, alternating")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    nbytes = args.mib << 20
    if args.tool == "kt":
        print(json.dumps(run_kernel_tuner(nbytes, args.iterations)))
        return 0
    if args.tool in ("pyclperf", "pyclperf-inprocess"):
        print(json.dumps(run_pyclperf(nbytes, args.iterations, args.device,
                                      args.tool == "pyclperf")))
        return 0
    out: dict[str, list[dict[str, Any]]] = {}
    # Each tool once a round, alternating.
    for tool in ("kt", "pyclperf", "pyclperf-inprocess") * args.rounds:
        env = dict(os.environ)
        if tool == "kt":
            env["OCL_ICD_VENDORS"] = str(_vendors(Path(args.vendors)))
        cmd = [sys.executable, __file__, "--tool", tool, "--device", args.device,
               "--mib", str(args.mib), "--iterations", str(args.iterations)]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stdout[-2000:], done.stderr[-4000:], file=sys.stderr)
            out.setdefault(tool, []).append({"error": done.stderr[-2000:]})
            continue
        got = json.loads(done.stdout.strip().splitlines()[-1])
        for r in got if isinstance(got, list) else [got]:
            key = tool if tool == "kt" else ("pyclperf-warm" if "warm" in r["tool"] else tool)
            out.setdefault(key, []).append(r)
    print("| run | tool | configs | verified | best ms | wall s | wall s / verified config |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for tool, runs in out.items():
        for i, r in enumerate(runs):
            if "error" in r:
                print(f"| {i + 1} | {tool} | error | | | | |")
                continue
            print(f"| {i + 1} | {r['tool']} | {r['configs']} | {r['verified']} | {r['best_ms']:.4f} "
                  f"| {r['wall_s']:.1f} | {r['wall_s'] / max(r['verified'], 1):.3f} |")
    good = {t: [r for r in runs if "error" not in r] for t, runs in out.items()}
    if good.get("kt") and good.get("pyclperf"):
        kt, pc = good["kt"], good["pyclperf"]
        best_kt = min(r["best_ms"] for r in kt)
        best_pc = min(r["best_ms"] for r in pc)
        per_kt = min(r["wall_s"] / r["verified"] for r in kt)
        per_pc = max(r["wall_s"] / r["verified"] for r in pc)
        missing = sorted(set(map(tuple, kt[0]["ran"])) - set(map(tuple, pc[0]["ran"])))
        print(f"best time pyclperf / Kernel Tuner: {best_pc / best_kt:.4f}; wall per verified "
              f"configuration (pyclperf supervised, first call, slowest run / Kernel Tuner's "
              f"fastest): {per_pc / per_kt:.3f}; configurations Kernel Tuner ran that pyclperf "
              f"did not: {missing or 'none'}")
    if good.get("pyclperf") and good.get("pyclperf-inprocess"):
        inproc = [r["wall_s"] for r in good["pyclperf-inprocess"]]
        for key in ("pyclperf", "pyclperf-warm"):
            walls = [r["wall_s"] for r in good.get(key, [])]
            if walls:
                print(f"supervision cost, {key} / in-process wall: median "
                      f"{float(np.median(walls)) / float(np.median(inproc)):.3f}, slowest / "
                      f"fastest {max(walls) / min(inproc):.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
