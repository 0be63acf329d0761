"""strategy="auto": brute force where the space fits the budget, else the model-guided search;
what it promises (budget-independent, seeded, no repeats) and that it searches better than
random sampling on a recorded space (the one pyclperf ships, replayed)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import pyclperf
from pyclperf.tuner.recording import EXAMPLE, Recording
from pyclperf.tuner.restrictions import compile_restrictions
from pyclperf.tuner.searchspace import Space
from pyclperf.tuner.strategies import make_strategy

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("optuna", "scipy", "nevergrad")),
    reason='the model-guided search needs the tune extra (pip install "pyclperf[tune]")')
REC = Recording(EXAMPLE)
QUIET = pyclperf.Execution(progress=False)


def replayed_rows(strategy: str, budget: int, seed: int) -> list[dict]:
    res = pyclperf.tune("", "sgemm", REC.problem_size, [], REC.tune_params,
                        restrictions=REC.recorded_with["restrictions"], replay=EXAMPLE,
                        search=pyclperf.Search(strategy, max_fevals=budget, seed=seed),
                        execution=QUIET)
    assert len({r["config"] for r in res.rows}) == len(res.rows) == budget
    return res.rows


def replay(strategy: str, budget: int, seed: int) -> list[float]:
    return [r["time_ms"] for r in replayed_rows(strategy, budget, seed)]


def test_a_space_that_fits_the_budget_is_walked_whole() -> None:
    space = Space({"x": [1, 2, 3], "y": [4, 5]})
    s = make_strategy("auto", space, max_fevals=10)
    assert "every configuration" in s.algorithm
    s = make_strategy("auto", space)
    assert "every configuration" in s.algorithm
    s = make_strategy("auto", space, max_fevals=3)
    assert "Gaussian process" in s.algorithm
    s.close()


def test_a_shorter_search_is_the_start_of_a_longer_one() -> None:
    """From a budget of 40 on the search does not plan by it until its end game (the last
    fifth, from evaluation 60 on): 40 evaluations are the first 40 of 80. Under 40 its start is
    shorter (a fifth of the budget), so 20 are not the first 20 of 80."""
    assert replay("auto", 40, 4) == replay("auto", 80, 4)[:40]
    assert replay("auto", 40, 4) != replay("auto", 40, 5)
    assert replay("auto", 20, 4) != replay("auto", 80, 4)[:20]


def test_a_budget_under_40_starts_from_a_fifth_of_it_and_aims_nearer() -> None:
    """... and takes its setting steps from twice its start; from 40 on, from SETTING_FROM."""
    from pyclperf.tuner.search import auto

    assert [auto.opening(b) for b in (3, 10, 20, 30, 39)] == \
        [(3, 0.25, 6), (4, 0.25, 8), (4, 0.25, 8), (6, 0.25, 12), (8, 0.25, 16)]
    assert [auto.opening(b) for b in (40, 100, 400)] == [(12, 0.5, auto.SETTING_FROM)] * 3


def test_the_end_game_starts_at_the_last_fifth_and_never_before_60() -> None:
    from pyclperf.tuner.search.auto import endgame_start

    assert [endgame_start(b) for b in (40, 60, 70, 75, 100, 200, 400)] == \
        [60, 60, 60, 60, 80, 160, 320]


def test_agreeing_rows_keep_every_value_the_elite_share() -> None:
    from pyclperf.tuner.search.auto import agreeing

    X = np.array([[0, 1, 2], [0, 1, 0], [0, 2, 2], [1, 1, 2], [0, 1, 1]])
    assert agreeing(X, [0, 1]).tolist() == [True, True, False, False, True]   # share x0, x1
    assert agreeing(X, [0, 1, 2]).tolist() == [True, True, True, False, True]  # share x0
    assert agreeing(X, [2, 3, 4]).all()                                         # share nothing


def test_the_end_of_a_budget_searches_what_the_best_configurations_share(monkeypatch) -> None:
    """In the last fifth of a budget of 100 most evaluations keep every value the four best so
    far share (on the recorded space, seeds 0-2: 0.8, 0.8 and 0.5 of them), more than the same
    runs without the end game (0.5, 0.6, 0.2), and the first 80 evaluations are the same."""
    from pyclperf.tuner.search import auto

    def rows() -> list[list[tuple[dict, float]]]:
        return [[({p: r[p] for p in REC.tune_params}, r["time_ms"])
                 for r in replayed_rows("auto", 100, seed)] for seed in range(3)]

    def agreeing_share(runs: list) -> float:
        hits = 0
        for run in runs:
            for k in range(80, 100):
                best = sorted((t, i) for i, (_, t) in enumerate(run[:k]) if t is not None)[:4]
                elite = [run[i][0] for _, i in best]
                shared = [p for p in elite[0] if all(e[p] == elite[0][p] for e in elite)]
                hits += all(run[k][0][p] == elite[0][p] for p in shared)
        return hits / (20 * len(runs))

    with_end = rows()
    real = auto.program
    monkeypatch.setattr(auto, "program", lambda *a: real(*a, endgame=False))
    without = rows()
    assert [r[:80] for r in with_end] == [r[:80] for r in without]
    assert agreeing_share(with_end) >= 0.6
    assert agreeing_share(with_end) > agreeing_share(without) + 0.15


def test_a_time_limit_alone_plans_no_end_game(monkeypatch) -> None:
    """Without max_fevals the model's plan of UNBOUNDED evaluations is not the search's end, so
    the program runs without an end game; with it, with one (a budget of 30 ends before it)."""
    from pyclperf.tuner.search import auto

    seen: list[bool] = []

    def watched(X, sizes, rng, budget, levels, endgame=True):
        seen.append(endgame)
        yield 0

    monkeypatch.setattr(auto, "program", watched)
    params = {f"p{i}": list(range(12)) for i in range(8)}            # too large to count
    space = Space(params, compile_restrictions(["p0 + p1 < 20"], list(params)))
    said = []
    for fevals in (None, 30, 100):
        s = make_strategy("auto", space, seed=1, max_fevals=fevals)
        assert s.ask() is not None
        said.append(s.algorithm)
        s.close()
    assert seen == [False, True, True]
    # the rows say so where the end game comes
    assert ["best share" in a for a in said] == [False, False, True]
    assert "from evaluation 81 mostly among what the 4 best share" in said[2]


def runs_in_order(monkeypatch) -> list[int]:
    """auto's program replaced by one that asks for its pool's rows in order; the list it
    returns gets the length of each run as the run starts."""
    from pyclperf.tuner.search import auto

    lengths: list[int] = []

    def in_order(X, sizes, rng, budget, levels, endgame=True):
        lengths.append(budget)
        for row in range(budget):       # not yield from: a range's iterator takes no send()
            yield row

    monkeypatch.setattr(auto, "program", in_order)
    return lengths


def test_a_budget_larger_than_the_pool_names_the_end_game_of_each_run(monkeypatch) -> None:
    """A budget whose model would not fit in memory over the whole space is searched over a
    sample (search/pool.py), in runs of the sample's size, each with its own end game: the rows
    say where that comes in each run, not at the budget's own last fifth."""
    from pyclperf.tuner.search import auto
    from pyclperf.tuner.search.pool import pool_size

    lengths = runs_in_order(monkeypatch)
    space = Space({"a": list(range(100)), "b": list(range(100)), "c": list(range(10))})
    s = make_strategy("auto", space, seed=3, max_fevals=5000)
    run = pool_size(space.allowed_count, 5000)
    assert run < 5000
    for _ in range(run + 5):                       # into the second run
        s.tell(s.ask(), 1.0)
    s.close()
    assert lengths == [run, run]
    assert f"from evaluation {auto.endgame_start(run) + 1} of each run over a sample of {run} " \
        "configurations mostly among what the 4 best share" in s.algorithm
    small = make_strategy("auto", space, seed=3, max_fevals=100)
    assert "from evaluation 81 mostly among" in small.algorithm and "sample" not in small.algorithm
    small.close()


