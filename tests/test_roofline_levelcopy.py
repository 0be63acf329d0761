"""Each cache level's copy ceiling (pyclperf.roofline.levelcopy): measured in every profile,
verified, no lower than a plain copy looped inside one launch, and the roof a kernel that reads
and writes through the level is held against."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pyclperf import kernel_source
from pyclperf.experiments.workingset import WorkingSet
from pyclperf.measure.results import Results
from pyclperf.roofline import audit, levelcopy, store
from pyclperf.roofline.profiling import Profile
from pyclperf.roofline.record import Effort
from pyclperf.roofline.refresh import BEATEN, Hints, remeasure
from pyclperf.roofline.roof import Roof

from test_roofline_explain import synthetic_profile

KiB, MiB = 1 << 10, 1 << 20


def _profile_data(roofline_profiles) -> dict:
    return json.loads(next(roofline_profiles[0].glob("*.json")).read_text())


def test_every_level_of_the_profile_has_a_copy_ceiling(roofline_profiles):
    data = _profile_data(roofline_profiles)
    assert data["caches"], data["curves"].get("notes")
    measured = 0
    for level in data["caches"]:
        copy = level.get("copy")
        assert copy is not None, level["name"]
        if copy["status"] == "skipped":
            # A level found so close above the one before that no set fits between twice that
            # one and half its own (the H200's quick profile: a read step at 32 MiB inside a
            # 52 MiB last level) has no copy figure, and says why.
            assert copy["value"] is None and "no set lies above" in copy["reason"], copy
            continue
        measured += 1
        assert copy["status"] == "ok" and copy["value"] > 0, (level["name"], copy)
        assert "copy_passes" in copy["how"] and copy["n"] >= 1
        assert set(copy["shape"]) == {"vector", "local_size", "groups_per_cu", "layout"}
        assert len(copy["shapes_tried"]) >= 2 and copy["sets"] and copy["passes"] >= 1
        assert 0 < copy["bytes"] <= level["size_bytes"]  # a set the level holds
    assert measured, "no level has a copy ceiling"
    # A kernel that reads and writes within a level is held against the higher of its figures.
    profile = Profile(data)
    level = [c for c in data["caches"] if c["copy"]["status"] == "ok"][-1]  # skipped: no set
    from pyclperf.roofline.explaining import memory_roof

    roof, _ = memory_roof(profile, level["copy"]["bytes"], True, True)
    candidates = [r.value for r in profile.memory_roofs() if r.size_bytes == level["size_bytes"]]
    if candidates:
        assert roof.size_bytes == level["size_bytes"] and roof.value == max(candidates)


def test_a_profile_of_before_the_copy_figure_is_not_trusted(roofline_profiles):
    data = _profile_data(roofline_profiles)
    old = dict(data, schema="pyclperf.profile/1")
    with pytest.raises(store.ProfileError, match="profile/1"):
        store.validate(old)
    if data["caches"]:
        lacking = dict(data, caches=[{k: v for k, v in c.items() if k != "copy"} for c in data["caches"]])
        with pytest.raises(store.ProfileError, match="copy"):
            store.validate(lacking)
        assert "lacks 'copy'" in store.structural_problem(lacking)


def _ws_copy_best(ctx, sizes) -> float:
    """The workingset experiment's copy (ws_copy: a copy looped inside one launch, the same walk
    every trip), each size verified; its fastest launch's GB/s, the best size's."""
    exp = WorkingSet(ctx, sizes=sizes, kinds=["copy"])
    best = 0.0
    for point in exp.points():
        row = exp.measure(point, warmup=1, repeats=10, method="events", verify=True)
        assert row["status"] == "ok", row
        best = max(best, float(row.get("gbps_best") or row["gbps"]))
    return best


def test_the_copy_ceiling_is_no_lower_than_a_plain_looping_copy(ctx):
    """At tiny sets (a 64 KiB level: sets of 16 and 32 KiB), the level's copy ceiling against
    the workingset experiment's own looping copy over the same sets, measured here, before and
    after it: the ceiling must be there, and no plain copy may run BEATEN above it."""
    if ctx.info.is_gpu:
        pytest.skip("tiny sets are a CPU device's case: on a GPU the workingset copy re-reads one "
                    "word per work-item at 16-32 KiB and the copy shapes give each work-item one "
                    "element; the GPU's copy roof is checked against the workingset experiment by "
                    "benchmarks/profile_h200.py")
    levels = [{"name": "L1", "size_bytes": 64 * KiB, "read": None}]
    assert levelcopy.sets(levels, 0, 2) == [16 * KiB, 32 * KiB]
    before = _ws_copy_best(ctx, [16 * KiB, 32 * KiB])
    fig = levelcopy.level_copy(ctx, levels, 0, Effort.of(True), np.random.default_rng())
    after = _ws_copy_best(ctx, [16 * KiB, 32 * KiB])
    assert fig["status"] == "ok" and fig["value"] > 0, fig
    assert fig["shape"] and len(fig["shapes_tried"]) >= 2
    plain = max(before, after)
    assert plain <= BEATEN * fig["value"], (
        f"a plain looping copy ran at {plain:,.1f} GB/s, {plain / fig['value']:.2f}x the copy "
        f"ceiling of {fig['value']:,.1f} GB/s ({fig['shape']})")


def test_a_copy_that_misses_words_is_no_figure(ctx):
    """Each work-item's last element never copied: the check finds it, and the figure fails."""
    if ctx.info.is_gpu:
        pytest.skip("tiny sets are a CPU device's case: on a GPU the workingset copy re-reads one "
                    "word per work-item at 16-32 KiB and the copy shapes give each work-item one "
                    "element; the GPU's copy roof is checked against the workingset experiment by "
                    "benchmarks/profile_h200.py")
    rig = levelcopy.CopyRig(ctx, 64 * KiB, Effort.of(True), np.random.default_rng())
    shape = dict(levelcopy.START[bool(ctx.info.is_gpu)])
    try:
        assert rig.check(shape, 32 * KiB) == (True, "")
        source = kernel_source("ceilings.cl")
        short = (source.replace("e < stop; e += step)", "e + step < stop; e += step)")
                 .replace("e = e >= stop ? first : e;", "e = e + step >= stop ? first : e;"))
        assert short.count("e + step") == 2
        rig.source = short
        fig = rig.figure(shape, 32 * KiB)
        assert fig["status"] == "failed" and fig["value"] is None and "copied words" in fig["reason"], fig
    finally:
        rig.release()


