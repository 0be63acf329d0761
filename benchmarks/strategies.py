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
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import os
import random
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from pyclperf import Execution, Search

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# The Hub's tuning scripts' restrictions: kernels/convolution_milo.py and kernels/gemm_milo.py
# of benchmark_hub (Kernel Tuner string expressions over the parameters).
CONVOLUTION = ["use_padding==0 or block_size_x % 32 != 0", "block_size_x*block_size_y<=1024",
               "use_padding==0 or use_shmem != 0",
               "use_shmem == 0 or (((block_size_x*tile_size_x+(filter_width-1)))*"
               "((block_size_y*tile_size_y+(filter_height-1)))) < 12*1024"]
GEMM = ["KWG % KWI == 0", "MWG % (MDIMC * VWM) == 0", "NWG % (NDIMC * VWN) == 0",
        "MWG % (MDIMA * VWM) == 0", "NWG % (NDIMB * VWN) == 0",
        "KWG % ((MDIMC * NDIMC)/MDIMA) == 0", "KWG % ((MDIMC * NDIMC)/NDIMB) == 0",
        "not (MWG == 128 and NWG == 128 and MDIMC == 8 and NDIMC == 8)"]
KT_GEMM = "currently_unused/cachefiles/KernelTuner data/gemm"
HUB_SPACES = {
    "convolution A100": ("cachefiles/convolution_milo/A100.json.gz", CONVOLUTION),
    "convolution A4000": ("cachefiles/convolution_milo/A4000.json.gz", CONVOLUTION),
    "convolution A6000": ("cachefiles/convolution_milo/A6000.json.gz", CONVOLUTION),
    "GEMM RTX 3090": (f"{KT_GEMM}/RTX_3090.json.gz", GEMM),
    "GEMM RTX 2080 Ti": (f"{KT_GEMM}/RTX_2080_Ti.json.gz", GEMM),
    "GEMM Titan RTX": (f"{KT_GEMM}/RTX_Titan.json.gz", GEMM),
}
# The Hub's other convolution spaces, kept out of every design choice of auto: --held-out.
HELD_OUT_SPACES = {
    "convolution MI250X": ("cachefiles/convolution_milo/MI250X.json.gz", CONVOLUTION),
    "convolution W7800": ("cachefiles/convolution_milo/W7800.json.gz", CONVOLUTION),
    "convolution W6600": ("cachefiles/convolution_milo/W6600.json.gz", CONVOLUTION),
}
# The tests' recordings (Kernel Tuner's own test files), for a run without the Hub.
SMALL_SPACES = {
    "vector_add RTX A4000 (test file)": (ROOT / "tests/data/kernel_tuner/test_cache_file.json", []),
    "vector_add RTX 4000 Ada (test file)": (
        ROOT / "tests/data/kernel_tuner/test_cache_time_energy.json", []),
}
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


def hub_dir(given: str | None) -> Path | None:
    for candidate in (given, os.environ.get("PYCLPERF_HUB"), ROOT / "shared/benchmark_hub",
                      ROOT.parent / "shared/benchmark_hub"):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


def spaces(hub: Path | None, names: list[str] | None,
           held_out: bool = False) -> dict[str, tuple[Path, list[str]]]:
    """The spaces to run: the Hub's six (``held_out``: its held-out ones), those of them its
    checkout holds, or without the Hub the tests' small recordings; ``names``: only these."""
    if hub is None:
        if held_out:
            raise SystemExit("--held-out needs the Hub: give --hub or set PYCLPERF_HUB")
        found = {n: (Path(p), r) for n, (p, r) in SMALL_SPACES.items()}
    else:
        table = HELD_OUT_SPACES if held_out else HUB_SPACES
        found = {n: (hub / p, r) for n, (p, r) in table.items() if (hub / p).is_file()}
        missing = [n for n, (p, _) in table.items() if not (hub / p).is_file()]
        if missing:
            print(f"not in {hub}: {', '.join(missing)}", file=sys.stderr)
    if names:
        found = {n: v for n, v in found.items() if n in names}
    return found


