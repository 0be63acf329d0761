"""Results of a sweep: tidy rows (a pandas DataFrame) plus metadata, saved as JSON lines and CSV.

The JSON-lines file is the record: its first line is the metadata, each further line one finished
point, appended and flushed as the point completes, so an interrupted sweep keeps its points. A
sweep stopped by Ctrl-C closes the file with an "end" record saying so. Writing never leaves half
a row behind: a write that fails (a full disk) is cut back to the last whole row, and an append
after a line a killed process cut short starts on a line of its own (the fragment is kept in
``<file>.torn``): measure/writer.py. measure/validate.py says what each line may hold.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from . import validate
from .validate import SCHEMA, ResultsFileError  # noqa: F401  (public here)
from .writer import (LockedError, ResultsWriteError, ResultsWriter, _line,  # noqa: F401
                     lock_path, replace_whole, results_lock)

log = logging.getLogger(__name__)


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
REPLAYED = "replayed"              # not run here: the time a recorded run gave (tune(replay=...))
OUT_OF_MEMORY = "out of memory"    # an allocation was refused: the device's memory, or the
#                                    worker process's memory limit (tune's memory_limit=)
STOPPED = "stopped"                # did not finish: the run stopped while it ran (its time
#                                    limit, Ctrl-C, SIGTERM); a resumed run runs it again
SUSPECT = "suspect"                # ran (``verified`` says whether it passed), but its figures
#                                    are beyond what the device can do: the row's ``suspect``
#                                    says why (pyclperf.measure.plausible); nothing rests on it
STATUSES = (OK, TIMED, WRONG, OUT_OF_BOUNDS, BUILD_FAILED, LAUNCH_FAILED, INVALID, SKIPPED, CRASHED,
            TIMEOUT, OUT_OF_MEMORY, STOPPED, SUSPECT, REPLAYED)
# Statuses that are not failures: a row that ran as intended, or was deliberately not run. A
# suspect row ran as intended too; the command line counts such rows apart.
NOT_FAILED = (OK, TIMED, SKIPPED, SUSPECT, REPLAYED)


class Results:
    """Rows and metadata of one experiment run."""

    def __init__(self, meta: dict[str, Any], rows: Iterable[dict[str, Any]] = ()) -> None:
        self.meta = dict(meta)
        self.rows: list[dict[str, Any]] = list(rows)
        self.path: Path | None = None  # the file load() read, to name it in messages

    @property
    def df(self) -> pd.DataFrame:
        """The rows as a table; with no rows, an empty table that still has the columns every
        row of this run has (its parameters, ``status``, ``error``, ``verified``)."""
        if not self.rows:
            return pd.DataFrame(columns=self.columns)
        return pd.DataFrame(self.rows)

    @property
    def columns(self) -> list[str]:
        """The columns every row of this run has: the swept parameter(s), then the status."""
        params = self.meta.get("tune_params") or self.meta.get("params")
        names = [str(k) for k in params] if isinstance(params, dict) else []
        if names:
            names.append("config")
        x = self.meta.get("x")
        if isinstance(x, str) and x not in names:
            names.insert(0, x)
        return names + ["status", "error", "verified"]

    @property
    def experiment(self) -> str:
        name = self.meta.get("experiment")
        return "sweep" if name is None else str(name)

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
        result; in a replayed run (``meta["replay"]``), replayed rows compete instead, and what
        comes back is what the recorded run measured. ValueError when no row qualifies."""
        wanted = REPLAYED if self.meta.get("replay") else OK
        rows = [r for r in self.rows if r.get("status") == wanted and r.get(metric) is not None]
        if not rows:
            counts: dict[str, int] = {}
            for r in self.rows:
                counts[str(r.get("status"))] = counts.get(str(r.get("status")), 0) + 1
            raise ValueError(f"no {'replayed' if wanted == REPLAYED else 'verified'} row with {metric!r} among {len(self.rows)} rows "
                             f"(statuses: {counts or 'none'})")
        if higher_is_better is None:
            higher_is_better = not (metric.startswith("time") or metric.endswith("_ns"))
        pick = max if higher_is_better else min
        return dict(pick(rows, key=lambda r: float(r[metric])))

    def to_csv(self, path: str | os.PathLike[str]) -> Path:
        """The rows as CSV, without list-valued columns (raw per-launch times stay in the
        JSON-lines record). Replaced whole or not at all: a full disk leaves the old file as it
        was (ResultsWriteError naming it)."""
        df = self.df
        lists = [c for c in df.columns if df[c].map(lambda v: isinstance(v, (list, tuple))).any()]
        return replace_whole(path, lambda tmp: df.drop(columns=lists).to_csv(tmp, index=False))

    def to_json(self, path: str | os.PathLike[str]) -> Path:
        """Write the whole record as JSON lines (metadata first). The file is replaced whole or
        not at all: written beside it, then renamed over it, so a full disk leaves the old file
        as it was (ResultsWriteError, with these Results in its ``results``)."""
        p = Path(path)

        def write(tmp: Path) -> None:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(_line({"record": "meta", "schema": SCHEMA, **self.meta}))
                for r in self.rows:
                    f.write(_line({"record": "row", **r}))
                f.flush()
                os.fsync(f.fileno())

        with results_lock(p):
            try:
                return replace_whole(p, write)
            except ResultsWriteError as err:
                err.results = self
                raise

    def save(self, out_dir: str | os.PathLike[str], stem: str | None = None) -> dict[str, Path]:
        """``<stem>.jsonl`` and ``<stem>.csv`` in ``out_dir``; returns their paths."""
        stem = stem or self.experiment
        d = Path(out_dir)
        return {"jsonl": self.to_json(d / f"{stem}.jsonl"), "csv": self.to_csv(d / f"{stem}.csv")}

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Results":
        """The record in a JSON-lines file. A line that is not JSON (cut by a killed process) is
        skipped and named in ``meta["load_warnings"]`` (and logged); any other line that cannot
        be used raises ResultsFileError (a ValueError) naming the file, the line and the field.
        A closing "end" record after the last row sets ``meta["interrupted"]`` and, where the
        run stopped early, ``meta["stop"]`` (why: tuner/stops.py). Repeated rows are collapsed
        with a warning (collapse_repeats), the same for every reader: report, compare, resume."""
        meta: dict[str, Any] | None = None
        rows = []
        torn: list[str] = []
        end: dict[str, Any] | None = None
        with open(path, "rb") as f:
            for number, raw in enumerate(f, 1):
                if not raw.strip():
                    continue
                try:
                    kind, fields = validate.record(validate.parse(raw))
                    if kind == "meta":
                        if meta is not None:
                            raise validate.BadLine("a second metadata line (the first is the file's)")
                        meta = validate.check_meta(fields)
                    elif meta is None:
                        raise validate.BadLine(f"a {kind} record before the metadata line")
                    elif kind == "row":
                        rows.append(validate.check_row(fields, meta))
                        end = None  # rows after an end record: a later run resumed the file
                    else:
                        end = validate.check_end(fields)
                except validate.TornLine as exc:
                    # A line cut by a killed process: keep every other line, but say which one
                    # was lost so a missing point is never a silent gap.
                    text = raw.decode("utf-8", "replace").strip()
                    torn.append(f"{path}:{number}: torn line skipped ({exc}): {text[:60]!r}")
                    log.warning("%s", torn[-1])
                except validate.BadLine as exc:
                    raise ResultsFileError(path, number, str(exc)) from None
        if meta is None:
            raise ResultsFileError(path, None, "no metadata line; not a pyclperf results file")
        if torn:
            meta["load_warnings"] = list(meta.get("load_warnings") or []) + torn
        if end is not None and "interrupted" in end:
            if end["interrupted"]:
                meta["interrupted"] = True
            else:  # a resumed run that finished
                meta.pop("interrupted", None)
        if end is not None:  # why the run stopped early; nothing where a resumed run finished
            stop = {k: end[k] for k in validate.STOP_TYPES if k in end}
            meta.pop("stop", None)
            if "stopped" in stop:
                meta["stop"] = stop
        rows, repeats = collapse_repeats(rows, meta)
        for note in repeats:
            log.warning("%s: %s", path, note)
            meta["load_warnings"] = list(meta.get("load_warnings") or []) + [f"{path}: {note}"]
        loaded = cls(meta, rows)
        loaded.path = Path(path)
        return loaded


