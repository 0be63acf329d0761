"""Damaged and hostile results files: Results.load refuses each with one ResultsFileError naming
the file, the line and what is wrong, and report, compare and tune's resume say so in one line
(exit 2), never a traceback. compare refuses rows it cannot pair: a missing field, a metric that
is not numeric, duplicate rows."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pyclperf import cli
from pyclperf.views.compare import compare
from pyclperf.measure.results import Results, ResultsFileError

META: dict[str, Any] = {
    "record": "meta", "schema": "pyclperf.results/1", "experiment": "offset", "title": "Offset",
    "x": "offset", "method": "events", "device": {"name": "Device A"},
    "versions": {"pyclperf": "0.1.0"}, "plot": {"kind": "bandwidth"},
}


def row(offset: int, gbps: float = 10.0, **more: Any) -> dict[str, Any]:
    return {"record": "row", "offset": offset, "status": "ok", "median_ns": 1000.0,
            "min_ns": 900.0, "max_ns": 1100.0, "bytes": 8192, "gbps": gbps, "error": "",
            "verified": True, **more}


def write(path: Path, *lines: Any) -> Path:
    """Each line as JSON, or as given where it is text or bytes already."""
    with open(path, "wb") as f:
        for line in lines:
            if isinstance(line, bytes):
                f.write(line + b"\n")
            elif isinstance(line, str):
                f.write(line.encode() + b"\n")
            else:
                f.write(json.dumps(line).encode() + b"\n")
    return path


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith("pyclperf: error: ") and "\n" not in err, err
    assert "Traceback" not in captured.out + captured.err
    return err


# (second line of the file, what the error must say); the first line is META.
HOSTILE = {
    "list": ([1, 2, 3], ":2: a JSON array, not a pyclperf results record"),
    "number": (42, ":2: a JSON number, not a pyclperf results record"),
    "string": ("\"row\"", ":2: a JSON string, not a pyclperf results record"),
    "config-dict": (row(0, config={"block_size_x": 64}),
                    ":2: row field 'config' must be a string, not object"),
    "deep": ("[" * 100_000 + "]" * 100_000, ":2: a value nested more than 32 levels deep"),
    "deep-object": ({"record": "row", "offset": 0, "v": json.loads("[" * 40 + "]" * 40)},
                    ":2: a value nested more than 32 levels deep"),
    "huge-gbps": (row(0, gbps=10**400), ":2: row field 'gbps' must be a number, not number 1000"),
    "gbps-text": (row(0, gbps="fast"), ":2: row field 'gbps' must be a number, not string \"fast\""),
    "times-text": (row(0, times_ns=[1, "x"]), ":2: row field 'times_ns' must be a list of numbers"),
    "status-number": (row(0, status=3), ":2: row field 'status' must be a string, not number 3"),
    "x-list": (row([1, 2]), ":2: row field 'offset' (the swept parameter) must be one value"),
    "second-meta": (META, ":2: a second metadata line"),
    "unknown-record": ({"record": "footer"}, ":2: not a pyclperf results line"),
    "end-unknown": ({"record": "end", "why": "x"}, ":2: end record field 'why' is unknown"),
    "end-not-bool": ({"record": "end", "interrupted": "yes"},
                     ":2: end record field 'interrupted' must be boolean"),
}
if hasattr(sys, "get_int_max_str_digits"):  # Pythons that refuse to convert such integers
    HOSTILE["huge-int"] = ("{\"record\": \"row\", \"offset\": " + "9" * 5000 + "}",
                           ":2: a value Python cannot read")
HOSTILE_META = {
    "device-string": ({**META, "device": "gpu"}, "metadata field 'device' must be object, not string"),
    "device-name": ({**META, "device": {"name": [1]}}, "metadata field 'device.name' must be string"),
    "versions-list": ({**META, "versions": []}, "metadata field 'versions' must be object"),
    "x-number": ({**META, "x": 3}, "metadata field 'x' must be string"),
    "warnings": ({**META, "load_warnings": [1]}, "'load_warnings' must be a list of strings"),
    "plot-kind": ({**META, "plot": {"kind": "pie"}}, "'plot.kind' must be one of"),
    "plot-arg": ({**META, "plot": {"kind": "bandwidth", "colour": "red"}},
                 "'plot' has 'colour', which a 'bandwidth' figure does not take"),
    "schema": ({**META, "schema": "other/2"}, "unknown results schema \"other/2\""),
    "row-first": (row(0), "a row record before the metadata line"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_line_is_one_error_naming_file_and_line(tmp_path, capsys, name):
    line, said = HOSTILE[name]
    path = write(tmp_path / f"{name}.jsonl", META, line, row(1))
    with pytest.raises(ResultsFileError) as caught:
        Results.load(path)
    assert str(caught.value).startswith(f"{path}:2: ") and said in str(caught.value)
    assert caught.value.path == path and caught.value.line == 2
    assert isinstance(caught.value, ValueError)
    for argv in (["report", str(path), "--out", str(tmp_path / "rep")],
                 ["compare", str(path), str(path)]):
        assert cli.main(argv) == 2
        assert one_error_line(capsys) == f"pyclperf: error: {caught.value}"


@pytest.mark.parametrize("name", sorted(HOSTILE_META))
def test_a_hostile_metadata_line_is_one_error(tmp_path, capsys, name):
    meta, said = HOSTILE_META[name]
    path = write(tmp_path / f"{name}.jsonl", meta, row(0))
    with pytest.raises(ResultsFileError, match="jsonl:1: ") as caught:
        Results.load(path)
    assert said in str(caught.value)
    assert cli.main(["report", str(path), "--out", str(tmp_path / "rep")]) == 2
    assert said in one_error_line(capsys)


@pytest.mark.parametrize("content", [b"", b"\n\n", b"\x89PNG\r\n\x1a\n\x00\x00", b"{\"record\": \"me"])
def test_a_file_without_metadata_is_one_error(tmp_path, capsys, content):
    path = tmp_path / "x.jsonl"
    path.write_bytes(content)
    with pytest.raises(ResultsFileError, match="x.jsonl: no metadata line"):
        Results.load(path)
    assert cli.main(["compare", str(path)]) == 2
    assert "no metadata line" in one_error_line(capsys)


def test_lines_that_are_not_json_are_skipped_and_named(tmp_path):
    path = write(tmp_path / "t.jsonl", META, row(0), b"\xff\xfe not text", "{\"record\": \"ro",
                 row(1))
    back = Results.load(path)
    assert [r["offset"] for r in back.rows] == [0, 1]
    first, second = back.meta["load_warnings"]
    assert first.startswith(f"{path}:3: torn line skipped (not UTF-8 text")
    assert second.startswith(f"{path}:4: torn line skipped")


def test_a_file_that_is_a_folder_or_missing_is_one_line(tmp_path, capsys):
    (tmp_path / "dir.jsonl").mkdir()
    for path in (tmp_path / "dir.jsonl", tmp_path / "missing.jsonl"):
        assert cli.main(["report", str(path), "--out", str(tmp_path / "rep")]) == 2
        assert str(path) in one_error_line(capsys)


def test_a_hostile_file_refuses_a_resume_in_one_line(ctx, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    (tmp_path / "k.cl").write_text("__kernel void k(__global float* y) { y[0] = 1.0f; }")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"kernel_source": "k.cl", "kernel_name": "k", "problem_size": 64,
                                "arguments": [{"name": "y", "dtype": "float32", "size": 64,
                                               "fill": "zeros"}],
                                "tune_params": {"block_size_x": [64]}}))
    out = write(tmp_path / "t.jsonl", {**META, "defining": {}}, [1, 2, 3])
    assert cli.main(["tune", str(spec), "--out", str(out), "--no-isolate"]) == 2
    assert one_error_line(capsys).endswith(f"{out}:2: a JSON array, not a pyclperf results "
                                           "record (an object)")


def _pair(tmp_path: Path, rows_b: list[Any], rows_a: list[Any] | None = None) -> list[str]:
    a = write(tmp_path / "a.jsonl", META, *(rows_a or [row(0), row(1), row(2)]))
    b = write(tmp_path / "b.jsonl", {**META, "device": {"name": "Device B"}}, *rows_b)
    return [str(a), str(b)]


def test_compare_of_good_files_still_works(tmp_path, capsys):
    files = _pair(tmp_path, [row(0, 20.0), row(1, 5.0), row(2, 10.0)])
    assert cli.main(["compare", *files]) == 0
    out = capsys.readouterr().out
    assert "ratio B/A" in out and "2.000" in out and "0.500" in out
    table = compare(Results.load(files[0]), Results.load(files[1]))
    assert list(table["ratio B/A"]) == [2.0, 0.5, 1.0]


@pytest.mark.parametrize("rows_b, said", [
    ([{"record": "row", "gbps": 1.0, "status": "ok"}], "B ({b}) has no 'offset' field in any row"),
    ([row(0), {"record": "row", "gbps": 1.0, "status": "ok"}],
     "B ({b}): 1 of 2 rows have no 'offset' field"),
    ([{"record": "row", "offset": 0, "gbps": 1.0}], "B ({b}) has no 'status' field in any row"),
    ([row(0), row(1, status=None)], "B ({b}): 1 of 2 rows have no 'status' field"),
    ([{"record": "row", "offset": 0, "status": "ok"}],
     "neither 'gbps' nor 'median_ns' is in both results; choose the column to compare with --metric"),
    ([], "B ({b}) has no rows to compare"),
    # Rows that differ (rows equal in every field are counted once by Results.load).
    ([row(0), row(1), row(1, 3.0), row(2), row(2, 5.0)],
     "B ({b}) has 2 duplicate rows (more than one row for the same offset, e.g. offset=1); "
     "compare needs one row per point"),
])
def test_compare_refuses_rows_it_cannot_pair(tmp_path, capsys, rows_b, said):
    files = _pair(tmp_path, rows_b)
    # --force: without it, a B that lacks some swept values is refused for that first.
    assert cli.main(["compare", *files, "--force"]) == 2
    assert one_error_line(capsys) == "pyclperf: error: " + said.format(b=files[1])


@pytest.mark.parametrize("metric, said", [
    ("error", "metric 'error' is not numeric in A ({a}): 3 rows hold values such as ''"),
    ("status", "metric 'status' is not numeric in A ({a}): 3 rows hold values such as 'ok'"),
    ("verified", "metric 'verified' is not numeric in A ({a}): 3 rows hold values such as True"),
    ("offset", "metric 'offset' is a parameter the rows are joined on"),
    ("nothing", "metric 'nothing' is not in both results"),
])
def test_compare_refuses_a_metric_that_is_not_a_measurement(tmp_path, capsys, metric, said):
    files = _pair(tmp_path, [row(0), row(1), row(2)])
    assert cli.main(["compare", *files, "--metric", metric]) == 2
    assert one_error_line(capsys).startswith("pyclperf: error: " + said.format(a=files[0]))


def test_compare_takes_a_metric_that_is_null_where_a_row_was_not_timed(tmp_path, capsys):
    files = _pair(tmp_path, [row(0, None, status="wrong result"), row(1, 5.0), row(2, 10.0)])
    assert cli.main(["compare", *files]) == 0
    assert "0.500" in capsys.readouterr().out


def test_fleet_compare_refuses_a_text_metric(tmp_path, capsys):
    fleet = write(tmp_path / "f.jsonl", {**META, "fleet": True},
                  row(0, device="0:0"), row(0, device="0:1"))
    assert cli.main(["compare", str(fleet), "--metric", "error"]) == 2
    assert "metric 'error' is not numeric in the fleet run" in one_error_line(capsys)
    assert cli.main(["compare", str(fleet)]) == 0


def test_every_experiments_own_figure_and_metadata_are_accepted():
    """The checks refuse what no pyclperf run writes: each experiment's own plot spec passes."""
    from pyclperf.experiments import catalogue
    from pyclperf.measure.validate import SCHEMA, check_meta

    for cls in catalogue():
        meta = {"schema": SCHEMA, "experiment": cls.id, "title": cls.title, "x": cls.x,
                "plot": cls.plot, "device": {"name": "D"}, "versions": {"pyclperf": "0"}}
        assert check_meta(dict(meta))["plot"] == cls.plot, cls.id


