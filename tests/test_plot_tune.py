"""plot_tune: panels per tuned parameter and the best-per-cell heat map (Agg backend)."""

from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from pyclperf.views.plot_tune import plot_tune  # noqa: E402
from pyclperf.measure.results import Results  # noqa: E402

BX = [32, 64, 128, 256]
VEC = [1, 2, 4]
UNROLL = [1, 2]


def t(bx: int, vec: int, unroll: int) -> float:
    return 1.0 + abs(bx - 128) / 64 + abs(vec - 2) + 0.1 * unroll


def results(with_unroll: bool = True, fail: tuple = ((256, 4),)) -> Results:
    rows = []
    for bx, vec, unroll in itertools.product(BX, VEC, UNROLL if with_unroll else [1]):
        r = {"bx": bx, "vec": vec, "config": f"{bx},{vec},{unroll}", "status": "ok",
             "time_ms": t(bx, vec, unroll), "GB/s": 100 / t(bx, vec, unroll)}
        if with_unroll:
            r["unroll"] = unroll
        if (bx, vec) in fail:
            r.update(status="build failed", time_ms=None, **{"GB/s": None})
        rows.append(r)
    rows.append({"bx": 512, "vec": 4, "config": "s", "status": "skipped", "time_ms": None,
                 **({"unroll": 1} if with_unroll else {})})
    tp = {"bx": BX + [512], "vec": VEC, **({"unroll": UNROLL} if with_unroll else {})}
    return Results({"tune_params": tp, "metrics": ["GB/s"], "kernel": "copy",
                    "device": {"name": "Test GPU"}}, rows)


def teardown_function() -> None:
    plt.close("all")


def test_one_panel_per_parameter_with_best_line() -> None:
    fig = plot_tune(results())
    axes = fig.axes
    assert len(axes) == 3                                # bx, vec, unroll; no heat map
    bx_ax = axes[0]
    assert bx_ax.get_xlabel() == "bx"
    (points,) = bx_ax.collections
    assert len(points.get_offsets()) == 4 * 3 * 2 - 2    # the two failed configs left out
    best_line = bx_ax.lines[0]
    assert list(best_line.get_xdata()) == [32, 64, 128, 256]
    expected = [min(t(bx, v, u) for v in VEC for u in UNROLL if (bx, v) != (256, 4)) for bx in BX]
    assert list(best_line.get_ydata()) == pytest.approx(expected)
    title = fig._suptitle.get_text()
    assert "2 failed (not plotted)" in title and "1 skipped" in title and "Test GPU" in title


def test_heat_map_when_two_parameters_vary() -> None:
    fig = plot_tune(results(with_unroll=False), metric="GB/s")
    panels = [a for a in fig.axes if a.get_label() != "<colorbar>"]
    assert len(panels) == 3                              # bx, vec and the heat map
    heat = panels[2]
    data = np.ma.filled(heat.images[0].get_array(), np.nan)
    assert data.shape == (len(VEC), len(BX))             # rows: vec, columns: bx
    for (i, vec), (j, bx) in itertools.product(enumerate(VEC), enumerate(BX)):
        if (bx, vec) == (256, 4):
            assert np.isnan(data[i, j])                  # failed: no cell
        else:
            assert data[i, j] == pytest.approx(100 / t(bx, vec, 1))
    # Higher is better for GB/s: the best-per-value line takes the maximum.
    assert max(panels[0].lines[0].get_ydata()) == pytest.approx(100 / t(128, 2, 1))


def test_pair_picks_the_heat_map_cells_as_best_over_the_rest() -> None:
    fig = plot_tune(results(), pair=("bx", "unroll"))
    heat = [a for a in fig.axes if a.get_label() != "<colorbar>"][-1]
    data = np.ma.filled(heat.images[0].get_array(), np.nan)
    assert data.shape == (len(UNROLL), len(BX))
    for (i, u), (j, bx) in itertools.product(enumerate(UNROLL), enumerate(BX)):
        assert data[i, j] == pytest.approx(
            min(t(bx, v, u) for v in VEC if (bx, v) != (256, 4)))
    with pytest.raises(ValueError, match="pair must name two tuned parameters"):
        plot_tune(results(), pair=("bx", "nope"))


def test_given_axes_and_unverified_fallback() -> None:
    res = results(with_unroll=False)
    for r in res.rows:
        if r["status"] == "ok":
            r["status"] = "timed"
    fig, axes = plt.subplots(1, 3)
    assert plot_tune(res, ax=axes) is fig
    assert "unverified configs plotted" in fig._suptitle.get_text()
    with pytest.raises(ValueError, match="3 axes are needed"):
        plot_tune(res, ax=axes[:2])


def test_nothing_to_plot_is_an_error() -> None:
    res = Results({}, [{"bx": 1, "status": "build failed", "time_ms": None}])
    with pytest.raises(ValueError, match="nothing to plot"):
        plot_tune(res)
