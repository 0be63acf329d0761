"""Every strategy name (Kernel Tuner 1.5's 21, tpe and auto) over one restricted space: only
allowed configurations, none twice, reproducible from the seed, bounded by max_fevals and
time_limit, and a thread-driven optimiser stopped when the search ends."""

from __future__ import annotations

import itertools
import math
import threading
import time
import warnings

import pytest

from pyclperf.tuner.searchspace import Space
from pyclperf.tuner.restrictions import compile_restrictions
from pyclperf.tuner.strategies import NAMES, STRATEGIES, make_strategy

pytest.importorskip("scipy", reason="the search strategies need the tune extra (pip install \"pyclperf[tune]\")")
pytest.importorskip("nevergrad", reason="the search strategies need the tune extra")
pytest.importorskip("optuna", reason="the search strategies need the tune extra")

PARAMS = {"bx": [16, 32, 64, 128, 256], "by": [1, 2, 4, 8], "tile": [1, 2, 3, 4], "vec": [1, 2, 4],
          "flag": [0, 1], "mode": ["a", "b"]}
RESTRICT = ["bx * by <= 512", "tile * vec <= 8"]


def space() -> Space:
    return Space(PARAMS, compile_restrictions(RESTRICT, list(PARAMS)))


def cost(c: dict) -> float:
    """A rugged landscape with one best configuration."""
    return (1.0 + (math.log2(c["bx"]) - 5) ** 2 + (math.log2(c["by"]) - 1) ** 2
            + 0.5 * abs(c["tile"] - 3) + 0.3 * (c["vec"] != 2) + 0.2 * c["flag"]
            + (0.4 if c["mode"] == "a" else 0.0) + 0.05 * ((c["bx"] * c["tile"]) % 7))


def drive(s, f=cost, fail=lambda c: False) -> list[dict]:
    out = []
    while (c := s.ask()) is not None:
        out.append(c)
        s.tell(c, None if fail(c) else f(c))
    s.close()
    return out


def key(c: dict) -> tuple:
    return tuple(c[n] for n in PARAMS)


@pytest.mark.parametrize("name", NAMES)
def test_allowed_distinct_bounded_and_reproducible(name: str) -> None:
    allowed = {key(c) for c in (dict(zip(PARAMS, v)) for v in itertools.product(*PARAMS.values()))
               if c["bx"] * c["by"] <= 512 and c["tile"] * c["vec"] <= 8}
    runs = []
    for _ in range(2):
        s = make_strategy(name, space(), seed=7, max_fevals=40)
        asked = drive(s, fail=lambda c: c["bx"] == 256 and c["by"] == 2)
        runs.append([key(c) for c in asked])
    a = runs[0]
    assert len(a) == 40                                   # the budget is used, not exceeded
    assert len(set(a)) == len(a)                          # no configuration twice
    assert set(a) <= allowed                              # nothing the restrictions rule out
    assert runs[0] == runs[1]                             # the seed decides everything
    other = drive(make_strategy(name, space(), seed=8, max_fevals=40))
    if name not in ("brute_force", "auto"):               # these two do not draw at random
        assert [key(c) for c in other] != a


@pytest.mark.parametrize("name", NAMES)
def test_every_strategy_says_what_runs_and_stops_on_time(name: str) -> None:
    s = make_strategy(name, space(), seed=1, time_limit=0.3)
    assert isinstance(s.algorithm, str) and s.algorithm
    start = time.monotonic()
    n = 0

    def slow(c: dict) -> float:
        time.sleep(0.02)
        return cost(c)
    n = len(drive(s, slow))
    assert time.monotonic() - start < 3.0 and 1 <= n < 200


@pytest.mark.parametrize("name", [n for n in NAMES if STRATEGIES[n].family in ("scipy", "local")])
def test_a_stopped_search_leaves_no_thread_behind(name: str) -> None:
    before = {t for t in threading.enumerate() if t.name == "pyclperf-search"}
    s = make_strategy(name, space(), seed=3, max_fevals=5)
    drive(s)
    s.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        left = {t for t in threading.enumerate() if t.name == "pyclperf-search"} - before
        if not left:
            break
        time.sleep(0.05)
    assert not left


def _search_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "pyclperf-search"}


def test_a_search_closed_while_an_optimiser_waits_ends_its_thread() -> None:
    before = _search_threads()
    s = make_strategy("dual_annealing", space(), seed=3)
    c = s.ask()                          # the optimiser's thread now waits for this answer
    assert c is not None
    assert _search_threads() - before
    s.close()
    deadline = time.monotonic() + 5
    while _search_threads() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _search_threads() - before
    assert s.ask() is None


