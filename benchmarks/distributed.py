"""What Dask costs and what it buys for tune().

    python benchmarks/distributed.py overhead [--configs 500] [--repeats 3]  # any host; PoCL
    python benchmarks/distributed.py scaling [--devices 0:0 0:1] # a host with two GPUs

``overhead``: the same job of trivial configurations tuned in this process and on a local Dask
cluster of one worker on the same device; the difference per configuration is what scheduling,
shipping rows back and the client's bookkeeping cost (target: under 5 ms). Each side runs
``--repeats`` times, the two alternating so a changing load on the host hits both alike, and the
medians are compared. Builds are the same in both: each side runs the job once untimed first,
so both contexts (this process's and the worker's) hold every program and the timed passes
build nothing. The difference can come out below zero: the client's bookkeeping then overlaps
the worker's measuring, in another process. So beside it, a bound that needs no in-process run:
the Dask run's wall time less the time the worker spent in its chunks, per configuration (all
that was not measuring: tune()'s own setup, Dask's scheduling, the first and last round trips).
And Dask's own floor on this host: no-op tasks driven one per configuration (as tune() did
before it sent chunks), which is why tasks carry chunks; a loaded host raises it.

``scaling``: a verified tuning job of 48 configurations on one GPU and on two, each on a warm
cluster (started, contexts opened and the job run once untimed before the clock runs, so both
timed passes find every program built, and every worker holding the job, so neither ships its
arrays again), in the same run; throughput is configurations per second (target: two GPUs at
least 1.8x one). Each pass's ``dask`` line says how many tasks it took and whether the job was
shipped. Shipping is left out on purpose: it is paid once per job per worker, not per
configuration (a 16M-element job took about 3 s to reach two workers on a loaded 2-core host).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any
from pyclperf.tuner.options import from_flat

# This file is named distributed.py: run as a script, its folder comes first on sys.path and
# would shadow Dask's 'distributed' package. Take the folder off before anything imports it.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]

import numpy as np  # noqa: E402

from pyclperf import Context, tune  # noqa: E402
from pyclperf.tuner import remote  # noqa: E402
from pyclperf.tuner.distributed import Fleet  # noqa: E402

TRIVIAL = """__kernel void k(__global int* out) { out[get_global_id(0)] = K; }"""

# A tiled 1-D stencil: enough work per configuration that the GPU, not the scheduling, sets the
# pace, and an answer to verify every configuration against.
STENCIL = """__kernel void stencil(__global float* y, __global const float* x, const int n) {
    const int base = get_global_id(0) * WPT;
#if UNROLL == 1
    #pragma unroll 1
#elif UNROLL == 2
    #pragma unroll 2
#else
    #pragma unroll 4
#endif
    for (int w = 0; w < WPT; ++w) {
        const int i = base + w;
        if (i >= 2 && i < n - 2)
            y[i] = 0.1f * x[i - 2] + 0.2f * x[i - 1] + 0.4f * x[i] + 0.2f * x[i + 1] + 0.1f * x[i + 2];
        else if (i < n) y[i] = x[i];
    }
}"""


def _trivial_job(n: int) -> dict[str, Any]:
    return dict(source=TRIVIAL, kernel_name="k", problem_size=64,
                args=[np.zeros(64, np.int32)], params={"K": list(range(n)), "block_size_x": [64]},
                min_time=0.0, min_repeats=1, max_repeats=1, warmup=0, progress=False)


def overhead(configs: int, device: str, repeats: int) -> dict[str, Any]:
    ctx = Context(device)
    spec = f"{ctx.info.platform_index}:{ctx.info.device_index}"
    fleet = Fleet.local([spec])
    plain_s, dask_s, idle_s, tasks = [], [], [], []
    try:
        # The same warm-up on both sides: each context then holds every program, so what
        # differs below is the scheduling alone.
        tune(**from_flat(dict(**_trivial_job(configs), ctx=ctx)))
        tune(**from_flat(dict(**_trivial_job(configs), client=fleet.client)))
        for _ in range(repeats):
            t0 = time.perf_counter()
            plain = tune(**from_flat(dict(**_trivial_job(configs), ctx=ctx)))
            plain_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            dist = tune(**from_flat(dict(**_trivial_job(configs), client=fleet.client)))
            dask_s.append(time.perf_counter() - t0)
            idle_s.append(dask_s[-1] - dist.meta["dask"]["worker_s"])
            tasks.append(dist.meta["dask"]["tasks"])
            assert len(plain.rows) == len(dist.rows) == configs
        floor = _bare_dask_ms(fleet.client, configs)
    finally:
        fleet.close()
    t_plain, t_dask = statistics.median(plain_s), statistics.median(dask_s)
    return {"device": ctx.info.name, "configs": configs, "repeats": repeats,
            "plain_s": plain_s, "dask_s": dask_s, "dask_tasks": tasks,
            "overhead_ms_per_config": 1e3 * (t_dask - t_plain) / configs, "target_ms": 5.0,
            "dask_not_measuring_ms_per_config": 1e3 * statistics.median(idle_s) / configs,
            "bare_dask_ms_per_noop_task": floor}


def _noop(i: int) -> dict[str, int]:
    return {"i": i}


def _bare_dask_ms(client: Any, n: int) -> float:
    """Dask's own floor on this host: no-op tasks submitted as tune() submitted configurations
    before chunks (one task each, same resource, as many in flight, a new one as each
    completes), in ms per task."""
    from distributed import as_completed

    from pyclperf.tuner.distributed import AHEAD_PER_WORKER, RESOURCE

    t0 = time.perf_counter()
    pending, sent = as_completed(), 0
    for _ in range(AHEAD_PER_WORKER):
        pending.add(client.submit(_noop, sent, pure=False, resources={RESOURCE: 1}))
        sent += 1
    for future in pending:
        future.result()
        if sent < n:
            pending.add(client.submit(_noop, sent, pure=False, resources={RESOURCE: 1}))
            sent += 1
    return 1e3 * (time.perf_counter() - t0) / n


def _stencil_job(n: int) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(np.float32)
    y = x.copy()
    y[2:-2] = (np.float32(0.1) * x[:-4] + np.float32(0.2) * x[1:-3] + np.float32(0.4) * x[2:-2]
               + np.float32(0.2) * x[3:-1] + np.float32(0.1) * x[4:])
    params = {"block_size_x": [64, 128, 256, 512], "WPT": [1, 2, 4, 8], "UNROLL": [1, 2, 4]}
    return dict(source=STENCIL, kernel_name="stencil", problem_size=n,
                grid_div_x=["block_size_x", "WPT"], args=[np.zeros(n, np.float32), x, n],
                params=params, answer=[y, None, None], rtol=1e-4, atol=1e-5, progress=False)


def scaling(devices: list[str], n: int) -> dict[str, Any]:
    out: dict[str, Any] = {"devices": devices}
    for label, specs in (("one", devices[:1]), ("all", devices)):
        fleet = Fleet.local(specs)
        try:
            fleet.client.run(remote.dask_setup)  # every worker's context open
            # An untimed pass first, on each fleet: the driver's on-disk build cache would
            # otherwise favour whichever fleet runs second.
            tune(**from_flat(dict(**_stencil_job(n), client=fleet.client)))
            t0 = time.perf_counter()
            res = tune(**from_flat(dict(**_stencil_job(n), client=fleet.client)))
            seconds = time.perf_counter() - t0
        finally:
            fleet.close()
        statuses = sorted({r["status"] for r in res.rows})
        out[label] = {"workers": len(specs), "configs": len(res.rows), "seconds": seconds,
                      "dask": res.meta["dask"],
                      "configs_per_s": len(res.rows) / seconds, "statuses": statuses,
                      "rows_per_device": {d: sum(r.get("device") == d for r in res.rows)
                                          for d in sorted({r.get("device") for r in res.rows})}}
    out["speedup"] = out["all"]["configs_per_s"] / out["one"]["configs_per_s"]
    out["target"] = 1.8
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    o = sub.add_parser("overhead")
    o.add_argument("--configs", type=int, default=500)
    o.add_argument("--device", default=None)
    o.add_argument("--repeats", type=int, default=3)
    s = sub.add_parser("scaling")
    s.add_argument("--devices", nargs="+", default=["0:0", "0:1"])
    s.add_argument("--n", type=int, default=1 << 24)
    a = ap.parse_args()
    result = (overhead(a.configs, a.device, a.repeats) if a.what == "overhead"
              else scaling(a.devices, a.n))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