# --- one space ------------------------------------------------------------------------------------
class Space:
    """A recorded space: its parameters, restrictions, allowed configurations and optimum."""

    def __init__(self, name: str, path: Path, restrictions: list[str]) -> None:
        from pyclperf.tuner.replay import load
        from pyclperf.tuner.restrictions import compile_restrictions
        from pyclperf.tuner.searchspace import Space as Configs

        self.name, self.path, self.restrictions = name, path, restrictions
        self.rec = load(path)
        self.params = {k: list(v) for k, v in self.rec.tune_params.items()}
        self.kernel = self.rec.kernel_name or "kernel"
        size = self.rec.problem_size
        self.problem_size = tuple(size) if isinstance(size, list) else (size or 1)
        configs = Configs(self.params, compile_restrictions(restrictions, list(self.params)))
        self.allowed = [configs.config(i) for i in configs.allowed_ids]
        times = [self.rec.lookup(c) for c in self.allowed]
        valid = [r.time_ms for r in times if r is not None and r.time_ms is not None]
        self.optimum = min(valid)
        self.size = len(self.allowed)

    def fraction(self, best: float | None) -> float:
        return 0.0 if best is None else self.optimum / best

    def kt_cache(self, folder: Path) -> Path:
        """The recording as a plain JSON file (Kernel Tuner reads no gzip)."""
        out = folder / (self.path.name.removesuffix(".gz"))
        if not out.exists():
            raw = self.path.read_bytes()
            out.write_bytes(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
        return out

    def t4(self, folder: Path) -> Path:
        """The allowed configurations as a T4 results file, for the methodology's statistics."""
        out = folder / f"{self.name.replace(' ', '_')}_T4.json"
        results = []
        for c in self.allowed:
            r = self.rec.lookup(c)
            if r is None:
                continue
            results.append({
                "configuration": c, "objectives": ["time"],
                "times": {"compilation": r.compile_ms, "validation": r.verification_ms,
                          "benchmark": r.benchmark_ms, "framework": 0.0, "search_algorithm": 0.0,
                          "runtimes": r.times_ms or ([r.time_ms] if r.time_ms else [])},
                "invalidity": "correct" if r.time_ms is not None else "runtime",
                "correctness": 1 if r.time_ms is not None else 0,
                "measurements": [{"name": "time", "value": r.time_ms if r.time_ms is not None
                                  else "RuntimeFailedConfig", "unit": "ms"}]})
        out.write_text(json.dumps({"schema_version": "1.0.0",
                                   "metadata": {"timeunit": "milliseconds"}, "results": results}))
        return out


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


# --- the run --------------------------------------------------------------------------------------
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
    runs: list[dict[str, Any]] = []
    # Kernel Tuner's replays from an earlier run of this script (or its records in this format):
    # seeded (theirs()), so the same call repeats the same trajectory (bayes_opt's past its start
    # only where the timings agree; see seeded_latin_hypercubes), and they need not be computed
    # again. Records of bayes_opt and diff_evo written before their starts were seeded (before
    # 2026-11-30) are draws of the same search, not that seed's run.
    reuse: dict[tuple, dict[str, Any]] = {}
    for path in args.reuse or []:
        for line in open(path):
            r = json.loads(line)
            if r.get("tool") == "kernel_tuner" and "traj" in r:
                reuse[(r["space"], r["strategy"], r["budget"], r["seed"], r["anytime"])] = r
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = open(out / "runs.jsonl", "w")
    tmp = Path(tempfile.mkdtemp(prefix="strategies-"))
    for name, (path, restrictions) in chosen.items():
        space = Space(name, path, restrictions)
        print(f"{name}: {space.size} configurations, optimum {space.optimum:.4g} ms", flush=True)
        (out / "spaces").mkdir(exist_ok=True)
        space.t4(out / "spaces")
        space_budgets = [b for b in budgets if b <= space.size] or [space.size]

        def record(tool: str, strategy: str, budget: int, seed: int, traj: list, wall: float,
                   anytime: bool) -> None:
            rec = {"space": name, "tool": tool, "strategy": strategy, "budget": budget,
                   "seed": seed, "anytime": anytime, "wall_s": round(wall, 4),
                   "traj": traj, "size": space.size, "optimum": space.optimum}
            runs.append(rec)
            log.write(json.dumps(rec) + "\n")
            log.flush()

        for strategy in args.ours:
            started = time.perf_counter()
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                if strategy in OURS_BUDGET_AWARE:
                    for b in space_budgets:
                        traj, wall = ours(space, strategy, b, seed)
                        record("pyclperf", strategy, b, seed, traj, wall, False)
                else:
                    traj, wall = ours(space, strategy, max(space_budgets), seed)
                    record("pyclperf", strategy, max(space_budgets), seed, traj, wall, True)
            print(f"  pyclperf {strategy}: {time.perf_counter() - started:.1f} s", flush=True)
        if not have_kt:
            continue
        cache = space.kt_cache(tmp)
        for strategy in args.kt:
            started = time.perf_counter()
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                plan = ([(b, False) for b in space_budgets] if strategy in KT_BUDGET_AWARE
                        else [(max(space_budgets), True)])
                for b, anytime in plan:
                    key = (name, strategy, b, seed, anytime)
                    if key in reuse:             # recorded earlier: taken as it was
                        traj, wall = reuse[key]["traj"], reuse[key]["wall_s"]
                    else:
                        traj, wall = theirs(space, cache, strategy, b, seed)
                    record("kernel_tuner", strategy, b, seed, traj, wall, anytime)
            print(f"  kernel_tuner {strategy}: {time.perf_counter() - started:.1f} s", flush=True)
    log.close()
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
    p.add_argument("--replot", action="store_true", help="report --out's runs.jsonl again")
    args = p.parse_args(argv)
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
    sys.path.insert(0, str(HERE))
    sys.exit(main())
