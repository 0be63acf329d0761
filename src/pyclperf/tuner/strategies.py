"""Search strategies behind one ask/tell interface, plus the evaluation/time budget.

The engine owns measuring; a strategy only decides which allowed config to measure next::

    s = make_strategy("tpe", configs, seed=1, max_fevals=50)
    for cfg, objective in resumed: s.tell(cfg, objective)     # learnt from, never re-run
    while (cfg := s.ask()) is not None:
        s.tell(cfg, measure(cfg))                             # None when the config failed

Objectives are minimised (pass a time, or the negative of a higher-is-better metric). ``configs``
is the allowed set: a list (already pruned by the restrictions) or a searchspace.Space, which
applies them as it goes and is never enumerated whole; no strategy returns a config twice nor one
outside that set. Strategies: ``brute_force`` (in order), ``random_sample`` (a seeded permutation,
``fraction`` of the space like Kernel Tuner's, default 0.1), and ``tpe``/``bayes_opt`` (Optuna's
TPE sampler, ``pip install "pyclperf[tune]"``).

Over a large space (more allowed configurations than searchspace.EXACT_LIMIT, or a count the
restrictions leave unknown) the random order is a lazily walked permutation of the product
(searchspace.Shuffle) rather than a shuffled list, so the first configuration comes at once.
"""

from __future__ import annotations

import math
import random
import time
from typing import Any, Callable, Iterator, Protocol, Sequence

from .searchspace import EXACT_LIMIT, Space, as_space

STRATEGIES = ("brute_force", "random_sample", "tpe", "bayes_opt")
# Options each strategy understands beyond the budget ones (every strategy takes those).
_BUDGET_OPTIONS = ("max_fevals", "time_limit")
_OPTIONS: dict[str, tuple[str, ...]] = {
    "brute_force": (),
    "random_sample": ("fraction",),
    "tpe": ("n_startup_trials", "max_retries"),
    "bayes_opt": ("n_startup_trials", "max_retries"),
}


class Strategy(Protocol):
    """What the engine drives."""

    def ask(self) -> dict | None: ...

    def tell(self, config: dict, objective: float | None) -> None: ...


def small_ids(space: Space) -> Sequence[int] | None:
    """The allowed ids when few enough to list (the original strategies' lists), else None."""
    ids = space.allowed_ids
    return ids if ids is not None and len(ids) <= EXACT_LIMIT else None


class _Base:
    """Bookkeeping shared by all strategies: the allowed set, what was handed out or told.
    Configurations are tracked by their id in the space."""

    def __init__(self, configs: Space | Sequence[dict]) -> None:
        self.space = as_space(configs)
        if self.space.allowed_count == 0:
            raise ValueError("no configs to search: every config was removed by the restrictions")
        self.names: list[str] = list(self.space.names)
        self.seen: set[int] = set()                   # handed out by ask() or told
        self.results: dict[int, float | None] = {}    # told objectives
        self.history: list[tuple[dict, float | None]] = []

    def _index_of(self, cfg: dict) -> int:
        i = self.space.index(cfg)
        if i is None or (i not in self.seen and not self.space.allows_id(i, report=False)):
            raise ValueError(f"config {cfg} is not one of the allowed configs")
        return i

    def _exhausted(self) -> bool:
        count = self.space.allowed_count
        return count is not None and len(self.seen) >= count

    def tell(self, config: dict, objective: float | None) -> None:
        i = self._index_of(config)
        self.seen.add(i)
        self.results[i] = None if objective is None or not math.isfinite(objective) else float(objective)
        self.history.append((dict(config), self.results[i]))

    def best(self) -> tuple[dict, float] | None:
        """The config with the lowest objective told so far."""
        done = [(v, i) for i, v in self.results.items() if v is not None]
        if not done:
            return None
        v, i = min(done)
        return self.space.config(i), v


class BruteForce(_Base):
    """Every allowed config, in the given (product) order, walked lazily."""

    def __init__(self, configs: Space | Sequence[dict]) -> None:
        super().__init__(configs)
        self._walk = self.space.ids()

    def ask(self) -> dict | None:
        for i in self._walk:
            if i not in self.seen:
                self.seen.add(i)
                return self.space.config(i)
        return None


class RandomSample(_Base):
    """A seeded random permutation, cut to ``limit`` configs (resumed ones count toward it)."""

    def __init__(self, configs: Space | Sequence[dict], seed: int | None,
                 limit: int | None) -> None:
        super().__init__(configs)
        rng = random.Random(seed)
        ids = small_ids(self.space)
        self._order: Iterator[int]
        if ids is not None:
            order = list(range(len(ids)))
            rng.shuffle(order)
            self._order = (ids[k] for k in order)
        else:
            self._order = self.space.shuffled(rng)
        count = self.space.allowed_count
        self._limit = (self.space.size if count is None else count) if limit is None else limit

    def ask(self) -> dict | None:
        while len(self.seen) < self._limit:
            i = next(self._order, None)
            if i is None:
                return None
            if i not in self.seen:
                self.seen.add(i)
                return self.space.config(i)
        return None


