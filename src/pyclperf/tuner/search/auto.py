"""strategy="auto": every configuration where the space fits the budget, else a model-guided
search whose design was chosen on the benchmark hub's brute-forced spaces
(benchmarks/strategies.py; the table is in benchmarks/RESULTS.md).

GPU tuning spaces are products of a few small, mostly ordinal parameters with strong
interactions and isolated needles (on the hub's A100 convolution space one configuration of
4,201 is within 5% of the fastest). A model over the whole space finds the right region soon but
then spends its budget exploring; a local or evolutionary search needs many evaluations to get
there. So one model, a Gaussian process on log-time (search/gp_pool.py), ranks candidates by
expected improvement, but each step first narrows them to one region, chosen at random:

* local (35%): around the best configuration so far, and around each niche leader (a good
  configuration at least two parameters from every better leader; up to four) at most 22%
  slower than it, the smallest Hamming ball that holds unevaluated ones (radius 1, then 2,
  3, ...), all of them ranked together: a model-ordered neighbourhood descent, which finds a
  needle next to a good configuration, and which leaves a flat plateau (where the model expects
  little) for a slightly slower basin where it expects more (below);
* recombination (25%): configurations whose every value (or an index neighbour of it) is one of
  the four best configurations': a model-ranked crossover of the elite;
* another basin (15%): the Hamming ball around the best of another niche (a good configuration
  at least two parameters from the better ones), so a second basin stays alive against a trap;
* global (25%): every unevaluated configuration, ranked against a target past the best (below).

The model's coordinates are in search/coordinates.py. Until evaluation 50 a fifth of the steps
skip the regions and this model for a second one, which explores (below).

A global step asks for more than a small gain: its expected improvement is over a target a
factor e^0.5 (1.65) below the best time so far, so it goes to configurations that might be a
better basin rather than to the incumbent's surroundings, which the other regions search. On the
hub's A100 convolution space, where configurations 0.64-0.68 of the optimum fill whole regions
and the good one holds few, that raised the runs (30 seeds) that leave those plateaus by 100
evaluations from 18 to 26, the median at 50 from 0.70 to 0.80 and the 10th percentile at 200
from 0.84 to 0.93.

A local step's other centres: on the hub's A100 convolution configurations of 0.64-0.68 of the
optimum fill flat regions (read_only 0, block widths of powers of two), and a run whose best was
there kept refining that plateau, where the model expects nothing, while configurations of the
good region (read_only 1, use_padding 0, use_shmem 1) at 0.60-0.62 were known and left. With the
balls of every leader within 22% ranked together, the runs below 0.79 of the optimum at 100
evaluations fell from 32% to 24% (seeds 300-419; mean 0.858 to 0.887), and through the benchmark
the A100's 10th percentile at 200 rose from 0.93 and 0.68 (seeds 0-29, 90-119) to 1.00; the
A4000 and A6000 moved within their noise (mean at 100 on seeds 300-419: 0.956 to 0.964, 0.950 to
0.951).

The setting tried least: from evaluation 20 a fifth of the steps go to the setting of the
two-valued parameters (switches such as read_only, use_padding, use_shmem together) evaluated
least so far, ranked there by plain expected improvement. A kernel's switches often change which
block and tile shapes are fast, and a model fitted mostly in one setting carries that setting's
landscape into the others: on the hub's A100 convolution the optimum and all twelve
configurations of 0.79 of it or more lie in one setting whose neighbours by one switch peak at
0.49-0.66, and the runs left on a plateau of 0.64-0.68 at 100 evaluations had spent 3-7 of
them there. Over 600 seeds (300-419, 500-979, driven directly) the A100's runs below 0.79 of
the optimum fell from 62% to 51% at 50 evaluations and from 31% to 22% at 100, and those holding
the optimum at 100 rose from 44% to 51%; over 120 seeds the A4000's mean at 50 and 100 rose from
0.889 and 0.955 to 0.901 and 0.977, the A6000's from 0.853 and 0.943 to 0.872 and 0.952. Through
the benchmark (30 seeds) the GEMM spaces' scores moved by 0.013 or less. A budget under 40 takes
such steps from twice its start (evaluation 8 of 20), since SETTING_FROM may lie past its end:
over 300 seeds (500-799) at 20 evaluations that raised the mean fraction of the optimum on the
A100, A4000 and A6000 convolutions from 0.649, 0.794 and 0.717 to 0.661, 0.794 and 0.735, the
three GEMM spaces' rose by 0.003 or less (from evaluation 6 or 10 instead: the same within 0.02);
on the held-out MI250X from 0.530 to 0.577, while the W7800's and W6600's fell by 0.007 and 0.009.

Exploring steps, by a second model: until evaluation 50 a fifth of the steps rank every
unevaluated configuration by expected improvement under a Gaussian process that is never fitted:
raw times (failures as in log_targets), value indices as coordinates, a Matern-3/2 kernel of 0.8
of an index step (one step apart correlate 0.36, two 0.07) and a signal variance 20 times the
observations'. It remembers little beyond each evaluation's neighbours and is unsure everywhere
else, so it prefers configurations next to fast ones, then those far from every evaluation, and
shuns the neighbours of slow ones; on raw times every fast configuration looks alike, so it does
not follow the main model's reading of a plateau's small differences. On the hub's A100
convolution that is what the runs left on the plateau lack: they never try the tile the good
setting needs (benchmarks/RESULTS.md). Driven directly, 100 evaluations, the runs below 0.79 of
the optimum fell from 18% to 12% (seeds 300-419); exploring to the end of the budget, from 18%
and 22% to 10% and 14% (seeds 300-419, 500-739), but the A4000's mean at 100 fell from 0.971 to
0.952 (to 0.960 until 50). Not kept: Kernel Tuner bayes_opt's own fixed model (a length of 1.5
over the whole range, 22%), log-times (13%), the largest variance alone (20%), a signal variance
of 1 (28%), a share of 0.1 (19%), exploring only once the best stalls (13%, A6000 worse).

Ranks before evaluation 40: until then the model is fitted not to the log-times but to the
normal scores of their ranks (search/gp_pool.normal_scores: the fastest of 40 at -2.2, the
median at 0, the slowest at +2.2, however much slower it is), and a global step aims half as far
below the best score. Early on a few very slow or failed configurations (a median configuration
of the hub's W7800 convolution runs at 0.12 of the optimum) take most of the model's range and
leave the fast ones, where the search has to choose, looking alike; on ranks every step between
neighbours in speed weighs the same, as in a copula model of the targets. Driven directly (seeds
6000-6299, mean fraction of the optimum), at 20 evaluations it raised the A4000 convolution from
0.779 to 0.805, the held-out W7800 from 0.735 to 0.756 and the others by 0.001-0.010; at 50 the
A100 from 0.801 to 0.817, the A4000 from 0.893 to 0.901, the A6000 from 0.849 to 0.866, the W7800
from 0.853 to 0.882 and the RTX 3090 GEMM from 0.972 to 0.986 (seeds 6000-6099), the others
within 0.008; at 100 the A4000 from 0.952 to 0.963, the A6000 from 0.945 to 0.958 and the W7800
from 0.971 to 0.978, the others within 0.002 (the A100 over 600 seeds: 0.928 to 0.930). From 40
the log-times come back: by then the search is refining a region, and ranks make the small
differences across a plateau as large as the gap to a better basin. Ranks for longer helped the
held-out spaces more at 50 (until 60: the W7800 0.896, its 10th percentile 0.80 against 0.67;
the MI250X 0.868) but left more of the A100's runs on its plateau of 0.64-0.68 of the optimum,
its mean at 100 over 600 seeds 0.919 (until 50) and 0.914 (until 60, the median at 100 0.93 on
seeds 6300-6599, against 1.00 without ranks); ranks to the end, 0.917 on seeds 6000-6299. Not
kept either: a Yeo-Johnson transform of the log-times (HEBO's choice) in place of ranks (the
W7800 at 50: 0.851-0.861), ranks half-blended with the standardised log-times.

The end of a budget: a run told where it ends (``max_fevals``; a time limit alone sets no
end) spends 70% of the steps of its last fifth, from evaluation 60 on, among the configurations
that keep every value the four best so far share, ranked by plain expected improvement. By
then the search has found its region, and what is left there can be a needle the model does not
point to: on the hub's A100 convolution the four best usually agree on the two-valued
parameters and one or both tile sides, and the optimum is one block shape (32 x 4) among the 60
of its tile, its neighbours at 0.5-0.7 of it. Runs of 100 evaluations that hold the optimum
rose from 40% to 70% (seeds 0-29), 40% to 60% (90-119) and 38% to 53% (300-359), so the median
there from 0.93 to 1.00; every other cell of the benchmark's tables (six spaces, 20 to 400
evaluations, both seed sets) stayed as it was. The same end at a budget of 50 lowered the
A100's median there (seeds 90-119: 0.83 to 0.70-0.81); over the last 30% of a budget, the
A6000's mean at 100 (seeds 0-29: 0.956 to 0.942).

Every fit of the model's hyperparameters is the most probable under a log-normal prior on each
length scale (centre 4, the coordinates' range being 1; width 0.7 in log) and starts at that
centre, not at the last fit. The marginal likelihood alone, warm-started, sat in whichever
optimum it had found first: with many coordinates and few observations (the GEMM spaces' 38
against 6-17) a few length scales at their lower bound and most at their upper, the model then
ranking by those few coordinates; on the convolutions, short length scales that leave the
model little to say beyond its observations' neighbours (on the A100 at 40 evaluations, 20 runs,
a fit by the likelihood alone ranked the configurations of 0.79 of the optimum or more at a
median of 319th of the unevaluated for a global step; one under the prior at 178th). A fit that
starts afresh under a prior favouring smooth models ranks by what the observations share. On the
hub's spaces (seeds 90-149, mean fraction of the optimum) it raised the A100 convolution at 100
evaluations from 0.81 to 0.88 and at 200 from 0.92 to 0.98, the A6000's at 100 from 0.89 to 0.96,
the A4000's from 0.92 to 0.95 and the RTX 3090 GEMM's at 50 from 0.95 to 0.98 (for the whole
change, this with the shares below, the A100's gain did not hold on 180 other seeds: 0.02 up on
120, 0.02 down on the benchmark's 60; the A6000's and A4000's did, 0.04 on 120); at a budget of 20,
the held-out MI250X convolution from 0.53 to 0.58, the others within 0.04. With that model a
quarter of the steps global (not 15%) raised the A100's median at 50 from 0.68 to 0.83 and the
A4000's mean at 100 from 0.95 to 0.96, for 0.01-0.02 less on the RTX 3090 GEMM at 50 and the A100
at 200. A global target at the best itself (no ambition) helped the A100 at 100 but cost the A4000
0.05 there (120 seeds), so the ambition stays.

It starts from 12 configurations drawn with balanced value counts per parameter (a maximin
design in index space picks corners, usually poor block sizes). A budget under 40 starts from a
fifth of it, at least 4 (4 of 20), and its global steps aim e^0.25 (1.28 times) below the best,
not e^0.5: with so few steps the model's are worth more than a wider start, and a nearer target
spends fewer of them on long shots. Over 400 seeds (500-899) at a budget of 20 that raised the
mean fraction of the optimum from 0.623 to 0.637 (A100 convolution), 0.773 to 0.792 (A4000),
0.724 to 0.737 (A6000) and 0.866 to 0.879 (RTX 3090 GEMM), the 10th percentiles within 0.01,
against a start of 30% of the budget (6 of 20) and a larger budget's target. The model's
hyperparameters are refitted every 5 evaluations up to 40, then each time the evaluations grow
by 30%; in between an evaluation extends the model by one row. From a budget of 40 on the
search does not depend on the budget until its end game: a run of 100 is the first 80 of a run
of 400. The candidates are the allowed configurations where they can be listed
(search/pool.py), else a seeded sample of them. Several objectives: Optuna's NSGA-II
(search/optuna_family.py).
"""

