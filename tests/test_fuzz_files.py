"""Fuzzed results files and command lines: whatever the file holds (random JSON per line, random
bytes, torn lines, deep nesting, plausible records with fields of the wrong type) and whatever
arguments report and compare get, Results.load returns or raises ResultsFileError, and the
command line never shows a traceback: a refusal is one error line and exit status 2."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, find, given, settings
from hypothesis import strategies as st

from pyclperf import cli
from pyclperf.views.plot import DRAWS
from pyclperf.measure.results import STATUSES, Results, ResultsFileError

# deadline=None: a report draws a figure, whose first call imports matplotlib.
FAST = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
SLOW = settings(FAST, max_examples=150)

META: dict[str, Any] = {
    "record": "meta", "schema": "pyclperf.results/1", "experiment": "offset", "title": "Offset",
    "x": "offset", "method": "events", "device": {"name": "Device A"},
    "versions": {"pyclperf": "0.1.0"}, "plot": {"kind": "bandwidth"},
}
ROW: dict[str, Any] = {"record": "row", "offset": 0, "status": "ok", "median_ns": 1000.0,
                       "min_ns": 900.0, "max_ns": 1100.0, "bytes": 8192, "gbps": 8.0,
                       "error": "", "verified": True, "times_ns": [900.0, 1100.0]}

# Hypothesis leans (and shrinks) toward the first of sampled values: the common case, False.
sometimes = st.sampled_from([False] * 4 + [True])
rarely = st.sampled_from([False] * 19 + [True])
scalars = (st.none() | st.booleans() | st.integers() | st.floats()
           | st.text(max_size=12) | st.sampled_from(["ok", "offset", "gbps", "", "NaN"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=12)
# Numbers a measured column may hold: ordinary, untimed (null, NaN), absurd (infinite, huge).
measured = (st.floats(0.01, 1e4) | st.none() | st.floats() | st.integers(-10, 10**30))
# Figures as experiments ask for them, with their own arguments (measure/validate.py allows these).
good_plots = st.sampled_from([
    {"kind": "bandwidth"}, {"kind": None}, {"kind": "bars", "label": "offset", "value": "gbps"},
    {"kind": "lines", "y": "gbps", "ylabel": "GB/s", "group": "status"},
    {"kind": "lines", "y": "median_ns", "ylabel": "ns", "logx": True, "logy": True},
    {"kind": "modes", "group": "status"},
    {"kind": "columns", "columns": {"gbps": "median", "gbps_best": "best"}, "ylabel": "GB/s"},
    {"kind": "model", "group": "status", "value": "gbps", "model": "median_ns"},
])
# Figures with arguments of the right type that name odd columns or hold odd text.
columns = st.sampled_from(["gbps", "status", "offset", "error", "verified", "median_ns",
                           "times_ns", "bytes", "nope", ""])
odd_plots = st.one_of(
    st.fixed_dictionaries({"kind": st.just("lines"), "y": columns, "ylabel": st.text(max_size=4)},
                          optional={"group": columns, "mark": columns, "logx": st.booleans(),
                                    "logy": st.booleans(), "label_format": st.sampled_from(
                                        ["{}", "{0}", "{x}", "{", "{0.real}", "{1}", "{:d}"]),
                                    "hlines": st.dictionaries(st.text(max_size=3), values,
                                                              max_size=2),
                                    "vlines": st.just({"v": "peak_gbps"})}),
    st.fixed_dictionaries({"kind": st.just("bars")},
                          optional={"label": columns, "value": columns}),
    st.fixed_dictionaries({"kind": st.just("modes")},
                          optional={"group": columns, "logx": st.booleans(), "logy": st.booleans()}),
    st.fixed_dictionaries({"kind": st.just("columns"), "ylabel": st.text(max_size=4),
                           "columns": st.dictionaries(columns, st.text(max_size=3), max_size=3)},
                          optional={"logx": st.booleans(), "logy": st.booleans()}),
    st.fixed_dictionaries({"kind": st.just("model"), "group": columns, "value": columns,
                           "model": columns}, optional={"logy": st.booleans()}),
    st.fixed_dictionaries({"kind": st.just("bandwidth")}, optional={"label": st.text(max_size=4)}),
)
any_plots = st.fixed_dictionaries(
    {"kind": st.sampled_from([*DRAWS, None, "pie"])},
    optional={"group": st.sampled_from(["mode", "status", "offset"]) | values,
              "y": st.sampled_from(["gbps", "median_ns"]) | values, "ylabel": values,
              "logx": values, "label": values, "value": values})


@st.composite
def metas(draw: Any, hostile: bool) -> dict[str, Any]:
    meta = dict(META, device={"name": draw(st.sampled_from(["Device A", "Device B"])
                                           | st.text(max_size=8))},
                plot=draw(good_plots | odd_plots),
                x=draw(st.sampled_from(["offset"] * 4 + ["gbps", "nope"])),
                peak_gbps=draw(measured))
    if hostile:
        for key in draw(st.lists(st.sampled_from(
                ["experiment", "x", "device", "versions", "plot", "title", "method", "peak_gbps",
                 "load_warnings", "interrupted", "conclusion", "x_label", "schema", "fleet",
                 "devices", "extra"]), max_size=3)):
            meta[key] = draw(values)
        if draw(st.booleans()):
            meta["plot"] = draw(any_plots)
    return meta


@st.composite
def rows(draw: Any, hostile: bool) -> dict[str, Any]:
    row = dict(ROW, offset=draw(st.integers(-2, 6)), status=draw(st.sampled_from(STATUSES)),
               gbps=draw(measured), median_ns=draw(measured), gbps_best=draw(measured))
    for key in draw(st.lists(st.sampled_from([*ROW, "config", "device", "noisy", "extra"]),
                             max_size=2)):
        if draw(st.booleans()):
            row.pop(key, None)  # a field may be missing from any row
        elif hostile:
            row[key] = draw(values)
    return row


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


@st.composite
def lines(draw: Any, meta: dict[str, Any]) -> bytes:
    kind = draw(st.sampled_from(["row", "row", "row", "json", "bytes", "torn", "nest", "meta",
                                 "end"]))
    if kind == "row":
        return _json(draw(rows(hostile=True)))
    if kind == "json":
        return _json(draw(values))
    if kind == "bytes":
        return draw(st.binary(max_size=40)).replace(b"\n", b" ")
    if kind == "torn":
        whole = _json(draw(rows(hostile=False)))
        return whole[:draw(st.integers(0, len(whole) - 1))]
    if kind == "nest":
        depth = draw(st.integers(1, 5000))
        return b"[" * depth + b"]" * draw(st.sampled_from([depth, 0, depth // 2]))
    if kind == "meta":
        return _json(meta)
    return _json({"record": "end", **draw(st.dictionaries(
        st.sampled_from(["interrupted", "why"]), values, max_size=2))})


@st.composite
def files(draw: Any) -> bytes:
    """A third each: well-formed files of odd numbers (missing fields, NaN, infinities,
    duplicate points, a torn last line), files with one field of a wrong type, and files of
    random lines (JSON of any shape, bytes, torn rows, deep nesting, stray records)."""
    kind = draw(st.sampled_from(["odd", "wrong", "random"]))
    meta = draw(metas(hostile=kind == "wrong"))
    first = [] if kind == "random" and draw(sometimes) else [_json(meta)]
    if kind == "random":
        body = draw(st.lists(lines(meta), max_size=8))
    else:
        body = [_json(r) for r in draw(st.lists(rows(hostile=False), max_size=8))]
        if kind == "wrong" and body:
            spoilt = json.loads(body[-1])
            spoilt[draw(st.sampled_from(sorted(spoilt)))] = draw(values)
            body[draw(st.integers(0, len(body) - 1))] = _json(spoilt)
        if draw(sometimes):
            body.append(_json(draw(rows(hostile=False)))[:draw(st.integers(1, 60))])
            return b"\n".join([*first, *body])  # a torn last line has no newline
    return b"\n".join([*first, *body]) + (b"" if draw(sometimes) else b"\n")


@FAST
@given(content=files())
def test_load_returns_or_raises_one_error(tmp_path, content):
    path = tmp_path / "f.jsonl"
    path.write_bytes(content)
    try:
        res = Results.load(path)
    except ResultsFileError as exc:
        assert str(exc).startswith(f"{path}:") and "\n" not in str(exc)
        return
    assert all(isinstance(r, dict) for r in res.rows) and isinstance(res.meta, dict)
    # What was read can be written and read back: the same rows, nothing added.
    again = Results.load(res.to_json(tmp_path / "again.jsonl"))
    assert len(again.rows) == len(res.rows)
    assert not (tmp_path / "again.jsonl.new").exists()


def _check_output(code: int, out: str, err: str) -> None:
    assert "Traceback" not in out + err, err
    assert code in (0, 2, 3), (code, err)
    # split("\n"), not splitlines(): a word echoed back may hold other line-breaking characters
    # (\x1e, \x85), which a terminal does not break on.
    said = [line for line in err.split("\n") if "error:" in line]
    if code == 2:
        assert len(said) == 1 and err.rstrip("\n").split("\n")[-1] == said[0], err
        assert said[0].startswith(("pyclperf: error: ", "pyclperf report: error: ",
                                   "pyclperf compare: error: ")), err
        assert len(said[0]) < 2000, "an error line should be read at a glance"
    else:
        assert not said, err


def _run(argv: list[str], capsys: Any) -> None:
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse: usage errors and --help
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    said = captured.err.rstrip("\n").split("\n")[-1]
    event(f"{argv[0]} exit {code}" + (" (usage)" if "usage:" in captured.err else "")
          + (" with a figure" if code == 0 and "data:image/png" in _page(argv) else "")
          + (": " + re.sub(r"/\S+", "PATH", said)[17:57] if code == 2 else ""))
    _check_output(code, captured.out, captured.err)


def _page(argv: list[str]) -> str:
    """The report page a report command line wrote, if any."""
    page = Path(argv[argv.index("--out") + 1]) / "report.html" if "--out" in argv[:-1] else None
    return page.read_text(encoding="utf-8") if page is not None and page.is_file() else ""


def _twin(content: bytes) -> bytes:
    """The same run on another device, half as fast: what compare is for."""
    out = []
    for line in content.split(b"\n"):
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            record = None
        if isinstance(record, dict) and record.get("record") == "meta":
            record["device"] = {"name": "Twin"}
            line = _json(record)
        elif isinstance(record, dict) and isinstance(record.get("gbps"), float):
            record["gbps"] /= 2
            line = _json(record)
        out.append(line)
    return b"\n".join(out)


@st.composite
def argvs(draw: Any, pool: list[str], writable: list[str]) -> list[str]:
    """Mostly well-formed command lines over the fuzzed files (so most reach loading, joining
    and drawing), some with a random word, an unknown option, --help or shuffled words."""
    command = draw(st.sampled_from(["report", "compare"]))
    least = 1 if command == "report" or draw(sometimes) else 2
    most = {"report": 3, "compare": 2}[command]
    words = draw(st.lists(st.sampled_from(pool), min_size=least, max_size=most))
    if command == "report":  # never the default ./report: that is the working directory's
        words += ["--out", draw(st.sampled_from(writable))]
    if draw(rarely):
        words.append(draw(st.text(st.characters(exclude_characters="-/\x00",
                                                exclude_categories=("Cs",)), max_size=6)))
    options = {"report": ["--out"], "compare": ["--metric", "--csv", "--force", "--force",
                                                "--fail-if-slower"]}[command]
    if draw(rarely):
        options += ["-h", "--bogus"]
    for option in draw(st.lists(st.sampled_from(options), max_size=3)):
        words.append(option)
        if option in ("--out", "--csv"):
            words.append(draw(st.sampled_from(writable)))
        elif option == "--metric":
            words.append(draw(st.sampled_from(["gbps", "median_ns", "error", "status", "offset",
                                               "times_ns", "config", "nope", ""])))
        elif option == "--fail-if-slower":
            words.append(draw(st.sampled_from(["10", "-5", "nan", "inf", "x", "0"])))
    if draw(rarely):
        words = draw(st.permutations(words))
    return [command, *words]


@SLOW
@given(data=st.data(), a=files(), b=files())
def test_report_and_compare_never_show_a_traceback(tmp_path, capsys, data, a, b):
    (tmp_path / "a.jsonl").write_bytes(a)
    (tmp_path / "b.jsonl").write_bytes(b)
    (tmp_path / "twin.jsonl").write_bytes(_twin(a))
    good = tmp_path / "good.jsonl"
    good.write_bytes(_json(META) + b"\n" + _json(ROW) + b"\n" + _json(dict(ROW, offset=1)) + b"\n")
    (tmp_path / "folder").mkdir(exist_ok=True)
    (tmp_path / "plain.txt").write_text("a file where a folder is wanted")
    # Mostly the fuzzed files and places that can be written, so most runs get past opening.
    pool = [str(tmp_path / n) for n in ("a.jsonl",) * 3 + ("twin.jsonl", "b.jsonl") * 2 + (
        "good.jsonl", "good.jsonl", "missing.jsonl", "folder")]
    writable = [str(tmp_path / n) for n in ("out",) * 4 + ("c.csv",) * 2 + (
        "plain.txt", "folder", "no/such/dir/x.csv")]
    shutil.rmtree(tmp_path / "out", ignore_errors=True)
    _run(data.draw(argvs(pool, writable)), capsys)


@pytest.mark.parametrize("argv, said", [
    (["report", "{bad}", "--out", "{tmp}/rep"], "bad.jsonl:2: a JSON array, not a pyclperf"),
    (["compare", "{good}", "{good}", "--metric", "status"], "metric 'status' is not numeric"),
])
def test_the_installed_command_refuses_in_one_line(tmp_path, argv, said):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(_json(META) + b"\n[1, 2, 3]\n")
    good = tmp_path / "good.jsonl"
    good.write_bytes(_json(META) + b"\n" + _json(ROW) + b"\n")
    names = {"bad": str(bad), "good": str(good), "tmp": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "pyclperf", *(w.format(**names) for w in argv)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("pyclperf: error: ") and done.stderr.count("\n") == 1
    assert said in done.stderr and "Traceback" not in done.stdout + done.stderr


def test_the_fuzzed_files_reach_past_the_first_line(tmp_path):
    """Some fuzzed files load with rows and a figure to draw: the fuzz tests do not pass by
    never getting past the first check."""
    path = tmp_path / "f.jsonl"

    def loads_with_rows(content: bytes) -> bool:
        path.write_bytes(content)
        try:
            res = Results.load(path)
        except ResultsFileError:
            return False
        return len(res.rows) >= 2 and (res.meta.get("plot") or {}).get("kind") in DRAWS

    found = find(files(), loads_with_rows,
                 settings=settings(max_examples=500, database=None, deadline=None))
    assert found.startswith(b"{")


def test_a_group_value_that_cannot_be_a_key_names_its_line(tmp_path, capsys):
    """A row whose ``mode`` (the line it belongs to) is a list, as a hand-edited or foreign file
    can hold: the report still draws its figure, that line named by the list's text (it was a
    pandas TypeError from the grouping, found by the test above)."""
    from pyclperf.measure.results import Results
    from pyclperf.views.plot import plot_modes

    path = tmp_path / "r.jsonl"
    rows = [dict(ROW, mode="a"), dict(ROW, offset=1, mode=["x", 1]),
            dict(ROW, offset=2, mode=["x", 1])]
    path.write_bytes(b"\n".join(_json(r) for r in [META, *rows]) + b"\n")
    argv = ["report", str(path), "--out", str(tmp_path / "out")]
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert "data:image/png" in _page(argv)
    fig = plot_modes(Results.load(path))
    assert sorted(t.get_text() for t in fig.axes[0].get_legend().get_texts()) == ["['x', 1]", "a"]
