"""One configuration's kernel arguments on the device, laid out so that no launch can reach
memory it does not own.

Each array argument lives in a device buffer padded to cover every launched work-item (a
kernel without a bounds check, launched over a global size rounded up to the work-group, writes
past the array's end) plus a guard zone. Padding and guard hold poison; after the verified
launch the guard is read back, so a write past an array's end becomes the configuration's
``out of bounds`` status, naming the argument, and never lands in host memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .. import _core
from ..program import LocalMemory
from . import argtypes

# Bytes past the launched range that must still hold poison after the verified launch.
GUARD_BYTES = 4096
# Buffer sizes are rounded to this, so that any fill pattern (1..128 bytes) tiles them.
ALIGN = 128


def poison_element(dtype: np.dtype) -> np.ndarray:
    """One element of poison: a quiet NaN with a payload for floats, 0xA5 bytes otherwise."""
    if dtype.kind == "f":
        return np.array([np.nan], dtype=dtype)
    if dtype.kind == "c":
        return np.array([complex(np.nan, np.nan)], dtype=dtype)
    return np.frombuffer(b"\xa5" * dtype.itemsize, dtype=dtype).copy()


def poison_pattern(dtype: np.dtype) -> np.ndarray:
    """A fill pattern (power-of-two bytes, at most 128) made of poison elements."""
    element = poison_element(dtype).view(np.uint8)
    size = element.size
    if size & (size - 1) or size > 128:  # odd-sized structs: a byte pattern tiles anything
        return np.array([0xA5], dtype=np.uint8)
    return element


def guard_pattern(index: int) -> np.ndarray:
    """The bytes the guard zone of argument ``index`` holds. Different for every argument, so
    a kernel that copies past one array's end from past another's is still caught."""
    return np.array([0xBD, 0x47 + index % 128, 0x9E, 0x2B], dtype=np.uint8)


def is_poison(values: np.ndarray) -> np.ndarray:
    """Which elements still hold pyclperf's poison."""
    if values.dtype.kind in "fc":
        return np.isnan(values)
    raw = values.reshape(-1).view(np.uint8).reshape(values.size, values.dtype.itemsize)
    return np.all(raw == 0xA5, axis=1).reshape(values.shape)


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


@dataclass
class Placed:
    """An array argument's host data and its padded device buffer."""

    host: np.ndarray
    buffer: Any
    capacity: int
    pristine: Any = None  # device copy of an in/out argument's input
    # Whether the buffer may differ from ``host`` plus its guard since the last upload: poisoned,
    # or a guard found changed. ``writable``: the last kernel bound to it could write through
    # its parameter. Only a clean buffer that no kernel could write is kept instead of uploaded
    # again (Arguments._place).
    dirty: bool = True
    writable: bool = True

    @property
    def nbytes(self) -> int:
        return int(self.host.nbytes)


def _read_only(info: Any) -> bool:
    """Whether no kernel can write through this parameter: __constant, or declared const."""
    return info.address_qualifier == "constant" or bool(getattr(info, "is_const", False))


