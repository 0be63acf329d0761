"""One self-contained HTML page from results files, and side-by-side comparisons of two runs."""

from __future__ import annotations

import base64
import html
import io
import os
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np

from .compare import compare  # noqa: F401  (its home before views/compare.py)
from ..measure.results import Results
from ..measure.sweep import timing_label

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 2em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th { background: #f3f3f3; }
td.bad { color: #b00; }
.meta { font-size: 0.85em; color: #555; }
.scroll { overflow-x: auto; max-width: 100%; }
img { max-width: 100%; height: auto; }
pre.explain { font-size: 0.8em; white-space: pre-wrap; background: #f8f8f8; padding: 0.5em; }
"""

_TABLE_COLUMNS = ("status", "median_ns", "min_ns", "max_ns", "spread_pct", "gbps", "time_ms", "error")


def figure_png(results: Results) -> str | None:
    """The experiment's own figure (plot.plot_results, as its ``plot`` spec says) as a base64
    PNG; None when it has no figure or nothing to draw."""
    import matplotlib.pyplot as plt

    from .plot import plot_results

    # A file may hold any numbers and names: an infinite or enormous value overflows
    # matplotlib's own axis arithmetic (NumPy warns about it), and a character the figure's font
    # lacks is drawn as a box (matplotlib warns). The table beside the figure shows them as
    # they are, so neither warning says anything the page does not. A log axis with nothing
    # above zero to show is no figure at all: that warning ends the attempt.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Glyph .* missing from", UserWarning)
        warnings.filterwarnings("error", "Data has no positive values", UserWarning)
        before = set(plt.get_fignums())
        buf = io.BytesIO()
        try:
            fig = plot_results(results)
            if fig is None:
                return None
            # Drawing happens here: a log axis over values that are all zero or negative is
            # refused only now.
            fig.savefig(buf, format="png", dpi=100)
        except (ValueError, KeyError, UserWarning):  # nothing that can be drawn
            return None
        finally:  # the figure, and any an attempt that failed opened
            for number in set(plt.get_fignums()) - before:
                plt.close(number)
    return base64.b64encode(buf.getvalue()).decode("ascii")


_figure_png = figure_png  # the name earlier code used


def explain_html(results: Results) -> str:
    """A tune record's explanation (``pyclperf explain`` stores it in the results file): its
    roofline figure, drawn from the stored figures, and its text; "" where there is none."""
    stored = results.meta.get("explain")
    if not stored:
        return ""
    import matplotlib.pyplot as plt

    from ..roofline.explaining import draw

    parts = []
    try:
        fig = draw(stored)
    except (ValueError, KeyError, TypeError):
        fig = None
    if fig is not None:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
        plt.close(fig)
        png = base64.b64encode(buf.getvalue()).decode("ascii")
        parts.append(f"<img alt='measured roofline' src='data:image/png;base64,{png}'>")
    parts.append(f"<pre class='explain'>{html.escape(str(stored.get('text', '')))}</pre>")
    return "\n".join(parts)


def human_time(ns: float) -> str:
    """A duration in the unit a reader takes in at a glance: 51.2 µs, not 5.12e+04 ns."""
    if ns != ns:  # NaN: a row that was not timed
        return ""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def table_html(results: Results) -> str:
    """The rows as an HTML table inside a horizontally scrolling box (wide sweeps never spill
    over the page), times written in ns/µs/ms/s."""
    df = results.df
    if df.empty:
        return "<p>(no rows)</p>"
    params = [c for c in df.columns if c not in _TABLE_COLUMNS and not c.endswith("_ns")
              and c not in ("n", "mean_ns", "q1_ns", "q3_ns", "iqr_ns", "bytes", "method",
                            "gbps_best", "verified", "items", "local_size", "config")]
    cols = params + [c for c in _TABLE_COLUMNS if c in df.columns]
    shown = df[cols].copy()
    renamed = {}
    for c in cols:
        if c.endswith("_ns"):
            shown[c] = [human_time(float(v)) if v is not None else "" for v in shown[c]]
            renamed[c] = c[:-3].replace("_", " ") + " time"
    shown = shown.rename(columns=renamed)
    body = shown.to_html(index=False, float_format=lambda v: f"{v:.4g}", na_rep="", border=0)
    return f"<div class='scroll'>{body}</div>"


_table = table_html


def _device_block(results: Results) -> str:
    dev = results.meta.get("device", {})
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                   for k, v in dev.items())
    return f"<details><summary>device details</summary><table>{rows}</table></details>"


def conditions_warnings(rows: Sequence[dict]) -> list[str]:
    """What the report says about points taken while the GPU was not at full speed or not
    alone (tuner.conditions' flag), and about points timed warm from cache."""
    out = []
    flagged = [r for r in rows if isinstance(r, dict) and r.get("conditions")]
    if flagged:
        kinds = sorted({str(r["conditions"]).split(" (")[0].split(";")[0] for r in flagged})
        out.append(f"{len(flagged)} of {len(rows)} points were taken while the GPU was not at full "
                   f"speed or not alone ({'; '.join(kinds)}): their figures are not the device's best")
    warm = [r for r in rows if isinstance(r, dict) and r.get("cache_resident")]
    if warm:
        out.append(f"{len(warm)} of {len(rows)} points were timed warm with a working set the caches "
                   "may hold: their figures may be the cache's (cold=True times them from memory)")
    return out


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
        png = figure_png(res)
        if png:
            parts.append(f"<img alt='{html.escape(res.experiment)} plot' src='data:image/png;base64,{png}'>")
        if m.get("conclusion"):
            parts.append(f"<p class='conclusion'>{html.escape(str(m['conclusion']))}</p>")
        parts.append(explain_html(res))
        for warning in list(m.get("load_warnings") or []) + conditions_warnings(res.rows):
            parts.append(f"<p class='meta'>warning: {html.escape(str(warning))}</p>")
        parts.append(table_html(res))
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
