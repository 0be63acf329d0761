"""The table, the scores and the convergence figure of benchmarks/strategies.py's runs."""

from __future__ import annotations

import collections
import warnings
from pathlib import Path
from typing import Any, Iterable

import numpy as np

Key = tuple[str, str, str]          # space, tool, strategy


def fraction_at(run: dict[str, Any], budget: int) -> float | None:
    """The fraction of the optimum a run had reached after ``budget`` evaluations, None where
    the run does not speak for that budget (it was planned for another one)."""
    traj = run["traj"]
    if not run["anytime"] and run["budget"] != budget:
        return None
    if run["anytime"] and budget > run["budget"]:
        return None
    if not traj:
        return 0.0
    best = traj[min(budget, len(traj)) - 1]
    return 0.0 if best is None else run["optimum"] / best


def fractions(runs: Iterable[dict[str, Any]], budgets: list[int]
              ) -> dict[Key, dict[int, list[float]]]:
    out: dict[Key, dict[int, list[float]]] = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in runs:
        for b in budgets:
            f = fraction_at(r, b)
            if f is not None:
                out[(r["space"], r["tool"], r["strategy"])][b].append(f)
    return out


def stats(values: list[float]) -> tuple[float, float]:
    return float(np.median(values)), float(np.percentile(values, 10))


def curve(runs: list[dict[str, Any]], top: int) -> np.ndarray:
    """Median fraction of the optimum after 1..top evaluations over the runs (each run's
    trajectory, its last best carried on where it stopped early)."""
    rows = []
    for r in runs:
        traj = [r["optimum"] / t if t else 0.0 for t in r["traj"]] or [0.0]
        traj = traj + [traj[-1]] * (top - len(traj))
        rows.append(traj[:top])
    return np.median(np.array(rows), axis=0)


