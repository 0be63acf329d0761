"""The CUDA reference, timed one honest way: CUDA's own copy and transfers, float4
copy / read / fill kernels, and cuBLAS GEMM, each verified, each timed by CUDA events around a
batch of back-to-back launches.

Why batches: a CUDA event recorded on an idle stream completes at once, and the GPU then waits
for the host to issue the call, so timing one call between two events puts the host's launch
gap (microseconds) inside the figure. pyclperf's OpenCL figures come from each command's own
profiling start and end and hold no such gap. Here one untimed launch is queued first (the start
event then lands on a busy stream), N launches follow back to back, and N is chosen so a batch
lasts far longer than a stated bound on the gap; a batch shorter than a stated multiple of that
bound is refused rather than reported.

The batching (BatchTimer, in reference_batches) knows nothing of CUDA: it drives any Clock, so tests check it with a
fake clock on machines without CUDA. CuPy is imported only when a reference is measured; without
it, CudaReference() raises CudaUnavailableError with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .cuda_kernels import SOURCE as _KERNELS
from .batches import (  # noqa: F401  (public names of this module too)
    BatchPolicy,
    BatchTimer,
    BatchTooShortError,
    COPY_REFERENCE,
    Clock,
    CudaUnavailableError,
    HOST_BOUND_SHARE,
    LAUNCH_GAP_BOUND_S,
    MIN_GAP_MULTIPLE,
    TARGET_BATCH_S,
    TIMED_AS,
    Timing,
)


# --- CuPy: the clock, the references -------------------------------------------------------

def cupy_module() -> Any:
    """CuPy with a usable CUDA device, else CudaUnavailableError saying why (no traceback chain)."""
    try:
        import cupy  # type: ignore[import-not-found]
    except ImportError:
        raise CudaUnavailableError("CuPy is not available (pip install cupy-cuda12x or "
                                   "cupy-cuda13x): no CUDA reference can be measured") from None
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - CUDARuntimeError and friends: no driver, no device
        raise CudaUnavailableError(f"CuPy cannot reach a CUDA device ({exc})") from None
    return cupy


class CudaEventClock:
    """CUDA events on one stream: the Clock for the real references."""

    def __init__(self, cp: Any, stream: Any) -> None:
        self.cp, self.stream = cp, stream
        self.start, self.end = cp.cuda.Event(), cp.cuda.Event()

    def record_start(self) -> None:
        self.start.record(self.stream)

    def record_end(self) -> None:
        self.end.record(self.stream)

    def elapsed_s(self) -> float:
        self.end.synchronize()
        return float(self.cp.cuda.get_elapsed_time(self.start, self.end)) / 1e3


@dataclass
class Prepared:
    """A reference set up, verified and ready to time; ``measure`` gives its result dict."""

    name: str
    nbytes: int  # bytes counted per launch (a copy counts read + written)
    timer: BatchTimer
    verified: bool
    detail: str
    config: dict[str, Any] = field(default_factory=dict)
    flops: int = 0
    keep: Any = None  # the arrays the launches use, alive as long as this is

    def measure(self, batches: int = 5) -> dict[str, Any]:
        """Timed in ``batches`` batches: what, how, per-launch ns, GB/s (GFLOP/s), verdict."""
        out = {"name": self.name, "config": self.config, "bytes": self.nbytes, "verified":
               self.verified, "detail": self.detail, **self.timer.measure(batches).as_dict()}
        out["gbps"] = self.nbytes / out["median_ns"] if self.nbytes else None
        out["gflops"] = self.flops / out["median_ns"] if self.flops else None
        return out


# Launch shapes the kernels are tried in: every block size x a few blocks per SM.
BLOCKS = (128, 256, 512, 1024)
GRIDS_PER_SM = (2, 4, 8, 16, 32)


class CudaReference:
    """The references on CUDA device 0, through CuPy, all on CuPy's default stream (so the
    set-up fills and checks are ordered with the timed launches)."""

    def __init__(self, policy: BatchPolicy = BatchPolicy(), search_batches: int = 3,
                 cp: Any = None) -> None:
        """``cp``: the CuPy module (or a stand-in for tests); by default imported here."""
        self.cp = cp if cp is not None else cupy_module()
        self.policy, self.search_batches = policy, search_batches
        self.stream = self.cp.cuda.get_current_stream()
        self.clock = CudaEventClock(self.cp, self.stream)
        self._module: Any = None
        self.rng = np.random.default_rng()

    @property
    def sm_count(self) -> int:
        rt = self.cp.cuda.runtime
        return int(rt.getDeviceProperties(self.cp.cuda.Device().id)["multiProcessorCount"])

    def timer(self, launch: Callable[[], None]) -> BatchTimer:
        return BatchTimer(launch, self.clock, self.policy)

    def _random_device_bytes(self, nbytes: int) -> Any:
        from ..measure.checks import random_bytes

        return self.cp.asarray(random_bytes(self.rng, nbytes))

    def device_copy(self, nbytes: int, api: str = "memcpy") -> Prepared:
        """CUDA's own device-to-device copy: cudaMemcpyAsync ("memcpy") or cupy.copyto."""
        cp, rt = self.cp, self.cp.cuda.runtime
        src = self._random_device_bytes(nbytes)
        dst = cp.full(nbytes, 0xAD, dtype=cp.uint8)  # poison
        if api == "memcpy":
            def launch() -> None:
                rt.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes, rt.memcpyDeviceToDevice, self.stream.ptr)
            name = COPY_REFERENCE
        elif api == "copyto":
            def launch() -> None:
                cp.copyto(dst, src)
            name = "cupy.copyto"
        else:
            raise ValueError(f"device_copy api must be 'memcpy' or 'copyto', got {api!r}")
        launch()
        ok = bool(cp.array_equal(dst, src))
        return Prepared(name, 2 * nbytes, self.timer(launch), ok, "" if ok else "copy differs",
                        {"api": api}, keep=(src, dst))

    def transfer(self, direction: str, nbytes: int, host_memory: str = "pinned") -> Prepared:
        """Host <-> device through cudaMemcpyAsync from pinned (cudaHostAlloc) or pageable memory."""
        import cupyx  # type: ignore[import-not-found]

        from ..measure.checks import random_bytes

        cp, rt = self.cp, self.cp.cuda.runtime
        device = cp.full(nbytes, 0xAD, dtype=cp.uint8)
        host = (cupyx.empty_pinned((nbytes,), dtype=np.uint8) if host_memory == "pinned"
                else np.empty(nbytes, np.uint8))
        data = random_bytes(self.rng, nbytes)
        if direction == "h2d":
            host[:] = data
            kind = rt.memcpyHostToDevice
        elif direction == "d2h":
            device.set(data)
            host[:] = 0xAD
            kind = rt.memcpyDeviceToHost
        else:
            raise ValueError(f"direction must be 'h2d' or 'd2h', got {direction!r}")

        def launch() -> None:
            # Pointers taken here, so the closure keeps both arrays alive as long as the timer.
            d, h = device.data.ptr, host.ctypes.data
            dst, src = (d, h) if direction == "h2d" else (h, d)
            rt.memcpyAsync(dst, src, nbytes, kind, self.stream.ptr)

        launch()
        self.stream.synchronize()
        landed = device.get() if direction == "h2d" else host
        ok = bool(np.array_equal(landed, data))
        return Prepared(f"cudaMemcpyAsync {host_memory} {direction} (CuPy)", nbytes, self.timer(launch),
                        ok, "" if ok else "transferred bytes differ",
                        {"direction": direction, "host_memory": host_memory}, keep=(device, host))

    def _kernel(self, name: str) -> Any:
        if self._module is None:
            self._module = self.cp.RawModule(code=_KERNELS)
        return self._module.get_function(name)

    def _best_shape(self, kernel: Any, args: Callable[[int], tuple[Any, ...]],
                    items: int = 0) -> tuple[BatchTimer, dict[str, Any]]:
        """The fastest (block, grid) of BLOCKS x GRIDS_PER_SM, and of each block size over the
        whole grid (one item per thread, when ``items`` is given): each a median of a few
        batches. The whole grid is what a hand-written copy usually launches, and often the
        fastest shape on Hopper."""
        best: tuple[float, BatchTimer, dict[str, Any]] | None = None
        tried = {}
        for block in BLOCKS:
            grids: list[tuple[str, int, Any]] = [(f"{block}x{p}/SM", p * self.sm_count, p)
                                                 for p in GRIDS_PER_SM]
            if items:
                grids.append((f"{block}x whole grid", -(-items // block), "whole grid"))
            for label, grid, per_sm in grids:

                def launch(grid: int = grid, block: int = block) -> None:
                    kernel((grid,), (block,), args(grid))  # on the current (default) stream

                timer = self.timer(launch)
                s = timer.measure(self.search_batches).median_s
                tried[label] = 1e9 * s
                if best is None or s < best[0]:
                    best = (s, timer, {"block": block, "grid": grid, "grid_per_sm": per_sm})
        assert best is not None
        return best[1], {**best[2], "shapes_ns": tried}

    def copy_kernel(self, nbytes: int) -> Prepared:
        """A grid-stride float4 copy (CUDA C through cupy.RawModule), best launch shape."""
        cp = self.cp
        src = self._random_device_bytes(nbytes)
        dst = cp.empty(nbytes, dtype=cp.uint8)
        n4 = np.uint64(nbytes // 16)
        timer, cfg = self._best_shape(self._kernel("copy_f4"), lambda g: (dst, src, n4),
                                       int(n4))
        dst.fill(0xAD)
        timer.launch()
        ok = bool(cp.array_equal(dst, src))
        return Prepared("CUDA float4 copy kernel", 2 * nbytes, timer, ok, "" if ok else "copy differs",
                        cfg, keep=(src, dst))

    def fill_kernel(self, nbytes: int) -> Prepared:
        """A grid-stride float4 fill (writes only), best launch shape."""
        cp = self.cp
        dst = cp.empty(nbytes // 4, dtype=cp.float32)
        value = np.float32(self.rng.uniform(1.0, 2.0))
        n4 = np.uint64(nbytes // 16)
        timer, cfg = self._best_shape(self._kernel("fill_f4"), lambda g: (dst, value, n4),
                                       int(n4))
        dst.view(cp.uint8).fill(0xAD)
        timer.launch()
        ok = bool((dst == value).all())
        return Prepared("CUDA float4 fill kernel", nbytes, timer, ok, "" if ok else "fill differs",
                        {**cfg, "value": float(value)}, keep=(dst,))

    def read_kernel(self, nbytes: int) -> Prepared:
        """A grid-stride float4 read that sums (one partial per block), best launch shape."""
        cp = self.cp
        src = cp.random.random(nbytes // 4, dtype=cp.float32)  # [0, 1): |x| = x
        n4 = np.uint64(nbytes // 16)
        # One partial per block, for the largest grid tried (the whole grid of the smallest block).
        partial = cp.empty(max(max(GRIDS_PER_SM) * self.sm_count, -(-int(n4) // min(BLOCKS))),
                           dtype=cp.float32)
        timer, cfg = self._best_shape(self._kernel("read_f4"), lambda g: (src, n4, partial),
                                       int(n4))
        partial.fill(np.nan)
        timer.launch()
        got = float(cp.asnumpy(partial[: cfg["grid"]]).astype(np.float64).sum())
        want = float(np.sum(cp.asnumpy(src), dtype=np.float64))
        # Float32 sums of t float4s per thread, then a block tree: |error| <= gamma * sum |x|.
        terms = 4 * math.ceil(int(n4) / (cfg["grid"] * cfg["block"])) + 16
        tol = terms * 2.0 ** -24 * want
        ok = abs(got - want) <= tol
        detail = "" if ok else f"sum {got!r}, NumPy float64 {want!r}, tolerance {tol:.3g}"
        return Prepared("CUDA float4 read (sum) kernel", nbytes, timer, ok, detail,
                        {**cfg, "sum": got, "numpy_sum": want}, keep=(src, partial))

    def matmul(self, a: np.ndarray, b: np.ndarray) -> tuple[Prepared, np.ndarray]:
        """cupy.matmul (cuBLAS) of float32 A B into an output poisoned with NaN; its result too."""
        from ..measure.checks import check_product

        cp = self.cp
        da, db = cp.asarray(a), cp.asarray(b)
        dc = cp.full((a.shape[0], b.shape[1]), np.nan, dtype=cp.float32)

        def launch() -> None:
            cp.matmul(da, db, out=dc)

        launch()
        result = cp.asnumpy(dc)
        ok, detail = check_product(result, a, b)
        flops = 2 * a.shape[0] * a.shape[1] * b.shape[1]
        nbytes = 4 * (a.size + b.size + result.size)
        return Prepared("cupy.matmul (cuBLAS)", nbytes, self.timer(launch), ok, detail,
                        {"shape": [a.shape[0], a.shape[1], b.shape[1]]}, flops, keep=(da, db, dc)), result

