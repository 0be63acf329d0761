"""GPU benchmark: memory near the limit (Quasar 9.10). What the device lets one allocate, and what
it says past that.

Run on the GPU machine after `pip install --no-build-isolation .`:

    python3 benchmarks/memory_limit.py --device nvidia --out memory_limit.json

1. The largest single buffer: CL_DEVICE_MAX_MEM_ALLOC_SIZE itself, and one byte more (pyclperf
   refuses that with a DeviceMemoryError naming the limit). Each buffer is touched (a fill and a
   read of its last word), because a driver may only find out at first use that it cannot back it.
2. The total: buffers of ``--chunk`` MiB, each touched, until the device refuses one; the figure is
   how many bytes were live at once, beside CL_DEVICE_GLOBAL_MEM_SIZE, and the error is recorded
   as raised (type, code, message).
3. After releasing everything, the same total once more: if it fits again, nothing leaked.

Nothing here crashes on refusal: every failure is a pyclperf exception, written to the record.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

import pyclperf

MiB = 1 << 20


def touch(buf: Any) -> None:
    """Make the driver back the buffer: fill it, then read its last word back."""
    buf.fill(np.zeros(1, np.uint32))
    last = np.empty(1, np.uint32)
    buf.read(last, offset=buf.nbytes - 4)


def error_record(exc: BaseException) -> dict[str, Any]:
    return {"type": type(exc).__name__, "code": getattr(exc, "code", None),
            "name": getattr(exc, "name", None), "message": str(exc)}


def single(ctx: Any) -> dict[str, Any]:
    limit = ctx.info.max_alloc_bytes
    out: dict[str, Any] = {"max_alloc_bytes": limit}
    try:
        buf = ctx.buffer(limit)
        touch(buf)
        out["at_limit"] = "allocated and touched"
        buf.release()
    except pyclperf.PyclperfError as exc:
        out["at_limit"] = error_record(exc)
    try:
        ctx.buffer(limit + 1)
        out["past_limit"] = "allocated (not refused!)"
    except pyclperf.PyclperfError as exc:
        out["past_limit"] = error_record(exc)
    return out


def fill_up(ctx: Any, chunk: int, cap: int) -> tuple[int, dict[str, Any] | None, float]:
    """Allocate and touch ``chunk``-byte buffers until refused (or ``cap`` bytes are live); return
    the bytes that were live, the refusal and the seconds it took; release everything."""
    live: list[Any] = []
    refusal = None
    start = time.perf_counter()
    try:
        while len(live) * chunk < cap:
            try:
                buf = ctx.buffer(chunk)
                touch(buf)
            except pyclperf.PyclperfError as exc:
                refusal = error_record(exc)
                break
            live.append(buf)
        return len(live) * chunk, refusal, time.perf_counter() - start
    finally:
        for buf in live:
            buf.release()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="nvidia")
    ap.add_argument("--chunk", type=int, default=1024, help="MiB per buffer while filling up")
    ap.add_argument("--cap", type=int, default=None,
                    help="MiB to stop filling at (default: twice the device's global memory)")
    ap.add_argument("--single", action=argparse.BooleanOptionalAction, default=True,
                    help="also allocate one buffer of CL_DEVICE_MAX_MEM_ALLOC_SIZE")
    ap.add_argument("--out", default="memory_limit.json")
    args = ap.parse_args()
    ctx = pyclperf.Context(args.device)
    info = ctx.info
    print(f"device: {info.name} | {info.platform_version} | driver {info.driver_version}")
    chunk = min(args.chunk * MiB, info.max_alloc_bytes)
    # Stop somewhere even where the driver never refuses (a CPU device backed by swap).
    cap = args.cap * MiB if args.cap else 2 * info.global_mem_bytes
    record: dict[str, Any] = {"device": ctx.summary(), "global_mem_bytes": info.global_mem_bytes,
                              "chunk_bytes": chunk, "cap_bytes": cap,
                              "single": single(ctx) if args.single else "not asked"}
    total, refusal, seconds = fill_up(ctx, chunk, cap)
    record["total"] = {"live_bytes": total, "fraction_of_global": total / info.global_mem_bytes,
                       "refusal": refusal, "seconds": seconds}
    again, refusal2, _ = fill_up(ctx, chunk, cap)
    record["after_release"] = {"live_bytes": again, "refusal": refusal2,
                               "no_leak": again >= total}
    print(json.dumps(record, indent=2, default=str))
    Path(args.out).write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
