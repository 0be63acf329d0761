"""The launch shape that reaches a ceiling, found by measuring, not assumed.

How fast a kernel streams memory or issues multiply-adds depends on its launch shape as much as
on the device: the vector width, the elements each work-item handles, the work-group size, and
how many work-groups each compute unit gets. A GPU wants one narrow element per work-item over a
huge range; a CPU device wants wide vectors and long runs per work-item, and reaches a fifth of
its bandwidth the GPU's way. So every ceiling is the best over the shapes that can reach it:

1. ``descend`` starts from the shape that led on devices of the kind and changes one axis at a
   time (every value of the first axis, the best kept; then the next axis), each shape timed
   briefly and unverified (``probe``: its fastest launch). Axes are ordered by how much they
   matter, so a few shapes per axis find the best without trying every combination.
2. ``settle`` verifies the fastest shape and times it again for longer (the figure); a shape
   whose result is wrong is recorded as such and the next fastest is tried.

The figure records the shape that won (``shape``) and every shape tried with its rate
(``shapes_tried``), so a reader can see how far the others were.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from .record import Figure, guarded, missing, usable

Shape = dict  # axis name -> value, e.g. {"vector": 16, "items": 64, "local_size": 64}
MAX_SETTLED = 3  # shapes verified at most, fastest first, before the ceiling is given up


def label(shape: Mapping[str, Any]) -> str:
    """A shape as text: ``vector=16, items=64``."""
    return ", ".join(f"{k}={v}" for k, v in shape.items())


def descend(start: Shape, axes: Mapping[str, Sequence[Any]],
            probe: Callable[[Shape], float | None]) -> tuple[Shape, dict[str, float | None]]:
    """The fastest shape found from ``start`` by one axis at a time (step 1 of the module
    docstring), and the rate of every shape tried by label (None: it could not run)."""
    tried: dict[str, float | None] = {}

    def rate(shape: Shape) -> float | None:
        key = label(shape)
        if key not in tried:
            tried[key] = probe(shape)
        return tried[key]

    best = dict(start)
    best_rate = rate(best)
    for axis, values in axes.items():
        for value in values:
            shape = {**best, axis: value}
            r = rate(shape)
            if r is not None and (best_rate is None or r > best_rate):
                best, best_rate = shape, r
    return best, tried


def settle(tried: Mapping[str, float | None], shapes: Mapping[str, Shape],
           final: Callable[[Shape], Figure], unit: str, how: str) -> Figure:
    """The figure of the fastest shape that verifies (step 2 of the module docstring), with the
    winning ``shape`` and ``shapes_tried``; the first failure where none does."""
    ranked = sorted((k for k, r in tried.items() if r is not None), key=lambda k: -tried[k])  # type: ignore[operator]
    first: Figure | None = None
    for key in ranked[:MAX_SETTLED]:
        fig = guarded(unit, how, lambda: final(shapes[key]))
        if usable(fig):
            return {**fig, "shape": dict(shapes[key]), "shapes_tried": dict(tried)}
        first = first or fig
    if first is not None:
        return {**first, "shapes_tried": dict(tried)}
    return missing(unit, how, "no launch shape ran: " + ("; ".join(tried) or "none tried"), "failed")


def best_shape(start: Shape, axes: Mapping[str, Sequence[Any]], probe: Callable[[Shape], float | None],
               final: Callable[[Shape], Figure], unit: str, how: str) -> Figure:
    """``descend`` then ``settle``: a ceiling at the fastest launch shape found."""
    shapes: dict[str, Shape] = {}

    def remembered(shape: Shape) -> float | None:
        shapes[label(shape)] = dict(shape)
        return probe(shape)

    _, tried = descend(start, axes, remembered)
    return settle(tried, shapes, final, unit, how)


def refused(probe: Callable[[Shape], float | None]) -> Callable[[Shape], float | None]:
    """``probe`` with a shape the driver refuses (a build or launch error) rated None."""
    from .. import _core

    def safe(shape: Shape) -> float | None:
        try:
            return probe(shape)
        except (_core.ClError, _core.InvalidArgumentError, MemoryError):
            return None

    return safe


__all__ = ["MAX_SETTLED", "Shape", "best_shape", "descend", "label", "refused", "settle"]
