"""Optuna's samplers driven through its ask-and-tell interface (``pip install "pyclperf[tune]"``).

* ``tpe`` (and ``bayes_opt`` where asked for by that name in a spec written before it ran a
  Gaussian process): Optuna's Tree-structured Parzen Estimator;
* ``genetic_algorithm``: Optuna's NSGA-II sampler, which on one objective is a genetic
  algorithm: a population of ``popsize``, tournament selection, uniform crossover (Optuna's
  crossover for discrete parameters; Kernel Tuner's single-, two-point and disruptive variants
  have no Optuna counterpart), each parameter mutated with probability 1/``mutation_chance``;
* ``nsga2``, ``nsga3``: Optuna's NSGA-II and NSGA-III samplers (one objective or several).

A sampler proposes a point of the whole product; ours is the restricted, allowed subset. A
proposal outside it is told to the study as failed (so the model steers away) and the sampler is
asked again; a proposal already measured is told its known objective (the model learns, nothing
is re-run). After ``max_retries`` misses a random unseen allowed config is returned instead, so
the search never stalls on a space that is mostly disallowed. Configs the sampler did not
propose (fallbacks, resumed rows) enter the study with ``add_trial``, so every measurement
informs it. Samplers draw each parameter on its own, so a huge space is never enumerated.

Numeric parameters are the index into their sorted values (an ordinal integer distribution):
block sizes and tile factors have neighbours that behave alike, which a sampler can exploit;
other parameters are categorical.
"""

from __future__ import annotations

import random
import warnings
from typing import Any, Callable, Mapping, Sequence

from ..searchspace import Space
from .base import Base, RandomOrder

INSTALL_HINT = 'needs Optuna: pip install "pyclperf[tune]"'


def import_optuna() -> Any:
    """Optuna, or an ImportError that says how to get it."""
    try:
        import optuna
    except ImportError as e:
        raise ImportError(f"this strategy {INSTALL_HINT}") from e
    return optuna


class OptunaStrategy(Base):
    """An Optuna sampler's search over the allowed configs. ``objectives`` > 1 makes the study
    multi-objective (every objective minimised); tell() then takes a sequence of values."""

    def __init__(self, configs: Space | Sequence[dict], sampler: Callable[[Any], Any], *,
                 seed: int | None = None, max_retries: int = 20, objectives: int = 1,
                 algorithm: str = "") -> None:
        super().__init__(configs)
        optuna = import_optuna()
        # Optuna logs every trial at INFO; a tuning run reports through pyclperf instead.
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        self.algorithm = algorithm
        self._rng = random.Random(seed)
        self._fallback = RandomOrder(self.space, random.Random(self._rng.getrandbits(64)))
        self._max_retries = max(0, max_retries)
        self._values: dict[str, list[Any]] = {}
        self._dists: dict[str, Any] = {}
        self.objectives = objectives
        self.vectors: dict[int, tuple[float, ...] | None] = {}   # every objective, when several
        for k, n in enumerate(self.names):
            vals = self.space.present_values(k)
            numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
            if numeric:
                vals.sort()
                self._dists[n] = optuna.distributions.IntDistribution(0, len(vals) - 1)
            else:
                self._dists[n] = optuna.distributions.CategoricalDistribution(
                    list(range(len(vals))))
            self._values[n] = vals
        with warnings.catch_warnings():
            # NSGA-III and the crossovers are marked experimental in Optuna: a note for
            # Optuna's own users, not for whoever tunes through pyclperf.
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            self.study = optuna.create_study(directions=["minimize"] * objectives,
                                             sampler=sampler(optuna))
        self._trials: dict[int, Any] = {}             # asked trials awaiting their tell

    def _encode(self, cfg: dict) -> dict[str, int]:
        return {n: self._values[n].index(cfg[n]) for n in self.names}

    def _decode(self, params: dict[str, Any]) -> dict:
        return {n: self._values[n][int(params[n])] for n in self.names}

    def ask(self) -> dict | None:
        if self._exhausted():
            return None
        fail = self._optuna.trial.TrialState.FAIL
        for _ in range(self._max_retries):
            trial = self.study.ask(self._dists)
            cfg = self._decode(trial.params)
            i = self.space.index(cfg)
            if i is not None and i not in self.seen and self.space.allows_id(i):
                self.seen.add(i)
                self._trials[i] = trial
                return self.space.config(i)
            known = self._told(i) if i is not None else None
            if known is not None:
                self.study.tell(trial, known)         # a repeat: answer from what we measured
            else:
                self.study.tell(trial, state=fail)    # not allowed, failed, or still pending
        i = self._fallback.next_unseen(self.seen)
        if i is None:
            return None
        self.seen.add(i)
        return self.space.config(i)

    def _told(self, i: int) -> Any:
        if self.objectives == 1:
            return self.results.get(i)
        return self.vectors.get(i)

    def tell(self, config: dict, objective: Any) -> None:
        vector: tuple[float, ...] | None = None
        if self.objectives > 1:
            vector = None if objective is None else tuple(float(v) for v in objective)
            if vector is not None and (len(vector) != self.objectives
                                       or not all(v == v and abs(v) != float("inf") for v in vector)):
                vector = None
            objective = None if vector is None else vector[0]
        super().tell(config, objective)
        i = self._index_of(config)
        self.vectors[i] = vector
        value: Any = self.results[i] if self.objectives == 1 else vector
        trial = self._trials.pop(i, None)
        state = self._optuna.trial.TrialState
        if trial is not None:
            if value is None:
                self.study.tell(trial, state=state.FAIL)
            else:
                self.study.tell(trial, value)
            return
        self.study.add_trial(self._optuna.trial.create_trial(
            params=self._encode(config), distributions=self._dists,
            **({"value": value} if self.objectives == 1 else {"values": value}),
            state=state.COMPLETE if value is not None else state.FAIL))


