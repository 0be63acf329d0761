"""tuner.spec and ``pyclperf tune``: a JSON spec parsed into tune() keywords (tune stubbed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pyclperf
from pyclperf import cli
from pyclperf.tuner.options import to_flat
from pyclperf.tuner.spec import SpecError, parse_spec
from pyclperf.measure.results import Results

DATA = Path(__file__).parent / "data" / "tune"


def test_example_spec_parses_into_tune_keywords() -> None:
    spec = parse_spec(DATA / "copy_spec.json")
    kw = spec.kwargs
    assert kw["source"] == (DATA / "copy.cl").read_text()
    assert kw["kernel_name"] == "copy" and kw["problem_size"] == 65536
    dst, src, n = kw["args"]
    assert dst.dtype == np.float32 and dst.shape == (65536,) and not dst.any()
    assert src.dtype == np.float32 and 0 <= src.min() and src.max() < 1 and src.std() > 0.2
    assert isinstance(n, np.int32) and n == 65536
    assert kw["params"] == {"block_size_x": [32, 64, 128, 256], "VEC": [1, 2, 4]}
    assert kw["restrictions"] == ["block_size_x * VEC <= 512"]
    assert kw["grid_div_x"] == ["block_size_x", "VEC"]
    assert kw["answer"][0] is not src and np.array_equal(kw["answer"][0], src)
    assert kw["answer"][1:] == [None, None]
    assert kw["inout"] == [0]
    assert kw["strategy"] == "random_sample" and kw["strategy_options"] == {"fraction": 0.5}
    assert kw["seed"] == 1
    assert kw["out"] == str(DATA / "copy_tune.jsonl") and kw["cache"] == str(DATA / "copy_cache.json")
    assert spec.t4 == DATA / "copy_t4.json"
    gbps = kw["metrics"]["GB/s"]
    assert gbps({"block_size_x": 64, "VEC": 1}, 1e-6) == pytest.approx(2 * 4 * 65536 / 1e-6 / 1e9)
    # 12 configs, of which block_size_x * VEC <= 512 allows all but 256 * 4.
    assert spec.space_size() == (12, 11)
    # Random fills are seeded: the same spec tunes on the same data.
    assert np.array_equal(parse_spec(DATA / "copy_spec.json").kwargs["args"][1], src)


def write(tmp_path: Path, **changes: Any) -> Path:
    spec = json.loads((DATA / "copy_spec.json").read_text())
    for k, v in changes.items():
        if v is None:
            spec.pop(k, None)
        else:
            spec[k] = v
    (tmp_path / "copy.cl").write_text((DATA / "copy.cl").read_text())
    p = tmp_path / "spec.json"
    p.write_text(json.dumps(spec))
    return p


@pytest.mark.parametrize("changes, message", [
    ({"kernal_name": "x"}, "unknown key 'kernal_name'"),
    ({"kernel_name": None}, "missing key 'kernel_name'"),
    ({"kernel_source": "nope.cl"}, "is not a file"),
    ({"problem_size": "big"}, "problem_size: must be a positive integer or a list of 1 to 3"),
    ({"tune_params": {"a": []}}, "tune_params.a: must hold at least 1 item, not 0"),
    ({"arguments": [{"dtype": "float32", "size": 4, "fill": "noise"}]},
     'arguments[0].fill: must be one of "random", "zeros", "ones", "arange", not "noise"'),
    ({"arguments": [{"dtype": "floaty", "size": 4}]}, "arguments[0].dtype: unknown dtype 'floaty'"),
    ({"arguments": [{"dtype": "float32"}]}, "arguments[0]: needs exactly one of"),
    ({"arguments": [{"dtype": "int32", "value": 3, "size": 2}]}, "arguments[0]: needs exactly one of"),
    ({"arguments": [{"dtype": "int32", "value": 3, "fill": "ones"}]}, "a scalar ('value') takes no 'fill'"),
    ({"arguments": [{"dtype": "int32", "valeu": 3}]}, "arguments[0]: unknown key 'valeu'"),
    ({"restrictions": ["block_size_x.bit_length() > 2"]}, "calling block_size_x.bit_length"),
    ({"restrictions": ["bsx > 2"]}, "unknown name 'bsx'"),
    ({"metrics": {"GB/s": "open('f')"}}, "metric 'GB/s'"),
    ({"reference": {"kind": "copy", "from": "src", "to": "nope"}},
     'reference.to: "nope" names no argument (arguments: dst, src, n)'),
    ({"reference": {"kind": "magic"}}, 'reference.kind: must be one of "copy", "npy", "expression", "matmul", not "magic"'),
    ({"strategy": "genetic"}, 'strategy: must be one of "auto", "brute_force", "random_sample",'),
    ({"max_fevals": "10"}, 'max_fevals: must be an integer, not "10"'),
    ({"time_limit": True}, "time_limit: must be a number, not true"),
    ({"grid_div_x": "block_size_x"}, 'grid_div_x: must be a list, not "block_size_x"'),
    ({"inout": ["nope"]}, 'inout[0]: "nope" names no argument'),
])
def test_spec_errors_are_one_clear_line(tmp_path: Path, changes: dict, message: str) -> None:
    with pytest.raises(SpecError) as e:
        parse_spec(write(tmp_path, **changes))
    assert message in str(e.value) and "\n" not in str(e.value)
    assert str(e.value).startswith("spec: ")


def test_local_memory_shapes_and_fills(tmp_path: Path) -> None:
    spec = parse_spec(write(tmp_path, reference=None, inout=None, arguments=[
        {"dtype": "int32", "shape": [4, 8], "fill": "arange"},
        {"dtype": "float64", "size": 3, "fill": "ones"},
        {"dtype": "uint8", "size": 100, "fill": "random"},
        {"local_nbytes": 1024}]))
    a, b, c, loc = spec.kwargs["args"]
    assert a.shape == (4, 8) and a[3, 7] == 31
    assert b.tolist() == [1.0, 1.0, 1.0]
    assert c.dtype == np.uint8 and c.max() < 100
    assert isinstance(loc, pyclperf.LocalMemory) and loc.nbytes == 1024
    assert "answer" not in spec.kwargs                     # no reference: rows stay "timed"


def test_npy_reference(tmp_path: Path) -> None:
    expected = np.arange(65536, dtype=np.float32)
    np.save(tmp_path / "expected.npy", expected)
    spec = parse_spec(write(tmp_path, reference={"kind": "npy", "arg": 0, "path": "expected.npy"}))
    assert np.array_equal(spec.kwargs["answer"][0], expected)


class StubTune:
    def __init__(self) -> None:
        self.kw: dict[str, Any] = {}

    def __call__(self, **kw: Any) -> Results:
        self.kw = to_flat(kw)           # the groups the command line filled, spread out again
        rows = [{"block_size_x": 64, "VEC": 2, "config": "a", "status": "ok", "time_ms": 0.01,
                 "spread_pct": 1.0, "GB/s": 52.4},
                {"block_size_x": 32, "VEC": 1, "config": "b", "status": "ok", "time_ms": 0.02,
                 "spread_pct": 2.0, "GB/s": 26.2},
                {"block_size_x": 256, "VEC": 4, "config": "c", "status": "skipped", "error": "r"}]
        return Results({"tune_params": kw["params"], "metrics": ["GB/s"]}, rows)


def test_cli_tune_runs_the_spec_and_prints_the_best(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    stub = StubTune()
    monkeypatch.setattr(pyclperf, "tune", stub)
    monkeypatch.setattr(pyclperf, "Context", lambda device: type(
        "Ctx", (), {"info": type("I", (), {"name": "Stub", "platform_name": "P"})()})())
    spec = write(tmp_path)
    assert cli.main(["tune", str(spec), "--max-fevals", "5", "--out", str(tmp_path / "o.jsonl")]) == 0
    assert stub.kw["max_fevals"] == 5 and str(stub.kw["out"]) == str(tmp_path / "o.jsonl")
    assert stub.kw["kernel_name"] == "copy" and "ctx" in stub.kw
    out = capsys.readouterr().out
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if "block_size_x" in line)
    assert lines[header].split()[:3] == ["block_size_x", "VEC", "status"]
    assert lines[header + 1].split()[:2] == ["64", "2"]            # fastest first
    assert "3 configs: 2 ok, 1 skipped" in out
    assert f"wrote {tmp_path / 'copy_t4.json'}" in out
    assert json.loads((tmp_path / "copy_t4.json").read_text())["schema_version"] == "1.0.0"


def test_cli_tune_dry_run_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["tune", str(write(tmp_path)), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "kernel_name = 'copy'" in out and "11 of 12 configs allowed" in out
    assert cli.main(["tune", str(write(tmp_path, strategy="nope"))]) == 2
    assert 'strategy: must be one of "auto", "brute_force"' in capsys.readouterr().err
