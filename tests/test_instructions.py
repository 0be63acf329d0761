"""The instruction experiments (math, intops, buildopts): every point verifies, wrong kernels are
caught, the Gop/s column follows its formula, bad parameters are refused, the CLI works."""

from __future__ import annotations

import numpy as np
import pytest

import pyclperf
from pyclperf import cli
from pyclperf.experiments.base import run_experiment
from pyclperf.measure.checks import ulp32, ulp_error
from pyclperf.experiments.buildopts import BuildOptions
from pyclperf.experiments.intops import INT_VARIANTS, IntOps
from pyclperf.experiments.math import MathFunctions
from pyclperf.device.sources import kernel_source

ITEMS = 1024
LOCAL = 64
QUICK = {"warmup": 1, "repeats": 2}
FUNCTIONS = ["sin", "exp", "rsqrt"]
OPTIONS = ["", "-cl-mad-enable", "-cl-fast-relaxed-math"]


@pytest.fixture(scope="module")
def math_results(ctx):
    return pyclperf.run("math", ctx, size=ITEMS, local_size=LOCAL, functions=FUNCTIONS, **QUICK)


@pytest.fixture(scope="module")
def int_results(ctx):
    return pyclperf.run("intops", ctx, size=ITEMS, local_size=LOCAL, **QUICK)


@pytest.fixture(scope="module")
def opt_results(ctx):
    return pyclperf.run("buildopts", ctx, size=ITEMS, local_size=LOCAL, options=OPTIONS, **QUICK)


def check_metric(results):
    """gops = items x iters x ops_per_iter / median ns; bytes are one value in and out; no peak."""
    df = results.df[results.df["status"] == "ok"]
    assert len(df) and (df["items"] == ITEMS).all()
    assert np.allclose(df["ops"], df["items"] * df["iters"] * df["ops_per_iter"])
    assert np.allclose(df["gops"], df["ops"] / df["median_ns"])
    assert np.allclose(df["gops_best"], df["ops"] / df["min_ns"])
    assert (df["bytes"] == 2 * 4 * ITEMS).all()
    assert "fraction_of_peak" not in results.df
    assert results.meta["iters"] == df["iters"].iloc[0]


# --- helpers --------------------------------------------------------------------------------

def test_ulp_matches_numpy_spacing():
    x = np.array([1.0, 1.5, 0.75, 3.0e5, 1e-30, -2.0], dtype=np.float32)
    assert np.array_equal(ulp32(x.astype(np.float64)), np.spacing(np.abs(x)).astype(np.float64))
    assert ulp32(np.array([0.0]))[0] == 2.0**-149
    ref = np.array([1.0, 2.0**-130, 1.0])
    err = ulp_error(np.array([1.0 + 2**-22, 0.0, np.nan], dtype=np.float32), ref)
    assert err[0] == pytest.approx(2.0) and err[1] == 0.0 and np.isinf(err[2])  # flush to zero ok


# --- math -------------------------------------------------------------------------------------

def test_math_every_point_verifies_within_the_spec(math_results):
    df = math_results.df
    # sin on three ranges, exp and rsqrt on one; three flavours; rsqrt also as 1.0f/sqrt(x)
    assert len(df) == 3 * 3 + 3 + 3 + 1
    skipped = df[df["status"] == "skipped"]
    assert set(skipped["variant"]) == {"half_sin [-1e6,1e6]"}
    assert "2^16" in skipped["error"].iloc[0]
    ok = df[df["status"] != "skipped"]
    assert (ok["status"] == "ok").all(), ok[["variant", "error"]].values.tolist()
    precise = ok[ok["impl"] == "precise"].set_index("function")
    assert precise.loc["exp", "bound_ulp"] == 3 and precise.loc["rsqrt", "bound_ulp"] == 2
    assert (precise["max_ulp"] <= precise["bound_ulp"]).all()
    assert (ok[ok["impl"] == "half"]["bound_ulp"] == 8192).all()
    assert ok[ok["impl"] == "native"]["bound_ulp"].isna().all()
    recip = ok[ok["impl"] == "recip"].iloc[0]
    assert recip["call"] == "1.0f/sqrt" and recip["bound_ulp"] == 11 and recip["max_ulp"] <= 11
    assert "Guide 5.1.2" in math_results.meta["conclusion"]
    assert (ok["samples"] == ITEMS).all() and (ok["nonfinite"] == 0).all()
    check_metric(math_results)


