"""A searchspace.Space as the numeric box that general optimisers search.

Each parameter with more than one value becomes one dimension whose coordinate is the index of
the value: numeric values are sorted, so neighbouring indices are neighbouring block sizes or
tile factors (which behave alike, and which optimisers can then exploit); other values keep their
order. A point of the box (floats, as SciPy and nevergrad propose them) is rounded to the
nearest index in each dimension, which names one configuration of the product; whether the
restrictions allow it is the Space's question. Parameters with one value are carried along.
"""

from __future__ import annotations

import itertools
import random
from typing import Any, Iterator, Sequence

import numpy as np

from ..searchspace import Space, value_key


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
               for v in values)


class Encoding:
    """Index coordinates for the parameters of ``space`` that vary."""

    def __init__(self, space: Space) -> None:
        self.space = space
        self.levels: list[list[Any]] = []             # per parameter, its values in index order
        self.ordinal: list[bool] = []
        for k in range(len(space.names)):
            vals = space.present_values(k)
            numeric = _numeric(vals)
            self.levels.append(sorted(vals) if numeric else list(vals))
            self.ordinal.append(numeric)
        # The dimensions: parameters with a choice to make.
        self.dims = [k for k, lv in enumerate(self.levels) if len(lv) > 1]
        self.sizes = np.array([len(self.levels[k]) for k in self.dims], dtype=np.int64)
        self._fixed = {space.names[k]: lv[0] for k, lv in enumerate(self.levels) if len(lv) == 1}
        # value -> index, per dimension (searchspace.value_key: True is not 1 here); unhashable
        # values are compared in turn
        self._index: list[dict[Any, int] | None] = []
        for k in self.dims:
            try:
                self._index.append({value_key(v): j for j, v in enumerate(self.levels[k])})
            except TypeError:
                self._index.append(None)

    @property
    def ndim(self) -> int:
        return len(self.dims)

    def bounds(self) -> list[tuple[float, float]]:
        """Each dimension's box, [0, levels - 1]."""
        return [(0.0, float(n - 1)) for n in self.sizes]

    def snap(self, x: Sequence[float]) -> tuple[int, ...]:
        """The nearest index vector to a point of the box (NaN counts as 0)."""
        arr = np.nan_to_num(np.asarray(x, dtype=float), nan=0.0, posinf=0.0, neginf=0.0)
        return tuple(int(v) for v in np.clip(np.rint(arr), 0, self.sizes - 1))

    def config(self, idx: Sequence[int]) -> dict:
        """The configuration an index vector names (not checked against the restrictions)."""
        out = dict(self._fixed)
        for k, j in zip(self.dims, idx):
            out[self.space.names[k]] = self.levels[k][int(j)]
        return {n: out[n] for n in self.space.names}

    def id_of(self, idx: Sequence[int]) -> int | None:
        """The id of the allowed configuration an index vector names, None where the
        restrictions rule it out."""
        i = self.space.index(self.config(idx))
        if i is None or not self.space.allows_id(i):
            return None
        return i

    def indices(self, config: dict) -> tuple[int, ...]:
        """The index vector of a configuration of the space."""
        out = []
        for d, k in enumerate(self.dims):
            v = config[self.space.names[k]]
            table = self._index[d]
            if table is not None:
                out.append(table[value_key(v)])
            else:
                out.append(next(j for j, w in enumerate(self.levels[k])
                                if value_key(w) == value_key(v)))
        return tuple(out)

    def matrix(self, ids: np.ndarray) -> np.ndarray:
        """The index vectors of many configurations at once (one row each), from their ids:
        digit arithmetic over the product where the space numbers its product, else one by one."""
        ids = np.asarray(ids, dtype=np.int64)
        digits = getattr(self.space, "_digits", None)
        if digits is None or type(self.space).__name__ != "Space":
            rows = [self.indices(self.space.config(int(i))) for i in ids]
            return np.array(rows, dtype=np.int64).reshape(len(ids), self.ndim)
        out = np.empty((len(ids), self.ndim), dtype=np.int64)
        for col, k in enumerate(self.dims):
            stride, radix = digits[k]
            table = self._index[col]
            # product position -> level index (levels are sorted values; a value may repeat)
            # (-1 for a value no allowed configuration takes: no allowed id has it)
            to_level = np.array([table.get(value_key(v), -1) if table is not None else
                                 next((j for j, w in enumerate(self.levels[k])
                                       if value_key(w) == value_key(v)), -1)
                                 for v in self.space.values[k]], dtype=np.int64)
            out[:, col] = to_level[(ids // stride) % radix]
        return out

    def random_indices(self, rng: random.Random) -> tuple[int, ...]:
        return tuple(rng.randrange(int(n)) for n in self.sizes)

    def neighbours(self, idx: Sequence[int], method: str = "Hamming",
                   rng: random.Random | None = None) -> Iterator[tuple[int, ...]]:
        """Index vectors next to ``idx``, as Kernel Tuner's hill climbers define them:
        "Hamming", one parameter changed to any other value; "adjacent", one parameter moved
        one value up or down; "strictly-adjacent", any parameters moved one value each (at
        most 3^d - 1 of them). With ``rng``, in a random order."""
        idx = tuple(int(j) for j in idx)
        out: list[tuple[int, ...]] = []
        if method == "strictly-adjacent":
            steps = [(-1, 0, 1)] * self.ndim
            for delta in itertools.product(*steps):
                if any(delta):
                    cand = tuple(j + s for j, s in zip(idx, delta))
                    if all(0 <= c < n for c, n in zip(cand, self.sizes)):
                        out.append(cand)
        else:
            for d in range(self.ndim):
                if method == "Hamming":
                    choices = [j for j in range(int(self.sizes[d])) if j != idx[d]]
                elif method == "adjacent":
                    choices = [j for j in (idx[d] - 1, idx[d] + 1) if 0 <= j < self.sizes[d]]
                else:
                    raise ValueError(f"unknown neighbourhood {method!r}; choose Hamming, adjacent "
                                     "or strictly-adjacent")
                for j in choices:
                    out.append(idx[:d] + (j,) + idx[d + 1:])
        if rng is not None:
            rng.shuffle(out)
        return iter(out)
