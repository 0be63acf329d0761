"""Cache levels named from the knees (pyclperf.roofline.levels), on synthetic curves shaped like
an H200's (an L2 of two partitions: a step at 32 MiB inside a 52 MiB level) and a CPU's (three
levels, each 16x or more the last), through to the profile's level records and the H200
script's last-level row."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from pyclperf.roofline import knees as K
from pyclperf.roofline import levels as L
from pyclperf.roofline import store
from pyclperf.roofline.sweep import CacheSweep

KiB, MiB = 1 << 10, 1 << 20
POW2 = [4 * KiB << i for i in range(17)]  # 4 KiB .. 256 MiB
# The profile measures again between the points around each knee, 4 to the octave: here
# between 64 and 512 KiB (an H200's latency steps) and 16 and 128 MiB (where its L2 ends).
REFINED = sorted(set(POW2) | {int(2 ** (e + i / 4)) // 64 * 64 for e in (16, 24)
                              for i in range(1, 12) if i % 4})


def sharp(sizes, edges, values):
    return [next((v for edge, v in zip(edges, values) if s <= edge), values[-1]) for s in sizes]


def h200(sizes, rng=None):
    """Read GB/s and chase ns like the H200's profile: reads 12.1 TB/s to 32.4 MiB, 6.6 TB/s to
    52.4 MiB (the far partition), 4.4 TB/s past it; latency steps at 70.7 KiB, 254 KiB and
    32.4 MiB (the far partition's loads take about DRAM's time)."""
    read = sharp(sizes, [32.4 * MiB, 52.4 * MiB], [12100.0, 6600.0, 4400.0])
    chase = sharp(sizes, [70.7 * KiB, 254 * KiB, 32.4 * MiB], [38.0, 90.0, 163.0, 279.0])
    if rng is not None:
        read = [v * rng.uniform(0.97, 1.03) for v in read]
        chase = [v * rng.uniform(0.97, 1.03) for v in chase]
    return read, chase


def found(sizes, read, chase, **kw):
    return L.levels(K.knees(sizes, read), K.knees(sizes, chase, lower_is_better=True), **kw)


@pytest.mark.parametrize("seed", [None, 1, 2, 3])
def test_an_h200_shaped_l2_is_one_level_of_52_mib_with_a_step_inside(seed):
    rng = None if seed is None else np.random.default_rng(seed)
    levels = found(REFINED, *h200(REFINED, rng))
    last = levels[-1]
    assert last.last and last.name == "LLC" and last.label == L.LAST_LABEL
    assert 48 * MiB <= last.end.size <= 57 * MiB, last.end.size / MiB  # ~52 MiB, not ~32
    (step,) = last.steps
    assert step.knee.below <= 32.4 * MiB < step.knee.above and 30 * MiB <= step.size <= 39 * MiB
    assert step.found_from == ["bandwidth", "latency"]
    assert last.first.bandwidth.before.value == pytest.approx(12100, rel=0.05)
    # The two small latency steps are 3.6x apart: two levels, both of a compute unit's size.
    assert [lv.label for lv in levels[:-1]] == [L.SMALL_LABEL, L.SMALL_LABEL]
    assert [lv.name for lv in levels] == ["L1", "L2", "LLC"]
    assert not any(lv.steps for lv in levels[:-1])


def test_knees_named_by_order_would_have_called_the_partition_step_a_level():
    # What the profile did before: every matched knee a level, the last-but-one at 32 MiB
    # the one both curves show. Levels now: the 32 MiB knee is a step, not a level.
    read, chase = h200(REFINED)
    pairs = K.match(K.knees(REFINED, read), K.knees(REFINED, chase, lower_is_better=True))
    assert len(pairs) == 4
    assert len(found(REFINED, read, chase)) == 3


def test_a_cpu_shaped_hierarchy_keeps_its_three_levels():
    read = sharp(POW2, [48 * KiB, 2 * MiB, 32 * MiB], [200.0, 100.0, 50.0, 15.0])
    chase = sharp(POW2, [48 * KiB, 2 * MiB, 32 * MiB], [1.2, 4.0, 15.0, 90.0])
    levels = found(POW2, read, chase)
    assert [lv.name for lv in levels] == ["L1", "L2", "LLC"]
    assert [lv.label for lv in levels] == [L.SMALL_LABEL, L.MIDDLE_LABEL, L.LAST_LABEL]
    for level, edge in zip(levels, [48 * KiB, 2 * MiB, 32 * MiB]):
        assert level.end.knee.below <= edge < level.end.knee.above
        assert level.end.found_from == ["bandwidth", "latency"] and not level.steps


def test_a_close_step_that_already_reaches_dram_ends_the_level():
    # Reads after the first knee at DRAM's rate (given): that knee is the capacity; the one
    # after it (a TLB's, say) is past the last level, not a level of its own's end.
    read = sharp(REFINED, [32 * MiB, 52 * MiB], [12000.0, 4500.0, 3300.0])
    levels = L.levels(K.knees(REFINED, read), [], dram_read=4400.0)
    assert 30 <= levels[0].end.size / MiB <= 39 and not levels[0].steps and not levels[0].last
    without = L.levels(K.knees(REFINED, read), [])  # DRAM: the plateau after the last knee
    assert round(without[-1].end.size / MiB) >= 48 and len(without) == 1


def test_no_knee_no_level():
    assert L.levels([], []) == []
    with pytest.raises(ValueError, match="substep"):
        L.levels([], [], substep=0.5)


def _sweep(sizes, read, chase):
    """A CacheSweep over given curves, without a device."""
    sweep = object.__new__(CacheSweep)
    row = {"status": "ok", "spread_pct": 1.0, "n": 10}
    sweep.read = {int(s): {**row, "gbps": v} for s, v in zip(sizes, read)}
    sweep.chase = {int(s): {**row, "latency_ns": v} for s, v in zip(sizes, chase)}
    return sweep


def test_the_profile_records_the_last_level_its_step_and_the_reported_size():
    sizes = [int(s) for s in REFINED]
    recorded = _sweep(sizes, *h200(sizes)).levels(reported_bytes=60 * MiB)
    last = recorded[-1]
    assert last["last"] and last["name"] == "LLC" and last["label"] == "last-level cache"
    assert 48 * MiB <= last["size_bytes"] <= 57 * MiB
    assert last["reported_bytes"] == 60 * MiB  # beside the level nearest it in size
    assert last["read"]["value"] == pytest.approx(12100)
    (step,) = last["steps"]
    assert step["label"] == "step inside the last-level cache"
    assert step["read_after"]["value"] == pytest.approx(6600)
    assert not any(r.get("reported_bytes") for r in recorded[:-1])
    level_schema = store.schema()["$defs"]["level"]
    for r in recorded:  # all but the copy figure, which levelcopy.py measures over the levels found
        assert set(level_schema["required"]) - {"copy"} <= set(r) and "copy" not in r
    jsonschema = pytest.importorskip("jsonschema")
    full = store.schema()
    for r in recorded:
        copy = {"value": None, "unit": "GB/s", "how": "levelcopy.py", "status": "skipped", "reason": "-"}
        jsonschema.validate({**r, "copy": copy}, {"$defs": full["$defs"], **level_schema})


def _script():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "profile_h200.py"
    spec = importlib.util.spec_from_file_location("profile_h200_levels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_h200_script_holds_the_last_level_against_l2cachesize():
    sizes = [int(s) for s in REFINED]
    caches = _sweep(sizes, *h200(sizes)).levels()
    script = _script()
    level = script.last_level({"caches": caches})
    assert level is caches[-1]
    fig = {"value": 1.0, "status": "ok"}
    data = {"caches": caches, "ceilings": {"dram_read": fig, "fp32": fig}}
    rows = script.rows_of({"data": data, "seconds": 1.0}, {}, {"l2_bytes": 60 * MiB},
                          {"source": "-"})
    row = next(r for r in rows if r["figure"].startswith("last-level cache size"))
    assert "step inside the last-level cache at 3" in row["figure"]
    assert 0.8 <= row["ratio"] <= 0.95 and row["met"]  # ~52 / 60 MiB, within 25%
    assert math.isclose(row["reference"], 60 * MiB)
