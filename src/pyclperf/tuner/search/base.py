"""What every strategy shares: the allowed set, what was handed out and told, and the budget.

Configurations are tracked by their id in the searchspace.Space (their index in the product of
the parameters' values), so no strategy hands out a configuration twice nor one the
restrictions rule out, and a configuration told once (measured, or resumed from a file) is
never asked for again.
"""

from __future__ import annotations

import math
import random
import time
from typing import Any, Callable, Iterator, Protocol, Sequence

from ..searchspace import EXACT_LIMIT, Space, as_space


class Strategy(Protocol):
    """What the engine drives."""

    def ask(self) -> dict | None: ...

    def tell(self, config: dict, objective: float | None) -> None: ...


def small_ids(space: Space) -> Sequence[int] | None:
    """The allowed ids when few enough to list, else None."""
    ids = space.allowed_ids
    return ids if ids is not None and len(ids) <= EXACT_LIMIT else None


class Base:
    """Bookkeeping shared by all strategies. ``algorithm`` says what runs, for the rows."""

    algorithm = ""
    informed = True          # whether it chooses from what it was told (parallel engines ask)

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

    def penalty(self) -> float:
        """What a failed or disallowed configuration is worth to an optimiser that needs a
        number: well above the worst objective seen (finite, so its arithmetic stays finite)."""
        done = [v for v in self.results.values() if v is not None]
        if not done:
            return 1e12
        worst, best = max(done), min(done)
        return worst + 10.0 * max(worst - best, abs(worst), 1e-12)

    def close(self) -> None:
        """Release what the strategy holds (a thread, a study); asking afterwards gives None."""


class RandomOrder:
    """The allowed ids in a seeded random order, each once: a shuffled list where the allowed
    set is listed, else a lazy walk of the product (searchspace.Shuffle)."""

    def __init__(self, space: Space, rng: random.Random) -> None:
        ids = small_ids(space)
        if ids is not None:
            order = list(range(len(ids)))
            rng.shuffle(order)
            self._it: Iterator[int] = (ids[k] for k in order)
        else:
            self._it = space.shuffled(rng)

    def next_unseen(self, seen: set[int]) -> int | None:
        return next((i for i in self._it if i not in seen), None)


class BruteForce(Base):
    """Every allowed config, in the given (product) order, walked lazily."""

    algorithm = "every configuration in order"
    informed = False

    def __init__(self, configs: Space | Sequence[dict]) -> None:
        super().__init__(configs)
        self._walk = self.space.ids()

    def ask(self) -> dict | None:
        for i in self._walk:
            if i not in self.seen:
                self.seen.add(i)
                return self.space.config(i)
        return None


class RandomSample(Base):
    """A seeded random permutation, cut to ``limit`` configs (resumed ones count toward it)."""

    algorithm = "a seeded random permutation"
    informed = False

    def __init__(self, configs: Space | Sequence[dict], seed: int | None,
                 limit: int | None) -> None:
        super().__init__(configs)
        self._order = RandomOrder(self.space, random.Random(seed))
        count = self.space.allowed_count
        self._limit = (self.space.size if count is None else count) if limit is None else limit

    def ask(self) -> dict | None:
        if len(self.seen) >= self._limit:
            return None
        i = self._order.next_unseen(self.seen)
        if i is None:
            return None
        self.seen.add(i)
        return self.space.config(i)


class Budget:
    """At most ``max_fevals`` evaluations and ``time_limit`` seconds (either None for no bound).
    Evaluations counted are those told, resumed ones included: like Kernel Tuner, a resumed run
    with the same budget continues toward the same total. Time is the clock's from creation, or,
    where a replay charges each evaluation the time it was recorded to take (``charge``), that
    simulated time: Kernel Tuner's simulation mode counts a time limit the same way."""

    def __init__(self, max_fevals: int | None = None, time_limit: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if max_fevals is not None and (not isinstance(max_fevals, int) or isinstance(max_fevals, bool)
                                       or max_fevals < 0):
            raise ValueError(f"max_fevals must be a non-negative integer, not {max_fevals!r}")
        if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(time_limit, (int, float))
                                       or not time_limit >= 0):
            raise ValueError(f"time_limit must be a non-negative number of seconds, not {time_limit!r}")
        self.max_fevals = max_fevals
        self.time_limit = time_limit
        self._clock = clock
        self._start = clock()
        self.fevals = 0
        self.simulated: float | None = None           # seconds, once a replay charges any

    def add(self, n: int = 1) -> None:
        self.fevals += n

    def charge(self, seconds: float) -> None:
        """Count ``seconds`` of recorded (replayed) work instead of the clock's."""
        self.simulated = (self.simulated or 0.0) + max(0.0, float(seconds))

    def elapsed(self) -> float:
        return self.simulated if self.simulated is not None else self._clock() - self._start

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

    def __getattr__(self, name: str) -> Any:          # best(), history, close(), ...
        return getattr(self.inner, name)