def test_math_conclusion_compares_native_with_precise(math_results):
    text = math_results.meta["conclusion"]
    assert "native_sin [-pi,pi]" in text and "Guide 5.1.4" in text
    assert set(math_results.meta["native_speedup"]) >= {"sin [-pi,pi]", "exp [-80,80]"}


# A sine that is right to 1e-6 relative: fine for native_sin, far outside 4 ulp for sin.
SLOPPY_MATH = """
__kernel void math_eval(__global float* restrict out, __global const float* restrict in) {
    const size_t i = get_global_id(0);
    out[i] = FUNC(in[i]) * 1.000002f;
}
__kernel void math_loop(__global float* restrict out, __global const float* restrict in) {
    const size_t i = get_global_id(0);
    const uint bits = as_uint(in[i]);
    float sum = 0.0f;
    for (uint k = 1; k < ITERS; ++k)      /* one evaluation missing */
        sum += FUNC(as_float(bits + k));
    out[i] = sum;
}
"""


def test_math_catches_inaccurate_and_incomplete_kernels(ctx):
    exp = MathFunctions(ctx, items=ITEMS, local_size=LOCAL, functions=["sin"])
    exp.program = lambda call: ctx.program(SLOPPY_MATH, defines={"FUNC": call, "ITERS": exp.iters})
    rows = {r["variant"]: r for r in run_experiment(exp, **QUICK).rows}
    assert rows["sin [-pi,pi]"]["status"] == "wrong result"
    assert "exceeds the OpenCL C bound of 4 ulp" in rows["sin [-pi,pi]"]["error"]
    # native_sin has no bound: its error is recorded, and the missing loop term is what fails.
    native = rows["native_sin [-pi,pi]"]
    assert native["status"] == "wrong result" and "loop sums" in native["error"]
    assert native["max_ulp"] > 4


def test_math_draws_one_input_and_reference_per_range(ctx):
    """The implementations of one function on one range share their inputs and float64
    references (computed once); the next range draws its own."""
    exp = MathFunctions(ctx, items=ITEMS, local_size=LOCAL, functions=["sin"], iters=8)
    points = exp.points()
    first = [p for p in points if p["domain"] == points[0]["domain"]]
    other = next(p for p in points if p["domain"] != points[0]["domain"])
    shared = exp._inputs(first[0])
    assert all(exp._inputs(p) is shared for p in first)
    assert np.allclose(shared.ref, np.sin(shared.x.astype(np.float64)))
    loops = [np.sin((shared.x[i].view(np.uint32) + np.arange(8, dtype=np.uint32)).view(np.float32)
                    .astype(np.float64)) for i in shared.idx]
    assert np.allclose(shared.loop_ref, [t.sum() for t in loops])
    assert np.allclose(shared.loop_magnitude, [np.abs(t).sum() for t in loops])
    assert exp._inputs(other) is not shared and exp._inputs(other).x[0] != shared.x[0]


def test_math_rejects_bad_parameters(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="unknown or no"):
        MathFunctions(ctx, items=ITEMS, local_size=LOCAL, functions=["tan"])
    with pytest.raises(pyclperf.InvalidArgumentError, match="unknown or no"):
        MathFunctions(ctx, items=ITEMS, local_size=LOCAL, impls=["fast"])
    with pytest.raises(pyclperf.InvalidArgumentError, match="iters"):
        MathFunctions(ctx, items=ITEMS, local_size=LOCAL, iters=0)
    with pytest.raises(pyclperf.InvalidArgumentError, match="multiple of the work-group size"):
        MathFunctions(ctx, items=ITEMS + 1, local_size=LOCAL)
    with pytest.raises(pyclperf.InvalidArgumentError, match="work-group size"):
        MathFunctions(ctx, items=ITEMS, local_size=ctx.info.max_work_group_size * 2)
    with pytest.raises(pyclperf.InvalidArgumentError, match="takes no values"):
        pyclperf.run("math", ctx, size=ITEMS, local_size=LOCAL, values=[1, 2])


