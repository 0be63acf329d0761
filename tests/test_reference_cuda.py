"""The CUDA reference's batching, driven by a fake clock (no CUDA needed), and what it says
where CuPy is missing."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
from fake_cupy import LAUNCH_MS, FakeCupy, cupyx_module

from pyclperf.reference import cuda as rc
from pyclperf.reference.cuda import BatchPolicy, BatchTimer, BatchTooShortError


class FakeStream:
    """A stream's timeline in seconds: launches run back to back on the device; one issued to an
    idle stream starts only ``gap_s`` after the host issued it (the launch gap); a mark (event)
    completes when everything queued before it has run, or at once on an idle stream."""

    def __init__(self, durations: list[float], gap_s: float = 5e-6) -> None:
        self.durations = list(durations)  # device seconds per launch, one entry per batch
        self.gap_s = gap_s
        self.host = 0.0  # when the host issues the next call
        self.free_at = 0.0  # when the device finishes what is queued
        self.current = self.durations[0]
        self.launches = 0

    def launch(self) -> None:
        start = max(self.free_at, self.host + self.gap_s)
        self.free_at = start + self.current
        self.host += 1e-7  # issuing is quick; the device is what takes time
        self.launches += 1

    def _mark(self) -> float:
        return max(self.free_at, self.host)

    def record_start(self) -> None:
        self.start = self._mark()

    def record_end(self) -> None:
        self.end = self._mark()

    def elapsed_s(self) -> float:
        return self.end - self.start

    def next_batch(self) -> None:
        """The next batch's launches take the next duration (the last one repeats)."""
        if len(self.durations) > 1:
            self.durations.pop(0)
        self.current = self.durations[0]


class PerBatch(FakeStream):
    """Switches to the next duration at each start mark: one duration per timed batch."""

    def record_start(self) -> None:
        self.next_batch()
        super().record_start()


def test_divides_by_the_launches_of_a_batch():
    stream = FakeStream([3e-3])
    timer = BatchTimer(stream.launch, stream, launches=7)
    timing = timer.measure(batches=3)
    # 7 launches of 3 ms: 21 ms per batch; the figure is per launch, gap excluded by the
    # untimed launch queued ahead.
    assert timing.launches == 7
    assert timing.batch_per_launch_s == pytest.approx([3e-3] * 3, rel=1e-9)
    assert stream.launches == 3 * (7 + 1)
    assert "7 back-to-back launches" in timing.how and "median of 3 batches" in timing.how


def test_the_launch_gap_stays_out():
    # A 1 ms kernel with a 50 us gap: timed one launch at a time from an idle stream, the gap
    # would add 5%; the batch timer's figure is the kernel's.
    stream = FakeStream([1e-3], gap_s=50e-6)
    stream.record_start()
    stream.launch()
    stream.record_end()
    assert stream.elapsed_s() == pytest.approx(1.05e-3)  # the naive way the issue is about
    timing = BatchTimer(stream.launch, stream, launches=4).measure(batches=2)
    assert timing.median_s == pytest.approx(1e-3, rel=1e-9)


def test_median_over_batches_with_min_max_and_spread():
    # The first entry is used by the launches before the first batch; then one per batch.
    stream = PerBatch([1e-3, 2e-3, 9e-3, 1e-3, 3e-3, 2.5e-3])
    timing = BatchTimer(stream.launch, stream, launches=10).measure(batches=5)
    assert timing.batch_per_launch_s == pytest.approx([2e-3, 9e-3, 1e-3, 3e-3, 2.5e-3], rel=1e-6)
    assert timing.median_s == pytest.approx(2.5e-3, rel=1e-6)  # not the mean (3.5 ms)
    assert timing.min_s == pytest.approx(1e-3, rel=1e-6)
    assert timing.max_s == pytest.approx(9e-3, rel=1e-6)
    assert timing.spread_pct == pytest.approx(800.0, rel=1e-6)
    d = timing.as_dict()
    assert d["median_ns"] == pytest.approx(2.5e6, rel=1e-6) and d["batches"] == 5


def test_calibration_makes_a_batch_last_the_target():
    stream = FakeStream([0.3e-3], gap_s=10e-6)
    policy = BatchPolicy(target_batch_s=20e-3)
    timer = BatchTimer(stream.launch, stream, policy)
    n = timer.calibrate()
    assert 20e-3 <= n * 0.3e-3 < 2 * 20e-3
    assert timer.measure(3).median_s == pytest.approx(0.3e-3, rel=1e-9)


def test_refuses_a_batch_shorter_than_the_stated_multiple_of_the_gap():
    policy = BatchPolicy(gap_bound_s=10e-6, min_gap_multiple=50)  # batches of >= 500 us
    short = FakeStream([2e-6])  # 100 launches x 2 us = 200 us
    with pytest.raises(BatchTooShortError, match=r"under 50x the 10 us launch-gap bound \(500 us\)"):
        BatchTimer(short.launch, short, policy, launches=100).batch()
    # The same launches, long enough: accepted (so the refusal is about the duration).
    enough = FakeStream([6e-6])  # 600 us
    assert BatchTimer(enough.launch, enough, policy, launches=100).batch() == pytest.approx(6e-6)


