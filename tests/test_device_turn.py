"""Processes that share a device take turns: no two hold it at once, host sections run beside
another's turn, a quiet turn keeps every other process's host work out, and without the turns'
folder nothing is locked at all."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
from pathlib import Path

import pytest

from pyclperf.device import turns as device_turn
from pyclperf.device.turns import TURNS_ENV


def _lane(folder: str, log: str, name: str, rounds: int, quiet: bool, hold_s: float,
          host_s: float) -> None:
    """One process: ``rounds`` experiments, each a device phase, a host section, a device phase;
    every phase's start and end appended to ``log``."""
    os.environ[TURNS_ENV] = folder
    from pyclperf.device.turns import device_turn as turn, host_only

    def mark(kind: str, fn) -> None:
        begun = time.monotonic()
        fn()
        with open(log, "a") as f:
            f.write(json.dumps([name, kind, begun, time.monotonic()]) + "\n")

    from pyclperf.device.turns import quiet_now

    for _ in range(rounds):
        with turn(quiet=quiet is True):
            mark("quiet" if quiet is True else "device", lambda: time.sleep(hold_s))
            with host_only():
                mark("host", lambda: time.sleep(host_s))
            if quiet == "now":  # the host kept quiet for a moment inside a plain turn
                with quiet_now():
                    mark("quiet", lambda: time.sleep(hold_s))
            mark("quiet" if quiet is True else "device", lambda: time.sleep(hold_s))


def _phases(log: Path) -> list[tuple[str, str, float, float]]:
    return [tuple(json.loads(line)) for line in log.read_text().splitlines()]


def _overlap(a, b) -> bool:
    return a[2] < b[3] and b[2] < a[3]


def _run(tmp_path: Path, lanes: list[tuple[str, int, bool, float, float]]) -> list:
    folder, log = tmp_path / "turns", tmp_path / "log.jsonl"
    folder.mkdir()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_lane, args=(str(folder), str(log), *lane)) for lane in lanes]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    return _phases(log)


def test_two_processes_never_hold_the_device_at_once_but_work_on_the_host_beside_it(tmp_path):
    phases = _run(tmp_path, [("a", 4, False, 0.05, 0.2), ("b", 4, False, 0.05, 0.2)])
    device = [p for p in phases if p[1] == "device"]
    assert len(device) == 16
    for i, x in enumerate(device):
        for y in device[i + 1:]:
            if x[0] != y[0]:
                assert not _overlap(x, y), (x, y)
    # The point of the turns: one's host work ran while the other held the device.
    host = [p for p in phases if p[1] == "host"]
    assert any(_overlap(h, d) for h in host for d in device if h[0] != d[0])


def test_a_quiet_turn_keeps_other_host_work_out(tmp_path):
    # Two busy lanes whose host sections overlap each other all the time: the quiet lane still
    # gets its turns (the gate), and nobody waits on anybody for ever.
    phases = _run(tmp_path, [("q", 3, True, 0.15, 0.1), ("a", 12, False, 0.01, 0.1),
                             ("b", 12, False, 0.01, 0.1)])
    # While the quiet lane holds its turn (its own host sections run inside it), the others
    # neither measure nor work on the host.
    quiet = [p for p in phases if p[0] == "q"]
    others = [p for p in phases if p[0] != "q"]
    assert len(quiet) == 9 and len(others) == 72
    for q in quiet:
        for o in others:
            assert not _overlap(q, o), (q, o)


def test_quiet_now_keeps_other_host_work_out_for_its_moment(tmp_path):
    # The event clock's check inside a plain turn: while it runs, no other lane measures or
    # works on the host; the lane's plain phases around it still let their host work run.
    phases = _run(tmp_path, [("q", 3, "now", 0.1, 0.05), ("a", 12, False, 0.01, 0.1),
                             ("b", 12, False, 0.01, 0.1)])
    moments = [p for p in phases if p[0] == "q" and p[1] == "quiet"]
    others = [p for p in phases if p[0] != "q"]
    assert len(moments) == 3 and len(others) == 72
    for q in moments:
        for o in others:
            assert not _overlap(q, o), (q, o)
    device = [p for p in phases if p[1] in ("device", "quiet")]
    for i, x in enumerate(device):  # and the device is still held by one lane at a time
        for y in device[i + 1:]:
            if x[0] != y[0]:
                assert not _overlap(x, y), (x, y)