def test_a_space_too_large_to_count_names_the_end_game_of_the_pool_it_drew(monkeypatch) -> None:
    """A space too large to count is searched over a sample whose size is known only once drawn:
    where the restrictions allow fewer configurations than the sample would hold, the rows name
    the end game of the pool drawn, not of the sample planned."""
    from pyclperf.tuner.search import auto
    from pyclperf.tuner.search.pool import pool_size

    lengths = runs_in_order(monkeypatch)
    params = {"a": list(range(40)), "b": list(range(40)), "c": list(range(10))}
    space = Space(params, compile_restrictions(["a + b < 15"], list(params)), exact_limit=100)
    assert space.allowed_count is None
    allowed = 10 * sum(1 for a in range(40) for b in range(40) if a + b < 15)    # 1200
    s = make_strategy("auto", space, seed=3, max_fevals=5000)
    planned = pool_size(None, 5000)
    assert allowed < planned < 5000
    assert f"over a sample of {planned} configurations" in s.algorithm
    s.tell(s.ask(), 1.0)
    assert lengths == [allowed]
    assert f"from evaluation {auto.endgame_start(allowed) + 1} of each run over a sample of " \
        f"{allowed} configurations mostly among what the 4 best share" in s.algorithm
    s.close()


def test_it_finds_faster_configurations_than_random_sampling() -> None:
    """Over 6 seeds at 60 evaluations (6% of the recorded space): the median best time auto
    finds is faster than random sampling's, and its worst run no slower than random's median."""
    optimum = min(e.time_ms for e in REC.entries.values())
    ours = [optimum / min(replay("auto", 60, s)) for s in range(6)]
    theirs = [optimum / min(replay("random_sample", 60, s)) for s in range(6)]
    assert np.median(ours) > np.median(theirs)
    assert min(ours) >= np.median(theirs) * 0.9


