"""Every search strategy by name: Kernel Tuner 1.5's 21, Optuna's TPE, and ``auto``.

The engine drives them all through one ask/tell interface (search.base)::

    s = make_strategy("dual_annealing", configs, seed=1, max_fevals=50)
    for cfg, objective in resumed: s.tell(cfg, objective)     # learnt from, never re-run
    while (cfg := s.ask()) is not None:
        s.tell(cfg, measure(cfg))                             # None when the config failed

Objectives are minimised (pass a time, or the negative of a higher-is-better metric). ``configs``
is the allowed set: a list (already pruned by the restrictions) or a searchspace.Space, which
applies them as it goes and is never enumerated whole; no strategy returns a config twice nor one
outside that set, and every one stops at ``max_fevals`` evaluations or ``time_limit`` seconds.

Each Kernel Tuner name runs the same algorithm where a well-kept library has it, else the nearest
documented equivalent; ``STRATEGIES[name].runs`` says which, and so does every strategy's
``algorithm`` (the rows' ``algorithm`` column). A Kernel Tuner option that steers the algorithm
here is used; one with no counterpart here is accepted with a warning that names it; any other
option is an error. Every strategy but brute_force and random_sample needs the ``tune`` extra
(``pip install "pyclperf[tune]"``: Optuna, SciPy, nevergrad).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

from .search.base import Budget, Budgeted, BruteForce, RandomSample, Strategy
from .searchspace import Space, as_space

__all__ = ["STRATEGIES", "Budget", "Budgeted", "Strategy", "make_strategy", "describe"]

# Options every strategy takes (Kernel Tuner's common ones).
BUDGET_OPTIONS = ("max_fevals", "time_limit")
COMMON_OPTIONS = BUDGET_OPTIONS + ("x0", "searchspace_construction_options")


@dataclass(frozen=True)
class Entry:
    """One strategy: who runs it, what runs, and which of its options steer it here."""

    family: str                      # basic, scipy, optuna, nevergrad, local, auto
    runs: str                        # the algorithm, in a phrase (the docs' table)
    used: tuple[str, ...] = ()       # options that steer it here
    inert: tuple[str, ...] = ()      # Kernel Tuner options with no counterpart here


_LOCAL = ("neighbor", "restart", "order", "randomize")
STRATEGIES: dict[str, Entry] = {
    "auto": Entry("auto", "every configuration where the space fits the budget, else a Gaussian "
                  "process (on the ranks of the times until the 40th evaluation) ranking "
                  "candidates by expected improvement in local, recombined and global regions, "
                  "exploring steps by a second, fixed model until the 50th evaluation, most of "
                  "a budget's last fifth among what the best configurations share "
                  "(search/auto.py); several objectives: NSGA-II"),
    "brute_force": Entry("basic", "every configuration, in order"),
    "random_sample": Entry("basic", "a seeded random sample, `fraction` of the space",
                           ("fraction",)),
    "tpe": Entry("optuna", "Optuna's TPE sampler", ("n_startup_trials", "max_retries")),
    "bayes_opt": Entry("optuna", "Optuna's TPE sampler (Bayesian optimisation with a Parzen "
                       "model)", ("popsize", "max_retries", "n_startup_trials"),
                       ("covariancekernel", "covariancelengthscale", "method", "samplingmethod")),
    "skopt": Entry("optuna", "Optuna's TPE sampler (scikit-optimize's Bayesian optimisation is "
                   "unmaintained and too slow to drive per configuration)", ("num_initial",),
                   ("learner", "acq_func", "lie_strategy", "kappa", "batch_size", "skopt_kwargs")),
    "genetic_algorithm": Entry("optuna", "Optuna's NSGA-II sampler: a genetic algorithm on one "
                               "objective", ("popsize", "mutation_chance", "max_retries"),
                               ("maxiter", "method", "constraint_aware")),
    "nsga2": Entry("optuna", "Optuna's NSGA-II sampler", ("popsize", "crossover_prob",
                   "mutation_prob", "max_retries"), ("crossover_operator", "ref_dirs_list")),
    "nsga3": Entry("optuna", "Optuna's NSGA-III sampler", ("popsize", "crossover_prob",
                   "mutation_prob", "max_retries"), ("crossover_operator", "ref_dirs_list")),
    "dual_annealing": Entry("scipy", "scipy.optimize.dual_annealing", ("method",)),
    "simulated_annealing": Entry("scipy", "scipy.optimize.dual_annealing without local search "
                                 "(generalized simulated annealing)", ("maxiter",),
                                 ("T", "T_min", "alpha", "constraint_aware")),
    "diff_evo": Entry("scipy", "scipy.optimize.differential_evolution", (
        "popsize", "popsize_times_dimensions", "maxiter", "F", "CR", "method"),
        ("constraint_aware",)),
    "basinhopping": Entry("scipy", "scipy.optimize.basinhopping", ("method", "T")),
    "minimize": Entry("scipy", "scipy.optimize.minimize, restarted where it converges",
                      ("method",)),
    "pso": Entry("nevergrad", "nevergrad's particle swarm (ConfPSO)", ("popsize", "w", "c1", "c2"),
                 ("maxiter", "constraint_aware")),
    "firefly_algorithm": Entry("nevergrad", "nevergrad's particle swarm (the nearest library "
                               "swarm to the firefly algorithm)", ("popsize",),
                               ("maxiter", "B0", "gamma", "alpha", "constraint_aware")),
    "adaptive_tabu_greywolf": Entry("nevergrad", "nevergrad's particle swarm (the nearest library "
                                    "swarm to a grey-wolf pack)", ("pack_size",),
                                    ("budget", "tabu_factor", "shake_rate", "jump_rate",
                                     "stagn_limit", "restart_ratio", "t0", "t_decay", "t_min",
                                     "constraint_aware")),
    "mls": Entry("local", "multi-start local search", _LOCAL),
    "greedy_mls": Entry("local", "greedy multi-start local search", _LOCAL),
    "ordered_greedy_mls": Entry("local", "greedy multi-start local search, parameters in order",
                                _LOCAL),
    "greedy_ils": Entry("local", "greedy iterated local search", (
        "neighbor", "restart", "no_improvement", "random_walk")),
    "hybrid_vndx": Entry("local", "variable neighbourhood descent with tabu restarts", (), (
        "budget", "k", "cand_pool", "restart_iter", "tabu_size", "elite_size", "temp0", "cooling",
        "constraint_aware")),
    "pyatf_strategies": Entry("pyatf", "pyATF's search technique by `searchtechnique`, mapped "
                              "to the nearest strategy here", ("searchtechnique",),
                              ("use_searchspace_cache",)),
}
NAMES = tuple(STRATEGIES)
# pyATF's search techniques and the strategy here that runs each.
PYATF = {"simulated_annealing": "simulated_annealing", "differential_evolution": "diff_evo",
         "pattern_search": ("minimize", {"method": "Powell"}),
         "torczon": ("minimize", {"method": "Nelder-Mead"}),
         "auc_bandit": "auto", "round_robin": "auto"}


def describe(name: str) -> str:
    """What ``name`` runs, in a phrase."""
    return STRATEGIES[name].runs


def _check_options(name: str, opts: dict[str, Any]) -> None:
    entry = STRATEGIES[name]
    allowed = entry.used + entry.inert + COMMON_OPTIONS
    unknown = sorted(set(opts) - set(allowed))
    if unknown:
        raise ValueError(f"strategy {name!r} has no option {', '.join(map(repr, unknown))}; its "
                         f"options are {', '.join(allowed)}")
    inert = [k for k in opts if k in entry.inert or k == "searchspace_construction_options"]
    if inert:
        warnings.warn(f"strategy {name!r} runs {entry.runs}, which has no use for "
                      f"{', '.join(map(repr, inert))}: ignored", UserWarning, stacklevel=3)


def make_strategy(name: str, configs: Space | Sequence[dict], *, seed: int | None = None,
                  options: dict[str, Any] | None = None, max_fevals: int | None = None,
                  time_limit: float | None = None, objectives: int = 1) -> Any:
    """The strategy ``name`` over the allowed ``configs`` (a list, or a searchspace.Space).

    ``options`` takes Kernel Tuner's strategy_options for that strategy (see STRATEGIES);
    "max_fevals" and "time_limit" (seconds) bound every strategy, and the keyword
    ``max_fevals``/``time_limit`` override the options' ones. ``x0``, a configuration (a dict,
    or its values in parameter order), is evaluated first. ``objectives`` > 1 (nsga2, nsga3,
    genetic_algorithm, tpe) minimises several objectives; tell() then takes their values.
    """
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}; choose one of {', '.join(NAMES)}")
    opts = dict(options or {})
    _check_options(name, opts)
    if max_fevals is None:
        max_fevals = opts.get("max_fevals")
    if time_limit is None:
        time_limit = opts.get("time_limit")
    space = as_space(configs)
    if objectives > 1 and STRATEGIES[name].family != "optuna" and name != "auto":
        raise ValueError(f"strategy {name!r} minimises one objective; for several use nsga2, "
                         "nsga3, genetic_algorithm, tpe or auto")
    inner = _make(name, space, seed, opts, max_fevals, objectives)
    if opts.get("x0") is not None:
        from .search.first import First
        inner = First(inner, opts["x0"])
    if max_fevals is None and time_limit is None:
        return inner
    return Budgeted(inner, Budget(max_fevals, time_limit))


def _make(name: str, space: Space, seed: int | None, opts: dict[str, Any],
          max_fevals: int | None, objectives: int) -> Any:
    family = STRATEGIES[name].family
    if name == "brute_force":
        return BruteForce(space)
    if name == "random_sample":
        fraction = float(opts.get("fraction", 0.1))
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"random_sample's fraction must lie in [0, 1], not {fraction}")
        # As in Kernel Tuner, an explicit max_fevals replaces the fraction (of the allowed
        # configurations, or of the whole product where they are too many to count).
        count = space.allowed_count
        limit = None if max_fevals is not None else math.ceil(
            (space.size if count is None else count) * fraction)
        return RandomSample(space, seed, limit)
    if name == "pyatf_strategies":
        technique = opts.get("searchtechnique", "simulated_annealing")
        if technique not in PYATF:
            raise ValueError(f"searchtechnique {technique!r} is not one of {', '.join(PYATF)}")
        target = PYATF[technique]
        inner_name, inner_opts = target if isinstance(target, tuple) else (target, {})
        s = _make(inner_name, space, seed, dict(inner_opts), max_fevals, objectives)
        s.algorithm = f"{s.algorithm} (for pyATF's {technique})"
        return s
    if family == "auto":
        from .search import auto
        return auto.make(space, seed, opts, max_fevals, objectives)
    if family == "optuna":
        from .search import optuna_family
        if name == "skopt":
            name, opts = "tpe", {"n_startup_trials": opts.get("num_initial") or 10}
        return optuna_family.make(name, space, seed, opts, objectives)
    if family == "scipy":
        from .search import scipy_family
        return scipy_family.make(name, space, seed, opts)
    if family == "nevergrad":
        from .search import nevergrad_family
        if name == "adaptive_tabu_greywolf" and "pack_size" in opts:
            opts = {**opts, "popsize": opts["pack_size"]}
        return nevergrad_family.make(name, space, seed, opts)
    from .search import local
    return local.make(name, space, seed, opts)
