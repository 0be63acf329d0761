"""pyclperf guide: every experiment in the shared worker or a process of its own, a hang or a
crash costs that experiment only, one self-contained page with a summary, plots, source figures
and verdicts, and guide.json beside it."""

from __future__ import annotations

import base64
import os
import re
import time

import pytest

from pyclperf import cli
from pyclperf.guide import record as guide_json
from pyclperf.guide import run as guide
from pyclperf.guide import figures as guide_figures
from pyclperf.experiments import get
from pyclperf.experiments.claims import claim_of
from pyclperf.measure.results import Results


def _spec(ctx) -> str:
    return f"{ctx.info.platform_index}:{ctx.info.device_index}"


def test_a_hang_is_stopped_and_costs_that_experiment_only(ctx, tmp_path):
    start = time.monotonic()
    outcome = guide.run_one("transfer", tmp_path, _spec(ctx), quick=False, timeout_s=1.0)
    assert outcome.status == guide.TIMED_OUT and "stopped after 1 s" in outcome.stderr_tail
    assert time.monotonic() - start < 30


def test_a_crash_is_reported_and_the_page_still_written(tmp_path):
    def fake(name, out_dir, device, quick, timeout, extra):
        if name == "stride":
            return guide.Outcome(name, guide.CRASHED, 0.1, -11, "Segmentation fault")
        return guide.Outcome(name, guide.PASSED, 0.1, 0, "")

    page, outcomes = guide.run_guide(tmp_path / "g", only="offset,stride", runner=fake, progress=False)
    assert [o.status for o in outcomes] == [guide.PASSED, guide.CRASHED]
    text = page.read_text()
    assert "Segmentation fault" in text and "1 of 2 experiments passed" in text


def test_unknown_only_id_is_an_error(tmp_path, capsys):
    assert cli.main(["guide", "--only", "offset,nope", "--out", str(tmp_path)]) == 2
    assert "unknown experiment 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("ratio, want", [(0.1, "holds"), (0.5, "changed"), (0.95, "changed"),
                                          (1.5, "reversed"), (None, "")])
def test_verdict_rule(ratio, want):
    figure = claim_of(get("offset"))  # source: 7/74, slower when misaligned
    assert guide_figures.verdict(figure, ratio) == want


def test_direction_only_and_absolute_figures():
    stride = claim_of(get("stride"))
    assert guide_figures.verdict(stride, 0.5) == "holds" and guide_figures.verdict(stride, 1.02) == "changed"
    assert guide_figures.verdict(claim_of(get("peak")), 30.0) == ""


# The whole catalogue: the quick guide of all 34 experiments takes about 75 s on PoCL with 2
# shared cores (2026-11-26; a subset of 8 ran here before, when 24 of them took 3 min 50 s).
# PYCLPERF_GUIDE_ONLY, a comma-separated list of ids, runs that list instead.


def test_guide_quick_on_the_cpu_device(ctx, tmp_path, capsys, monkeypatch):
    if ctx.info.is_gpu:
        pytest.skip("the quick guide is the CPU device's test; run `pyclperf guide` on a GPU")
    out = tmp_path / "guide"
    code = cli.main(["guide", "--quick", "--device", _spec(ctx), "--out", str(out)])
    text = (out / "guide.html").read_text()
    ids = guide.experiment_ids(os.environ.get(guide.ONLY_ENV))
    printed = capsys.readouterr().out
    assert f"of {len(ids)} experiments passed" in printed and code in (0, 1)
    assert "<h2>Summary</h2>" in text and "How the verdict is decided" in text
    for name in ids:
        assert f"id='{name}'" in text, name
    images = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", text)
    assert images and all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in images[:3])
    assert "src='http" not in text  # self-contained
    for name in ids:  # a summary row and a section each; the results file of each that ran
        assert f"href='#{name}'" in text
        path = out / "results" / f"{name}.jsonl"
        assert not path.exists() or Results.load(path).meta["experiment"] == name
    if "offset" in ids:  # its figure's two points fit the cache: measured again cold
        assert "taken warm: working set" in text and "cold, the figure is" in text
    # guide.json beside the page: valid against its schema (read checks it), every experiment
    # with a verdict, and the scorecard's 16 recommendations.
    data = guide_json.read(out / "guide.json")
    assert [e["experiment"] for e in data["experiments"]] == ids
    assert all(e["verdict"] for e in data["experiments"]) and len(data["recommendations"]) == 16
    assert text.count("<tr class='scorecard-row'>") == 16


