"""strategy="auto"'s model before evaluation 40: fitted to the normal scores of the targets'
ranks (search/gp_pool.normal_scores), then to the log-times themselves (search/auto.py)."""

from __future__ import annotations

import importlib.util
import itertools
import random

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("scipy") is None,
    reason='the model-guided search needs the tune extra (pip install "pyclperf[tune]")')


def test_normal_scores_keep_the_order_share_ties_and_ignore_how_far_an_outlier_lies() -> None:
    from scipy.stats import norm

    from pyclperf.tuner.search.gp_pool import normal_scores

    rng = np.random.default_rng()
    y = rng.standard_normal(25)
    y[[3, 7]] = y[11]                                       # a three-way tie
    s = normal_scores(y)
    assert np.array_equal(np.argsort(s, kind="stable"), np.argsort(y, kind="stable"))
    assert s[3] == s[7] == s[11]
    ranks = np.argsort(np.argsort(y)) + 1.0
    tied = ranks[[3, 7, 11]].mean()
    ranks[[3, 7, 11]] = tied
    assert np.allclose(s, norm.ppf((ranks - 0.5) / len(y)))
    assert abs(normal_scores(rng.standard_normal(24)).sum()) < 1e-9   # untied: symmetric
    worse = y.copy()
    worse[np.argmax(y)] = y.max() + 1e6                     # the slowest, a million times slower
    assert np.allclose(normal_scores(worse), s)


def _space() -> tuple[np.ndarray, np.ndarray, list[list[int]], np.ndarray]:
    levels = [[1, 2, 4, 8]] * 4
    X = np.array(list(itertools.product(range(4), repeat=4)))
    sizes = np.full(4, 4)
    rng = np.random.default_rng()
    # positive times, a few of them far slower than the rest
    times = np.exp((X * rng.uniform(0.2, 1.0, 4)).sum(1) + 0.3 * rng.random(len(X)))
    times[rng.choice(len(X), 10, replace=False)] *= 1e3
    return X, sizes, levels, times


def test_the_model_fits_normal_scores_until_evaluation_40_and_log_times_from_it(
        monkeypatch) -> None:
    from pyclperf.tuner.search import auto
    from pyclperf.tuner.search.gp_pool import normal_scores

    fits: list[tuple[int, np.ndarray]] = []
    predicted: list[tuple[int, np.ndarray]] = []

    class Watched(auto.PoolGP):
        def refit(self, rows, y, maxiter=50):
            fits.append((len(rows), np.array(y)))
            super().refit(rows, y, maxiter)

        def predict(self, y, rescale=False):
            if not rescale:                                 # the main model's, not the explorer's
                predicted.append((len(self.rows), np.array(y)))
            return super().predict(y, rescale)

    monkeypatch.setattr(auto, "PoolGP", Watched)
    X, sizes, levels, times = _space()
    budget = 90
    gen = auto.program(X, sizes, random.Random(3), budget, levels)
    sent: list[float] = []
    i = next(gen)
    for _ in range(budget - 1):
        sent.append(float(times[i]))
        i = gen.send(sent[-1])
    assert auto.RANKED_UNTIL == 40
    assert 40 in [n for n, _ in fits]                       # refitted where the targets change
    main_model = [(n, y) for n, y in fits if n >= auto.START]
    assert any(n < 40 for n, _ in main_model) and any(n > 40 for n, _ in main_model)
    for n, y in main_model + [(n, y) for n, y in predicted if len(y) == n]:
        logs = np.log(sent[:n])
        if n < 40:
            assert np.allclose(y, normal_scores(logs)), n
        else:
            assert np.allclose(y, logs), n


def test_a_global_step_aims_half_as_far_below_the_best_score_as_below_the_best_log_time(
        monkeypatch) -> None:
    from pyclperf.tuner.search import auto
    from pyclperf.tuner.search.gp_pool import normal_scores

    targets: list[float] = []
    real = auto.expected_improvement

    def watched(best, m, s):
        targets.append(float(best))
        return real(best, m, s)

    monkeypatch.setattr(auto, "expected_improvement", watched)
    for region in ("LOCAL", "RECOMBINE", "NICHE", "EXPLORE_SHARE", "SETTING_SHARE"):
        monkeypatch.setattr(auto, region, 0.0)             # every step a global one
    X, sizes, levels, times = _space()
    budget = 75
    gen = auto.program(X, sizes, random.Random(8), budget, levels, endgame=False)
    sent: list[float] = []
    i = next(gen)
    for _ in range(budget - 1):
        sent.append(float(times[i]))
        i = gen.send(sent[-1])
    steps = range(auto.START, budget)
    assert len(targets) == len(steps)
    for n, target in zip(steps, targets):
        logs = np.log(sent[:n])
        if n < 40:
            want = normal_scores(logs).min() - 0.5 * auto.GLOBAL_AMBITION
        else:
            want = logs.min() - auto.GLOBAL_AMBITION
        assert target == pytest.approx(want), n