def test_refuses_when_calibration_cannot_reach_the_bound():
    # Capped at 50 launches of 1 us: 50 us per batch, never 500 us.
    stream = FakeStream([1e-6])
    timer = BatchTimer(stream.launch, stream, BatchPolicy(max_launches=50))
    with pytest.raises(BatchTooShortError):
        timer.measure(3)
    assert timer.launches == 50


def test_refuses_a_single_launch_batch():
    stream = FakeStream([10e-3])
    with pytest.raises(BatchTooShortError, match="at least 2"):
        BatchTimer(stream.launch, stream, launches=1).batch()


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed here")
def test_without_cupy_the_references_say_so_by_name():
    with pytest.raises(rc.CudaUnavailableError, match="CuPy is not available") as info:
        rc.CudaReference()
    # A named error of its own, not an ImportError with its traceback chained on.
    assert not isinstance(info.value, ImportError)
    assert info.value.__cause__ is None and info.value.__suppress_context__


# --- the references themselves, on a NumPy stand-in for CuPy (tests/fake_cupy.py) ---------

def _references(broken: tuple[str, ...] = ()) -> tuple[FakeCupy, rc.CudaReference]:
    fake = FakeCupy(broken)
    return fake, rc.CudaReference(cp=fake)


KiB = 1 << 10


def _all_prepared(ref: rc.CudaReference, nbytes: int = 64 * KiB) -> dict[str, rc.Prepared]:
    a = np.random.default_rng().uniform(-1, 1, (32, 32)).astype(np.float32)
    return {
        "memcpy": ref.device_copy(nbytes, "memcpy"), "copyto": ref.device_copy(nbytes, "copyto"),
        "h2d pinned": ref.transfer("h2d", nbytes), "d2h pinned": ref.transfer("d2h", nbytes),
        "h2d pageable": ref.transfer("h2d", nbytes, "pageable"),
        "copy_f4": ref.copy_kernel(nbytes), "fill_f4": ref.fill_kernel(nbytes),
        "read_f4": ref.read_kernel(nbytes), "matmul": ref.matmul(a, a.T.copy())[0],
    }


@pytest.fixture
def fake_cupyx(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupyx", cupyx_module())


def test_every_reference_verifies_and_is_timed_per_launch(fake_cupyx):
    fake, ref = _references()
    for name, prepared in _all_prepared(ref).items():
        assert prepared.verified, (name, prepared.detail)
        result = prepared.measure(batches=3)
        # The fake device clock moves LAUNCH_MS per launch: batches of many launches, divided.
        assert result["median_ns"] == pytest.approx(LAUNCH_MS * 1e6), name
        assert result["launches_per_batch"] >= 2 and result["batches"] == 3
        assert "CUDA events around" in result["how"] and result["verified"]
    # The kernels were tried in every launch shape (blocks per SM, and the whole grid of one
    # float4 per thread for each block size), and the best one kept.
    shapes = ref.copy_kernel(64 * KiB).config["shapes_ns"]
    assert len(shapes) == len(rc.BLOCKS) * (len(rc.GRIDS_PER_SM) + 1)
    assert {f"{b}x whole grid" for b in rc.BLOCKS} <= set(shapes)


@pytest.mark.parametrize("broken, name", [
    (("memcpy",), "memcpy"), (("memcpy",), "h2d pinned"), (("memcpy",), "d2h pinned"),
    (("copyto",), "copyto"), (("copy_f4",), "copy_f4"), (("fill_f4",), "fill_f4"),
    (("read_f4",), "read_f4"), (("matmul",), "matmul"),
])
def test_a_reference_that_does_nothing_fails_its_check(fake_cupyx, broken, name):
    # Destinations are poisoned first, so an operation that writes nothing cannot pass.
    _, ref = _references(broken)
    prepared = _all_prepared(ref)[name]
    assert not prepared.verified
    assert prepared.detail


def test_a_host_bound_batch_is_named_so():
    # 2 ms of host time to issue each 1 ms launch: the device waited on the host, and the
    # figure is a launch rate; the how-timed note must say so. A quick issuer is not flagged.
    import time

    stream = FakeStream([1e-3])

    def slow_launch() -> None:
        time.sleep(2e-3)
        stream.launch()

    slow = BatchTimer(slow_launch, stream, launches=10).measure(2)
    assert slow.host_issue_share > 1 and "host-bound" in slow.how
    quick = BatchTimer(stream.launch, stream, launches=10).measure(2)
    assert quick.host_issue_share < 0.5 and "host-bound" not in quick.how
