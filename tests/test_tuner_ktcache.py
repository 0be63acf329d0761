"""tuner.ktcache: Kernel Tuner's cache file, written incrementally, validated, read back."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

jsonschema = pytest.importorskip("jsonschema", reason="validating against Kernel Tuner's schemas needs jsonschema")

from pyclperf.tuner.ktcache import CacheWriter, cache_key, read_cache, rows_from_cache

DATA = Path(__file__).parent / "data" / "kernel_tuner"
TUNE_PARAMS = {"block_size_x": [64, 128, 256], "vec": ["float", "float4"]}


def schema() -> dict:
    return json.loads((DATA / "cache-schema-1.0.0.json").read_text())


def row(bx: int, vec: str, status: str = "ok", **extra: object) -> dict:
    timed = status in ("ok", "timed")
    r = {"block_size_x": bx, "vec": vec, "config": f"block_size_x={bx!r},vec={vec!r}",
         "status": status, "error": "" if timed else f"{status}: details",
         "verified": status == "ok", "time_ms": 0.5 * bx / 64 if timed else None,
         "times_ns": [5e5 * bx / 64, 5.1e5 * bx / 64] if timed else [],
         "compile_s": 0.25, "verify_s": 0.01 if timed else None, "benchmark_s": 0.1 if timed else None,
         "GB/s": 100.0 / bx if timed else None}
    r.update(extra)
    return r


def writer(path: Path, **kw: object) -> CacheWriter:
    args: dict = dict(device_name="Test GPU", kernel_name="copy", problem_size=(1024, 1),
                      tune_params=TUNE_PARAMS, metrics=["GB/s"])
    args.update(kw)
    return CacheWriter(path, **args)


ROWS = [row(64, "float"), row(128, "float4", "timed"), row(256, "float", "build failed"),
        row(256, "float4", "launch failed"), row(128, "float", "skipped"),
        row(64, "float4", "wrong result")]


def test_written_cache_validates_against_kernel_tuners_schema(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    with writer(path) as w:
        for r in ROWS:
            w.add(r)
    data = json.loads(path.read_text())                       # plain JSON once closed
    jsonschema.validate(data, schema(), format_checker=jsonschema.FormatChecker())
    assert data["tune_params_keys"] == ["block_size_x", "vec"]
    assert data["problem_size"] == [1024, 1]
    e = data["cache"]["64,float"]
    assert e["time"] == 0.5 and e["times"] == [0.5, 0.51] and e["compile_time"] == 250.0
    assert e["GB/s"] == pytest.approx(100 / 64)
    assert data["cache"]["256,float"]["time"] == "CompilationFailedConfig"
    assert data["cache"]["256,float4"]["time"] == "RuntimeFailedConfig"
    assert data["cache"]["128,float"]["time"] == "InvalidConfig"
    assert "GB/s" not in data["cache"]["256,float"]


def test_round_trip_keeps_statuses_and_times(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    with writer(path) as w:
        for r in ROWS:
            w.add(r)
    header, entries = read_cache(path)
    back = {(r["block_size_x"], r["vec"]): r for r in rows_from_cache(header, entries)}
    for r in ROWS:
        b = back[(r["block_size_x"], r["vec"])]
        assert b["status"] == r["status"] and b["config"] == r["config"]
        if r["time_ms"] is not None:
            assert b["time_ms"] == r["time_ms"]
            assert b["times_ns"] == pytest.approx(r["times_ns"])
            assert b["GB/s"] == pytest.approx(r["GB/s"])
        assert b["compile_s"] == pytest.approx(0.25)


def test_an_unclosed_or_torn_file_reads_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    w = writer(path)
    for r in ROWS[:3]:
        w.add(r)
    # No close(): as if the process died. The text is not JSON, yet both readers recover it.
    with pytest.raises(json.JSONDecodeError):
        json.loads(path.read_text())
    assert len(read_cache(path)[1]) == 3
    with open(path, "a") as f:                               # a crash in mid-line
        f.write('\n"128,float": {"block_size_x": 128, "vec": "fl')
    assert len(read_cache(path)[1]) == 3
    with writer(path) as w2:                                 # resume: keeps and extends
        assert {"block_size_x": 64, "vec": "float"} in w2
        assert {"block_size_x": 128, "vec": "float"} not in w2
        for r in ROWS[3:]:
            w2.add(r)
    data = json.loads(path.read_text())
    assert sorted(data["cache"]) == sorted(cache_key(r, ["block_size_x", "vec"]) for r in ROWS)
    jsonschema.validate(data, schema())


def test_layout_is_kernel_tuners_open_ended_form(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    w = writer(path)
    w.add(ROWS[0])
    text = path.read_text()
    # KT's reader closes a file whose stripped text does not end in "}\n}" by removing a trailing
    # comma and adding "}\n}"; do exactly that and it must parse.
    assert text.endswith(",") and not text.strip().endswith("}\n}")
    json.loads(text[:-1] + "}\n}")
    w.close()
    assert path.read_text().strip().endswith("}\n}")


def test_empty_cache_stays_open_like_kernel_tuners(tmp_path: Path) -> None:
    path = tmp_path / "new" / "folder" / "c.json"            # folders are made as needed
    writer(path).close()
    assert path.read_text().endswith('"cache": {')
    header, entries = read_cache(path)
    assert entries == {} and header["kernel_name"] == "copy"


def test_a_cache_of_another_run_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    with writer(path) as w:
        w.add(ROWS[0])
    with pytest.raises(ValueError, match="device_name"):
        writer(path, device_name="Other GPU")
    with pytest.raises(ValueError, match="tune_params_keys"):
        writer(path, tune_params={"vec": ["float"], "block_size_x": [64]})
    with pytest.raises(ValueError, match="problem_size"):
        writer(path, problem_size=2048)
    fresh = writer(path, device_name="Other GPU", resume=False)
    assert fresh.entries == {}
    fresh.close()


def test_numpy_values_are_written_as_plain_json(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    with writer(path, tune_params={"block_size_x": np.array([64, 128]), "vec": ["float"]}) as w:
        w.add(row(int(np.int64(64)), "float", time_ms=np.float64(0.5)))
    jsonschema.validate(json.loads(path.read_text()), schema())


def test_reads_kernel_tuners_own_test_cache() -> None:
    header, entries = read_cache(DATA / "test_cache_file.json")
    assert header["kernel_name"] == "vector_add" and len(entries) == 15
    rows = rows_from_cache(header, entries)
    assert {r["status"] for r in rows} == {"timed"}          # a KT cache proves no verification
    r128 = next(r for r in rows if r["block_size_x"] == 128)
    assert r128["time_ms"] == pytest.approx(0.04073600071881499)
    assert len(r128["times_ns"]) == 7 and r128["compile_s"] == pytest.approx(0.4409545585513115)


def test_reads_a_file_written_the_way_kernel_tuner_writes_it(tmp_path: Path) -> None:
    # Built by hand after KT's util.process_cache/store_cache: header dumped with indent="" and
    # its last three characters cut, entries appended as '\n"key": {...},' and never closed.
    header = {"device_name": "GPU", "kernel_name": "k", "problem_size": [4096],
              "tune_params_keys": ["bs", "t"], "tune_params": {"bs": [32, 64], "t": [1, 2]},
              "objective": "time", "cache": {}}
    text = json.dumps(header, indent="")[:-3]
    e1 = {"bs": 32, "t": 1, "time": 1.5, "times": [1.5, 1.6], "compile_time": 100.0,
          "verification_time": 0, "benchmark_time": 3.0, "strategy_time": 0,
          "framework_time": 0.1, "timestamp": "2024-01-01 00:00:00+00:00", "GFLOP/s": 12.0}
    e2 = {"bs": 64, "t": 1, "time": "CompilationFailedConfig", "compile_time": 50.0,
          "verification_time": 0, "benchmark_time": 0, "strategy_time": 0, "framework_time": 0,
          "timestamp": "2024-01-01 00:00:01+00:00"}
    e3 = {"bs": 64, "t": 2, "time": "InvalidConfig", "compile_time": 0, "verification_time": 0,
          "benchmark_time": 0, "strategy_time": 0, "framework_time": 0,
          "timestamp": "2024-01-01 00:00:02+00:00"}
    for k, e in (("32,1", e1), ("64,1", e2), ("64,2", e3)):
        text += "\n" + json.dumps({k: e})[1:-1] + ","
    path = tmp_path / "kt.json"
    path.write_text(text)
    h, entries = read_cache(path)
    closed = {**h, "cache": entries, "schema_version": "1.0.0"}
    jsonschema.validate(closed, schema())                    # our test input really is KT-shaped
    rows = {(r["bs"], r["t"]): r for r in rows_from_cache(h, entries)}
    assert rows[(32, 1)]["status"] == "timed" and rows[(32, 1)]["GFLOP/s"] == 12.0
    assert rows[(64, 1)]["status"] == "build failed" and rows[(64, 1)]["time_ms"] is None
    assert rows[(64, 2)]["status"] == "skipped"
    # Our writer resumes from it: the entries are kept, the header checked against ours.
    with CacheWriter(path, device_name="GPU", kernel_name="k", problem_size=4096,
                     tune_params={"bs": [32, 64], "t": [1, 2]}) as w:
        assert len(w.entries) == 3
    assert len(json.loads(path.read_text())["cache"]) == 3


def test_not_a_cache_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"results": []}')
    with pytest.raises(ValueError, match="not a Kernel Tuner cache"):
        read_cache(path)
    path.write_text("garbage")
    with pytest.raises(ValueError, match="not a Kernel Tuner cache"):
        read_cache(path)
