"""The package's layout: a few modules at the top, layers that import one way, no cycles.

The layers, lowest first: the device (contexts, programs, clocks), the measuring core (points,
rows, timing, checks, results files), what a device should do (theory) and reference figures,
then the two clients of the measuring core (experiments, the tuner), the roofline built on
both, the views, the guide, and the command line (top-level modules and every package's
``cli`` module). A module may import only from its own package or a lower layer; the imports
are read from the source (module level and inside functions alike), not by importing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "pyclperf"

LAYERS = {"device": 0, "measure": 1, "theory": 2, "reference": 2, "experiments": 3, "tuner": 3,
          "roofline": 4, "views": 5, "guide": 6}
CLI_LAYER = 7

# Imports against the layering, each kept on purpose: a convenience method of the public API
# that reaches a higher layer only when called.
ALLOWED_UPWARD = {
    ("pyclperf.measure.results", "pyclperf.roofline.explaining"):
        "Results.explain() is the roofline's explain on these results",
    ("pyclperf.measure.validate", "pyclperf.views.plot"):
        "a results file names the plot that draws it; its arguments are checked against it",
    ("pyclperf.guide.worker", "pyclperf.cli"):
        "the guide's shared worker process runs `pyclperf run` command lines one after another",
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> list[tuple[str, bool]]:
    """(imported pyclperf module, at module level?) for every import statement of a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top_level = {id(node) for node in tree.body}
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.append((full if full in MODULES or full == "pyclperf._core" else base, id(node) in top_level))
        elif isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top_level) for alias in node.names]
    return [(target, top) for target, top in found if target.startswith("pyclperf") and target != "pyclperf._core"]


def _layer(name: str) -> int:
    parts = name.split(".")
    if len(parts) == 2 and parts[1] in LAYERS:
        return LAYERS[parts[1]]  # a package's __init__
    if len(parts) < 3 or parts[-1] in ("cli", "__main__"):
        return CLI_LAYER  # the top-level modules and the packages' own command lines
    return LAYERS[parts[1]]


def test_the_top_level_is_small() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 12, top
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(LAYERS), packages  # a new package gets its place in LAYERS


def test_no_file_is_too_long_to_read() -> None:
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert not long, long


def test_layers_import_one_way() -> None:
    wrong = []
    for name, path in MODULES.items():
        for target, _ in _imports(name, path):
            if target not in MODULES or target == "pyclperf":
                continue
            same_package = name.split(".")[:2] == target.split(".")[:2] and _layer(name) != CLI_LAYER
            if same_package or _layer(target) < _layer(name) or (name, target) in ALLOWED_UPWARD:
                continue
            if _layer(name) == CLI_LAYER and _layer(target) <= CLI_LAYER:
                continue
            wrong.append(f"{name} -> {target}")
    assert not wrong, "imports against the layering:\n" + "\n".join(sorted(wrong))


def test_no_import_cycle_at_module_level() -> None:
    graph = {name: {t for t, top in _imports(name, path) if top and t in MODULES and t != name}
             for name, path in MODULES.items()}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node, [])
    assert not cycles, [" -> ".join(c) for c in cycles]


@pytest.mark.parametrize("layer_break", [("pyclperf.device.context", "pyclperf.tuner.spec")])
def test_the_layer_check_sees_a_break(layer_break: tuple[str, str], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The check is able to fail: a device-layer module importing the tuner is reported."""
    name, target = layer_break
    fake = tmp_path / "context.py"
    fake.write_text(f"from ..{'.'.join(target.split('.')[1:-1])} import {target.split('.')[-1]}\n")
    imports = _imports(name, fake)
    assert imports == [(target, True)]
    assert _layer(target) > _layer(name)
