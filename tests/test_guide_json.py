"""guide.json: written beside guide.html, checked against the shipped schema when written and
read, and compared between two devices or drivers by ``pyclperf compare``."""

from __future__ import annotations

import copy
import json
import os
import re

import pytest

from pyclperf import cli
from pyclperf.guide import run as guide
from pyclperf.guide import record as guide_json
from pyclperf.guide.run import Outcome
from pyclperf.measure.results import Results


def _offset(misaligned_gbps: float) -> Results:
    device = {"name": "Test GPU", "vendor": "Test", "driver_version": "1.0", "version": "OpenCL 3.0",
              "type": "GPU", "platform_name": "Test platform"}
    rows = [{"offset": 0, "gbps": 100.0, "median_ns": 40.0, "status": "ok"},
            {"offset": 1, "gbps": misaligned_gbps, "median_ns": 400.0, "status": "ok"},
            {"offset": 2, "gbps": None, "status": "wrong result"}]
    return Results({"experiment": "offset", "x": "offset", "device": device}, rows)


def _document(misaligned_gbps: float = 9.0, driver: str = "1.0") -> dict:
    outcomes = [Outcome("offset", "passed", 1.5, 0, "", _offset(misaligned_gbps)),
                Outcome("stride", "crashed", 0.2, -11, "Segmentation fault", None)]
    doc = guide_json.document(outcomes, quick=True, created="2026-01-01T00:00:00+00:00")
    doc["device"]["driver"] = driver
    return doc


def test_the_document_holds_runs_verdicts_and_the_scorecard(tmp_path):
    path = guide_json.write(_document(), tmp_path / "guide.json")
    data = guide_json.read(path)
    assert data["format"] == "pyclperf-guide" and data["version"] == 1 and data["quick"] is True
    assert data["device"] == {"name": "Test GPU", "vendor": "Test", "driver": "1.0",
                              "opencl": "OpenCL 3.0", "type": "GPU", "platform": "Test platform"}
    offset, stride = data["experiments"]
    assert (offset["verified"], offset["points"], offset["verdict"]) == (2, 3, "holds")
    assert offset["figures"] == {"best_gbps": 100.0, "best_median_ns": 40.0}
    assert stride["verdict"] == "not measured" and "crashed" in stride["reason"] and stride["figures"] == {}
    assert len(data["recommendations"]) == 16
    coalescing = next(r for r in data["recommendations"] if r["id"] == "A.2.4")
    assert coalescing["verdict"] == "holds" and "stride: not measured" in coalescing["reason"]


def _broken(change) -> dict:
    doc = copy.deepcopy(_document())
    change(doc)
    return doc


@pytest.mark.parametrize("change, words", [
    (lambda d: d.pop("recommendations"), "'recommendations' is a required property"),
    (lambda d: d["experiments"][0].update(verdict="maybe"), "experiments/0/verdict"),
    (lambda d: d["experiments"][1].update(reason=""), "experiments/1/reason"),
    (lambda d: d["recommendations"][0].update(priority="urgent"), "recommendations/0/priority"),
    (lambda d: d["recommendations"][0].update(reason=""), "recommendations/0/reason"),
    (lambda d: d.update(quick="yes"), "quick"),
    (lambda d: d.update(format="pyclperf-results"), "not a pyclperf guide file"),
    (lambda d: d.update(version=2), "version 2 was written by a newer pyclperf"),
    (lambda d: d["experiments"][0]["figures"].update(deep=[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]),
     "nested more than"),
])
def test_an_invalid_document_is_refused_when_written(tmp_path, change, words):
    with pytest.raises(guide_json.GuideFileError, match=re.escape(words)):
        guide_json.write(_broken(change), tmp_path / "guide.json")
    assert not (tmp_path / "guide.json").exists()


@pytest.mark.parametrize("content, words", [
    (b"", "not JSON"),
    (b"[1, 2]", "holds a JSON list, not an object"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b'{"format": "pyclperf-guide", "version": NaN}', "NaN is not a number JSON allows"),
    (b'{"format": "pyclperf-guide", "version": 1e999}', "out of range"),
    (b"[" * 100000 + b"]" * 100000, "nested too deeply"),
    (b'{"format": "pyclperf-guide", "version": 1}', "'pyclperf' is a required property"),
])
def test_a_hostile_file_is_refused_when_read_naming_it(tmp_path, content, words):
    path = tmp_path / "guide.json"
    path.write_bytes(content)
    with pytest.raises(guide_json.GuideFileError, match=re.escape(words)) as info:
        guide_json.read(path)
    assert str(info.value).startswith(str(path))


def test_an_oversized_file_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(guide_json, "MAX_BYTES", 100)
    path = guide_json.write(_document(), tmp_path / "guide.json")
    with pytest.raises(guide_json.GuideFileError, match="larger than"):
        guide_json.read(path)


