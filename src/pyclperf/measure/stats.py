"""Summaries of repeated timings and the bandwidth they imply."""

from __future__ import annotations

import functools
import math
from typing import Any, Sequence

import numpy as np

# Byte units (binary: transfer sizes are powers of two); bandwidth stays in 1e9 bytes/s.
KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30


def summarize(times_ns: Any) -> dict[str, float]:
    """median, min, max, mean, quartiles, IQR and relative spread (IQR / median, %) of times in ns."""
    raw = np.asarray(times_ns, dtype=np.float64).ravel()
    if raw.size == 0:
        raise ValueError("no timings to summarize")
    # NumPy's sum (pairwise), as raw.mean() adds: the same bits. Any NaN or infinity makes it
    # non-finite, which is checked before a Python sort that NaNs would leave out of order.
    total = float(raw.sum())
    # A plain sorted list: a sweep summarizes every point, and for the tens of values a point
    # has, NumPy's per-call costs outweigh the work (20 values: 8.7 us against 14.5 with np.sort
    # and NumPy indexing).
    t = sorted(raw.tolist())
    if not math.isfinite(total) or t[0] < 0:
        raise ValueError("timings must be finite and non-negative")
    at1, at2, at3 = _quartile_positions(len(t))
    q1, median, q3 = _at(t, *at1), _at(t, *at2), _at(t, *at3)
    return {
        "n": len(t),
        "median_ns": median,
        "min_ns": t[0],
        "max_ns": t[-1],
        "mean_ns": total / len(t),
        "q1_ns": q1,
        "q3_ns": q3,
        "iqr_ns": q3 - q1,
        "spread_pct": 100.0 * (q3 - q1) / median if median > 0 else float("nan"),
    }


def _quantile(s: Sequence[float], q: float) -> float:
    """np.percentile(s, 100 q) of sorted ``s`` (its default "linear" method, the same float
    operations, so the same bits): np.percentile costs ~150 us per call on a slow host, once
    per point of every sweep, where sorting once and indexing costs a few."""
    return _at(s, *_position(len(s), q))


def _position(n: int, q: float) -> tuple[int, int, float]:
    """Where the q-quantile of n sorted values lies: the two indices and the weight between."""
    virtual = n * q + (1 + q * -1) - 1  # numpy's _compute_virtual_index with alpha = beta = 1
    lo = min(max(math.floor(virtual), 0), n - 1)
    return lo, min(lo + 1, n - 1), virtual - math.floor(virtual)


# A sweep's points mostly have the same number of samples: their quartiles' positions once.
@functools.lru_cache(maxsize=1024)
def _quartile_positions(n: int) -> tuple[tuple[int, int, float], ...]:
    return tuple(_position(n, q) for q in (0.25, 0.5, 0.75))


def _at(s: Sequence[float], lo: int, hi: int, gamma: float) -> float:
    a, b = float(s[lo]), float(s[hi])
    diff = b - a
    # numpy's _lerp: from the nearer end, so the result stays within [a, b].
    return b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma


def bandwidth_gbps(nbytes: float, time_ns: float) -> float:
    """Effective bandwidth (Guide 2.2.2): bytes read + written, / 1e9, / seconds."""
    if time_ns <= 0:
        return float("nan")
    return float(nbytes) / time_ns  # bytes/ns == GB/s with 1e9 bytes per GB


# A row whose spread (IQR / median) exceeds this many percent is flagged ``noisy``: its median
# is shown, but no conclusion rests on it without saying so.
NOISY_SPREAD_PCT = 10.0
