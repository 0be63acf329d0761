"""matmul, aat and tiling: every variant verifies against NumPy within the float32 rounding
bound, wrong kernels are caught, the Guide's bandwidth and the GFLOP/s are computed as
documented, the Guide comparison table is there, and the CuPy reference path works."""

from __future__ import annotations

import types

import numpy as np
import pytest

import pyclperf
from pyclperf import cli
from pyclperf.measure.checks import check_product, product_tolerance
from pyclperf.experiments import tiling as tiling_module
from pyclperf.experiments.aat import AAT
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments.matmul import MatMul
from pyclperf.experiments.tiling import Tiling

SIZE = 64
QUICK = {"warmup": 1, "repeats": 2}


@pytest.fixture(scope="module")
def ab(ctx):
    return pyclperf.run("matmul", ctx, size=SIZE, peak_gbps=1000.0, **QUICK)


@pytest.fixture(scope="module")
def aat(ctx):
    return pyclperf.run("aat", ctx, size=SIZE, **QUICK)


@pytest.fixture(scope="module")
def tiling(ctx):
    return pyclperf.run("tiling", ctx, size=SIZE, **QUICK)


def test_every_variant_verifies(ab, aat, tiling):
    for res, names in ((ab, ["simple", "local A", "local A+B"]),
                       (aat, ["simple", "local tiles", "padded tile"]),
                       (tiling, ["tiled", "two outputs", "prefetch", "unrolled", "rolled"])):
        # Where CuPy reaches an NVIDIA device, tiling adds its reference GEMM as a last row.
        variants = [v for v in res.df["variant"] if v != "cupy.matmul"]
        assert variants == names
        assert res.all_verified, res.df["error"].tolist()


def test_bandwidth_and_flops_follow_the_documented_formulas(ab, aat, tiling):
    t = 16
    df = ab.df
    assert (df["bytes"] == 4 * (SIZE * t + t * SIZE + SIZE * SIZE)).all()
    assert np.allclose(df["gbps"], df["bytes"] / df["median_ns"])
    assert np.allclose(df["gflops"], 2 * SIZE * SIZE * t / df["median_ns"])
    assert np.allclose(df["fraction_of_peak"], df["gbps"] / 1000.0)
    assert (aat.df["bytes"] == 4 * (SIZE * t + SIZE * SIZE)).all()
    assert np.allclose(aat.df["gflops"], 2 * SIZE * SIZE * t / aat.df["median_ns"])
    assert (tiling.df["bytes"] == 4 * 3 * SIZE * SIZE).all()
    assert np.allclose(tiling.df["gflops"], 2 * SIZE ** 3 / tiling.df["median_ns"])
    assert "fraction_of_peak" not in tiling.df  # compute-bound: no DRAM fraction


def test_guide_comparison_sits_beside_the_measured_ratios(ab, aat):
    table = ab.meta["guide_comparison"]
    assert [e["variant"] for e in table] == ["simple", "local A", "local A+B"]
    assert table[0]["ratio"] == pytest.approx(1.0)
    assert table[2]["ratio"] == pytest.approx(table[2]["gbps"] / table[0]["gbps"])
    assert table[2]["guide_gtx280_ratio"] == pytest.approx(29.7 / 8.8)
    assert table[1]["guide_8800gtx_gbps"] == 8.2
    assert aat.meta["guide_comparison"][2]["guide_gtx280_ratio"] == pytest.approx(30.3 / 1.1)
    assert "| local A+B |" in ab.meta["guide_comparison_md"]
    assert "GTX 280" in ab.meta["guide_comparison_md"]
    assert "(the Guide: 3.4x on a GTX 280, 22.4x on an 8800 GTX)" in ab.meta["conclusion"]
    summary = MatMul.summary(ab)
    assert list(summary["variant"]) == ["simple", "local A", "local A+B"]
    assert "guide_8800gtx_ratio" in summary


def test_transposed_tile_conflicts_follow_the_bank_model(aat, ctx):
    rows = {r["variant"]: r for r in aat.rows}
    assert rows["local tiles"]["tile_write_conflict"] == 8  # 16 x 16 tile: 2 rows per warp
    # One word of padding was the Guide's cure for 16 banks per half-warp; with 32 banks per
    # warp a 16-wide tile keeps one 2-way pair (lane tx=15 of one row meets tx=0 of the next).
    assert rows["padded tile"]["tile_write_conflict"] == 2
    exp = AAT(ctx, size=64, tile=32)
    assert exp.tile_write_conflicts(0) == 32 and exp.tile_write_conflicts(1) == 1


