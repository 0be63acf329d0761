"""The guide draws each experiment's figures while the next experiment runs (report.FiguresAhead),
and the page it writes is the page that drawing everything at the end would give. No device
needed: the runner is a stand-in and the Results are synthetic."""

from __future__ import annotations

import threading

import pytest

from pyclperf.guide import report
from pyclperf.guide import run as guide
from pyclperf.measure.results import Results


def offset_results(scale: float) -> Results:
    rows = [{"offset": o, "status": "ok", "verified": True, "n": 10, "bytes": 1 << 20,
             "median_ns": 1000.0 * scale + o, "min_ns": 990.0 * scale, "max_ns": 1100.0 * scale,
             "iqr_ns": 10.0, "gbps": (1 << 20) / (1000.0 * scale + o)} for o in range(8)]
    return Results({"experiment": "offset", "title": "offset", "x": "offset", "x_label": "offset",
                    "plot": {"kind": "bandwidth"}}, rows)


def outcomes() -> list[guide.Outcome]:
    return [guide.Outcome("offset", guide.PASSED, 1.0, 0, "", offset_results(1.0)),
            guide.Outcome("stride", guide.CRASHED, 0.5, -11, "Segmentation fault", None)]


def page_drawn_ahead(done: list[guide.Outcome]) -> str:
    """The page of ``done``, every figure submitted for drawing ahead first."""
    ahead = report.FiguresAhead()
    try:
        for o in done:
            ahead.submit(o)
        return report.render_guide(done, figures=ahead)
    finally:
        ahead.close()


def test_the_page_drawn_ahead_is_the_page_drawn_at_the_end():
    done = outcomes()
    drawn_ahead = page_drawn_ahead(done)
    at_the_end = report.render_guide(done)
    assert "data:image/png;base64," in at_the_end
    assert drawn_ahead == at_the_end


def test_each_experiment_is_drawn_while_the_next_one_runs(tmp_path, monkeypatch):
    drawn = {}
    drawing_done = {"offset": threading.Event(), "stride": threading.Event()}
    real = report.figures_of

    def figures_of(res):
        name = res.meta["experiment"]
        drawn[name] = threading.current_thread().name
        try:
            return real(res)
        finally:
            drawing_done[name].set()

    def runner(name, out_dir, device, quick, timeout, extra):
        if name == "stride":
            # The offset figure must be drawn while this experiment is still running: were it
            # drawn only when the page is written, this would wait in vain.
            assert drawing_done["offset"].wait(30), "offset's figure was not drawn during the run"
        results = offset_results(2.0 if name == "stride" else 1.0)
        results.meta["experiment"] = name
        return guide.Outcome(name, guide.PASSED, 0.1, 0, "", results)

    monkeypatch.setattr(report, "figures_of", figures_of)
    page, done = guide.run_guide(tmp_path / "g", only="offset,stride", runner=runner, progress=False)
    assert [o.status for o in done] == [guide.PASSED, guide.PASSED]
    assert all(t.startswith("guide-figures") for t in drawn.values()), drawn
    assert page.read_text().count("data:image/png;base64,") >= 2


def test_a_figure_that_fails_on_the_thread_is_drawn_when_the_page_is_written(monkeypatch):
    real = report.figures_of

    def figures_of(res):
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("drawing failed on the thread")
        return real(res)

    monkeypatch.setattr(report, "figures_of", figures_of)
    page = page_drawn_ahead(outcomes())
    assert page.count("alt='offset plot'") == 1


@pytest.mark.parametrize("backend, ahead", [("agg", True), ("module://matplotlib_inline.backend_inline", True),
                                            ("TkAgg", False), ("QtAgg", False)])
def test_figures_are_drawn_ahead_only_where_no_window_opens(monkeypatch, backend, ahead):
    import matplotlib

    monkeypatch.setattr(matplotlib, "get_backend", lambda: backend)
    assert report._draws_to_files() is ahead
    figures = report.FiguresAhead()
    try:
        o = outcomes()[0]
        figures.submit(o)
        assert (id(o) in figures._drawn) is ahead  # no thread for a GUI backend: drawn at the end
        assert figures.get(o)[0]
    finally:
        figures.close()
