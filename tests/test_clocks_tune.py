"""The clock choice reaches tune() (``method=``), ``pyclperf tune --method`` and the spec's
"method", ``pyclperf guide --method`` and ``pyclperf run``; on a placeholder event clock (the
_fake_clock test hook: in this process for isolate=False, through PYCLPERF_FAKE_EVENT_CLOCK for
the worker processes of a command) tune times by the host clock, and events asked for anyway
make its rows suspect."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pyclperf
from pyclperf import cli
from pyclperf.device import fake_clock as _fake_clock
from pyclperf.device import clocks
from pyclperf.guide import run as guide
from pyclperf.tuner.spec import SpecError, parse_spec

from test_clocks import _child_env
from pyclperf.tuner.options import from_flat

DATA = Path(__file__).parent / "data" / "tune"
COPY = """
__kernel void copy(__global float* dst, __global const float* src) {
    dst[get_global_id(0)] = src[get_global_id(0)];
}
"""
N = 4096
CAP = 10_000_000  # launches: far more than fit in the wall time adaptive timing may spend
FAST = {"min_time": 0.02, "min_repeats": 3, "max_repeats": CAP, "warmup": 1}
# The clock's check compares event time with host time: tests beside it on a shared device
# would slow the host's side and fail a sound clock (make gpu-check runs these alone).
pytestmark = pytest.mark.serial


@pytest.fixture
def placeholder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv(_fake_clock.ENV, _fake_clock.PLACEHOLDER)
    clocks.forget()
    _fake_clock.install()
    yield
    _fake_clock.uninstall()
    clocks.forget()


def _tune(ctx, rng, **kw):
    src = rng.standard_normal(N).astype(np.float32)
    return pyclperf.tune(
        COPY,
        "copy",
        N,
        [np.zeros(N, np.float32), src],
        {"block_size_x": [32, 64]},
        **from_flat(dict(ctx=ctx, answer=[src, None], isolate=False, **FAST, **kw)),
    )


def test_tune_times_by_host_on_a_placeholder_clock(ctx, rng, placeholder):
    res = _tune(ctx, rng)
    assert res.meta["method"] == "auto"
    for row in res.rows:
        assert row["status"] == "ok" and row["method"] == "host"
        assert "event clock failed its check" in row["method_reason"]
        assert row["median_ns"] > 1000 and row["n"] < CAP


def test_tune_with_events_on_a_placeholder_clock_is_suspect(ctx, rng, placeholder):
    res = _tune(ctx, rng, method="events")
    assert res.meta["method"] == "events"
    for row in res.rows:
        assert row["status"] == "suspect" and row["method"] == "events" and row["verified"]
        assert "event clock that failed its check" in row["suspect"]
        assert row["median_ns"] == 1.0 and row["n"] < CAP  # wall time ended the timing


def test_tune_method_is_obeyed_and_checked(ctx, rng, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    clocks.forget()
    res = _tune(ctx, rng, method="host")
    assert all(r["method"] == "host" and "method_reason" not in r for r in res.rows)
    assert all(r["method"] == "events" for r in _tune(ctx, rng).rows)  # a sound clock
    with pytest.raises(pyclperf.InvalidArgumentError, match="timing method"):
        _tune(ctx, rng, method="sundial")
    clocks.forget()


def _spec(tmp_path: Path, **changes) -> Path:
    spec = json.loads((DATA / "copy_spec.json").read_text())
    for key in ("cache", "t4", "strategy_options"):
        spec.pop(key)
    spec.update(tune_params={"block_size_x": [64], "VEC": [1]}, strategy="brute_force",
                problem_size=N, min_time=0.02, **changes)
    for arg in spec["arguments"]:
        arg["size" if "size" in arg else "value"] = N
    spec["metrics"] = {"GB/s": f"2*4*{N}/time/1e9"}
    (tmp_path / "copy.cl").write_text((DATA / "copy.cl").read_text())
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return path


def test_the_spec_takes_a_method(tmp_path):
    assert parse_spec(_spec(tmp_path, method="host")).kwargs["method"] == "host"
    assert "method" not in parse_spec(_spec(tmp_path)).kwargs
    with pytest.raises(SpecError, match='method: must be one of "auto", "events", "host"'):
        parse_spec(_spec(tmp_path, method="sundial"))


def test_pyclperf_tune_on_a_placeholder_clock_in_its_worker(ctx, tmp_path):
    """End to end: the command, its supervised worker process, the environment variable."""
    out = tmp_path / "auto.jsonl"
    env = _child_env(ctx, tmp_path / "cache")
    proc = subprocess.run([sys.executable, "-m", "pyclperf", "tune", str(_spec(tmp_path)),
                           "--out", str(out)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    rows = pyclperf.Results.load(out).rows
    assert rows and all(r["status"] == "ok" and r["method"] == "host" for r in rows)
    events = tmp_path / "events.jsonl"
    proc = subprocess.run([sys.executable, "-m", "pyclperf", "tune", str(_spec(tmp_path)),
                           "--method", "events", "--out", str(events)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr + proc.stdout  # no config ok: nothing to pick
    rows = pyclperf.Results.load(events).rows
    assert rows and all(r["status"] == "suspect" and r["method"] == "events" for r in rows)


def test_guide_passes_the_method_to_every_experiment(tmp_path):
    seen = []

    def runner(name, out_dir, device, quick, timeout, extra):
        seen.append(list(extra))
        return guide.Outcome(name, guide.PASSED, 0.0, 0)

    guide.run_guide(tmp_path / "g", only="offset", runner=runner, progress=False, method="host")
    guide.run_guide(tmp_path / "h", only="offset", runner=runner, progress=False)
    # Every experiment also gets --cold-check (figures taken warm are measured again cold) and
    # --no-plot (the page draws the figures itself).
    assert all("--cold-check" in e and "--no-plot" in e for e in seen), seen
    assert [[a for a in e if a not in ("--cold-check", "--no-plot")] for e in seen] == [["--method", "host"], []]
    args = cli.build_parser().parse_args(["guide", "--method", "events"])
    assert args.method == "events"
    with pytest.raises(pyclperf.InvalidArgumentError, match="timing method"):
        guide.run_guide(tmp_path / "i", only="offset", runner=runner, progress=False, method="x")


def test_pyclperf_run_says_which_clock_and_counts_suspect_points(ctx, placeholder, tmp_path,
                                                                 monkeypatch, capsys):
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    common = ["--size", "4096", "--local-size", "64", "--warmup", "1", "--repeats", "2",
              "--no-plot"]
    assert cli.main(["run", "timers", *common, "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "timing: host clock (includes launch gap) [host clock: the device's event clock" in out
    assert "The event clock is unusable on this device" in out
    assert "point(s) suspect: their figures are beyond what the device can do" in out
    assert cli.main(["run", "offset", *common, "--method", "events", "--min-time-s", "0",
                     "--out", str(tmp_path / "b")]) == 0
    assert "timing: OpenCL events (device time) [events asked for" in capsys.readouterr().out
