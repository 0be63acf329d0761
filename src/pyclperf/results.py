"""Results of a sweep: tidy rows (a pandas DataFrame) plus metadata, saved as JSON lines and CSV.

The JSON-lines file is the record: its first line is the metadata, each further line one finished
point, appended and flushed as the point completes, so an interrupted sweep keeps its points.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from pathlib import Path
from typing import Any, Iterable, Iterator

import pandas as pd

SCHEMA = "pyclperf.results/1"

log = logging.getLogger(__name__)


class LockedError(RuntimeError):
    """Another process is writing the same results file."""

# The statuses a row can end with. "ok" always means verified; everything else says why not.
OK = "ok"                          # ran, verified against the reference, timed
TIMED = "timed"                    # ran and timed, but nothing was given to verify it against
WRONG = "wrong result"             # ran; the outputs differ from the reference
OUT_OF_BOUNDS = "out of bounds"    # wrote past the end of an argument (into its guard zone)
BUILD_FAILED = "build failed"      # the OpenCL compiler refused the source (row has the log)
LAUNCH_FAILED = "launch failed"    # the driver refused or aborted the launch (row has the error)
INVALID = "invalid"                # the harness or a user callable raised (row has the message)
SKIPPED = "skipped"                # not run: a restriction, a missing feature, a device limit
CRASHED = "crashed"                # took its worker process down (supervised or distributed runs)
TIMEOUT = "timeout"                # ran past its time limit; its worker process was stopped
SUSPECT = "suspect"                # ran (``verified`` says whether it passed), but its figures
#                                    are beyond what the device can do: the row's ``suspect``
#                                    says why (pyclperf.plausible); nothing rests on it
STATUSES = (OK, TIMED, WRONG, OUT_OF_BOUNDS, BUILD_FAILED, LAUNCH_FAILED, INVALID, SKIPPED, CRASHED,
            TIMEOUT, SUSPECT)
# Statuses that are not failures: a row that ran as intended, or was deliberately not run. A
# suspect row ran as intended too; the command line counts such rows apart.
NOT_FAILED = (OK, TIMED, SKIPPED, SUSPECT)


class Results:
    """Rows and metadata of one experiment run."""

    def __init__(self, meta: dict[str, Any], rows: Iterable[dict[str, Any]] = ()) -> None:
        self.meta = dict(meta)
        self.rows: list[dict[str, Any]] = list(rows)

    @property
    def df(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows)

    @property
    def experiment(self) -> str:
        return str(self.meta.get("experiment", "sweep"))

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        return (
            f"<Results {self.experiment}: {len(self.rows)} rows on "
            f"'{self.meta.get('device', {}).get('name', '?')}'>"
        )

    def _repr_html_(self) -> str:
        return f"<p><b>{self.experiment}</b> on {self.meta.get('device', {}).get('name', '?')}</p>" + (
            self.df._repr_html_() or ""
        )

    @property
    def all_verified(self) -> bool:
        return bool(self.rows) and all(r.get("status") == OK for r in self.rows)

    def best(self, metric: str = "time_ms", higher_is_better: bool | None = None) -> dict[str, Any]:
        """The verified row with the best ``metric`` (lowest time; highest of anything else unless
        ``higher_is_better`` says otherwise). Only "ok" rows compete: an unverified time is no
        result. ValueError when no row was verified."""
        rows = [r for r in self.rows if r.get("status") == OK and r.get(metric) is not None]
        if not rows:
            counts: dict[str, int] = {}
            for r in self.rows:
                counts[str(r.get("status"))] = counts.get(str(r.get("status")), 0) + 1
            raise ValueError(f"no verified row with {metric!r} among {len(self.rows)} rows "
                             f"(statuses: {counts or 'none'})")
        if higher_is_better is None:
            higher_is_better = not (metric.startswith("time") or metric.endswith("_ns"))
        pick = max if higher_is_better else min
        return dict(pick(rows, key=lambda r: float(r[metric])))

    def explain(self, profile: Any = None, **kwargs: Any) -> Any:
        """This tune run on the device's measured roofline: pyclperf.roofline.explain(self,
        profile, **kwargs) (``source=``, ``args=`` as given to tune, or ``bytes=``; ``flops=``,
        ``config=``, ...). Returns an Explanation (``.text()``, ``.figure()``)."""
        from .roofline.explaining import explain

        return explain(self, profile, **kwargs)

    def to_csv(self, path: str | os.PathLike[str]) -> Path:
        """The rows as CSV, without list-valued columns (raw per-launch times stay in the
        JSON-lines record)."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        df = self.df
        lists = [c for c in df.columns if df[c].map(lambda v: isinstance(v, (list, tuple))).any()]
        df.drop(columns=lists).to_csv(p, index=False)
        return p

    def to_json(self, path: str | os.PathLike[str]) -> Path:
        """Write the whole record as JSON lines (metadata first)."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        with results_lock(p), open(p, "w", encoding="utf-8") as f:
            f.write(_line({"record": "meta", "schema": SCHEMA, **self.meta}))
            for r in self.rows:
                f.write(_line({"record": "row", **r}))
        return p

    def save(self, out_dir: str | os.PathLike[str], stem: str | None = None) -> dict[str, Path]:
        """``<stem>.jsonl`` and ``<stem>.csv`` in ``out_dir``; returns their paths."""
        stem = stem or self.experiment
        d = Path(out_dir)
        return {"jsonl": self.to_json(d / f"{stem}.jsonl"), "csv": self.to_csv(d / f"{stem}.csv")}

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Results":
        meta: dict[str, Any] | None = None
        rows = []
        torn: list[str] = []
        with open(path, encoding="utf-8") as f:
            for number, text in enumerate(f, 1):
                if not text.strip():
                    continue
                try:
                    record = json.loads(text)
                except json.JSONDecodeError as exc:
                    # A line cut by a killed process: keep every other line, but say which one
                    # was lost so a missing point is never a silent gap.
                    torn.append(f"{path}:{number}: torn line skipped ({exc.msg}): {text.strip()[:60]!r}")
                    log.warning("%s", torn[-1])
                    continue
                kind = record.pop("record", None)
                if kind == "meta":
                    schema = record.pop("schema", None)
                    if schema != SCHEMA:
                        raise ValueError(f"{path}: unknown results schema {schema!r} (want {SCHEMA})")
                    meta = record
                elif kind == "row":
                    rows.append(record)
                else:
                    raise ValueError(f"{path}:{number}: not a pyclperf results line")
        if meta is None:
            raise ValueError(f"{path}: no metadata line; not a pyclperf results file")
        if torn:
            meta["load_warnings"] = list(meta.get("load_warnings", [])) + torn
        return cls(meta, rows)


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


class ResultsWriter:
    """Appends rows to a JSON-lines file as they finish (flushed and fsynced each time, or once
    for rows added together inside synced_once), holding the file's lock (results_lock) until
    closed."""

    def __init__(self, path: str | os.PathLike[str], meta: dict[str, Any], append: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = results_lock(self.path)
        self._lock.__enter__()
        try:
            self._f = open(self.path, "a" if append else "w", encoding="utf-8")
        except BaseException:
            self._lock.__exit__(None, None, None)
            raise
        if not append:
            self._write({"record": "meta", "schema": SCHEMA, **meta})

    _deferred = False

    def _write(self, record: dict[str, Any]) -> None:
        self._f.write(_line(record))
        self._f.flush()
        if not self._deferred:
            os.fsync(self._f.fileno())

    @contextlib.contextmanager
    def synced_once(self) -> Iterator[None]:
        """Rows added inside are flushed each (a crash of this process loses none of them) and
        fsynced once at the end: for rows that arrive together, such as a Dask chunk's, where
        an fsync each (milliseconds on many disks) would cost more than running them."""
        self._deferred = True
        try:
            yield
        finally:
            self._deferred = False
            if not self._f.closed:
                os.fsync(self._f.fileno())

    def add(self, row: dict[str, Any]) -> None:
        self._write({"record": "row", **row})

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()
            self._lock.__exit__(None, None, None)

    def __enter__(self) -> "ResultsWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, default=_jsonable, allow_nan=True) + "\n"


def _jsonable(v: Any) -> Any:
    if hasattr(v, "item"):
        return v.item()
    if hasattr(v, "tolist"):
        return v.tolist()
    return str(v)