def scores(runs: list[dict[str, Any]], spaces_dir: Path) -> dict[Key, float]:
    """The autotuning-methodology package's performance score of each strategy on each space:
    its mean best-so-far curve over the evaluation budget, standardised against the package's
    calculated random search (0) and the optimum (1), averaged over the budget."""
    try:
        from autotuning_methodology.baseline import RandomSearchCalculatedBaseline
        from autotuning_methodology.searchspace_statistics import SearchspaceStatistics
    except ImportError:
        return {}
    groups: dict[Key, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in runs:
        groups[(r["space"], r["tool"], r["strategy"])].append(r)
    out: dict[Key, float] = {}
    baselines: dict[str, Any] = {}
    for (space, tool, strategy), group in groups.items():
        t4 = spaces_dir / f"{space.replace(' ', '_')}_T4.json"
        if not t4.exists():
            continue
        top = max(r["budget"] for r in group)
        group = [r for r in group if r["budget"] == top]
        if space not in baselines:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                stats_ = SearchspaceStatistics(space, space, True, ["compilation", "validation",
                                               "benchmark"], ["time"], t4, full_validate=False)
                baselines[space] = RandomSearchCalculatedBaseline(stats_)
        fevals = np.arange(1, top + 1)
        mean = []
        for r in group:
            traj = list(r["traj"]) or [None]
            traj = traj + [traj[-1]] * (top - len(traj))
            mean.append([np.nan if t is None else t for t in traj[:top]])
        curve_ = np.nanmean(np.array(mean, dtype=float), axis=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                standardised = baselines[space].get_standardised_curves(fevals, [curve_],
                                                                        "fevals")[0]
            except ValueError:      # random search reaches the optimum in the budget: no score
                continue
        out[(space, tool, strategy)] = float(np.nanmean(standardised))
    return out


def report(runs: list[dict[str, Any]], out: Path, budgets: list[int]) -> str:
    """Markdown: per space, pyclperf's default (auto) and Kernel Tuner's best strategy at each
    budget (median / 10th percentile of the fraction of the optimum; the best chosen per budget
    and statistic), then every strategy's row and score. Also writes table.md and the figure."""
    fr = fractions(runs, budgets)
    sc = scores(runs, out / "spaces")
    lines = []
    by_space: dict[str, list[Key]] = collections.defaultdict(list)
    for key in fr:
        by_space[key[0]].append(key)
    for space, keys in by_space.items():
        seeds = max(len(v) for k in keys for v in fr[k].values())
        lines.append(f"\n### {space} ({seeds} seeds)\n")
        lines.append("| strategy | " + " | ".join(str(b) for b in budgets) + " | score |")
        lines.append("| --- |" + " --- |" * (len(budgets) + 1))
        kt = [k for k in keys if k[1] == "kernel_tuner"]
        for label, group in (("pyclperf auto", [k for k in keys if k[1] == "pyclperf"
                                                  and k[2] == "auto"]),):
            for k in group:
                cells = [f"{stats(fr[k][b])[0]:.2f} / {stats(fr[k][b])[1]:.2f}" if fr[k].get(b)
                         else "" for b in budgets]
                lines.append(f"| **{label}** | " + " | ".join(cells) + f" | {_score(sc, k)} |")
        if kt:
            cells = []
            for b in budgets:
                have = [(stats(fr[k][b]), k[2]) for k in kt if fr[k].get(b)]
                if not have:
                    cells.append("")
                    continue
                med = max(have, key=lambda h: h[0][0])
                p10 = max(have, key=lambda h: h[0][1])
                cells.append(f"{med[0][0]:.2f} ({med[1]}) / {p10[0][1]:.2f} ({p10[1]})")
            scored = [(sc[k], k[2]) for k in kt if k in sc]
            best = f"{max(scored)[0]:.3f} ({max(scored)[1]})" if scored else ""
            lines.append("| **Kernel Tuner's best** | " + " | ".join(cells) + f" | {best} |")
        for k in sorted(keys, key=lambda k: (k[1] != "pyclperf", k[2])):
            if k[1] == "pyclperf" and k[2] == "auto":
                continue
            tool = "pyclperf" if k[1] == "pyclperf" else "KT"
            cells = [f"{stats(fr[k][b])[0]:.2f} / {stats(fr[k][b])[1]:.2f}" if fr[k].get(b)
                     else "" for b in budgets]
            lines.append(f"| {tool} {k[2]} | " + " | ".join(cells) + f" | {_score(sc, k)} |")
    lines[:0] = _summary(fr, sc, budgets, by_space)
    walls = collections.defaultdict(list)
    for r in runs:
        if r["budget"] == 100 and not r["anytime"]:
            walls[(r["space"], r["tool"], r["strategy"])].append(r["wall_s"])
    if walls:
        lines.append("\nWall time of one replay of 100 evaluations (median over seeds, s):\n")
        for k, v in sorted(walls.items()):
            lines.append(f"- {k[0]}, {k[1]} {k[2]}: {np.median(v):.3f}")
    text = "\n".join(lines)
    (out / "table.md").write_text(text + "\n")
    _figure(runs, by_space, out / "convergence.png", max(budgets))
    return text


def _summary(fr: dict[Key, Any], sc: dict[Key, float], budgets: list[int],
             by_space: dict[str, list[Key]]) -> list[str]:
    """How often auto reaches Kernel Tuner's best strategy of each cell (the best of all its
    strategies, chosen per space, budget and statistic), and every strategy's mean score."""
    lines = []
    cells = met_median = met_p10 = 0
    for space, keys in by_space.items():
        auto = (space, "pyclperf", "auto")
        kt = [k for k in keys if k[1] == "kernel_tuner"]
        for b in budgets:
            have = [stats(fr[k][b]) for k in kt if fr[k].get(b)]
            if auto not in fr or not fr[auto].get(b) or not have:
                continue
            mine = stats(fr[auto][b])
            cells += 1
            met_median += mine[0] >= max(h[0] for h in have) - 1e-9
            met_p10 += mine[1] >= max(h[1] for h in have) - 1e-9
    if cells:
        lines.append(f"pyclperf auto at least Kernel Tuner's best strategy of the cell: median in "
                     f"{met_median} of {cells} (space, budget) cells, 10th percentile in "
                     f"{met_p10} of {cells}.\n")
    per: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    for (space, tool, strategy), value in sc.items():
        per[(tool, strategy)].append(value)
    spaces = len(by_space)
    ranked = sorted(((float(np.mean(v)), t, s) for (t, s), v in per.items() if len(v) == spaces),
                    reverse=True)
    if ranked:
        lines.append(f"Mean score over the {spaces} spaces (autotuning-methodology; 0 is random "
                     "search, 1 the optimum from the first evaluation):\n")
        lines.append("| strategy | mean score |")
        lines.append("| --- | --- |")
        for value, tool, strategy in ranked:
            name = f"pyclperf {strategy}" if tool == "pyclperf" else f"KT {strategy}"
            lines.append(f"| {name} | {value:.3f} |")
    return lines


def _score(sc: dict[Key, float], k: Key) -> str:
    return f"{sc[k]:.3f}" if k in sc else ""


def _figure(runs: list[dict[str, Any]], by_space: dict[str, list[Key]], path: Path,
            top: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(by_space)
    cols = min(3, len(names))
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.8 * rows), squeeze=False)
    for ax, space in zip(axes.flat, names):
        group: dict[tuple[str, str], list[dict[str, Any]]] = collections.defaultdict(list)
        for r in runs:
            if r["space"] == space:
                group[(r["tool"], r["strategy"])].append(r)
        for (tool, strategy), rs in sorted(group.items()):
            biggest = max(r["budget"] for r in rs)
            rs = [r for r in rs if r["budget"] == biggest]
            n = min(top, biggest)
            y = curve(rs, n)
            x = np.arange(1, n + 1)
            if tool == "pyclperf" and strategy == "auto":
                ax.plot(x, y, color="black", lw=2.2, label="pyclperf auto", zorder=5)
            elif tool == "pyclperf":
                ax.plot(x, y, lw=0.9, ls="--", label=f"pyclperf {strategy}")
            else:
                ax.plot(x, y, lw=0.9, alpha=0.8, label=f"KT {strategy}")
        ax.set_xscale("log")
        ax.set_title(space, fontsize=10)
        ax.set_xlabel("unique evaluations")
        ax.set_ylabel("median fraction of optimum")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=6, fontsize=7, frameon=False)
    # Room under the axes for the legend's rows (about 0.16 inch each), whatever the grid's height.
    legend_in = 0.25 + 0.16 * -(-len(labels) // 6)
    fig.tight_layout(rect=(0, legend_in / fig.get_figheight(), 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
