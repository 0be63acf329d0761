"""Ceilings found by searching launch shapes (pyclperf.roofline.search), and the kernels the
search times: every one verified against NumPy, and every check able to fail."""

from __future__ import annotations

import numpy as np
import pytest

from pyclperf import kernel_source
from pyclperf.roofline import search, streams
from pyclperf.roofline.chase import ChaseRig
from pyclperf.roofline.passes import PassReader
from pyclperf.roofline.record import Effort, fastest

KiB, MiB = 1 << 10, 1 << 20


def test_descend_changes_one_axis_at_a_time_and_keeps_the_best():
    def probe(shape):  # best at vector 16, items 64; items matter only once the vector is wide
        return shape["vector"] * (2.0 if shape["items"] == 64 else 1.0)

    best, tried = search.descend({"vector": 4, "items": 16}, {"vector": (4, 8, 16), "items": (16, 64, 256)},
                                 probe)
    assert best == {"vector": 16, "items": 64}
    assert len(tried) == 5  # the start, two more widths, two more item counts: no grid
    assert tried["vector=16, items=64"] == 32.0


def test_settle_skips_a_shape_that_verifies_wrong_and_says_which_won():
    shapes = {search.label({"v": v}): {"v": v} for v in (1, 2, 3)}
    tried = {k: float(s["v"]) for k, s in shapes.items()}

    def final(shape):
        if shape["v"] == 3:
            return {"value": None, "unit": "GB/s", "how": "t", "status": "failed", "reason": "wrong result"}
        return {"value": 10.0 * shape["v"], "unit": "GB/s", "how": "t", "status": "ok", "spread_pct": 1.0, "n": 3}

    fig = search.settle(tried, shapes, final, "GB/s", "t")
    assert fig["value"] == 20.0 and fig["shape"] == {"v": 2} and fig["shapes_tried"] == tried
    none = search.settle({"v=1": None}, shapes, final, "GB/s", "t")
    assert none["status"] == "failed" and "no launch shape ran" in none["reason"]


def test_the_fastest_launch_sets_one_outlier_aside():
    assert fastest([5.0, 1.0, 4.0, 6.0]) == 4.0  # one launch timed at a fifth: set aside
    assert fastest([5.0, 4.0]) == 4.0 and fastest([3.0]) == 3.0


@pytest.mark.parametrize("layout", streams.LAYOUTS)
def test_stream_read_reference_matches_a_replay(layout):
    rig = object.__new__(streams.StreamRig)
    rig.a, rig.b = 2654435761, 97
    v, items, g = 4, 3, 10
    words = (np.uint64(rig.a) * np.arange(v * items * g, dtype=np.uint64) + np.uint64(rig.b)) & np.uint64(0xFFFFFFFF)
    want = np.zeros((g, v), np.uint64)
    for gid in range(g):
        for k in range(items):
            e = gid * items + k if layout == "blocked" else gid + k * g
            want[gid] += words[e * v: e * v + v]
    got = rig.read_reference({"vector": v, "items": items, "layout": layout}, g)
    assert got.tolist() == (want & np.uint64(0xFFFFFFFF)).astype(np.uint32).reshape(-1).tolist()


def test_streams_verify_what_they_time(ctx):
    rng = np.random.default_rng()
    rig = streams.StreamRig(ctx, 1 * MiB, rng)
    try:
        for layout in streams.LAYOUTS:
            shape = {"vector": 8, "items": 4, "layout": layout, "local_size": 16}
            for op in (*streams.OPS, "add"):
                assert rig.check(op, shape) == (True, ""), (op, layout)
                fig = rig.figure(op, shape, Effort.of(True), "how")
                assert fig["status"] == "ok" and fig["value"] > 0 and fig["work_groups"] > 0
            assert rig.probe("read", {**shape, "local_size": 1 << 20}) is None  # does not tile
        # A kernel that skips each work-item's last element, and one that writes one word off.
        short = kernel_source("ceilings.cl").replace("for (uint k = 0; k < ITEMS; ++k)\n        sum",
                                                     "for (uint k = 0; k + 1 < ITEMS; ++k)\n        sum")
        assert short != kernel_source("ceilings.cl")
        shifted = kernel_source("ceilings.cl").replace("(ST)(value + (uint)e * V)", "(ST)(value + (uint)e * V + 1u)")
        assert shifted != kernel_source("ceilings.cl")
        twice = kernel_source("ceilings.cl").replace("in[AT(g, G, k)] + in2[AT(g, G, k)]", "in[AT(g, G, k)] + in[AT(g, G, k)]")
        assert twice != kernel_source("ceilings.cl")
        for source, op, what in ((short, "read", "work-item sums"), (shifted, "write", "written words"),
                                 (twice, "add", "added words")):
            rig.source = source
            ok, detail = rig.check(op, {"vector": 4, "items": 4, "layout": "grid", "local_size": 16})
            assert not ok and what in detail, detail
    finally:
        rig.release()


