"""Pages of the docs that are drawn from the code and the notebooks at build time.

Only what the catalogue needs of each experiment is read: ``catalogue()`` (the classes in
order), its one line per experiment (``catalogue_markdown``) and each class's ``id``,
``title``, ``guide`` and own docstring, so the page follows the experiments however they are
laid out in files.
"""

from __future__ import annotations

import inspect
import shutil
from pathlib import Path


def _write(path: Path, text: str) -> None:
    # Unchanged pages keep their time stamp, so Sphinx does not re-read them.
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def catalogue_page() -> str:
    from pyclperf.experiments import catalogue, catalogue_markdown

    lines = [
        "# Experiment catalogue",
        "",
        "Every experiment `pyclperf run ID` knows, in catalogue order (the source documents'), as",
        "each one describes itself: this page is generated from `pyclperf.experiments` at build",
        "time. The line of each is what `pyclperf run --help` prints; *Guide* names what it",
        "reproduces: sections of the NVIDIA OpenCL Best Practices Guide and the other sources the",
        "experiment cites.",
        "",
        catalogue_markdown(),
    ]
    for cls in catalogue():
        lines += ["", f"({'exp-' + cls.id})=", f"## `{cls.id}`: {cls.title}", ""]
        # The class's own docstring only: the base class's would repeat on every entry.
        own = cls.__dict__.get("__doc__")
        if own:
            lines += [inspect.cleandoc(own), ""]
        lines += [f"*Guide:* {cls.guide}", "", "```sh", f"pyclperf run {cls.id}", "```"]
    return "\n".join(lines) + "\n"


def strategies_page() -> str:
    from pyclperf.tuner.strategies import COMMON_OPTIONS, STRATEGIES

    lines = [
        "# Search strategies",
        "",
        "Every name `tune(strategy=...)`, `tune_kernel` and `pyclperf tune` accept, and what it",
        "runs here (generated from `pyclperf.tuner.strategies.STRATEGIES` at build time). Every",
        f"strategy also takes {', '.join(f'`{o}`' for o in COMMON_OPTIONS)}. An option of",
        "Kernel Tuner's that has no counterpart in the algorithm that runs here is accepted with",
        "a warning naming it; any other unknown option is an error. [Tuning](../tuning.md) says",
        "which strategy to pick.",
        "",
        "| strategy | runs | options used | Kernel Tuner options not used |",
        "| --- | --- | --- | --- |",
    ]
    for name, entry in STRATEGIES.items():
        used = ", ".join(f"`{o}`" for o in entry.used) or "-"
        inert = ", ".join(f"`{o}`" for o in entry.inert) or "-"
        runs = " ".join(entry.runs.split()).replace("|", "\\|")
        lines.append(f"| `{name}` | {runs} | {used} | {inert} |")
    return "\n".join(lines) + "\n"


def all_pages(out: Path, notebooks: Path) -> None:
    _write(out / "catalogue.md", catalogue_page())
    _write(out / "strategies.md", strategies_page())
    # Sphinx reads sources only under docs/, so the notebooks are copied in; MyST-NB executes
    # the copies (the originals stay as committed).
    target = out / "notebooks"
    wanted = {nb.name for nb in notebooks.glob("*.ipynb")}
    if target.exists():
        for stale in target.glob("*.ipynb"):
            if stale.name not in wanted:
                stale.unlink()
    for nb in sorted(notebooks.glob("*.ipynb")):
        dest = target / nb.name
        if not dest.exists() or dest.read_bytes() != nb.read_bytes():
            target.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(nb, dest)
