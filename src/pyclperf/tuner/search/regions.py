"""The regions a step of strategy="auto" narrows its candidates to before the model ranks them
(search/auto.py): the Hamming balls around good configurations, the configurations that keep
what the best ones share, and the setting of the two-valued parameters tried least."""

from __future__ import annotations

from typing import Sequence

import numpy as np

# A niche leader is at least this many parameters from every better one.
NICHE_DISTANCE = 2


def niche_leaders(X: np.ndarray, seen: np.ndarray, order: np.ndarray, most: int,
                  within: float = np.inf, y: np.ndarray | None = None) -> list[int]:
    """The best evaluated row, then in order of objective (``order``: positions in ``seen``,
    best first) each one at least NICHE_DISTANCE parameters from every one already taken, up to
    ``most`` rows; with ``y``, only those whose objective is at most ``within``."""
    leaders = [int(seen[order[0]])]
    for j in order[1:]:
        if len(leaders) >= most or (y is not None and y[j] > within):
            break
        if min((X[seen[j]] != X[c]).sum() for c in leaders) >= NICHE_DISTANCE:
            leaders.append(int(seen[j]))
    return leaders


def balls(X: np.ndarray, cand: np.ndarray, centres: Sequence[int]) -> np.ndarray:
    """The rows of ``cand`` (a mask) in the union of each centre's smallest Hamming ball (radius
    1, 2, ...) that holds any of them: for each centre, the candidates nearest it. (Distances
    are summed one parameter at a time over every row, then masked: almost every row is a
    candidate, and a gathered copy of them, or a sum along each row's few parameters, cost more
    than the comparisons: three to twelve times, on a pool of 18k rows of 10.)"""
    N, D = X.shape
    near = np.zeros(N, dtype=bool)
    if cand.any():
        for centre in centres:
            distance = np.zeros(N, dtype=np.int16)
            for d in range(D):
                distance += X[:, d] != X[centre, d]
            distance[~cand] = D + 1
            near |= distance == distance.min()
    return near


def agreeing(X: np.ndarray, elite: Sequence[int]) -> np.ndarray:
    """The rows of ``X`` that keep every value the ``elite`` rows all share (every row where
    they share none)."""
    E = X[np.asarray(elite)]
    near = np.ones(len(X), dtype=bool)
    for d in np.flatnonzero((E == E[0]).all(axis=0)):
        near &= X[:, d] == E[0, d]
    return near


def settings(X: np.ndarray, sizes: np.ndarray) -> np.ndarray | None:
    """Each row's setting of the two-valued parameters, numbered 0, 1, ... in the order of their
    codes (None where the space has no two-valued parameter)."""
    two = np.flatnonzero(np.asarray(sizes) == 2)
    if not len(two):
        return None
    code = X[:, two].astype(np.int64) @ (np.int64(2) ** np.arange(len(two), dtype=np.int64))
    return np.unique(code, return_inverse=True)[1].ravel()


def least_tried(setting: np.ndarray, seen: np.ndarray, cand: np.ndarray,
                rng: np.random.Generator) -> np.ndarray:
    """The candidates (a mask) of the setting that holds unevaluated ones and was evaluated
    least so far (ties drawn at random)."""
    k = int(setting.max()) + 1
    counts = np.bincount(setting[seen], minlength=k).astype(float)
    counts[np.bincount(setting[cand], minlength=k) == 0] = np.inf
    fewest = np.flatnonzero(counts == counts.min())
    return cand & (setting == fewest[rng.integers(len(fewest))])
