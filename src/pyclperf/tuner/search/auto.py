"""strategy="auto": brute force where the space fits the budget, else a model-guided search."""

from __future__ import annotations

from typing import Any, Mapping

from ..searchspace import Space
from .base import BruteForce


def make(space: Space, seed: int | None, opts: Mapping[str, Any], max_fevals: int | None,
         objectives: int) -> Any:
    count = space.allowed_count
    if objectives == 1 and count is not None and (max_fevals is None or max_fevals >= count):
        s = BruteForce(space)
        s.algorithm = "auto: every configuration (the space fits the budget)"
        return s
    from . import optuna_family
    s = optuna_family.make("tpe" if objectives == 1 else "nsga2", space, seed, {}, objectives)
    s.algorithm = f"auto: {s.algorithm}"
    return s
