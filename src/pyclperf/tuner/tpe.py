"""The model-based strategy: Optuna's TPE sampler driven through its ask-and-tell interface.

TPE proposes a point of the full product space; ours is the restricted, allowed subset. A proposal
outside it is told to the study as failed (so the model steers away) and TPE is asked again; a
proposal already measured is told its known objective (the model learns, nothing is re-run). After
``max_retries`` misses a random unseen allowed config is returned instead, so the search never
stalls on a space that is mostly disallowed. Configs not proposed by TPE (fallbacks, resumed rows)
enter the study with ``add_trial``, so every measurement informs the model. TPE samples each
parameter on its own, so a huge space (a searchspace.Space) is never enumerated: a proposal is
checked against the restrictions alone, and the fallback walks a lazy random permutation.

Numeric parameters are encoded as the index into their sorted values (an ordinal integer
distribution) rather than as unordered categories: block sizes and tile factors have neighbours
that behave alike, which TPE can then exploit; other parameters are categorical.
"""

from __future__ import annotations

import random
from typing import Any, Iterator, Sequence

from .searchspace import Space
from .strategies import _Base, small_ids

_INSTALL_HINT = 'the "tpe"/"bayes_opt" strategy needs Optuna: pip install "pyclperf[tune]"'


def import_optuna() -> Any:
    """Optuna, or an ImportError that says how to get it."""
    try:
        import optuna
    except ImportError as e:
        raise ImportError(_INSTALL_HINT) from e
    return optuna


class TPEStrategy(_Base):
    """Tree-structured Parzen Estimator search over the allowed configs (minimises)."""

    def __init__(self, configs: Space | Sequence[dict], *, seed: int | None = None,
                 n_startup_trials: int = 10, max_retries: int = 20) -> None:
        super().__init__(configs)
        optuna = import_optuna()
        # Optuna logs every trial at INFO; a tuning run reports through pyclperf instead.
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        self._rng = random.Random(seed)
        self._fallback: Iterator[int] | None = None   # a lazy permutation, for a big space
        self._max_retries = max(0, max_retries)
        self._values: dict[str, list[Any]] = {}
        self._dists: dict[str, Any] = {}
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
        sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=n_startup_trials)
        self.study = optuna.create_study(direction="minimize", sampler=sampler)
        self._trials: dict[int, Any] = {}             # asked TPE trials awaiting their tell

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
            known = self.results.get(i) if i is not None else None
            if known is not None:
                self.study.tell(trial, known)         # a repeat: answer from what we measured
            else:
                self.study.tell(trial, state=fail)    # not allowed, failed, or still pending
        i = self._unseen()
        if i is None:
            return None
        self.seen.add(i)
        return self.space.config(i)

    def _unseen(self) -> int | None:
        """A random allowed id not handed out yet (None when a big space's walk gives up)."""
        ids = small_ids(self.space)
        if ids is not None:
            return self._rng.choice([i for i in ids if i not in self.seen])
        if self._fallback is None:
            self._fallback = self.space.shuffled(self._rng)
        return next((i for i in self._fallback if i not in self.seen), None)

    def tell(self, config: dict, objective: float | None) -> None:
        super().tell(config, objective)
        i = self._index_of(config)
        value = self.results[i]
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
            value=value, state=state.COMPLETE if value is not None else state.FAIL))
