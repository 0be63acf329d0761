"""tune() on Dask: a LocalCluster of two workers on the one PoCL device, a scheduler and workers
started as separate processes on 127.0.0.1 (as on two hosts), a worker killed mid-sweep, and a
configuration that aborts its worker process. Loopback only; every wait is bounded."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from pyclperf import tune
from pyclperf.measure.results import Results
from pyclperf.tuner.options import from_flat

pytest.importorskip("distributed")

N = 256
SRC = """__kernel void axpy(__global float* y, __global const float* x, const float a, const int n) {
    const int i = get_global_id(0); if (i < n) y[i] = a * x[i] + 1.0f; }"""
FAST = dict(min_time=0.0, min_repeats=1, max_repeats=1, warmup=0)
# `python -m dask`: the dask command of the interpreter running the tests, also where Dask was
# installed without its scripts on PATH (a --target install).
DASK = [sys.executable, "-m", "dask"]


def _job(x: np.ndarray, params: dict, **extra: object) -> dict:
    return dict(source=SRC, kernel_name="axpy", problem_size=N,
                args=[np.zeros(N, np.float32), x, 2.0, N], params=params,
                answer=[np.float32(2) * x + np.float32(1), None, None, None], **FAST, **extra)


def _spec(ctx) -> str:
    """The device under test as a PYCLPERF_DEVICE spec: workers open the device the test's own
    context holds (on a GPU host, not whichever device comes first)."""
    return f"{ctx.info.platform_index}:{ctx.info.device_index}"


def _unique(rows: list[dict]) -> list[str]:
    keys = [r["config"] for r in rows]
    assert len(keys) == len(set(keys)), "a configuration was recorded twice"
    return keys


@pytest.fixture(scope="module")
def fleet(ctx):
    """Two workers on the device under test, shared by the tests that pass client=."""
    from pyclperf.tuner.distributed import Fleet

    f = Fleet.local([_spec(ctx)] * 2)
    yield f
    f.close()


@pytest.mark.slow  # 10-15 s on an H200 beside the other tests
def test_local_cluster_of_two_workers_streams_rows_and_resumes(tmp_path, ctx, fleet):
    x = np.arange(N, dtype=np.float32)
    params = {"block_size_x": [16, 32, 64], "UNROLL": [1, 2]}
    out = tmp_path / "r.jsonl"
    res = tune(
        **from_flat(dict(**_job(x, params), devices=[_spec(ctx)] * 2, out=out))
    )  # a LocalCluster of its own
    assert sorted(_unique(res.rows)) == sorted(_unique(Results.load(out).rows))
    assert len(res.rows) == 6 and {r["status"] for r in res.rows} == {"ok"}
    assert {r["device"].split(" ", 1)[1] for r in res.rows} == {ctx.info.name}
    assert res.meta["devices"]  # the workers' devices are in the metadata
    # The client is the only writer, so the file resumes as one device's would: across
    # clusters, and in this process alone, nothing reruns.
    params["UNROLL"].append(3)
    again = tune(**from_flat(dict(**_job(x, params), client=fleet.client, out=out)))
    assert len(again.rows) == 9 and len(out.read_text().splitlines()) == 10
    alone = tune(**from_flat(dict(**_job(x, params), ctx=ctx, out=out)))
    assert len(alone.rows) == 9 and len(out.read_text().splitlines()) == 10


def test_a_configuration_that_kills_its_worker_is_crashed_and_the_sweep_goes_on(tmp_path, fleet):
    x = np.arange(N, dtype=np.float32)

    def maybe_abort(config: dict) -> np.ndarray:  # a closure: shipped by value (cloudpickle)
        if config["UNROLL"] == 3:
            os.abort()
        return x

    job = _job(x, {"block_size_x": [32], "UNROLL": [1, 2, 3, 4, 5]})
    job["args"][1] = maybe_abort
    res = tune(**from_flat(dict(**job, client=fleet.client, out=tmp_path / "c.jsonl")))
    by = {r["UNROLL"]: r for r in res.rows}
    assert sorted(by) == [1, 2, 3, 4, 5] and len(res.rows) == 5
    assert by[3]["status"] == "crashed", by[3]
    assert "worker" in by[3]["error"]
    assert {by[u]["status"] for u in (1, 2, 4, 5)} == {"ok"}


def test_ctrl_c_on_the_client_cancels_and_keeps_what_finished(tmp_path, fleet):
    import _thread

    x = np.arange(N, dtype=np.float32)
    out = tmp_path / "i.jsonl"

    def slow(config: dict, seconds: float) -> float:
        time.sleep(0.3)
        return 1.0

    def ctrl_c_once_rows_arrive() -> None:  # Ctrl-C as the main thread sees it
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if out.exists() and len(out.read_text().splitlines()) >= 3:
                _thread.interrupt_main()
                return
            time.sleep(0.05)

    threading.Thread(target=ctrl_c_once_rows_arrive, daemon=True).start()
    res = tune(
        **from_flat(
            dict(
                **_job(x, {"block_size_x": [32], "UNROLL": list(range(1, 41))}),
                metrics={"slow": slow},
                client=fleet.client,
                out=out,
            )
        )
    )
    assert res.meta.get("interrupted") is True
    kept = _unique(Results.load(out).rows)
    assert 2 <= len(kept) < 40 and sorted(kept) == sorted(_unique(res.rows))
    time.sleep(1.0)  # nothing cancelled goes on to write
    assert len(Results.load(out).rows) == len(kept)


def test_chunk_sizes_start_small_grow_toward_the_time_target_and_shrink_at_the_end():
    from pyclperf.tuner.distributed import CHUNK_S, ChunkSizer

    sizer, sizes = ChunkSizer(workers=2, total=1000, informed=False), []
    while sizer.remaining:
        sizes.append(sizer.next_size())
        sizer.sent(sizes[-1])
        sizer.done(sizes[-1], sizes[-1] * CHUNK_S / 50)  # 50 configurations make CHUNK_S
    assert sum(sizes) == 1000 and sizes[0] == 1 and max(sizes) == 50
    assert all(b <= 4 * a for a, b in zip(sizes, sizes[1:]))  # grows at most fourfold a step
    assert sizes[-1] <= 5  # the tail is cut small, so neither worker is left waiting long
    assert ChunkSizer(workers=2, total=1000, informed=True).next_size() == 1


def test_a_configuration_that_kills_its_worker_inside_a_chunk_is_found_alone(
        tmp_path, fleet, monkeypatch):
    from pyclperf.tuner import distributed

    monkeypatch.setattr(distributed, "FIRST_CHUNK", 3)  # the killer rides in the first chunk
    monkeypatch.setattr(distributed, "CHUNK_S", 100.0)
    x = np.arange(N, dtype=np.float32)

    def maybe_abort(config: dict) -> np.ndarray:
        if config["UNROLL"] == 3:
            os.abort()
        return x

    job = _job(x, {"block_size_x": [32], "UNROLL": list(range(1, 25))})
    job["args"][1] = maybe_abort
    out = tmp_path / "k.jsonl"
    res = tune(**from_flat(dict(**job, client=fleet.client, out=out)))
    assert res.meta["dask"]["chunks_split"] >= 1, res.meta["dask"]
    assert sorted(_unique(res.rows)) == sorted(_unique(Results.load(out).rows))
    by = {r["UNROLL"]: r for r in res.rows}
    assert sorted(by) == list(range(1, 25))
    assert by[3]["status"] == "crashed", by[3]
    assert {by[u]["status"] for u in by if u != 3} == {"ok"}  # its chunk-mates ran once, fine


def test_a_chunks_rows_are_written_with_one_fsync(tmp_path, fleet, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    x = np.arange(N, dtype=np.float32)
    out = tmp_path / "f.jsonl"
    res = tune(
        **from_flat(
            dict(
                **_job(x, {"block_size_x": [16, 32], "UNROLL": list(range(1, 21))}),
                client=fleet.client,
                out=out,
            )
        )
    )
    assert sorted(_unique(res.rows)) == sorted(_unique(Results.load(out).rows))
    tasks = res.meta["dask"]["tasks"]
    assert tasks < len(res.rows) == 40  # chunks of several, so fewer fsyncs than rows
    assert len(synced) <= 1 + tasks  # the header, then one per chunk


def test_a_job_the_workers_hold_is_not_shipped_again(fleet):
    x = np.arange(N, dtype=np.float32) + 7.0  # a job no other test ran
    first = tune(**from_flat(dict(**_job(x, {"block_size_x": [16, 32]}), client=fleet.client)))
    again = tune(**from_flat(dict(**_job(x, {"block_size_x": [16, 32, 64]}), client=fleet.client)))
    assert first.meta["dask"]["shipped"] is True and again.meta["dask"]["shipped"] is False
    assert {r["status"] for r in first.rows + again.rows} == {"ok"} and len(again.rows) == 3


def test_a_worker_without_the_job_gets_it_shipped_and_runs_its_task_again(fleet, monkeypatch):
    from pyclperf.tuner import distributed

    # Every worker claims to hold the job, as after a sweep of it; none does, as when a
    # worker was restarted since: its tasks find no job, so the client ships it then.
    monkeypatch.setattr(distributed.remote, "holds", lambda job_id: True)
    x = np.arange(N, dtype=np.float32) + 11.0
    res = tune(
        **from_flat(
            dict(**_job(x, {"block_size_x": [16, 32], "UNROLL": [1, 2, 3]}), client=fleet.client)
        )
    )
    assert res.meta["dask"]["shipped"] is True
    assert len(_unique(res.rows)) == 6 and {r["status"] for r in res.rows} == {"ok"}


@pytest.fixture
def external_cluster(tmp_path, ctx):
    """A scheduler and two workers as separate processes, the way a user starts them on hosts."""
    env = {**os.environ, "PYCLPERF_DEVICE": _spec(ctx),
           "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"}
    file = tmp_path / "scheduler.json"
    procs = [subprocess.Popen([*DASK, "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--scheduler-file", str(file)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + 30
        while not file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert file.exists(), "the scheduler did not start"
        # --no-nanny: a killed worker stays dead, as a lost host would.
        for _ in range(2):
            procs.append(subprocess.Popen(
                [*DASK, "worker", "--scheduler-file", str(file), "--nthreads", "1",
                 "--resources", "pyclperf=1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1",
                 "--preload", "pyclperf.tuner.remote"],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client

        with Client(scheduler_file=str(file), timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
            yield client, procs
    finally:
        for p in reversed(procs):
            p.kill()
            p.wait(timeout=30)


def test_external_workers_one_killed_mid_sweep_lose_and_repeat_nothing(external_cluster, tmp_path):
    client, procs = external_cluster
    x = np.arange(N, dtype=np.float32)
    out = tmp_path / "e.jsonl"
    params = {"block_size_x": [16, 32, 64, 128], "UNROLL": [1, 2, 3]}

    def slow(config: dict, seconds: float) -> float:  # keeps the sweep long enough to interrupt
        time.sleep(0.25)
        return 1.0

    def kill_when_started() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if out.exists() and len(out.read_text().splitlines()) >= 4:
                procs[2].kill()
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_when_started, daemon=True)
    killer.start()
    res = tune(**from_flat(dict(**_job(x, params), metrics={"slow": slow}, client=client, out=out)))
    killer.join(timeout=5)
    assert procs[2].poll() is not None, "the worker was not killed during the sweep"
    keys = _unique(res.rows)
    assert len(keys) == 12 and {r["status"] for r in res.rows} == {"ok"}
    assert sorted(keys) == sorted(_unique(Results.load(out).rows))
    assert len({r["device"] for r in res.rows}) == 1  # both workers serve the one PoCL device


def test_isolate_keeps_this_process_alive_through_a_crashing_configuration(ctx):
    x = np.arange(N, dtype=np.float32)
    parent = os.getpid()

    def maybe_abort(config: dict) -> np.ndarray:
        if config["UNROLL"] == 2 and os.getpid() != parent:  # never in this process
            os.abort()
        return x

    job = _job(x, {"block_size_x": [32], "UNROLL": [1, 2]})
    job["args"][1] = maybe_abort
    res = tune(**from_flat(dict(**job, ctx=ctx, isolate=True)))
    assert [(r["UNROLL"], r["status"]) for r in sorted(res.rows, key=lambda r: r["UNROLL"])] \
        == [(1, "ok"), (2, "crashed")]


def test_external_worker_killed_mid_chunk_loses_and_repeats_nothing(external_cluster, tmp_path,
                                                                   monkeypatch):
    from pyclperf.tuner import distributed

    monkeypatch.setattr(distributed, "FIRST_CHUNK", 4)  # every task a chunk of several
    monkeypatch.setattr(distributed, "CHUNK_S", 100.0)
    client, procs = external_cluster
    x = np.arange(N, dtype=np.float32)
    out = tmp_path / "m.jsonl"

    def slow(config: dict, seconds: float) -> float:
        time.sleep(0.1)
        return 1.0

    def kill_after_a_chunk() -> None:  # both workers then hold a running and a queued chunk
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if out.exists() and len(out.read_text().splitlines()) >= 5:
                procs[1].kill()
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_after_a_chunk, daemon=True)
    killer.start()
    res = tune(
        **from_flat(
            dict(
                **_job(x, {"block_size_x": [16, 32, 64, 128], "UNROLL": list(range(1, 11))}),
                metrics={"slow": slow},
                client=client,
                out=out,
            )
        )
    )
    killer.join(timeout=5)
    assert procs[1].poll() is not None, "the worker was not killed during the sweep"
    assert res.meta["dask"]["chunks_split"] >= 1, res.meta["dask"]
    keys = _unique(res.rows)
    assert len(keys) == 40 and {r["status"] for r in res.rows} == {"ok"}
    assert sorted(keys) == sorted(_unique(Results.load(out).rows))
