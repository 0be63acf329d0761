"""Search strategies behind one ask/tell interface, plus the evaluation/time budget.

The engine owns measuring; a strategy only decides which allowed config to measure next::

    s = make_strategy("tpe", configs, seed=1, max_fevals=50)
    for cfg, objective in resumed: s.tell(cfg, objective)     # learnt from, never re-run
    while (cfg := s.ask()) is not None:
        s.tell(cfg, measure(cfg))                             # None when the config failed

Objectives are minimised (pass a time, or the negative of a higher-is-better metric). ``configs``
is the allowed set (already pruned by the restrictions); no strategy returns a config twice nor one
outside that set. Strategies: ``brute_force`` (in order), ``random_sample`` (a seeded permutation,
``fraction`` of the space like Kernel Tuner's, default 0.1), and ``tpe``/``bayes_opt`` (Optuna's
TPE sampler, ``pip install "pyclperf[tune]"``).
"""

from __future__ import annotations

import math
import random
import time
from typing import Any, Callable, Hashable, Protocol, Sequence

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


def _key(cfg: dict, names: Sequence[str]) -> tuple[Hashable, ...]:
    return tuple(cfg[n] for n in names)


class _Base:
    """Bookkeeping shared by all strategies: the allowed set, what was handed out or told."""

    def __init__(self, configs: Sequence[dict]) -> None:
        if not configs:
            raise ValueError("no configs to search: every config was removed by the restrictions")
        self.names: list[str] = list(configs[0])
        self.configs = [dict(c) for c in configs]
        self.index = {_key(c, self.names): i for i, c in enumerate(self.configs)}
        self.seen: set[int] = set()                   # handed out by ask() or told
        self.results: dict[int, float | None] = {}    # told objectives
        self.history: list[tuple[dict, float | None]] = []

    def _index_of(self, cfg: dict) -> int:
        try:
            return self.index[_key(cfg, self.names)]
        except KeyError:
            raise ValueError(f"config {cfg} is not one of the allowed configs") from None

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
        return dict(self.configs[i]), v


class BruteForce(_Base):
    """Every allowed config, in the given order."""

    def __init__(self, configs: Sequence[dict]) -> None:
        super().__init__(configs)
        self._next = 0

    def ask(self) -> dict | None:
        while self._next < len(self.configs) and self._next in self.seen:
            self._next += 1
        if self._next == len(self.configs):
            return None
        self.seen.add(self._next)
        return dict(self.configs[self._next])


class RandomSample(_Base):
    """A seeded random permutation, cut to ``limit`` configs (resumed ones count toward it)."""

    def __init__(self, configs: Sequence[dict], seed: int | None, limit: int | None) -> None:
        super().__init__(configs)
        self._order = list(range(len(self.configs)))
        random.Random(seed).shuffle(self._order)
        self._limit = len(self.configs) if limit is None else limit
        self._pos = 0

    def ask(self) -> dict | None:
        while self._pos < len(self._order) and len(self.seen) < self._limit:
            i = self._order[self._pos]
            self._pos += 1
            if i not in self.seen:
                self.seen.add(i)
                return dict(self.configs[i])
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


def make_strategy(name: str, configs: Sequence[dict], *, seed: int | None = None,
                  options: dict[str, Any] | None = None, max_fevals: int | None = None,
                  time_limit: float | None = None) -> Any:
    """The strategy ``name`` over the allowed ``configs``.

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
    if name == "brute_force":
        inner = BruteForce(configs)
    elif name == "random_sample":
        fraction = float(opts.get("fraction", 0.1))
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"random_sample's fraction must lie in [0, 1], not {fraction}")
        # As in Kernel Tuner, an explicit max_fevals replaces the fraction.
        limit = None if max_fevals is not None else math.ceil(len(configs) * fraction)
        inner = RandomSample(configs, seed, limit)
    else:
        from .tpe import TPEStrategy                # lazily: only this one needs Optuna
        inner = TPEStrategy(configs, seed=seed,
                            n_startup_trials=int(opts.get("n_startup_trials", 10)),
                            max_retries=int(opts.get("max_retries", 20)))
    if max_fevals is None and time_limit is None:
        return inner
    return Budgeted(inner, Budget(max_fevals, time_limit))
