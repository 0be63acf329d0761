"""pyclperf report and compare (a file's duplicated rows read the same by both, and by resume),
and the pytest plugin's assert_kernel (its failures in one line)."""

import os
import subprocess
import sys

import numpy as np
import pytest

import pyclperf
from pyclperf import cli
from pyclperf.views.report import compare, render_html
from pyclperf.testing import assert_kernel
from pyclperf.tuner.options import from_flat

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


THREE = ("__kernel void scale3(__global float* y, __global const float* x, const int n) {"
         " int i = get_global_id(0); if (i < n) y[i] = 2.0f * x[i]; }")


@pytest.mark.parametrize("mistake, args, cause", [
    ("a wrong dtype", lambda y, x: [y.astype(np.float64), x, np.int32(256)],
     "argument 0 ('y', global float*) holds float, but the array is float64; pass float32 "
     "(e.g. a.astype(np.float32)) or change the kernel's type"),
    ("a missing argument", lambda y, x: [y, x],
     "kernel 'scale3' takes 3 argument(s) (y, x, n), got 2"),
    ("np.int64 for int", lambda y, x: [y, x, np.int64(256)],
     "argument 2 ('n', private int) takes one int; got 1 x int64 (use np.int32(...))"),
])
def test_assert_kernel_says_a_mistake_in_the_line_run_kernel_says_it(cl_ctx, rng, mistake, args,
                                                                      cause):
    x = rng.standard_normal(256).astype(np.float32)
    given = args(np.zeros(256, np.float32), x)  # defined bits: a cast of garbage may warn
    with pytest.raises(AssertionError) as caught:
        assert_kernel(cl_ctx, THREE, "scale3", given, [2 * x] + [None] * (len(given) - 1), 256)
    assert str(caught.value) == f"kernel 'scale3': invalid: {cause}", mistake
    with pytest.raises(pyclperf.KernelRunError) as said:
        pyclperf.run_kernel(THREE, "scale3", 256, given)
    assert str(said.value) == f"invalid: {cause}"


@pytest.mark.slow  # 10-15 s on an H200 beside the other tests
def test_a_failing_assert_kernel_shows_pytest_one_line(cl_ctx, tmp_path):
    """Through pytest itself, as a user's test suite runs it: the cause, and no traceback of the
    worker process or of pyclperf's insides."""
    (tmp_path / "test_user.py").write_text(f"""
import numpy as np
from pyclperf.testing import assert_kernel
SRC = {THREE!r}

def test_scale(cl_ctx):
    x = np.ones(256, np.float32)
    assert_kernel(cl_ctx, SRC, "scale3", [np.empty(256, np.float64), x, np.int32(256)],
                  [2 * x, None, None], 256)
""")
    env = {**os.environ,
           "PYCLPERF_TEST_DEVICES": f"{cl_ctx.info.platform_index}:{cl_ctx.info.device_index}"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(tmp_path / "test_user.py")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert done.returncode == 1, out
    assert ("E       AssertionError: kernel 'scale3': invalid: argument 0 ('y', global float*) "
            "holds float, but the array is float64") in out, out
    for inside in ("worker.py", "supervisor.py", "Traceback (most recent call last)", "run.py:"):
        assert inside not in out, out


def _doubled(results, path):
    """``results`` written to ``path`` with every row twice, as a file copied onto its own end."""
    results.to_json(path)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines + lines[1:]))


def test_duplicated_rows_are_collapsed_with_a_warning_by_every_reader(two_runs, tmp_path,
                                                                      capsys, caplog):
    a, b = two_runs
    _doubled(a, tmp_path / "a.jsonl")
    b.to_json(tmp_path / "b.jsonl")
    loaded = pyclperf.Results.load(tmp_path / "a.jsonl")
    assert [r["offset"] for r in loaded.rows] == [0, 1, 2]
    warning = "3 rows repeat an earlier row exactly; each such row is counted once"
    assert loaded.meta["load_warnings"] == [f"{tmp_path / 'a.jsonl'}: {warning}"]
    # compare and report read it the same way: one row per point, and the warning said.
    assert cli.main(["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]) == 0
    assert len(compare(loaded, b)) == 3
    assert cli.main(["report", str(tmp_path / "a.jsonl"), "--out", str(tmp_path / "rep")]) == 0
    said = [r.getMessage() for r in caplog.records]
    assert said.count(f"{tmp_path / 'a.jsonl'}: {warning}") == 3, said
    capsys.readouterr()


def test_a_resumed_file_with_duplicated_rows_runs_nothing_twice(ctx, tmp_path, rng, caplog):
    x = rng.standard_normal(256).astype(np.float32)
    job = dict(ctx=ctx, answer=[2 * x, None], min_time=0.0, min_repeats=2, max_repeats=2,
               warmup=0, progress=False, out=tmp_path / "t.jsonl")
    first = pyclperf.tune(
        SCALE,
        "scale",
        256,
        [np.zeros(256, np.float32), x],
        {"block_size_x": [32, 64]},
        **from_flat(job),
    )
    _doubled(first, tmp_path / "t.jsonl")
    again = pyclperf.tune(
        SCALE,
        "scale",
        256,
        [np.zeros(256, np.float32), x],
        {"block_size_x": [32, 64, 128]},
        **from_flat({**job, "out": tmp_path / "t.jsonl"}),
    )
    assert [r["block_size_x"] for r in again.rows] == [32, 64, 128]
    assert [r["timestamp"] for r in again.rows[:2]] == [r["timestamp"] for r in first.rows]
    assert any("2 rows repeat an earlier row exactly" in r.getMessage() for r in caplog.records)
