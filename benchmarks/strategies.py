"""How well each search strategy finds the fastest configuration: pyclperf's and Kernel Tuner's,
both replaying fully brute-forced search spaces, side by side in one run.

The spaces are the Auto-Tuning Benchmark Hub's (github.com/AutoTuningAssociation/benchmark_hub,
MIT licence: Kernel Tuner cache files of every configuration of a kernel, measured on a GPU):
the convolution kernel on an NVIDIA A100, A4000 and A6000, and the GEMM kernel on an RTX 3090,
RTX 2080 Ti and Titan RTX. Point ``--hub`` at a checkout of that repository (default:
$PYCLPERF_HUB, else shared/benchmark_hub beside or inside this checkout). Each space's
restrictions are those of the Hub's own tuning script for that kernel (cited below). Where the
Hub is absent, the run falls back to the small recordings the tests use (tests/data), which
check the machinery and say nothing about search quality.

For each space, strategy and seed, a search of B unique evaluations is replayed (pyclperf:
``tune(replay=...)``, once per budget B, since ``auto`` plans by its budget; Kernel Tuner 1.5:
``tune_kernel(simulation_mode=True)`` once at the largest budget, its best-so-far read at each
smaller one, except for the strategies whose schedule depends on the budget, run per budget).
Reported per budget: the median and 10th percentile over seeds of the fraction of the optimum
reached (optimum time / best time found); per strategy and space, the autotuning-methodology
package's performance score over the evaluation budget (0: random search, 1: the optimum at
once; Willemsen, van Nieuwpoort and van Werkhoven, 2024), where the package is installed.

    pip install kernel_tuner==1.5.0 autotuning-methodology     # the comparison and the score
    python benchmarks/strategies.py --hub ~/benchmark_hub --seeds 30 --out results/strategies

Writes runs.jsonl (every trajectory), table.md and convergence.png to --out. The seeds are 0 to
SEEDS-1; ``--first-seed 90`` runs 90 on instead: ``auto``'s design was chosen on seeds 0-89 of
these spaces, which therefore favour it, so a fair check of it takes others. ``--held-out``
runs the Hub's convolution spaces that no design choice of ``auto`` was judged on (AMD MI250X,
AMD W7800, AMD W6600) instead of the six: the same comparison on spaces it has never seen.
``--jobs N`` runs N replays at once, one process each, longest first (a seeded replay gives the
same trajectory either way, Kernel Tuner's bayes_opt past its start only where timings agree);
runs.jsonl holds each replay as it finishes, and ``--reuse`` takes Kernel Tuner's part of a run
stopped part-way back.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import gzip
import io
import json
import random
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from pyclperf import Execution, Search

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.append(str(HERE))          # hub_spaces.py beside it, also when this is loaded apart
from hub_spaces import (HELD_OUT_SPACES, HUB_SPACES, SMALL_SPACES, Space,  # noqa: E402,F401
                        hub_dir, spaces)

OURS = ["auto", "random_sample", "genetic_algorithm", "dual_annealing", "pso", "tpe",
        "simulated_annealing", "diff_evo", "greedy_ils"]
KT = ["random_sample", "genetic_algorithm", "simulated_annealing", "pso", "diff_evo",
      "dual_annealing", "greedy_ils", "greedy_mls", "mls", "ordered_greedy_mls",
      "firefly_algorithm", "basinhopping", "minimize", "hybrid_vndx", "adaptive_tabu_greywolf",
      "bayes_opt"]
# Kernel Tuner strategies whose schedule depends on max_fevals: run once per budget.
KT_BUDGET_AWARE = {"simulated_annealing", "dual_annealing"}
# pyclperf's: auto decides by its budget whether to walk the space, so it runs once per budget;
# the others plan nothing by it and run once at the largest, read at each smaller one.
OURS_BUDGET_AWARE = {"auto"}
BUDGETS = [20, 50, 100, 200, 400]


def best_so_far(times: list[float | None]) -> list[float | None]:
    out, best = [], None
    for t in times:
        if t is not None and (best is None or t < best):
            best = t
        out.append(best)
    return out


def ours(space: Space, strategy: str, budget: int, seed: int) -> tuple[list[float | None], float]:
    import pyclperf

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pyclperf.tune(
            "",
            space.kernel,
            1,
            [],
            space.params,
            restrictions=space.restrictions,
            search=Search(strategy=strategy, max_fevals=budget, seed=seed),
            execution=Execution(progress=False),
            replay=space.path,
        )
    wall = time.perf_counter() - start
    times = [r.get("time_ms") if r["status"] == "replayed" else None for r in res.rows]
    return best_so_far(times), wall


@contextlib.contextmanager
def seeded_latin_hypercubes(seed: int):
    """While it lasts, every SciPy ``qmc.LatinHypercube`` built without a generator gets one
    derived from ``seed`` (a new stream each, in the order they are built).

    Kernel Tuner's bayes_opt (its start) and diff_evo (through its search space's LHS sample)
    build theirs without one, and SciPy then draws fresh entropy: two replays with the same
    seed started differently. The start is drawn as before, from a seeded stream instead of the
    OS's. (bayes_opt's path after its start also depends on timing: in simulation it refits its
    model every sixth round of three evaluations, or sooner when a round took five times as long
    as the last prediction.)"""
    from scipy.stats import qmc

    original = qmc.LatinHypercube.__init__
    streams = np.random.SeedSequence(seed)

    def seeded_init(self: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("rng") is None and kwargs.get("seed") is None:
            kwargs["rng"] = np.random.default_rng(streams.spawn(1)[0])
        original(self, *args, **kwargs)

    qmc.LatinHypercube.__init__ = seeded_init
    try:
        yield
    finally:
        qmc.LatinHypercube.__init__ = original


def theirs(space: Space, cache: Path, strategy: str, budget: int, seed: int
                 ) -> tuple[list[float | None], float]:
    import kernel_tuner

    np.random.seed(seed)
    random.seed(seed)
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings(), \
            seeded_latin_hypercubes(seed):
        warnings.simplefilter("ignore")
        res, _ = kernel_tuner.tune_kernel(
            space.kernel, "__global__ void k() {}", space.problem_size, [], space.params,
            lang="CUDA",
            restrictions=space.restrictions or None, cache=str(cache), simulation_mode=True,
            strategy=strategy, strategy_options={"max_fevals": budget}, quiet=True,
            verbose=False)
    wall = time.perf_counter() - start
    seen: set[str] = set()
    times: list[float | None] = []
    for r in res:                             # Kernel Tuner lists repeats: count unique ones
        key = ",".join(str(r[k]) for k in space.params)
        if key in seen:
            continue
        seen.add(key)
        t = r.get("time")
        times.append(float(t) if isinstance(t, (int, float)) and np.isfinite(t) else None)
    return best_so_far(times)[:budget], wall


# --- the run ---------------------------------------------------------------------------------------
# The spaces this process has built, by name: a worker forked after the parent built them reads
# them from here rather than parsing the recording again.
_SPACES: dict[str, Space] = {}


def space_of(name: str, path: Path, restrictions: list[str]) -> Space:
    if name not in _SPACES:
        _SPACES[name] = Space(name, path, restrictions)
    return _SPACES[name]


class Task(NamedTuple):
    """One seed of one strategy on one space, replayed at each (budget, anytime) of ``plan``."""
    space: str
    path: Path
    restrictions: list[str]
    tool: str
    strategy: str
    seed: int
    plan: list[tuple[int, bool]]
    cache: Path | None                  # Kernel Tuner's plain JSON copy of the recording


def plan_of(strategy: str, budget_aware: set[str], budgets: list[int]) -> list[tuple[int, bool]]:
    """A strategy whose schedule depends on its budget runs at each; any other once, at the
    largest, read at each smaller one (anytime)."""
    return ([(b, False) for b in budgets] if strategy in budget_aware
            else [(max(budgets), True)])


def replay(task: Task) -> list[dict[str, Any]]:
    """A task's records, one per (budget, anytime) of its plan."""
    space = space_of(task.space, task.path, task.restrictions)
    out = []
    for budget, anytime in task.plan:
        if task.tool == "pyclperf":
            traj, wall = ours(space, task.strategy, budget, task.seed)
        else:
            traj, wall = theirs(space, task.cache, task.strategy, budget, task.seed)
        out.append({"space": task.space, "tool": task.tool, "strategy": task.strategy,
                    "budget": budget, "seed": task.seed, "anytime": anytime,
                    "wall_s": round(wall, 4), "traj": traj, "size": space.size,
                    "optimum": space.optimum})
    return out