def test_a_space_too_large_to_list_is_searched_over_a_sample() -> None:
    params = {f"p{i}": list(range(12)) for i in range(8)}            # 4.3e8 configurations
    space = Space(params, compile_restrictions(["p0 + p1 < 20"], list(params)))
    s = make_strategy("auto", space, seed=1, max_fevals=30)
    got = []
    while (c := s.ask()) is not None:
        got.append(c)
        s.tell(c, float(sum((v - 6) ** 2 for v in c.values())) + 1.0)
    s.close()
    assert len(got) == 30 and len({tuple(c.values()) for c in got}) == 30
    assert all(c["p0"] + c["p1"] < 20 for c in got)
    # the model steers towards the bowl's centre after its start
    start, rest = got[:12], got[12:]
    dist = lambda c: sum((v - 6) ** 2 for v in c.values())   # noqa: E731
    assert np.median([dist(c) for c in rest]) < np.median([dist(c) for c in start])


def test_the_model_runs_blas_on_one_thread_and_gives_the_rest_back(monkeypatch) -> None:
    """Between asks a pooled program (auto's model) runs with BLAS on one thread; the caller's
    code in between (a reference, a verification) keeps every thread."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from pyclperf.tuner.search import auto

    seen: list[tuple[int, ...]] = []
    real = auto.program

    def watched(*args):
        gen = real(*args)
        value = None
        while True:
            seen.append(tuple(i["num_threads"] for i in threadpoolctl.threadpool_info()
                              if i["user_api"] == "blas"))
            try:
                value = yield gen.send(value)
            except StopIteration:
                return

    monkeypatch.setattr(auto, "program", watched)
    import scipy.linalg  # noqa: F401  (every BLAS the model uses, loaded before counting)

    before = {i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}
    if before == {1}:
        pytest.skip("BLAS runs on one thread here already: nothing to tell apart")
    space = Space(REC.tune_params, compile_restrictions(REC.recorded_with["restrictions"],
                                                        list(REC.tune_params)))
    s = make_strategy("auto", space, max_fevals=16, seed=3)
    for _ in range(16):
        config = s.ask()
        assert {i["num_threads"] for i in threadpoolctl.threadpool_info()
                if i["user_api"] == "blas"} == before
        s.tell(config, float(hash(tuple(config.values())) % 97 + 1))
    assert len(seen) == 16 and all(t and set(t) == {1} for t in seen)


def test_the_models_coordinates_add_log_and_powers_of_two_only_where_they_tell_something() -> None:
    """Block sizes 16, 32, ..., 64 get their log and their largest power-of-two divisor beside
    the index; powers of two (the log is the index again), two values, booleans and strings
    get nothing more."""
    from pyclperf.tuner.search.auto import coordinates

    levels = [[16, 32, 48, 64], [1, 2, 4, 8], [0, 1], [True, False, None], ["a", "b", "c"]]
    sizes = np.array([len(v) for v in levels])
    X = np.array([[0, 0, 0, 0, 0], [1, 3, 1, 1, 2], [2, 1, 0, 2, 1], [3, 2, 1, 0, 0]])
    Z = coordinates(X, sizes, levels)
    assert Z.shape == (4, 7)
    assert np.allclose(Z[:, :5], X / (sizes - 1))
    assert np.allclose(Z[:, 5], (np.log2([16, 32, 48, 64]) - 4) / 2)
    assert np.allclose(Z[:, 6], [0, 0.5, 0, 1])              # 16, 32, 16 (of 48), 64
    assert np.array_equal(coordinates(X, sizes), Z[:, :5])   # no levels: the indices alone


def test_the_models_coordinates_add_the_log_product_of_each_pair_of_geometric_parameters() -> None:
    """Two parameters of powers of two (a tile's sides) get the log of their product, scaled to
    [0, 1]; a parameter that is not evenly spaced in log (16, 32, 48) or has two values joins no
    pair."""
    from pyclperf.tuner.search.auto import coordinates

    levels = [[16, 32, 64, 128], [1, 2, 4], [16, 32, 48], [1, 2]]
    sizes = np.array([len(v) for v in levels])
    rng = np.random.default_rng(7)
    X = np.column_stack([rng.integers(0, k, 12) for k in sizes])
    Z = coordinates(X, sizes, levels)
    assert Z.shape == (12, 4 + 2 + 1)                        # index, 48's log and divisor, pair
    product = np.array(levels[0])[X[:, 0]] * np.array(levels[1])[X[:, 1]]
    assert np.allclose(Z[:, -1], (np.log2(product) - 4) / 5)  # 16 to 512
    assert np.array_equal(coordinates(X[:, 1:], sizes[1:], levels[1:]), Z[:, [1, 2, 3, 4, 5]])


def test_a_length_scale_prior_adds_its_log_density_and_holds_the_fit_near_its_centre() -> None:
    """With a prior the objective is the negative log likelihood plus the prior's (its gradient
    checked against finite differences), and on 8 observations in 20 coordinates the fitted
    length scales sit nearer the prior's centre than the likelihood's own."""
    from scipy.optimize import approx_fprime

    from pyclperf.tuner.search.gp_pool import PoolGP

    rng = np.random.default_rng(11)
    Z = rng.random((300, 20))
    y = np.sin(4 * Z[:, 0]) + Z[:, 1] + 0.05 * rng.standard_normal(300)
    rows = list(rng.choice(300, 8, replace=False))
    plain, held = PoolGP(Z, cap=9), PoolGP(Z, cap=9, prior=(2.0, 0.7))
    ZI = Z[rows]
    C = (ZI.T[:, :, None] - ZI.T[:, None, :]) ** 2
    yy = (y[rows] - y[rows].mean()) / y[rows].std()
    th = np.r_[rng.normal(-0.5, 0.5, 20), 0.1, np.log(1e-2)]
    f0, _ = plain._nlml(th, C, yy)
    f1, g1 = held._nlml(th, C, yy)
    assert np.isclose(f1 - f0, 0.5 * (((th[:20] - np.log(2.0)) / 0.7) ** 2).sum())
    assert np.allclose(g1, approx_fprime(th, lambda t: held._nlml(t, C, yy)[0], 1e-6),
                       rtol=1e-3, atol=1e-4)
    plain.refit(rows, y[rows])
    held.refit(rows, y[rows])
    off = lambda gp: np.abs(gp.theta[:20] - np.log(2.0)).mean()   # noqa: E731
    assert off(held) < 0.5 * off(plain)
    mu, sd = held.predict(y[rows])
    assert np.all(np.isfinite(mu)) and np.all(sd > 0)


def test_every_fit_takes_the_prior_and_starts_at_its_centre(monkeypatch) -> None:
    """Six parameters of powers of two (6 + 15 coordinates): each refit of a run, the first at
    its start's end (6 observations for a budget of 30, 12 for 40), is held by the length-scale
    prior and starts from its centre, not from where the last fit ended, and ends elsewhere (so a
    warm start would show)."""
    import itertools
    import random

    from pyclperf.tuner.search import auto

    fits: list[tuple[int, object, np.ndarray, np.ndarray]] = []

    class Watched(auto.PoolGP):
        def refit(self, rows, y, maxiter=50):
            started = self.theta.copy()
            super().refit(rows, y, maxiter)
            fits.append((len(rows), self.prior, started, self.theta.copy()))

    monkeypatch.setattr(auto, "PoolGP", Watched)
    levels = [[1, 2, 4]] * 6
    X = np.array(list(itertools.product(range(3), repeat=6)))
    sizes = np.full(6, 3)
    D = auto.coordinates(X, sizes, levels).shape[1]
    assert D == 21
    objective = (X * np.arange(1, 7)).sum(1) + 1.0
    centre = np.log(auto.LENGTH_PRIOR[0])
    for budget in (30, 40):
        fits.clear()
        gen = auto.program(X, sizes, random.Random(5), budget, levels)
        i = next(gen)
        for _ in range(budget - 1):
            i = gen.send(float(objective[i]))
        assert fits[0][0] == (6 if budget == 30 else 12) and len(fits) > 2
        for n, prior, started, ended in fits:
            assert prior == auto.LENGTH_PRIOR, n
            assert np.allclose(started[:D], centre), n
            assert not np.allclose(ended[:D], centre), n


def test_niche_leaders_are_apart_and_near_the_best_in_time() -> None:
    """The best first; then, in order of objective, rows at least NICHE_DISTANCE (2) parameters
    from every leader taken; with a bound, none past it."""
    from pyclperf.tuner.search.auto import niche_leaders

    X = np.array([[0, 0, 0], [0, 0, 1], [1, 1, 0], [2, 2, 2], [1, 2, 1]])
    seen = np.array([3, 0, 1, 2, 4])                    # evaluated rows, in evaluation order
    y = np.array([0.0, 0.05, 0.1, 0.15, 0.3])           # their objectives
    order = np.argsort(y)
    # in order of objective: rows 3, 0, 1, 2, 4; row 1 is one parameter from row 0, a leader
    assert niche_leaders(X, seen, order, 5) == [3, 0, 2, 4]
    assert niche_leaders(X, seen, order, 2) == [3, 0]
    assert niche_leaders(X, seen, order, 5, 0.2, y) == [3, 0, 2]
    assert niche_leaders(X, seen, order, 5, 0.0, y) == [3]


def test_the_pool_posterior_is_the_dense_gaussian_process_posterior() -> None:
    """Fitted on some rows, then extended one row at a time, the pool's posterior mean and
    standard deviation are those of the Gaussian process written out densely (NumPy's solve),
    and the in-place kernel gives exactly the values of the one the fit uses."""
    from pyclperf.tuner.search.gp_pool import PoolGP, _matern32, _matern32_only

    rng = np.random.default_rng(5)
    Z = rng.random((400, 6))
    y_all = np.cos(3 * Z[:, 0]) + Z[:, 1] * Z[:, 2] + 0.02 * rng.standard_normal(400)
    rows = [int(r) for r in rng.choice(400, 14, replace=False)]
    gp = PoolGP(Z, cap=15, prior=(1.0, 0.7))
    gp.refit(rows[:9], y_all[rows[:9]])
    for r in rows[9:]:
        gp.add(r)
    mu, sd = gp.predict(y_all[rows])

    D = Z.shape[1]
    scaled = Z * np.exp(-gp.theta[:D])
    r2 = ((scaled[:, None, :] - scaled[None, :, :]) ** 2).sum(-1)
    K = gp.sf2 * _matern32(r2)[0]
    A = K[np.ix_(rows, rows)] + (gp.sn2 + 1e-8) * np.eye(len(rows))
    yy = (y_all[rows] - gp.mu) / gp.sd
    want_mu = K[:, rows] @ np.linalg.solve(A, yy) * gp.sd + gp.mu
    want_var = gp.sf2 - np.einsum("ij,ji->i", K[:, rows], np.linalg.solve(A, K[rows, :]))
    assert np.allclose(mu, want_mu, atol=1e-7)
    assert np.allclose(sd, np.sqrt(np.maximum(want_var, 1e-12)) * gp.sd, atol=1e-6)

    r2 = np.r_[-1e-12, 0.0, rng.random(50) * 9]
    assert np.array_equal(_matern32_only(r2.copy()), _matern32(r2)[0])


def test_balls_are_each_centres_smallest_ball_holding_a_candidate() -> None:
    import itertools

    from pyclperf.tuner.search.auto import balls

    X = np.array(list(itertools.product(range(3), repeat=3)))
    row = {tuple(x): k for k, x in enumerate(X)}
    cand = np.ones(len(X), dtype=bool)
    a, b = row[0, 0, 0], row[2, 2, 2]
    # every neighbour of a evaluated: its smallest ball with candidates has radius 2
    for k, x in enumerate(X):
        if (x != X[a]).sum() <= 1:
            cand[k] = False
    cand[b] = False
    near = balls(X, cand, [a, b])
    distance_a, distance_b = (X != X[a]).sum(1), (X != X[b]).sum(1)
    assert np.array_equal(near, cand & ((distance_a == 2) | (distance_b == 1)))
    assert np.array_equal(balls(X, cand, [b]), cand & (distance_b == 1))


def test_local_steps_search_around_every_leader_near_the_best(monkeypatch) -> None:
    """With every step local: each step's centres are the best so far and niche leaders within
    LOCAL_WITHIN of it in log-time. A run whose start found both a flat plateau and the rim of
    a bowl 10% slower (four switches apart) descends the bowl to the optimum; searching around
    the best alone it walks the plateau (it does, on seeds 1, 4 and 5 of these)."""
    import itertools
    import random

    from pyclperf.tuner.search import auto

    calls: list[tuple[list[int], float]] = []     # each local step's centres, the best then
    seen: list[int] = []
    original = auto.balls

    def watched(X, cand, centres):
        calls.append((list(centres), min(objective[seen])))
        return original(X, cand, centres)

    monkeypatch.setattr(auto, "balls", watched)
    monkeypatch.setattr(auto, "LOCAL", 1.0)
    monkeypatch.setattr(auto, "RECOMBINE", 0.0)
    monkeypatch.setattr(auto, "NICHE", 0.0)
    monkeypatch.setattr(auto, "EXPLORE_SHARE", 0.0)
    levels = [list(range(1, 9)), list(range(1, 9))] + [[0, 1]] * 4
    X = np.array(list(itertools.product(range(8), range(8), *[range(2)] * 4)))
    sizes = np.array([8, 8, 2, 2, 2, 2])
    # four switches all off: a flat plateau at 1.0; all on: a bowl whose rim is 10% slower and
    # whose bottom, (6, 6), is the optimum at 0.5; any other setting: slow
    bowl = 1.1 - 0.6 * np.exp(-((X[:, 0] - 6) ** 2 + (X[:, 1] - 6) ** 2) / 8.0)
    switches = X[:, 2:].sum(1)
    objective = np.where(switches == 0, 1.0, np.where(switches == 4, np.maximum(bowl, 0.5), 3.0))
    both = 0
    for seed in range(8):
        calls.clear()
        seen.clear()
        gen = auto.program(X, sizes, random.Random(seed), 60, levels)
        i = next(gen)
        for _ in range(59):
            seen.append(i)
            i = gen.send(float(objective[i]))
        for centres, best in calls:
            assert objective[centres[0]] == best
            assert all(objective[c] <= np.exp(auto.LOCAL_WITHIN) * best for c in centres[1:])
        start = switches[seen[:auto.START]]
        if (start == 0).any() and (start == 4).any():
            both += 1
            assert min(objective[seen]) == objective.min(), seed
    assert both >= 2


def test_settings_number_each_rows_two_valued_parameters_together() -> None:
    from pyclperf.tuner.search.regions import settings

    X = np.array([[0, 1, 0], [1, 1, 1], [0, 0, 1], [0, 2, 0]])
    # dimensions 0 and 2 are two-valued: (0, 0), (1, 1), (0, 1), (0, 0)
    assert settings(X, np.array([2, 3, 2])).tolist() == [0, 2, 1, 0]
    assert settings(X, np.array([3, 3, 3])) is None


def test_the_least_tried_setting_is_the_one_with_fewest_evaluations_and_candidates() -> None:
    from pyclperf.tuner.search.regions import least_tried

    setting = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    cand = np.array([False, True, True, False, True, False, False, False])
    rng = np.random.default_rng(0)
    # setting 2 was tried least (once) but has no candidate left; setting 1 twice, 0 once more
    seen = np.array([0, 3, 3, 5, 0, 0])
    assert least_tried(setting, seen, cand, rng).tolist() == [False] * 4 + [True] + [False] * 3
    # a tie between settings 0 and 1 (one evaluation each) is drawn at random
    picks = {tuple(least_tried(setting, np.array([0, 3]), cand, rng)) for _ in range(40)}
    assert picks == {(False, True, True) + (False,) * 5,
                     (False,) * 4 + (True,) + (False,) * 3}


def _shapes_and_switches() -> tuple[list[list[int]], np.ndarray, np.ndarray]:
    """A space of two ten-valued shapes and three switches: its levels, value indices, sizes."""
    import itertools

    levels = [list(range(1, 11)), list(range(1, 11))] + [[0, 1]] * 3
    X = np.array(list(itertools.product(range(10), range(10), *[range(2)] * 3)))
    return levels, X, np.array([10, 10, 2, 2, 2])


def test_a_fifth_of_the_steps_from_20_go_to_the_least_tried_setting(monkeypatch) -> None:
    """On a space whose fast configurations all share one setting of three switches, every
    setting step evaluates a configuration of the setting tried least so far; such steps are
    about SETTING_SHARE of those from evaluation SETTING_FROM on, none before; and the setting
    tried least gets more evaluations than in the same runs without them."""
    import random

    from pyclperf.tuner.search import auto

    levels, X, sizes = _shapes_and_switches()
    setting = auto.settings(X, sizes)
    bowl = 1.0 + 0.1 * ((X[:, 0] - 6) ** 2 + (X[:, 1] - 3) ** 2)
    objective = np.where(setting == 0, bowl, 4.0 * bowl)
    steps: list[tuple[int, int]] = []           # each setting step: its evaluation, its setting
    seen: list[int] = []
    original = auto.least_tried

    def watched(setting_, seen_, cand, rng):
        chosen = original(setting_, seen_, cand, rng)
        counts = np.bincount(setting_[seen_], minlength=8)
        left = np.unique(setting_[cand])
        picked = int(setting_[chosen][0])
        assert counts[picked] == counts[left].min() and (setting_[chosen] == picked).all()
        steps.append((len(seen_), picked))
        return chosen

    def fewest(share: float) -> int:
        """The evaluations of the setting tried least, summed over the runs."""
        monkeypatch.setattr(auto, "SETTING_SHARE", share)
        least = 0
        for seed in range(3):
            seen.clear()
            gen = auto.program(X, sizes, random.Random(seed), 80, levels, endgame=False)
            i = next(gen)
            for _ in range(79):
                seen.append(i)
                i = gen.send(float(objective[i]))
                if steps and steps[-1][0] == len(seen):    # this row is that step's pick
                    assert setting[i] == steps[-1][1]
            seen.append(i)
            least += int(np.bincount(setting[seen], minlength=8).min())
        return least

    monkeypatch.setattr(auto, "least_tried", watched)
    with_steps = fewest(auto.SETTING_SHARE)
    assert min(n for n, _ in steps) >= auto.SETTING_FROM
    assert 0.1 <= len(steps) / (3 * (80 - auto.SETTING_FROM)) <= 0.3
    steps.clear()
    without = fewest(0.0)
    assert not steps
    assert with_steps > without


def test_a_fixed_model_is_conditioned_without_a_fit_and_rescaled_on_request() -> None:
    """``condition`` keeps the hyperparameters it was given and gives the dense posterior under
    them; ``predict(rescale=True)`` standardises by the targets it is handed, so a model extended
    one row at a time predicts as one conditioned afresh on all of them."""
    from pyclperf.tuner.search.gp_pool import PoolGP

    rng = np.random.default_rng(11)
    Z = rng.integers(0, 6, (300, 4)).astype(float)
    y_all = np.exp(rng.standard_normal(300))
    rows = [int(r) for r in rng.choice(300, 12, replace=False)]
    theta = np.r_[np.full(4, np.log(0.8)), np.log(20.0), np.log(1e-6)]
    grown = PoolGP(Z, cap=13, theta=theta.copy())
    grown.condition(rows[:5], y_all[rows[:5]])
    for r in rows[5:]:
        grown.add(r)
    assert np.array_equal(grown.theta, theta)
    fresh = PoolGP(Z, cap=13, theta=theta.copy())
    fresh.condition(rows, y_all[rows])
    want_mu, want_sd = fresh.predict(y_all[rows])
    # until rescaled it keeps the scale of the five it was conditioned on
    assert grown.mu == float(y_all[rows[:5]].mean()) != fresh.mu
    assert not np.allclose(grown.predict(y_all[rows])[0], want_mu, atol=1e-3)
    mu, sd = grown.predict(y_all[rows], rescale=True)
    assert (grown.mu, grown.sd) == (fresh.mu, fresh.sd)
    assert np.allclose(mu, want_mu, atol=1e-6) and np.allclose(sd, want_sd, atol=1e-6)


def test_a_fifth_of_the_steps_before_the_end_game_explore_by_the_fixed_model(monkeypatch) -> None:
    """Every exploring step evaluates the configuration of highest expected improvement under
    the fixed model, written out densely here (raw times, a Matern-3/2 kernel of 0.8 index steps,
    20 times the observations' variance); such steps are about EXPLORE_SHARE of those before
    evaluation EXPLORE_UNTIL, and none from it on."""
    import random

    from scipy.stats import norm

    from pyclperf.tuner.search import auto
    from pyclperf.tuner.search.gp_pool import PoolGP, _matern32

    levels, X, sizes = _shapes_and_switches()
    objective = (1.0 + 0.1 * ((X[:, 0] - 6) ** 2 + (X[:, 1] - 3) ** 2)) * (1 + X[:, 2:].sum(1))
    explored: list[int] = []                    # each exploring step: its evaluation
    steps = 0

    class Watched(PoolGP):
        def predict(self, y, rescale=False):
            out = super().predict(y, rescale)
            if rescale:                         # the fixed model: no larger than it needs
                assert self.cap <= auto.EXPLORE_UNTIL + 1
                explored.append(len(y))
            return out

    monkeypatch.setattr(auto, "PoolGP", Watched)
    r2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1) / auto.EXPLORE_LENGTH ** 2
    K = auto.EXPLORE_SIGNAL * _matern32(r2)[0]
    budget = 80
    for seed in range(3):
        seen: list[int] = []
        gen = auto.program(X, sizes, random.Random(seed), budget, levels)
        i = next(gen)
        for _ in range(budget - 1):
            seen.append(i)
            before = len(explored)
            i = gen.send(float(objective[i]))
            if len(explored) > before:          # this row is an exploring step's pick
                t = objective[seen]
                yy = (t - t.mean()) / (t.std() + 1e-9)
                A = K[np.ix_(seen, seen)] + (auto.EXPLORE_NOISE + 1e-8) * np.eye(len(seen))
                m = K[:, seen] @ np.linalg.solve(A, yy)
                s = np.sqrt(np.maximum(auto.EXPLORE_SIGNAL - np.einsum(
                    "ij,ji->i", K[:, seen], np.linalg.solve(A, K[seen, :])), 1e-12))
                z = (yy.min() - m) / s
                ei = (yy.min() - m) * norm.cdf(z) + s * norm.pdf(z)
                ei[seen] = -np.inf
                assert i not in seen and ei[i] >= ei.max() - 1e-6 * abs(ei.max())
        steps += auto.EXPLORE_UNTIL - auto.opening(budget)[0]
    assert explored and max(explored) < auto.EXPLORE_UNTIL < auto.endgame_start(budget)
    assert 0.1 <= len(explored) / steps <= 0.3


def test_a_small_budget_steps_into_the_least_tried_setting_from_twice_its_start(monkeypatch) -> None:
    """A budget of 20 starts from 4 configurations, so its setting steps begin at evaluation 8,
    not SETTING_FROM (20, which such a run never reaches); a budget of 40 keeps SETTING_FROM."""
    import random

    from pyclperf.tuner.search import auto

    levels, X, sizes = _shapes_and_switches()
    objective = 1.0 + 0.1 * ((X[:, 0] - 6) ** 2 + (X[:, 1] - 3) ** 2) + auto.settings(X, sizes)
    original = auto.least_tried
    at: list[int] = []

    def watched(setting_, seen_, cand, rng):
        at.append(len(seen_))
        return original(setting_, seen_, cand, rng)

    monkeypatch.setattr(auto, "least_tried", watched)
    for budget, first in ((20, 8), (40, auto.SETTING_FROM)):
        assert auto.opening(budget)[2] == first
        at.clear()
        for seed in range(6):
            gen = auto.program(X, sizes, random.Random(seed), budget, levels, endgame=False)
            i = next(gen)
            for _ in range(budget - 1):
                i = gen.send(float(objective[i]))
        assert at and min(at) >= first
        assert budget > 20 or min(at) < auto.SETTING_FROM