def test_tolerance_is_the_float32_dot_product_bound(rng):
    a = rng.uniform(-1, 1, (40, 16)).astype(np.float32)
    b = rng.uniform(-1, 1, (16, 24)).astype(np.float32)
    got = a @ b                                   # float32 arithmetic in NumPy's order
    assert check_product(got, a, b) == (True, "")
    bound = product_tolerance(16, np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    off = got.copy()
    off[3, 5] = np.float32(exact[3, 5] + 4 * bound[3, 5])
    ok, detail = check_product(off, a, b)
    assert not ok and "row 3, column 5" in detail
    off[:] = np.nan
    ok, detail = check_product(off, a, b)
    assert not ok and detail.startswith(f"{off.size} of {off.size}")


WRONG = """
__kernel void ab_local_ab(__global const float* a, __global const float* b, __global float* c,
                          const int n) {
    const int col = get_global_id(0), row = get_global_id(1);
    float sum = 0.0f;
    for (int k = 0; k < TILE_DIM - 1; ++k)       /* drops the last term */
        sum += a[row * TILE_DIM + k] * b[k * n + col];
    if (row != 5) c[row * n + col] = sum;         /* and never writes row 5 */
}
"""


def test_a_wrong_product_is_caught(ctx):
    exp = MatMul(ctx, size=SIZE, variants=["local A+B"])
    exp.kernel = lambda v: ctx.program(WRONG, defines=exp.defines(v)).kernel(v.kernel).set_args(
        *exp.inputs, exp.out, np.int32(SIZE))
    res = run_experiment(exp, **QUICK)
    row = res.rows[0]
    assert row["status"] == "wrong result" and not row["verified"]
    assert f"of {SIZE * SIZE} elements of C outside" in row["error"]
    assert "nothing to compare" in res.meta["conclusion"]


def test_invalid_parameters(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="multiple of 16"):
        MatMul(ctx, size=SIZE + 8)
    with pytest.raises(pyclperf.InvalidArgumentError, match="local memory"):
        MatMul(ctx, size=SIZE, tile=1 << 10)  # (its 2^20-item work-groups: the launch check's)
    with pytest.raises(pyclperf.InvalidArgumentError, match="multiple of 32"):
        Tiling(ctx, size=48)  # two outputs per work-item need 2 tiles
    with pytest.raises(pyclperf.InvalidArgumentError, match="unknown or no variants"):
        AAT(ctx, size=SIZE, variants=["fast"])
    with pytest.raises(pyclperf.InvalidArgumentError, match="takes no values"):
        pyclperf.run("matmul", ctx, size=SIZE, values=[1])


def test_no_reference_gemm_is_said_plainly(ctx, monkeypatch):
    monkeypatch.setattr(tiling_module, "_import_cupy", lambda: None)  # as on a machine without CuPy
    res = pyclperf.run("tiling", ctx, size=SIZE, variants=["tiled"], **QUICK)
    assert "no reference GEMM" in res.meta["reference"]
    assert tiling_module.REFERENCE not in list(res.df["variant"])
    assert "no reference GEMM" in res.meta["conclusion"]


class _FakeEvent:
    clock = 0.0  # ms of fake device time: each product takes half a millisecond

    def record(self, stream=None):
        self.t = _FakeEvent.clock

    def synchronize(self):
        pass


def _fake_cupy(wrong=False):
    def product(a, b, out):
        out[...] = a @ b + (1.0 if wrong else 0.0)
        _FakeEvent.clock += 0.5
        return out

    return types.SimpleNamespace(
        asarray=np.array, asnumpy=np.array, full=np.full, float32=np.float32, matmul=product,
        cuda=types.SimpleNamespace(Event=_FakeEvent,
                                   get_current_stream=lambda: types.SimpleNamespace(ptr=0),
                                   get_elapsed_time=lambda s, e: e.t - s.t))


@pytest.mark.parametrize("wrong", [False, True])
def test_cupy_reference_row(ctx, monkeypatch, wrong):
    monkeypatch.setattr(tiling_module, "_import_cupy", lambda: _fake_cupy(wrong))
    monkeypatch.setattr(tiling_module, "is_nvidia", lambda info: True)
    res = run_experiment(Tiling(ctx, size=SIZE, variants=["tiled"], reference=True), **QUICK)
    ref = res.rows[-1]
    assert ref["variant"] == tiling_module.REFERENCE
    assert "CUDA events around" in ref["method"] and "back-to-back launches" in ref["method"]
    # Batches of many launches divided by their count: the fake's half millisecond, in ns.
    assert ref["median_ns"] == pytest.approx(0.5e6)
    assert ref["gflops"] == pytest.approx(2 * SIZE ** 3 / 0.5e6)
    if wrong:
        assert ref["status"] == "wrong result"
    else:
        assert ref["status"] == "ok" and res.meta["reference"] == tiling_module.REFERENCE
        assert "% of it; timed by CUDA events around" in res.meta["conclusion"]
        assert res.meta["fraction_of_reference"] == pytest.approx(
            res.rows[0]["gflops"] / ref["gflops"])
        assert res.meta["guide_comparison"][-1]["variant"] == tiling_module.REFERENCE


def test_cupy_reference_is_opt_in(ctx, monkeypatch):
    # A plain run never loads CuPy (a CUDA context beside OpenCL): the guide can then run it in
    # its shared worker process.
    def must_not_load():
        raise AssertionError("CuPy loaded without reference=True")

    monkeypatch.setattr(tiling_module, "_import_cupy", must_not_load)
    monkeypatch.setattr(tiling_module, "is_nvidia", lambda info: True)
    res = run_experiment(Tiling(ctx, size=SIZE, variants=["tiled"]), **QUICK)
    assert [r["variant"] for r in res.rows] == ["tiled"]
    assert "not requested" in res.meta["reference"]
    assert "not requested" in res.meta["conclusion"]


def test_cli_runs_matmul_and_plots(ctx, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    code = cli.main(["run", "aat", "--size", str(SIZE), "--warmup", "1", "--repeats", "2",
                     "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "guide_gtx280_ratio" in out and "fastest:" in out
    assert (tmp_path / "aat.png").is_file()
    back = pyclperf.Results.load(tmp_path / "aat.jsonl")
    assert back.meta["guide_comparison"][0]["variant"] == "simple"
