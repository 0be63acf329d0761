"""p2p: copies from one device to another of the same platform, over a size sweep, both ways.

What is measured is honest about the path. pyclperf's core Context holds one device, so an
OpenCL buffer of device A cannot be the source of a copy into device B's buffer: a real
peer-to-peer copy (clEnqueueCopyBuffer between devices of one multi-device context, which the
driver may route over NVLink/PCIe peer access) needs the core to create a context over several
devices with one queue per device. Until then the OpenCL rows are a copy *staged through the
host* (A -> pinned host memory -> B, both blocking), labelled ``path = "staged through host"``.
On NVIDIA with CuPy, CUDA's own peer copy (cudaMemcpyPeerAsync) is measured in the same run as
the reference, labelled ``path = "cuda peer"``. Every transfer is verified: random bytes in,
poisoned destination, the bytes that landed compared.

On a host with one device of the platform every point is ``skipped`` with the reason.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from .. import _core
from ..checks import random_bytes
from ..results import SKIPPED
from ..stats import KiB, MiB
from ..sweep import timed_row, verdict
from .base import Sweep
from ._transfer import sizes_up_to

STAGED = "staged through host"
CUDA_PEER = "cuda peer"
POISON = np.array([0xAD], np.uint8)


def peer_of(ctx: Any) -> Any:
    """Another device of ctx's platform (the next one, wrapping), or None."""
    from ..devices import list_devices

    mine = ctx.info
    same = [d for d in list_devices() if d.platform_index == mine.platform_index
            and d.device_index != mine.device_index]
    later = [d for d in same if d.device_index > mine.device_index]
    return (later or same or [None])[0]


