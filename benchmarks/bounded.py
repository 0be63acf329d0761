"""A user's mistake on a real device: what a far over-launched kernel and an allocation past the
worker's memory ceiling cost. Run on the GPU machine after `pip install --no-build-isolation .`:

    python benchmarks/bounded.py --device nvidia --json bounded.json

1. A float4 writer without a bounds check, launched over 10^7 and 10^8 work-items for a
   4,096-float array, through run_kernel() and tune(): the status and its message, the wall
   seconds, and the worker's peak resident memory (VmHWM) and data segment (VmData), polled from
   /proc. Target: ``out of bounds`` within 10 s, the worker under 2 GB.
2. The memory ceiling: the ceiling a worker gets by default here, and a sweep whose second
   configuration's argument callable allocates 3 GiB under ``memory_limit="2G"``: that row
   ``out of memory``, the others ``ok``.
3. After each, an ordinary verified sweep in the same process, under the default ceiling: it must
   run normally.

Every figure is printed; nothing here is asserted, so a surprise is recorded, not hidden.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

import pyclperf
from pyclperf.tuner import ceiling, worker_process
from pyclperf import Execution, Verify

WRITER = """__kernel void w4(__global float4* out) {
    out[get_global_id(0)] = (float4)(1.0f, 2.0f, 3.0f, 4.0f); }"""
TWICE = """__kernel void twice(__global float* y, __global const float* x, const int n) {
    const int i = get_global_id(0); if (i < n) y[i] = 2.0f * x[i]; }"""
ARRAY = 4096
GiB = 1 << 30


class WorkerMemory:
    """The largest VmHWM and VmData of any worker process while it runs (polled every 5 ms)."""

    def __init__(self) -> None:
        self.peak = {"VmHWM": 0, "VmData": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.wait(0.005):
            for w in list(worker_process._live):
                try:
                    with open(f"/proc/{w.process.pid}/status") as f:
                        for line in f:
                            key = line.split(":")[0]
                            if key in self.peak:
                                self.peak[key] = max(self.peak[key], int(line.split()[1]) * 1024)
                except (OSError, ValueError):
                    pass

    def __enter__(self) -> "WorkerMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def measured(call: Callable[[], Any]) -> dict[str, Any]:
    """Run ``call``; its outcome, wall seconds and the workers' peak memory."""
    t0 = time.monotonic()
    with WorkerMemory() as mem:
        try:
            outcome = call()
        except pyclperf.KernelRunError as exc:
            outcome = {"status": exc.status, "error": str(exc)}
    return {**outcome, "wall_s": time.monotonic() - t0,
            "worker_peak_rss_bytes": mem.peak["VmHWM"], "worker_peak_data_bytes": mem.peak["VmData"]}


def over_launch(device: str, items: int, how: str) -> dict[str, Any]:
    ctx = pyclperf.Context(device)
    out = np.zeros(ARRAY, np.float32)
    if how == "run_kernel":
        def call() -> dict[str, Any]:
            pyclperf.run_kernel(WRITER, "w4", items, [out], {"block_size_x": 64}, ctx=ctx)
            return {"status": "no error", "error": ""}
    else:
        def call() -> dict[str, Any]:
            res = pyclperf.tune(
                WRITER,
                "w4",
                items,
                [out],
                {"block_size_x": [64]},
                ctx=ctx,
                execution=Execution(progress=False),
            )
            return {"status": res.rows[0]["status"], "error": res.rows[0].get("error", "")}
    return {"items": items, "through": how, **measured(call)}


def ordinary_sweep(device: str, memory_limit: Any = None) -> bool:
    """A verified sweep that must run normally: every row ``ok``."""
    ctx = pyclperf.Context(device)
    n = 1 << 20
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    res = pyclperf.tune(
        TWICE,
        "twice",
        n,
        [np.zeros(n, np.float32), x, np.int32(n)],
        {"block_size_x": [64, 128, 256]},
        ctx=ctx,
        verify=Verify(answer=[2 * x, None, None]),
        execution=Execution(memory_limit=memory_limit, progress=False),
    )
    return all(r["status"] == "ok" for r in res.rows)


def ceiling_case(device: str) -> dict[str, Any]:
    ctx = pyclperf.Context(device)
    n = 1 << 16
    x = np.random.default_rng(2).standard_normal(n).astype(np.float32)

    def output(config: dict[str, Any]) -> np.ndarray:
        if config["GREEDY"] == 1:
            hog = np.ones(3 * GiB, np.uint8)  # past the 2 GiB ceiling
            hog[::4096] = 2
        return np.zeros(n, np.float32)

    def call() -> dict[str, Any]:
        res = pyclperf.tune(
            TWICE,
            "twice",
            n,
            [output, x, np.int32(n)],
            {"block_size_x": [64], "GREEDY": [0, 1, 2]},
            ctx=ctx,
            verify=Verify(answer=[2 * x, None, None]),
            execution=Execution(memory_limit="2G", progress=False),
        )
        return {"rows": [{"GREEDY": r["GREEDY"], "status": r["status"],
                          "error": r.get("error", "")} for r in res.rows]}

    return {"default_ceiling_bytes": ceiling.resolve(None),
            "available_bytes": ceiling.available_memory(), **measured(call)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="nvidia", help="a pyclperf device spec (default nvidia)")
    ap.add_argument("--json", default=None, metavar="FILE", help="also write the record here")
    args = ap.parse_args()
    ctx = pyclperf.Context(args.device)
    out: dict[str, Any] = {"device": ctx.info.name, "driver": ctx.info.driver_version,
                           "version": pyclperf.__version__, "over_launch": []}
    for items in (10**7, 10**8):
        for how in ("run_kernel", "tune"):
            case = over_launch(args.device, items, how)
            case["next_sweep_ok"] = ordinary_sweep(args.device)
            out["over_launch"].append(case)
    out["ceiling"] = ceiling_case(args.device)
    out["ceiling"]["next_sweep_ok"] = ordinary_sweep(args.device)
    out["ordinary_sweep_under_2G_ok"] = ordinary_sweep(args.device, "2G")
    print(json.dumps(out, indent=1))

    print(f"\n{out['device']} (driver {out['driver']}), pyclperf {out['version']}")
    for c in out["over_launch"]:
        met = (c["status"] == "out of bounds" and c["wall_s"] < 10
               and c["worker_peak_rss_bytes"] < 2 * GiB)
        print(f"  {c['items']:>9} work-items, {c['through']:<10}: {c['status']} in "
              f"{c['wall_s']:.2f} s, worker peak RSS {c['worker_peak_rss_bytes'] / GiB:.2f} GiB "
              f"(data {c['worker_peak_data_bytes'] / GiB:.2f} GiB); next sweep ok: "
              f"{c['next_sweep_ok']}; target met: {met}")
        print(f"      {c['error'][:200]}")
    cc = out["ceiling"]
    print(f"  default ceiling here: {cc['default_ceiling_bytes'] / GiB:.1f} GiB of "
          f"{(cc['available_bytes'] or 0) / GiB:.1f} GiB available")
    for r in cc.get("rows", []):
        print(f"  memory_limit=2G, GREEDY={r['GREEDY']}: {r['status']} {r['error'][:160]}")
    print(f"  worker peak RSS there {cc['worker_peak_rss_bytes'] / GiB:.2f} GiB; next sweep ok: "
          f"{cc['next_sweep_ok']}; an ordinary sweep under 2G ok: "
          f"{out['ordinary_sweep_under_2G_ok']}")
    if args.json:  # the record, beside what was printed
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
