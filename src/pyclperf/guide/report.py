"""The guide's page: one self-contained HTML file (every image embedded as base64) that opens
with the device and a summary table of all experiments, then one section per experiment: its
plot, its conclusion, the source document's figure beside this device's, and a verdict."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from . import figures as guide_figures
from . import record as guide_json
from . import scorecard as guide_scorecard
from ..views.report import _STYLE, figure_png, table_html
from ..measure.results import OK
from ..experiments import _warmcold as warmcold

if TYPE_CHECKING:
    from .run import Outcome

_GUIDE_STYLE = _STYLE + """
.verdict { font-weight: bold; }
.holds { color: #070; } .changed { color: #a60; } .reversed { color: #b00; }
.not-run, .not-measured, .device-property { color: #555; }
.failed { color: #b00; }
td.left, th.left { text-align: left; }
section { border-top: 1px solid #ddd; margin-top: 2em; }
pre { white-space: pre-wrap; font-size: 0.8em; background: #f7f7f7; padding: 0.5em; }
"""

_DEVICE_KEYS = ("name", "vendor", "type", "platform_name", "version", "driver_version",
                "compute_units", "max_clock_mhz", "global_mem_bytes", "local_mem_bytes",
                "max_work_group_size", "nv_compute_capability", "profiling_timer_resolution_ns")


def _e(v: Any) -> str:
    return html.escape(str(v))


def _num(v: float | None, fmt: str = ".3g") -> str:
    return "" if v is None else format(v, fmt)


def _device(outcomes: Sequence["Outcome"]) -> dict[str, Any]:
    for o in outcomes:
        if o.results is not None and o.results.meta.get("device"):
            return dict(o.results.meta["device"])
    return {}


def _kind(device: dict[str, Any]) -> str:
    return "GPU" if "GPU" in str(device.get("type", "")).upper() else "device"


def _verified(o: "Outcome") -> str:
    if o.results is None:
        return "0 / 0"
    ok = sum(1 for r in o.results.rows if r.get("status") == OK)
    return f"{ok} / {len(o.results.rows)}"


def _record(o: "Outcome") -> dict[str, Any]:
    """The experiment's verdict record (guide_figures.experiment_verdict)."""
    from ..experiments import REGISTRY

    cls = REGISTRY.get(o.experiment)
    if cls is None:  # a results file of an experiment this version does not have
        return {"criterion": "", "source_ratio": None, "device_ratio": None, "ratio_lo": None,
                "ratio_hi": None, "verdict": guide_figures.NOT_MEASURED, "kind": "claim",
                "source": "", "claim": "", "reason": f"no experiment {o.experiment!r} here"}
    return guide_figures.experiment_verdict(cls, o.results, o.status)


def _interval(rec: dict[str, Any]) -> str:
    lo, hi = rec.get("ratio_lo"), rec.get("ratio_hi")
    return f"{lo:.3g}-{hi:.3g}" if lo is not None and hi is not None else ""


def _verdict_cell(rec: dict[str, Any]) -> str:
    css = str(rec["verdict"]).replace(" ", "-")
    return (f"<td class='verdict {_e(css)} left'>{_e(rec['verdict'])}"
            f"<br><span class='meta'>{_e(rec.get('reason', ''))}</span></td>")


def _summary(outcomes: Sequence["Outcome"], kind: str) -> str:
    head = ("<tr><th class='left'>experiment</th><th>run</th><th>verified points</th><th>seconds</th>"
            "<th class='left'>criterion</th><th>source</th><th>this device</th>"
            f"<th>95% interval</th><th class='left'>verdict on this {kind}</th></tr>")
    rows = []
    for o in outcomes:
        rec = _record(o)
        bad = "" if o.status == "passed" else " class='failed'"
        rows.append(
            f"<tr><td class='left'><a href='#{_e(o.experiment)}'>{_e(o.experiment)}</a></td>"
            f"<td{bad}>{_e(o.status)}</td><td>{_verified(o)}</td><td>{o.seconds:.1f}</td>"
            f"<td class='left'>{_e(rec['criterion'])}</td><td>{_num(rec['source_ratio'])}</td>"
            f"<td>{_num(rec['device_ratio'])}</td><td>{_interval(rec)}</td>{_verdict_cell(rec)}</tr>")
    return f"<div class='scroll'><table>{head}{''.join(rows)}</table></div>"


def _source_block(o: "Outcome", kind: str) -> str:
    rec = _record(o)
    ratio = (rec["device_ratio"] / rec["source_ratio"]
             if rec["device_ratio"] is not None and rec["source_ratio"] else None)
    table = ("<table><tr><th class='left'>claim</th><th class='left'>source</th>"
             "<th class='left'>criterion</th><th>source</th><th>this device</th>"
             "<th>95% interval</th><th>this device / source</th></tr>"
             f"<tr><td class='left'>{_e(rec['claim'])}</td><td class='left'>{_e(rec['source'])}</td>"
             f"<td class='left'>{_e(rec['criterion'])}</td><td>{_num(rec['source_ratio'])}</td>"
             f"<td>{_num(rec['device_ratio'])}</td><td>{_interval(rec)}</td>"
             f"<td>{_num(ratio)}</td></tr></table>")
    css = str(rec["verdict"]).replace(" ", "-")
    warm = warmcold.note(o.results.meta) if o.results is not None else ""
    reason = f"{rec['reason']} ({warm})" if warm else rec["reason"]
    return (f"{table}<p class='verdict {_e(css)}'>Verdict on this {kind}: {_e(rec['verdict'])}"
            f"</p><p class='meta'>{_e(reason)}</p>")


# A section's images as base64 PNGs: the experiment's own figure (None where it has none) and
# its models' figures.
Figures = tuple[str | None, list[str]]


def figures_of(res: Any) -> Figures:
    """``res``'s images (nothing for an experiment that left no results)."""
    if res is None:
        return None, []
    return figure_png(res), _model_figures(res)


class FiguresAhead:
    """Draws each finished experiment's figures on one thread of its own while the next
    experiment runs in its worker process (the guide waits on that process with the GIL
    released), so the page needs no drawing once the last experiment ends. One thread only:
    matplotlib's pyplot state is never touched from two at once."""

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        # Only where drawing opens no window: a GUI backend wants its figures made on the main
        # thread, so there every figure is drawn when the page is written, as before.
        self._pool = (ThreadPoolExecutor(max_workers=1, thread_name_prefix="guide-figures")
                      if _draws_to_files() else None)
        self._drawn: dict[int, Any] = {}

    def submit(self, o: "Outcome") -> None:
        if self._pool is not None:
            self._drawn[id(o)] = (o, self._pool.submit(figures_of, o.results))

    def get(self, o: "Outcome") -> Figures:
        """``o``'s images: drawn ahead where submitted, else drawn now."""
        entry = self._drawn.get(id(o))
        if entry is None or entry[0] is not o:
            return figures_of(o.results)
        try:
            return entry[1].result()  # type: ignore[no-any-return]
        except Exception:  # drawing failed on the thread: draw here, where errors show as before
            return figures_of(o.results)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


def _draws_to_files() -> bool:
    """Whether matplotlib's backend only renders into files and buffers (Agg and its kind, or a
    notebook's inline backend), never into a window."""
    import matplotlib

    name = str(matplotlib.get_backend()).lower()
    return name in ("agg", "cairo", "pdf", "pgf", "ps", "svg", "template") or "inline" in name


def _section(o: "Outcome", kind: str, images: Figures | None = None) -> str:
    res = o.results
    title = res.meta.get("title") if res is not None else None
    parts = [f"<section id='{_e(o.experiment)}'><h2>{_e(o.experiment)}: {_e(title or '')}</h2>"]
    if res is not None and res.meta.get("description"):
        parts.append(f"<p class='meta'>{_e(res.meta['description'])} · {_e(res.meta.get('guide', ''))}</p>")
    parts.append(f"<p>Run: <b>{_e(o.status)}</b> in {o.seconds:.1f} s; verified points {_verified(o)}.</p>")
    if res is not None and res.meta.get("method_reason"):  # a clock other than the one asked for
        parts.append(f"<p class='meta'>Timing: {_e(res.meta['method_reason'])}</p>")
    if o.status != "passed" and o.stderr_tail:
        parts.append(f"<pre>{_e(o.stderr_tail)}</pre>")
    png, models = figures_of(res) if images is None else images
    if png:
        parts.append(f"<img alt='{_e(o.experiment)} plot' src='data:image/png;base64,{png}'>")
    for extra in models:
        parts.append(f"<img alt='{_e(o.experiment)} model' src='data:image/png;base64,{extra}'>")
    if res is not None and res.meta.get("conclusion"):
        parts.append(f"<p class='conclusion'>{_e(res.meta['conclusion'])}</p>")
    parts.append(_source_block(o, kind))
    if res is not None and res.rows:
        parts.append(f"<details><summary>rows</summary>{table_html(res)}</details>")
    parts.append("</section>")
    return "".join(parts)


def _model_figures(res: Any) -> list[str]:
    """Figures of the models beside the measurements (views/plot_models.py), where there is one."""
    from ..views.plot_models import model_figures_png

    return model_figures_png(res) if res is not None else []


def quick_note(outcomes: Sequence["Outcome"]) -> str:
    """What a quick run measured less than the default one: its timing, and each experiment
    that ran smaller (its results' ``quick_options``)."""
    smaller = []
    for o in outcomes:
        options = o.results.meta.get("quick_options") if o.results is not None else None
        if options:
            smaller.append(f"{o.experiment} {', '.join(f'{k} {v}' for k, v in options.items())}")
    text = " (quick run: two timed launches per point"
    if smaller:
        text += "; smaller than the default run where the verdict does not need its sizes: "
        text += "; ".join(smaller)
    return text + "; figures are rough)"


def render_guide(outcomes: Sequence["Outcome"], quick: bool = False,
                 figures: FiguresAhead | None = None) -> str:
    """The page; ``figures`` holds the images drawn while the run went on (else drawn here)."""
    device = _device(outcomes)
    kind = _kind(device)
    name = device.get("name", "unknown device")
    title = f"The Guide on {name}"
    dev_rows = "".join(f"<tr><th class='left'>{_e(k)}</th><td class='left'>{_e(device[k])}</td></tr>"
                       for k in _DEVICE_KEYS if k in device)
    passed = sum(1 for o in outcomes if o.status == "passed")
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
             f"<style>{_GUIDE_STYLE}</style></head><body><h1>{_e(title)}</h1>",
             f"<p>{passed} of {len(outcomes)} experiments passed"
             + (_e(quick_note(outcomes)) if quick else "") + ".</p>",
             guide_scorecard.scorecard_html(outcomes),
             f"<h2>Device</h2><table>{dev_rows}</table>",
             f"<h2>Summary</h2>{_summary(outcomes, kind)}",
             "<details><summary>How the verdict is decided</summary><pre>"
             f"{_e(guide_figures.__doc__ or '')}</pre></details>"]
    parts += [_section(o, kind, figures.get(o) if figures is not None else None) for o in outcomes]
    parts.append("</body></html>")
    return "\n".join(parts)


def write_guide(outcomes: Sequence["Outcome"], path: str | os.PathLike[str], quick: bool = False,
                figures: FiguresAhead | None = None) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render_guide(outcomes, quick=quick, figures=figures), encoding="utf-8")
    guide_json.write_guide_json(outcomes, p.with_name("guide.json"), quick=quick)
    return p
