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
    s = timing.collect(k, [64], None, warmup=1, policy=Policy(min_samples=2, rel_target=None))
    assert k.rounds == [(1, 2)] and s.stopped == timing.ENOUGH


class _LongKernel(_Kernel):
    """The stand-in at a millisecond a launch."""

    def time(self, g, local, *, warmup, repeats, method="events"):
        return 1000.0 * super().time(g, local, warmup=warmup, repeats=repeats, method=method)


def test_quick_times_two_launches_or_half_a_millisecond_of_kernel_time():
    short, long = _Kernel(0.1), _LongKernel(0.1)
    s = timing.collect(short, [64], None, warmup=1, policy=timing_policy.QUICK)
    assert s.times.sum() >= timing_policy.QUICK_MIN_TIME_S * 1e9 and len(s.times) > 100
    assert s.stopped == timing.ENOUGH
    s = timing.collect(long, [64], None, warmup=1, policy=timing_policy.QUICK)
    assert long.rounds == [(1, 2)] and len(s.times) == 2


def test_experiments_and_the_tuner_share_one_rule():
    from pyclperf.tuner import measure
    from pyclperf.tuner.options import Timing
    from pyclperf.experiments import base
    import inspect

    assert base.MIN_TIME_S == timing_policy.MIN_TIME_S and base.MAX_REPEATS == timing_policy.MAX_SAMPLES
    job = inspect.signature(measure.Job).parameters
    assert job["min_time"].default == timing_policy.MIN_TIME_S
    assert job["min_repeats"].default == timing_policy.MIN_SAMPLES
    timing = Timing()                      # tune()'s timing unless given
    assert timing.min_time == timing_policy.MIN_TIME_S
    assert timing.min_repeats == timing_policy.MIN_SAMPLES
    assert timing.max_repeats == timing_policy.MAX_SAMPLES


def test_a_launch_of_several_steps_is_one_sample_of_their_summed_times():
    a, b = _Kernel(0.0), _Kernel(0.0)
    resets: list[int] = []
    s = timing.time_steps([(a, [64], None), (b, [64], None)], warmup=2,
                          policy=Policy(min_samples=4, rel_target=None),
                          reset=lambda: resets.append(1))
    assert len(s.times) == 4 and np.allclose(s.times, 2000.0)
    # Each kernel timed once per sample, warm-ups launched (not timed), a reset before each of the 6.
    assert a.rounds == [(0, 1)] * 4 and b.rounds == [(0, 1)] * 4 and len(resets) == 6


def test_the_policy_times_anything_timed_in_batches():
    """collect_rounds is the rule for transfers too: a batch callable, not a kernel."""
    calls: list[tuple[int, int]] = []
    rng = np.random.default_rng(5)

    def batch(count: int, warm: int) -> list[float]:
        calls.append((count, warm))
        return (1e6 * (1 + 0.05 * rng.standard_normal(count))).tolist()

    s = timing.collect_rounds(batch, warmup=3, policy=Policy(min_samples=10, rel_target=0.01))
    assert s.stopped == timing.CONVERGED and calls[0] == (10, 3)
    assert all(warm == 0 for _, warm in calls[1:]) and sum(c for c, _ in calls) == len(s.times)
    # A minimum time is added up the same way: 1 ms a sample, 50 ms asked for.
    calls.clear()
    s = timing.collect_rounds(batch, warmup=0, policy=Policy(min_samples=2, rel_target=None,
                                                              min_time_s=0.05))
    assert s.times.sum() >= 0.05e9 and s.stopped == timing.ENOUGH and len(calls) >= 2


def test_a_run_floor_raises_the_policy_minimum_and_its_cap():
    rule = Policy(max_samples=5).at_least(8, 0.5)
    assert (rule.min_samples, rule.min_time_s, rule.max_samples) == (8, 0.5, 8)
    assert timing_policy.DEFAULT.at_least(3, 0.0).rel_target == timing_policy.DEFAULT.rel_target
