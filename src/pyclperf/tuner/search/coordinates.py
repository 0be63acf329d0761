"""The coordinates of strategy="auto"'s model (search/auto.py, search/gp_pool.py): where each
candidate configuration sits, from the value indices of its parameters.

The model's coordinates are each parameter's value index scaled to [0, 1] and, for a parameter
of more than two positive integer values, two more where they say something the index does not
(``coordinates`` below): the value's logarithm (block sizes 16, 32, ..., 256 are evenly
spaced as indices, but 16 to 32 is a doubling and 240 to 256 is not) and the largest power of two
that divides it (warp multiples and power-of-two tiles behave alike however far apart their
indices are; on the hub's A6000 convolution space block_size_x 32, 64, 128 and 256 are within 6%
of the optimum and every other value below 50% of it, next to it). On the hub's convolution spaces
they raised the median fraction of the optimum at 100 evaluations (30 seeds) from 0.86 to 1.00
(A4000) and 0.85 to 1.00 (A6000), and the 10th percentile at 200 from 0.68 to 0.85 (A100), 0.86
and 0.78 to 1.00; a parameter of powers of two (every one of the GEMM spaces' but the two
booleans) gets no extra coordinate of its own; each pair of parameters evenly spaced in
log (powers of two, usually) gets the log of their product: a tile's area or a work-group's
size, which a kernel of one length scale per coordinate cannot otherwise see (the time follows
the sum of the two logs, a diagonal). On the hub's GEMM spaces (8 such parameters, 28 pairs) that
raised the median at 20 evaluations from 0.77-0.85 to 0.79-0.87, at 50 on the RTX 3090 from 0.93
to 0.98, and the 10th percentile at 100 there from 0.98 to 1.00 (30 seeds); none of the other
hub spaces replayed has two such parameters. Products of parameters that are not geometric (the
convolutions' block sizes 16, 32, 48, ...) made the A100 convolution worse (median at 50 from
0.79 to 0.67, 60 seeds).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def _integers(values: Sequence[Any]) -> np.ndarray | None:
    """The values as an int64 array where all are positive integers (not booleans), else None."""
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and v > 0
               for v in values):
        return None
    return np.array(values, dtype=np.int64)


def coordinates(X: np.ndarray, sizes: np.ndarray,
                levels: Sequence[Sequence[Any]] | None = None) -> np.ndarray:
    """The model's coordinates of the rows of ``X``: each dimension's value index scaled to
    [0, 1]; then, for each dimension of more than two positive integer values (``levels``: each
    dimension's values in index order), the log of the value where the values are not evenly
    spaced in log (where they are, that is the index again), and the log of the largest power of
    two dividing the value where that does not grow with the index (where it does, the values are
    powers of two and it is the log again), each scaled to [0, 1]; last, for each pair of
    dimensions whose values are both evenly spaced in log, the log of their product (a tile's
    area, a work-group's size), scaled to [0, 1]."""
    X = np.asarray(X)
    columns = [X / np.maximum(sizes - 1, 1)]
    geometric = []
    for d, values in enumerate(levels or []):
        v = _integers(values) if sizes[d] > 2 else None
        if v is None:
            continue
        log = np.log2(v.astype(float))
        if not np.allclose(np.diff(log), log[1] - log[0]):
            columns.append(((log - log.min()) / np.ptp(log))[X[:, d]][:, None])
        else:
            geometric.append(((log - log.min())[X[:, d]], np.ptp(log)))
        twos = np.log2((v & -v).astype(float))
        if np.ptp(twos) > 0 and not (np.diff(twos) > 0).all():
            columns.append(((twos - twos.min()) / np.ptp(twos))[X[:, d]][:, None])
    columns += [((a + b) / (ra + rb))[:, None] for k, (a, ra) in enumerate(geometric)
                for b, rb in geometric[k + 1:]]
    return np.hstack(columns)
