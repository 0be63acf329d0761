"""A results file's rows are written as each finishes and made durable (fsync) on a thread of
its own: the sweep never waits for the disk, a crash of the process loses no row written, a
closed file has every row on disk, and an fsync that fails stops the next row."""

from __future__ import annotations

import errno
import os
import threading
import time

import pytest

from pyclperf.measure.results import Results, ResultsWriteError
from pyclperf.measure.writer import ResultsWriter


def _rows(path):
    return [r["i"] for r in Results.load(path).rows]


def test_rows_are_in_the_file_at_once_and_synced_off_the_sweep(tmp_path, monkeypatch):
    real = os.fsync
    synced: list[tuple[str, float]] = []

    def slow(fd):
        time.sleep(0.1)  # a slow disk
        real(fd)
        synced.append((threading.current_thread().name, time.perf_counter()))

    path = tmp_path / "r.jsonl"
    w = ResultsWriter(path, {"experiment": "x"})
    monkeypatch.setattr(os, "fsync", slow)
    t0 = time.perf_counter()
    for i in range(5):
        w.add({"i": i, "status": "timed"})
        assert _rows(path) == list(range(i + 1))  # in the file before any fsync returned
    assert time.perf_counter() - t0 < 0.1  # five rows never waited for a 0.1 s fsync
    last_write = time.perf_counter()
    w.close()
    assert synced and all(name == "pyclperf-fsync" for name, _ in synced)
    assert synced[-1][1] > last_write  # close() waited for the rows to reach the disk
    assert len(synced) < 5  # rows that came together took one fsync
    assert _rows(path) == list(range(5))


def test_an_fsync_that_fails_stops_the_next_row(tmp_path, monkeypatch):
    path = tmp_path / "r.jsonl"
    w = ResultsWriter(path, {"experiment": "x"})

    def failing(fd):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "fsync", failing)
    w.add({"i": 0, "status": "timed"})
    w._syncer._thread.join(timeout=5)  # the failed fsync's thread has ended
    with pytest.raises(ResultsWriteError, match="Input/output error"):
        w.add({"i": 1, "status": "timed"})
    w.close()
    assert _rows(path) == [0]  # the row written stays; the refused one is not there
