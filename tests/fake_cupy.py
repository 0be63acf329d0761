"""A stand-in for CuPy on NumPy, for driving pyclperf.reference.cuda where no CUDA exists.

It does the real work on the host (copies, fills, sums, products), so each reference's own check
sees right or wrong results, and it keeps a device clock that every launch advances by
``LAUNCH_MS``: CUDA events read that clock, so a per-launch figure must come out as exactly
``LAUNCH_MS`` whatever the batch size. ``broken`` names operations that silently do nothing.
"""

from __future__ import annotations

import ctypes
import types
from typing import Any

import numpy as np

LAUNCH_MS = 1.0


class FakeArray(np.ndarray):
    """A NumPy array with CuPy's device-pointer and transfer attributes."""

    @property
    def data(self) -> Any:  # type: ignore[override]
        return types.SimpleNamespace(ptr=self.ctypes.data)

    def get(self) -> np.ndarray:
        return np.array(self).view(np.ndarray)

    def set(self, host: np.ndarray) -> None:
        self[...] = host


def _dev(a: Any) -> FakeArray:
    return np.array(a).view(FakeArray)


class FakeCupy(types.SimpleNamespace):
    def __init__(self, broken: tuple[str, ...] = (), sm_count: int = 4) -> None:
        super().__init__()
        self.clock_ms = 0.0
        self.broken = broken
        self.launched: dict[str, int] = {}
        self.uint8, self.float32 = np.uint8, np.float32
        self.random = types.SimpleNamespace(
            random=lambda n, dtype: _dev(np.random.default_rng().random(n, dtype=dtype)))
        fake = self

        class Event:
            def record(self, stream: Any = None) -> None:
                self.t = fake.clock_ms

            def synchronize(self) -> None:
                pass

        rt = types.SimpleNamespace(
            getDeviceCount=lambda: 1,
            getDeviceProperties=lambda i: {"multiProcessorCount": sm_count},
            memcpyHostToDevice=1, memcpyDeviceToHost=2, memcpyDeviceToDevice=3,
            memcpyAsync=self._memcpy)
        self.cuda = types.SimpleNamespace(
            Event=Event, runtime=rt, Device=lambda: types.SimpleNamespace(id=0),
            get_current_stream=lambda: types.SimpleNamespace(ptr=0, synchronize=lambda: None),
            get_elapsed_time=lambda s, e: e.t - s.t)

    def _tick(self, what: str) -> bool:
        """Advances the device clock by one launch; False where ``what`` is broken."""
        self.clock_ms += LAUNCH_MS
        self.launched[what] = self.launched.get(what, 0) + 1
        return what not in self.broken

    def _memcpy(self, dst: int, src: int, n: int, kind: int, stream: int) -> None:
        if self._tick("memcpy"):
            ctypes.memmove(dst, src, n)

    # --- arrays ---------------------------------------------------------------------------
    def asarray(self, a: Any) -> FakeArray:
        return _dev(a)

    def asnumpy(self, a: Any) -> np.ndarray:
        return np.array(a).view(np.ndarray)

    def full(self, shape: Any, value: Any, dtype: Any) -> FakeArray:
        return _dev(np.full(shape, value, dtype=dtype))

    def empty(self, shape: Any, dtype: Any) -> FakeArray:
        return _dev(np.empty(shape, dtype=dtype))

    def array_equal(self, a: Any, b: Any) -> bool:
        return bool(np.array_equal(a, b))

    def copyto(self, dst: Any, src: Any) -> None:
        if self._tick("copyto"):
            np.copyto(dst, src)

    def matmul(self, a: Any, b: Any, out: Any) -> Any:
        if self._tick("matmul"):
            np.matmul(a, b, out=out)
        return out

    def RawModule(self, code: str) -> Any:  # noqa: N802 - CuPy's name
        assert "copy_f4" in code and "read_f4" in code and "fill_f4" in code
        return types.SimpleNamespace(get_function=lambda name: self._kernel(name))

    def _kernel(self, name: str) -> Any:
        def run(grid: tuple[int], block: tuple[int], args: tuple[Any, ...]) -> None:
            if not self._tick(name):
                return
            if name == "copy_f4":
                dst, src, _ = args
                dst[...] = src
            elif name == "fill_f4":
                dst, value, _ = args
                dst[...] = value
            else:  # read_f4: one partial sum per block
                src, _, partial = args
                chunks = np.array_split(np.asarray(src, np.float32), grid[0])
                partial[: grid[0]] = [c.sum(dtype=np.float32) for c in chunks]

        return run


def cupyx_module() -> Any:
    return types.SimpleNamespace(empty_pinned=lambda shape, dtype: np.empty(shape, dtype=dtype))
