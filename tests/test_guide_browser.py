"""The guide's page in a real browser (headless Chromium): it loads, every experiment's image
decodes, and the console stays free of errors. Skipped with the reason where Chromium is absent."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from pyclperf.guide.run import PASSED, Outcome
from pyclperf.guide.report import render_guide
from pyclperf.measure.results import Results

BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)

# Appended to a copy of the page: after load, the page says how many images it has and how many
# failed to decode, where --dump-dom can read it.
PROBE = """<script>window.addEventListener('load', () => {
  const imgs = [...document.images];
  const bad = imgs.filter(i => !i.complete || i.naturalWidth === 0).length;
  document.body.setAttribute('data-probe', 'images=' + imgs.length + ' bad=' + bad);
});</script>"""


def _outcome(name: str, x: str, rows: list[dict]) -> Outcome:
    meta = {"experiment": name, "title": name, "x": x, "x_label": x, "device": {"name": "dev", "type": "CPU"},
            "plot": {"kind": "bandwidth"} if x != "variant" else {"kind": "bars", "label": "variant"},
            "conclusion": f"{name}: a conclusion"}
    return Outcome(name, PASSED, 1.0, 0, "", Results(meta, rows))


def _row(**kw):
    return {"status": "ok", "median_ns": 1000.0, "min_ns": 900.0, "max_ns": 1100.0, "bytes": 4000,
            "gbps": 4.0, **kw}


@pytest.mark.skipif(BROWSER is None, reason="no Chromium on this machine (apt-get install -y chromium)")
def test_guide_page_in_headless_chromium(tmp_path):
    outcomes = [_outcome("offset", "offset", [_row(offset=v, gbps=4.0 - v / 10) for v in range(4)]),
                _outcome("stride", "stride", [_row(stride=s, gbps=4.0 / s) for s in (1, 2, 4)]),
                _outcome("matmul", "variant", [_row(variant="simple"), _row(variant="local A+B", gbps=8.0)])]
    page = tmp_path / "guide.html"
    page.write_text(render_guide(outcomes).replace("</body>", PROBE + "</body>"), encoding="utf-8")
    args = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
            "--user-data-dir=" + str(tmp_path / "profile")]
    dom = subprocess.run(args + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    # One image per experiment at least (offset and stride also get their sector model).
    assert "data-probe=\"images=5 bad=0\"" in dom.stdout, dom.stdout[-500:]
    console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line]
    assert not [line for line in console if "rror" in line], console
    shot = tmp_path / "guide.png"
    subprocess.run(args + [f"--screenshot={shot}", "--window-size=1200,2000", page.as_uri()],
                   capture_output=True, text=True, timeout=120, check=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
