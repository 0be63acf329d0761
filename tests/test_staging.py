"""measure.staging: transfers through a buffer's pinned mirrors. Forced on here (a CPU device
never stages by itself): bytes arrive exactly, at offsets, in either byte order; a read's
result survives a later write of the same buffer; misfits are refused in one line; the mirrors
go with their buffer; and experiments verified through them still catch wrong kernels."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import pyclperf
from pyclperf.experiments.bandwidth import Bandwidth
from pyclperf.experiments.base import run_experiment
from pyclperf.measure import staging
from pyclperf.measure.checks import poison_device
from pyclperf.measure.poison import POISON_U32


@pytest.fixture
def always_staged(monkeypatch):
    monkeypatch.setattr(staging, "staged", lambda buffer, nbytes, stage=None: True)


def test_a_read_back_is_exactly_the_device_s_bytes_at_any_offset(ctx, rng):
    n = 4099  # not a multiple of any vector width
    buf = ctx.buffer(4 * n)
    poison_device(buf)
    want = rng.integers(0, 2**32, n, dtype=np.uint32)
    buf.write(want)
    got = staging.read_back(buf, np.uint32, stage=True)
    assert got.dtype == np.uint32 and got.shape == (n,)
    np.testing.assert_array_equal(got, want)
    part = staging.read_back(buf, np.uint16, count=7, offset=4 * 100, stage=True)
    np.testing.assert_array_equal(part, want[100:].view(np.uint16)[:7])
    floats = staging.read_back(buf, np.float32, count=3, offset=8, stage=True)
    np.testing.assert_array_equal(floats.view(np.uint32), want[2:5])
    for stage in (False, True):  # a shape instead of a count, on either path
        grid = staging.read_back(buf, np.uint32, shape=(7, 3), offset=4, stage=stage)
        assert grid.shape == (7, 3)
        np.testing.assert_array_equal(grid, want[1:22].reshape(7, 3))
    with pytest.raises(pyclperf.InvalidArgumentError, match="a count or a shape, not both"):
        staging.read_back(buf, np.uint32, 21, shape=(7, 3))


def test_only_a_buffer_moved_again_gets_a_mirror(ctx, rng):
    buf = ctx.buffer(4096)
    once = staging.read_back(buf, np.uint8, stage=True)
    assert "read" not in staging._mirrors[buf] and once.base is None  # a plain new array
    staging.write_from(buf, np.zeros(4096, np.uint8), stage=True)
    assert "write" not in staging._mirrors[buf]
    twice = staging.read_back(buf, np.uint8, stage=True)
    assert staging._mirrors[buf]["read"].size == 4096 and np.shares_memory(twice, staging._mirrors[buf]["read"])
    staging.write_from(buf, np.zeros(4096, np.uint8), stage=True)
    assert staging._mirrors[buf]["write"].size == 4096


def test_a_staged_read_is_a_view_of_the_mirror_valid_until_the_next_read(ctx, rng):
    buf = ctx.buffer(4096)
    staging.read_back(buf, np.uint32, stage=True)  # the first goes plain
    first = rng.integers(0, 2**32, 1024, dtype=np.uint32)
    buf.write(first)
    got = staging.read_back(buf, np.uint32, stage=True)
    kept = got.copy()
    second = rng.integers(0, 2**32, 1024, dtype=np.uint32)
    buf.write(second)
    again = staging.read_back(buf, np.uint32, stage=True)
    assert np.shares_memory(got, again)  # the documented reuse: one mirror per buffer
    np.testing.assert_array_equal(again, second)
    np.testing.assert_array_equal(kept, first)
    other = ctx.buffer(4096)
    other.write(first)
    staging.read_back(other, np.uint32, stage=True)
    assert not np.shares_memory(staging.read_back(other, np.uint32, stage=True), again)


def test_a_staged_write_lands_exactly_and_leaves_the_rest_alone(ctx, rng):
    buf = ctx.buffer(4 * 1000)
    poison_device(buf)
    staging.write_from(buf, np.zeros(1, np.float32), offset=4 * 600, stage=True)  # plain, first
    poison_device(buf)
    data = rng.standard_normal(10).astype(np.float32)
    staging.write_from(buf, data, offset=4 * 500, stage=True)
    assert staging._mirrors[buf]["write"].size == 2048  # through the mirror: its 2040 bytes, rounded up
    back = np.empty(1000, np.uint32)
    buf.read(back)
    np.testing.assert_array_equal(back[500:510], data.view(np.uint32))
    assert (back[:500] == POISON_U32).all() and (back[510:] == POISON_U32).all()


def test_a_read_survives_a_later_write_of_the_same_buffer(ctx, rng):
    buf = ctx.buffer(4 * 256)
    staging.read_back(buf, np.uint32, stage=True)  # both sides past their plain first transfer
    staging.write_from(buf, np.zeros(256, np.uint32), stage=True)
    old = rng.integers(0, 2**32, 256, dtype=np.uint32)
    buf.write(old)
    got = staging.read_back(buf, np.uint32, stage=True)
    staging.write_from(buf, rng.integers(0, 2**32, 256, dtype=np.uint32), stage=True)
    np.testing.assert_array_equal(got, old)  # the write went through the other mirror


@pytest.mark.parametrize("order", [">f4", "<f4"])
def test_either_byte_order_and_strided_arrays_go_as_their_numbers(ctx, rng, order):
    values = rng.standard_normal(64)
    buf = ctx.buffer(4 * 64)
    staging.write_from(buf, values.astype(order), stage=True)
    np.testing.assert_array_equal(staging.read_back(buf, np.float32, stage=True),
                                  values.astype(np.float32))
    wide = rng.standard_normal(128).astype(np.float32)
    staging.write_from(buf, wide[::2], stage=True)  # not contiguous: copied first, as ever
    np.testing.assert_array_equal(staging.read_back(buf, np.float32, stage=True), wide[::2])


def test_misfits_are_refused_in_one_line(ctx):
    buf = ctx.buffer(64)
    with pytest.raises(pyclperf.InvalidArgumentError, match="passes the end of a 64-byte buffer"):
        staging.read_back(buf, np.uint32, count=17, stage=True)
    with pytest.raises(pyclperf.InvalidArgumentError, match="passes the end"):
        staging.read_back(buf, np.uint32, count=1, offset=64, stage=True)
    with pytest.raises(pyclperf.InvalidArgumentError) as err:
        staging.write_from(buf, np.zeros(17, np.uint32), stage=True)
    assert "\n" not in str(err.value)


def test_staging_is_for_large_transfers_on_a_gpu(ctx):
    buf = ctx.buffer(64)
    assert staging.staged(buf, staging.STAGE_MIN, stage=True)
    assert not staging.staged(buf, staging.STAGE_MIN, stage=False)
    assert not staging.staged(buf, staging.STAGE_MIN - 1)
    assert staging.staged(buf, staging.STAGE_MIN) == bool(ctx.info.is_gpu)


def test_the_mirrors_go_with_their_buffer(ctx):
    gc.collect()
    before = len(staging._mirrors)
    buf = ctx.buffer(4096)
    staging.read_back(buf, np.uint8, stage=True)
    staging.write_from(buf, np.zeros(4096, np.uint8), stage=True)
    assert len(staging._mirrors) == before + 1
    del buf
    gc.collect()
    assert len(staging._mirrors) == before


class _OneShort(Bandwidth):
    """bandwidth with its kernels told one float4 fewer than there are: the last stays poison."""

    id = ""

    def launch(self, point):
        launch = super().launch(point)
        index = 2 if point["mode"] == "write" else 1
        launch.steps[0][0].set_scalar(index, np.uint64(self.count - 1))
        return launch


def test_experiments_verify_through_the_mirrors_and_still_catch_wrong_kernels(ctx, always_staged):
    options = {"nbytes": 16 * 10_007, "sizes": [64], "per_cu": (2,), "full": True}
    good = run_experiment(Bandwidth(ctx, **options), warmup=1, repeats=2)
    assert (good.df["status"] == "ok").all(), good.df[["mode", "status", "error"]]
    bad = run_experiment(_OneShort(ctx, modes=["write", "convert"], **options), warmup=1, repeats=2)
    assert (bad.df["status"] == "wrong result").all(), bad.df[["mode", "status", "error"]]


# Every experiment whose checks move their data through measure.staging, at small sizes on any
# device (a GPU's defaults would make these the slowest tests of `make gpu-check`): all points
# verified through mirrors.
STAGED_EXPERIMENTS = {"aos": {"particles": 1 << 16}, "vector": {"nbytes": 1 << 20},
                      "texture": {"width": 256}, "halftex": {"side": 256}, "constant": {"width": 256},
                      "separable": {"width": 256}, "surface": {"side": 256}, "rgba": {"side": 256},
                      "matmul": {"size": 256}, "divergence": {"items": 1 << 16},
                      "launchbounds": {"items": 1 << 16}, "spill": {"items": 1 << 14},
                      "workingset": {"sizes": [4096, 1 << 16, 1 << 20]}}


@pytest.mark.parametrize("name", sorted(STAGED_EXPERIMENTS))
def test_each_experiment_verifies_every_point_through_the_mirrors(ctx, always_staged, name):
    from pyclperf.experiments import get

    results = run_experiment(get(name)(ctx, **STAGED_EXPERIMENTS[name]), warmup=1, repeats=2)
    status = results.df["status"]
    assert (status == "ok").sum() > 0
    assert status.isin(["ok", "skipped"]).all(), results.df[["status", "error"]]


def test_a_mirror_covers_what_was_moved_and_grows_when_more_is(ctx, rng):
    buf = ctx.buffer(1 << 16)
    data = rng.integers(0, 2**32, 1 << 14, dtype=np.uint32)
    buf.write(data)
    staging.read_back(buf, np.uint32, count=1, stage=True)  # the first goes plain
    small = staging.read_back(buf, np.uint32, count=100, stage=True)
    assert staging._mirrors[buf]["read"].size == 512  # 400 bytes, to a power of two
    np.testing.assert_array_equal(small, data[:100])
    whole = staging.read_back(buf, np.uint32, stage=True)
    assert staging._mirrors[buf]["read"].size == 1 << 16
    np.testing.assert_array_equal(whole, data)
    np.testing.assert_array_equal(small, data[:100])  # an earlier view keeps its own mirror
