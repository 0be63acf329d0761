"""Summaries of repeated timings and the bandwidth they imply."""

from __future__ import annotations

from typing import Any

import numpy as np

# Byte units (binary: transfer sizes are powers of two); bandwidth stays in 1e9 bytes/s.
KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30


def summarize(times_ns: Any) -> dict[str, float]:
    """median, min, max, mean, quartiles, IQR and relative spread (IQR / median, %) of times in ns."""
    t = np.asarray(times_ns, dtype=np.float64).ravel()
    if t.size == 0:
        raise ValueError("no timings to summarize")
    if not np.all(np.isfinite(t)) or np.any(t < 0):
        raise ValueError("timings must be finite and non-negative")
    q1, median, q3 = np.percentile(t, [25, 50, 75])
    return {
        "n": int(t.size),
        "median_ns": float(median),
        "min_ns": float(t.min()),
        "max_ns": float(t.max()),
        "mean_ns": float(t.mean()),
        "q1_ns": float(q1),
        "q3_ns": float(q3),
        "iqr_ns": float(q3 - q1),
        "spread_pct": float(100.0 * (q3 - q1) / median) if median > 0 else float("nan"),
    }


def bandwidth_gbps(nbytes: float, time_ns: float) -> float:
    """Effective bandwidth (Guide 2.2.2): bytes read + written, / 1e9, / seconds."""
    if time_ns <= 0:
        return float("nan")
    return float(nbytes) / time_ns  # bytes/ns == GB/s with 1e9 bytes per GB


# A row whose spread (IQR / median) exceeds this many percent is flagged ``noisy``: its median
# is shown, but no conclusion rests on it without saying so.
NOISY_SPREAD_PCT = 10.0
