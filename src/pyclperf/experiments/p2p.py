"""p2p: copies from one device to another of the same platform, over a size sweep, both ways.

Four paths, every transfer verified (random bytes in, the destination poisoned first, the bytes
that landed compared):

- ``opencl copy``: clEnqueueCopyBuffer on the destination's queue between two buffers of one
  context over both devices (the core's PeerPair), the source rewritten on the source device
  before each repeat so that no replica of it on the destination can serve the copy;
- ``opencl migrate``: clEnqueueMigrateMemObjects of the source to the destination device: the
  move a runtime makes implicitly before the two paths above, asked for explicitly;
- ``opencl kernel``: a grid-stride copy kernel (kernels/p2p.cl) run on the destination device,
  reading the buffer whose contents live on the source device;
- ``staged through host``: the same bytes read from A into pinned host memory and written to B,
  with two single-device contexts: what a program without a shared context can do;
- ``cuda peer``: on NVIDIA with CuPy, cudaMemcpyPeerAsync with peer access enabled where the
  devices allow it, timed by the honest CUDA reference in the same run: the ratio to beat.

How a runtime moves a buffer between the devices of one context is its own business (a peer
copy over NVLink or PCIe, or a trip through the host); the figures say what it chose. The shared
context's rows are timed by the host clock from enqueue to completion, since a runtime may move
the source before the command's start timestamp; the event's figure is kept beside it
(``event_gbps``). Where an OpenCL path beats CUDA's peer copy by more than a fifth, the conclusion
says that the link cannot explain it. On a host with one device of the platform every point is
``skipped`` with the reason.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from .. import _core
from ..measure.checks import random_bytes
from ..measure.poison import poison_element
from ..measure.results import OK, SKIPPED, Results
from ..device.sources import kernel_source
from ..measure.stats import KiB, MiB
from ..measure.sweep import timed_row, verdict
from ._transfer import sizes_up_to
from .base import Sweep, noise_note
from .claims import Claim, Figure, largest, ratio

COPY = "opencl copy"
KERNEL = "opencl kernel"
MIGRATE = "opencl migrate"
STAGED = "staged through host"
CUDA_PEER = "cuda peer"
# The destination's poison before each copy: measure.poison's byte, the one every byte-wide
# output is poisoned with.
POISON = int(poison_element(np.dtype(np.uint8))[0])
WORD = 16  # bytes per uint4 of the copy kernel
KERNEL_LOCAL = 256
GROUPS_PER_CU = 8  # enough resident work-groups to keep the copy's loads in flight
SUSPECT = 1.2  # an OpenCL path this much faster than CUDA's peer copy did not cross the link


def peer_of(ctx: Any) -> Any:
    """Another device of ctx's platform (the next one, wrapping), or None."""
    from ..device.devices import list_devices

    mine = ctx.info
    same = [d for d in list_devices() if d.platform_index == mine.platform_index
            and d.device_index != mine.device_index]
    later = [d for d in same if d.device_index > mine.device_index]
    return (later or same or [None])[0]


def copy_over_staged(results: Results) -> Figure:
    """The shared context's copy over staging through the host, A to B, at the largest size."""
    top = largest(results, "size_bytes", path=COPY, direction="A->B")
    return ratio(results, "gbps", {"path": COPY, "direction": "A->B", "size_bytes": top},
                 {"path": STAGED, "direction": "A->B", "size_bytes": top})


