"""The Pythonic face of a device context: buffers, pinned arrays and cached programs."""

from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .. import _core
from .icd import restore_environment
from .devices import PROBE_SOURCE, DeviceSpec, device_summary, select_device
from .program import Program
from .sources import kernel_source
from .turns import host_only


class Context(_core.Context):
    """A device with its OpenCL context and in-order profiling queue.

    ``Context()`` takes $PYCLPERF_DEVICE or else the first GPU, falling back to a CPU device;
    ``Context("nvidia")``, ``Context(1)`` or ``Context("0:1")`` pick one explicitly.
    """

    # Built programs kept for reuse, least recently used dropped first: enough for every
    # experiment's variants, while a tuning run of 10^5 configurations (one build each) holds
    # this many builds, not all of them.
    program_cache_size = 32

    def __init__(self, device: DeviceSpec = None) -> None:
        info = select_device(device)
        super().__init__(info.platform_index, info.device_index)
        restore_environment()
        self._programs: OrderedDict[tuple[Any, ...], Program] = OrderedDict()
        self._programs_lock = threading.Lock()

    @property
    def device(self) -> _core.DeviceInfo:
        return self.info

    def summary(self) -> dict[str, object]:
        """device_summary() plus what needs a context: the preferred work-group multiple."""
        out = device_summary(self.info)
        out["preferred_work_group_multiple"] = self.preferred_work_group_multiple()
        return out

    def preferred_work_group_multiple(self) -> int:
        """CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE of a trivial kernel (built once)."""
        kernel = self.program(source=PROBE_SOURCE).kernel("probe")
        return int(kernel.limits().preferred_multiple)

    def __repr__(self) -> str:
        i = self.info
        return f"<pyclperf.Context {i.type} '{i.name}' ({i.platform_name})>"

    # --- memory -------------------------------------------------------------------------
    def buffer(self, nbytes: int) -> _core.Buffer:
        """Uninitialised device memory of ``nbytes`` bytes: a positive Python int or NumPy
        integer (a float, even 4.0, or a bool is refused with TypeError, not rounded)."""
        return _core.Buffer(self, nbytes)

    def to_device(self, array: np.ndarray) -> _core.Buffer:
        """A new device buffer holding a copy of ``array`` (made C-contiguous). An array in the
        other byte order than the host's (``">f4"`` on x86) is stored as its numbers, converted,
        as a kernel reads them."""
        from .argtypes import check_plain_array

        a = np.ascontiguousarray(array)
        check_plain_array(0, a)
        buf = _core.Buffer(self, a.nbytes)
        buf.write(a)
        return buf

    def from_device(self, buffer: _core.Buffer, dtype: Any, shape: Any = None) -> np.ndarray:
        """A new host array of ``dtype`` filled from ``buffer`` (numbers in either byte order:
        a ``">f4"`` array receives the values the device holds, converted)."""
        dt = np.dtype(dtype)
        out = np.empty(buffer.nbytes // dt.itemsize if shape is None else shape, dtype=dt)
        buffer.read(out)
        return out

    def pinned(self, shape: Any, dtype: Any = np.float32) -> tuple[_core.PinnedBuffer, np.ndarray]:
        """A pinned (CL_MEM_ALLOC_HOST_PTR) buffer and a zero-copy NumPy view of it.

        ``shape`` is an integer or a sequence of them; ``dtype`` plain numbers (booleans,
        integers, floats, complex, or structs of them) in the host's byte order: the view shows
        the very bytes a kernel reads and writes, so objects, strings, dates and the other byte
        order are refused (InvalidArgumentError) rather than handed out."""
        dt = np.dtype(dtype)
        dims = _shape(shape)
        buf = _core.PinnedBuffer(self, math.prod(dims) * dt.itemsize)
        return buf, buf.array(dt, dims)

    # --- images ---------------------------------------------------------------------------
    def image(self, width: int, height: int, channels: int = 1, half: bool = False) -> _core.Image:
        """An uninitialised 2-D image of float32 texels (float16, CL_HALF_FLOAT, with ``half``),
        1 (CL_R) or 4 (CL_RGBA) channels. The sides are integers (TypeError for a float or a
        bool, InvalidArgumentError for a negative one).

        Raises InvalidArgumentError where the device has no image support or a side exceeds
        CL_DEVICE_IMAGE2D_MAX_WIDTH/HEIGHT (a shape error), DeviceMemoryError where the image's
        bytes exceed CL_DEVICE_MAX_MEM_ALLOC_SIZE or the driver refuses the allocation.
        """
        return _core.Image(self, width, height, channels, bool(half))

    def to_image(self, array: np.ndarray) -> _core.Image:
        """A new image holding ``array``: float32 (or float16, a CL_HALF_FLOAT image) of shape
        (height, width) for one channel or (height, width, 4) for four (other dtypes and shapes
        are refused, not converted)."""
        a = np.asarray(array)
        if not a.dtype.isnative:  # ">f4": the texels are its numbers, in the host's order
            a = a.astype(a.dtype.newbyteorder("="))
        if a.dtype not in (np.float32, np.float16):
            raise _core.InvalidArgumentError(
                f"an image holds float32 (or float16) texels, got dtype {a.dtype}: convert with "
                ".astype(np.float32)")
        if a.ndim == 2:
            channels = 1
        elif a.ndim == 3 and a.shape[2] == 4:
            channels = 4
        else:
            raise _core.InvalidArgumentError(
                f"image arrays are (height, width) or (height, width, 4), got shape {a.shape}")
        img = self.image(a.shape[1], a.shape[0], channels, half=a.dtype == np.float16)
        img.write(np.ascontiguousarray(a))
        return img

    def from_image(self, image: _core.Image) -> np.ndarray:
        """A new float32 (float16 for a half image) array of the image's shape filled from it."""
        out = np.empty(image.shape, dtype=np.float16 if image.half else np.float32)
        image.read(out)
        return out

    def sampler(self, normalized: bool = False, addressing: str = "clamp_to_edge",
                filter: str = "nearest") -> _core.Sampler:
        """How kernels read images: ``normalized`` coordinates (else texel units), ``addressing``
        one of Sampler.addressing_modes and ``filter`` "nearest" or "linear"."""
        return _core.Sampler(self, bool(normalized), str(addressing), str(filter))

    # --- programs -----------------------------------------------------------------------
    def program(
        self,
        source: str | None = None,
        *,
        file: str | os.PathLike[str] | None = None,
        defines: Mapping[str, Any] | None = None,
        options: str = "",
        cache: bool = True,
    ) -> Program:
        """Build OpenCL C from a string, a path, or a shipped kernels/ file name.

        ``defines`` become ``-D NAME=VALUE`` options. Identical builds are cached per context
        (the ``program_cache_size`` most recently used), so a sweep compiles each variant once.
        """
        key = self._program_key(source, file, defines, options)
        source, pairs = key[0], key[1]
        if cache:
            with self._programs_lock:
                if key in self._programs:
                    self._programs.move_to_end(key)
                    return self._programs[key]
        with host_only():  # the compiler's work, on the host: another process may measure
            built = Program(self, source, list(pairs), options)
        if cache:
            with self._programs_lock:
                built = self._programs.setdefault(key, built)  # another thread's, if it won
                self._programs.move_to_end(key)
                while len(self._programs) > max(0, int(self.program_cache_size)):
                    self._programs.popitem(last=False)
        return built


    def _program_key(self, source: str | None, file: str | os.PathLike[str] | None,
                     defines: Mapping[str, Any] | None, options: str) -> tuple[Any, ...]:
        """(source text, define pairs, options): what a build is cached by."""
        if (source is None) == (file is None):
            raise TypeError("give exactly one of source= or file=")
        if file is not None:
            path = os.fspath(file)
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    source = f.read()
            else:
                source = kernel_source(path)
        assert source is not None
        pairs = tuple((str(k), _define_value(v)) for k, v in sorted((defines or {}).items()))
        return (source, pairs, options)

    def prebuild(self, requests: Iterable[Mapping[str, Any]]) -> int:
        """Build at once, on the host's cores, the programs a sweep is about to ask for
        (``requests``: program()'s keyword arguments each), into the cache: a sweep of many
        variants then waits for its builds side by side instead of one after another (the
        compiler releases the GIL). As many as the cache keeps; a build that fails here is left
        for its own request to report. Returns how many were built."""
        wanted: dict[tuple[Any, ...], Mapping[str, Any]] = {}
        for request in requests:
            try:
                key = self._program_key(request.get("source"), request.get("file"),
                                        request.get("defines"), request.get("options", ""))
            except (TypeError, ValueError, OSError, _core.PyclperfError):
                continue  # the request itself will say what is wrong with it
            with self._programs_lock:
                cached = key in self._programs
            if not cached:
                wanted.setdefault(key, request)
        todo = list(wanted.values())[: max(0, int(self.program_cache_size))]
        if len(todo) < 2:
            return 0

        def build(request: Mapping[str, Any]) -> bool:
            try:
                self.program(**request)
                return True
            except _core.PyclperfError:
                return False

        workers = min(len(todo), _PREBUILD_THREADS, os.cpu_count() or 1)
        with host_only(), ThreadPoolExecutor(max_workers=workers,
                                             thread_name_prefix="pyclperf-build") as pool:
            return sum(pool.map(build, todo))


# Builds at once at most: past this the compiler's memory, not the host's cores, is the limit.
_PREBUILD_THREADS = 8


def _shape(value: Any) -> list[int]:
    """An array shape as a list of sizes: TypeError for an entry that is no integer (Python int
    or NumPy integer; a float or bool is a mistake, not a size), InvalidArgumentError for a
    negative one. Checked before the byte count is computed from it, so 4.7 is never rounded."""
    if isinstance(value, (int, np.integer)):
        dims = [value]
    else:
        try:
            dims = list(value)
        except TypeError:
            raise TypeError(f"pinned shape must be an integer or a sequence of integers, got "
                            f"{value!r} ({type(value).__name__})") from None
    out = []
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"pinned shape must hold integers, got {d!r} ({type(d).__name__})")
        if d < 0:
            raise _core.InvalidArgumentError(f"pinned shape {tuple(dims)} has a negative entry")
        out.append(int(d))
    return out


def _define_value(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        return repr(v) + "f" if np.isfinite(v) else str(v)
    return str(v)