# --- intops -----------------------------------------------------------------------------------

def test_intops_every_point_verifies(int_results, ctx):
    df = int_results.df
    assert list(df["variant"]) == list(INT_VARIANTS)
    fp64 = ctx.info.has_extension("cl_khr_fp64")
    double = df["kernel"] == "float_literal_double"
    assert (df.loc[double, "status"] == ("ok" if fp64 else "skipped")).all()
    assert (df.loc[~double, "status"] == "ok").all(), df[["variant", "error"]].values.tolist()
    assert int_results.meta["divisor"] == 16 and int_results.meta["shift"] == 4
    check_metric(int_results)


def test_intops_columns_and_conclusion(int_results):
    df = int_results.df.set_index("variant")
    base = df.loc["loop only (x)", "median_ns"]
    assert df.loc["loop only (x)", "time_vs_loop_only"] == pytest.approx(1.0)
    assert df.loc["u32 / d (argument)", "time_vs_loop_only"] == pytest.approx(
        df.loc["u32 / d (argument)", "median_ns"] / base)
    text = int_results.meta["conclusion"]
    assert "u32 shift vs / by an argument" in text and "mul24 vs 32-bit multiply" in text
    if df.loc["float x * 0.999 (double)", "status"] == "ok":
        # 0.999 and 0.999f differ by ~1.3e-8 relative; compounded over the loop, results differ.
        assert 0 < df.loc["float x * 0.999 (double)", "rel_diff_other_literal"] < 1e-3


def test_intops_plain_signed_shift_is_wrong_for_negatives(ctx):
    """The tempting v >> s rounds negative quotients down, not toward zero: caught."""
    source = kernel_source("intops.cl").replace(
        "INT_KERNEL(i32_div_shift, (v + BIAS(v)) >> s)", "INT_KERNEL(i32_div_shift, v >> s)")
    assert source != kernel_source("intops.cl")
    exp = IntOps(ctx, items=ITEMS, local_size=LOCAL, variants=["i32 (v + bias) >> s", "u32 >> s"])
    exp.program = lambda: ctx.program(source, defines=exp.defines())
    rows = run_experiment(exp, **QUICK).rows
    assert [r["status"] for r in rows] == ["wrong result", "ok"]
    assert "checked sums differ" in rows[0]["error"]


def test_double_literal_is_skipped_without_fp64(ctx):
    exp = IntOps(ctx, items=ITEMS, local_size=LOCAL,
                 variants=["float x * 0.999 (double)", "float x * 0.999f"])
    exp.fp64 = False  # as on a device without cl_khr_fp64: the double kernel is not even built
    assert exp.defines()["FP64"] == 0
    rows = run_experiment(exp, **QUICK).rows
    assert [r["status"] for r in rows] == ["skipped", "ok"]
    assert "cl_khr_fp64" in rows[0]["error"]


