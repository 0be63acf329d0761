"""tune() rows say where the data lived (working set against the cache, compulsory traffic, cold
or warm) and, where NVML knows the GPU, under which clocks and power they were taken."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from pyclperf import tune
from pyclperf.measure import conditions, residency
from test_conditions import fake_nvml
from pyclperf.tuner.options import from_flat

FAST = dict(min_time=0.0, min_repeats=3, max_repeats=3, warmup=1, progress=False)
COPY = """__kernel void copy(__global float* dst, __global const float* src) {
    const int i = get_global_id(0); dst[i] = src[i]; }"""
NSTREAM = """__kernel void nstream(__global float* a, __global const float* b,
                                  __global const float* c, const float s) {
    const int i = get_global_id(0); a[i] += b[i] + s * c[i]; }"""


def test_a_rows_working_set_and_compulsory_traffic(ctx, rng):
    x = rng.standard_normal(4096).astype(np.float32)
    res = tune(
        COPY,
        "copy",
        x.size,
        [np.empty_like(x), x],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, answer=[x, None], **FAST)),
    )
    row = res.rows[0]
    assert row["working_set_bytes"] == 2 * x.nbytes and row["compulsory_bytes"] == 2 * x.nbytes
    assert row["compulsory_gbps"] == pytest.approx(2 * x.nbytes / (row["median_ns"] * 1e-9) / 1e9)
    assert row["cache_bytes"] == ctx.info.global_mem_cache_bytes
    assert row["cache_resident"] is True and row["cold"] is False   # 32 KiB: any cache holds it
    assert "timed warm" in row["residency"] and "cold=True" in row["residency"]


def test_an_inout_argument_is_traffic_twice(ctx, rng):
    a, b, c = (rng.standard_normal(1024).astype(np.float32) for _ in range(3))
    want = a + b + np.float32(2) * c
    res = tune(
        NSTREAM,
        "nstream",
        a.size,
        [a, b, c, np.float32(2)],
        {"block_size_x": [64]},
        **from_flat(
            dict(
                ctx=ctx, answer=[want, None, None, None], inout=["a"], rtol=1e-5, atol=1e-5, **FAST
            )
        ),
    )
    row = res.rows[0]
    assert row["status"] == "ok", row["error"]
    assert row["compulsory_bytes"] == 4 * a.nbytes     # a read and written, b and c read


def test_cold_flushes_before_every_timed_launch_outside_the_events(ctx, rng, monkeypatch):
    flushes = []
    real = residency.cache_flush

    def counting(c):
        inner = real(c)

        def flush():
            flushes.append(1)
            inner()
        return flush

    monkeypatch.setattr("pyclperf.tuner.measure.cache_flush", counting)
    x = rng.standard_normal(4096).astype(np.float32)
    res = tune(
        COPY,
        "copy",
        x.size,
        [np.empty_like(x), x],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, answer=[x, None], cold=True, isolate=False, **FAST)),
    )  # counted in this process
    row = res.rows[0]
    assert row["status"] == "ok" and row["cold"] is True and row["cache_resident"] is False
    assert "residency" not in row
    # one flush per warm-up and per timed launch, none inside a launch's own event
    assert len(flushes) == FAST["warmup"] + len(row["times_ns"])
    assert residency.flush_bytes(ctx.info) >= 4 * min(ctx.info.global_mem_cache_bytes,
                                                      residency.FLUSH_MIN_BYTES // 4)


def test_the_flush_reads_every_word_of_its_buffer(ctx, rng):
    """The flush kernel folds every word it reads into its output: words planted at the ends and
    at random places change that fold exactly as they change the host's, so a stretch the
    kernel skipped (a work-group's bound off by one, a short last stretch) shows."""
    buffer = residency._flusher(ctx)[0]
    words = buffer.nbytes // 4
    places = np.unique(np.concatenate([[0, 1, words - 2, words - 1],
                                       rng.integers(0, words, 200)]))
    for place in places:
        buffer.write(rng.integers(1, 2**32, 1, dtype=np.uint32), offset=4 * int(place))
    got, want = residency.read_through(ctx)
    assert want != 0 and got == want
    # One word more changes both, and only a read of that word can tell the kernel so.
    buffer.write(np.array([0xDEADBEEF ^ want], np.uint32), offset=4 * (words - 1))
    got, changed = residency.read_through(ctx)
    assert changed != want and got == changed


def test_nvml_conditions_reach_the_row(ctx, rng, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(sm=1395, reasons=4))
    monkeypatch.setattr(conditions, "_initialised", None)
    monkeypatch.setattr(conditions, "ENERGY_MIN_S", 0.0)  # these short points read the energy too
    monkeypatch.setattr(residency, "_conditions", {})
    # The stand-in describes an NVIDIA H200: make this device read as one to it.
    monkeypatch.setattr(residency, "conditions_of",
                        lambda c: conditions.Conditions.for_device(
                            type("Info", (), {"name": "NVIDIA H200", "vendor": "NVIDIA",
                                              "platform_name": "NVIDIA CUDA"})()))
    monkeypatch.setattr("pyclperf.tuner.measure.conditions_of", residency.conditions_of)
    x = rng.standard_normal(1024).astype(np.float32)
    res = tune(
        COPY,
        "copy",
        x.size,
        [np.empty_like(x), x],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, answer=[x, None], isolate=False, **FAST)),
    )
    row = res.rows[0]
    assert row["sm_clock_mhz"] == 1395 and row["power_w"] == 412.0 and row["temperature_c"] == 51
    assert "throttled (software power cap)" in row["conditions"]
    assert "SM clock 1395 of 1980 MHz" in row["conditions"]
    assert row["energy_j"] > 0 and row["energy_per_launch_j"] > 0


def test_experiment_rows_carry_the_conditions_too(ctx, monkeypatch):
    import pyclperf

    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(others=(424242,)))
    monkeypatch.setattr(conditions, "_initialised", None)
    monkeypatch.setattr(conditions, "ENERGY_MIN_S", 0.0)  # these short points read the energy too
    h200 = type("Info", (), {"name": "NVIDIA H200", "vendor": "NVIDIA",
                             "platform_name": "NVIDIA CUDA"})()
    monkeypatch.setattr("pyclperf.experiments.base.conditions_of",
                        lambda c: conditions.Conditions.for_device(h200))
    res = pyclperf.run("offset", ctx, values=[0, 1], warmup=1, repeats=3)
    for row in res.rows:
        assert row["sm_clock_mhz"] == 1980 and row["temperature_c"] == 51
        assert "1 other process(es) on the GPU (pid 424242)" in row["conditions"]
        assert row["j_per_gb"] > 0 and row["gbps_per_w"] > 0
