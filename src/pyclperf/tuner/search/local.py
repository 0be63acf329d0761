"""Kernel Tuner's local searches: hill climbers over neighbouring configurations.

No optimisation library walks a restricted discrete space by neighbourhoods (one parameter
changed, or moved one value), which is what these strategies are, so this is the thin part
written here: programs for stepwise.Stepwise, whose wrapper answers repeats from what is known,
hands out nothing twice and restarts a program that ends.

* ``mls``: from a random start, evaluate every neighbour and move to the best, until none is
  better; then start again elsewhere (multi-start local search).
* ``greedy_mls``: move to the first neighbour that is better (a random order of parameters).
* ``ordered_greedy_mls``: the same in the parameters' given order.
* ``greedy_ils``: greedy climbs, each from the last local optimum perturbed by a random walk of
  ``random_walk`` x parameters steps; a fresh start after ``no_improvement`` climbs without gain.
* ``hybrid_vndx`` (Kernel Tuner's generated hybrid of variable neighbourhood descent with a
  surrogate and a tabu list): variable neighbourhood descent here: greedy steps over adjacent
  values, then any value, then a perturbation from the best so far, with the local optima found
  kept tabu as restart points.
"""

from __future__ import annotations

import random
from typing import Any, Generator, Mapping, Sequence

from ..searchspace import Space
from .stepwise import Program, Stepwise

NEIGHBOURHOODS = ("Hamming", "adjacent", "strictly-adjacent")
Idx = tuple[int, ...]


def _score(v: float | None) -> float:
    return float("inf") if v is None else v


def _evaluate(s: Stepwise, idx: Idx) -> Generator[int, Any, float]:
    """Yield the configuration an index vector names (the wrapper answers a known or
    disallowed one at once) and return its objective (inf where it failed or is disallowed)."""
    i = s.encoding.id_of(idx)
    if i is None:
        return float("inf")
    if i in s.results:
        return _score(s.results[i])
    return _score((yield i))


def _random_start(s: Stepwise) -> Idx | None:
    i = s.random_unseen()
    return None if i is None else s.encoding.indices(s.space.config(i))


def _climb(s: Stepwise, rng: random.Random, start: Idx, neighbour: str, greedy: bool,
           randomize: bool, order: Sequence[int] | None) -> Generator[int, Any, tuple[Idx, float]]:
    """Hill-climb from ``start``; returns the local optimum and its objective."""
    cur = start
    cur_v = yield from _evaluate(s, cur)
    while True:
        dims = list(order) if order is not None else list(range(s.encoding.ndim))
        if randomize:
            rng.shuffle(dims)
        best, best_v = cur, cur_v
        for d in dims:
            for cand in _along(s, cur, d, neighbour, rng if randomize else None):
                v = yield from _evaluate(s, cand)
                if v < best_v:
                    best, best_v = cand, v
                    if greedy:
                        break
            if greedy and best != cur:
                break
        if best == cur:
            return cur, cur_v
        cur, cur_v = best, best_v


def _along(s: Stepwise, idx: Idx, d: int, neighbour: str, rng: random.Random | None) -> list[Idx]:
    """Neighbours of ``idx`` that differ in dimension ``d`` (all of them for strictly-adjacent)."""
    n = int(s.encoding.sizes[d])
    if neighbour == "Hamming":
        values = [j for j in range(n) if j != idx[d]]
    elif neighbour == "adjacent":
        values = [j for j in (idx[d] - 1, idx[d] + 1) if 0 <= j < n]
    else:
        out = [c for c in s.encoding.neighbours(idx, "strictly-adjacent") if c[d] != idx[d]]
        if rng is not None:
            rng.shuffle(out)
        return out
    if rng is not None:
        rng.shuffle(values)
    return [idx[:d] + (j,) + idx[d + 1:] for j in values]


def _perturb(s: Stepwise, rng: random.Random, idx: Idx, steps: int) -> Idx:
    for _ in range(steps):
        if s.encoding.ndim == 0:
            break
        d = rng.randrange(s.encoding.ndim)
        n = int(s.encoding.sizes[d])
        if n > 1:
            j = rng.randrange(n - 1)
            idx = idx[:d] + (j if j < idx[d] else j + 1,) + idx[d + 1:]
    return idx


def make(name: str, configs: Space | Sequence[dict], seed: int | None,
         opts: Mapping[str, Any]) -> Stepwise:
    neighbour = str(opts.get("neighbor", "Hamming"))
    if neighbour not in NEIGHBOURHOODS:
        raise ValueError(f"neighbor {neighbour!r} is not one of {', '.join(NEIGHBOURHOODS)}")
    order = opts.get("order")
    randomize = bool(opts.get("randomize", name != "ordered_greedy_mls"))
    if order is not None and randomize and "randomize" in opts:
        raise ValueError("an order and randomize=True together: choose one")
    if order is not None:
        randomize = False
    greedy = bool(opts.get("restart", name != "mls"))

    if name in ("mls", "greedy_mls", "ordered_greedy_mls"):
        def program(s: Stepwise, rng: random.Random) -> Program:
            dims = _dims(s, order)
            while (start := _random_start(s)) is not None:
                yield from _climb(s, rng, start, neighbour, greedy, randomize, dims)
        kind = {"mls": "multi-start local search", "greedy_mls": "greedy multi-start local search",
                "ordered_greedy_mls": "greedy multi-start local search, parameters in order"}[name]
    elif name == "greedy_ils":
        no_improvement = int(opts.get("no_improvement", 50))
        walk = float(opts.get("random_walk", 0.3))

        def program(s: Stepwise, rng: random.Random) -> Program:
            steps = max(1, int(walk * s.encoding.ndim))
            start = _random_start(s)
            best_v, since = float("inf"), 0
            while start is not None:
                local, v = yield from _climb(s, rng, start, neighbour, True, True, None)
                since = 0 if v < best_v else since + 1
                best_v = min(best_v, v)
                start = _random_start(s) if since >= no_improvement else _perturb(s, rng, local, steps)
        kind = "greedy iterated local search"
    elif name == "hybrid_vndx":
        def program(s: Stepwise, rng: random.Random) -> Program:
            start = _random_start(s)
            best: tuple[float, Idx] | None = None
            tabu: set[Idx] = set()
            while start is not None:
                cur, v = yield from _climb(s, rng, start, "adjacent", True, True, None)
                cur, v = yield from _climb(s, rng, cur, "Hamming", True, True, None)
                tabu.add(cur)
                if best is None or v < best[0]:
                    best = (v, cur)
                start = _perturb(s, rng, best[1], max(1, s.encoding.ndim // 3))
                if start in tabu:
                    start = _random_start(s)
        kind = "variable neighbourhood descent with tabu restarts"
    else:
        raise ValueError(f"no local search {name!r}")
    return Stepwise(configs, program, seed=seed, algorithm=f"{kind} ({neighbour})"
                    if name != "hybrid_vndx" else kind)


def _dims(s: Stepwise, order: Sequence[Any] | None) -> list[int] | None:
    """Kernel Tuner's ``order`` (parameter names or positions) as dimensions of the box."""
    if order is None:
        return None
    out = []
    for o in order:
        k = s.names.index(o) if isinstance(o, str) else int(o)
        if k in s.encoding.dims:
            out.append(s.encoding.dims.index(k))
    return out
