"""Swarm optimisers from nevergrad, asked and told one candidate at a time
(``pip install "pyclperf[tune]"``).

* ``pso``: nevergrad's particle swarm (ConfPSO), Kernel Tuner's ``popsize``, inertia ``w`` and
  constants ``c1`` (toward a particle's own best) and ``c2`` (toward the swarm's);
* ``firefly_algorithm`` and ``adaptive_tabu_greywolf``: no well-kept library has the firefly or
  the grey-wolf algorithm; both move a population toward its better members, which is what a
  particle swarm does, so they run nevergrad's particle swarm with their ``popsize`` (the
  firefly's attractiveness B0, absorption gamma and step alpha, and the grey wolf's tabu and
  restart settings, have no counterpart there and are not used).

Candidates are points of the Encoding's box, rounded to the nearest configuration. One that the
restrictions rule out, or that failed, is told a penalty above the worst time seen; one already
measured is told its value; neither costs an evaluation.
"""

from __future__ import annotations

import random
import warnings
from typing import Any, Mapping, Sequence

import numpy as np

from ..searchspace import Space
from .base import Base, RandomOrder
from .encoding import Encoding

INSTALL_HINT = 'needs nevergrad: pip install "pyclperf[tune]"'


def import_nevergrad() -> Any:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")           # its import warns about optional extras
            import nevergrad
    except ImportError as e:
        raise ImportError(f"this strategy {INSTALL_HINT}") from e
    return nevergrad


class NevergradStrategy(Base):
    """A nevergrad optimiser over the box of the allowed configurations."""

    def __init__(self, configs: Space | Sequence[dict], make_optimizer: Any, *,
                 seed: int | None = None, max_retries: int = 30, algorithm: str = "") -> None:
        super().__init__(configs)
        ng = import_nevergrad()
        self.algorithm = algorithm
        self.encoding = Encoding(self.space)
        rng = random.Random(seed)
        self._fallback = RandomOrder(self.space, random.Random(rng.getrandbits(64)))
        upper = np.maximum(self.encoding.sizes - 1, 1).astype(float)
        param = ng.p.Array(shape=(max(1, self.encoding.ndim),), lower=0.0,
                           upper=upper if self.encoding.ndim else np.ones(1))
        self._rng = rng
        self._ng, self._param, self._make = ng, param, make_optimizer
        self.optimizer = self._fresh()
        self._max_retries = max_retries
        self._pending: dict[int, list[Any]] = {}      # id -> candidates waiting for its value

    def _fresh(self) -> Any:
        """A new swarm (seeded from the strategy's generator): the first, or a restart once the
        swarm has converged onto configurations already measured."""
        param = self._param.spawn_child()
        param.random_state = np.random.RandomState(self._rng.getrandbits(32))
        return self._make(self._ng, param)

    def _id(self, candidate: Any) -> int | None:
        return self.encoding.id_of(self.encoding.snap(candidate.value[: self.encoding.ndim]))

    def _tell(self, candidate: Any, value: float | None) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.optimizer.tell(candidate, self.penalty() if value is None else value)

    def ask(self) -> dict | None:
        if self._exhausted():
            return None
        for _ in range(self._max_retries):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                candidate = self.optimizer.ask()
            i = self._id(candidate)
            if i is not None and i in self._pending:
                self._pending[i].append(candidate)    # the same configuration, still running
                continue
            if i is not None and i not in self.seen:
                self.seen.add(i)
                self._pending[i] = [candidate]
                return self.space.config(i)
            self._tell(candidate, self.results.get(i) if i is not None else None)
        # Every proposal was known or disallowed: the swarm has converged. A new one continues
        # the search (what it learnt stays in the results, so nothing is measured twice); this
        # ask takes a random unseen configuration.
        self.optimizer = self._fresh()
        self._pending = {i: [] for i in self._pending}
        i = self._fallback.next_unseen(self.seen)
        if i is None:
            return None
        self.seen.add(i)
        return self.space.config(i)

    def tell(self, config: dict, objective: float | None) -> None:
        super().tell(config, objective)
        i = self._index_of(config)
        for candidate in self._pending.pop(i, []):
            self._tell(candidate, self.results[i])


def make(name: str, configs: Space | Sequence[dict], seed: int | None,
         opts: Mapping[str, Any]) -> NevergradStrategy:
    popsize = int(opts.get("popsize", {"pso": 50, "firefly_algorithm": 20}.get(name, 8)))
    if name == "pso":
        w, c1, c2 = float(opts.get("w", 0.5)), float(opts.get("c1", 3.5)), float(opts.get("c2", 1.0))
    elif name in ("firefly_algorithm", "adaptive_tabu_greywolf"):
        w, c1, c2 = 0.5, 3.5, 1.0                     # Kernel Tuner's PSO defaults
    else:
        raise ValueError(f"no nevergrad strategy {name!r}")

    def make_optimizer(ng: Any, param: Any) -> Any:
        return ng.optimizers.ConfPSO(popsize=max(2, popsize), omega=w, phip=c1, phig=c2)(
            parametrization=param, budget=None)
    what = "nevergrad ConfPSO particle swarm" + ("" if name == "pso" else f" (for {name})")
    return NevergradStrategy(configs, make_optimizer, seed=seed, algorithm=what)
