"""Results files never lose a row: a resume after a torn last line, a full disk (simulated and a
real 64 KiB tmpfs), a file that cannot be written and Ctrl-C each leave the file and the returned
Results holding the same rows, every one of them whole."""

from __future__ import annotations

import errno
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import pyclperf
from pyclperf import cli, tune
from pyclperf.tuner import tune as engine_tune
from pyclperf.experiments.offset import OffsetCopy
from pyclperf.measure.results import Results, ResultsWriteError, ResultsWriter
from pyclperf.tuner.options import from_flat

N = 1024
SRC = """__kernel void axpy(__global float* y, __global const float* x, const float a, const int n) {
    const int i = get_global_id(0); if (i < n) y[i] = a * x[i] + 1.0f; }"""
FAST = dict(min_time=0.0, min_repeats=2, max_repeats=2, warmup=0, isolate=False, progress=False)
SPACE = {"block_size_x": [16, 32, 64, 128], "U": [0, 1, 2, 3]}  # 16 configurations
RUN = ["--size", "4096", "--local-size", "64", "--repeats", "2", "--min-time-s", "0", "--no-plot"]


@pytest.fixture
def job(ctx, rng):
    x = rng.standard_normal(N).astype(np.float32)
    return dict(source=SRC, kernel_name="axpy", problem_size=N,
                args=[np.zeros(N, np.float32), x, 2.0, N], ctx=ctx,
                answer=[np.float32(2) * x + np.float32(1), None, None, None], **FAST)


@pytest.fixture
def on_device(ctx, monkeypatch):
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    return ctx


def whole_rows(path: Path) -> list[dict]:
    """The file's rows, asserting every line is whole JSON and the file ends at a line's end."""
    data = path.read_bytes()
    assert data.endswith(b"\n"), data[-80:]
    records = [json.loads(line) for line in data.decode().splitlines()]
    assert records[0]["record"] == "meta"
    return [r for r in records if r["record"] == "row"]


def configs(rows: list[dict]) -> list[str]:
    return [r["config"] for r in rows]


def test_resume_after_a_torn_last_line_keeps_every_row(job, tmp_path, caplog):
    out = tmp_path / "t.jsonl"
    first = tune(**from_flat(dict(**job, params=SPACE, out=out, max_fevals=3)))
    assert len(first.rows) == 3
    text = out.read_text()
    cut = len(text) - len(text.splitlines()[-1]) // 2 - 1  # the last row, cut in its middle
    out.write_text(text[:cut])
    fragment = text[len(text.rstrip("\n").rsplit("\n", 1)[0]) + 1:cut]

    res = tune(**from_flat(dict(**job, params=SPACE, out=out)))
    on_disk = whole_rows(out)
    assert configs(on_disk) == configs(res.rows)
    assert sorted(configs(res.rows)) == sorted({r["config"] for r in res.rows})  # no repeats
    assert len(res.rows) == 16 and all(r["status"] == "ok" for r in res.rows)
    # The fragment is kept aside, not deleted, and the move was said out loud.
    assert (tmp_path / "t.jsonl.torn").read_text() == fragment + "\n"
    assert "t.jsonl: its last line was cut short" in caplog.text and "t.jsonl.torn" in caplog.text
    assert "load_warnings" not in Results.load(out).meta


def _enospc_after(monkeypatch, path: Path, budget: int) -> None:
    """os.write on ``path`` takes ``budget`` more bytes (the last write partly), then fails
    with ENOSPC, as a filling disk does. Writes to any other file are untouched."""
    real = os.write
    left = [budget]

    def write(fd: int, data: bytes) -> int:
        if not os.readlink(f"/proc/self/fd/{fd}").startswith(str(path)):
            return real(fd, data)
        if left[0] <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = real(fd, bytes(data[:left[0]]))
        left[0] -= n
        return n

    monkeypatch.setattr(os, "write", write)


def _assert_stopped_and_agree(err: ResultsWriteError, out: Path, total: int) -> list[dict]:
    res = err.results
    assert res is not None
    on_disk = whole_rows(out)
    assert 1 <= len(on_disk) < total
    assert configs(on_disk) == configs(res.rows)
    assert err.errno == errno.ENOSPC and "No space left on device" in res.meta["write_error"]
    assert f"its {len(on_disk)} finished rows are in the file" in str(err)
    assert Results.load(out).df.shape[0] == len(res.rows)
    return on_disk


def test_a_full_disk_stops_tune_with_every_finished_row(job, tmp_path, monkeypatch):
    out = tmp_path / "full.jsonl"
    _enospc_after(monkeypatch, out, 2 * 4096)
    with pytest.raises(ResultsWriteError) as caught:
        tune(**from_flat(dict(**job, params=SPACE, out=out)))
    _assert_stopped_and_agree(caught.value, out, 16)


