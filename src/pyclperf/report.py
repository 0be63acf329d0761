"""One self-contained HTML page from results files, and side-by-side comparisons of two runs."""

from __future__ import annotations

import base64
import html
import io
import os
from pathlib import Path
from typing import Sequence

import pandas as pd

from .results import Results
from .sweep import timing_label

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 2em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th { background: #f3f3f3; }
td.bad { color: #b00; }
.meta { font-size: 0.85em; color: #555; }
"""

_TABLE_COLUMNS = ("status", "median_ns", "min_ns", "max_ns", "spread_pct", "gbps", "time_ms", "error")


def _figure_png(results: Results) -> str | None:
    """The experiment's plot as a base64 PNG, or None when it has nothing to plot."""
    import matplotlib.pyplot as plt

    from .plot import plot_bandwidth

    try:
        fig = plot_bandwidth(results)
    except ValueError:
        return None
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _table(results: Results) -> str:
    df = results.df
    if df.empty:
        return "<p>(no rows)</p>"
    params = [c for c in df.columns if c not in _TABLE_COLUMNS and not c.endswith("_ns")
              and c not in ("n", "mean_ns", "q1_ns", "q3_ns", "iqr_ns", "bytes", "method",
                            "gbps_best", "verified", "items", "local_size", "config")]
    cols = params + [c for c in _TABLE_COLUMNS if c in df.columns]
    return df[cols].to_html(index=False, float_format=lambda v: f"{v:.4g}", na_rep="", border=0)


def _device_block(results: Results) -> str:
    dev = results.meta.get("device", {})
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                   for k, v in dev.items())
    return f"<details><summary>device details</summary><table>{rows}</table></details>"


def render_html(all_results: Sequence[Results], title: str = "pyclperf report") -> str:
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>"]
    for res in all_results:
        m = res.meta
        dev = m.get("device", {})
        parts.append(f"<h2>{html.escape(str(m.get('title') or res.experiment))}</h2>")
        parts.append(
            "<p class='meta'>" + html.escape(
                f"{dev.get('name', '?')} · {m.get('platform', '?')} · driver {m.get('driver', '?')} · "
                f"timing: {timing_label(str(m.get('method', '?')))} · {m.get('created', '')}"
                + (" · INTERRUPTED" if m.get("interrupted") else "")) + "</p>")
        png = _figure_png(res)
        if png:
            parts.append(f"<img alt='plot' src='data:image/png;base64,{png}'>")
        parts.append(_table(res))
        parts.append(_device_block(res))
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(paths: Sequence[str | os.PathLike[str]], out_dir: str | os.PathLike[str]) -> Path:
    """Load each results file and write ``out_dir/report.html``."""
    loaded = [Results.load(p) for p in paths]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    page = out / "report.html"
    page.write_text(render_html(loaded), encoding="utf-8")
    return page


def compare(a: Results, b: Results, metric: str | None = None) -> pd.DataFrame:
    """Rows of two runs of one experiment joined on their parameters, with b/a ratios.

    ``metric`` defaults to ``gbps`` where present, else ``median_ns``.
    """
    if a.experiment != b.experiment:
        raise ValueError(f"cannot compare different experiments: {a.experiment!r} and {b.experiment!r}")
    da, db = a.df, b.df
    metric = metric or ("gbps" if "gbps" in da and "gbps" in db else "median_ns")
    if metric not in da or metric not in db:
        raise ValueError(f"metric {metric!r} is not in both results")
    x = a.meta.get("x")
    keys = [x] if x else ["config"] if "config" in da else []
    keys += [k for k in ("direction", "memory", "access", "size", "variant") if k in da and k in db]
    if not keys:
        raise ValueError("results carry no parameter columns to join on")
    name_a = a.meta.get("device", {}).get("name", "A")
    name_b = b.meta.get("device", {}).get("name", "B")
    if name_a == name_b:
        name_a, name_b = f"{name_a} (A)", f"{name_b} (B)"
    left = da[keys + [metric, "status"]].rename(columns={metric: name_a, "status": "status A"})
    right = db[keys + [metric, "status"]].rename(columns={metric: name_b, "status": "status B"})
    joined = left.merge(right, on=keys, how="outer")
    joined["ratio B/A"] = joined[name_b] / joined[name_a]
    return joined
