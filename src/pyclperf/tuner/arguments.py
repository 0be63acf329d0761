"""One configuration's kernel arguments on the device, laid out so that no launch can reach
memory it does not own.

Each array argument lives in a device buffer padded to cover every launched work-item (a
kernel without a bounds check, launched over a global size rounded up to the work-group, writes
past the array's end) plus a guard zone. Padding and guard hold poison; after the verified
launch the guard is read back, so a write past an array's end becomes the configuration's
``out of bounds`` status, naming the argument, and never lands in host memory. On a device
whose memory is the host's, a worker process fences each such buffer off besides (fences.py), so
that a write beyond the guard zone faults instead of landing in the worker's other memory; there
the padding is bounded by the array's size (overrun.py), so a launch far larger than its arrays
costs a fault, not host memory in proportion to the launch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .. import _core
from ..device.program import LocalMemory
from ..device import argtypes
from . import fences, overrun
from ..measure.intact import checksum
from ..measure.poison import guard_pattern, poison_element, typed_poison_fill

# Bytes past the launched range that must still hold their pattern after the verified launch:
# GUARD_FACTOR times the array's launched bytes, at least GUARD_MIN and at most GUARD_MAX. Wide,
# so that a write far past the end (an offset added twice, a wrong tile size) still lands in the
# guard and is measured, instead of in memory nobody checks; cheap, since the guard is written
# and checked on the device.
GUARD_MIN = 1 << 16
GUARD_FACTOR = 32
GUARD_MAX = 32 << 20


def guard_bytes_for(data_bytes: int) -> int:
    return min(GUARD_MAX, max(GUARD_MIN, GUARD_FACTOR * int(data_bytes)))
# Buffer sizes are rounded to this, so that any fill pattern (1..128 bytes) tiles them.
ALIGN = 128




def _words(values: np.ndarray) -> np.ndarray:
    """Each element's bits as one unsigned integer, or as a row of bytes when no integer is
    that wide."""
    flat = np.ascontiguousarray(values).reshape(-1)
    size = flat.dtype.itemsize
    if size in (1, 2, 4, 8):
        return flat.view(f"u{size}")
    return flat.view(np.uint8).reshape(flat.size, size)


def same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Which elements of two arrays of one dtype and shape are equal bit for bit (a NaN equals
    a NaN of the same payload; 0.0 does not equal -0.0)."""
    eq = _words(a) == _words(b)
    return (eq if eq.ndim == 1 else eq.all(axis=1)).reshape(a.shape)


