"""Taking turns at one device, so that processes can share a GPU without sharing a measurement.

The guide runs its experiments in several processes at once (its lanes) because most of an
experiment's seconds on a GPU are host work: drawing inputs, computing the NumPy reference,
comparing. Only one lane may have work on the device at a time, or one lane's launches would
land inside another's timed ones. So a lane holds the device's *turn* for an experiment's
sweep (``pyclperf run`` takes it around the sweep: the context opened before and the files
written after are the lane's own), and gives it up only inside ``host_only()``: sections that
touch no device (no launch, no transfer, no buffer made or released), which the experiments put
around their host references, comparisons and program builds. Host sections of several lanes
run side by side on the host's cores while one lane measures.

Some experiments measure something the host's own work disturbs: transfers over the host's bus,
the host's clocks. They take the turn ``quiet``: while they hold it, no other lane runs host
work either.

Three advisory file locks in one folder (``$PYCLPERF_DEVICE_TURNS``, set by the guide for its
lanes) do it: ``device`` (exclusive: the turn), ``host`` (shared by host sections, exclusive for
a quiet turn) and ``gate`` (a quiet turn closes it while it waits for the host sections under
way, so that new ones cannot keep it waiting for ever). No lane waits for ``gate`` or ``host``
while it holds ``device``, and a quiet turn takes ``device`` last, so no two lanes can wait on
each other, and the device is never held idle while host work drains. A lane that dies or is
killed lets go of all three (the kernel drops a dead process's locks).

Without that variable, or outside a turn, every call here does nothing: ``pyclperf run``, the
tuner and the tests run as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import threading
import time
from pathlib import Path
from typing import IO, Any, Callable, Iterator, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

TURNS_ENV = "PYCLPERF_DEVICE_TURNS"


class _Turn:
    """This process's state: the open lock files and whether (and how) it holds the turn."""

    def __init__(self) -> None:
        self.files: dict[str, IO[bytes]] = {}
        self.holding = False
        self.quiet = False
        self.since = 0.0  # when the turn was last taken
        self.held_s = self.waited_s = 0.0  # over the current experiment
        # Host sections are the main thread's: a helper thread's work (Context.prebuild's
        # builds) is not given a turn of its own.
        self.owner: int | None = None

    def file(self, path: str) -> IO[bytes]:
        if path not in self.files:
            self.files[path] = open(path, "ab")
        return self.files[path]

    def close(self) -> None:
        """Close the lock files (each lock goes with its file)."""
        for f in self.files.values():
            f.close()
        self.files.clear()


_state = _Turn()

# Called, in this process, just after the turn is taken and just before it is given up (each
# time: around every host section too); see ``watching``.
_watchers: list[tuple[Callable[[], None], Callable[[], None]]] = []


def _folder() -> str | None:
    return os.environ.get(TURNS_ENV) or None


def _path(name: str) -> str:
    folder = _folder()
    assert folder is not None
    return str(Path(folder) / f"{name}.lock")


def _lock(name: str, mode: int) -> None:
    fcntl.flock(_state.file(_path(name)).fileno(), mode)


def _unlock(name: str) -> None:
    f = _state.files.get(_path(name)) if _folder() else None
    if f is not None:
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def device_turn(quiet: bool = False, label: str = "") -> Iterator[None]:
    """Hold the device (and, ``quiet``, the host) for the body: one experiment's run. Where
    turns are taken, the seconds it held the device and waited for it are appended to the
    folder's ``turns.jsonl`` under ``label`` (the guide sums them up: ``held``)."""
    folder = _folder()
    if folder is None or _state.holding:
        yield
        return
    _state.held_s = _state.waited_s = 0.0
    _take(quiet)
    try:
        _state.quiet, _state.owner = quiet, threading.get_ident()
        yield
    finally:
        _give(quiet)
        _state.owner = None
        with open(Path(folder) / "turns.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps({"label": label, "held_s": round(_state.held_s, 3),
                                "waited_s": round(_state.waited_s, 3), "quiet": quiet}) + "\n")


