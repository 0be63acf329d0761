"""_core.pyi says what the compiled module has: every public name of pyclperf._core is in the
stub with the same kind, every stubbed name exists, and every stubbed class lists the methods
and properties the class has (the stub is written by hand beside the bindings; this keeps it
honest)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from pyclperf import _core

STUB = Path(_core.__file__).with_name("_core.pyi")
if not STUB.is_file():  # a source checkout whose _core.so comes from elsewhere
    STUB = Path(__file__).parent.parent / "src" / "pyclperf" / "_core.pyi"


def _stub() -> tuple[set[str], dict[str, set[str]]]:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    names, members = set(), {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
            members[node.name] = {n.name for n in node.body
                                  if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            members[node.name] |= {n.target.id for n in node.body  # class attributes
                                   if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
        elif isinstance(node, ast.FunctionDef):
            names.add(node.name)
    return names, members


def _public(obj: object) -> set[str]:
    return {n for n in dir(obj) if not n.startswith("_")}


def test_every_binding_is_in_the_stub_and_nothing_else():
    names, _ = _stub()
    module = {n for n in _public(_core) if callable(getattr(_core, n))}
    assert module - names == set(), "bound but not in _core.pyi"
    assert names - module == set(), "in _core.pyi but not bound"


def test_every_class_lists_its_own_members():
    _, members = _stub()
    for cls_name, stubbed in members.items():
        cls = getattr(_core, cls_name)
        own = {n for n, v in vars(cls).items() if not n.startswith("_")}
        if issubclass(cls, BaseException):
            continue  # Python-made exception types: their attributes are set per instance
        missing = own - stubbed
        extra = {n for n in stubbed - own if not n.startswith("_")
                 and not any(n in vars(base) for base in inspect.getmro(cls)[1:])}
        assert not missing, f"{cls_name}: bound but not in the stub: {sorted(missing)}"
        assert not extra, f"{cls_name}: in the stub but not bound: {sorted(extra)}"
