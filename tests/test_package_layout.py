"""The package's layout: a few modules at the top, layers that import one way, no circles.

The layers, lowest first: the device (contexts, programs, clocks), the measuring core (points,
rows, timing, checks, results files), what a device should do (theory) and reference figures,
then the two clients of the measuring core (experiments, the tuner), the roofline built on
both, the views, the guide, and the command line (top-level modules, the package itself and
every package's ``cli`` module). A module may import only from its own package or a lower
layer, and no chain of imports may lead back to where it started. The imports are read from
the source, module level and inside functions alike (a lazy import is still a dependency),
not by importing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "pyclperf"

LAYERS = {"device": 0, "measure": 1, "theory": 2, "reference": 2, "experiments": 3, "tuner": 3,
          "roofline": 4, "views": 5, "guide": 6}
CLI_LAYER = 7
# Top-level modules that import nothing of pyclperf, so that every layer may take them.
LEAVES = {"pyclperf._version"}


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
    """(imported pyclperf module, at module level?) for every import statement of a module
    that runs: those under ``if TYPE_CHECKING:`` name types for a type checker and never run."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top_level = {id(node) for node in tree.body}
    typing_only = {id(inner) for node in ast.walk(tree)
                   if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                   for stmt in node.body for inner in ast.walk(stmt)}
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
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
    if name in LEAVES:
        return -1
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
            if target not in MODULES:
                continue
            same_package = name.split(".")[:2] == target.split(".")[:2] and _layer(name) != CLI_LAYER
            if same_package or _layer(target) < _layer(name):
                continue
            if _layer(name) == CLI_LAYER and _layer(target) <= CLI_LAYER:
                continue
            wrong.append(f"{name} -> {target}")
    assert not wrong, "imports against the layering:\n" + "\n".join(sorted(wrong))


def test_leaves_import_nothing_of_the_package() -> None:
    for name in LEAVES:
        assert _imports(name, MODULES[name]) == [], name


def _graph() -> dict[str, set[str]]:
    """Every module's imports of other modules of the package, lazy ones included."""
    return {name: {t for t, _ in _imports(name, path) if t in MODULES and t != name}
            for name, path in MODULES.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle of imports per group of modules that reach one another (a strongly connected
    component of the graph), as the path round it: empty where the graph has no circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def connect(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return [_path_round(graph, group) for group in groups]


def _path_round(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest circle through the group's first module, found breadth first."""
    start = min(group)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for nxt in sorted(graph[node] & group):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return path[::-1] + [start]  # start, ..., node, start
                if nxt not in came_from:
                    came_from[nxt] = node
                    nxt_frontier.append(nxt)
        frontier = nxt_frontier
    raise AssertionError(f"no circle through {start}")


def test_no_import_circle() -> None:
    circles = _circles(_graph())
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_the_circle_check_sees_a_lazy_circle(tmp_path: Path) -> None:
    """The check is able to fail: a circle is found, and an import inside a function counts."""
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert _circles({"a": {"b"}, "b": set()}) == []
    lazy = tmp_path / "results.py"
    lazy.write_text("def later():\n    from ..device import context\n")
    assert _imports("pyclperf.measure.results", lazy) == [("pyclperf.device.context", False)]


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
