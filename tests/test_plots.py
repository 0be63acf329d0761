"""Figures pass a reader's look: each experiment drawn with its own plot in the
report, labelled bands and error bars, models on their own panel, no line wrapping back, times
in a unit a reader takes in, tables that scroll instead of spilling over."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from pyclperf.views.plot import plot_bars, plot_bandwidth, plot_lines, plot_model, plot_results, rate_range  # noqa: E402
from pyclperf.views.plot_models import plot_roofline, plot_sector_model  # noqa: E402
from pyclperf.views.report import human_time, render_html, table_html  # noqa: E402
from pyclperf.measure.results import Results  # noqa: E402


def _row(**kw):
    base = {"status": "ok", "median_ns": 1000.0, "min_ns": 800.0, "max_ns": 1250.0, "bytes": 4000,
            "spread_pct": 5.0, "noisy": False}
    base.update(kw)
    base.setdefault("gbps", base["bytes"] / base["median_ns"])
    return base


def _meta(**kw):
    meta = {"experiment": "x", "x": "offset", "x_label": "offset", "device": {"name": "dev"}}
    meta.update(kw)
    return meta


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _labels(fig):
    return [t for ax in fig.axes for t in ax.get_legend_handles_labels()[1]]


def test_bandwidth_band_is_labelled():
    res = Results(_meta(), [_row(offset=v) for v in range(4)])
    assert "min-max over the timed launches" in _labels(plot_bandwidth(res))


def test_bars_carry_min_max_whiskers():
    rows = [_row(variant="a"), _row(variant="b", median_ns=2000.0, min_ns=1500.0, max_ns=3000.0)]
    lo, hi = rate_range(Results(_meta(), rows).df, "gbps")
    np.testing.assert_allclose(lo, [4000 / 1250, 4000 / 3000])
    np.testing.assert_allclose(hi, [4000 / 800, 4000 / 1500])
    fig = plot_bars(Results(_meta(x="variant"), rows))
    assert "min-max over the timed launches" in _labels(fig)


def test_model_gets_its_own_panel():
    rows = [_row(stride=s, layout=lay, slowdown=float(s), conflict_degree=s) for s in (1, 2, 4)
            for lay in ("plain", "padded")]
    fig = plot_model(Results(_meta(x="stride"), rows), group="layout", value="slowdown",
                     model="conflict_degree", ylabel="time / plain stride 1 (solid); conflict degree (dashed)")
    assert len(fig.axes) == 2 and fig.axes[1].get_ylabel() == "model: conflict degree"
    assert all(line.get_linestyle() != "--" for line in fig.axes[0].get_lines())


def test_lines_do_not_wrap_back_at_a_repeated_x():
    rows = [_row(occ=o, gbps=g, local_size=64) for o, g in ((50, 1.0), (100, 3.0), (50, 2.0), (100, 4.0))]
    fig = plot_lines(Results(_meta(x="occ"), rows), y="gbps", ylabel="GB/s", group="local_size")
    xs = fig.axes[0].get_lines()[0].get_xdata()
    assert list(xs) == sorted(xs) and len(xs) == 2


def test_times_are_written_in_readable_units():
    assert human_time(5.12e4) == "51.2 µs" and human_time(3.2e6) == "3.2 ms" and human_time(12) == "12 ns"
    html = table_html(Results(_meta(), [_row(offset=0, median_ns=5.12e4)]))
    assert html.startswith("<div class='scroll'>") and "51.2 µs" in html and "e+04" not in html


def test_report_uses_each_experiments_own_plot():
    rows = [_row(variant=v) for v in ("a", "b")]
    page = render_html([Results(_meta(x="variant", plot={"kind": "bars", "label": "variant"}), rows)])
    assert "data:image/png;base64," in page
    assert plot_results(Results(_meta(plot=None), rows)) is None


def test_sector_model_and_roofline_figures():
    rows = [_row(stride=s, gbps=100.0 / min(s, 8)) for s in (1, 2, 4, 8, 16)]
    fig = plot_sector_model(Results(_meta(experiment="stride", x="stride"), rows))
    assert any("32-byte sectors" in t for t in _labels(fig))
    meta = _meta(experiment="matmul", x="variant", peak_gbps=100.0,
                 device={"name": "dev", "type": "GPU", "max_clock_mhz": 1000, "compute_units": 10})
    mm = [_row(variant="simple", flops=8000, gflops=8.0), _row(variant="tiled", flops=80000, gflops=80.0)]
    fig = plot_roofline(Results(meta, mm))
    assert any("memory-bound" in t for t in _labels(fig)) and "assumed" in fig.axes[0].get_title()
    with pytest.raises(ValueError, match="give --peak-gbps"):
        plot_roofline(Results({**meta, "peak_gbps": None}, mm))


def _json_kinds(annotation: str) -> set[str]:
    """The JSON kinds a drawing function's annotation (as text) admits."""
    names = {"str": "string", "bool": "boolean", "int": "number", "float": "number",
             "dict": "object", "list": "array", "None": "null"}
    if annotation.replace(" ", "").startswith("dict[str,str]"):
        return {"object of strings"}
    return {names[part.split("[")[0].strip()] for part in annotation.split("|")}


def test_the_file_formats_figures_are_the_ones_drawn():
    """measure.plot_spec.FIGURES (what the loader accepts in meta["plot"]) and views.plot.DRAWS
    (what draws it) name the same kinds, arguments, kinds of value and required arguments."""
    import inspect

    from pyclperf.measure.plot_spec import FIGURES
    from pyclperf.views.plot import DRAWS

    assert set(FIGURES) == set(DRAWS)
    for kind, draw in DRAWS.items():
        params = {n: p for n, p in inspect.signature(draw).parameters.items() if n not in ("results", "ax")}
        drawn = {n: (_json_kinds(str(p.annotation)), p.default is inspect.Parameter.empty)
                 for n, p in params.items()}
        assert {n: (set(kinds), required) for n, (kinds, required) in FIGURES[kind].items()} == drawn, kind
