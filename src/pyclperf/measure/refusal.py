"""A launch the device declines for a resource it lacks, told apart from a launch that failed.

A kernel built for more registers or local memory than the device can give a work-group of the
size asked, or a group larger than the kernel's own limit, is refused at its enqueue:
clEnqueueNDRangeKernel answers CL_OUT_OF_RESOURCES (NVIDIA, for a 128-register build launched
with 1,024 work-items), CL_INVALID_WORK_GROUP_SIZE or CL_INVALID_WORK_ITEM_SIZE. That is the
device's answer about the point, not a fault of the harness or the kernel: the point is recorded
as skipped, with the reason, and counts as a finding where an experiment's claim is about it.

The same codes can also come from a context that an earlier fault has broken (NVIDIA reports a
kernel's illegal access on later calls). So a refusal stands only where a probe launch right
after it runs and writes what it should; where the probe fails too, the point stays a failure.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core

# The enqueue's answers that mean "not with these resources", by OpenCL status code.
REFUSAL_CODES = {-5: "CL_OUT_OF_RESOURCES", -54: "CL_INVALID_WORK_GROUP_SIZE",
                 -55: "CL_INVALID_WORK_ITEM_SIZE"}
ENQUEUE = "clEnqueueNDRangeKernel"

PROBE = """__kernel void refusal_probe(__global uint* out) {
    const uint i = get_global_id(0);
    out[i] = 3u * i + 1u;
}"""
PROBE_ITEMS = 64


def device_still_launches(ctx: Any) -> bool:
    """Whether a trivial kernel launches on ``ctx`` and writes what it should."""
    try:
        out = ctx.buffer(4 * PROBE_ITEMS)
        try:
            ctx.program(PROBE).kernel("refusal_probe").set_args(out).run(PROBE_ITEMS, None)
            got = np.empty(PROBE_ITEMS, np.uint32)
            out.read(got)
        finally:
            out.release()
    except _core.PyclperfError:
        return False
    return bool(np.array_equal(got, 3 * np.arange(PROBE_ITEMS, dtype=np.uint32) + 1))


def refusal(exc: BaseException, ctx: Any) -> str | None:
    """Why the device declined the launch that raised ``exc`` (the row's error), or None where
    ``exc`` is no such refusal: another call or code, or a context that no longer launches."""
    code = getattr(exc, "code", None)
    call = str(getattr(exc, "call", ""))
    if not isinstance(exc, _core.ClError) or code not in REFUSAL_CODES or call != ENQUEUE:
        return None
    if not device_still_launches(ctx):
        return None
    return (f"refused by the device: {ENQUEUE} answered {REFUSAL_CODES[code]}, the kernel as "
            "built needs more than the device gives a work-group of this size (registers, local "
            "memory or work-items); a probe launch right after ran, so this point alone was "
            "refused")


def refused_name(exc: BaseException) -> str:
    """The OpenCL status a refusal answered (the row's ``refused``)."""
    return REFUSAL_CODES.get(getattr(exc, "code", None), "")  # type: ignore[arg-type]


__all__ = ["REFUSAL_CODES", "device_still_launches", "refusal", "refused_name"]
