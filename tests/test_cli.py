"""The command line: --version, help on every option, the experiment list in
run --help, run --json, documented exit codes, and compare's refusals and regression gate."""

from __future__ import annotations

import argparse
import json

import pytest

import pyclperf
from pyclperf import cli
from pyclperf.views.compare import MismatchError, compare, differences
from pyclperf.experiments import catalogue

ITEMS = 4096


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.startswith("pyclperf ")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_option_has_help_and_exit_codes_are_documented():
    parser = cli.build_parser()
    assert "exit codes:" in parser.epilog and "130" in parser.epilog
    for name, sub in _subparsers(parser).items():
        assert "exit codes:" in (sub.epilog or ""), name
        for action in sub._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"


def test_run_help_lists_each_experiment_with_its_description():
    run = _subparsers(cli.build_parser())["run"]
    text = run.format_help()
    for cls in catalogue():  # the epilog is printed as written: one line per experiment
        assert f"  {cls.id:<13} {cls.description}" in text, cls.id


def test_the_docs_list_every_exit_code():
    import re
    from pathlib import Path

    page = (Path(__file__).parent.parent / "docs" / "errors.md").read_text(encoding="utf-8")
    table = page[page.index("## Exit codes"):]
    listed = {int(code) for code in re.findall(r"^\| (\d+) \|", table, re.MULTILINE)}
    assert listed == {cli.EXIT_OK, cli.EXIT_FAILED, cli.EXIT_ERROR, cli.EXIT_SLOWER,
                      cli.EXIT_INTERRUPTED}
    assert "--fail-if-slower" in table


@pytest.fixture
def on_device(ctx, monkeypatch):
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    return ctx


def test_run_json_prints_rows_on_stdout(on_device, tmp_path, capsys):
    code = cli.main(["run", "offset", "--size", str(ITEMS), "--local-size", "64", "--repeats", "2",
                     "--min-time-s", "0", "--out", str(tmp_path), "--json", "--no-plot"])
    out, err = capsys.readouterr()
    rows = json.loads(out)  # stdout is the rows alone: strict JSON
    assert code == 0 and rows and all("gbps" in r and "status" in r for r in rows)
    assert "offset on " in err


@pytest.fixture(scope="module")
def runs(ctx):
    def run(**kw):
        args = dict(size=ITEMS, local_size=64, values=[0, 1], repeats=2)
        args.update(kw)
        return pyclperf.run("offset", ctx, **args)
    return run(), run(), run(values=[0, 2]), run(local_size=32)


def test_compare_refuses_runs_that_measured_different_things(runs):
    a, b, other_values, other_local = runs
    assert differences(a, b) == []
    diffs = differences(a, other_values)
    assert any(d.startswith("values:") or d.startswith("swept offset:") for d in diffs), diffs
    with pytest.raises(MismatchError, match="measured different things.*--force"):
        compare(a, other_local)
    forced = compare(a, other_local, force=True)
    assert forced.attrs["differences"] and forced.attrs["header"].startswith("metric: gbps (GB/s")


def test_compare_cli_header_force_and_regression_gate(runs, tmp_path, capsys):
    a, b, _, other_local = runs
    for name, res in (("a", a), ("b", b), ("c", other_local)):
        res.to_json(tmp_path / f"{name}.jsonl")
    pa, pb, pc = (str(tmp_path / f"{n}.jsonl") for n in "abc")
    assert cli.main(["compare", pa, pb]) == 0
    out = capsys.readouterr().out
    assert "metric: gbps (GB/s; higher is better); ratio B/A" in out
    assert cli.main(["compare", pa, pc]) == 2
    err = capsys.readouterr().err.strip()
    assert "measured different things" in err and "\n" not in err
    assert cli.main(["compare", pa, pc, "--force"]) == 0
    assert "warning: the runs differ in" in capsys.readouterr().err
    # A made-up regression: exactly half A's bandwidth (A's own rows halved, so no timing noise)
    # trips a 10% gate, not a 60% one.
    slow = pyclperf.Results(dict(a.meta), [{**r, "gbps": r["gbps"] / 2} for r in a.rows])
    slow.to_json(tmp_path / "slow.jsonl")
    assert cli.main(["compare", pa, str(tmp_path / "slow.jsonl"), "--fail-if-slower", "10"]) == cli.EXIT_SLOWER
    assert "slower than A by more than 10%" in capsys.readouterr().err
    assert cli.main(["compare", pa, str(tmp_path / "slow.jsonl"), "--fail-if-slower", "60"]) == 0