def test_a_full_disk_at_the_start_leaves_the_old_file(ctx, tmp_path, monkeypatch):
    out = tmp_path / "o.jsonl"
    before = pyclperf.run("offset", ctx, size=4096, local_size=64, values=[0], repeats=2, out=out)
    kept = out.read_bytes()
    _enospc_after(monkeypatch, out, 0)  # the new file begins as o.jsonl.new beside it
    with pytest.raises(ResultsWriteError, match="nothing ran") as caught:
        pyclperf.run("offset", ctx, size=4096, local_size=64, values=[0, 1], repeats=2, out=out)
    assert out.read_bytes() == kept and len(before.rows) == 1
    assert caught.value.results is not None and caught.value.results.rows == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.jsonl", "o.jsonl.lock"]


@pytest.fixture
def tiny_disk(tmp_path):
    """A 64 KiB tmpfs with all but ``free`` bytes taken by a filler file (free space on tmpfs
    comes in 4 KiB pages); skipped where this process may not mount one."""
    disk = tmp_path / "disk"
    disk.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)],
                              capture_output=True, text=True)
    except OSError as exc:  # no mount command
        pytest.skip(f"cannot mount a 64 KiB tmpfs here: {exc}")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a 64 KiB tmpfs here (needs root): {done.stderr.strip()}")

    def leave(free: int) -> Path:
        (disk / "filler").write_bytes(b"\0" * (64 * 1024 - free))
        return disk

    try:
        yield leave
    finally:  # lazily where something still holds a file there, so the folder is freed anyway
        if subprocess.run(["umount", str(disk)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(disk)], check=True)


def test_tune_onto_a_full_tmpfs_keeps_every_finished_row(job, tiny_disk):
    out = tiny_disk(2 * 4096) / "t.jsonl"
    with pytest.raises(ResultsWriteError) as caught:
        tune(**from_flat(dict(**job, params=SPACE, out=out)))
    _assert_stopped_and_agree(caught.value, out, 16)


def test_cli_run_onto_a_full_tmpfs_is_one_line_and_keeps_the_rows(on_device, tiny_disk, capsys):
    disk = tiny_disk(2 * 4096)
    code = cli.main(["run", "offset", *RUN, "--out", str(disk)])
    # The last state of the line: a progress bar (shown where ipykernel is loaded, as it is
    # once the notebook tests have run in this process) redraws itself with carriage returns.
    err = capsys.readouterr().err.strip().split("\r")[-1]
    assert code == 2 and "\n" not in err and "Traceback" not in err, err
    on_disk = whole_rows(disk / "offset.jsonl")
    assert err.startswith(f"pyclperf: error: cannot write {disk / 'offset.jsonl'}: No space left")
    assert f"its {len(on_disk)} finished rows are in the file" in err and len(on_disk) >= 1