def _pair(tmp_path, misaligned_b: float = 60.0):
    a = guide_json.write(_document(9.0, "1.0"), tmp_path / "a" / "guide.json")
    b = guide_json.write(_document(misaligned_b, "2.0"), tmp_path / "b" / "guide.json")
    return a, b


def test_compare_lists_exactly_the_differing_verdicts(tmp_path, capsys):
    a, b = _pair(tmp_path)  # offset: 0.09 (holds) on A, 0.6 (changed) on B
    assert cli.main(["compare", str(a), str(b), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    differing = {(r["kind"], r["id"], r["verdict_a"], r["verdict_b"]) for r in result["rows"] if r["differs"]}
    assert differing == {("experiment", "offset", "holds", "changed"),
                         ("recommendation", "A.2.4", "holds", "changed")}
    assert result["differing"] == 2 and len(result["rows"]) == 2 + 16
    assert "driver 1.0" in result["a"] and "driver 2.0" in result["b"]

    assert cli.main(["compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    flagged = [line.split()[1] for line in text.splitlines() if line.startswith("* ")]
    assert flagged == ["offset", "A.2.4"] and "2 of 18 verdicts differ" in text


def test_compare_of_identical_runs_flags_nothing_and_names_absent_ones(tmp_path, capsys):
    a, b = _pair(tmp_path, misaligned_b=9.0)
    assert cli.main(["compare", str(a), str(b), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["differing"] == 0
    doc = guide_json.read(b)
    doc["experiments"] = doc["experiments"][:1]
    guide_json.write(doc, b)
    assert cli.main(["compare", str(a), str(b), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["id"], r["verdict_b"]) for r in rows if r["differs"]] == [("stride", "absent")]


def test_a_guide_file_is_told_by_its_content_whatever_its_name(tmp_path, capsys):
    a, b = _pair(tmp_path)
    renamed = tmp_path / "b.txt"
    renamed.write_bytes(b.read_bytes())
    assert cli.main(["compare", str(a), str(renamed), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["differing"] == 2


@pytest.mark.parametrize("make_b, args, words", [
    (lambda p: p.write_text("{not json"), [], "not JSON"),
    (lambda p: p.write_text('{"format": "pyclperf-guide", "version": 7}'), [], "newer pyclperf"),
    (lambda p: p.write_text('{"format": "pyclperf-guide", "version": 1}'), ["--metric", "gbps"],
     "--metric applies to results files"),
])
def test_compare_refuses_a_bad_file_in_one_line(tmp_path, capsys, make_b, args, words):
    a, _ = _pair(tmp_path)
    bad = tmp_path / "bad.json"
    make_b(bad)
    assert cli.main(["compare", str(a), str(bad), *args]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    if not args:
        assert str(bad) in err


def test_compare_refuses_a_guide_file_beside_a_results_file(tmp_path, capsys):
    a, _ = _pair(tmp_path)
    results = _offset(9.0).to_json(tmp_path / "offset.jsonl")
    assert cli.main(["compare", str(a), str(results)]) == 2
    assert "cannot compare a guide.json with a results file" in capsys.readouterr().err
    assert cli.main(["compare", str(a)]) == 2
    assert "compare it with a second one" in capsys.readouterr().err


def test_compare_of_results_files_prints_json_rows_with_json(tmp_path, capsys):
    fast = _offset(9.0).to_json(tmp_path / "a.jsonl")
    slow = _offset(4.5).to_json(tmp_path / "b.jsonl")
    assert cli.main(["compare", str(fast), str(slow), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["offset"]: r["ratio B/A"] for r in rows if r["ratio B/A"] is not None} == {0: 1.0, 1: 0.5}


def _spec(ctx) -> str:
    return f"{ctx.info.platform_index}:{ctx.info.device_index}"


def test_quick_guide_on_the_cpu_device_writes_a_valid_guide_json(ctx, tmp_path, monkeypatch, capsys):
    if ctx.info.is_gpu:
        pytest.skip("the quick guide is the CPU device's test; run `pyclperf guide` on a GPU")
    monkeypatch.setenv(guide.ONLY_ENV, "offset,banks")
    out = tmp_path / "guide"
    assert cli.main(["guide", "--quick", "--device", _spec(ctx), "--out", str(out)]) in (0, 1)
    capsys.readouterr()
    data = guide_json.read(out / "guide.json")
    assert [e["experiment"] for e in data["experiments"]] == ["offset", "banks"]
    assert data["device"]["name"] == ctx.info.name and data["quick"] is True
    assert all(e["verdict"] for e in data["experiments"])
    assert len(data["recommendations"]) == 16
    page = (out / "guide.html").read_text()
    assert page.count("<tr class='scorecard-row'>") == 16
    assert page.index("id='scorecard'") < page.index("<h2>Summary</h2>")
    assert os.path.getsize(out / "guide.json") < 100_000
