"""pyclperf report and compare, and the pytest plugin's assert_kernel."""

import numpy as np
import pytest

import pyclperf
from pyclperf import cli
from pyclperf.views.report import compare, render_html
from pyclperf.testing import assert_kernel


@pytest.fixture(scope="module")
def two_runs(ctx):
    run = lambda: pyclperf.run("offset", ctx, size=4096, local_size=64, values=[0, 1, 2], repeats=3)  # noqa: E731
    return run(), run()


def test_report_renders_plot_table_and_device(two_runs, tmp_path):
    a, _ = two_runs
    page = render_html([a])
    assert "data:image/png;base64," in page and "<table" in page and a.meta["device"]["name"] in page
    a.to_json(tmp_path / "offset.jsonl")
    assert cli.main(["report", str(tmp_path / "offset.jsonl"), "--out", str(tmp_path / "rep")]) == 0
    assert (tmp_path / "rep" / "report.html").read_text().count("<h2>") == 1


def test_compare_joins_on_parameters(two_runs, tmp_path, capsys):
    a, b = two_runs
    table = compare(a, b)
    assert list(table["offset"]) == [0, 1, 2]
    np.testing.assert_allclose(table["ratio B/A"], b.df["gbps"] / a.df["gbps"])
    a.to_json(tmp_path / "a.jsonl")
    b.to_json(tmp_path / "b.jsonl")
    assert cli.main(["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"),
                     "--csv", str(tmp_path / "c.csv")]) == 0
    assert "ratio B/A" in capsys.readouterr().out and (tmp_path / "c.csv").is_file()


def test_compare_refuses_different_experiments(two_runs, ctx):
    a, _ = two_runs
    s = pyclperf.run("stride", ctx, size=4096, local_size=64, values=[1], repeats=2)
    with pytest.raises(ValueError, match="different experiments"):
        compare(a, s)


SCALE = "__kernel void scale(__global float* y, __global const float* x) { y[get_global_id(0)] = 2.0f * x[get_global_id(0)]; }"


def test_assert_kernel_passes_and_fails(cl_ctx, rng):
    x = rng.standard_normal(256).astype(np.float32)
    y, _ = assert_kernel(cl_ctx, SCALE, "scale", [np.empty(256, np.float32), x], [2 * x, None], 256, 64)
    np.testing.assert_array_equal(y, 2 * x)
    with pytest.raises(AssertionError, match="elements differ"):
        assert_kernel(cl_ctx, SCALE, "scale", [np.empty(256, np.float32), x], [3 * x, None], 256, 64)


def test_host_clock_timing_is_labelled_as_including_the_launch_gap(ctx, tmp_path):
    # The host clock brackets enqueue + finish, so its figures hold the launch gap that event
    # times (and the CUDA reference) leave out: every table and plot that shows it says so.
    host = pyclperf.run("offset", ctx, size=4096, local_size=64, values=[0, 1], repeats=2,
                        method="host")
    events = pyclperf.run("offset", ctx, size=4096, local_size=64, values=[0, 1], repeats=2)
    assert "timing: host clock (includes launch gap)" in render_html([host])
    assert "timing: OpenCL events (device time)" in render_html([events])
    assert "launch gap" not in render_html([events])
    fig = pyclperf.plot_results(host)
    assert fig.axes[0].get_title().endswith("host clock (includes launch gap)")
    assert "launch gap" not in pyclperf.plot_results(events).axes[0].get_title()
    timers = pyclperf.run("timers", ctx, values=[1024], repeats=2)
    legend = [t.get_text() for t in pyclperf.plot_results(timers).axes[0].get_legend().get_texts()]
    assert "host clock (includes launch gap)" in legend


def test_cli_says_when_the_host_clock_is_used(ctx, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    assert cli.main(["run", "offset", "--size", "4096", "--local-size", "64", "--repeats", "2",
                     "--method", "host", "--no-plot", "--out", str(tmp_path)]) == 0
    assert "timing: host clock (includes launch gap)" in capsys.readouterr().out
