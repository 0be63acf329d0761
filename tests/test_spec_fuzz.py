"""Fuzzing ``pyclperf tune --dry-run``: a valid spec with random keys replaced, removed or
added, and random option lists. Whatever comes in, the command either accepts it (exit 0) or
refuses it in one line (exit 2): never a traceback, never a second line."""

from __future__ import annotations

import copy
import json
import string
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyclperf import cli
from pyclperf.tuner import speccheck

DATA = Path(__file__).parent / "data" / "tune"
BASE = json.loads((DATA / "copy_spec.json").read_text())
# Derandomized: the same examples on every run, so CI cannot turn red by chance (about 15 s
# for both tests on a CPU core).
SETTINGS = settings(deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

# Words a spec holds, so mutations often land on something meaningful; no "/" in free text,
# so no output path reaches outside the test's folder.
WORDS = st.sampled_from(["float32", "int32", "uint8", "U4", "object", "f4,i4", "zeros", "random",
                         "arange", "copy", "npy", "src", "dst", "n", "block_size_x", "VEC",
                         "block_size_x * VEC", "VEC * (", "1/0", "brute_force", "bayes_opt",
                         "copy.cl", "spec.json", ".", "..", "/proc/x.jsonl", "", " ", "NaN"])
TEXT = st.text(alphabet=string.ascii_letters + string.digits + " ._-*()+<=", max_size=12)
NUMBERS = st.one_of(st.integers(-3, 70), st.integers(), st.sampled_from([2 ** 31, 2 ** 64, 2 ** 70, 10 ** 12]),
                    st.floats(allow_nan=True, allow_infinity=True), st.booleans())
# Numbers at the edges of what the keys take: of the types, of the schema's bounds, of JSON.
EDGES = st.sampled_from([0, -1, 1, 4.0, 2.5, 2 ** 31, 2 ** 32, 2 ** 63, 2 ** 64, 2 ** 70, 10 ** 12,
                         1e300, -1e300, float("nan"), float("inf"), float("-inf"), True])
SCALARS = st.one_of(NUMBERS, WORDS, TEXT, st.none())
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(WORDS, TEXT), inner, max_size=4)),
    max_leaves=8)


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path of the document."""
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, prefix + (i,))
    return out


KEYS = sorted({p[-1] for p in _paths(BASE) if isinstance(p[-1], str)})
SCHEMA = speccheck.schema()
# The keys each kind of object in a spec may hold, from the schema: setting one of them to an
# edge value reaches the checks behind the schema far more often than a blind replacement.
KNOWN = {"": list(SCHEMA["properties"]),
         "arguments": list(SCHEMA["$defs"]["argument"]["properties"]),
         "reference": list(SCHEMA["$defs"]["reference"]["properties"]),
         "strategy_options": list(SCHEMA["properties"]["strategy_options"]["properties"])}


def _containers(doc: Any) -> list[tuple[tuple, str]]:
    """(path, kind) of the objects in ``doc`` whose keys the schema lists."""
    if not isinstance(doc, dict):
        return []
    out: list[tuple[tuple, str]] = [((), "")]
    arguments = doc.get("arguments")
    for i, a in enumerate(arguments if isinstance(arguments, list) else []):
        if isinstance(a, dict):
            out.append((("arguments", i), "arguments"))
    for key in ("reference", "strategy_options"):
        if isinstance(doc.get(key), dict):
            out.append(((key,), key))
    return out


def _schema_of(kind: str, key: str) -> dict:
    where = {"": SCHEMA["properties"], "arguments": SCHEMA["$defs"]["argument"]["properties"],
             "reference": SCHEMA["$defs"]["reference"]["properties"],
             "strategy_options": SCHEMA["properties"]["strategy_options"]["properties"]}[kind]
    rule = where[key]
    while "$ref" in rule:
        rule = SCHEMA["$defs"][rule["$ref"].rsplit("/", 1)[1]]
    return rule


def _typed(kind: str, key: str) -> Any:
    """Values of the kind the key takes, at its edges, more often than anything else."""
    rule = _schema_of(kind, key)
    types = rule.get("type", [])
    if key == "value" or types in ("integer", "number") or "minimum" in rule:
        return st.one_of(EDGES, EDGES, VALUES)
    if types == "string" or key == "dtype":
        return st.one_of(WORDS, WORDS, TEXT, VALUES)
    if types == "array":
        return st.one_of(st.lists(st.one_of(EDGES, WORDS), max_size=3), VALUES)
    return VALUES


def _at(doc: Any, path: tuple) -> Any:
    for part in path:
        doc = doc[part]
    return doc


@st.composite
def mutated_specs(draw: Any) -> Any:
    doc: Any = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 2))):
        value = draw(st.one_of(EDGES, WORDS, VALUES))
        containers = _containers(doc)
        how = draw(st.sampled_from(["set", "set", "replace", "delete", "add"]))
        if how == "set" and containers:
            path, kind = draw(st.sampled_from(containers))
            key = draw(st.sampled_from(KNOWN[kind]))
            _at(doc, path)[key] = draw(_typed(kind, key))
            continue
        paths = [p for p in _paths(doc) if p != ("comment",)]
        if not paths:
            doc = value
            continue
        path = draw(st.sampled_from(paths))
        parent = _at(doc, path[:-1])
        if how == "delete":
            del parent[path[-1]]
        elif how == "add" and isinstance(parent, dict):
            parent[draw(st.one_of(st.sampled_from(KEYS), TEXT))] = value
        elif how == "add":
            parent.append(value)
        else:
            parent[path[-1]] = value
    return doc


OPTION_VALUES = st.one_of(WORDS, TEXT, st.sampled_from(["-1", "0", "1", "5", "nan", "inf",
                                                        "-inf", "1e400", "2e9", "0.5", "lots"]))
OPTIONS = st.lists(st.one_of(
    st.tuples(st.sampled_from(["--strategy", "--max-fevals", "--time-limit", "--timeout",
                               "--out", "--cache", "--top", "--device"]), OPTION_VALUES)
    .map(lambda kv: [f"{kv[0]}={kv[1]}"]),
    st.sampled_from([["--no-isolate"], ["--memcheck"], ["--bogus"], ["--max-fevals"], ["-x"]])),
    max_size=4).map(lambda groups: [a for g in groups for a in g])


def _dry_run(folder: Path, doc: Any, options: list[str], capsys: Any) -> None:
    (folder / "copy.cl").write_text((DATA / "copy.cl").read_text())
    spec = folder / "spec.json"
    spec.write_text(json.dumps(doc, allow_nan=True))
    capsys.readouterr()
    try:
        rc = cli.main(["tune", str(spec), "--dry-run", *options])
    except SystemExit as stop:  # argparse refuses before the command runs
        rc = int(stop.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if rc == 0:
        assert not err and "configs" in out, (doc, options, err)
    else:
        assert rc == 2, (rc, doc, options, err)
        assert err.startswith("pyclperf: error: ") and err.count("\n") == 1, (doc, options, err)


@settings(SETTINGS, max_examples=400)
@given(doc=mutated_specs())
def test_mutated_specs_are_accepted_or_refused_in_one_line(capsys, doc: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:
        _dry_run(Path(folder), doc, [], capsys)


@settings(SETTINGS, max_examples=150)
@given(options=OPTIONS)
def test_random_options_are_accepted_or_refused_in_one_line(capsys, options: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        _dry_run(Path(folder), BASE, options, capsys)
