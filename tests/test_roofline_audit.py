"""A roof is a ceiling (pyclperf.roofline.audit, refresh, explaining): measured kernels held
against the roof that binds them, no share above 100% printed as a result, the one line that
says the profile is wrong, and the ceiling measured again from the kernel's shape."""

from __future__ import annotations

import re

import pytest

from pyclperf import cli
from pyclperf.measure.results import Results
from pyclperf.roofline import audit
from pyclperf.roofline.explaining import Explanation, memory_roof
from pyclperf.roofline.refresh import Hints

from test_roofline_explain import synthetic_profile

KiB, MiB = 1 << 10, 1 << 20


def with_curve(points):
    p = synthetic_profile()
    p.data["curves"]["read"] = [{"size": s, "gbps": g, "status": "ok"} for s, g in points]
    return p


def test_past_the_last_cache_it_binds_while_the_read_curve_runs_above_dram():
    # L2 ends at 4 MiB; the curve still reads 400 GB/s at 8 MiB (twice its rate at 256 MiB, from
    # DRAM): a cache that keeps part of a larger set. At 64 MiB it runs at DRAM's rate.
    p = with_curve([(4 * MiB, 500.0), (8 * MiB, 400.0), (64 * MiB, 205.0), (256 * MiB, 200.0)])
    roof, why = memory_roof(p, 6 * MiB, True, False)
    assert roof.name == "L2" and "still serves part of it" in why and "400.0 GB/s at 8 MiB, 2.00x" in why
    assert memory_roof(p, 6 * MiB, True, True)[0].name == "L2 copy"  # it writes too: the higher figure
    assert memory_roof(p, 32 * MiB, True, True)[0].name == "DRAM copy"
    assert memory_roof(p, 1 << 30, True, False)[0].name == "DRAM read"  # past the curve's end


def _explanation(fraction: float) -> Explanation:
    p = synthetic_profile()
    roof = p.memory_roofs()[-1]
    return Explanation("k", "dev", {}, True, True, 1e-3, None, 1.0, "", 1, fraction * roof.value,
                       None, None, None, roof, None, "memory", roof.value, "GB/s", fraction, "",
                       [], [], [])


@pytest.mark.parametrize("fraction, head", [(0.5, "50.0% of the"), (1.0, "100.0% of the"),
                                            (1.03, "at the"), (1.9, "above the")])
def test_no_share_above_100_percent_is_printed_as_a_result(fraction, head):
    found = _explanation(fraction)
    assert found.headline().startswith(head)
    text = found.text()
    shares = [float(s) for s in re.findall(r"([0-9.]+)% of the", text)]
    assert all(s <= 100 for s in shares)
    wrong = [line for line in text.splitlines() if "the profile is wrong" in line]
    assert len(wrong) == (1 if fraction > 1.05 else 0)
    if wrong:
        assert "1.90x the measured DRAM write roof" in wrong[0] and "--refresh" in wrong[0]


def _results(experiment, rows, x=None):
    return Results({"experiment": experiment, "x": x}, [{"status": "ok", **r} for r in rows])


def test_rows_are_held_against_the_roof_that_binds_them():
    p = synthetic_profile()
    res = _results("vector", [
        {"variant": "float4 x1", "gbps": 900.0, "bytes": 32 * KiB, "working_set_bytes": 32 * KiB,
         "local_size": 256},
        {"variant": "float16 x1", "gbps": 1200.0, "bytes": 32 * KiB, "working_set_bytes": 32 * KiB},
        {"variant": "float x1", "gbps": 190.0, "bytes": 64 * MiB, "working_set_bytes": 64 * MiB},
        {"variant": "float x1", "gbps": 1.0, "status": "wrong result"}])
    placed = audit.placements(res, p)
    assert len(placed) == 3  # the row that did not verify is left out
    assert [q.roof.name for q in placed] == ["L1", "L1", "DRAM read"]  # no direction: the highest DRAM
    best = audit.best_point(res, p)
    assert best.rate == 1200.0 and best.beaten and best.ratio == pytest.approx(1.2)
    assert best.hints == Hints(None, 16, 32 * KiB)
    assert "ABOVE the L1 roof" in best.line() and "the profile is wrong: 1.20x" in best.line()
    assert "90.0% of the L1 roof" in placed[0].line() and placed[0].hints.local_size == 256
    assert audit.highest(res, p).rate == 1200.0