def test_int_reference_matches_c_semantics():
    from pyclperf.experiments.intops import int_reference

    # One step from seed 0 gives x = LCG_C = 1013904223 (positive as int32).
    seeds = np.array([0], dtype=np.uint32)
    x = 1013904223
    assert int_reference(INT_VARIANTS["u32 / d (argument)"], seeds, 1, 16, 4)[0] == x // 16
    # A seed whose first value is negative as an int: C truncates the quotient toward zero.
    seed = np.array([(0x80000001 - 1013904223) * pow(1664525, -1, 2**32) % 2**32], dtype=np.uint32)
    v = 0x80000001 - 2**32
    q = int_reference(INT_VARIANTS["i32 / d (argument)"], seed, 1, 16, 4)[0]
    assert q == (-((-v) // 16)) % 2**32
    r = int_reference(INT_VARIANTS["i32 % d (argument)"], seed, 1, 16, 4)[0]
    assert r == (v - 16 * (-((-v) // 16))) % 2**32


def test_intops_rejects_bad_parameters(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="power of two"):
        IntOps(ctx, items=ITEMS, local_size=LOCAL, divisor=12)
    with pytest.raises(pyclperf.InvalidArgumentError, match="unknown or no variants"):
        IntOps(ctx, items=ITEMS, local_size=LOCAL, variants=["u64 / d"])


def test_intops_cli_writes_table_and_plot(ctx, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    code = cli.main(["run", "intops", "--size", str(ITEMS), "--local-size", str(LOCAL),
                     "--warmup", "1", "--repeats", "2", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "gops" in out and "Guide (2009)" in out and (tmp_path / "intops.png").is_file()
    back = pyclperf.Results.load(tmp_path / "intops.jsonl")
    assert "conclusion" in back.meta and back.meta["plot"]["value"] == "gops"


# --- buildopts --------------------------------------------------------------------------------

def test_buildopts_every_point_verifies(opt_results):
    df = opt_results.df
    assert list(df["variant"]) == [f"{k} {o or '(none)'}" for k in ("poly", "divsqrt", "transcendental")
                                   for o in OPTIONS]
    assert (df["status"] == "ok").all(), df[["variant", "error"]].values.tolist()
    plain = df[df["options"] == ""]
    assert plain["identical_to_none"].all() and (plain["max_abs_diff_vs_none"] == 0).all()
    assert np.allclose(plain["speedup_vs_none"], 1.0)
    assert (df["max_rel_err"] < 1e-2).all()
    assert df.groupby("kernel")["ops_per_iter"].first().to_dict() == {
        "poly": 2, "divsqrt": 4, "transcendental": 4}
    check_metric(opt_results)
    assert "-cl-fast-relaxed-math" in opt_results.meta["conclusion"]


# Off by 3e-4 relative per step: beyond the no-option build's standard precision; and a build
# option that is not the plain one must stay within 1e-2 - so off by 5% it fails too.
def _skewed(factor: str) -> str:
    return kernel_source("buildopts.cl").replace("y = y + 0.5f;", f"y = y * {factor} + 0.5f;")


def test_buildopts_catches_imprecise_and_grossly_wrong_builds(ctx):
    exp = BuildOptions(ctx, items=ITEMS, local_size=LOCAL, kernels=["poly"],
                       options=["", "-cl-fast-relaxed-math"])

    def skewed(name, options):
        if options:  # the relaxed build 5% off; the plain build slightly off
            program = ctx.program(_skewed("1.05f"), defines={"ITERS": exp.iters}, options=options)
        else:
            program = ctx.program(_skewed("1.0003f"), defines={"ITERS": exp.iters})
        return program.kernel(name).set_args(exp.dst, exp.src)

    exp.kernel = skewed
    rows = run_experiment(exp, **QUICK).rows
    assert [r["status"] for r in rows] == ["wrong result", "wrong result"]
    assert "standard's precision" in rows[0]["error"] and "relaxed limit" in rows[1]["error"]


def test_buildopts_rejects_bad_parameters(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="unknown or no kernels"):
        BuildOptions(ctx, items=ITEMS, local_size=LOCAL, kernels=["fft"])
    with pytest.raises(pyclperf.InvalidArgumentError, match="no build options"):
        BuildOptions(ctx, items=ITEMS, local_size=LOCAL, options=[])
    # The option-free build is always the first point, whatever the order given.
    exp = BuildOptions(ctx, items=ITEMS, local_size=LOCAL, kernels=["poly"],
                       options=["-cl-mad-enable", "", "-cl-mad-enable"])
    assert [p["options"] for p in exp.points()] == ["", "-cl-mad-enable"]


def test_an_unknown_build_option_is_a_failed_build_not_a_crash(ctx):
    exp = BuildOptions(ctx, items=ITEMS, local_size=LOCAL, kernels=["poly"],
                       options=["-cl-no-such-option"])
    rows = run_experiment(exp, **QUICK).rows
    assert rows[0]["status"] == "ok" and rows[1]["status"] == "build failed"
