"""The configurations a tuning run may measure, numbered and never built whole.

A configuration's id is its index in the cartesian product of the parameters' values (last
parameter fastest, the order of itertools.product and of space.configurations), decoded on
demand. Restrictions are applied as a strategy walks or samples the product, so a space of 10^9
configurations costs what the configurations measured cost, not gigabytes up front.

A space of at most ``EXACT_LIMIT`` configurations with restrictions is walked once when made:
its allowed ids are kept (8 bytes each), and so are the configurations whose restriction
raised, which tune() writes as ``invalid`` rows before the sweep. That count is exact. A larger
space is only walked as far as a strategy asks; its allowed count is unknown (None), and a
configuration whose restriction raises is reported to ``on_failed`` when a walk meets it.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from array import array
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from .measure import restriction_verdict
from .space import Config, check_params, config_key

# Spaces with restrictions up to this size are counted when made. Measured on a CPU core here:
# 10^6 configurations under one string restriction take ~8 s to walk, 10^5 under one second.
EXACT_LIMIT = 100_000
# A random walk of a huge space gives up after this many disallowed configurations in a row
# (about a second of restriction checks): the allowed ones are too rare to find by sampling.
MAX_MISSES = 100_000


class Shuffle:
    """A seeded pseudo-random permutation of range(n), walked lazily in O(1) memory: a
    four-round Feistel network permutes the counter over the next even power of two, and values
    of n or more are passed over (at most 4 steps per value on average). Every value comes
    exactly once, so sampling a huge space this way never draws a configuration twice."""

    def __init__(self, n: int, rng: random.Random) -> None:
        self.n = n
        bits = max(2, (n - 1).bit_length())
        bits += bits & 1
        self._half = bits // 2
        self._mask = (1 << self._half) - 1
        self._keys = [rng.getrandbits(64) for _ in range(4)]
        self._end = 1 << bits
        self._pos = 0

    def _round(self, x: int, key: int) -> int:
        h = ((x ^ key) * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF   # a 64-bit mixer
        h ^= h >> 31
        h = (h * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        return (h ^ (h >> 29)) & self._mask

    def _permute(self, x: int) -> int:
        left, right = x >> self._half, x & self._mask
        for key in self._keys:
            left, right = right, left ^ self._round(right, key)
        return (left << self._half) | right

    def __iter__(self) -> Iterator[int]:
        return self

    def __next__(self) -> int:
        while self._pos < self._end:
            y = self._permute(self._pos)
            self._pos += 1
            if y < self.n:
                return y
        raise StopIteration


def value_key(v: Any) -> tuple[bool, Any]:
    """A parameter value as a dict key: True and 1 (and False and 0) are equal in Python but
    different parameter values, so booleans are told apart; 128 and np.int64(128) stay equal."""
    return (isinstance(v, (bool, np.bool_)), v)


def _positions(values: Sequence[Any]) -> dict[Any, int] | None:
    """value -> its first position, or None when a value is unhashable (then searched)."""
    out: dict[Any, int] = {}
    try:
        for i, v in enumerate(values):
            out.setdefault(value_key(v), i)
    except TypeError:
        return None
    return out


class Space:
    """The configurations of ``params`` that ``restrictions`` (callables of a config, as
    tuner.restrictions makes them) allow, numbered by their index in the product."""

    def __init__(self, params: Mapping[str, Sequence[Any]],
                 restrictions: Sequence[Callable[[Config], Any]] = (), *,
                 exact_limit: int = EXACT_LIMIT) -> None:
        self.names: list[str] = check_params(params)
        self.values = [list(params[n]) for n in self.names]
        radices = [len(v) for v in self.values]
        self.size = math.prod(radices)
        self._digits = [(math.prod(radices[k + 1:]), r) for k, r in enumerate(radices)]
        self._positions = [_positions(v) for v in self.values]
        self.restrictions = list(restrictions)
        # Configurations whose restriction raised: all of them in a counted space, else empty
        # (they go to on_failed as a walk meets them, so memory stays bounded).
        self.failed: list[tuple[Config, str]] = []
        self.on_failed: Callable[[Config, str], None] | None = None
        # The allowed ids, ascending, when known: all of them without restrictions.
        self.allowed_ids: Sequence[int] | None = None
        if not self.restrictions:
            self.allowed_ids = range(self.size)
        elif self.size <= exact_limit:
            self.allowed_ids = self._count()

    def _count(self) -> Sequence[int]:
        """The allowed ids, walking the product once (string restrictions evaluated over all of
        it at once where tuner.vector_restrictions can; the evaluator decides the rest)."""
        ids = array("q")
        trees = [getattr(getattr(r, "expr", None), "tree", None) for r in self.restrictions]
        fast = None
        if all(t is not None for t in trees):
            import numpy as np

            from .vector_restrictions import verdicts
            fast = verdicts(self.values, self.names, trees, np.arange(self.size, dtype=np.int64),
                            [stride for stride, _ in self._digits])
        if fast is None:
            candidates: Iterator[int] = iter(range(self.size))
        else:
            allowed, unsure = fast
            candidates = iter(np.flatnonzero(allowed | unsure).tolist())
            sure = set(np.flatnonzero(allowed & ~unsure).tolist())
        for i in candidates:
            if fast is not None and i in sure:
                ids.append(i)
                continue
            config = self.config(i)
            why = self.verdict(config)
            if why is None:
                ids.append(i)
            elif why:
                self.failed.append((config, why))
        return ids

    # --- what is known without a walk ------------------------------------------------------
    @property
    def allowed_count(self) -> int | None:
        """How many configurations the restrictions allow, None when too many to count."""
        return None if self.allowed_ids is None else len(self.allowed_ids)

    @property
    def pruned(self) -> int | None:
        """Configurations the restrictions rule out (those that raised not included), or None."""
        n = self.allowed_count
        return None if n is None else self.size - n - len(self.failed)

    # --- ids and configurations ----------------------------------------------------------
    def config(self, i: int) -> Config:
        return {n: vals[(i // stride) % radix]
                for n, vals, (stride, radix) in zip(self.names, self.values, self._digits)}

    def index(self, config: Mapping[str, Any]) -> int | None:
        """The id of ``config``'s values, None when one is missing or not among the values."""
        i = 0
        for n, vals, pos, (stride, _) in zip(self.names, self.values, self._positions,
                                              self._digits):
            if n not in config:
                return None
            v = config[n]
            try:
                k = pos.get(value_key(v)) if pos is not None else vals.index(v)
            except (TypeError, ValueError):
                k = None
            if k is None:
                return None
            i += k * stride
        return i

    def verdict(self, config: Config) -> str | None:
        """None (allowed), "" (ruled out) or why a restriction raised."""
        return restriction_verdict(config, self.restrictions) if self.restrictions else None

    def allows_id(self, i: int, report: bool = True) -> bool:
        """Whether id ``i`` is allowed; in a space too big to count, a restriction that raises
        is passed to on_failed (when ``report``)."""
        ids = self.allowed_ids
        if ids is not None:
            if isinstance(ids, range):
                return 0 <= i < len(ids)
            k = bisect.bisect_left(ids, i)
            return k < len(ids) and ids[k] == i
        config = self.config(i)
        why = self.verdict(config)
        if why and report and self.on_failed is not None:
            self.on_failed(config, why)
        return why is None

    def allowed_row(self, row: Mapping[str, Any]) -> Config | None:
        """The allowed configuration a stored row (resumed, or from a cache) measured, None when
        it is no longer allowed or not of this space (its key must match, as written)."""
        i = self.index(row)
        if i is None or not self.allows_id(i, report=False):
            return None
        config = self.config(i)
        return config if config_key(config) == row.get("config") else None

    # --- walks -------------------------------------------------------------------------------
    def _walk(self) -> Iterator[Config]:
        return (dict(zip(self.names, v)) for v in itertools.product(*self.values))

    def ids(self) -> Iterator[int]:
        """The allowed ids in product order, checked as they are reached."""
        if self.allowed_ids is not None:
            yield from self.allowed_ids
            return
        for i, config in enumerate(self._walk()):
            why = self.verdict(config)
            if why is None:
                yield i
            elif why and self.on_failed is not None:
                self.on_failed(config, why)

    def shuffled(self, rng: random.Random, max_misses: int = MAX_MISSES) -> Iterator[int]:
        """The allowed ids in a seeded random order, each once, without enumerating the space.
        Where the allowed set is not known, ids are drawn from the whole product and those the
        restrictions rule out passed over; ``max_misses`` of them in a row end the walk."""
        ids = self.allowed_ids
        if ids is not None:
            for k in Shuffle(len(ids), rng):
                yield ids[k]
            return
        misses = 0
        for i in Shuffle(self.size, rng):
            if self.allows_id(i):
                misses = 0
                yield i
            else:
                misses += 1
                if misses >= max_misses:
                    return

    def first(self, tries: int = 10_000) -> Config | None:
        """The first allowed configuration in product order, None when none is among the first
        ``tries`` of a space too big to count (it is only an early check's sample)."""
        ids = self.allowed_ids
        if ids is not None:
            return self.config(ids[0]) if len(ids) else None
        for config in itertools.islice(self._walk(), tries):
            if self.verdict(config) is None:
                return config
        return None

    def present_values(self, k: int) -> list[Any]:
        """Parameter ``k``'s values that some allowed configuration takes, in the order they
        first appear in the product (every value where the allowed set is unknown)."""
        ids = self.allowed_ids
        vals = self.values[k]
        if ids is None or isinstance(ids, range):
            digits: Sequence[int] = range(len(vals))
        else:
            stride, radix = self._digits[k]
            seen: dict[int, None] = {}
            for i in ids:
                seen.setdefault((i // stride) % radix)
                if len(seen) == radix:
                    break
            digits = list(seen)                       # a dict keeps the order of insertion
        out: list[Any] = []
        for d in digits:
            if all(value_key(vals[d]) != value_key(o) for o in out):
                out.append(vals[d])
        return out

    def estimate(self, samples: int = 10_000, seed: int = 0
                 ) -> tuple[int, int, int, str | None]:
        """(configurations drawn, allowed among them, whose restriction raised, the first such
        error) for ``samples`` distinct random configurations (all of them in a smaller space)."""
        drawn = allowed = raised = 0
        first: str | None = None
        for i in itertools.islice(Shuffle(self.size, random.Random(seed)), samples):
            why = self.verdict(self.config(i))
            drawn += 1
            allowed += why is None
            if why:
                raised += 1
                first = first or why
        return drawn, allowed, raised, first


class ListSpace(Space):
    """An explicit list of allowed configurations (the strategies' original input), behind the
    same interface: ids are positions in the list."""

    def __init__(self, configs: Sequence[Config]) -> None:
        self.configs = [dict(c) for c in configs]
        self.names = list(self.configs[0]) if self.configs else []
        self.size = len(self.configs)
        self.restrictions = []
        self.failed = []
        self.on_failed = None
        self.allowed_ids = range(self.size)
        self._index: dict[tuple[Any, ...], int] = {}
        for i, c in enumerate(self.configs):
            self._index[tuple(value_key(c[n]) for n in self.names)] = i

    def config(self, i: int) -> Config:
        return dict(self.configs[i])

    def index(self, config: Mapping[str, Any]) -> int | None:
        try:
            return self._index.get(tuple(value_key(config[n]) for n in self.names))
        except (KeyError, TypeError):
            return None

    def present_values(self, k: int) -> list[Any]:
        n = self.names[k]
        out: list[Any] = []
        for c in self.configs:
            if all(value_key(c[n]) != value_key(o) for o in out):
                out.append(c[n])
        return out


def as_space(configs: Space | Sequence[Config]) -> Space:
    return configs if isinstance(configs, Space) else ListSpace(configs)