def test_a_strategy_dropped_unclosed_ends_its_thread() -> None:
    import gc

    before = _search_threads()
    s = make_strategy("basinhopping", space(), seed=3)
    assert s.ask() is not None and _search_threads() - before
    del s
    gc.collect()
    deadline = time.monotonic() + 5
    while _search_threads() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _search_threads() - before


@pytest.mark.parametrize("name", ["dual_annealing", "mls", "pso", "genetic_algorithm"])
def test_an_engine_that_asks_twice_before_telling_gets_distinct_configs(name: str) -> None:
    s = make_strategy(name, space(), seed=5, max_fevals=30)
    seen = []
    while True:
        batch = [c for c in (s.ask(), s.ask(), s.ask()) if c is not None]
        if not batch:
            break
        seen += [key(c) for c in batch]
        for c in batch:
            s.tell(c, cost(c))
    s.close()
    assert len(seen) == len(set(seen)) == 30


def test_resumed_configurations_are_never_asked_again() -> None:
    for name in NAMES:
        s = make_strategy(name, space(), seed=0, max_fevals=30)
        resumed = [space().config(i) for i in space().allowed_ids][::50]
        for c in resumed:
            s.tell(c, cost(c))
        asked = drive(s)
        assert not {key(c) for c in asked} & {key(c) for c in resumed}, name
        assert 0 < len(resumed) < 30 and len(asked) + len(resumed) == 30, name


def test_options_kernel_tuner_gives_are_used_named_or_refused() -> None:
    with pytest.raises(ValueError, match="strategy 'pso' has no option 'nope'; its options are popsize"):
        make_strategy("pso", space(), options={"nope": 1})
    with pytest.warns(UserWarning, match="simulated_annealing.*no use for 'T', 'alpha'"):
        make_strategy("simulated_annealing", space(), options={"T": 0.5, "alpha": 0.9}).close()
    with pytest.raises(ValueError, match="unknown strategy 'genetic'; choose one of auto"):
        make_strategy("genetic", space())
    with pytest.raises(ValueError, match="method 'Simplex' is not one of"):
        make_strategy("dual_annealing", space(), options={"method": "Simplex"})
    with pytest.raises(ValueError, match="neighbor 'diagonal' is not one of"):
        make_strategy("greedy_mls", space(), options={"neighbor": "diagonal"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # a used option warns of nothing
        make_strategy("diff_evo", space(), options={"popsize": 4, "F": 0.5, "CR": 0.9,
                                                    "method": "rand1bin"}).close()


def test_x0_is_measured_first() -> None:
    x0 = {"bx": 64, "by": 4, "tile": 2, "vec": 2, "flag": 1, "mode": "b"}
    for name in ("pso", "dual_annealing", "mls", "tpe"):
        s = make_strategy(name, space(), seed=2, options={"x0": x0}, max_fevals=5)
        asked = drive(s)
        assert asked[0] == x0 and len(asked) == 5 and x0 not in asked[1:], name
    with pytest.raises(ValueError, match="x0 .* is not one of the allowed configurations"):
        make_strategy("pso", space(), options={"x0": {**x0, "bx": 256, "by": 8}})


def test_local_searches_follow_their_neighbourhood() -> None:
    """From its first configuration, mls evaluates only configurations one parameter away
    until it moves: its second to sixth asks differ from the first in exactly one parameter."""
    s = make_strategy("mls", space(), seed=4, max_fevals=6)
    asked = drive(s)
    first = key(asked[0])
    for c in asked[1:]:
        assert sum(a != b for a, b in zip(key(c), first)) == 1


@pytest.mark.parametrize("name", ["nsga2", "nsga3", "genetic_algorithm", "tpe", "auto"])
def test_several_objectives(name: str) -> None:
    s = make_strategy(name, space(), seed=1, max_fevals=25, objectives=2)
    asked = []
    while (c := s.ask()) is not None:
        asked.append(c)
        s.tell(c, (cost(c), float(c["bx"] * c["by"])))
    s.close()
    assert len(asked) == len({key(c) for c in asked}) == 25
    with pytest.raises(ValueError, match="'pso' minimises one objective"):
        make_strategy("pso", space(), objectives=2)


def test_the_model_based_searches_beat_random_on_a_structured_space() -> None:
    """Over 8 seeds, the mean best cost after 30 evaluations: each searching strategy of the
    model-based and evolutionary kinds does at least as well as random sampling."""
    def mean_best(name: str) -> float:
        bests = []
        for seed in range(8):
            s = make_strategy(name, space(), seed=seed, max_fevals=30)
            bests.append(min(cost(c) for c in drive(s)))
        return sum(bests) / len(bests)
    baseline = mean_best("random_sample")
    for name in ("auto", "tpe", "genetic_algorithm"):
        assert mean_best(name) <= baseline + 1e-9, name
