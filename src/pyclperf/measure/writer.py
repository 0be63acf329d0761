"""Writing results files: one writer per file, and rows that arrive whole or not at all.

A lock (``<file>.lock``) keeps two runs from interleaving rows in one file. ResultsWriter
appends each finished row at once and fsyncs it on a thread of its own; a write that fails (a full disk) is cut back to the
last whole row and raises ResultsWriteError; an append after a last line that a killed process
left unfinished moves that fragment to ``<file>.torn`` first, so the next row starts a line of
its own; and a run stopped by Ctrl-C (or SIGTERM, or its time limit) ends the file with an
"end" record saying so.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from .validate import SCHEMA

if TYPE_CHECKING:
    from .results import Results

log = logging.getLogger(__name__)


class LockedError(RuntimeError):
    """Another process is writing the same results file."""


class ResultsWriteError(OSError):
    """A results file could not be written (a full disk, a file that cannot be written), so the
    sweep writing it stopped. The file holds every whole row written before, never half a row;
    ``results`` holds the same rows (and ``meta["write_error"]``) where a sweep was writing,
    ``path`` names the file. An OSError, with the errno of the failure underneath."""

    def __init__(self, path: str | os.PathLike[str], cause: OSError, detail: str = "") -> None:
        self.path = Path(path)
        self.reason = cause.strerror or str(cause)
        self.detail = detail  # what is safe, in words for anyone (a command-line user too)
        self.api_note = ""    # what a program finds where (this error's ``results``)
        self.results: Results | None = None
        super().__init__(cause.errno, self.reason)

    @property
    def problem(self) -> str:
        """What failed, without what became of the sweep."""
        return f"cannot write {self.path}: {self.reason}"

    @property
    def told(self) -> str:
        """The message for a person at a command line: what failed and what is safe."""
        return self.problem + (f"; {self.detail}" if self.detail else "")

    def __str__(self) -> str:
        return self.told + (f" ({self.api_note})" if self.api_note else "")

    def __reduce__(self) -> Any:  # OSError's own would call __init__ with (errno, reason)
        return _write_error, (self.path, self.errno, self.reason, self.detail, self.results,
                              self.api_note)


def _write_error(path: Path, errno: int | None, reason: str, detail: str,
                 results: "Results | None", api_note: str = "") -> ResultsWriteError:
    err = ResultsWriteError(path, OSError(errno, reason), detail)
    err.results = results
    err.api_note = api_note
    return err


def replace_whole(path: str | os.PathLike[str], write: Any) -> Path:
    """``write(tmp)`` to a file beside ``path``, then renamed over it: ``path`` is whole, the
    new one or the old one, never half of one. A write that fails (a full disk) removes the
    file beside it and raises ResultsWriteError naming ``path``."""
    p = Path(path)
    new = p.with_name(p.name + ".new")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        write(new)
        os.replace(new, p)
    except OSError as exc:
        with contextlib.suppress(OSError):
            new.unlink()
        raise ResultsWriteError(p, exc, "the file was left as it was") from exc
    return p


# Locks this process holds, by resolved results path: (lock file, depth). A process may take the
# same lock twice (the CLI around the whole run, the writer around its rows); flock would refuse
# the second open file of the same process, so the depth is counted here instead.
_HELD: dict[Path, tuple[Any, int]] = {}


def lock_path(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    return p.with_name(p.name + ".lock")


@contextlib.contextmanager
def results_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive, non-blocking lock on ``<path>.lock`` so two runs never interleave rows
    in one file; LockedError (one line) when another process holds it. The lock file is left in
    place: removing it would let a third process lock a different inode."""
    key = Path(path).resolve()
    if key in _HELD:
        f, depth = _HELD[key]
        _HELD[key] = (f, depth + 1)
    else:
        key.parent.mkdir(parents=True, exist_ok=True)
        f = open(lock_path(key), "a", encoding="utf-8")
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            raise LockedError(f"{path} is being written by another pyclperf process "
                              f"(lock {lock_path(path).name}); wait for it or choose another --out") from None
        _HELD[key] = (f, 1)
    try:
        yield
    finally:
        f, depth = _HELD[key]
        if depth > 1:
            _HELD[key] = (f, depth - 1)
        else:
            del _HELD[key]
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
            f.close()