class P2P(Sweep):
    id = "p2p"
    quiet = True  # transfers between devices over the host's bus
    description = ("copies between two GPUs of one host, both ways, over a size sweep, every copy "
                   "verified, beside CUDA's peer copy where CuPy exists")
    order = 45
    # The guide runs it in a process of its own: opens every device's context and copies between
    # them.
    isolate = True
    title = "Device-to-device copies: one shared context, through the host, and CUDA's peer copy"
    x = "size_bytes"
    x_label = "copy size (bytes)"
    guide = "GPU-to-GPU transfers"
    claim = Claim(
        "a copy between two GPUs need not pass through host memory",
        "no document figure: the device pair's own paths",
        "bandwidth of the shared-context copy / staged through host (A->B, largest size)",
        copy_over_staged, kind="property")
    plot = {"kind": "modes", "group": "mode", "logx": True, "logy": True}
    size_arg, values_arg, local_size_arg = "max_bytes", "sizes", None

    def __init__(self, ctx: Any, sizes: Sequence[int] | None = None, max_bytes: int | None = None,
                 peer: Any = None, cuda: bool = True) -> None:
        super().__init__(ctx)
        from ..device.context import Context

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
        self._staging: dict[str, Any] = {}
        self.pair, self.pair_reason = self._pair(info)
        self.cuda = self._cuda() if cuda and self.peer is not None else None

    def _pair(self, info: Any) -> tuple[Any, str]:
        """Both devices in one context, with the copy kernel built for both; or why not."""
        if info is None:
            return None, self.skip_reason
        try:
            pair = _core.PeerPair(info.platform_index, self.ctx.info.device_index, info.device_index)
            pair.build_copy_kernel(kernel_source("p2p.cl"), "copy_words", WORD)
        except _core.PyclperfError as e:  # a platform may refuse multi-device contexts
            return None, f"one context over both devices was refused: {e}"
        return pair, ""

    def _cuda(self) -> Any:
        """The CUDA reference when both devices are NVIDIA's and CuPy sees two devices."""
        if "NVIDIA" not in self.ctx.info.platform_name.upper():
            return None
        from ..reference.cuda import CudaReference, CudaUnavailableError

        try:
            ref = CudaReference()
        except CudaUnavailableError:
            return None
        return ref if ref.cp.cuda.runtime.getDeviceCount() >= 2 else None

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "sizes": self.sizes, "skip_reason": self.skip_reason,
                "peer": self.peer.info.name if self.peer is not None else None,
                "shared_context": self.pair is not None, "shared_context_error": self.pair_reason,
                "loopback": bool(self.pair is not None and self.pair.same_device)}

    def points(self) -> list[dict[str, Any]]:
        # Size outermost: the shared context's buffers are sized per point, so each size is
        # allocated once for every path and direction.
        paths = [COPY, MIGRATE, KERNEL, STAGED] + ([CUDA_PEER] if self.cuda is not None else [])
        return [{"mode": f"{path} {d}", "path": path, "direction": d, "size_bytes": n}
                for n in self.sizes for path in paths for d in ("A->B", "B->A")]

    def peak_kind(self, row: dict[str, Any]) -> str | None:
        return None

    def measure(self, point: dict[str, Any], *, warmup: int, repeats: int, method: str,
                verify: bool) -> dict[str, Any]:
        if self.peer is None:
            return {"status": SKIPPED, "error": self.skip_reason, "verified": False}
        n, path, direction = int(point["size_bytes"]), point["path"], point["direction"]
        if path == CUDA_PEER:
            return self._cuda_peer(direction, n)
        if path == STAGED:
            return self._staged(direction, n, warmup, repeats)
        if self.pair is None:
            return {"status": SKIPPED, "error": self.pair_reason, "verified": False}
        if path == KERNEL and n % WORD:
            return {"status": SKIPPED, "verified": False,
                    "error": f"the copy kernel moves {WORD}-byte words; {n} bytes is not whole words"}
        return self._shared(path, direction, n, method, warmup, repeats)

    def _shared(self, path: str, direction: str, n: int, method: str, warmup: int,
                repeats: int) -> dict[str, Any]:
        pair, src = self.pair, (0 if direction == "A->B" else 1)
        if pair.nbytes != n:
            pair.allocate(n)
        data = random_bytes(self.rng, n)
        pair.write(src, data)
        pair.fill(1 - src, POISON)
        if path == COPY:
            events, host = pair.time_copy(src, warmup, repeats)
        elif path == MIGRATE:
            events, host = pair.time_migrate(src, warmup, repeats)
        else:
            cus = pair.info(1 - src).compute_units
            groups = max(1, min(-(-n // (WORD * KERNEL_LOCAL)), GROUPS_PER_CU * cus))
            events, host = pair.time_kernel_copy(src, KERNEL_LOCAL, groups, warmup, repeats)
        landed = np.empty(n, np.uint8)
        pair.read(1 - src, landed)  # every repeat copied the same bytes: the last must be them
        # The host clock is the figure: a runtime may move the source across before the copy
        # command's start timestamp, which the event would leave out. The event stays beside it.
        event_ns = float(np.median(events))
        return {"path": path, **timed_row(host, n, "host"), "event_median_ns": event_ns,
                "event_gbps": n / event_ns if event_ns > 0 else None, **_checked(landed, data)}

    def _staged(self, direction: str, n: int, warmup: int, repeats: int) -> dict[str, Any]:
        a, b = self.ctx, self.peer
        src_ctx, dst_ctx = (a, b) if direction == "A->B" else (b, a)
        src, dst = self._staging_buffer(src_ctx, "src"), self._staging_buffer(dst_ctx, "dst")
        stage = self._staging_host()
        data = random_bytes(self.rng, n)
        src.write(data)
        dst.fill(np.array([POISON], np.uint8))
        times = []
        for i in range(warmup + repeats):
            t0 = time.perf_counter_ns()
            src.read(stage[:n])
            dst.write(stage[:n])
            if i >= warmup:
                times.append(time.perf_counter_ns() - t0)
        landed = np.empty(n, np.uint8)
        dst.read(landed)
        return {"path": STAGED, **timed_row(np.asarray(times, np.float64), n, "host"),
                **_checked(landed, data)}

    def _staging_buffer(self, ctx: Any, role: str) -> Any:
        key = f"{role}{id(ctx)}"
        if key not in self._staging:
            self._staging[key] = ctx.buffer(max(self.sizes))
        return self._staging[key]

    def _staging_host(self) -> np.ndarray:
        if "host" not in self._staging:
            self._staging["host"] = self.ctx.pinned(max(self.sizes), np.uint8)
        return self._staging["host"][1]

    def _cuda_peer(self, direction: str, n: int) -> dict[str, Any]:
        """cudaMemcpyPeerAsync between CUDA devices 0 and 1 (taken to be A and B: set
        CUDA_DEVICE_ORDER=PCI_BUS_ID so CUDA numbers devices as the OpenCL platform does)."""
        ref = self.cuda
        cp, rt = ref.cp, ref.cp.cuda.runtime
        s, d = (0, 1) if direction == "A->B" else (1, 0)
        peer_access = bool(rt.deviceCanAccessPeer(d, s))
        if peer_access:
            _enable_peer_access(cp, d, s)
        data = random_bytes(self.rng, n)
        with cp.cuda.Device(s):
            src = cp.asarray(data)
        with cp.cuda.Device(d):
            dst = cp.full(n, POISON, dtype=cp.uint8)

        def launch() -> None:
            rt.memcpyPeerAsync(dst.data.ptr, d, src.data.ptr, s, n, ref.stream.ptr)

        result = ref.timer(launch).measure(5).as_dict()
        ref.stream.synchronize()
        row = {"path": CUDA_PEER, "bytes": n, "method": "cuda events", **result,
               "peer_access": peer_access}
        row["gbps"] = n / row["median_ns"]
        return {**row, **_checked(cp.asnumpy(dst), data)}

    def finish(self, results: Any) -> None:
        """The largest size's figure per path and direction; the shared context beside CUDA."""
        ok = [r for r in results.rows if r.get("status") == OK]
        if not ok:
            return
        top = max(r["size_bytes"] for r in ok)
        best = {(r["path"], r["direction"]): r for r in ok if r["size_bytes"] == top}
        parts = []
        for d in ("A->B", "B->A"):
            cuda = best.get((CUDA_PEER, d))
            figures = []
            for path in (COPY, MIGRATE, KERNEL, STAGED):
                r = best.get((path, d))
                if r is None:
                    continue
                ratio = f", {r['gbps'] / cuda['gbps']:.3f}x CUDA's peer copy" if cuda else ""
                if cuda and path != STAGED and r["gbps"] > SUSPECT * cuda["gbps"]:
                    ratio += (" (faster than the link carries CUDA's own copy: the runtime "
                              "probably served bytes it already held on the destination)")
                figures.append(f"{path} {r['gbps']:.1f} GB/s{ratio}{noise_note(r)}")
            if cuda:
                figures.append(f"cuda peer {cuda['gbps']:.1f} GB/s")
            if figures:
                parts.append(f"{d}: " + "; ".join(figures))
        where = " (one device, two queues: a loopback, not a link)" if results.meta.get("loopback") else ""
        results.meta["conclusion"] = f"At {top / MiB:g} MiB{where}: " + " | ".join(parts) + "."


def _checked(landed: np.ndarray, data: np.ndarray) -> dict[str, Any]:
    passed = bool(np.array_equal(landed, data))
    detail = "" if passed else f"{int((landed != data).sum())} of {data.size} bytes differ after the copy"
    return verdict(True, passed, detail)


def _enable_peer_access(cp: Any, device: int, peer: int) -> None:
    """Let `device` reach `peer`'s memory directly; enabling it twice is not an error here."""
    with cp.cuda.Device(device):
        try:
            cp.cuda.runtime.deviceEnablePeerAccess(peer)
        except cp.cuda.runtime.CUDARuntimeError as e:
            if "AlreadyEnabled" not in str(e) and "already" not in str(e).lower():
                raise
