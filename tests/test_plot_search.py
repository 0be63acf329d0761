"""plot_convergence and plot_pareto over replayed searches (Kernel Tuner's test recordings)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import matplotlib
import numpy as np
import pytest

import pyclperf
from pyclperf.views.plot_search import best_so_far
from pyclperf import Execution, Search

matplotlib.use("Agg")
DATA = Path(__file__).parent / "data" / "kernel_tuner"
SIZES = [128 + 64 * i for i in range(15)]
ENERGY = {"block_size_x": SIZES, "nvml_gr_clock": [1080]}


def search(strategy: str, seed: int, budget: int = 8):
    return pyclperf.tune(
        "",
        "vector_add",
        100,
        [],
        {"block_size_x": SIZES},
        search=Search(strategy=strategy, max_fevals=budget, seed=seed),
        execution=Execution(progress=False),
        replay=DATA / "test_cache_file.json",
    )


def test_best_so_far_follows_the_rows() -> None:
    res = search("random_sample", 3)
    times = [r["time_ms"] for r in res.rows]
    assert list(best_so_far(res)) == list(np.minimum.accumulate(times))


def test_convergence_draws_a_median_per_strategy(tmp_path: Path) -> None:
    runs = {name: [search(name, s) for s in range(4)] for name in ("brute_force", "random_sample")}
    optimum = min(r["time_ms"] for r in search("brute_force", 0, 15).rows)
    fig = pyclperf.plot_convergence(runs, optimum=optimum)
    ax = fig.axes[0]
    lines = {l.get_label(): l for l in ax.get_lines()}
    assert set(lines) == {"brute_force", "random_sample"}
    y = lines["brute_force"].get_ydata()
    assert len(y) == 8 and np.all(np.diff(y) >= 0) and np.all(y <= 1.0)
    fig.savefig(tmp_path / "c.png")
    assert (tmp_path / "c.png").stat().st_size > 5000
    with pytest.raises(ValueError, match="at least one search"):
        pyclperf.plot_convergence({"x": []})


@pytest.mark.skipif(importlib.util.find_spec("optuna") is None, reason="needs the tune extra")
def test_pareto_marks_the_front(tmp_path: Path) -> None:
    res = pyclperf.tune(
        "",
        "vector_add",
        80000000,
        [],
        ENERGY,
        search=Search(strategy="nsga2", objective=["time", "energy"], max_fevals=15, seed=2),
        execution=Execution(progress=False),
        replay=DATA / "test_cache_time_energy.json",
    )
    fig = pyclperf.plot_pareto(res)
    front = [l for l in fig.axes[0].get_lines() if l.get_label() == "Pareto front"][0]
    xs = sorted(front.get_xdata())
    assert xs == sorted(r["time_ms"] for r in res.rows if r["pareto"])
    fig.savefig(tmp_path / "p.png")
    single = search("brute_force", 0)
    with pytest.raises(ValueError, match="plot_pareto draws two objectives"):
        pyclperf.plot_pareto(single)


def test_plot_tune_draws_a_replay() -> None:
    from pyclperf.views.plot_tune import plot_tune

    fig = plot_tune(search("brute_force", 0, 15))
    assert "replayed configs plotted" in fig._suptitle.get_text()
