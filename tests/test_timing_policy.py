"""The shared timing rule: the order-statistic interval on the median, and adaptive collecting
that stops when that interval is narrow enough (or at a cap, and says which)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pyclperf.measure import timing
from pyclperf.measure import timing_policy
from pyclperf.measure.timing_policy import Policy, median_ranks, relative_half_width


def _binomial_cdf(k: int, n: int) -> float:
    return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n


@pytest.mark.parametrize("n", [6, 7, 10, 20, 33, 100, 501])
def test_median_ranks_are_the_exact_binomial_interval(n):
    lo, hi = median_ranks(n, 0.95)
    assert hi == n - 1 - lo
    # Coverage: P(x_(lo) <= median <= x_(hi)) = 1 - 2 P(B <= lo) >= 95%, and the next narrower
    # interval would fall short.
    assert 1 - 2 * _binomial_cdf(lo, n) >= 0.95
    assert 1 - 2 * _binomial_cdf(lo + 1, n) < 0.95


def test_too_few_samples_have_no_interval_and_large_ones_use_the_normal_rank():
    assert median_ranks(5, 0.95) is None and relative_half_width([1.0] * 5) == math.inf
    lo, hi = median_ranks(10_000, 0.95)
    assert abs(lo - (5000 - 98)) <= 2 and hi == 10_000 - 1 - lo


def test_thorough_is_ten_times_the_measurement():
    t = timing_policy.THOROUGH
    d = timing_policy.DEFAULT
    assert t.min_samples == 10 * d.min_samples and t.max_wall_s == 10 * d.max_wall_s
    assert t.rel_target == pytest.approx(d.rel_target / math.sqrt(10))
    with pytest.raises(ValueError, match="unknown timing policy"):
        timing_policy.policy_named("sloppy")
    with pytest.raises(ValueError, match="rel_target"):
        Policy(rel_target=0)


class _Kernel:
    """A kernel stand-in whose launches take ``spread``-relative Gaussian jitter around 1 us;
    it records the size of every round it is asked for."""

    def __init__(self, spread: float, seed: int = 3) -> None:
        self.rng = np.random.default_rng(seed)
        self.spread = spread
        self.rounds: list[tuple[int, int]] = []

    def run(self, g, local):
        pass

    def time(self, g, local, *, warmup, repeats, method="events"):
        self.rounds.append((warmup, repeats))
        return 1000.0 * (1 + self.spread * self.rng.standard_normal(repeats)).clip(0.5)


def test_a_steady_kernel_stops_after_the_minimum_samples():
    k = _Kernel(0.0)
    s = timing.collect(k, [64], None, warmup=3, policy=Policy(min_samples=10))
    assert k.rounds == [(3, 10)] and len(s.times) == 10
    assert s.stopped == timing.CONVERGED and s.half_width == 0
    assert s.columns()["ci_pct"] == 0 and s.columns()["stopped"] == "interval"


def test_a_jittery_kernel_gets_rounds_until_the_interval_is_within_the_target():
    k = _Kernel(0.05)
    s = timing.collect(k, [64], None, warmup=0, policy=Policy(min_samples=10, rel_target=0.01))
    assert s.stopped == timing.CONVERGED and len(k.rounds) >= 2 and len(s.times) > 50
    ordered = sorted(s.times.tolist())
    assert relative_half_width(ordered) <= 0.01
    lo, hi = s.interval
    assert lo <= float(np.median(s.times)) <= hi and s.columns()["ci_pct"] <= 1.0
    # Without the last round it had not converged: collecting stopped as soon as it could.
    last = k.rounds[-1][1]
    assert relative_half_width(sorted(s.times[:-last].tolist())) > 0.01


def test_a_kernel_that_never_converges_stops_at_a_cap_and_says_so():
    k = _Kernel(0.5)
    s = timing.collect(k, [64], None, warmup=0,
                       policy=Policy(min_samples=10, rel_target=1e-4, max_samples=300))
    assert s.stopped == timing.SAMPLE_CAP and len(s.times) == 300
    k = _Kernel(0.5)
    s = timing.collect(k, [64], None, warmup=0,
                       policy=Policy(min_samples=10, rel_target=1e-6, max_wall_s=0.0))
    assert s.stopped == timing.WALL_CAP and len(s.times) == 10


def test_no_interval_goal_times_exactly_the_samples_asked():
    k = _Kernel(0.5)
    s = timing.collect(k, [64], None, warmup=1, policy=timing_policy.QUICK)
    assert k.rounds == [(1, 2)] and s.stopped == timing.ENOUGH


def test_experiments_and_the_tuner_share_one_rule():
    from pyclperf.tuner import measure
    from pyclperf.tuner import tune
    from pyclperf.experiments import base
    import inspect

    assert base.MIN_TIME_S == timing_policy.MIN_TIME_S and base.MAX_REPEATS == timing_policy.MAX_SAMPLES
    job = inspect.signature(measure.Job).parameters
    assert job["min_time"].default == timing_policy.MIN_TIME_S
    assert job["min_repeats"].default == timing_policy.MIN_SAMPLES
    params = inspect.signature(tune.tune).parameters
    assert params["min_time"].default == timing_policy.MIN_TIME_S
    assert params["min_repeats"].default == timing_policy.MIN_SAMPLES
    assert params["max_repeats"].default == timing_policy.MAX_SAMPLES