def one_thread() -> None:
    """A worker's BLAS and OpenMP pools held to one thread: with one replay per core, threads
    of their own only contend (and bayes_opt's path past its start depends on timing)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(1)


def cost(task: Task) -> float:
    """A rough replay cost, to start the longest first so that no long one is left at the end:
    Kernel Tuner's bayes_opt and its per-budget strategies before the rest, large spaces first
    (every space is built before the tasks are ordered)."""
    weight = {"bayes_opt": 8.0, "hybrid_vndx": 4.0, "basinhopping": 3.0}.get(task.strategy, 1.0)
    if task.tool == "pyclperf":
        weight = 0.5
    return weight * len(task.plan) * _SPACES[task.space].size


def read_reuse(paths: list[str] | None) -> dict[tuple, dict[str, Any]]:
    """Kernel Tuner's records in runs.jsonl files (gzipped too), by (space, strategy, budget,
    seed, anytime)."""
    reuse: dict[tuple, dict[str, Any]] = {}
    for path in paths or []:
        opener = gzip.open if str(path).endswith(".gz") else open
        with opener(path, "rt") as f:
            for line in f:
                r = json.loads(line)
                if r.get("tool") == "kernel_tuner" and "traj" in r:
                    reuse[(r["space"], r["strategy"], r["budget"], r["seed"], r["anytime"])] = r
    return reuse


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    hub = hub_dir(args.hub)
    chosen = spaces(hub, args.spaces, args.held_out)
    if not chosen:
        sys.exit("no space to replay: give --hub (a benchmark_hub checkout)")
    print(f"spaces from {hub or 'the tests recordings (no Hub found)'}: {', '.join(chosen)}",
          flush=True)
    budgets = [b for b in args.budgets if b > 0]
    have_kt = args.kt != ["none"]
    if have_kt:
        try:
            import kernel_tuner  # noqa: F401
        except ImportError:
            print("Kernel Tuner is not installed: pip install kernel_tuner==1.5.0 (ours only)",
                  file=sys.stderr)
            have_kt = False
    # Kernel Tuner's replays from an earlier run of this script (or its records in this format):
    # seeded (theirs()), so the same call repeats the same trajectory (bayes_opt's past its start
    # only where the timings agree; see seeded_latin_hypercubes), and they need not be computed
    # again. Records of bayes_opt and diff_evo written before their starts were seeded (before
    # 2026-11-30) are draws of the same search, not that seed's run.
    reuse = read_reuse(args.reuse)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="strategies-"))
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    tasks: list[Task] = []
    taken: list[dict[str, Any]] = []
    for name, (path, restrictions) in chosen.items():
        space = space_of(name, path, restrictions)
        print(f"{name}: {space.size} configurations, optimum {space.optimum:.4g} ms", flush=True)
        (out / "spaces").mkdir(exist_ok=True)
        space.t4(out / "spaces")
        space_budgets = [b for b in budgets if b <= space.size] or [space.size]
        for strategy in args.ours:
            plan = plan_of(strategy, OURS_BUDGET_AWARE, space_budgets)
            tasks += [Task(name, path, restrictions, "pyclperf", strategy, seed, plan, None)
                      for seed in seeds]
        if not have_kt:
            continue
        cache = space.kt_cache(tmp)
        for strategy in args.kt:
            plan = plan_of(strategy, KT_BUDGET_AWARE, space_budgets)
            for seed in seeds:
                left = [(b, a) for b, a in plan if (name, strategy, b, seed, a) not in reuse]
                # recorded earlier: taken as it was
                taken += [reuse[(name, strategy, b, seed, a)] for b, a in plan
                          if (b, a) not in left]
                if left:
                    tasks.append(Task(name, path, restrictions, "kernel_tuner", strategy, seed,
                                      left, cache))
    runs: list[dict[str, Any]] = []
    # what finished is on disk as it finishes: a run stopped part-way keeps it (--reuse takes
    # Kernel Tuner's part of it back)
    with open(out / "runs.jsonl", "w") as log:
        def record(recs: list[dict[str, Any]]) -> None:
            for rec in recs:
                runs.append(rec)
                log.write(json.dumps(rec) + "\n")
            log.flush()

        record(taken)
        # replays left of each (space, tool, strategy), to say when one is done
        groups = collections.Counter((t.space, t.tool, t.strategy) for t in tasks)
        started = time.perf_counter()

        def finished(recs: list[dict[str, Any]]) -> None:
            record(recs)
            key = recs[0]["space"], recs[0]["tool"], recs[0]["strategy"]
            groups[key] -= 1
            if not groups[key]:
                print(f"  {key[1]} {key[2]} on {key[0]}: done at "
                      f"{time.perf_counter() - started:.1f} s", flush=True)

        if args.jobs == 1:
            for t in tasks:
                finished(replay(t))
        else:
            import multiprocessing

            tasks.sort(key=cost, reverse=True)
            with multiprocessing.Pool(args.jobs, initializer=one_thread) as pool:
                for recs in pool.imap_unordered(replay, tasks):
                    finished(recs)
    return runs


def main(argv: list[str] | None = None) -> int:
    from strategies_report import report     # beside this file

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--hub", default=None, help="a checkout of AutoTuningAssociation/benchmark_hub")
    p.add_argument("--spaces", nargs="*", default=None, help="names of the spaces to run (all)")
    p.add_argument("--held-out", action="store_true",
                   help="the Hub's convolution spaces auto was never tuned on (MI250X, W7800, "
                        "W6600), not the six")
    p.add_argument("--seeds", type=int, default=30)
    p.add_argument("--first-seed", type=int, default=0,
                   help="the seeds run are FIRST ... FIRST+SEEDS-1: a strategy whose design was "
                        "chosen on seeds 0-89 is judged fairly on others")
    p.add_argument("--budgets", type=int, nargs="+", default=BUDGETS)
    p.add_argument("--ours", nargs="+", default=OURS, help="pyclperf's strategies to run")
    p.add_argument("--kt", nargs="+", default=KT,
                   help="Kernel Tuner's strategies to run ('none': none)")
    p.add_argument("--out", default="results/strategies")
    p.add_argument("--reuse", nargs="*", default=None, metavar="RUNS",
                   help="runs.jsonl files of earlier runs whose Kernel Tuner replays are taken "
                        "instead of computed again (a seeded replay repeats its trajectory)")
    p.add_argument("--jobs", type=int, default=1,
                   help="replays run at once, one process each (default 1)")
    p.add_argument("--replot", action="store_true", help="report --out's runs.jsonl again")
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.first_seed < 0 or args.seeds < 1:
        p.error(f"--first-seed must be at least 0 and --seeds at least 1, got {args.first_seed} "
                f"and {args.seeds}")
    if args.replot:
        runs = [json.loads(line) for line in open(Path(args.out) / "runs.jsonl")]
    else:
        runs = run(args)
    print(report(runs, Path(args.out), args.budgets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