def holds_poison(values: np.ndarray, which: int = 0) -> np.ndarray:
    """Which elements hold poison ``which``, bit for bit."""
    eq = _words(values) == _words(poison_element(values.dtype, which))[0]
    return (eq if eq.ndim == 1 else eq.all(axis=1)).reshape(values.shape)


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def _checked_array(index: int, info: Any, array: np.ndarray) -> np.ndarray:
    """``array`` in the host's byte order (outputs come back so), once it is found fit for
    parameter ``info``; TypeError naming the argument otherwise."""
    argtypes.check_plain_array(index, array)
    array = argtypes.in_host_order(array)
    problem = argtypes.check_array_for(index, info, array)
    if problem:
        raise TypeError(problem)
    return array


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
    guard_sum: int | None = None  # checksum of the guard zone's words as written
    # Checksum of the data as last uploaded, for an input no kernel may write (sealed()): taken
    # once per upload, not before every launch; None until taken, and after a change.
    seal: int | None = None
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
        # A write found reaching the far end of a guard zone: it may have gone on into memory
        # that is not ours, so the process that ran it is not to be trusted further.
        self.escaped = False
        self.guard_bytes: int | None = None  # a fixed guard size (extent probes); else by size
        # Per argument index, a device buffer holding that argument's guard pattern: guard
        # zones are written from it by a device-side copy, not uploaded.
        self.templates: dict[int, Any] = {}
        # Set in a worker process on a device that works in host memory (tuner/fences.py):
        # each array's buffer is then fenced, and every fenced buffer is reported here.
        self.fenced_log: Callable[[str], None] | None = None

    # --- binding ---------------------------------------------------------------------------
    def bind(self, kernel: Any, values: Sequence[Any], launched_items: int,
             inout: Sequence[int] = (), poisoned: Sequence[int] = ()) -> None:
        """Check ``values`` against the kernel's declarations, place arrays (uploading them)
        and set every argument. TypeError / InvalidArgumentError name the argument.

        The arrays of ``poisoned`` (to be poisoned before the launch) are not uploaded: the
        poison would overwrite them at once."""
        self.check(kernel, values)
        self.values = list(values)
        self.names = [a.name for a in kernel.args]
        device_args: list[Any] = []
        for i, (value, info) in enumerate(zip(values, kernel.args)):
            if isinstance(value, np.ndarray):
                value = _checked_array(i, info, value)
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

    @staticmethod
    def check(kernel: Any, values: Sequence[Any]) -> None:
        """The number of ``values`` and the element type of each array against the kernel's
        declarations, before anything is placed (or an answer is judged against the arrays):
        TypeError naming the argument."""
        if len(values) != kernel.num_args:
            names = ", ".join(a.name for a in kernel.args)
            raise TypeError(f"kernel '{kernel.name}' takes {kernel.num_args} argument(s) "
                            f"({names}), got {len(values)}")
        for i, (value, info) in enumerate(zip(values, kernel.args)):
            if isinstance(value, np.ndarray) and value.dtype.isnative:
                _checked_array(i, info, value)

    def _place(self, index: int, array: np.ndarray, info: Any, launched_items: int,
               inout: bool, poisoned: bool = False) -> Any:
        host = np.ascontiguousarray(array)
        if host.size == 0:
            raise _core.InvalidArgumentError(f"argument {index} ('{info.name}') is an empty array")
        declared, width, _ = argtypes.element_type(info.type_name)
        item = declared.itemsize * width if declared is not None else host.itemsize
        # Every launched work-item may touch one element: cover that (where fenced, up to a
        # bound of the array's size: overrun.py), then the guard zone.
        launch = launched_items * item
        capacity = self._capacity(host.nbytes, launch, self._fenced)
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
            buf, capacity = self._allocate(index, info.name, host, capacity, launch)
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

    @property
    def _fenced(self) -> bool:
        """Whether array buffers get fences (a worker on a device that works in host memory)."""
        return self.fenced_log is not None and not self.pinned

    def _capacity(self, array_bytes: int, launch_bytes: int, bounded: bool) -> int:
        """The buffer of an array: its data, the room past it that covers the launch (bounded
        by the array's size where ``bounded``), and the guard zone after that."""
        room = (overrun.fenced_room(array_bytes, launch_bytes) if bounded
                else max(0, launch_bytes - array_bytes))
        data = array_bytes + room
        guard = self.guard_bytes if self.guard_bytes is not None else guard_bytes_for(data)
        return _round_up(data + guard, ALIGN)

    def _allocate(self, index: int, name: str, host: np.ndarray, capacity: int,
                  launch: int) -> tuple[Any, int]:
        """A buffer of ``capacity`` bytes for argument ``index``, and its capacity. A fenced
        buffer whose fence cannot hold what the launch may write past it is given up for one
        that covers the launch."""
        if self.pinned:
            return _core.PinnedBuffer(self.ctx, capacity), capacity
        if self.fenced_log is None:
            return _core.Buffer(self.ctx, capacity), capacity
        buf = fences.allocate(self.ctx, capacity)
        covered = isinstance(buf, _core.FencedBuffer) and buf.fence >= launch - capacity
        if not covered and launch > capacity:  # the address space allows no such fence
            buf.release()
            capacity = self._capacity(host.nbytes, launch, bounded=False)
            buf = fences.allocate(self.ctx, capacity)
        if isinstance(buf, _core.FencedBuffer):
            self.fenced_log(fences.placement_line(index, name, buf, host))
        return buf, capacity

    # --- contents ---------------------------------------------------------------------------
    def upload(self, index: int) -> None:
        """The argument's input data, then its guard pattern over the padding and guard."""
        p = self.placed[index]
        p.buffer.write(p.host)
        p.seal = None
        self._write_guard(index, p)
        p.dirty = False

    def upload_all(self) -> None:
        """Every array argument's input again (reset_outputs: before every timed launch)."""
        for i in self.placed:
            self.upload(i)

    def poison(self, index: int, which: int = 0) -> None:
        """Poison ``which`` over the data: every element the kernel does not write stays poison."""
        p = self.placed[index]
        p.dirty = True
        p.seal = None
        pattern = typed_poison_fill(p.host.dtype, which)
        if isinstance(p.buffer, _core.PinnedBuffer):  # mapped: write through the host view
            p.buffer.write(np.resize(pattern, p.nbytes))
        else:
            p.buffer.fill(pattern)
        self._write_guard(index, p)

    def _write_guard(self, index: int, p: Placed) -> None:
        """The guard pattern from the array's end to the buffer's, copied on the device from
        the argument's template; its checksum is taken the first time (guard_problem compares)."""
        size = p.capacity - p.nbytes
        template = self.templates.get(index)
        if template is None or template.nbytes < size:
            if template is not None:
                template.release()
            template = _core.Buffer(self.ctx, _round_up(size, ALIGN))
            template.fill(guard_pattern(index))
            self.templates[index] = template
        p.buffer.copy_from(template, size, 0, p.nbytes)
        if p.guard_sum is None:
            start = _round_up(p.nbytes, 4)
            p.guard_sum = checksum(self.ctx, p.buffer, p.capacity - start, start)

    def keep_input(self, index: int) -> None:
        """Treat argument ``index`` as in/out from now on: a device copy of its input, which
        restore_inout puts back before every timed launch."""
        p = self.placed[index]
        if p.pristine is None:
            p.pristine = _core.Buffer(self.ctx, _round_up(p.nbytes, ALIGN))
            p.pristine.write(p.host)

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
        """Which arguments the kernel wrote past the end of (empty when none), with how far:
        counted in elements, from the first element past the end that changed to the last. A
        change at the very end of a guard zone sets ``escaped``: the write may go further. The
        zone is read back in chunks (overrun.scan), never whole."""
        found = []
        for i, p in sorted(self.placed.items()):
            if self._guard_intact(i, p):
                continue
            hit = overrun.scan(lambda out, at, p=p: p.buffer.read(out, p.nbytes + at),
                               p.capacity - p.nbytes, p.host.itemsize, guard_pattern(i))
            if hit is None:
                continue
            p.dirty = True  # the guard must be written again before the next launch
            self.escaped |= hit.reaches_end
            n = p.host.size
            span = (f"element {n + hit.first}" if hit.first == hit.last
                    else f"elements {n + hit.first} to {n + hit.last}")
            extent = (f"{hit.last + 1} element{'s' if hit.last else ''} past the end"
                      if not hit.reaches_end else
                      f"at least {hit.last + 1} elements past the end: the whole "
                      f"{p.capacity - p.nbytes}-byte guard zone changed, so the write may reach "
                      "further")
            found.append(f"argument {i} ('{self.names[i]}'): the kernel wrote past the end of "
                         f"its {n}-element array, {extent} ({span} changed; "
                         f"{hit.count} element{'s' if hit.count != 1 else ''} in all)")
        return "; ".join(found)

    def _guard_intact(self, index: int, p: Placed) -> bool:
        """The device-side check: the guard's whole words by checksum, the bytes before the
        first whole word (an array whose size is no multiple of 4) read back."""
        start = _round_up(p.nbytes, 4)
        if start > p.nbytes:
            head = np.empty(start - p.nbytes, np.uint8)
            p.buffer.read(head, p.nbytes)
            if not np.array_equal(head, np.resize(guard_pattern(index), head.size)):
                return False
        return checksum(self.ctx, p.buffer, p.capacity - start, start) == p.guard_sum

    def sealed(self, skip: Sequence[int]) -> dict[int, int]:
        """Checksums of the arrays no kernel may write (declared const or __constant), except
        ``skip``: taken before a launch, compared by breached() after it. Each is taken once
        after the array's upload and kept (Placed.seal): nothing but a kernel writes it until the
        next upload, and a kernel that does is caught by breached()."""
        from ..measure.intact import checksum

        seals = {}
        for i, p in sorted(self.placed.items()):
            if p.writable or i in skip or p.pristine is not None:
                continue
            if p.seal is None:
                p.seal = checksum(self.ctx, p.buffer, p.nbytes)
            seals[i] = p.seal
        return seals

    def breached(self, seals: dict[int, int]) -> str:
        """Which sealed arrays the launch changed, and where (empty when none)."""
        from ..measure.intact import changed_span, checksum

        found = []
        for i, before in seals.items():
            p = self.placed[i]
            if checksum(self.ctx, p.buffer, p.nbytes) == before:
                continue
            p.dirty = True
            p.seal = None
            found.append(f"argument {i} ('{self.names[i]}'), an input declared const, was changed "
                         f"by the launch ({changed_span(p.host, self.fetch(i))}): a write past "
                         "another array's end landed in it, or the kernel casts away const")
            self.escaped = True  # the write went beyond every guard zone
        return "; ".join(found)

    def release(self) -> None:
        for t in self.templates.values():
            t.release()
        self.templates.clear()
        for p in self.placed.values():
            p.buffer.release()
            if p.pristine is not None:
                p.pristine.release()
        self.placed.clear()
