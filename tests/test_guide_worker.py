"""The guide's shared worker: experiments that cannot hurt the next run in turn in one process;
a hang or a crash still costs that experiment only, and the next gets a new worker."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from pyclperf.guide import run as guide
from pyclperf.experiments import catalogue
from pyclperf.guide.worker import SharedWorker


def _spec(ctx) -> str:
    return f"{ctx.info.platform_index}:{ctx.info.device_index}"


@pytest.fixture
def worker(tmp_path):
    w = SharedWorker()
    yield w
    w.stop()


# An offset sweep that gathers 30 s of kernel time per point: it cannot end before the
# timeout, the kill or the Ctrl-C that these tests aim at it, however fast the machine. (The
# plain transfer sweep they used to run lasts about a second on PoCL, and a fast machine finished
# it before the interruption came.)
LONG = ["--min-time-s", "30"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_experiments_share_one_process_and_keep_their_own_seconds(ctx, tmp_path, worker):
    logs = tmp_path / "logs"
    logs.mkdir()
    first = guide.run_shared("offset", tmp_path, _spec(ctx), True, 120, [], worker, logs)
    pid = worker.proc.pid
    second = guide.run_shared("stride", tmp_path, _spec(ctx), True, 120, [], worker, logs)
    assert worker.proc.pid == pid  # no new process for the second
    for o, name in ((first, "offset"), (second, "stride")):
        assert o.status == guide.PASSED, o.stderr_tail
        assert o.results is not None and o.results.meta["experiment"] == name
        assert o.seconds > 0
    # Each run's output went to its own log, not to the guide's terminal.
    assert "offset on " in (logs / "offset.log").read_text()
    assert "stride on " in (logs / "stride.log").read_text()
    # A refusal is that experiment's exit code, and the worker goes on.
    bad = guide.run_shared("offset", tmp_path, _spec(ctx), True, 120, ["--size", "-5"], worker, logs)
    assert bad.status in (guide.REFUSED, guide.FAILED) and worker.proc.pid == pid


def test_a_hang_in_the_worker_is_stopped_and_the_next_gets_a_new_one(ctx, tmp_path, worker):
    start = time.monotonic()
    o = guide.run_shared("offset", tmp_path, _spec(ctx), True, 1.0, LONG, worker, tmp_path)
    assert o.status == guide.TIMED_OUT and "stopped after 1 s" in o.stderr_tail
    assert time.monotonic() - start < 30 and worker.proc is None
    nxt = guide.run_shared("offset", tmp_path, _spec(ctx), True, 120, [], worker, tmp_path)
    assert nxt.status == guide.PASSED


def test_a_crash_of_the_worker_costs_that_experiment_only(ctx, tmp_path, worker):
    worker._start()
    pid = worker.proc.pid
    killer = threading.Timer(0.5, os.kill, (pid, signal.SIGKILL))
    killer.start()
    try:
        o = guide.run_shared("offset", tmp_path, _spec(ctx), True, 120, LONG, worker, tmp_path)
    finally:
        killer.cancel()
    assert o.status == guide.CRASHED and o.returncode == -signal.SIGKILL
    nxt = guide.run_shared("offset", tmp_path, _spec(ctx), True, 120, [], worker, tmp_path)
    assert nxt.status == guide.PASSED and worker.proc.pid != pid


def test_ctrl_c_stops_the_worker(ctx, tmp_path, worker):
    worker._start()
    pid = worker.proc.pid

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            guide.run_shared("offset", tmp_path, _spec(ctx), True, 120, LONG, worker, tmp_path)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert worker.proc is None and not _alive(pid)


def test_only_the_isolated_experiments_get_a_process_of_their_own(tmp_path, monkeypatch):
    isolated = {cls.id for cls in catalogue() if cls.isolate}
    assert {"gridsync", "launchbounds", "spill"} <= isolated
    assert "offset" not in isolated
    # Their CUDA references (CuPy) are opt-in: a guide run loads no second runtime for them.
    assert not {"vector", "tiling"} & isolated
    seen: list[tuple[str, str]] = []
    workers = []
    runner = guide.Runner()

    def fake(name, out, device, quick, timeout, extra, worker, logs):
        workers.append(worker)
        seen.append(("shared" if worker in runner.workers else "own", name))
        return guide.Outcome(name, guide.PASSED, 0.0, 0)

    monkeypatch.setattr(guide, "run_shared", fake)
    try:
        for name in ("offset", "spill", "gridsync", "stride"):
            runner(name, tmp_path, None, True, 10.0, [])
        # Each isolated experiment had a worker process of its own, started ahead (the spare)
        # and closed after it; a new spare waits for the next.
        assert workers[1] is not workers[2] and workers[0] is workers[3] is runner.workers[0]
        assert runner.spare.proc is not None and runner.spare.proc.poll() is None
    finally:
        runner.close()
    assert workers[1].proc is None and workers[2].proc is None
    assert seen == [("shared", "offset"), ("own", "spill"), ("own", "gridsync"), ("shared", "stride")]
    assert runner.spare.proc is None and runner.workers[0].proc is None


def test_quick_and_thorough_contradict(tmp_path):
    with pytest.raises(ValueError, match="contradict"):
        guide.run_guide(tmp_path / "x", only="offset", quick=True, thorough=True, progress=False)
