"""The README and the manual (docs/*.md) show code that runs. Every Python and shell block of a
page runs here, in the page's order, on the device under test, in a scratch folder holding a
copy of notebooks/specs: the Python blocks of a page share one interpreter, as a reader's
session would, and each shell block must exit 0. A block that cannot run here (it installs
system packages, needs a GPU or several hosts, or takes minutes) says so in the comment line
before it, ``<!-- not run: why -->``, and why must name what runs it instead or why nothing can.

The README stays a front door: at most 150 lines, every link to a file of the repository
resolves, and it links every page of the manual, as the docs index does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from pyclperf.device.icd import find_oclgrind

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
# The manual's pages: written by hand, each on one subject (the index, the notebooks' page and
# the API reference are the site's frame).
FRAME = {"index.md", "notebooks.md", "api.md"}
MANUAL = sorted(p for p in DOCS.glob("*.md") if p.name not in FRAME)
PAGES = [README, *sorted(DOCS.glob("*.md"))]
RUN = ("python", "sh")

_FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_NOT_RUN = re.compile(r"<!-- not run: (.+?) -->[ \t]*$")
# A block that runs kernels on Oclgrind (pyclperf.tuner.memcheck): left out, and the page's test
# skipped with that reason, where Oclgrind is not installed (the CPU CI installs it).
_ON_OCLGRIND = re.compile(r"\bmemcheck\(|--memcheck\b|memcheck=True")


@dataclass
class Block:
    language: str
    code: str
    line: int  # of the fence, 1-based
    not_run: str | None  # why, where the page says it is not run here


def blocks(text: str) -> list[Block]:
    found = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        why = _NOT_RUN.search(before)
        found.append(Block(match.group(1), match.group(2), line, why.group(1) if why else None))
    return found


# Runs the blocks of one page in order: Python in one namespace (compiled with the page's line
# numbers, so a traceback points into the page), shell through bash with -e.
_DRIVER = """
import json, subprocess, sys
page, todo = json.load(open(sys.argv[1]))
space = {"__name__": "__main__"}
for language, code, line in todo:
    print(f"--- {page}:{line} ({language})", flush=True)
    if language == "python":
        exec(compile("\\n" * line + code, page, "exec"), space)
    else:
        subprocess.run(["bash", "-e", "-o", "pipefail", "-c", code], check=True)
print("--- done", flush=True)
"""


def _runnable(page: Path) -> list[Block]:
    return [b for b in blocks(page.read_text(encoding="utf-8")) if b.language in RUN and not b.not_run]


# Pages that measure the device's full profile on a GPU (a quick one on a CPU device).
_FULL_PROFILE_ON_A_GPU = {"roofline.md"}
# Seconds a page's code took in `make gpu-check` on the H200 (2026-11-29), beside the other
# tests: the order the longest tests start in (tests/conftest.py); a page not listed, under 15 s.
_SECONDS_ON_A_GPU = {"roofline.md": 61, "README.md": 38, "tuning.md": 27, "running.md": 21}


@pytest.mark.parametrize(
    "page", [pytest.param(p, marks=pytest.mark.slow(_SECONDS_ON_A_GPU.get(p.name, 5)))
             for p in PAGES if _runnable(p)], ids=lambda p: p.name)
def test_the_pages_code_runs(page: Path, ctx, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    todo = _runnable(page)
    on_oclgrind = [b for b in todo if _ON_OCLGRIND.search(b.code)]
    if on_oclgrind and find_oclgrind() is None:
        todo = [b for b in todo if b not in on_oclgrind]
    else:
        on_oclgrind = []
    shutil.copytree(ROOT / "notebooks" / "specs", tmp_path / "notebooks" / "specs")
    env = {**os.environ, "MPLBACKEND": "Agg",
           "PYCLPERF_DEVICE": f"{ctx.info.platform_index}:{ctx.info.device_index}",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           # Profiles are read from (or measured into) a folder of the test's, never the user's.
           "PYCLPERF_PROFILES": str(tmp_path / "profiles")}
    if ctx.info.is_gpu and page.name in _FULL_PROFILE_ON_A_GPU:
        # The session's full profile, measured once (a quick one cannot serve these pages, and
        # the tests that read the session's quick folder expect the quick one there).
        env["PYCLPERF_PROFILES"] = str(request.getfixturevalue("full_profiles"))
    elif any(word in b.code for b in todo for word in ("profile", "explain")):
        # The session's quick profile, measured once: a page that explains reads it.
        env["PYCLPERF_PROFILES"] = str(request.getfixturevalue("roofline_profiles")[0])
    plan = tmp_path / "blocks.json"
    plan.write_text(json.dumps([page.relative_to(ROOT).as_posix(),
                                [(b.language, b.code, b.line) for b in todo]]))
    driver = tmp_path / "driver.py"
    driver.write_text(_DRIVER)
    done = subprocess.run([sys.executable, str(driver), str(plan)], cwd=tmp_path, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
    assert done.returncode == 0 and done.stdout.rstrip().endswith("--- done"), done.stdout[-6000:]
    if on_oclgrind:
        lines = ", ".join(f"{page.name}:{b.line}" for b in on_oclgrind)
        pytest.skip(f"the page's other blocks ran; {lines} runs kernels on Oclgrind, which is not "
                    "installed here (apt-get install oclgrind, or pip install 'pyclperf[memcheck]')")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_block_not_run_says_why(page: Path) -> None:
    for b in blocks(page.read_text(encoding="utf-8")):
        if b.not_run is not None:
            assert b.language in RUN, f"{page.name}:{b.line}: only runnable blocks need a reason"
            assert len(b.not_run.split()) >= 4, f"{page.name}:{b.line}: say why, and what runs it instead"


def test_the_blocks_on_oclgrind_are_known() -> None:
    """The page test leaves out, where Oclgrind is missing, exactly the blocks that run on it."""
    on = [f"{p.name}:{b.line}" for p in PAGES for b in _runnable(p) if _ON_OCLGRIND.search(b.code)]
    assert any(name.startswith("protection.md:") for name in on), on
    assert not _ON_OCLGRIND.search("tune(src, memcheck=False)")


def test_the_block_reader_sees_code_and_reasons() -> None:
    """The reader is able to fail: it finds each block, its language, line and reason."""
    text = "intro\n\n<!-- not run: needs a GPU here -->\n```sh\nx\n```\n\n```python\ny = 1\n```\n"
    assert blocks(text) == [Block("sh", "x\n", 4, "needs a GPU here"),
                            Block("python", "y = 1\n", 8, None)]


def test_the_readme_is_a_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    targets = re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if "://" not in t]
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, missing
    assert any(t.startswith("benchmarks/figures/") and t.endswith(".png") for t in local), \
        "the README shows a picture of a real result"
    unlinked = [p.name for p in MANUAL if f"docs/{p.name}" not in local]
    assert not unlinked, f"pages of the manual the README does not link: {unlinked}"


def test_the_docs_index_links_every_page() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    trees = "\n".join(b.code for b in blocks(index) if b.language == "{toctree}")
    listed = {line.strip() for line in trees.splitlines() if line.strip() and not line.startswith(":")}
    pages = {p.stem for p in DOCS.glob("*.md") if p.name != "index.md"}
    assert pages <= listed, sorted(pages - listed)