from __future__ import annotations

import random
from functools import partial
from typing import Any, Generator, Mapping, Sequence

import numpy as np

from ..searchspace import Space
from .base import BruteForce
from .coordinates import coordinates
from .gp_pool import PoolGP, log_targets, normal_scores
from .pool import pool_size, pooled
from .regions import agreeing, balls, least_tried, niche_leaders, settings
from .stepwise import Stepwise

# The model's share of each region's steps (the rest are global), the elite and niche sizes,
# and the refit schedule, as measured on the hub's spaces.
LOCAL, RECOMBINE, NICHE = 0.35, 0.25, 0.15
START, ELITE, LEADERS = 12, 4, 3
# A budget under SMALL starts from START_SHARE of it (at least 4) and aims its global steps
# SMALL_AMBITION below the best, not GLOBAL_AMBITION.
SMALL, START_SHARE, SMALL_AMBITION = 40, 0.2, 0.25
# A local step searches the balls around the best and around up to four more niche leaders
# whose log-time is within this of the best's (0.2: at most 22% slower).
LOCAL_LEADERS, LOCAL_WITHIN = 5, 0.2
# How much better than the best so far (in log-time) a global step's target is.
GLOBAL_AMBITION = 0.5
REFIT_EVERY, REFIT_FAST_UNTIL, REFIT_GROWTH = 5, 40, 1.3
# A log-normal prior (centre, width in log) on the model's length scales; every fit starts at
# its centre.
LENGTH_PRIOR = (4.0, 0.7)
# The end of a budget: its last fifth, from evaluation 60 on, where 70% of the steps search the
# configurations that keep every value the four best so far share.
ENDGAME_SHARE, ENDGAME_FROM, ENDGAME_STEPS = 0.2, 60, 0.7
# Before evaluation RANKED_UNTIL the model is fitted to the normal scores of the targets' ranks,
# not to the log-times themselves, and a global step's target is RANKED_AMBITION times the usual
# ambition below the best score (scores spread like a unit normal sample).
RANKED_UNTIL, RANKED_AMBITION = 40, 0.5
# From evaluation SETTING_FROM, this share of the steps goes to the setting of the two-valued
# parameters evaluated least so far.
SETTING_SHARE, SETTING_FROM = 0.2, 20
# This share of the steps before evaluation EXPLORE_UNTIL (and before the end game) ranks every
# unevaluated configuration by a second, fixed model of the raw times over the value indices: a
# length scale of EXPLORE_LENGTH index steps, a signal variance EXPLORE_SIGNAL times the
# observations', little noise.
EXPLORE_SHARE, EXPLORE_UNTIL = 0.2, 50
EXPLORE_LENGTH, EXPLORE_SIGNAL, EXPLORE_NOISE = 0.8, 20.0, 1e-6
# Evaluations one model run plans for when no budget is given (a time limit alone): the search
# starts again, its model refitted from what is known, each time it has spent them.
UNBOUNDED = 1000
NORMAL_PDF_SCALE = np.sqrt(2 * np.pi)


