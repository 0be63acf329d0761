"""The cooperative-pattern experiments (Quasar 9.2, 9.8): histogram, reduction and separable,
each run once per module with small sizes; wrong kernels and missing resets are caught; the
metric columns follow from the rows' own numbers; bad parameters are refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pyclperf
from pyclperf import cli
from pyclperf.experiments.base import run_experiment
from pyclperf.measure.checks import compare_close, gamma
from pyclperf.experiments.histogram import BINS, DISTRIBUTIONS, Histogram, make_values
from pyclperf.experiments.reduction import Reduction, subgroup_options
from pyclperf.experiments.separable import (Separable, error_bound, gaussian_weights,
                                            reference, tile_shape)
from pyclperf.device.sources import kernel_source

QUICK = {"warmup": 1, "repeats": 2}
HIST_ITEMS = 1 << 16
RED_ITEMS = 1 << 16
LOCAL = 64
SEP_WIDTH = 64
SEP_RADII = [2, 8]  # with the default 16 x 16 tile: halo smaller and as large as the tile


@pytest.fixture(scope="module")
def hist(ctx):
    return pyclperf.run("histogram", ctx, size=HIST_ITEMS, local_size=LOCAL, **QUICK)


@pytest.fixture(scope="module")
def red(ctx):
    return pyclperf.run("reduction", ctx, size=RED_ITEMS, local_size=LOCAL, peak_gbps=1000.0, **QUICK)


@pytest.fixture(scope="module")
def sep(ctx):
    return pyclperf.run("separable", ctx, size=SEP_WIDTH, values=SEP_RADII, **QUICK)


# --- histogram ---------------------------------------------------------------------------------

def test_histogram_every_point_verifies(hist):
    df = hist.df
    assert hist.all_verified, df["error"].tolist()
    assert len(df) == 2 * len(DISTRIBUTIONS)
    assert set(zip(df["kernel"], df["distribution"])) == {
        (k, d) for k in ("global", "local") for d in DISTRIBUTIONS}


def test_histogram_metrics_follow_from_the_rows(hist):
    df = hist.df
    assert (df["bytes"] == HIST_ITEMS).all()  # the input read, one byte per value
    assert np.allclose(df["gbps"], df["bytes"] / df["median_ns"])
    assert np.allclose(df["gvalues_per_s"], HIST_ITEMS / df["median_ns"])
    share = df.groupby("distribution")["top_bin_share"].first()
    assert share["uniform"] < 0.02 and 0.2 < share["geometric"] < 0.3 and 0.85 < share["hot"] < 0.95


def test_histogram_conclusion_has_the_speedup_and_quasar(hist):
    speedup = hist.meta["local_speedup"]
    df = hist.df.set_index(["kernel", "distribution"])
    for d in DISTRIBUTIONS:
        ratio = df.loc[("global", d), "median_ns"] / df.loc[("local", d), "median_ns"]
        assert speedup[d] == pytest.approx(ratio)
    assert "73.7 ms" in hist.meta["conclusion"] and "5.8x" in hist.meta["conclusion"]


def test_histogram_inputs_have_the_stated_shapes(rng):
    n = 1 << 16
    hot = np.bincount(make_values(rng, "hot", n), minlength=BINS) / n
    geo = np.bincount(make_values(rng, "geometric", n), minlength=BINS) / n
    assert hot[0] == pytest.approx(230 / 256, abs=0.01)
    assert geo[0] == pytest.approx(0.25, abs=0.01) and geo[1] == pytest.approx(0.1875, abs=0.01)
    with pytest.raises(pyclperf.InvalidArgumentError, match="unknown distribution"):
        make_values(rng, "zipf", n)


WRONG_HISTOGRAM = kernel_source("histogram.cl").replace("atomic_inc(&counts[v.s3]);", "")


def test_a_histogram_that_drops_values_fails(ctx):
    exp = Histogram(ctx, items=HIST_ITEMS, local_size=LOCAL, kernels=["local"], distributions=["uniform"])
    exp.program = ctx.program(WRONG_HISTOGRAM, defines={"BINS": BINS})
    res = run_experiment(exp, **QUICK)
    assert res.rows[0]["status"] == "wrong result" and "bins differ" in res.rows[0]["error"]
    assert "no input" in res.meta["conclusion"]


def test_a_launch_that_does_not_zero_the_histogram_fails(ctx):
    exp = Histogram(ctx, items=HIST_ITEMS, local_size=LOCAL, kernels=["global"], distributions=["hot"])
    exp.reset = lambda: None  # the poison stays: counts land on top of it
    res = run_experiment(exp, **QUICK)
    assert res.rows[0]["status"] == "wrong result"


def test_histogram_refuses_impossible_parameters(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="multiple of 4"):
        Histogram(ctx, items=HIST_ITEMS + 1, local_size=LOCAL)
    with pytest.raises(pyclperf.InvalidArgumentError, match="unknown or no distributions"):
        Histogram(ctx, items=HIST_ITEMS, local_size=LOCAL, distributions=["zipf"])
    # The work-group size is the core's launch check to refuse, point by point.
    res = run_experiment(Histogram(ctx, items=HIST_ITEMS, local_size=ctx.info.max_work_group_size + 1,
                                   kernels=["global"], distributions=["uniform"]), **QUICK)
    assert res.rows[0]["status"] == "skipped" and "exceeds the device's limit" in res.rows[0]["error"]


# --- reduction ---------------------------------------------------------------------------------

def test_reduction_verifies_and_skips_subgroups_only_without_them(ctx, red):
    rows = {r["variant"]: r for r in red.rows}
    assert rows["tree"]["status"] == "ok" and rows["atomic"]["status"] == "ok", red.df["error"].tolist()
    options, note = subgroup_options(ctx)
    if options is None:  # PoCL's CPU device here: it claims neither cl_khr_subgroups nor __opencl_c_subgroups
        assert rows["subgroup"]["status"] == "skipped"
        assert rows["subgroup"]["error"] == note and "no sub-groups" in note
        assert "subgroup skipped" in red.meta["conclusion"]
    else:
        assert rows["subgroup"]["status"] == "ok", rows["subgroup"]["error"]


def test_reduction_error_is_within_the_derived_bound(red):
    for r in red.rows:
        if r["status"] != "ok":
            continue
        assert r["rel_bound"] == pytest.approx(gamma(r["rounding_chain"]))
        assert r["tolerance"] == pytest.approx(r["rel_bound"] * r["reference"])
        assert abs(r["result"] - r["reference"]) <= r["tolerance"]
        assert r["rel_error"] < r["rel_bound"] < 1e-3


def test_reduction_bytes_and_fastest(red):
    ok = red.df[red.df["status"] == "ok"]
    assert (ok["bytes"] == 4 * RED_ITEMS).all()
    assert np.allclose(ok["gbps"], ok["bytes"] / ok["median_ns"])
    best = ok.loc[ok["gbps"].idxmax()]
    assert red.meta["best_variant"] == best["variant"]
    assert red.meta["conclusion"].startswith(f"fastest: {best['variant']}")


def test_rounding_chains_count_each_stage(ctx):
    exp = Reduction(ctx, items=RED_ITEMS, local_size=LOCAL, groups=16, variants=["tree", "atomic"])
    private = RED_ITEMS // (16 * LOCAL)  # 64 elements per work-item
    assert exp.rounding_chain("tree") == private + 6 + 1 + 6  # tree, second pass of 16, tree
    assert exp.rounding_chain("atomic") == private + 6 + 16  # one rounding per group's add
    assert exp.rounding_chain("subgroup") == private + 3 * LOCAL + 1 + 3 * LOCAL


WRONG_TREE = kernel_source("reduction.cl").replace("step > 0", "step > 1")  # stops one level early


def test_a_reduction_that_drops_half_of_each_group_fails(ctx):
    exp = Reduction(ctx, items=RED_ITEMS, local_size=LOCAL, variants=["tree", "atomic"])
    exp.program = ctx.program(WRONG_TREE, defines={"WG": LOCAL})
    res = run_experiment(exp, **QUICK)
    assert [r["status"] for r in res.rows] == ["wrong result"] * 2
    assert "no variant verified" in res.meta["conclusion"]


def test_an_atomic_sum_without_its_reset_fails(ctx):
    exp = Reduction(ctx, items=RED_ITEMS, local_size=LOCAL, variants=["atomic"])
    exp.reset = lambda: None  # the poisoned (NaN) total is never zeroed
    res = run_experiment(exp, **QUICK)
    assert res.rows[0]["status"] == "wrong result"


def test_reduction_refuses_impossible_parameters(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="power of two"):
        Reduction(ctx, items=RED_ITEMS, local_size=48)
    with pytest.raises(pyclperf.InvalidArgumentError, match="unknown or no variants"):
        Reduction(ctx, items=RED_ITEMS, local_size=LOCAL, variants=["shuffle"])
    with pytest.raises(pyclperf.InvalidArgumentError, match="bound nothing"):
        gamma(1 << 24)


# --- separable ---------------------------------------------------------------------------------

def test_separable_every_point_verifies(sep):
    df = sep.df
    assert sep.all_verified, df["error"].tolist()
    assert list(zip(df["radius"], df["variant"])) == [
        (r, v) for r in SEP_RADII for v in ("two-pass", "local tile")]
    assert (df["max_abs_error"] <= df["tolerance"]).all()


def test_separable_bytes_and_throughput(sep):
    df = sep.df
    pixels = SEP_WIDTH * SEP_WIDTH
    per_pixel = np.where(df["variant"] == "two-pass", 16, 8)  # + intermediate write and read
    assert (df["bytes"] == per_pixel * pixels).all()
    assert np.allclose(df["mpix_per_s"], pixels / df["median_ns"] * 1e3)
    ratio = sep.meta["tile_speedup"]
    for r in SEP_RADII:
        two = df[(df.radius == r) & (df.variant == "two-pass")]["median_ns"].item()
        tile = df[(df.radius == r) & (df.variant == "local tile")]["median_ns"].item()
        assert ratio[r] == pytest.approx(two / tile)
    assert "Quasar" in sep.meta["conclusion"]


def test_separable_reference_matches_a_direct_2d_convolution(rng):
    image = rng.random((9, 13))
    w = gaussian_weights(3)
    assert w.dtype == np.float32 and w.sum() == pytest.approx(1, abs=1e-6)
    kernel2d = np.outer(w, w).astype(np.float64)
    rows = np.arange(9)[:, None, None, None] + np.arange(-3, 4)[None, None, :, None]
    cols = np.arange(13)[None, :, None, None] + np.arange(-3, 4)[None, None, None, :]
    patches = image[np.clip(rows, 0, 8), np.clip(cols, 0, 12)]  # (9, 13, 7, 7), clamped
    direct = (patches * kernel2d).sum(axis=(2, 3))
    assert np.allclose(reference(image.astype(np.float32), w), direct.astype(np.float32), atol=1e-6)
    total = float(w.astype(np.float64).sum())
    assert error_bound(w, 1.0) == pytest.approx(gamma(7) * total**2 * (2 + gamma(7)))


def test_separable_reference_pairs_only_symmetric_filters(rng):
    # A lopsided filter wider than the image: the mirrored-pair shortcut must not apply, and the
    # clamped borders must repeat the edge pixels for every tap.
    image = rng.random((5, 7)).astype(np.float32)
    w = rng.random(2 * 4 + 1).astype(np.float32)
    kernel2d = np.outer(w.astype(np.float64), w.astype(np.float64))
    rows = np.arange(5)[:, None, None, None] + np.arange(-4, 5)[None, None, :, None]
    cols = np.arange(7)[None, :, None, None] + np.arange(-4, 5)[None, None, None, :]
    direct = (image.astype(np.float64)[np.clip(rows, 0, 4), np.clip(cols, 0, 6)] * kernel2d).sum(axis=(2, 3))
    assert np.allclose(reference(image, w), direct, rtol=0, atol=1e-12)


def test_separable_draws_its_image_once_a_run(ctx):
    exp = Separable(ctx, width=SEP_WIDTH, radii=[2, 3])
    writes = []
    src_write = exp.src.write
    exp.src = type("Counted", (), {"write": lambda self, a: (writes.append(a.copy()), src_write(a))})()
    exp.steps = lambda radius, variant, weights: []  # only the inputs matter here
    for point in exp.points():
        exp.launch(point)
    assert len(writes) == 1


WRONG_TILE = kernel_source("separable.cl").replace(
    "tile[j][i] = row[clamp(x0 + i, 0, width - 1)];",
    "tile[j][i] = (x0 + i >= 0 && x0 + i < width) ? row[x0 + i] : 0.0f;")  # zero borders


def test_a_filter_with_the_wrong_border_fails(ctx):
    assert WRONG_TILE != kernel_source("separable.cl")
    exp = Separable(ctx, width=SEP_WIDTH, radii=[2], variants=["local tile"])
    exp.program = lambda r: ctx.program(WRONG_TILE, defines={"R": r, "TX": exp.tx, "TY": exp.ty})
    res = run_experiment(exp, **QUICK)
    assert res.rows[0]["status"] == "wrong result" and "pixels differ by more than" in res.rows[0]["error"]


def test_separable_tiles_and_refusals(ctx):
    assert [tile_shape(n) for n in (64, 128, 256, 512, 1024)] == [
        (8, 8), (16, 8), (16, 16), (32, 16), (32, 32)]
    exp = Separable(ctx, width=SEP_WIDTH, radii=[8])
    assert exp.local_bytes(8) == 4 * 32 * (32 + 16)  # haloed tile + row-filtered middle
    with pytest.raises(pyclperf.InvalidArgumentError, match="multiple of the 16 x 16 tile"):
        Separable(ctx, width=SEP_WIDTH + 8)
    with pytest.raises(pyclperf.InvalidArgumentError, match="radii"):
        Separable(ctx, width=SEP_WIDTH, radii=[0])
    with pytest.raises(pyclperf.InvalidArgumentError, match="power of two"):
        Separable(ctx, width=SEP_WIDTH, local_size=96)


def test_compare_close_reports_nan_and_distance():
    assert compare_close(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9]), 1e-6, "x") == (True, "")
    ok, detail = compare_close(np.array([1.0, np.nan]), np.array([1.0, 2.0]), 1e-6, "x")
    assert not ok and "1 of 2 x" in detail and "first at 1" in detail


# --- the command line --------------------------------------------------------------------------

@pytest.mark.parametrize("name, size, extra", [
    ("histogram", HIST_ITEMS, ["--local-size", str(LOCAL)]),
    ("reduction", RED_ITEMS, ["--local-size", str(LOCAL)]),
    ("separable", SEP_WIDTH, []),
])
def test_cli_runs_and_plots(ctx, tmp_path, capsys, monkeypatch, name, size, extra):
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    code = cli.main(["run", name, "--size", str(size), *extra, "--warmup", "1", "--repeats", "2",
                     "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert Path(tmp_path / f"{name}.png").is_file()
    assert pyclperf.Results.load(tmp_path / f"{name}.jsonl").meta["conclusion"] in out
