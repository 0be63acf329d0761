"""Nothing lost: one writer per results file, torn lines named on load, --out and
sizes checked before anything runs, and every bad input answered in one line that names it."""

from __future__ import annotations

import fcntl
import json

import pytest

import pyclperf
from pyclperf import cli
from pyclperf.measure.results import LockedError, Results, lock_path, results_lock

ITEMS = 4096


@pytest.fixture
def on_device(ctx, monkeypatch):
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    return ctx


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("pyclperf: error: ") and "\n" not in err, err
    return err


def test_a_second_writer_is_refused(on_device, tmp_path, capsys):
    # Another process's lock is simulated by a second open file: flock refuses it the same way.
    with open(lock_path(tmp_path / "offset.jsonl"), "a") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        code = cli.main(["run", "offset", "--size", str(ITEMS), "--local-size", "64",
                         "--repeats", "2", "--out", str(tmp_path)])
        err = _one_line_error(capsys)
        assert code == 2 and "offset.jsonl is being written by another pyclperf process" in err
        assert not (tmp_path / "offset.jsonl").exists()
    # Once released, the same run goes through, and the lock may be taken again in-process.
    with results_lock(tmp_path / "x.jsonl"), results_lock(tmp_path / "x.jsonl"):
        pass


def test_lock_refuses_a_second_open_file(tmp_path):
    with open(lock_path(tmp_path / "r.jsonl"), "a") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(LockedError, match="r.jsonl is being written"):
            with results_lock(tmp_path / "r.jsonl"):
                pass


def test_a_torn_line_is_named_and_the_rest_kept(ctx, tmp_path, caplog):
    res = pyclperf.run("offset", ctx, size=ITEMS, local_size=64, values=[0, 1, 2], repeats=2)
    path = res.to_json(tmp_path / "torn.jsonl")
    lines = path.read_text().splitlines()
    lines[2] = lines[2][: len(lines[2]) // 2]  # the second row, cut in the middle
    path.write_text("\n".join(lines) + "\n")
    back = Results.load(path)
    assert [r["offset"] for r in back.rows] == [0, 2]
    (warning,) = back.meta["load_warnings"]
    assert warning.startswith(f"{path}:3: torn line skipped")
    assert f"{path}:3" in caplog.text


@pytest.mark.parametrize("make", ["file", "under-file"])
def test_bad_out_is_an_error_before_anything_runs(on_device, tmp_path, capsys, make):
    blocker = tmp_path / "results"
    blocker.write_text("not a folder")
    out = blocker if make == "file" else blocker / "sub"
    code = cli.main(["run", "offset", "--out", str(out)])
    err = _one_line_error(capsys)
    assert code == 2 and str(out) in err
    assert "offset on" not in capsys.readouterr().out  # nothing ran
    assert blocker.read_text() == "not a folder"


@pytest.mark.parametrize("size", [10**15, 500])
def test_transfer_size_outside_its_range_is_an_error(on_device, tmp_path, capsys, size):
    code = cli.main(["run", "transfer", "--size", str(size), "--out", str(tmp_path)])
    err = _one_line_error(capsys)
    assert code == 2 and f"--size {size} bytes is outside 1024.." in err


def test_negative_buffer_is_a_clear_error(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="positive number of bytes, got -1"):
        ctx.buffer(-1)


def test_unknown_run_option_names_the_experiment(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError,
                       match=r"experiment 'offset' takes no option 'bogus'; its options: "):
        pyclperf.run("offset", ctx, bogus=1)


def test_results_file_round_trips_without_warnings(ctx, tmp_path):
    res = pyclperf.run("offset", ctx, size=ITEMS, local_size=64, values=[0], repeats=2,
                       out=tmp_path / "o.jsonl")
    back = Results.load(tmp_path / "o.jsonl")
    assert "load_warnings" not in back.meta and len(back.rows) == len(res.rows) == 1
    assert json.loads((tmp_path / "o.jsonl").read_text().splitlines()[0])["record"] == "meta"