class _Syncer:
    """fsyncs one open file on a thread of its own whenever asked, the asks made meanwhile
    served by one fsync: rows go to the file at once (a crash of this process loses none), and
    the wait for the disk, milliseconds a row on many disks, is no longer the sweep's."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.error: OSError | None = None
        self._wanted = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="pyclperf-fsync", daemon=True)
        self._thread.start()

    def ask(self) -> None:
        self._wanted.set()

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            stopping = self._stopping  # read before the fsync: it covers what came before
            try:
                os.fsync(self.fd)
            except OSError as exc:
                self.error = exc
                return
            if stopping:
                return

    def stop(self) -> OSError | None:
        """Wait until everything written before is on disk; the error an fsync met, if any."""
        self._stopping = True
        self._wanted.set()
        self._thread.join()
        return self.error


class ResultsWriter:
    """Appends rows to a JSON-lines file as they finish (written at once, and fsynced on a
    thread of its own, _Syncer, or once for rows added together inside synced_once), holding
    the file's lock (results_lock) until closed.

    A new file is begun beside the old one and renamed over it once its metadata line is
    written, so a full disk at the start leaves an older file as it was. A row whose write fails
    is cut off again, leaving the file at its last whole row, and ResultsWriteError is raised.
    ``append`` continues a file; a last line a killed process left unfinished is moved to
    ``<file>.torn`` first (and logged), so the next row starts a line of its own."""

    def __init__(self, path: str | os.PathLike[str], meta: dict[str, Any], append: bool = False) -> None:
        self.path = Path(path)
        self._fd = -1
        self._size = 0
        self._failed: ResultsWriteError | None = None
        # The file ends with a record saying its last run was interrupted or stopped early; a
        # run that ends normally without adding a row must say otherwise, or the mark would stand.
        self._ends_stopped = False
        self._syncer: _Syncer | None = None  # started by the first row
        self._lock = results_lock(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock.__enter__()  # LockedError (another process writes here) passes through
        except OSError as exc:
            raise ResultsWriteError(self.path, exc) from exc
        try:
            if append:
                self._open(self.path, os.O_CREAT)
                self._mend_tail()
            else:
                self._begin(meta)
        except BaseException:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
            self._lock.__exit__(None, None, None)
            raise

    def _open(self, path: Path, flags: int) -> None:
        try:
            self._fd = os.open(path, os.O_RDWR | os.O_APPEND | flags, 0o666)
            self._size = os.fstat(self._fd).st_size
        except OSError as exc:
            raise ResultsWriteError(self.path, exc) from exc

    def _begin(self, meta: dict[str, Any]) -> None:
        new = self.path.with_name(self.path.name + ".new")
        try:
            self._open(new, os.O_CREAT | os.O_TRUNC)
            self._write({"record": "meta", "schema": SCHEMA, **meta}, sync_now=True)
            os.replace(new, self.path)  # the open descriptor follows the file
        except BaseException as exc:
            with contextlib.suppress(OSError):
                new.unlink()
            if isinstance(exc, OSError) and not isinstance(exc, ResultsWriteError):
                raise ResultsWriteError(self.path, exc) from exc
            raise

    def _mend_tail(self) -> None:
        """Move a last line without its newline (a write a kill cut short) to ``<file>.torn``
        and cut it off, so appended rows start on a line of their own."""
        whole, last = _tail(self._fd, self._size)
        if whole < self._size:
            fragment = os.pread(self._fd, self._size - whole, whole)
            aside = self.path.with_name(self.path.name + ".torn")
            try:
                with open(aside, "ab") as f:
                    f.write(fragment + b"\n")
                    f.flush()
                    os.fsync(f.fileno())
                os.ftruncate(self._fd, whole)
            except OSError as exc:
                raise ResultsWriteError(self.path, exc, f"its torn last line could not be kept "
                                        f"aside in {aside.name}, so nothing was appended") from exc
            self._size = whole
            log.warning("%s: its last line was cut short (%d bytes of an unfinished write); "
                        "moved it to %s and appending after the last whole row",
                        self.path, len(fragment), aside.name)
        try:
            parsed = json.loads(last)
        except (ValueError, RecursionError):  # not JSON (or not text): no end record
            return
        self._ends_stopped = (isinstance(parsed, dict) and parsed.get("record") == "end"
                              and (parsed.get("interrupted") is True or "stopped" in parsed))

    _deferred = False

    def _write(self, record: dict[str, Any], sync_now: bool = False) -> None:
        if self._failed is not None:
            raise self._failed
        line = _line(record).encode("utf-8")
        data = memoryview(line)
        try:
            if self._syncer is not None and self._syncer.error is not None:
                raise self._syncer.error  # an earlier row's fsync failed: stop here
            while data:
                data = data[os.write(self._fd, data):]
            if sync_now:
                os.fsync(self._fd)
            elif not self._deferred:
                if self._syncer is None:
                    self._syncer = _Syncer(self._fd)
                self._syncer.ask()
        except OSError as exc:
            # Cut the part of the row that got in: the file ends at its last whole row.
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)
            self._failed = ResultsWriteError(self.path, exc)
            raise self._failed from exc
        self._size += len(line)
        self._ends_stopped = False

    @contextlib.contextmanager
    def synced_once(self) -> Iterator[None]:
        """Rows added inside are written each (a crash of this process loses none of them) and
        fsynced once at the end: for rows that arrive together, such as a Dask chunk's, where
        an fsync each (milliseconds on many disks) would cost more than running them."""
        self._deferred = True
        try:
            yield
        finally:
            self._deferred = False
            if self._fd >= 0 and self._failed is None:
                try:
                    os.fsync(self._fd)
                except OSError as exc:
                    self._failed = ResultsWriteError(self.path, exc)
                    if sys.exc_info()[0] is None:  # never hide the error already on its way
                        raise self._failed from exc

    def add(self, row: dict[str, Any]) -> None:
        self._write({"record": "row", **row})

    def close(self, interrupted: bool = False, stop: dict[str, Any] | None = None) -> None:
        """Close the file; ``interrupted`` and ``stop`` (why a sweep stopped early:
        tuner/stops.py) end it with a record saying so (Results.load sets ``meta["interrupted"]``
        and ``meta["stop"]`` from it)."""
        if self._fd < 0:
            return
        try:
            failed = self._syncer.stop() if self._syncer is not None else None
            if failed is not None and self._failed is None:
                self._failed = ResultsWriteError(self.path, failed)
                log.warning("%s: every row was written, but the disk reported a failure making "
                            "them durable", self._failed)
            if self._failed is None and (interrupted or stop or self._ends_stopped):
                self._write({"record": "end", "interrupted": bool(interrupted), **(stop or {})},
                            sync_now=True)
        except ResultsWriteError as exc:
            log.warning("%s; the run's end is not marked in the file (its rows are all there)", exc)
        finally:
            os.close(self._fd)
            self._fd = -1
            self._lock.__exit__(None, None, None)

    def __enter__(self) -> "ResultsWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _tail(fd: int, size: int) -> tuple[int, bytes]:
    """(the offset just past the last newline, the last whole line) of a file open for reading,
    read backwards from its end."""
    buf, pos = b"", size
    while pos > 0:
        step = min(1 << 16, pos)
        pos -= step
        buf = os.pread(fd, step, pos) + buf
        last = buf.rfind(b"\n")
        if last >= 0 and buf.rfind(b"\n", 0, last) >= 0:
            break
    last = buf.rfind(b"\n")
    if last < 0:
        return 0, b""
    return pos + last + 1, buf[buf.rfind(b"\n", 0, last) + 1:last]


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, default=_jsonable, allow_nan=True) + "\n"


def _jsonable(v: Any) -> Any:
    if hasattr(v, "item"):
        return v.item()
    if hasattr(v, "tolist"):
        return v.tolist()
    return str(v)


def check_out_dir(out: str) -> Path:
    """``--out`` as a folder that can be written, checked before anything runs (a sweep that
    only fails when saving loses its whole run). ValueError with one line otherwise."""
    out_dir = Path(out)
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"--out {out} is an existing file; give a folder (it holds one file per experiment)")
    probe = out_dir
    while not probe.exists():  # the nearest existing ancestor decides whether mkdir can work
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"--out {out} cannot be written ({probe} is not a writable folder)")
    return out_dir


def write_json_atomic(data: Any, path: str | os.PathLike[str]) -> Path:
    """``data`` as JSON at ``path``, written to a temporary file beside it and renamed over it,
    so a reader never sees half a file (guide.json, device profiles). NaN and infinities are
    refused: JSON has none."""
    import tempfile

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=p.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, allow_nan=False)
            f.write("\n")
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return p
