"""What the cooperative-pattern experiments (histogram, reduction, separable; Quasar 9.2, 9.8)
share: how many work-groups a grid-stride kernel gets, timing a launch that needs a reset or
several kernels, and comparing floats within a stated bound."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import _core

# A launch step: a kernel with its arguments bound, its global and its local size.
Step = tuple[Any, Any, Any]

# Unit roundoff of float32: every correctly rounded operation errs by at most this, relatively.
FLOAT32_U = 2.0**-24


def check_work_group(ctx: Any, experiment: str, local_size: int, power_of_two: bool = False) -> int:
    """``local_size`` as an int, refused (InvalidArgumentError) where the device cannot run it."""
    local = int(local_size)
    limit = ctx.info.max_work_group_size
    if local <= 0 or local > limit:
        raise _core.InvalidArgumentError(
            f"{experiment}: work-group size {local} is outside 1..{limit} (the device's maximum)")
    if power_of_two and local & (local - 1):
        raise _core.InvalidArgumentError(
            f"{experiment}: work-group size {local} must be a power of two (a halving tree)")
    return local


def choose(experiment: str, what: str, given: Sequence[str], known: Sequence[str]) -> list[str]:
    """``given`` as a list, refused (InvalidArgumentError) if empty or naming an unknown one."""
    chosen = list(given)
    unknown = [g for g in chosen if g not in known]
    if unknown or not chosen:
        raise _core.InvalidArgumentError(
            f"{experiment}: unknown or no {what} {unknown}; known: {', '.join(known)}")
    return chosen


def default_groups(info: Any, work_items_wanted: int, local_size: int, per_unit: int = 32) -> int:
    """Work-groups for a grid-stride kernel: enough to fill every compute unit several times
    over (``per_unit`` groups each), never more than the input gives one work-item each."""
    return max(1, min(-(-work_items_wanted // local_size), per_unit * info.compute_units))


def run_launch(steps: Sequence[Step], reset: Callable[[], None] | None = None) -> None:
    """One launch: the reset (if any), then every step in order, waiting for each."""
    if reset is not None:
        reset()
    for kernel, g, l in steps:
        kernel.run(g, l)


def time_launch(steps: Sequence[Step], *, warmup: int, repeats: int, method: str,
                reset: Callable[[], None] | None = None) -> np.ndarray:
    """Per-launch times (ns) of ``steps``; a launch's time is the sum of its kernels' times.

    ``reset`` (e.g. zeroing an accumulator with a fill) runs before every launch as its own
    command, so neither it nor the host's gaps enter a figure. A single kernel without a reset
    is timed back to back in the core's loop.
    """
    if reset is None and len(steps) == 1:
        kernel, g, l = steps[0]
        return np.asarray(kernel.time(g, l, warmup=warmup, repeats=repeats, method=method))
    for _ in range(warmup):
        run_launch(steps, reset)
    times = np.empty(repeats)
    for r in range(repeats):
        if reset is not None:
            reset()
        times[r] = sum(float(kernel.time(g, l, warmup=0, repeats=1, method=method)[0])
                       for kernel, g, l in steps)
    return times


def gamma(chain: int) -> float:
    """Higham's gamma_k for float32: the relative error bound of a chain of k roundings."""
    ku = chain * FLOAT32_U
    if ku >= 1:
        raise _core.InvalidArgumentError(f"{chain} chained float32 roundings bound nothing")
    return ku / (1 - ku)


def within(got: np.ndarray, want: np.ndarray, tolerance: float, what: str) -> tuple[bool, str]:
    """(True, "") when every |got - want| <= tolerance (NaN never is); else what differed."""
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        return False, f"{what}: shape {got.shape} differs from the expected {want.shape}"
    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    bad = ~(err <= tolerance)
    if not bad.any():
        return True, ""
    flat = np.flatnonzero(bad.reshape(-1))
    first = int(flat[0])
    return False, (f"{flat.size} of {got.size} {what} off by more than {tolerance:.3g}; first at "
                   f"{first}: got {got.reshape(-1)[first]!r}, want {want.reshape(-1)[first]!r}")