@pytest.fixture(autouse=True)
def _closed_locks():
    yield
    device_turn._state.close()


def test_without_the_folder_nothing_is_locked(tmp_path, monkeypatch):
    monkeypatch.delenv(TURNS_ENV, raising=False)
    assert device_turn._folder() is None
    with device_turn.device_turn(quiet=True):
        with device_turn.host_only():
            pass
    assert device_turn._state.files == {} and not device_turn._state.holding


def test_host_work_runs_the_function_and_returns_its_value(tmp_path, monkeypatch):
    monkeypatch.setenv(TURNS_ENV, str(tmp_path))

    @device_turn.host_work
    def double(x):
        assert not device_turn._state.holding  # the turn was given up around it
        return 2 * x

    with device_turn.device_turn():
        assert device_turn._state.holding
        assert double(21) == 42
        assert device_turn._state.holding  # and taken back
    assert not device_turn._state.holding
    assert double(2) == 4  # outside a turn: just the function


def test_lanes_for_a_device(monkeypatch, tmp_path):
    from pyclperf.device import devices
    from pyclperf.guide.lanes import lanes_for

    class Info:
        platform_name, vendor, name, driver_version = "P", "V", "a device nobody has", "0"

        def __init__(self, kind):
            self.type = kind

    monkeypatch.setattr(devices, "select_device", lambda spec=None: Info("CPU"))
    assert lanes_for(None, cpus=64)[0] == 1
    monkeypatch.setattr(devices, "select_device", lambda spec=None: Info("GPU"))
    assert lanes_for(None, cpus=16)[0] == 6
    assert lanes_for(None, cpus=8)[0] == 4
    assert lanes_for(None, cpus=2)[0] == 1
    assert lanes_for(None, method="host", cpus=16)[0] == 1

    # A GPU whose event clock failed its check (the verdict cached): auto times by the host's
    # clock, which other lanes' host work would move, so one lane.
    from pyclperf.device import clocks

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    clocks.forget()
    info = Info("GPU")
    clocks._write_cache(clocks._key(info), clocks.EventClock(False, ("stands still",), 1, (), "d", "0", "t"))
    n, why = lanes_for(None, cpus=16)
    assert n == 1 and "event clock failed its check" in why
    assert lanes_for(None, method="events", cpus=16)[0] == 6  # events asked for: lanes as ever
    clocks._write_cache(clocks._key(info), clocks.EventClock(True, (), 1, (), "d", "0", "t"))
    assert lanes_for(None, cpus=16)[0] == 6
    clocks.forget()

    def missing(spec=None):
        raise ValueError("no such device")

    monkeypatch.setattr(devices, "select_device", missing)
    n, why = lanes_for("nope", cpus=16)
    assert n == 1 and "could not be looked up" in why


def test_lanes_start_the_host_bound_experiments_first():
    from pyclperf.experiments import get
    from pyclperf.guide.lanes import run_in_lanes, start_order
    from pyclperf.guide.run import experiment_ids

    ids = experiment_ids()
    bound = [n for n in ids if get(n).host_bound]
    assert {"intops", "math", "separable"} <= set(bound)  # the slowest hosts' work of a quick run
    order = [ids[i] for i in start_order(ids)]
    assert sorted(order) == sorted(ids)
    assert order[:len(bound)] == bound  # first, in catalogue order
    assert order[len(bound):] == [n for n in ids if n not in bound]
    # An id that is not an experiment keeps its place among the rest.
    assert start_order(["offset", "mine", "math"]) == [2, 0, 1]
    # One lane starts them in that order; the outcomes still come back in the order given.
    started: list[str] = []
    done, stopped = run_in_lanes(["offset", "intops", "stride"], 1,
                                 lambda name, allowed: started.append(name) or name.upper(),
                                 lambda: 10.0, lambda outcome: None, lambda name: None, lambda: None)
    assert started == ["intops", "offset", "stride"]
    assert done == ["OFFSET", "INTOPS", "STRIDE"] and not stopped


