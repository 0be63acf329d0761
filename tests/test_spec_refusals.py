"""Hostile ``pyclperf tune`` specs and options: every refusal is one line naming the key (or
the option), rc 2, no traceback; and ``--dry-run`` refuses exactly what the real run would."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import pyclperf
from pyclperf import cli
from pyclperf.tuner import speccheck
from pyclperf.tuner.spec import SpecError, parse_spec
from pyclperf.tuner.strategies import STRATEGIES

DATA = Path(__file__).parent / "data" / "tune"
BASE = json.loads((DATA / "copy_spec.json").read_text())
DST, SRC, N = BASE["arguments"]


def spec_file(folder: Path, doc: Any) -> Path:
    (folder / "copy.cl").write_text((DATA / "copy.cl").read_text())
    p = folder / "spec.json"
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def changed(**changes: Any) -> dict:
    doc = copy.deepcopy(BASE)
    doc.update(changes)
    for k in [k for k, v in changes.items() if v is None]:
        del doc[k]
    return doc


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        rc = cli.main(argv)
    except SystemExit as stop:  # argparse's own refusals
        rc = int(stop.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


def refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: Any,
            *options: str) -> str:
    """The one line both the dry run and the real run print, with rc 2."""
    path = str(spec_file(tmp_path, doc))
    lines = []
    for extra in (["--dry-run"], ["--no-isolate"]):
        rc, out, err = run_cli(["tune", path, *options, *extra], capsys)
        assert rc == 2 and "Traceback" not in err, (extra, err)
        assert len(err.splitlines()) == 1 and err.startswith("pyclperf: error: "), err
        lines.append(err.strip())
    assert lines[0] == lines[1]
    return lines[0]


HOSTILE = [
    ({"data_seed": "abc"}, 'spec: data_seed: must be an integer, not "abc"'),
    ({"data_seed": -1}, "spec: data_seed: must be at least 0, not -1"),
    ({"arguments": [DST, SRC, {"name": "n", "dtype": "int32", "value": 2 ** 70}]},
     "spec: arguments[2].value: 1180591620717411303424 does not fit int32 "
     "(-2147483648 to 2147483647)"),
    ({"arguments": [DST, SRC, {"name": "n", "dtype": "int32", "value": 1e300}]},
     "spec: arguments[2].value: 1e+300 does not fit int32"),
    ({"arguments": [DST, SRC, {"name": "n", "dtype": "int32", "value": 2.5}]},
     "spec: arguments[2].value: 2.5 is no integer, which a int32 holds"),
    ({"arguments": [DST, SRC, {"name": "n", "dtype": "float32", "value": 1e300}]},
     "spec: arguments[2].value: 1e+300 does not fit float32"),
    ({"arguments": [{**DST, "size": 10 ** 12}, SRC, N]},
     "spec: arguments[0].size: needs 3.6 TiB to make"),
    ({"arguments": [{"name": "dst", "dtype": "float32", "shape": [10 ** 6, 10 ** 6]}, SRC, N]},
     "spec: arguments[0].shape: needs 3.6 TiB to make"),
    ({"tune_params": {"block_size_x": [[32], 64], "VEC": [1]}},
     "spec: tune_params.block_size_x[0]: a parameter's value must be a number, a string or a "
     "boolean, not [32]"),
    ({"tune_params": {"block_size_x": [32], "VEC": [1], "status": [1]}},
     "spec: tune_params.status: 'status' is a field every row has"),
    ({"tune_params": {"block size": [32]}},
     'spec: tune_params: "block size" must be a name of letters, digits and underscores'),
    ({"arguments": [{**DST, "dtype": "object"}, SRC, N]},
     "spec: arguments[0].dtype: 'object' holds Python object pointers, not numbers"),
    ({"arguments": [{**DST, "dtype": "U4"}, SRC, N]},
     "spec: arguments[0].dtype: 'U4' holds unicode text, not numbers"),
    ({"arguments": [{**DST, "dtype": "f4,i4"}, SRC, N]},
     "spec: arguments[0].dtype: 'f4,i4' holds a structured type"),
    ({"arguments": [DST, {**SRC, "name": "dst"}, N]},
     "spec: arguments[1].name: 'dst' names argument 0 already"),
    ({"arguments": [DST, {**SRC, "size": 100}, N]},
     "spec: reference: 'from' ('src') has 100 elements and 'to' ('dst') 65536"),
    ({"strategy_options": {"fraction": "lots"}},
     'spec: strategy_options.fraction: must be a number, not "lots"'),
    ({"strategy_options": {"fraction": 1.5}},
     "spec: strategy_options.fraction: must be at most 1, not 1.5"),
    ({"strategy_options": {"n_startup_trials": 5}},
     "spec: strategy_options.n_startup_trials: strategy 'random_sample' has no option "
     "'n_startup_trials'"),
    ({"grid_div_x": ["block_size_x * nope"]},
     "spec: grid_div_x[0]: grid divisor 'block_size_x * nope': unknown name 'nope'"),
    ({"grid_div_y": [0]}, "spec: grid_div_y[0]: must be a parameter name, an expression string "
                          "or a positive integer, not 0"),
    ({"block_size_names": ["TS", "TS", "TS", "TS"]},
     "spec: block_size_names: must hold at most 3 items, not 4"),
    ({"problem_size": [64, 0]}, "spec: problem_size: must be a positive integer or a list of 1 "
                                "to 3 positive integers"),
    ({"timeout": 0}, "spec: timeout: must be more than 0, not 0"),
    ({"memory_limit": "lots"}, "spec: memory_limit: 'lots': give bytes (a number) or text such "
                               "as '512M', '2G' or '1.5GiB'"),
    ({"memory_limit": 4096}, "spec: memory_limit: 4096: a worker needs at least 64 MiB to start"),
    ({"memory_limit": [1]}, "spec: memory_limit: "),
    ({"seed": 2 ** 32}, "spec: seed: must be at most 4294967295, not 4294967296"),
    ({"iterations": 2 ** 40}, "spec: iterations: must be at most 2147483647"),
    ({"max_fevals": 5.0}, "spec: max_fevals: must be an integer, not 5.0"),
    ({"out": "copy.cl"}, "spec: out: "),
    ({"cache": "copy_tune.jsonl"}, "spec: cache: "),
    ({"reference": {"kind": "npy", "arg": "dst", "path": "missing.npy"}},
     "spec: reference.path: "),
    ({"reference": {"kind": "copy", "from": "src"}}, "spec: reference: missing key 'to'"),
    ({"reference": {"kind": "npy", "arg": 0, "path": "x.npy", "from": 1}},
     "spec: reference: kind 'npy' takes 'arg' and 'path' alone"),
    ({"arguments": [DST, SRC, {"local_nbytes": 64, "dtype": "float32"}]},
     "spec: arguments[2]: __local memory ('local_nbytes') takes no 'dtype' or 'fill'"),
]


@pytest.mark.parametrize("changes, line", HOSTILE)
def test_hostile_specs_are_one_line_naming_the_key(tmp_path: Path, capsys, changes: dict,
                                                  line: str) -> None:
    said = refused(tmp_path, capsys, changed(**changes))
    assert said.startswith("pyclperf: error: " + line) or line in said, said


@pytest.mark.parametrize("text, line", [
    ('{"kernel_source": "copy.cl", "data_seed": NaN}', "spec: data_seed: NaN is not a number"),
    ('{"kernel_source": "copy.cl", "timeout": Infinity}', "spec: timeout: Infinity is not"),
    ("[" * 100_000, "nests lists or objects too deeply"),
    ('{"seed": }', "is not valid JSON (Expecting value: line 1 column 10 (char 9))"),
    ("[1, 2]", "spec: must be an object, not [1, 2]"),
    ("\xff\xfe{}", "is not valid JSON"),
])
def test_unreadable_documents(tmp_path: Path, capsys, text: str, line: str) -> None:
    assert line in refused(tmp_path, capsys, text)


def test_outputs_must_be_writable_files(tmp_path: Path, capsys) -> None:
    (tmp_path / "folder").mkdir()
    said = refused(tmp_path, capsys, changed(out="folder"))
    assert said == (f"pyclperf: error: spec: out: '{tmp_path / 'folder'}' is a folder; name a "
                    f"file (e.g. '{tmp_path / 'folder' / 'results.jsonl'}')")
    # /proc takes no new files, for root too: the probe finds what permission bits cannot say.
    assert refused(tmp_path, capsys, changed(out="/proc/pyclperf.jsonl")) == (
        "pyclperf: error: spec: out: cannot write '/proc/pyclperf.jsonl': No such file or directory")
    (tmp_path / "plain").write_text("")
    assert "is a file, so nothing can be written under it" in refused(
        tmp_path, capsys, changed(t4="plain/t4.json"))
    # The command line's paths are checked the same way, and named as options.
    assert refused(tmp_path, capsys, changed(), "--out", str(tmp_path / "folder")).startswith(
        f"pyclperf: error: spec: --out: '{tmp_path / 'folder'}' is a folder")


@pytest.mark.parametrize("options, line", [
    (["--max-fevals", "-1"], "spec: --max-fevals: must be at least 0, not -1"),
    (["--timeout", "nan"], "spec: --timeout: NaN is not a number a spec may hold"),
    (["--timeout", "0"], "spec: --timeout: must be more than 0, not 0.0"),
    (["--memory-limit", "2X"], "spec: --memory-limit: '2X': give bytes (a number) or text"),
    (["--time-limit=-inf"], "spec: --time-limit: -Infinity is not a number"),
    (["--strategy", "genetic"], 'spec: --strategy: must be one of "auto", "brute_force"'),
    (["--max-fevals", "lots"], "tune: argument --max-fevals: invalid int value: 'lots'"),
    (["--top", "-3"], "tune: argument --top: must be 0 or more, not -3"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_command_line_options_are_checked_as_the_spec_is(tmp_path: Path, capsys,
                                                         options: list[str], line: str) -> None:
    assert line in refused(tmp_path, capsys, changed(), *options)


def test_the_dry_run_refuses_what_the_real_run_would(tmp_path: Path, capsys) -> None:
    # Things only the run used to find: a grid divisor expression, Optuna for bayes_opt.
    assert "spec: grid_div_x[1]: grid divisor 'VEC * (': not a Python expression" in refused(
        tmp_path, capsys, changed(grid_div_x=["block_size_x", "VEC * ("]))
    good = spec_file(tmp_path, changed())
    rc, out, err = run_cli(["tune", str(good), "--dry-run"], capsys)
    assert rc == 0 and not err and "11 of 12 configs allowed" in out and "verified: True" in out


def test_the_dry_run_makes_no_arrays(tmp_path: Path, monkeypatch) -> None:
    # 2 GiB of random floats would take seconds to make; the dry run only counts the bytes.
    doc = changed(arguments=[{**DST, "size": 1 << 29}, {**SRC, "size": 1 << 29, "fill": "ones"}, N])
    monkeypatch.setattr(speccheck, "available_memory", lambda: 64 << 30)
    spec = parse_spec(spec_file(tmp_path, doc), allocate=False)
    assert "args" not in spec.kwargs and spec.arg_names == ["dst", "src", "n"] and spec.verified
    monkeypatch.setattr(speccheck, "available_memory", lambda: 5 << 30)
    with pytest.raises(SpecError, match=r"^spec: reference: needs 2\.0 GiB to make, 6\.0 GiB "):
        parse_spec(spec_file(tmp_path, doc), allocate=False)


def test_the_schema_is_shipped_and_agrees_with_the_engine() -> None:
    from pyclperf.tuner import spec as spec_module

    schema = speccheck.schema()
    assert (Path(spec_module.__file__).parent / "spec.schema.json").is_file()
    assert schema["properties"]["strategy"]["enum"] == list(STRATEGIES)
    assert set(schema["properties"]["strategy_options"]["properties"]) == {
        "fraction", "n_startup_trials", "max_retries", "max_fevals", "time_limit"}
    # Every key tune() takes from a spec is one the schema knows.
    assert set(spec_module._PASSED) <= set(schema["properties"])


def test_a_refusal_from_the_real_run_is_one_line_too(tmp_path: Path, capsys, monkeypatch) -> None:
    def broken(**kw: Any) -> None:
        raise PermissionError(13, "Permission denied", "/somewhere/results.jsonl")

    monkeypatch.setattr(pyclperf, "tune", broken)
    rc, _, err = run_cli(["tune", str(spec_file(tmp_path, changed(out=None, cache=None)))], capsys)
    assert rc == 2 and err == ("pyclperf: error: [Errno 13] Permission denied: "
                               "'/somewhere/results.jsonl'\n")


def test_a_memory_limit_reaches_tune(tmp_path: Path) -> None:
    spec = parse_spec(spec_file(tmp_path, changed(memory_limit="1G")), allocate=False)
    assert spec.kwargs["memory_limit"] == "1G"
    spec = parse_spec(spec_file(tmp_path, changed()), {"memory_limit": "768M"}, allocate=False)
    assert spec.kwargs["memory_limit"] == "768M"
