"""Programs and kernels with Pythonic argument passing, launching and timing."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _core

# Bound once: a module attribute lookup per launch is measurable next to a ~20 us launch.
_run = _core.run
_time_durations = _core.time_durations

# OpenCL C scalar type -> NumPy dtype, for plain Python numbers passed as kernel arguments.
_SCALAR_TYPES = {
    "char": np.int8, "uchar": np.uint8, "short": np.int16, "ushort": np.uint16,
    "int": np.int32, "uint": np.uint32, "long": np.int64, "ulong": np.uint64,
    "float": np.float32, "double": np.float64, "half": np.float16,
    "unsigned char": np.uint8, "unsigned short": np.uint16, "unsigned int": np.uint32,
    "unsigned long": np.uint64,
}


@dataclass(frozen=True)
class LocalMemory:
    """A ``__local`` pointer argument's size in bytes (dynamic local memory)."""

    nbytes: int


def _as_size(value: Any, name: str) -> list[int]:
    # A plain non-negative int, the common case, skips np.isscalar and the loop (a few us a
    # launch from Python, where a whole launch costs ~20 us).
    if type(value) is int and value >= 0:
        return [value]
    dims = [value] if np.isscalar(value) else list(value)
    out = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"{name} must hold integers, got {d!r}")
        if d < 0:
            raise _core.InvalidArgumentError(f"{name} {tuple(dims)} has a negative entry")
        out.append(int(d))
    return out


@dataclass(frozen=True)
class _Param:
    """What set_arg needs of a kernel parameter (a copy of its ArgInfo)."""

    name: str
    type_name: str
    address_qualifier: str
    is_pointer: bool
    is_image: bool
    is_sampler: bool


class Program(_core.Program):
    """OpenCL C built for one context (see Context.program, which caches builds)."""

    def kernel(self, name: str) -> "Kernel":
        return Kernel(self, name)