@pytest.mark.device
@pytest.mark.slow(17)  # 10-17 s on an H200 beside the other tests
def test_the_guide_in_two_lanes_runs_every_experiment_in_catalogue_order(ctx, tmp_path, monkeypatch):
    from pyclperf.guide import report
    from pyclperf.guide import run as guide

    drawn: list[str] = []
    real = report.figures_of
    monkeypatch.setattr(report, "figures_of", lambda res: drawn.append(res.meta["experiment"]) or real(res))
    spec = f"{ctx.info.platform_index}:{ctx.info.device_index}"
    only = "offset,transfer,stride"
    page, outcomes = guide.run_guide(tmp_path / "g", device=spec, quick=True, only=only,
                                     progress=False, lanes=2)
    assert [o.experiment for o in outcomes] == only.split(",")
    assert all(o.status == guide.PASSED for o in outcomes), [(o.experiment, o.status, o.stderr_tail)
                                                             for o in outcomes]
    assert all(o.results is not None and len(o.results.rows) > 0 for o in outcomes)
    assert page.is_file()
    # Each experiment's time at the device is recorded, and is within its run's seconds.
    recorded = json.loads((tmp_path / "g" / "guide.json").read_text())["experiments"]
    assert all(0 < e["device_s"] <= e["seconds"] for e in recorded), recorded
    assert sorted(drawn) == sorted(only.split(","))  # each drawn once, while the run went on


def test_lanes_below_one_are_refused(tmp_path):
    from pyclperf.guide import run as guide

    with pytest.raises(ValueError, match="--lanes must be at least 1"):
        guide.run_guide(tmp_path / "x", only="offset", lanes=0, progress=False)


def test_the_clock_check_of_a_run_takes_the_device_turn(ctx, tmp_path, monkeypatch):
    # The check launches copies the first time on a device and driver: outside the turn they
    # would land inside another lane's measurement.
    from pyclperf import cli
    from pyclperf.device import clocks

    seen: list[bool] = []
    real = clocks.timing_for

    def watched(*args, **kwargs):
        seen.append(device_turn._state.holding)
        return real(*args, **kwargs)

    monkeypatch.setattr(clocks, "timing_for", watched)
    monkeypatch.setenv(TURNS_ENV, str(tmp_path))
    spec = f"{ctx.info.platform_index}:{ctx.info.device_index}"
    assert cli.main(["run", "offset", "--device", spec, "--size", "4096", "--timing", "quick",
                     "--out", str(tmp_path / "out"), "--no-plot"]) == 0
    assert seen == [True]


def test_watchers_see_every_span_the_turn_is_held_and_are_removed_after(tmp_path, monkeypatch):
    monkeypatch.setenv(TURNS_ENV, str(tmp_path))
    seen: list[str] = []

    def taken() -> None:
        seen.append("taken" if device_turn.holding() else "taken, not holding")

    def giving() -> None:
        seen.append("giving" if device_turn.holding() else "giving, not holding")

    with device_turn.watching(taken, giving):
        with device_turn.device_turn(label="x"):
            with device_turn.host_only():     # the turn given up around the host section
                seen.append("host")
        assert not device_turn.holding()
    assert seen == ["taken", "giving", "host", "taken", "giving"]
    assert not device_turn._watchers and not device_turn._state.files
    with device_turn.device_turn(label="y"):  # no watcher any more
        pass
    assert seen[-1] == "giving" and len(seen) == 5
    assert [t["label"] for t in device_turn.held(tmp_path)] == ["x", "y"]