def test_budget_and_interruption_still_write_the_page(tmp_path):
    calls = []

    def slow(name, out_dir, device, quick, timeout, extra):
        calls.append(timeout)
        time.sleep(1.2)
        return guide.Outcome(name, guide.PASSED, 1.2, 0, "")

    page, outcomes = guide.run_guide(tmp_path / "b", only="offset,stride,banks", runner=slow,
                                     progress=False, budget_s=2.0)
    assert outcomes[0].status == guide.PASSED and outcomes[-1].status == guide.NOT_RUN
    assert calls[0] <= 2.0 and guide.NOT_RUN in page.read_text()

    def interrupted(name, *args):
        if name == "stride":
            raise KeyboardInterrupt
        return guide.Outcome(name, guide.PASSED, 0.1, 0, "")

    page, outcomes = guide.run_guide(tmp_path / "i", only="offset,stride,banks", runner=interrupted,
                                     progress=False)
    assert [o.status for o in outcomes] == [guide.PASSED, guide.INTERRUPTED, guide.INTERRUPTED]
    assert page.is_file()


def test_a_stop_while_the_workers_start_still_writes_the_page(tmp_path, monkeypatch):
    """Ctrl-C (or SIGTERM) before any worker is up: nothing is left running and the page says
    that nothing ran (a stop there once raised AttributeError on the runner that was never made)."""
    class StoppedAsItStarts:
        def __init__(self, lanes: int = 1) -> None:
            raise KeyboardInterrupt

    monkeypatch.setattr(guide, "Runner", StoppedAsItStarts)
    page, outcomes = guide.run_guide(tmp_path / "g", only="offset,stride", progress=False, lanes=2)
    assert [o.status for o in outcomes] == [guide.INTERRUPTED, guide.INTERRUPTED]
    assert guide.INTERRUPTED in page.read_text()


# SIGTERM while the device is looked up and the workers start (0.2 s after the results folder
# appears), and once they run (1 s): in one lane and in three. In lanes, a stop had closed a
# worker's reply pipe under the lane waiting on it, which then waited out the experiment's
# whole timeout (an H200, 2026-11-27); a stop while the workers started left no page.
@pytest.mark.parametrize("lanes", ["1", "3"])
@pytest.mark.parametrize("after_s", [0.2, 1.0])
def test_sigterm_stops_the_guide_and_the_page_is_written(ctx, tmp_path, lanes, after_s):
    import signal
    import subprocess
    import sys

    out = tmp_path / "t"
    proc = subprocess.Popen([sys.executable, "-m", "pyclperf", "guide", "--only", "timers,offset,stride",
                             "--device", _spec(ctx), "--quick", "--out", str(out), "--lanes", lanes],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with proc:
        deadline = time.monotonic() + 60
        while not (out / "results").is_dir() and time.monotonic() < deadline:
            time.sleep(0.05)  # the folder appears once the guide (and its SIGTERM handler) is running
        time.sleep(after_s)
        proc.send_signal(signal.SIGTERM)
        try:
            stdout, stderr = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            pytest.fail(f"the guide in {lanes} lane(s) did not stop within 30 s of SIGTERM")
    assert proc.returncode == 130, stderr[-1000:]
    assert guide.INTERRUPTED in (out / "guide.html").read_text()
