"""The buffers of the transfer experiments, and one verified, timed transfer of any mode.

A mode is a direction (h2d, d2h, d2d), the host memory (pageable NumPy or pinned) and the
access (direct read/write, or map + memcpy + unmap). Each measurement fills the source with
fresh random bytes and poisons the destination, times the transfers, then checks that the
destination holds the bytes and that the poison after them is untouched.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .. import _core
from ..measure.checks import landed, poison, poison_device, random_bytes
from ..measure.parallel import copy_into
from ..measure.stats import KiB
from ..measure.sweep import timed_row, verdict
from ..measure.timing import collect_rounds
from ..measure.timing_policy import Policy
from ..device.transfers import time_copy, time_transfer

# Bytes past every transfer that must keep their poison: catches a transfer that writes too far.
GUARD_BYTES = 4096


@dataclass(frozen=True)
class Mode:
    direction: str  # "h2d", "d2h" or "d2d"
    host_memory: str = "device"  # "pageable" or "pinned"; "device" for d2d
    access: str = "direct"  # "direct" or "mapped"

    def __post_init__(self) -> None:
        host_sides = ("pageable", "pinned")
        valid = (self.direction == "d2d" and (self.host_memory, self.access) == ("device", "direct")) or (
            self.direction in ("h2d", "d2h") and self.host_memory in host_sides
            and self.access in ("direct", "mapped"))
        if not valid:
            raise _core.InvalidArgumentError(
                f"no transfer mode {self.name!r}: use 'h2d'/'d2h' with 'pageable'/'pinned' and "
                "'direct'/'mapped' (e.g. 'h2d pinned direct'), or 'd2d'")

    @classmethod
    def parse(cls, name: str | Mode) -> Mode:
        """From "h2d pinned direct" (access defaults to direct) or "d2d"."""
        if isinstance(name, Mode):
            return name
        return cls(*str(name).split())

    @property
    def name(self) -> str:
        return self.direction if self.direction == "d2d" else (
            f"{self.direction} {self.host_memory} {self.access}")

    def bytes_moved(self, nbytes: int) -> int:
        """A device copy reads and writes device memory (Guide 2.2.2); a host transfer crosses
        the bus once, so it counts once."""
        return 2 * nbytes if self.direction == "d2d" else nbytes

    @property
    def peak_kind(self) -> str:
        return "dram" if self.direction == "d2d" else "pcie"

    def fields(self) -> dict[str, str]:
        return {"mode": self.name, "direction": self.direction, "host_memory": self.host_memory,
                "access": self.access}


ALL_MODES = tuple(Mode(d, h, a) for d in ("h2d", "d2h") for h in ("pageable", "pinned")
                  for a in ("direct", "mapped")) + (Mode("d2d"),)


def clock_for(mode: Mode, method: str) -> str:
    """The clock ``mode`` is timed by: ``method``, except that a mapped transfer is always
    timed by the host's. Its span by events runs from the map command's start to the unmap
    command's end, with the host's memcpy between them, and a driver may stamp the two on
    different clocks: on NVIDIA's OpenCL (driver 580, an H200) every mapped host-to-device
    transfer read about 3 s by events, 1 KiB or 1 GiB alike. The host's clock around map,
    memcpy, unmap and finish is what such a transfer costs an application."""
    return "host" if mode.access == "mapped" else method


def transfer_limit(info: _core.DeviceInfo) -> int:
    """The largest transfer the rig will set up: within one allocation, a quarter of the
    device's memory, and an eighth of the host's (pageable, pinned and check copies)."""
    host = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return min(info.max_alloc_bytes, info.global_mem_bytes // 4, host // 8) - GUARD_BYTES


class TransferRig:
    """Buffers for transfers of up to ``capacity`` bytes in the given modes."""

    def __init__(self, ctx: Any, capacity: int, modes: list[Mode]) -> None:
        limit = transfer_limit(ctx.info)
        if not 0 < capacity <= limit:
            raise _core.InvalidArgumentError(
                f"transfers of {capacity} bytes do not fit: the limit on '{ctx.info.name}' is "
                f"{limit} bytes (one allocation, 1/4 of device memory, 1/8 of host memory)")
        size = capacity + GUARD_BYTES
        self.capacity = capacity
        self.device = ctx.buffer(size)
        self.device2 = ctx.buffer(size) if any(m.direction == "d2d" for m in modes) else None
        self.pageable = np.empty(size, np.uint8) if any(m.host_memory == "pageable" for m in modes) else None
        self.pinned = _core.PinnedBuffer(ctx, size) if any(m.host_memory == "pinned" for m in modes) else None
        self.pinned_view = self.pinned.array() if self.pinned is not None else None
        self.rng = np.random.default_rng()
        self._data: np.ndarray | None = None  # the run's random bytes, drawn on first use
        self._out: np.ndarray | None = None  # where device buffers are read back to be checked
        # For tests: called as after_timing(mode, nbytes) between the timed transfers and the
        # check, e.g. to corrupt the destination and see the check fail.
        self.after_timing: Callable[[Mode, int], None] | None = None

    def host(self, mode: Mode) -> tuple[Any, Any]:
        """What the transfer takes as host memory, and a NumPy view of the same bytes."""
        if mode.host_memory == "pinned":
            assert self.pinned is not None and self.pinned_view is not None, "rig built without pinned modes"
            return self.pinned, self.pinned_view
        return self.pageable, self.pageable

    def time(self, mode: Mode, nbytes: int, *, pieces: int = 1, method: str = "events",
             warmup: int = 3, repeats: int = 20) -> np.ndarray:
        """Per-repeat times in ns, without verification (a mapped mode by the host's clock:
        clock_for)."""
        method = clock_for(mode, method)
        if mode.direction == "d2d":
            if pieces != 1:
                raise _core.InvalidArgumentError("device copies are not batched: pieces must be 1")
            assert self.device2 is not None, "rig built without device copies"
            return time_copy(self.device, self.device2, nbytes, method=method, warmup=warmup,
                             repeats=repeats)
        host, _ = self.host(mode)
        return time_transfer(mode.direction, self.device, host, nbytes, access=mode.access,
                             pieces=pieces, method=method, warmup=warmup, repeats=repeats)

    def measure(self, mode: Mode, nbytes: int, *, pieces: int = 1, method: str = "events",
                warmup: int = 3, repeats: int = 20, verify: bool = True,
                policy: Policy | None = None) -> dict[str, Any]:
        """Timing statistics, bandwidth and verdict of one mode and size (a row's measured part).
        With ``policy`` (measure.timing_policy) the transfers are timed by its rule, as a kernel
        launch is; without, exactly ``repeats``. The row says how the timing stopped."""
        if not 0 < nbytes <= self.capacity:
            raise _core.InvalidArgumentError(
                f"transfer of {nbytes} bytes outside this rig's 1..{self.capacity}")
        data = self.input(nbytes) if verify else None
        if data is not None:
            self._prepare(mode, data)
        samples = collect_rounds(
            lambda count, warm: self.time(mode, nbytes, pieces=pieces, method=method,
                                          warmup=warm, repeats=count),
            warmup=warmup, policy=policy or Policy(min_samples=repeats, rel_target=None))
        if self.after_timing is not None:
            self.after_timing(mode, nbytes)
        passed, detail = self._check(mode, data) if data is not None else (True, "not verified")
        return {**timed_row(samples.times, mode.bytes_moved(nbytes), clock_for(mode, method)),
                **samples.columns(),
                **verdict(verify, passed, detail)}

    def input(self, nbytes: int) -> np.ndarray:
        """The first ``nbytes`` of the rig's random bytes, drawn once at its capacity. Every
        transfer copies its source unchanged, and its destination is poisoned before each one, so
        the sizes and modes share one draw (a GiB drawn per point cost the guide seconds each);
        a destination holding the bytes before the transfer could only be the poison."""
        if self._data is None:
            self._data = random_bytes(self.rng, self.capacity)
        return self._data[:nbytes]

    def _prepare(self, mode: Mode, data: np.ndarray) -> None:
        """Random bytes into the source, poison over the destination."""
        n = data.size
        _, view = self.host(mode)
        if mode.direction == "h2d":
            copy_into(view[:n], data)
            poison_device(self.device)
        elif mode.direction == "d2h":
            self.device.write(data)
            poison(view[: n + GUARD_BYTES])
        else:
            self.device.write(data)
            poison_device(self.device2)

    def _check(self, mode: Mode, data: np.ndarray) -> tuple[bool, str]:
        span = data.size + GUARD_BYTES
        if mode.direction == "d2h":
            return landed(self.host(mode)[1][:span], data)
        if self._out is None:  # one array for every readback, not a GiB of fresh pages each
            self._out = np.empty(self.capacity + GUARD_BYTES, np.uint8)
        out = self._out[:span]
        poison(out)  # what the last check read must not pass for this one's
        target = self.device if mode.direction == "h2d" else self.device2
        assert target is not None
        target.read(out)
        return landed(out, data)

    def release(self) -> None:
        """Give every buffer back now (the views first, so the pinned mapping can go)."""
        self.pinned_view = None
        for b in (self.device, self.device2, self.pinned):
            if b is not None:
                b.release()


def sizes_up_to(top: int, bottom: int = KiB) -> list[int]:
    """Powers of 4 from ``bottom`` to ``top`` bytes."""
    out, n = [], bottom
    while n <= top:
        out.append(n)
        n *= 4
    return out