def test_compare_joins_on_every_parameter_a_run_sweeps(tmp_path, capsys):
    """Bandwidth-like rows, several per swept value (a line per mode, a dot per work-group
    size): each is paired with its own point of the other run, never with every row that
    shares its swept value."""
    meta = {**META, "experiment": "bandwidth", "x": "work_items",
            "plot": {"kind": "lines", "y": "gbps", "ylabel": "GB/s", "group": "mode"}}
    points = [(w, m, ls) for w in (1024, 2048) for m in ("read", "write") for ls in (64, 128)]
    rows_a = [{**row(0), "work_items": w, "mode": m, "local_size": ls, "gbps": float(i + 1)}
              for i, (w, m, ls) in enumerate(points)]
    factor = [0.5 + 0.25 * i for i in range(len(points))]
    rows_b = [{**r, "gbps": r["gbps"] * f} for r, f in zip(rows_a, factor)]
    for r in rows_a + rows_b:
        del r["offset"]
    a = write(tmp_path / "a.jsonl", meta, *rows_a)
    b = write(tmp_path / "b.jsonl", {**meta, "device": {"name": "Device B"}}, *rows_b)
    table = compare(Results.load(a), Results.load(b))
    assert len(table) == len(points)
    got = {(r["work_items"], r["mode"], r["local_size"]): r["ratio B/A"] for _, r in table.iterrows()}
    assert got == pytest.approx({p: f for p, f in zip(points, factor)})
    # Held fixed, the work-group size is no key: runs of two fixed sizes pair point by point.
    c = write(tmp_path / "c.jsonl", {**META, "local_size": 64}, row(0, local_size=64), row(1, local_size=64))
    d = write(tmp_path / "d.jsonl", {**META, "local_size": 32, "device": {"name": "Device B"}},
              row(0, 20.0, local_size=32), row(1, 5.0, local_size=32))
    assert cli.main(["compare", str(c), str(d), "--force"]) == 0
    assert "2.000" in capsys.readouterr().out


def test_compare_of_a_file_whose_figure_groups_by_status(tmp_path):
    """Found by the fuzz test on another pandas: a figure grouped by 'status' made status a join
    key, and the join then asked for a column it had renamed (KeyError: 'status')."""
    from pyclperf import cli

    meta = {"record": "meta", "schema": "pyclperf.results/1", "experiment": "offset",
            "title": "Offset", "x": "offset", "method": "events", "device": {"name": "A"},
            "versions": {"pyclperf": "0.1.0"},
            "plot": {"kind": "lines", "y": "gbps", "ylabel": "GB/s", "group": "status"}}
    rows = [{"record": "row", "offset": o, "status": s, "median_ns": 1.0, "min_ns": 1.0,
             "max_ns": 1.0, "bytes": 8, "gbps": g, "error": "", "verified": True}
            for o, s, g in ((1, "ok", None), (0, "ok", 1.0), (0, "timed", 1.0))]
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [meta, *rows]) + "\n")
    assert cli.main(["compare", str(path), str(path)]) == 0