def _take(quiet: bool = False) -> None:
    """Wait for the turn and note the wait. A quiet turn first closes the gate to new host
    sections, waits out those under way (host, exclusive) and opens the gate again, all before
    it asks for the device: the device is never held idle while host work drains."""
    asked = time.monotonic()
    if quiet:
        _lock("gate", fcntl.LOCK_EX)
        try:
            _lock("host", fcntl.LOCK_EX)
        finally:
            _unlock("gate")
    _lock("device", fcntl.LOCK_EX)
    _state.since = time.monotonic()
    _state.waited_s += _state.since - asked
    _state.holding = True
    for taken, _ in _watchers:
        taken()


def _give(quiet: bool = False) -> None:
    """Let the turn go (and the host's quiet, ``quiet``) and note how long it was held."""
    for _, giving in reversed(_watchers):
        giving()
    _state.held_s += time.monotonic() - _state.since
    _state.holding = False
    _unlock("device")
    if quiet:
        _unlock("host")


@contextlib.contextmanager
def host_only() -> Iterator[None]:
    """Run the body, host work that touches no device, while another process measures.

    The device is idle when the body starts: pyclperf's launches and transfers wait for their
    commands before they return. The turn is given up first, then the section passes the gate
    (closed while a quiet turn waits for host work to drain) and holds ``host`` shared. Under a
    quiet turn the body runs inside it: giving the quiet up and taking it again around every
    host section of a transfer sweep made each of its points wait for the other lanes' host
    work to drain (on the H200 the device then stood idle a third of the guide). Outside a turn
    the body simply runs.
    """
    if not _state.holding or _state.quiet or _state.owner != threading.get_ident():
        yield
        return
    _give()
    try:
        _lock("gate", fcntl.LOCK_SH)
        try:
            _lock("host", fcntl.LOCK_SH)
        finally:
            _unlock("gate")
        try:
            yield
        finally:
            _unlock("host")
    finally:
        _take()


@contextlib.contextmanager
def quiet_now() -> Iterator[None]:
    """Inside a turn: the host kept quiet for the body as well (no other lane's host work runs
    meanwhile), the turn taken again plainly after it. For a measurement of this process's own
    host clock in the middle of an experiment: the event clock's check compares the two clocks,
    and other lanes' NumPy on every core stretched its host times tenfold on the H200 (a copy of
    1 MiB seen at 772 us), which read as an event clock that does not grow with the work. Outside
    a turn, or in a quiet one already, the body simply runs."""
    if not _state.holding or _state.quiet or _state.owner != threading.get_ident():
        yield
        return
    _give()
    _take(quiet=True)
    _state.quiet = True
    try:
        yield
    finally:
        _state.quiet = False
        _give(quiet=True)
        _take()


def host_work(fn: F) -> F:
    """``fn`` always runs as ``host_only``: for functions that only compute on the host (a
    reference, an input drawn, a comparison) and never touch a device."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with host_only():
            return fn(*args, **kwargs)

    return run  # type: ignore[return-value]


def holding() -> bool:
    """Whether this process holds the device's turn now."""
    return _state.holding


@contextlib.contextmanager
def watching(taken: Callable[[], None], giving: Callable[[], None]) -> Iterator[None]:
    """For the body, call ``taken()`` each time this process has taken the turn and
    ``giving()`` each time before it gives the turn up (a profiler on only while the device is
    held: benchmarks/guide_profile.py --held). The lock files opened meanwhile are closed after
    it, so the folder the body's turns used can be removed."""
    pair = (taken, giving)
    _watchers.append(pair)
    try:
        yield
    finally:
        _watchers.remove(pair)
        if not _state.holding:
            _state.close()


def held(folder: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """What every turn taken under ``folder`` held and waited, in the order they ended."""
    path = Path(folder) / "turns.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


__all__ = ["TURNS_ENV", "device_turn", "held", "holding", "host_only", "host_work", "quiet_now",
           "watching"]
