"""The vector experiment: float..float16 copies with 1-4 elements per work-item and the byte
reversals, verified against NumPy; the achievable bandwidth it reports; the device details."""

from __future__ import annotations

import numpy as np
import pytest

import pyclperf
from pyclperf import cli
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments.vector import COPIES, REVERSALS, VARIANTS, VectorWidth

KiB = 1024
NBYTES = 256 * KiB  # a multiple of the widest variant (256 bytes per item) x 64 work-items
LOCAL = 64
QUICK = {"warmup": 1, "repeats": 2}


@pytest.fixture(scope="module")
def results(ctx):
    return pyclperf.run("vector", ctx, size=NBYTES, local_size=LOCAL, peak_gbps=1000.0, **QUICK)


def test_every_variant_verifies(results):
    df = results.df
    assert list(df["variant"]) == list(VARIANTS) and results.all_verified, df["error"].tolist()
    assert (df["bytes"] == 2 * NBYTES).all()
    assert (df["items"] * df["item_bytes"] == NBYTES).all()


def test_best_copy_is_the_achievable_bandwidth(results):
    copies = results.df[results.df["kernel"] == "copy"]
    best = copies.loc[copies["gbps"].idxmax()]
    assert results.meta["best_variant"] == best["variant"]
    assert results.meta["best_gbps"] == pytest.approx(best["gbps"])
    assert results.meta["best_fraction_of_peak"] == pytest.approx(best["gbps"] / 1000.0)
    assert best["variant"] in results.meta["conclusion"]
    assert np.allclose(results.df["fraction_of_peak"], results.df["gbps"] / 1000.0)


def test_each_copy_variant_is_its_own_cached_build(ctx):
    a = ctx.program(file="vector.cl", defines={"ELEMENT": "float4", "PER_ITEM": 2})
    assert ctx.program(file="vector.cl", defines={"ELEMENT": "float4", "PER_ITEM": 2}) is a
    assert "-D ELEMENT=float4" in a.options and "-D PER_ITEM=2" in a.options
    assert ctx.program(file="vector.cl", defines={"ELEMENT": "float8", "PER_ITEM": 2}) is not a


WRONG_COPY = """
__kernel void vector_copy(__global ELEMENT* restrict out, __global const ELEMENT* restrict in) {
    const size_t i = get_global_id(0);
    if (i != 7) out[i] = in[i];      /* one element per work-item, element 7 never written */
}
"""


def test_a_wrong_copy_fails_and_leaves_no_achievable_bandwidth(ctx):
    exp = VectorWidth(ctx, nbytes=NBYTES, local_size=LOCAL, variants=["float x1", "float4 x1"])

    def broken(v):
        program = ctx.program(WRONG_COPY, defines={"ELEMENT": v.element, "PER_ITEM": 1})
        return program.kernel("vector_copy").set_args(exp.dst, exp.src)

    exp.kernel = broken
    res = run_experiment(exp, **QUICK)
    assert [r["status"] for r in res.rows] == ["wrong result"] * 2
    assert "first at 28" in res.rows[0]["error"]  # byte 28 = float 7
    assert "best_gbps" not in res.meta and "unknown" in res.meta["conclusion"]


def test_a_plain_copy_does_not_pass_as_a_reversal(ctx):
    exp = VectorWidth(ctx, nbytes=NBYTES, local_size=LOCAL, variants=["reverse uchar16"])
    copy = ctx.program(file="vector.cl", defines={"ELEMENT": "uchar16", "PER_ITEM": 1})
    exp.kernel = lambda v: copy.kernel("vector_copy").set_args(exp.dst, exp.src)
    res = run_experiment(exp, **QUICK)
    assert res.rows[0]["status"] == "wrong result"


def test_reversals_match_numpy_flip(ctx):
    exp = VectorWidth(ctx, nbytes=NBYTES, local_size=LOCAL, variants=[v.name for v in REVERSALS])
    for v in REVERSALS:
        check = exp.verify(v.fields())
        assert (check.passed, check.detail) == (True, "")


def test_invalid_configurations(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="multiple of"):
        VectorWidth(ctx, nbytes=NBYTES + 1, local_size=LOCAL)
    with pytest.raises(pyclperf.InvalidArgumentError, match="unknown or no variants"):
        VectorWidth(ctx, nbytes=NBYTES, local_size=LOCAL, variants=["double3 x7"])
    assert len(COPIES) == 15 and {v.per_item for v in COPIES} == {1, 2, 4}


