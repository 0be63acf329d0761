"""Every stop of a sweep is recorded: the configuration in flight gets a row saying why and how
long it ran, the results file an end record, the command line one sentence; a resumed run runs
the stopped configuration again. Time limit, per-configuration timeout, Ctrl-C and SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pyclperf import Results, cli, tune
from pyclperf.tuner.options import from_flat

FAST = dict(min_time=0.0, min_repeats=2, max_repeats=2, warmup=0, progress=False)
# SPIN=1 never ends; SPIN=0 copies.
KERNEL = """__kernel void k(__global float* dst, __global const float* src, const int n) {
    const int i = get_global_id(0);
    float x = 0.0f;
    while (SPIN && n > 0) { x += 1.0f; if (x < 0.0f) break; }
    if (i < n) dst[i] = src[i] + x;
}"""
N = 256


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def spec(folder: Path, **extra) -> Path:
    (folder / "k.cl").write_text(KERNEL)
    doc = {"kernel_source": "k.cl", "kernel_name": "k", "problem_size": N,
           "arguments": [{"name": "dst", "dtype": "float32", "size": N, "fill": "zeros"},
                         {"name": "src", "dtype": "float32", "size": N, "fill": "random"},
                         {"name": "n", "dtype": "int32", "value": N}],
           "tune_params": {"block_size_x": [32, 64], "SPIN": [1, 0]},
           "reference": {"kind": "copy", "from": "src", "to": "dst"},
           "iterations": 2, "warmup": 0, "min_time": 0, "out": "k.jsonl", **extra}
    path = folder / "k.json"
    path.write_text(json.dumps(doc))
    return path


def test_the_time_limit_is_said_in_the_file_and_in_one_sentence(ctx, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    code = cli.main(["tune", str(spec(tmp_path, time_limit=3))])
    err = capsys.readouterr().err.strip().splitlines()
    reason = ("stopped by the 3 s time limit while configuration SPIN=1,block_size_x=32 ran; "
              "0 of 4 configurations finished")
    assert code == 1 and err[-1] == reason, err
    *_, row, end = records(tmp_path / "k.jsonl")
    assert row["record"] == "row" and row["status"] == "stopped" and 2 < row["ran_s"] < 10
    assert end == {"record": "end", "interrupted": False, "stopped": "time limit",
                   "in_flight": "SPIN=1,block_size_x=32", "finished": 0, "total": 4,
                   "reason": reason}
    assert Results.load(tmp_path / "k.jsonl").meta["stop"]["reason"] == reason


def test_a_configuration_past_its_timeout_has_its_row_and_the_sweep_goes_on(ctx, tmp_path, rng):
    x = rng.standard_normal(N).astype(np.float32)
    out = tmp_path / "t.jsonl"
    # The limit covers the copy's build, verification and timing in a fresh worker too: under
    # the sanitizer build on a busy 2-core machine 1.5 s was not enough for PoCL's compiler.
    res = tune(
        KERNEL,
        "k",
        N,
        [np.zeros(N, np.float32), x, np.int32(N)],
        {"block_size_x": [64], "SPIN": [1, 0]},
        **from_flat(dict(ctx=ctx, answer=[x, None, None], timeout=4.0, out=out, **FAST)),
    )
    spun, copied = res.rows
    assert spun["status"] == "timeout" and 4.0 <= spun["ran_s"] < 14, spun
    assert copied["status"] == "ok"
    assert "stop" not in res.meta and records(out)[-1]["record"] == "row"  # it ran to its end


def test_a_stopped_configuration_runs_again_on_resume(ctx, tmp_path, rng):
    """A Ctrl-C raised while the second configuration runs (by its argument callable, in the
    worker): it gets a 'stopped' row; the resumed run runs it, and the file reads as one row
    per configuration."""
    x = rng.standard_normal(N).astype(np.float32)
    flag = tmp_path / "interrupt"
    flag.touch()
    out = tmp_path / "r.jsonl"

    def source(config):
        if config["block_size_x"] == 64 and flag.exists():
            raise KeyboardInterrupt
        return x

    job = dict(source=KERNEL, kernel_name="k", problem_size=N, ctx=ctx, out=out,
               args=[np.zeros(N, np.float32), source, np.int32(N)],
               params={"block_size_x": [32, 64, 128], "SPIN": [0]},
               answer=[x, None, None], **FAST)
    first = tune(**from_flat(job))
    assert [r["status"] for r in first.rows] == ["ok", "stopped"]
    assert first.meta["stop"]["in_flight"] == "SPIN=0,block_size_x=64"
    flag.unlink()
    again = tune(**from_flat(job))
    assert [(r["block_size_x"], r["status"]) for r in again.rows] == [(32, "ok"), (64, "ok"),
                                                                      (128, "ok")]
    loaded = Results.load(out)
    assert [r["block_size_x"] for r in loaded.rows] == [32, 64, 128]
    assert "stop" not in loaded.meta and "load_warnings" not in loaded.meta


def test_an_empty_results_keeps_its_columns(ctx):
    res = tune(
        KERNEL,
        "k",
        N,
        [np.zeros(N, np.float32), np.zeros(N, np.float32), np.int32(N)],
        {"block_size_x": [64], "SPIN": [0]},
        **from_flat(dict(ctx=ctx, time_limit=0, **FAST)),
    )
    assert res.rows == [] and res.meta["stop"]["stopped"] == "time limit"
    assert list(res.df.columns) == ["block_size_x", "SPIN", "config", "status", "error",
                                    "verified"]


@pytest.mark.parametrize("signum, cause", [(signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "Ctrl-C")])
def test_a_signal_to_the_command_is_recorded(ctx, tmp_path, signum, cause):
    env = {**os.environ, "PYCLPERF_DEVICE": f"{ctx.info.platform_index}:{ctx.info.device_index}"}
    path = spec(tmp_path)
    # Python's own Ctrl-C handler, whatever this process was started with (a background job
    # starts with SIGINT ignored, and a child inherits that).
    child = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
             "from pyclperf.cli import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.Popen([sys.executable, "-c", child, "tune", str(path)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = tmp_path / "k.jsonl"
    deadline = time.monotonic() + 60
    while not out.is_file() and time.monotonic() < deadline:  # the sweep has begun
        time.sleep(0.05)
    time.sleep(1.0)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=60)
    reason = (f"stopped by {cause} while configuration SPIN=1,block_size_x=32 ran; 0 of 4 "
              "configurations finished")
    assert proc.returncode == cli.EXIT_INTERRUPTED, stderr
    assert stderr.strip().splitlines()[-1] == reason and "Traceback" not in stderr, stderr
    *_, row, end = records(out)
    assert row["status"] == "stopped" and row["error"].startswith(f"stopped by {cause} after")
    assert end["interrupted"] is True and end["stopped"] == cause and end["reason"] == reason
