"""tuner.t4: results in the T4 format, validated against Kernel Tuner's copy of the schemas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema", reason="validating against Kernel Tuner's schemas needs jsonschema")

from pyclperf.tuner.t4 import t4_metadata, t4_results, write_t4
from pyclperf.measure.results import Results

DATA = Path(__file__).parent / "data" / "kernel_tuner"


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def rows() -> list[dict]:
    base = {"compile_s": 0.2, "verify_s": 0.01, "benchmark_s": 0.05, "error": ""}
    return [
        {**base, "bx": 64, "vec": 1, "config": "a", "status": "ok", "verified": True,
         "time_ms": 0.5, "times_ns": [5e5, 5.2e5], "median_ns": 5.1e5, "min_ns": 5e5,
         "max_ns": 5.2e5, "spread_pct": 4.0, "GB/s": 300.0},
        {**base, "bx": 128, "vec": 1, "config": "b", "status": "timed", "verified": False,
         "time_ms": 0.4, "times_ns": [4e5], "median_ns": 4e5, "GB/s": 350.0},
        {**base, "bx": 256, "vec": 1, "config": "c", "status": "wrong result", "verified": False,
         "time_ms": None, "times_ns": [], "error": "3 of 1024 elements differ"},
        {**base, "bx": 256, "vec": 2, "config": "d", "status": "build failed",
         "error": "error: expected ';'"},
        {**base, "bx": 512, "vec": 2, "config": "e", "status": "skipped", "error": "restriction"},
        {**base, "bx": 512, "vec": 1, "config": "f", "status": "launch failed", "error": "oops"},
    ]


META = {"tune_params": {"bx": [64, 128, 256, 512], "vec": [1, 2]}, "metrics": ["GB/s"],
        "device": {"name": "Test GPU", "driver_version": "1.0"}}


def test_results_validate_and_classify() -> None:
    doc = t4_results(rows(), META)
    jsonschema.validate(doc, load("T4-results-schema-1.0.0.json"))
    res = doc["results"]
    assert [r["invalidity"] for r in res] == ["correct", "correct", "correctness", "compile",
                                              "constraints", "runtime"]
    assert [r["correctness"] for r in res] == [1, 1, 0, 1, 1, 1]
    assert res[0]["configuration"] == {"bx": 64, "vec": 1}
    assert res[0]["times"]["runtimes"] == [0.5, 0.52]
    assert res[0]["times"]["compilation_time"] == pytest.approx(200.0)
    m0 = {m["name"]: m for m in res[0]["measurements"]}
    assert m0["time"]["value"] == 0.5 and m0["time"]["unit"] == "ms"
    assert m0["GB/s"]["value"] == 300.0 and m0["verified"]["value"] == 1
    m1 = {m["name"]: m["value"] for m in res[1]["measurements"]}
    assert m1["verified"] == 0                           # timed is not verified, and says so
    m3 = {m["name"]: m["value"] for m in res[3]["measurements"]}
    assert "time" not in m3 and m3["error"] == "error: expected ';'"


def test_parameters_are_inferred_without_metadata() -> None:
    doc = t4_results(rows(), {"metrics": ["GB/s"]})
    assert doc["results"][0]["configuration"] == {"bx": 64, "vec": 1}


def test_metadata_validates() -> None:
    doc = t4_metadata(META)
    jsonschema.validate(doc, load("T4-metadata-schema-1.0.0.json"))
    assert doc["metadata"]["environment"]["device_query"]["name"] == "Test GPU"
    assert any(r.startswith("numpy==") for r in doc["metadata"]["environment"]["requirements"])


def test_write_t4(tmp_path: Path) -> None:
    res = Results(META, rows())
    out = write_t4(res, tmp_path / "t4.json", metadata_path=tmp_path / "meta.json")
    jsonschema.validate(json.loads(out.read_text()), load("T4-results-schema-1.0.0.json"))
    jsonschema.validate(json.loads((tmp_path / "meta.json").read_text()),
                        load("T4-metadata-schema-1.0.0.json"))