def test_cli_prints_the_achievable_bandwidth(ctx, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    code = cli.main(["run", "vector", "--size", str(NBYTES), "--local-size", str(LOCAL),
                     "--warmup", "1", "--repeats", "2", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "achievable bandwidth" in out and (tmp_path / "vector.png").is_file()
    back = pyclperf.Results.load(tmp_path / "vector.jsonl")
    assert back.meta["best_variant"] in VARIANTS  # finish() reached the saved record


def test_device_details_cover_the_devices_entry(ctx, capsys):
    summary = ctx.summary()
    wanted = ["compute_units", "max_clock_mhz", "global_mem_bytes", "local_mem_bytes",
              "constant_mem_bytes", "max_work_group_size", "max_work_item_sizes",
              "preferred_work_group_multiple", "profiling_timer_resolution_ns"]
    assert all(k in summary for k in wanted)
    assert summary["preferred_work_group_multiple"] >= 1
    assert cli.main(["devices", "--details"]) == 0
    assert "preferred_work_group_multiple" in capsys.readouterr().out


def test_conclusion_names_the_cuda_reference_and_how_it_is_timed(results, ctx):
    # A plain run measures no CUDA reference (CuPy's kernel builds cost seconds, no verdict
    # reads it), but its conclusion says which applies and how it is timed.
    text = results.meta["conclusion"]
    assert "no CUDA reference measured (not requested)" in text
    assert "cudaMemcpyAsync device-to-device" in text
    assert "CUDA events around batches of back-to-back launches" in text
    assert "fraction_of_reference" not in results.meta and "cuda_reference" not in results.meta


def test_the_input_is_drawn_once_and_every_output_poisoned(ctx, monkeypatch):
    from pyclperf.experiments import vector

    drawn, poisoned = [], []
    real_draw, real_poison = vector.random_bytes, vector.poison_device
    monkeypatch.setattr(vector, "random_bytes", lambda rng, n: drawn.append(n) or real_draw(rng, n))
    monkeypatch.setattr(vector, "poison_device", lambda b: poisoned.append(b) or real_poison(b))
    variants = ["float x1", "float4 x2", "reverse uchar", "reverse uint16"]
    res = pyclperf.run("vector", ctx, size=NBYTES, local_size=LOCAL, variants=variants, **QUICK)
    assert res.all_verified
    assert drawn == [NBYTES] and len(poisoned) == len(variants)


class InputWriter(VectorWidth):
    """Variants that also write into the input they should only read."""

    id = ""  # not registered

    def check(self, point, launch):
        verdict = super().check(point, launch)
        self.src.write(np.zeros(64, np.uint8), offset=NBYTES // 2)
        return verdict


def test_a_variant_writing_into_the_shared_input_fails_the_ones_after_it(ctx):
    exp = InputWriter(ctx, nbytes=NBYTES, local_size=LOCAL, variants=["float x1", "float4 x1",
                                                                     "reverse uchar16"])
    res = run_experiment(exp, **QUICK)
    assert list(res.df["status"]) == ["ok", "wrong result", "wrong result"]


def test_conclusion_compares_with_the_cuda_reference_where_it_exists(ctx, monkeypatch):
    import sys

    from fake_cupy import LAUNCH_MS, FakeCupy

    from pyclperf.experiments import vector

    monkeypatch.setitem(sys.modules, "cupy", FakeCupy())
    monkeypatch.setattr(vector, "is_nvidia", lambda info: True)
    res = pyclperf.run("vector", ctx, size=NBYTES, local_size=LOCAL, variants=["float4 x1"],
                       reference=True, **QUICK)
    ref = res.meta["cuda_reference"]
    # The fake's device clock: LAUNCH_MS per copy of 2 x NBYTES, whatever the batch size.
    assert ref["gbps"] == pytest.approx(2 * NBYTES / (LAUNCH_MS * 1e6))
    assert res.meta["fraction_of_reference"] == pytest.approx(res.meta["best_gbps"] / ref["gbps"])
    text = res.meta["conclusion"]
    assert f"{res.meta['fraction_of_reference']:.3f}x the CUDA reference" in text
    assert "cudaMemcpyAsync device-to-device (CuPy)" in text and "back-to-back launches" in text
    off = pyclperf.run("vector", ctx, size=NBYTES, local_size=LOCAL, variants=["float4 x1"],
                       **QUICK)  # the default: not measured
    assert "not requested" in off.meta["conclusion"] and "cuda_reference" not in off.meta
