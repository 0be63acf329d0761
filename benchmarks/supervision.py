"""What supervised execution does with kernels that would hurt an unsupervised sweep, on a real
device, and what it costs. Run on the GPU machine:

    python benchmarks/supervision.py --device nvidia

Scenarios (each a tune() call, then an ordinary sweep in the same process that must run normally):
1. one sweep whose configurations write 1,100, 16,384, 10^6 and 10^8 elements past a
   65,536-element array, and one that writes nothing past it;
2. myGEMM's transpose kernel (CNugteren/myGEMM, src/kernels.cl, MIT licence) tuned over tile
   shapes, some of which it cannot do;
3. a kernel that never ends, under timeout=3: the seconds until its row is 'timeout';
4. Ctrl-C (SIGINT) while that kernel runs: the seconds until tune() returns;
5. the cost of a fresh worker (process start, import, device context), as after a crash.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
import time
from typing import Any

import numpy as np
from pyclperf.tuner.options import from_flat

OVERRUN = """
__kernel void over(__global float* out, __global const float* a) {
    const int i = get_global_id(0);
    out[i + OFF] = a[i];
}"""

SPIN = """
__kernel void spin(__global float* out, const int n) {
    const int i = get_global_id(0);
    float x = 0.0f;
    while (n > 0) { x += 1.0f; if (x < 0.0f) break; }
    out[i] = x;
}"""

COPY = """
__kernel void copy(__global float* dst, __global const float* src) {
    const int i = get_global_id(0);
    dst[i] = src[i];
}"""

# myGEMM's transpose (CNugteren/myGEMM, src/kernels.cl, MIT licence), as that project writes it,
# its tile given by TRANSPOSEX/TRANSPOSEY (the project #defines them as 16 x 16 in settings.h).
TRANSPOSE = """
__kernel void transpose(const int P, const int Q,
                        const __global float* input,
                        __global float* output) {
    const int tx = get_local_id(0);
    const int ty = get_local_id(1);
    const int ID0 = get_group_id(0)*TRANSPOSEX + tx; // 0..P
    const int ID1 = get_group_id(1)*TRANSPOSEY + ty; // 0..Q
    __local float buffer[TRANSPOSEX][TRANSPOSEY];
    if (ID0 < P && ID1 < Q) {
        buffer[ty][tx] = input[ID1*P + ID0];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int newID0 = get_group_id(1)*TRANSPOSEY + tx;
    const int newID1 = get_group_id(0)*TRANSPOSEX + ty;
    if (newID0 < Q && newID1 < P) {
        output[newID1*Q + newID0] = buffer[tx][ty];
    }
}"""

FAST = dict(min_time=0.0, min_repeats=3, max_repeats=3, warmup=1, progress=False)


def _rows(res: Any, keys: list[str]) -> list[dict[str, Any]]:
    return [{**{k: r.get(k) for k in keys}, "status": r["status"], "error": r.get("error", "")[:300]}
            for r in res.rows]


def _normal_sweep_ok(ctx: Any) -> bool:
    import pyclperf

    x = np.random.default_rng().standard_normal(4096).astype(np.float32)
    res = pyclperf.tune(
        COPY,
        "copy",
        x.size,
        [np.empty_like(x), x],
        {"block_size_x": [64, 256]},
        **from_flat(dict(ctx=ctx, answer=[x, None], **FAST)),
    )
    return [r["status"] for r in res.rows] == ["ok", "ok"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="nvidia")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    import pyclperf
    from pyclperf.tuner import supervisor

    ctx = pyclperf.Context(args.device)
    out: dict[str, Any] = {"device": ctx.info.name, "driver": ctx.info.driver_version}
    n = 65536
    a = np.random.default_rng().standard_normal(n).astype(np.float32)

    t0 = time.perf_counter()
    res = pyclperf.tune(
        OVERRUN,
        "over",
        n,
        [np.empty_like(a), a],
        {"block_size_x": [64], "OFF": [0, 1100, 16384, 10**6, 10**8]},
        **from_flat(dict(ctx=ctx, verify=lambda c, outputs: True, **FAST)),
    )
    out["overrun"] = {"wall_s": time.perf_counter() - t0, "rows": _rows(res, ["OFF"]),
                      "next_sweep_ok": _normal_sweep_ok(ctx)}

    p, q = 2048, 1024
    m = np.random.default_rng().standard_normal((q, p)).astype(np.float32)
    tiles = [4, 8, 16, 32]
    t0 = time.perf_counter()
    res = pyclperf.tune(
        TRANSPOSE,
        "transpose",
        (p, q),
        [np.int32(p), np.int32(q), m, np.empty((p, q), np.float32)],
        {"TRANSPOSEX": tiles, "TRANSPOSEY": tiles},
        **from_flat(
            dict(
                ctx=ctx,
                block_size_names=["TRANSPOSEX", "TRANSPOSEY"],
                answer=[None, None, None, m.T.copy()],
                **FAST,
            )
        ),
    )
    out["transpose"] = {"wall_s": time.perf_counter() - t0,
                        "rows": _rows(res, ["TRANSPOSEX", "TRANSPOSEY"]),
                        "next_sweep_ok": _normal_sweep_ok(ctx)}

    t0 = time.perf_counter()
    res = pyclperf.tune(
        SPIN,
        "spin",
        64,
        [np.empty(64, np.float32), np.int32(1)],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, timeout=3, **FAST)),
    )
    out["timeout"] = {"limit_s": 3, "wall_s": time.perf_counter() - t0, "rows": _rows(res, []),
                      "next_sweep_ok": _normal_sweep_ok(ctx)}

    box: dict[str, float] = {}

    def interrupt() -> None:
        box["sent"] = time.perf_counter()
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(3.0, interrupt)
    timer.start()
    res = pyclperf.tune(
        SPIN,
        "spin",
        64,
        [np.empty(64, np.float32), np.int32(1)],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, **FAST)),
    )
    out["ctrl_c"] = {"returned_after_s": time.perf_counter() - box["sent"],
                     "interrupted": res.meta.get("interrupted"), "rows": len(res.rows),
                     "next_sweep_ok": _normal_sweep_ok(ctx)}

    spec = supervisor.device_spec(ctx)
    starts = []
    for _ in range(3):
        t0 = time.perf_counter()
        worker = supervisor.Worker(spec)
        worker.summary  # waits until the device is open there
        starts.append(time.perf_counter() - t0)
        worker.kill()
    out["fresh_worker_s"] = starts

    print(json.dumps(out, indent=1))
    print(f"\n{out['device']} (driver {out['driver']})")
    for r in out["overrun"]["rows"]:
        print(f"  OFF={r['OFF']}: {r['status']}: {r['error'][:160]}")
    statuses: dict[str, int] = {}
    for r in out["transpose"]["rows"]:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    print(f"  transpose tiles: {statuses}")
    for r in out["transpose"]["rows"]:
        if r["status"] not in ("ok",):
            print(f"    {r['TRANSPOSEX']}x{r['TRANSPOSEY']}: {r['status']}: {r['error'][:160]}")
    print(f"  spin, timeout=3: {out['timeout']['rows'][0]['status']} after {out['timeout']['wall_s']:.2f} s")
    print(f"  Ctrl-C: returned {out['ctrl_c']['returned_after_s']:.2f} s after SIGINT")
    print(f"  fresh worker: {', '.join(f'{s:.2f}' for s in starts)} s")
    print(f"  next sweep ok after each: {[out[k]['next_sweep_ok'] for k in ('overrun', 'transpose', 'timeout', 'ctrl_c')]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