class Arguments:
    """Device copies of a kernel's arguments, reused across configurations while they fit."""

    def __init__(self, ctx: Any, pinned: bool = False) -> None:
        self.ctx = ctx
        self.pinned = pinned
        self.values: list[Any] = []
        self.placed: dict[int, Placed] = {}
        self.names: list[str] = []

    # --- binding ---------------------------------------------------------------------------
    def bind(self, kernel: Any, values: Sequence[Any], launched_items: int,
             inout: Sequence[int] = (), poisoned: Sequence[int] = ()) -> None:
        """Check ``values`` against the kernel's declarations, place arrays (uploading them)
        and set every argument. TypeError / InvalidArgumentError name the argument.

        The arrays of ``poisoned`` (to be poisoned before the launch) are not uploaded: the
        poison would overwrite them at once."""
        if len(values) != kernel.num_args:
            names = ", ".join(a.name for a in kernel.args)
            raise TypeError(f"kernel '{kernel.name}' takes {kernel.num_args} argument(s) "
                            f"({names}), got {len(values)}")
        self.values = list(values)
        self.names = [a.name for a in kernel.args]
        device_args: list[Any] = []
        for i, (value, info) in enumerate(zip(values, kernel.args)):
            if isinstance(value, np.ndarray):
                argtypes.check_plain_array(i, value)
                value = argtypes.in_host_order(value)  # outputs come back in the host's order
                problem = argtypes.check_array_for(i, info, value)
                if problem:
                    raise TypeError(problem)
                device_args.append(self._place(i, value, info, launched_items, i in inout,
                                               i in poisoned))
            elif isinstance(value, LocalMemory):
                if info.address_qualifier != "local":
                    raise TypeError(f"{argtypes.describe(i, info)} is not a __local pointer, "
                                    "but LocalMemory was given")
                device_args.append(value)
            elif isinstance(value, (_core.Buffer, _core.Image, _core.Sampler)):
                device_args.append(value)
            else:
                device_args.append(argtypes.scalar_for(i, info, value))
        for i in [i for i in self.placed if not isinstance(self.values[i], np.ndarray)]:
            del self.placed[i]
        kernel.set_args(*device_args)

    def _place(self, index: int, array: np.ndarray, info: Any, launched_items: int,
               inout: bool, poisoned: bool = False) -> Any:
        host = np.ascontiguousarray(array)
        if host.size == 0:
            raise _core.InvalidArgumentError(f"argument {index} ('{info.name}') is an empty array")
        declared, width, _ = argtypes.element_type(info.type_name)
        item = declared.itemsize * width if declared is not None else host.itemsize
        # Every launched work-item may touch one element: cover that, then the guard zone.
        capacity = _round_up(max(host.nbytes, launched_items * item) + GUARD_BYTES, ALIGN)
        old = self.placed.get(index)
        if old is not None and old.capacity >= capacity and old.host.nbytes == host.nbytes:
            # The same array again, for a parameter no kernel can write (const or __constant),
            # in a buffer nothing has touched since: what the device holds is what an upload
            # would write. (An array changed in place between configurations must come from a
            # callable returning a new array; in place, it is the same object.)
            unchanged = (old.host is host and not old.dirty and not old.writable and not inout
                         and not poisoned and old.pristine is None)
            old.host = host
            if unchanged:
                old.writable = not _read_only(info)
                return old.buffer
            placed = old
        else:
            buf = (_core.PinnedBuffer(self.ctx, capacity) if self.pinned
                   else _core.Buffer(self.ctx, capacity))
            placed = Placed(host, buf, capacity)
            self.placed[index] = placed
        if inout and placed.pristine is None:
            placed.pristine = _core.Buffer(self.ctx, _round_up(host.nbytes, ALIGN))
        if not inout:
            placed.pristine = None
        if poisoned:
            placed.dirty = True  # the poison goes in next (Arguments.poison)
        else:
            self.upload(index)
        if placed.pristine is not None:
            placed.pristine.write(host)
        placed.writable = not _read_only(info)
        return placed.buffer

    # --- contents ---------------------------------------------------------------------------
    def upload(self, index: int) -> None:
        """The argument's input data, then its guard pattern over the padding and guard."""
        p = self.placed[index]
        p.buffer.write(p.host)
        self._write_guard(index, p)
        p.dirty = False

    def upload_all(self) -> None:
        """Every array argument's input again (reset_outputs: before every timed launch)."""
        for i in self.placed:
            self.upload(i)

    def poison(self, index: int) -> None:
        """Poison over the data: every element the kernel does not write stays poison."""
        p = self.placed[index]
        p.dirty = True
        if isinstance(p.buffer, _core.PinnedBuffer):  # mapped: write through the host view
            p.buffer.write(np.resize(poison_pattern(p.host.dtype), p.nbytes))
        else:
            p.buffer.fill(poison_pattern(p.host.dtype))
        self._write_guard(index, p)

    def _write_guard(self, index: int, p: Placed) -> None:
        p.buffer.write(np.resize(guard_pattern(index), p.capacity - p.nbytes), p.nbytes)

    def restore_inout(self) -> None:
        """Put every in/out argument's input back (a device-side copy, outside any timing)."""
        for p in self.placed.values():
            if p.pristine is not None:
                p.buffer.copy_from(p.pristine, p.nbytes)

    def fetch(self, index: int) -> np.ndarray:
        p = self.placed[index]
        out = np.empty_like(p.host)
        p.buffer.read(out)
        return out

    def outputs(self) -> list[Any]:
        """Every argument as the kernel left it: arrays read back, the rest as given."""
        return [self.fetch(i) if i in self.placed else v for i, v in enumerate(self.values)]

    def guard_problem(self) -> str:
        """Which arguments the kernel wrote past the end of (empty when none)."""
        found = []
        for i, p in sorted(self.placed.items()):
            tail = np.empty(p.capacity - p.nbytes, dtype=np.uint8)
            p.buffer.read(tail, p.nbytes)
            changed = np.flatnonzero(tail != np.resize(guard_pattern(i), tail.size))
            if changed.size:
                p.dirty = True  # the guard must be written again before the next launch
                item = p.host.itemsize
                first, last = int(changed[0]) // item, int(changed[-1]) // item
                found.append(f"argument {i} ('{self.names[i]}'): the kernel wrote past the end of "
                             f"its {p.host.size}-element array, from {first} to {last} elements "
                             f"past the end ({changed.size} bytes changed)")
        return "; ".join(found)

    def release(self) -> None:
        for p in self.placed.values():
            p.buffer.release()
            if p.pristine is not None:
                p.pristine.release()
        self.placed.clear()
