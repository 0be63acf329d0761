"""The models drawn beside the measurements (theory/models.py): the sector model and the roofline."""

import pytest

from pyclperf.theory import models


def test_offset_zero_moves_only_useful_bytes():
    assert models.offset_efficiency(0) == 1.0
    # Misaligned by one float: 128 useful bytes over 5 sectors of 32 bytes.
    assert models.offset_efficiency(1) == pytest.approx(128 / 160)
    assert models.offset_efficiency(8) == 1.0  # 32 bytes in: aligned to a sector again


def test_stride_needs_a_sector_per_item_from_eight_on():
    assert models.stride_efficiency(1) == 1.0
    assert models.stride_efficiency(2) == pytest.approx(0.5)
    assert models.stride_efficiency(8) == pytest.approx(1 / 8)
    assert models.stride_efficiency(32) == pytest.approx(1 / 8)
    # 128-byte lines (the Guide's GPUs): stride 2 already halves, stride 32 is 1/32.
    assert models.stride_efficiency(32, sector=models.LINE_BYTES) == pytest.approx(1 / 32)


def test_sector_model_scales_the_baseline():
    assert models.sector_model("stride", [1, 2, 4], 100.0) == pytest.approx([100.0, 50.0, 25.0])
    assert models.sector_model("offset", [0, 1], 80.0) == pytest.approx([80.0, 64.0])


@pytest.mark.parametrize("bad", [lambda: models.stride_efficiency(0), lambda: models.offset_efficiency(-1),
                                 lambda: models.peak_gflops(0, 1, 1)])
def test_models_refuse_nonsense(bad):
    with pytest.raises(ValueError, match="must be"):
        bad()


def test_roofline_ceilings_and_ridge():
    # An H200-like device: 1980 MHz x 132 SMs x 256 FLOP/clock = 66.9 TFLOP/s; 4800 GB/s.
    meta = {"peak_gbps": 4800.0, "device": {"max_clock_mhz": 1980, "compute_units": 132, "type": "GPU"}}
    roof = models.roofline_for(meta)
    assert roof is not None and roof.peak_gflops == pytest.approx(1980e6 * 132 * 256 / 1e9)
    assert roof.ridge == pytest.approx(roof.peak_gflops / 4800)
    assert roof.attainable(1.0) == pytest.approx(4800.0) and roof.bound(1.0) == "memory-bound"
    assert roof.attainable(1e4) == pytest.approx(roof.peak_gflops) and roof.bound(1e4) == "compute-bound"
    assert "FLOP/clock/CU (assumed" in roof.assumption
    assert models.roofline_for({"device": meta["device"]}) is None  # no DRAM figure: no roofline


def test_copy_conclusion_names_the_slowest_point_and_the_model():
    from pyclperf.measure.results import Results

    rows = [{"stride": s, "status": "ok", "gbps": g} for s, g in ((1, 100.0), (2, 60.0), (8, 20.0))]
    text = models.copy_conclusion(Results({"experiment": "stride", "x": "stride"}, rows), 1)
    assert text == ("stride: slowest at stride 8: 20.0 GB/s, 0.20x the stride-1 figure (100.0 GB/s); "
                    "the 32-byte-sector model predicts 0.12x")
    assert "no baseline" in models.copy_conclusion(Results({"experiment": "stride", "x": "stride"}, rows[1:]), 1)