class Budget:
    """At most ``max_fevals`` evaluations and ``time_limit`` seconds from creation (either None
    for no bound). Evaluations counted are those told, resumed ones included: like Kernel Tuner,
    a resumed run with the same budget continues toward the same total."""

    def __init__(self, max_fevals: int | None = None, time_limit: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if max_fevals is not None and (not isinstance(max_fevals, int) or max_fevals < 0):
            raise ValueError(f"max_fevals must be a non-negative integer, not {max_fevals!r}")
        if time_limit is not None and not time_limit >= 0:
            raise ValueError(f"time_limit must be a non-negative number of seconds, not {time_limit!r}")
        self.max_fevals = max_fevals
        self.time_limit = time_limit
        self._clock = clock
        self._start = clock()
        self.fevals = 0

    def add(self, n: int = 1) -> None:
        self.fevals += n

    def elapsed(self) -> float:
        return self._clock() - self._start

    def spent(self) -> bool:
        return ((self.max_fevals is not None and self.fevals >= self.max_fevals)
                or (self.time_limit is not None and self.elapsed() >= self.time_limit))


class Budgeted:
    """A strategy whose ask() returns None once the budget is spent (configs handed out but not
    yet told count too, so a budget of n never hands out more than n)."""

    def __init__(self, inner: Any, budget: Budget) -> None:
        self.inner = inner
        self.budget = budget
        self._outstanding = 0

    def ask(self) -> dict | None:
        if self.budget.max_fevals is not None \
                and self.budget.fevals + self._outstanding >= self.budget.max_fevals:
            return None
        if self.budget.spent():
            return None
        cfg = self.inner.ask()
        if cfg is not None:
            self._outstanding += 1
        return cfg

    def tell(self, config: dict, objective: float | None) -> None:
        i = self.inner._index_of(config)
        if i in self.inner.seen and i not in self.inner.results:
            self._outstanding = max(self._outstanding - 1, 0)  # answer to one of our asks
        self.inner.tell(config, objective)
        self.budget.add()

    def __getattr__(self, name: str) -> Any:          # best(), history, ... of the inner one
        return getattr(self.inner, name)


def make_strategy(name: str, configs: Space | Sequence[dict], *, seed: int | None = None,
                  options: dict[str, Any] | None = None, max_fevals: int | None = None,
                  time_limit: float | None = None) -> Any:
    """The strategy ``name`` over the allowed ``configs`` (a list, or a searchspace.Space).

    ``options`` takes Kernel Tuner's strategy_options keys: "max_fevals" and "time_limit" (seconds)
    for every strategy, "fraction" for random_sample, "n_startup_trials" and "max_retries" for
    tpe/bayes_opt. The keyword ``max_fevals``/``time_limit`` override the options' ones. An
    unknown strategy or option is a ValueError naming the allowed ones.
    """
    if name not in _OPTIONS:
        raise ValueError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}")
    opts = dict(options or {})
    unknown = sorted(set(opts) - set(_OPTIONS[name]) - set(_BUDGET_OPTIONS))
    if unknown:
        raise ValueError(f"strategy {name!r} has no option {', '.join(map(repr, unknown))}; its "
                         f"options are {', '.join(_OPTIONS[name] + _BUDGET_OPTIONS)}")
    if max_fevals is None:
        max_fevals = opts.get("max_fevals")
    if time_limit is None:
        time_limit = opts.get("time_limit")
    inner: Any
    configs = as_space(configs)
    if name == "brute_force":
        inner = BruteForce(configs)
    elif name == "random_sample":
        fraction = float(opts.get("fraction", 0.1))
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"random_sample's fraction must lie in [0, 1], not {fraction}")
        # As in Kernel Tuner, an explicit max_fevals replaces the fraction (of the allowed
        # configurations, or of the whole product where they are too many to count).
        count = configs.allowed_count
        limit = None if max_fevals is not None else math.ceil(
            (configs.size if count is None else count) * fraction)
        inner = RandomSample(configs, seed, limit)
    else:
        from .tpe import TPEStrategy  # lazily: only this one needs Optuna
        inner = TPEStrategy(configs, seed=seed,
                            n_startup_trials=int(opts.get("n_startup_trials", 10)),
                            max_retries=int(opts.get("max_retries", 20)))
    if max_fevals is None and time_limit is None:
        return inner
    return Budgeted(inner, Budget(max_fevals, time_limit))
