"""A search over a pool of configurations held as an index matrix: the allowed set itself where
it can be listed, else a seeded random sample of it.

Model-guided searches score every candidate at every step, which needs the candidates as an
array: row r of ``X`` is a configuration's index vector (search.encoding), ``ids[r]`` its id in
the Space. ``pooled(program)`` turns a program over rows of such a pool into a program for
stepwise.Stepwise: it yields the ids of the rows the program asks for and sends back their
objectives.
"""

from __future__ import annotations

import contextlib
import random
from typing import Any, Callable, Generator

import numpy as np

from .stepwise import Program, Stepwise

# The model keeps (budget + 1) numbers per candidate: at most this many in all (64 MB), so a
# space whose allowed set is larger than that allows is searched over a seeded sample of it.
# (auto's exploring model keeps at most 51 more per candidate: as much again for a budget of 50
# or less, a fraction of it above.)
CELLS = 8_000_000
# A space too large to count is searched over a sample of this many allowed configurations.
SAMPLE = 8_000

_blas: Any = None


def one_blas_thread() -> Any:
    """A context in which BLAS runs on one thread (threadpoolctl's, where it is installed). A
    model's matrices here are a few hundred rows at most: BLAS's threads cost more than they
    give there, three times the time on a busy machine (the tuner's own work beside it)."""
    global _blas
    if _blas is None:
        try:
            import numpy.linalg  # noqa: F401  (BLAS loaded, so the controller finds it)
            import scipy.linalg  # noqa: F401
            from threadpoolctl import ThreadpoolController

            _blas = ThreadpoolController()
        except ImportError:
            _blas = False
    return contextlib.nullcontext() if _blas is False else _blas.limit(limits=1, user_api="blas")


RowProgram = Callable[[np.ndarray, np.ndarray, random.Random, int, list],
                      Generator[int, Any, None]]


def pool_size(count: int | None, budget: int) -> int:
    """How many configurations a pool for ``budget`` evaluations holds at most, of an allowed
    set of ``count`` (None: too large to count)."""
    most = max(1000, CELLS // (budget + 1))
    return min(count, most) if count is not None else min(most, SAMPLE)


def pool(s: Stepwise, rng: random.Random, budget: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids, X) of the configurations to search among: the allowed set, or a sample of it."""
    ids = s.space.allowed_ids
    most = pool_size(None if ids is None else len(ids), budget)
    if ids is not None and len(ids) <= most:
        chosen = np.fromiter(ids, dtype=np.int64, count=len(ids))
    else:
        walk = s.space.shuffled(rng)
        chosen = np.fromiter((i for _, i in zip(range(most), walk)), dtype=np.int64)
    return chosen, s.encoding.matrix(chosen)


def pooled(program: RowProgram, budget: int | None, drawn: Callable[[int], None] | None = None
           ) -> Callable[[Stepwise, random.Random], Program]:
    """A Stepwise program from ``program(X, sizes, rng, budget, levels)``, which yields rows of
    X (``levels``: each dimension's values in index order); ``drawn`` is told each pool's size
    as it is drawn."""

    def run(s: Stepwise, rng: random.Random) -> Program:
        plan = 1000 if budget is None else budget
        ids, X = pool(s, rng, plan)
        if drawn is not None:
            drawn(len(ids))
        if len(ids) == 0:
            return
        left = min(plan, len(ids))
        levels = [list(s.encoding.levels[k]) for k in s.encoding.dims]
        gen = program(X, s.encoding.sizes.copy(), rng, left, levels)
        try:
            with one_blas_thread():     # the program's work, not the caller's between asks
                row = next(gen)
            while True:
                value = yield int(ids[row])
                with one_blas_thread():
                    row = gen.send(value)
        except StopIteration:
            return
        finally:
            gen.close()

    return run
