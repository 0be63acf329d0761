"""Adaptive timing shared by tune() and the experiments: launches continue until their measured
time adds up to a minimum, so a fast kernel on a noisy device still gets a stable median.

The measured time is only what the clock says. A clock that does not advance (a driver whose
event timestamps are placeholders) would never add up, and every point would run to the launch
cap; so the host's own clock bounds the loop too: no more top-ups once the loop has spent
``wall_limit_s(min_time_s)`` of wall time, and no batch larger than what fits in the rest.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np

# The wall time adaptive timing may spend topping up: this many times the time it is asked to
# add up, plus a floor for launches whose host-side cost dwarfs their device time.
WALL_FACTOR = 10.0
WALL_FLOOR_S = 0.1


def wall_limit_s(min_time_s: float) -> float:
    """Seconds of wall time after which adaptive timing stops topping up."""
    return WALL_FACTOR * float(min_time_s) + WALL_FLOOR_S


def time_adaptively(kernel: Any, g: list[int], local: list[int] | None, *, warmup: int,
                    min_time_s: float, min_repeats: int, max_repeats: int,
                    reset: Callable[[], None] | None = None,
                    method: str = "events") -> np.ndarray:
    """Times (ns, by ``method``: "events" or "host") of launches whose times add up to
    ``min_time_s`` (within the repeat bounds, and within ``wall_limit_s(min_time_s)`` of wall
    time once ``min_repeats`` are done).

    With ``reset``, inputs are restored before every launch; the event covers only the kernel,
    so the restoring copy never enters a figure (with "host" it is outside the bracket too).
    """
    def batch(count: int, warm: int = 0) -> list[float]:
        if reset is None:
            times = kernel.time(g, local, warmup=warm, repeats=count, method=method)
            return np.asarray(times, dtype=float).tolist()
        out = []
        for _ in range(count):
            reset()
            out.append(float(kernel.time(g, local, warmup=0, repeats=1, method=method)[0]))
        return out

    if reset is not None:
        for _ in range(warmup):
            reset()
            kernel.run(g, local)
    # Without a reset the warm-ups go to the first batch's own call: queued back to back with
    # one wait, as a hand-written loop does, not one launch-and-wait from Python each.
    # Estimate from what is measured so far and top up: a single probe is not enough, since
    # on a busy CPU device its first launches can be several times slower than the rest.
    start = time.perf_counter()
    times = batch(min_repeats, 0 if reset is not None else warmup)
    goal_ns = min_time_s * 1e9
    limit = wall_limit_s(min_time_s)
    while len(times) < max_repeats and sum(times) < goal_ns:
        spent = time.perf_counter() - start
        if spent >= limit:
            break
        per = max(float(np.median(times)), 1.0)
        need = math.ceil((goal_ns - sum(times)) / per)
        # Launches that fit in the wall time left, at the wall time each has cost so far.
        fits = max(1, int((limit - spent) / (spent / len(times)))) if spent > 0 else need
        times += batch(min(max_repeats - len(times), max(need, 1), fits))
    return np.asarray(times)
