"""A search over a pool of configurations held as an index matrix: the allowed set itself where
it can be listed, else a seeded random sample of it.

Model-guided searches score every candidate at every step, which needs the candidates as an
array: row r of ``X`` is a configuration's index vector (search.encoding), ``ids[r]`` its id in
the Space. ``pooled(program)`` turns a program over rows of such a pool into a program for
stepwise.Stepwise: it yields the ids of the rows the program asks for and sends back their
objectives.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Generator

import numpy as np

from .stepwise import Program, Stepwise

# Largest allowed set listed whole; a larger (or uncounted) space is searched over a sample.
POOL_LIMIT = 200_000
SAMPLE = 50_000

RowProgram = Callable[[np.ndarray, np.ndarray, random.Random, int], Generator[int, Any, None]]


def pool(s: Stepwise, rng: random.Random) -> tuple[np.ndarray, np.ndarray]:
    """(ids, X) of the configurations to search among."""
    ids = s.space.allowed_ids
    if ids is not None and len(ids) <= POOL_LIMIT:
        chosen = np.fromiter(ids, dtype=np.int64, count=len(ids))
    else:
        walk = s.space.shuffled(rng)
        chosen = np.fromiter((i for _, i in zip(range(SAMPLE), walk)), dtype=np.int64)
    enc = s.encoding
    X = np.array([enc.indices(s.space.config(int(i))) for i in chosen], dtype=np.int64)
    return chosen, X.reshape(len(chosen), enc.ndim)


def pooled(program: RowProgram, budget: int | None) -> Callable[[Stepwise, random.Random], Program]:
    """A Stepwise program from ``program(X, sizes, rng, budget)``, which yields rows of X."""

    def run(s: Stepwise, rng: random.Random) -> Program:
        ids, X = pool(s, rng)
        if len(ids) == 0:
            return
        left = len(ids) if budget is None else min(budget, len(ids))
        gen = program(X, s.encoding.sizes.copy(), rng, left)
        try:
            row = next(gen)
            while True:
                value = yield int(ids[row])
                row = gen.send(value)
        except StopIteration:
            return
        finally:
            gen.close()

    return run