def test_a_file_that_cannot_be_written_is_one_line(on_device, tmp_path, capsys, job):
    (tmp_path / "offset.jsonl").mkdir()  # where the file would go, a folder
    assert cli.main(["run", "offset", *RUN, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"pyclperf: error: cannot write {tmp_path / 'offset.jsonl'}: Is a directory; "
                   "nothing ran (the file was left as it was)")
    with pytest.raises(ResultsWriteError, match="Is a directory") as caught:
        tune(**from_flat(dict(**job, params=SPACE, out=tmp_path / "offset.jsonl")))
    assert caught.value.results is not None and caught.value.results.rows == []


def _interrupt_at(monkeypatch, point: int) -> None:
    """OffsetCopy.measure raises KeyboardInterrupt (Ctrl-C) at its ``point``-th call."""
    real = OffsetCopy.measure
    calls = [0]

    def measure(self, *a, **k):
        calls[0] += 1
        if calls[0] == point:
            raise KeyboardInterrupt
        return real(self, *a, **k)

    monkeypatch.setattr(OffsetCopy, "measure", measure)


def test_an_interrupted_run_is_marked_in_its_file(ctx, tmp_path, monkeypatch):
    _interrupt_at(monkeypatch, 3)
    out = tmp_path / "o.jsonl"
    res = pyclperf.run("offset", ctx, size=4096, local_size=64, values=[0, 1, 2, 3], repeats=2,
                       out=out)
    back = Results.load(out)
    assert res.meta["interrupted"] is True and back.meta["interrupted"] is True
    assert [r["offset"] for r in back.rows] == [r["offset"] for r in res.rows] == [0, 1]
    assert json.loads(out.read_text().splitlines()[-1]) == {"record": "end", "interrupted": True}


def test_an_interrupted_cli_run_is_marked_in_its_file(on_device, tmp_path, monkeypatch, capsys):
    _interrupt_at(monkeypatch, 5)
    assert cli.main(["run", "offset", *RUN, "--out", str(tmp_path)]) == cli.EXIT_INTERRUPTED
    assert "interrupted: the finished points are saved" in capsys.readouterr().err
    back = Results.load(tmp_path / "offset.jsonl")
    assert back.meta["interrupted"] is True and len(back.rows) == 4


def test_tune_interrupted_then_resumed_is_marked_only_while_unfinished(job, tmp_path,
                                                                      monkeypatch):
    out = tmp_path / "t.jsonl"
    real = engine_tune.measure
    calls = [0]

    def stop_at_third(*a, **k):  # Ctrl-C while the third configuration runs
        calls[0] += 1
        if calls[0] == 3:
            raise KeyboardInterrupt
        return real(*a, **k)

    with monkeypatch.context() as m:
        m.setattr(engine_tune, "measure", stop_at_third)
        cut = tune(**from_flat(dict(**job, params=SPACE, out=out)))
    # Two finished, and the third's row says the run stopped while it ran.
    assert cut.meta["interrupted"] is True and len(cut.rows) == 3
    assert [r["status"] for r in cut.rows] == ["ok", "ok", "stopped"]
    back = Results.load(out)
    assert back.meta["interrupted"] is True and configs(back.rows) == configs(cut.rows)
    whole = tune(**from_flat(dict(**job, params=SPACE, out=out)))  # the stopped one runs again
    assert "interrupted" not in Results.load(out).meta and len(whole.rows) == 16
    assert len(Results.load(out).rows) == 16 and all(r["status"] == "ok" for r in whole.rows)
    # A resume with nothing left to run still ends the file's interrupted mark.
    with ResultsWriter(out, {}, append=True) as w:
        w.close(interrupted=True)
    assert Results.load(out).meta["interrupted"] is True
    tune(**from_flat(dict(**job, params=SPACE, out=out)))
    # The file keeps the stopped row too, which its configuration's finished row supersedes.
    assert "interrupted" not in Results.load(out).meta and len(whole_rows(out)) == 17


def test_cli_run_says_which_file_a_full_disk_refused_and_what_is_safe(on_device, tmp_path,
                                                                      monkeypatch, capsys):
    """The figure, written after the record and the CSV, finds the disk full: the message names
    it, says the record and the table are whole and what to do; the old figure stays."""
    from matplotlib.figure import Figure

    def full_disk(self, fname, *a, **k):
        with open(fname, "wb") as f:
            f.write(b"\x89PNG\r\n")  # the start of it got in
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    (tmp_path / "offset.png").write_bytes(b"an older figure")
    monkeypatch.setattr(Figure, "savefig", full_disk)
    args = [a for a in RUN if a != "--no-plot"]
    assert cli.main(["run", "offset", *args, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().split("\r")[-1]
    jsonl, csv, png = (tmp_path / f"offset.{kind}" for kind in ("jsonl", "csv", "png"))
    assert err == (f"pyclperf: error: cannot write {png}: No space left on device; the file was "
                   f"left as it was; {jsonl} and {csv} hold every finished point; 'pyclperf "
                   f"report {jsonl}' draws the figure again; free space there (or choose another "
                   "--out) and run it again")
    assert png.read_bytes() == b"an older figure" and not (tmp_path / "offset.png.new").exists()
    assert len(Results.load(jsonl).rows) == len(csv.read_text().splitlines()) - 1 > 0


def test_a_full_disk_for_the_csv_keeps_the_old_table(ctx, tmp_path, monkeypatch):
    res = pyclperf.run("offset", ctx, size=4096, local_size=64, values=[0], repeats=2)
    csv = tmp_path / "o.csv"
    csv.write_text("an older table\n")
    _enospc_after(monkeypatch, tmp_path / "o.csv.new", 10)
    import pandas as pd

    real = pd.DataFrame.to_csv

    def through_os_write(self, path, **k):  # pandas writes through its own buffers: make it
        text = real(self, None, **k).encode()  # pass through os.write, which fails as a disk
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            os.write(fd, text[:10])
            os.write(fd, text[10:])
        finally:
            os.close(fd)

    monkeypatch.setattr(pd.DataFrame, "to_csv", through_os_write)
    with pytest.raises(ResultsWriteError, match="No space left") as caught:
        res.to_csv(csv)
    assert str(caught.value).startswith(f"cannot write {csv}: No space left on device; the file "
                                        "was left as it was")
    assert csv.read_text() == "an older table\n" and not (tmp_path / "o.csv.new").exists()