def test_compute_rows_local_rows_and_host_transfers():
    p = synthetic_profile()
    mm = audit.best_point(_results("matmul", [
        {"gflops": 500.0, "flops": 1e9, "bytes": 1e6, "working_set_bytes": 1e6, "gbps": 0.5}]), p)
    assert mm.roof.name == "FP32" and mm.ratio == pytest.approx(0.05) and "compute-bound" in mm.why
    lean = audit.best_point(_results("aat", [
        {"gflops": 50.0, "flops": 1e6, "bytes": 64 * MiB, "working_set_bytes": 64 * MiB}]), p)
    assert lean.roof.name == "DRAM read" and "memory-bound" in lean.why  # 200 GB/s x 0.015 FLOP/B
    banks = audit.best_point(_results("banks", [{"gbps": 1000.0, "bytes": 4096}]), p)
    assert banks.roof.name == "local memory" and banks.ratio == pytest.approx(0.5)
    host = audit.best_point(_results("transfer", [{"mode": "h2d pinned direct", "gbps": 20.0}]), p)
    assert host.roof is None and "no roof applies" in host.line()
    assert audit.best_point(_results("peak", []), p) is None


def test_hints_move_the_search_start_to_the_kernels_shape():
    start, axes = Hints(128, 2, None).apply({"vector": 16, "local_size": 64, "items": 4},
                                           {"vector": (8, 16), "items": (4, 16)})
    assert start == {"vector": 2, "local_size": 128, "items": 4}
    assert axes == {"vector": (8, 16, 2), "items": (4, 16), "local_size": (128,)}


def test_profile_check_on_results_files(roofline_env, tmp_path, capsys):
    assert cli.main(["run", "stride", "--size", "65536", "--timing", "quick", "--out", str(tmp_path),
                     "--no-plot"]) in (0, 1)
    out = tmp_path / "stride.jsonl"
    capsys.readouterr()
    assert cli.main(["profile", "--quick", "--check", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "results against the roofs" in printed
    line = next(line for line in printed.splitlines() if line.strip().startswith("stride"))
    assert re.search(r"(\d+\.\d% of|at|ABOVE) the .+ roof", line), line


def test_a_beaten_cache_roof_is_measured_again_from_the_kernels_shape(ctx):
    from pyclperf.roofline.record import Effort
    from pyclperf.roofline.refresh import remeasure

    from pyclperf.roofline.profiling import Roof

    p = synthetic_profile()
    p.caches[0]["read"]["value"] = 0.001  # an L1 figure any kernel beats
    l1 = Roof("L1", 0.001, "GB/s", "cache", 64 << 10, "synthetic", None)
    said = remeasure(ctx, p, l1, Hints(16, 4, 48 * KiB), reached=5.0, effort=Effort.of(True))
    fig = p.caches[0]["read"]
    assert said.startswith("L1: measured again from the kernel's shape") and "(was 0.0)" in said
    assert fig["value"] > 0.001 and fig["status"] == "ok" and "stream_" in fig["how"]
    assert fig["remeasured"] == {"reached": 5.0, "before": 0.001,
                                 "hints": {"local_size": 16, "vector": 4, "working_set": 48 * KiB}}
    assert "vector=4" in " ".join(fig["shapes_tried"]) and "local_size=16" in " ".join(fig["shapes_tried"])
    # A roof no kernel beat stays as it is, and the line says the kernel's figure needs a look.
    p.caches[0]["read"]["value"] = 1e9
    again = remeasure(ctx, p, l1, Hints(), reached=5.0, effort=Effort.of(True))
    assert "no higher than the" in again and p.caches[0]["read"]["value"] == 1e9


def test_explain_with_refresh_measures_a_beaten_roof_again_and_places_the_kernel_on_it(ctx):
    import numpy as np

    import pyclperf

    from test_roofline_explain import VADD

    p = synthetic_profile()
    for level in p.caches:  # roofs any kernel beats: the kernel's 768 KiB sits in "L2"
        level["read"]["value"] = level["copy"]["value"] = 0.001
    for name in ("dram_read", "dram_copy", "dram_write"):  # below the levels, or they bound nothing
        p.ceilings[name]["value"] = 0.0001
    n = 1 << 16
    a, b = np.random.rand(n).astype(np.float32), np.random.rand(n).astype(np.float32)
    args = [np.full_like(a, np.nan), a, b, np.int32(n)]
    res = pyclperf.tune(VADD, "vadd", n, args, params={"block_size_x": [64]}, ctx=ctx,
                        verify=pyclperf.Verify(answer=[a + b, None, None, None]))
    plain = pyclperf.explain(res, p, source=VADD, args=args)
    assert plain.beaten and plain.refreshed is None and plain.memory_roof.name.startswith("L2")
    found = pyclperf.explain(res, p, source=VADD, args=args, ctx=ctx, refresh=True)
    assert found.refreshed and "measured again from the kernel's shape" in found.refreshed
    assert found.memory_roof.value > 0.001 and f"refresh: {found.refreshed}" in found.text()
    assert found.fraction < plain.fraction