def collapse_repeats(rows: list[dict[str, Any]], meta: dict[str, Any]
                     ) -> tuple[list[dict[str, Any]], list[str]]:
    """The rows of a file with repeats taken out, and what was taken out, in words. A row equal
    to an earlier one in every field (a file copied onto its own end) counts once. In a tuning
    run's file, a configuration has one row: a ``stopped`` one is replaced, without a word, by
    the row of the resumed run that finished it; of two finished rows the later is kept, with a
    warning."""
    import json

    kept: dict[Any, dict[str, Any]] = {}
    same = later = 0
    tuning = str(meta.get("experiment") or "").startswith("tune:")
    for row in rows:
        text = json.dumps(row, sort_keys=True, default=str)
        key = ("config", str(row["config"])) if tuning and "config" in row else text
        old = kept.pop(key, None)
        if old is not None and old.get("status") != STOPPED:
            if json.dumps(old, sort_keys=True, default=str) == text:
                same += 1
            else:
                later += 1
        kept[key] = row
    notes = []
    if same:
        notes.append(f"{same} row{'s' if same != 1 else ''} repeat{'s' if same == 1 else ''} an "
                     "earlier row exactly; each such row is counted once")
    if later:
        notes.append(f"{later} configuration{'s have' if later != 1 else ' has'} more than one "
                     "finished row; the last of each is kept")
    return list(kept.values()), notes