class Kernel(_core.Kernel):
    """A kernel with its arguments; ``set_args`` accepts buffers, images, samplers, numbers and
    LocalMemory."""

    @functools.cached_property
    def _declared(self) -> tuple["_Param", ...]:
        # The parameters never change, and ``args`` builds a new list of them on every access
        # (about 1 us), which set_arg would otherwise pay for each argument of every launch.
        # Plain copies: an ArgInfo keeps its kernel alive, and one stored on the kernel would
        # make a cycle the garbage collector cannot see (the kernel would never be freed).
        return tuple(_Param(a.name, a.type_name, a.address_qualifier, a.is_pointer, a.is_image,
                            a.is_sampler) for a in self.args)

    @functools.cached_property
    def _object_types(self) -> tuple[type | None, ...]:
        """Per parameter, the object type it must be given (Image, Sampler), else None."""
        return tuple(_core.Image if a.is_image else _core.Sampler if a.is_sampler else None
                     for a in self._declared)

    def set_args(self, *args: Any) -> "Kernel":
        declared = self._declared
        if len(args) != len(declared):
            raise TypeError(
                f"kernel '{self.name}' takes {len(declared)} argument(s) "
                f"({', '.join(a.name for a in declared)}), got {len(args)}"
            )
        for i, value in enumerate(args):
            self.set_arg(i, value)
        return self

    def set_arg(self, index: int, value: Any) -> None:
        declared = self._declared
        in_range = 0 <= index < len(declared)
        wanted = self._object_types[index] if in_range else None
        if wanted is not None and not isinstance(value, wanted):
            info = declared[index]
            raise _core.InvalidArgumentError(
                f"argument {index} ('{info.name}', {info.type_name}) of kernel '{self.name}' "
                f"takes a {wanted.__name__} (ctx.{'to_image' if info.is_image else 'sampler'}"
                f"(...)), got {type(value).__name__}")
        # The common cases first, each tested once: a launch from a Python loop sets every
        # argument again, and each isinstance costs.
        if isinstance(value, _core.Buffer):
            self.set_buffer(index, value)
        elif isinstance(value, np.generic):
            self.set_scalar(index, value)  # a NumPy scalar exposes its bytes as a 0-d buffer
        elif isinstance(value, _core.Image):
            self.set_image(index, value)
        elif isinstance(value, _core.Sampler):
            self.set_sampler(index, value)
        elif isinstance(value, LocalMemory):
            self.set_local(index, value.nbytes)
        elif isinstance(value, np.ndarray):
            if in_range and declared[index].is_pointer:
                info = declared[index]
                raise TypeError(
                    f"argument {index} ('{info.name}') of kernel '{self.name}' is a "
                    f"{info.address_qualifier} pointer: pass a Buffer (ctx.to_device(array)), "
                    "not an array")
            self.set_scalar(index, np.ascontiguousarray(value))
        elif isinstance(value, (bool, int, float)):
            self.set_scalar(index, self._typed_scalar(index, value))
        else:
            raise TypeError(
                f"argument {index} of kernel '{self.name}': cannot pass {type(value).__name__}; "
                "use a Buffer, an Image, a Sampler, a NumPy scalar, a Python number or "
                "LocalMemory(nbytes)"
            )

    def _typed_scalar(self, index: int, value: Any) -> np.ndarray:
        declared = self._declared
        if not 0 <= index < len(declared):
            raise _core.InvalidArgumentError(
                f"argument index {index} out of range: kernel '{self.name}' takes {len(declared)}")
        info = declared[index]
        dtype = _SCALAR_TYPES.get(info.type_name.strip())
        if dtype is None:
            raise TypeError(
                f"argument {index} of kernel '{self.name}' is declared '{info.type_name}': pass a "
                "NumPy scalar of the right width (e.g. np.int32(5)) instead of a Python number"
            )
        dt = np.dtype(dtype)
        if dt.kind in "iu":
            limits = np.iinfo(dt)  # type: ignore[type-var]
            if not float(value).is_integer() or not limits.min <= value <= limits.max:
                raise _core.InvalidArgumentError(
                    f"argument {index} ('{info.name}', {info.type_name}) of kernel '{self.name}': "
                    f"{value!r} does not fit"
                )
        return np.array(value, dtype=dt)

    def run(self, global_size: Any, local_size: Any = None) -> None:
        """Launch once over ``global_size`` work-items and wait."""
        if type(global_size) is int and type(local_size) is int and global_size >= 0 \
                and local_size >= 0:
            _run(self, [global_size], [local_size])  # the common call, as in time()
            return
        _run(self, _as_size(global_size, "global size"), _local(local_size))

    def time(
        self,
        global_size: Any,
        local_size: Any = None,
        *,
        warmup: int = 3,
        repeats: int = 20,
        method: str = "events",
    ) -> np.ndarray:
        """Per-launch times in ns after ``warmup`` launches; ``method`` is "events" or "host"."""
        if type(global_size) is int and type(local_size) is int and global_size >= 0 \
                and local_size >= 0 and method == "events":
            # The common call from a Python loop, in as few bytecodes as it can be: the whole
            # call costs ~20 us on a GPU, a tenth of it in Python.
            return _time_durations(self, [global_size], [local_size], warmup, repeats)
        g, l = _as_size(global_size, "global size"), _local(local_size)
        if method == "events":
            # end - start computed in C++: two timestamps read per launch, no array arithmetic.
            return _time_durations(self, g, l, warmup, repeats)
        if method == "host":
            return np.asarray(_core.time_host(self, g, l, warmup, repeats), dtype=np.float64)
        raise _core.InvalidArgumentError(f"timing method must be 'events' or 'host', got {method!r}")


def _local(local_size: Any) -> list[int]:
    if local_size is None:
        return []
    return _as_size(local_size, "local size")


def ceil_to(n: int, multiple: int) -> int:
    """n rounded up to a multiple (NDRange helper)."""
    return -(-n // multiple) * multiple
