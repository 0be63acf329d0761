"""SciPy's global and local optimisers over the Encoding's box (``pip install "pyclperf[tune]"``).

Each runs as SciPy wrote it, calling an objective that stepwise.driven answers one new
configuration at a time; points are rounded to the nearest configuration, so a continuous
optimiser searches the discrete space. What each Kernel Tuner name runs here:

* ``dual_annealing``: scipy.optimize.dual_annealing, with a local search by ``method``
  (Kernel Tuner's default, COBYLA);
* ``simulated_annealing``: the same function with ``no_local_search=True``, which SciPy documents
  as traditional generalized simulated annealing (Kernel Tuner's own annealer is not in SciPy:
  its temperatures T, T_min and alpha have no counterpart and are not used);
* ``diff_evo``: scipy.optimize.differential_evolution with every dimension integral, Kernel
  Tuner's ``method`` being SciPy's ``strategy`` (best1bin, ...), F the mutation, CR the
  recombination;
* ``basinhopping``: scipy.optimize.basinhopping, steps of one value, ``T`` and a local ``method``;
* ``minimize``: scipy.optimize.minimize by ``method`` from a random start, started again from
  another wherever it converges.
"""

from __future__ import annotations

import random
import warnings
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..searchspace import Space
from .stepwise import Stepwise, driven

INSTALL_HINT = 'needs SciPy: pip install "pyclperf[tune]"'

LOCAL_METHODS = ("Nelder-Mead", "Powell", "CG", "BFGS", "L-BFGS-B", "TNC", "COBYLA", "SLSQP",
                 "trust-constr")
DE_METHODS = ("best1bin", "rand1bin", "best2bin", "rand2bin", "best1exp", "rand1exp", "best2exp",
              "rand2exp", "currenttobest1bin", "currenttobest1exp", "randtobest1bin",
              "randtobest1exp")


def import_scipy_optimize() -> Any:
    try:
        import scipy.optimize
    except ImportError as e:
        raise ImportError(f"this strategy {INSTALL_HINT}") from e
    return scipy.optimize


def _method(value: Any, allowed: Sequence[str], what: str) -> str:
    if value not in allowed:
        raise ValueError(f"{what} {value!r} is not one of {', '.join(allowed)}")
    return str(value)


def _seed(rng: random.Random) -> int:
    return rng.getrandbits(32)


def _start(s: Stepwise, rng: random.Random) -> np.ndarray:
    """A random allowed configuration's point (the centre of the box if none is left)."""
    i = s.random_unseen()
    if i is None:
        return np.array([(n - 1) / 2 for n in s.encoding.sizes], dtype=float)
    return np.array(s.encoding.indices(s.space.config(i)), dtype=float)


def _quiet(run: Callable[[], Any]) -> None:
    # SciPy warns when an optimiser ends unconverged or a step is degenerate: expected on a
    # piecewise-constant objective, and not the user's concern.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run()


def make(name: str, configs: Space | Sequence[dict], seed: int | None,
         opts: Mapping[str, Any]) -> Stepwise:
    """The SciPy-backed strategy ``name`` with Kernel Tuner's options ``opts``."""
    so = import_scipy_optimize()

    if name in ("dual_annealing", "simulated_annealing"):
        local = _method(opts.get("method", "COBYLA"), LOCAL_METHODS, "method")
        plain = name == "simulated_annealing"
        maxiter = int(opts.get("maxiter", 1000))

        def run(s: Stepwise, f: Callable[[np.ndarray], float], rng: random.Random) -> None:
            _quiet(lambda: so.dual_annealing(f, s.encoding.bounds(), maxiter=maxiter, seed=_seed(rng),
                                             no_local_search=plain, x0=_start(s, rng),
                                             minimizer_kwargs={"method": local}))
        algorithm = ("scipy.optimize.dual_annealing(no_local_search=True)" if plain
                     else f"scipy.optimize.dual_annealing(local search {local})")
    elif name == "diff_evo":
        method = _method(opts.get("method", "best1bin"), DE_METHODS, "method")
        popsize = int(opts.get("popsize", 16))
        per_dim = bool(opts.get("popsize_times_dimensions", True))
        maxiter = int(min(opts.get("maxiter", 1000), 10**6))
        F, CR = float(opts.get("F", 0.7)), float(opts.get("CR", 0.6))

        def run(s: Stepwise, f: Callable[[np.ndarray], float], rng: random.Random) -> None:
            n = max(1, s.encoding.ndim)
            # SciPy's population is popsize x dimensions; Kernel Tuner can ask for a flat size.
            size = popsize if per_dim else max(1, -(-popsize // n))
            _quiet(lambda: so.differential_evolution(
                f, s.encoding.bounds(), strategy=method, maxiter=maxiter, popsize=max(size, 1),
                mutation=F, recombination=CR, seed=_seed(rng), polish=False,
                integrality=np.ones(n, dtype=bool), init="latinhypercube", tol=0.0))
        algorithm = f"scipy.optimize.differential_evolution({method})"
    elif name == "basinhopping":
        local = _method(opts.get("method", "L-BFGS-B"), LOCAL_METHODS, "method")
        T = float(opts.get("T", 1.0))

        def run(s: Stepwise, f: Callable[[np.ndarray], float], rng: random.Random) -> None:
            kwargs: dict[str, Any] = {"method": local}
            if local in ("L-BFGS-B", "TNC", "SLSQP", "Powell", "Nelder-Mead", "trust-constr"):
                kwargs["bounds"] = s.encoding.bounds()
            _quiet(lambda: so.basinhopping(f, _start(s, rng), niter=10**6, T=T, stepsize=1.0,
                                           minimizer_kwargs=kwargs, seed=_seed(rng)))
        algorithm = f"scipy.optimize.basinhopping(local search {local})"
    elif name == "minimize":
        local = _method(opts.get("method", "L-BFGS-B"), LOCAL_METHODS, "method")

        def run(s: Stepwise, f: Callable[[np.ndarray], float], rng: random.Random) -> None:
            kwargs: dict[str, Any] = {}
            if local in ("L-BFGS-B", "TNC", "SLSQP", "Powell", "Nelder-Mead", "trust-constr"):
                kwargs["bounds"] = s.encoding.bounds()
            _quiet(lambda: so.minimize(f, _start(s, rng), method=local, **kwargs))
        algorithm = f"scipy.optimize.minimize({local}), restarted where it converges"
    else:
        raise ValueError(f"no SciPy strategy {name!r}")
    return Stepwise(configs, driven(run), seed=seed, algorithm=algorithm)
