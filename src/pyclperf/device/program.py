"""Programs and kernels with Pythonic argument passing, launching and timing."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _core
from .busy import do_waiting_work, waiting as _busy

# Bound once: a module attribute lookup per launch is measurable next to a ~20 us launch.
_run = _core.run
_time_durations = _core.time_durations
_begin_durations = _core.begin_durations

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
    """A ``__local`` pointer argument's size in bytes (dynamic local memory): a positive
    integer (a Python int or a NumPy integer)."""

    nbytes: int

    def __post_init__(self) -> None:
        n = self.nbytes
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"LocalMemory(nbytes): nbytes must be an integer number of bytes, "
                            f"got {n!r} ({type(n).__name__})")
        if n <= 0:
            raise _core.InvalidArgumentError(
                f"LocalMemory(nbytes): nbytes must be a positive number of bytes, got {n!r}")
        object.__setattr__(self, "nbytes", int(n))  # frozen: the plain int, once


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
        try:
            for i, value in enumerate(args):
                self.set_arg(i, value)
        except BaseException:
            # The arguments before the refused one hold the new values, the rest the old: a
            # combination nobody asked for (an old, smaller buffer beside a new size is a write
            # out of bounds), so no launch may use it until every argument is set again.
            self.forget_args()
            raise
        return self

    def set_arg(self, index: int, value: Any) -> None:
        if type(index) is not int:  # the rare case: a NumPy integer, or a mistake
            index = _argument_index(index)
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
                f"argument index {index} out of range: kernel '{self.name}' takes {len(declared)} "
                "argument(s)")
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
        """Launch once over ``global_size`` work-items (an integer or up to three of them) in
        work-groups of ``local_size`` (None: the driver chooses) and wait.

        What is checked before anything is enqueued: the range against the device's limits,
        every argument set (a ``set_args`` that raised leaves none set), no buffer or image
        argument released. What is not, because no launch can know it: how far the kernel
        indexes its buffers. This is the low-level API; a kernel that reads or writes past a
        buffer's end here corrupts whatever memory lies there, which on a CPU device such as
        PoCL is this process's own heap (the interpreter may abort). ``pyclperf.run_kernel``
        and ``pyclperf.tune`` protect against that: arrays go into buffers padded to the
        launched range with a guard zone after them, a write past an array's end is reported
        as ``out of bounds`` naming the argument, and by default (``Execution(isolate=True)``)
        ``tune`` runs the kernels in a worker process so that even a driver crash leaves the
        caller running.
        """
        _run(self, global_size, local_size)

    def time(
        self,
        global_size: Any,
        local_size: Any = None,
        *,
        warmup: int = 3,
        repeats: int = 20,
        method: str = "events",
    ) -> np.ndarray:
        """Per-launch times in ns after ``warmup`` launches; ``method`` is "events" or "host".
        The launches are checked, and not checked, as ``run``'s are."""
        if method == "events":
            # end - start computed in C++: two timestamps read per launch, no array arithmetic.
            # The core converts the sizes and counts (and says what is wrong with them).
            if _busy.work:  # host work waiting for the device (device/busy.py): done meanwhile
                pending = _begin_durations(self, global_size, local_size, warmup, repeats)
                do_waiting_work()
                return pending.finish()
            return _time_durations(self, global_size, local_size, warmup, repeats)
        if method == "host":
            return np.asarray(_core.time_host(self, global_size, local_size, warmup, repeats),
                              dtype=np.float64)
        raise _core.InvalidArgumentError(f"timing method must be 'events' or 'host', got {method!r}")


def _argument_index(index: Any) -> int:
    if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"argument index must be an integer (a Python int or a NumPy integer), "
                        f"got {index!r} ({type(index).__name__})")
    return int(index)


def ceil_to(n: int, multiple: int) -> int:
    """n rounded up to a multiple (NDRange helper)."""
    return -(-n // multiple) * multiple