class P2P(Sweep):
    id = "p2p"
    description = ("copies between two GPUs of one host, both ways, over a size sweep, every copy "
                   "verified, beside CUDA's peer copy where CuPy exists")
    order = 45
    title = "Device-to-device copies (OpenCL staged through the host; CUDA peer as reference)"
    x = "size_bytes"
    x_label = "copy size (bytes)"
    guide = "issue 13: GPU-to-GPU transfers"
    plot = {"kind": "modes", "group": "mode", "logx": True, "logy": True}
    size_arg, values_arg, local_size_arg = "max_bytes", "sizes", None

    def __init__(self, ctx: Any, sizes: Sequence[int] | None = None, max_bytes: int | None = None,
                 peer: Any = None, cuda: bool = True) -> None:
        super().__init__(ctx)
        from ..context import Context

        info = peer if peer is not None else peer_of(ctx)
        self.skip_reason = "" if info is not None else (
            f"p2p needs two devices of one platform; '{ctx.info.platform_name}' has only "
            f"'{ctx.info.name}' here")
        self.peer = Context(f"{info.platform_index}:{info.device_index}") if info is not None else None
        top = max_bytes if max_bytes is not None else (256 * MiB if ctx.info.is_gpu else 4 * MiB)
        self.sizes = [int(s) for s in (sizes or sizes_up_to(top, 4 * KiB))]
        if not self.sizes or min(self.sizes) <= 0:
            raise _core.InvalidArgumentError(f"{self.id}: sizes must be positive, got {self.sizes}")
        self.rng = np.random.default_rng()
        self._buffers: dict[str, Any] = {}
        self.cuda = self._cuda() if cuda and self.peer is not None else None

    def _cuda(self) -> Any:
        """The CUDA reference when both devices are NVIDIA's and CuPy sees two devices."""
        if "NVIDIA" not in self.ctx.info.platform_name.upper():
            return None
        from ..reference_cuda import CudaReference, CudaUnavailableError

        try:
            ref = CudaReference()
        except CudaUnavailableError:
            return None
        return ref if ref.cp.cuda.runtime.getDeviceCount() >= 2 else None

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "sizes": self.sizes, "skip_reason": self.skip_reason,
                "peer": self.peer.info.name if self.peer is not None else None,
                "core_limit": "single-device contexts: OpenCL rows are staged through the host"}

    def points(self) -> list[dict[str, Any]]:
        paths = [STAGED] + ([CUDA_PEER] if self.cuda is not None else [])
        return [{"mode": f"{path} {d}", "path": path, "direction": d, "size_bytes": n}
                for path in paths for d in ("A->B", "B->A") for n in self.sizes]

    def peak_kind(self, row: dict[str, Any]) -> str | None:
        return None

    def _ends(self, direction: str) -> tuple[Any, Any]:
        a, b = self.ctx, self.peer
        return (a, b) if direction == "A->B" else (b, a)

    def _buffer(self, ctx: Any, role: str) -> Any:
        key = f"{role}{id(ctx)}"
        if key not in self._buffers:
            self._buffers[key] = ctx.buffer(max(self.sizes))
        return self._buffers[key]

    def measure(self, point: dict[str, Any], *, warmup: int, repeats: int, method: str,
                verify: bool) -> dict[str, Any]:
        if self.peer is None:
            return {"status": SKIPPED, "error": self.skip_reason, "verified": False}
        n = int(point["size_bytes"])
        if point["path"] == CUDA_PEER:
            return self._cuda_peer(point["direction"], n)
        src_ctx, dst_ctx = self._ends(point["direction"])
        src, dst = self._buffer(src_ctx, "src"), self._buffer(dst_ctx, "dst")
        stage = self._stage(n)
        data = random_bytes(self.rng, n)

        def copy() -> None:
            src.read(stage[:n])
            dst.write(stage[:n])

        src.write(data)
        dst.fill(POISON)
        stage[:n] = 0
        times = []
        for i in range(warmup + repeats):
            t0 = time.perf_counter_ns()
            copy()
            if i >= warmup:
                times.append(time.perf_counter_ns() - t0)
        landed = np.empty(n, np.uint8)
        dst.read(landed)  # the last timed copy, checked: every transfer ended in the right bytes
        passed = bool(np.array_equal(landed, data))
        row = {"path": STAGED, **timed_row(np.asarray(times, np.float64), n, "host")}
        row.update(verdict(True, passed, "" if passed else
                           f"{int((landed != data).sum())} of {n} bytes differ after the copy"))
        return row

    def _stage(self, n: int) -> np.ndarray:
        if "stage" not in self._buffers:
            buf, view = self.ctx.pinned(max(self.sizes), np.uint8)
            self._buffers["stage"] = (buf, view)
        return self._buffers["stage"][1]

    def _cuda_peer(self, direction: str, n: int) -> dict[str, Any]:
        """cudaMemcpyPeerAsync between CUDA devices 0 and 1 (taken to be A and B: set
        CUDA_DEVICE_ORDER=PCI_BUS_ID so CUDA numbers devices as the OpenCL platform does)."""
        ref = self.cuda
        cp, rt = ref.cp, ref.cp.cuda.runtime
        s, d = (0, 1) if direction == "A->B" else (1, 0)
        data = random_bytes(self.rng, n)
        with cp.cuda.Device(s):
            src = cp.asarray(data)
        with cp.cuda.Device(d):
            dst = cp.full(n, 0xAD, dtype=cp.uint8)

        def launch() -> None:
            rt.memcpyPeerAsync(dst.data.ptr, d, src.data.ptr, s, n, ref.stream.ptr)

        launch()
        ref.stream.synchronize()
        passed = bool(np.array_equal(cp.asnumpy(dst), data))
        result = ref.timer(launch).measure(5).as_dict()
        ref.stream.synchronize()
        passed = passed and bool(np.array_equal(cp.asnumpy(dst), data))
        # Without peer access CUDA itself stages the copy through the host: say which it was.
        row = {"path": CUDA_PEER, "bytes": n, "method": "cuda events", **result,
               "peer_access": bool(rt.deviceCanAccessPeer(d, s))}
        row["gbps"] = n / row["median_ns"]
        row.update(verdict(True, passed, "" if passed else "peer copy differs"))
        return row
