"""The aos experiment: every layout verifies against NumPy, the padding of the aligned struct
is never written, a kernel reading the wrong field is caught, the bytes follow the formula,
bad particle counts are refused and the CLI writes a plot."""

from __future__ import annotations

import numpy as np
import pytest

import pyclperf
from pyclperf import cli
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments.aos import LAYOUTS, StructLayout, step_reference

QUICK = {"warmup": 1, "repeats": 2}
N = 4096


@pytest.fixture(scope="module")
def results(ctx):
    return pyclperf.run("aos", ctx, size=N, local_size=64, peak_gbps=1000.0, **QUICK)


def test_every_layout_verifies(results):
    df = results.df
    assert list(df["layout"]) == list(LAYOUTS) and results.all_verified, df["error"].tolist()
    assert (df["bytes"] == 2 * 24 * N).all()  # six floats in and out per particle
    assert np.allclose(df["gbps"], df["bytes"] / df["median_ns"])
    assert np.allclose(df["fraction_of_peak"], df["gbps"] / 1000.0)
    assert df.set_index("layout").loc["AoS float4+float2 (16-byte aligned)", "stored_bytes"] == 32
    assert results.meta["best_layout"] in results.meta["conclusion"]
    assert "Tradeoffs" in results.meta["conclusion"]


def test_layouts_round_trip_on_the_host(rng):
    p = rng.standard_normal((64, 6)).astype(np.float32)
    for v in LAYOUTS.values():
        packed = v.pack(p).ravel()
        assert packed.size * 4 == 64 * v.stored_bytes
        back, _ = v.unpack(packed, 64)
        assert np.array_equal(back, p), v.name


def test_reference_moves_and_damps():
    p = np.array([[0, 0, 0, 1, 2, 3]], np.float32)
    q = step_reference(p)
    assert q[0, 3] == pytest.approx(np.float32(0.999)) and q[0, 0] == pytest.approx(0.999e-3)
    assert q[0, 5] == pytest.approx(3 * 0.999 - 9.81e-3, rel=1e-6)


WRONG_SOA = """
__kernel void update_soa(__global float* restrict dst, const __global float* restrict src,
                         const int n, const float dt, const float damp, const float g) {
    const int i = get_global_id(0);
    if (i >= n) return;
    for (int f = 0; f < 6; ++f)       /* copies instead of updating: positions never move */
        dst[f * n + i] = src[f * n + i] * (f >= 3 ? damp : 1.0f);
}
"""


def test_a_wrong_update_fails(ctx):
    exp = StructLayout(ctx, particles=N, local_size=64, layouts=["SoA"])
    exp.kernel = lambda v: ctx.program(WRONG_SOA).kernel("update_soa").set_args(
        exp.dst, exp.src, np.int32(N), np.float32(1e-3), np.float32(0.999), np.float32(9.81))
    res = run_experiment(exp, **QUICK)
    assert res.rows[0]["status"] == "wrong result"
    assert "no layout verified" in res.meta["conclusion"]


def test_bad_particle_counts_are_refused(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="multiple of 32"):
        StructLayout(ctx, particles=1000)
    with pytest.raises(pyclperf.InvalidArgumentError, match="unknown or no layouts"):
        StructLayout(ctx, particles=N, layouts=["AoSoSoA"])


def test_cli_runs_aos(ctx, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    code = cli.main(["run", "aos", "--size", "2048", "--local-size", "64", "--warmup", "1",
                     "--repeats", "2", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "fastest layout" in out and (tmp_path / "aos.png").is_file()


def test_the_particles_are_drawn_and_stepped_once_and_every_output_poisoned(ctx, monkeypatch):
    # Every layout reads the same particles, packed afresh into the input per point; the draw
    # and the float64 reference are made once (per point they cost seconds at 8 Mi particles).
    from pyclperf.experiments import aos

    stepped, poisoned = [], []
    real_step, real_poison = aos.step_reference, aos.poison_device
    monkeypatch.setattr(aos, "step_reference", lambda p: stepped.append(1) or real_step(p))
    monkeypatch.setattr(aos, "poison_device", lambda b: poisoned.append(b) or real_poison(b))
    res = pyclperf.run("aos", ctx, size=N, local_size=64, **QUICK)
    assert res.all_verified
    assert len(stepped) == 1 and len(poisoned) == len(LAYOUTS)


def test_a_wrong_layout_after_right_ones_still_fails(ctx):
    # The shared reference does not let a later layout pass on an earlier one's output.
    exp = StructLayout(ctx, particles=N, local_size=64, layouts=["AoS", "SoA"])
    right = exp.kernel
    exp.kernel = lambda v: right(v) if v.name == "AoS" else ctx.program(WRONG_SOA).kernel(
        "update_soa").set_args(exp.dst, exp.src, np.int32(N), np.float32(1e-3),
                               np.float32(0.999), np.float32(9.81))
    res = run_experiment(exp, **QUICK)
    assert [r["status"] for r in res.rows] == ["ok", "wrong result"]