def balanced_start(X: np.ndarray, sizes: np.ndarray, n: int, rng: np.random.Generator,
                   draw: int = 64) -> list[int]:
    """``n`` rows, each the one of a random draw whose values were used least so far."""
    N, D = X.shape
    used = [np.zeros(int(k)) for k in sizes]
    chosen: list[int] = []
    for _ in range(min(n, N)):
        pick = rng.choice(N, min(draw, N), replace=False)
        score = sum(used[d][X[pick, d]] for d in range(D)) + 0.5 * rng.random(len(pick))
        score[np.isin(pick, chosen)] = np.inf
        j = int(pick[np.argmin(score)])
        chosen.append(j)
        for d in range(D):
            used[d][X[j, d]] += 1
    return chosen


def expected_improvement(best: float, m: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The expected improvement over ``best`` of predictions of mean ``m`` and deviation ``s``."""
    from scipy.special import ndtr

    z = (best - m) / s
    # the standard normal's cdf and density, written out: scipy.stats.norm's argument handling
    # cost more than the ranking itself on a small candidate set
    return (best - m) * ndtr(z) + s * (np.exp(-z ** 2 / 2.0) / NORMAL_PDF_SCALE)


def endgame_start(budget: int) -> int:
    """The evaluation from which a run of ``budget`` evaluations is in its end game."""
    return max(budget - round(ENDGAME_SHARE * budget), ENDGAME_FROM)


def opening(budget: int) -> tuple[int, float, int]:
    """A run of ``budget`` evaluations: how many configurations its start draws, how far below
    the best (in log-time) its global steps aim, and the evaluation its setting steps start at."""
    if budget < SMALL:
        start = min(max(4, round(START_SHARE * budget)), budget)
        return start, SMALL_AMBITION, 2 * start
    return min(START, budget), GLOBAL_AMBITION, SETTING_FROM


def program(X: np.ndarray, sizes: np.ndarray, pyrng: random.Random, budget: int,
            levels: Sequence[Sequence[Any]] | None = None,
            endgame: bool = True) -> Generator[int, Any, None]:
    """The search over the rows of ``X`` (value indices of the candidates), yielding the row to
    evaluate next and receiving its objective (None where it failed); ``levels``: each
    dimension's values in index order (search.encoding), for the model's coordinates;
    ``endgame``: whether ``budget`` is where the search ends (not a time limit's plan), so that
    its last evaluations narrow to what the best configurations share."""
    rng = np.random.default_rng(pyrng.getrandbits(64))
    X, sizes = np.asarray(X), np.asarray(sizes)
    N, D = X.shape
    budget = min(budget, N)
    Z = coordinates(X, sizes, levels)
    # value indices in one byte where they fit, for the Hamming distances of the local steps
    # (eight times less memory to compare over a pool of tens of thousands of rows)
    Xb = X.astype(np.uint8) if sizes.max() <= 256 else X
    setting = settings(X, sizes)
    explorer: PoolGP | None = None
    done = np.zeros(N, dtype=bool)
    rows: list[int] = []
    values: list[Any] = []

    def told(i: int, v: Any) -> None:
        done[i] = True
        rows.append(i)
        values.append(v)

    start, aim, setting_from = opening(budget)
    for i in balanced_start(X, sizes, start, rng):
        told(i, (yield i))
    gp: PoolGP | None = None
    fitted, fitted_ranked = 0, True
    # length scales at the prior's centre, unit signal variance, little noise
    start_theta = np.r_[np.full(Z.shape[1], np.log(LENGTH_PRIOR[0])), 0.0, np.log(1e-3)]
    while len(rows) < budget:
        if sum(v is not None for v in values) < 2:   # nothing to model yet
            i = int(rng.choice(np.flatnonzero(~done)))
            told(i, (yield i))
            continue
        y = log_targets(values)
        logged = all(v is None or v > 0 for v in values)
        n = len(rows)
        ranked = n < RANKED_UNTIL
        target = normal_scores(y) if ranked else y
        if gp is None or ranked != fitted_ranked \
                or (n < REFIT_FAST_UNTIL and n - fitted >= REFIT_EVERY) \
                or (n >= REFIT_FAST_UNTIL and n >= fitted * REFIT_GROWTH):
            fitted, fitted_ranked = n, ranked
            gp = PoolGP(Z, cap=budget + 1, theta=start_theta, prior=LENGTH_PRIOR)
            gp.refit(rows, target)
        else:
            for j in rows[len(gp.rows):]:
                gp.add(j)
        mu, sd = gp.predict(target)
        cand = ~done
        order = np.argsort(y)
        seen = np.array(rows)
        u = rng.random()
        ambition = 0.0
        ending = endgame and n >= endgame_start(budget)
        if n < EXPLORE_UNTIL and rng.random() < EXPLORE_SHARE and not ending:
            times = np.exp(y) if logged else y
            if explorer is None:                   # it holds evaluations until EXPLORE_UNTIL
                theta = np.r_[np.full(D, np.log(EXPLORE_LENGTH)), np.log(EXPLORE_SIGNAL),
                              np.log(EXPLORE_NOISE)]
                explorer = PoolGP(X.astype(float), cap=min(budget, EXPLORE_UNTIL) + 1,
                                  theta=theta)
                explorer.condition(rows, times)
            for j in rows[len(explorer.rows):]:
                explorer.add(j)
            m, s = explorer.predict(times, rescale=True)
            picks = np.flatnonzero(~done)
            i = int(picks[np.argmax(expected_improvement(times.min(), m[picks], s[picks]))])
            told(i, (yield i))
            continue
        if ending and rng.random() < ENDGAME_STEPS:
            valid = [int(seen[j]) for j in order if values[j] is not None][:ELITE]
            if len(valid) >= 2:
                near = agreeing(X, valid)
                if (cand & near).any():
                    cand = cand & near
        elif setting is not None and n >= setting_from and rng.random() < SETTING_SHARE:
            cand = least_tried(setting, seen, cand, rng)
        elif u < LOCAL or u >= 1 - NICHE:
            if u < LOCAL:                               # the best and the basins near it in time
                scale = 1.0 if logged else float(y.std())
                centres = niche_leaders(X, seen, order, LOCAL_LEADERS,
                                        y[order[0]] + LOCAL_WITHIN * scale, y)
            else:                                       # the leader of another niche
                leaders = niche_leaders(X, seen, order, LEADERS)
                centres = [leaders[rng.integers(1, len(leaders))] if len(leaders) > 1
                           else leaders[0]]
            near = balls(Xb, cand, centres)
            if near.any():
                cand = near
        elif u < LOCAL + RECOMBINE:
            elite = X[seen[order[:ELITE]]]
            near = np.ones(N, dtype=bool)
            for d in range(D):                          # the elite's values and their neighbours
                vals = np.unique(elite[:, d])
                allowed = np.zeros(sizes[d], dtype=bool)
                allowed[np.clip(np.r_[vals - 1, vals, vals + 1], 0, sizes[d] - 1)] = True
                near &= allowed[X[:, d]]
            if (cand & near).any():
                cand = cand & near
        else:                       # scores: a unit spread; log-times: a ratio; else the spread's
            ambition = aim * (RANKED_AMBITION if ranked else 1.0 if logged else float(y.std()))
        picks = np.flatnonzero(cand)
        i = int(picks[np.argmax(expected_improvement(target.min() - ambition, mu[picks],
                                                     sd[picks]))])
        told(i, (yield i))


def make(space: Space, seed: int | None, opts: Mapping[str, Any], max_fevals: int | None,
         objectives: int) -> Any:
    count = space.allowed_count
    if objectives == 1 and count is not None and (max_fevals is None or max_fevals >= count):
        s = BruteForce(space)
        s.algorithm = "auto: every configuration (the space fits the budget)"
        return s
    if objectives > 1:
        from . import optuna_family

        s = optuna_family.make("nsga2", space, seed, {}, objectives)
        s.algorithm = f"auto: {s.algorithm} (several objectives)"
        return s
    from .scipy_family import import_scipy_optimize

    import_scipy_optimize()                             # the model needs SciPy: say so now
    budget = max_fevals if max_fevals is not None else UNBOUNDED
    # a time limit alone: the plan of UNBOUNDED evaluations is not where the search ends
    run = program if max_fevals is not None else partial(program, endgame=False)

    def described(pooled_rows: int) -> str:
        """What runs over pools of ``pooled_rows`` configurations: a pool smaller than the budget
        (a sample of a large space) is searched in runs of its size, each with its own end game
        (pool.pooled: a run ends there and the next starts afresh)."""
        text = ("auto: a Gaussian process over the configurations (on the ranks of the times "
                f"until evaluation {RANKED_UNTIL}), expected improvement in local, recombined "
                f"and global regions; until evaluation {EXPLORE_UNTIL}, exploring steps by a "
                "second, fixed model")
        run_length = min(budget, pooled_rows)
        if max_fevals is not None and endgame_start(run_length) < run_length:
            text += f"; from evaluation {endgame_start(run_length) + 1}"
            if run_length < max_fevals:
                text += f" of each run over a sample of {run_length} configurations"
            text += f" mostly among what the {ELITE} best share"
        return text

    # A space too large to count may allow fewer configurations than its sample would hold: the
    # rows then say what the pool drawn holds, once it is drawn.
    s = Stepwise(space, pooled(run, budget, lambda n: setattr(s, "algorithm", described(n))),
                 seed=seed, algorithm=described(pool_size(count, budget)))
    return s
