"""Adaptive event timing shared by tune() and the experiments: launches continue until their
kernel time adds up to a minimum, so a fast kernel on a noisy device still gets a stable median."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np


def time_adaptively(kernel: Any, g: list[int], local: list[int] | None, *, warmup: int,
                    min_time_s: float, min_repeats: int, max_repeats: int,
                    reset: Callable[[], None] | None = None) -> np.ndarray:
    """Event times (ns) of launches whose kernel time adds up to ``min_time_s`` (within the
    repeat bounds).

    With ``reset``, inputs are restored before every launch; the event covers only the kernel,
    so the restoring copy never enters a figure.
    """
    def batch(count: int, warm: int = 0) -> list[float]:
        if reset is None:
            times = kernel.time(g, local, warmup=warm, repeats=count)
            return np.asarray(times, dtype=float).tolist()
        out = []
        for _ in range(count):
            reset()
            out.append(float(kernel.time(g, local, warmup=0, repeats=1)[0]))
        return out

    if reset is not None:
        for _ in range(warmup):
            reset()
            kernel.run(g, local)
    # Without a reset the warm-ups go to the first batch's own call: queued back to back with
    # one wait, as a hand-written loop does, not one launch-and-wait from Python each.
    # Estimate from what is measured so far and top up: a single probe is not enough, since
    # on a busy CPU device its first launches can be several times slower than the rest.
    times = batch(min_repeats, 0 if reset is not None else warmup)
    goal_ns = min_time_s * 1e9
    while len(times) < max_repeats and sum(times) < goal_ns:
        per = max(float(np.median(times)), 1.0)
        need = math.ceil((goal_ns - sum(times)) / per)
        times += batch(min(max_repeats - len(times), max(need, 1)))
    return np.asarray(times)