def test_working_set_passes_and_chases_verify_what_they_time(ctx):
    rng = np.random.default_rng()
    effort = Effort.of(True)
    reader = PassReader(ctx, 1 * MiB, rng)
    try:
        row = reader.measure(96 * KiB + 100, effort)
        assert row["status"] == "ok" and row["gbps"] > 0 and row["size"] == reader.actual(96 * KiB + 100)
        before = row["gbps"]
        reader.again(row, effort)
        assert row["rounds"] == 2 and row["gbps"] >= before
        reader.b ^= 1  # the host now expects other words than the device holds
        bad = reader.measure(64 * KiB, effort)
        assert bad["status"] == "wrong result" and "work-item sums" in bad["error"]
    finally:
        reader.release()
    chase = ChaseRig(ctx, 1 * MiB, rng, steps=512)
    try:
        row = chase.measure(256 * KiB, effort)
        assert row["status"] == "ok" and row["latency_ns"] > 0 and row["steps"] == 512
        chase.again(row, effort)
        assert row["rounds"] == 2
        chase.kernel = ctx.program(source=kernel_source("workingset.cl").replace(
            "for (uint s = 0; s < steps; ++s)", "for (uint s = 1; s < steps; ++s)")).kernel("ws_chase")
        bad = chase.measure(64 * KiB, effort)
        assert bad["status"] == "wrong result" and "chase end position" in bad["error"]
    finally:
        chase.release()


def test_sweep_sets_begin_on_a_huge_page_boundary_and_a_pass_that_ignores_it_is_caught(ctx):
    """A CPU device's sweep buffers hold their sets from the first 2 MiB boundary inside them
    (roofline/hugepages.py): sets read from a mapping's own start straddled small pages and a
    huge one, and read slower than they fit. The offset is verified like the rest: a ws_pass
    that reads from the buffer's start instead sums other words."""
    from pyclperf.roofline.hugepages import HUGE

    rng = np.random.default_rng()
    # The default passes: at a 64 KiB set over a thousand, and odd since a CI run under the
    # sanitizer's allocator placed the sets a multiple of 32 KiB in, where 1024 passes summed the
    # shifted window to the same mod 2^32 (the next test covers every such offset).
    reader = PassReader(ctx, 1 * MiB, rng)
    chase = ChaseRig(ctx, 1 * MiB, rng, steps=512)
    try:
        for rig, buffer, offset in ((reader, reader.src, reader.first * 64), (chase, chase.next, chase.first * 4)):
            if rig.huge:
                assert 0 <= offset < HUGE and (int(buffer.address) + offset) % HUGE == 0
            else:
                assert offset == 0
        assert chase.measure(48 * KiB, Effort.of(True))["status"] == "ok"
        if reader.first == 0:
            pytest.skip("no huge pages here (a GPU, or Linux gave none): the sets begin at the buffer's start")
        reader.kernel = ctx.program(source=kernel_source("ceilings.cl").replace(
            "const size_t base = first + ", "const size_t base = 0 * first + ")).kernel("ws_pass")
        bad = reader.measure(64 * KiB, Effort.of(True))
        assert bad["status"] == "wrong result" and "work-item sums" in bad["error"]
    finally:
        reader.release()
        chase.release()


@pytest.mark.parametrize("groups", [1, 2, 16])
def test_a_pass_reading_a_shifted_window_changes_every_sum_at_every_set_size(ctx, groups):
    """ws_pass's sums are taken mod 2^32, and a window shifted by d elements sums each lane to
    a 16 d slice passes more (roofline/passes.py): at the default 64 MiB per launch, 1024 passes
    of a 64 KiB set hid every shift by a multiple of 512 elements, and a 1 MiB set read once hid
    one of 2^14. With slices of 4 times an odd number and odd passes where they are many, every
    shift of fewer than 2^19 elements (32 MiB; the sets begin less than 2 MiB in) changes every
    lane's sum, at every size the sweeps measure, and the large sets read no more than before."""
    reader = PassReader(ctx, 64 * KiB, np.random.default_rng())
    reader.release()
    sizes = sorted({int(2 ** (k / 4)) for k in range(4 * 10, 4 * 31)})  # 1 KiB to 1.7 GiB
    shifts = [1 << k for k in range(19)] + [3 << 17, (1 << 19) - 1]
    hidden = []
    for size in sizes:
        slice_, passes = reader.plan(size, groups)
        assert slice_ % 4 == 0 and reader.actual(size, groups) <= max(size, 256 * groups)
        assert reader.actual(size, groups) * passes >= 0.99 * reader.min_bytes
        items = groups * reader.local
        right = reader.sums(slice_, passes, items, first=0).reshape(items, 16)
        for d in shifts:
            wrong = reader.sums(slice_, passes, items, first=d).reshape(items, 16)
            if (wrong == right).any():
                hidden.append((size, slice_, passes, d))
    assert not hidden, f"shifted windows that sum the same (size, slice, passes, shift): {hidden[:5]}"
    # a set of a power of two bytes keeps its whole number of passes
    for size, passes in ((64 * MiB, 1), (32 * MiB, 2), (16 * MiB, 4), (8 * MiB, 8)):
        assert reader.plan(size, groups)[1] == passes
    # and the sets stay within 8 elements a work-item (0.8%) of what was asked, above the smallest
    for size in sizes:
        if size >= 64 * KiB * groups:
            assert reader.actual(size, groups) >= 0.992 * size