def test_sets_lie_within_the_level_and_its_read_plateau():
    read = {"value": 1.0, "unit": "GB/s", "how": "x", "status": "ok", "n": 1, "spread_pct": 0.0}
    gpu = [{"name": "L1", "size_bytes": 128 * KiB, "read": None},
           {"name": "LLC", "size_bytes": 52 * MiB, "read": {**read, "sizes": [64 * KiB, 32 * MiB]}}]
    # Above twice L1 (256 KiB), at most half the level (26 MiB), within the plateau: the largest.
    assert levelcopy.sets(gpu, 1, 4) == [2 * MiB, 4 * MiB, 8 * MiB, 16 * MiB]
    # A CPU device's plateau is one compute unit's: times the instances its units span.
    cpu = [{"name": "L2", "size_bytes": 4 * MiB, "unit_bytes": 2 * MiB, "os": {"spanned": 2},
            "read": read, "read_one_unit": {**read, "sizes": [128 * KiB, 512 * KiB]}}]
    assert levelcopy.sets(cpu, 0, 3) == [256 * KiB, 512 * KiB, 1 * MiB]
    assert levelcopy.sets([{"name": "L1", "size_bytes": 16 * KiB}], 0, 2) == []  # nothing fits
    # A CPU device's groups must each copy more than the level below holds (floor, for the
    # device): a level found at 380 KiB per unit under a 3.5 MiB L2 on two units leaves the L2
    # one set between its floor (1.5 MiB) and half its size, and a higher floor none.
    below = {"name": "level 2", "size_bytes": 380 * KiB, "unit_bytes": 380 * KiB}
    l2 = {"name": "L2", "size_bytes": 3584 * KiB, "unit_bytes": 1792 * KiB, "os": {"spanned": 2}}
    assert levelcopy.sets([below, l2], 1, 2) == [1 * MiB]
    assert levelcopy.sets([below, l2], 1, 2, floor=2 * 2 * 380 * KiB) == [int((1520 * KiB * 1792 * KiB) ** 0.5) >> 7 << 7]
    assert levelcopy.sets([below, l2], 1, 2, floor=2 * MiB) == []


def _results(rows):
    return Results({"experiment": "workingset", "x": "size"}, [{"status": "ok", **r} for r in rows])


def test_workingset_copies_are_held_against_the_copy_roof():
    p = synthetic_profile()  # L2 of 4 MiB: read 500 GB/s, copy 600
    rows = [{"kind": "copy", "size": 1 * MiB, "working_set_bytes": 1 * MiB, "gbps": 580.0},
            {"kind": "read", "size": 1 * MiB, "working_set_bytes": 1 * MiB, "gbps": 450.0}]
    copy, read = audit.placements(_results(rows), p)
    assert copy.roof.name == "L2 copy" and copy.ratio == pytest.approx(580 / 600) and not copy.beaten
    assert read.roof.name == "L2" and read.ratio == pytest.approx(450 / 500)
    fast = audit.best_point(_results([{**rows[0], "gbps": 700.0}]), p)
    assert fast.beaten and "ABOVE the L2 copy roof" in fast.line()
    # The profile's summary says each level's copy figure.
    assert "copy 600.0 GB/s" in p.summary()


def test_a_beaten_copy_roof_is_measured_again_with_the_looping_copy(ctx):
    p = synthetic_profile()
    p.caches[1]["copy"]["value"] = 0.001  # an L2 copy figure any kernel beats
    roof = Roof("L2 copy", 0.001, "GB/s", "cache", 4 * MiB, "synthetic", None, "copy")
    said = remeasure(ctx, p, roof, Hints(None, None, 512 * KiB), reached=5.0, effort=Effort.of(True))
    fig = p.caches[1]["copy"]
    assert said.startswith("L2 copy: measured again") and fig["value"] > 0.001, said
    assert "copy_passes" in fig["how"] and str(512 * KiB) in fig["sets"]
    assert fig["remeasured"]["before"] == 0.001 and p.caches[1]["read"]["value"] == 500.0