def make(name: str, configs: Space | Sequence[dict], seed: int | None,
         opts: Mapping[str, Any], objectives: int = 1) -> OptunaStrategy:
    """The Optuna-backed strategy ``name`` with Kernel Tuner's options ``opts``."""
    retries = int(opts.get("max_retries", 20))
    if name in ("tpe", "bayes_opt"):
        startup = int(opts.get("n_startup_trials", opts.get("popsize", 10)))

        def sampler(optuna: Any) -> Any:
            return optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup)
        algorithm = "optuna.samplers.TPESampler"
    elif name in ("genetic_algorithm", "nsga2"):
        popsize = int(opts.get("popsize", 26 if name == "genetic_algorithm" else 20))
        chance = opts.get("mutation_chance")
        mutation = opts.get("mutation_prob", 1.0 / float(chance) if chance else None)
        crossover_prob = float(opts.get("crossover_prob", 0.9))

        def sampler(optuna: Any) -> Any:
            return optuna.samplers.NSGAIISampler(
                population_size=max(2, popsize), mutation_prob=mutation,
                crossover=optuna.samplers.nsgaii.UniformCrossover(),
                crossover_prob=crossover_prob, seed=seed)
        algorithm = "optuna.samplers.NSGAIISampler (genetic algorithm)"
    elif name == "nsga3":
        popsize = int(opts.get("popsize", 20))
        mutation = opts.get("mutation_prob")
        crossover_prob = float(opts.get("crossover_prob", 0.9))

        def sampler(optuna: Any) -> Any:
            return optuna.samplers.NSGAIIISampler(
                population_size=max(2, popsize), mutation_prob=mutation,
                crossover_prob=crossover_prob, seed=seed)
        algorithm = "optuna.samplers.NSGAIIISampler"
    else:
        raise ValueError(f"no Optuna strategy {name!r}")
    return OptunaStrategy(configs, sampler, seed=seed, max_retries=retries, objectives=objectives,
                          algorithm=algorithm)
