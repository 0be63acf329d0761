"""The notebooks users start from execute top to bottom on the test device."""

import os
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
# Notebooks that measure the device's full profile on a GPU (a quick one on a CPU device).
FULL_PROFILE_ON_A_GPU = {"08-roofline.ipynb"}
# Seconds each took in `make gpu-check` on the H200 (2026-11-29), beside the other tests: the
# order the longest tests start in (tests/conftest.py); a notebook not listed took under 15 s.
SECONDS_ON_A_GPU = {"02-transfers.ipynb": 45, "05-caches-and-layout.ipynb": 42,
                    "08-roofline.ipynb": 40, "06-instructions.ipynb": 32, "04-execution.ipynb": 30,
                    "07-cooperative.ipynb": 29, "03-local-memory.ipynb": 24}


@pytest.mark.parametrize(
    "path", [pytest.param(p, marks=pytest.mark.slow(SECONDS_ON_A_GPU.get(p.name, 10)))
             for p in NOTEBOOKS], ids=lambda p: p.name)
def test_notebook_executes(path, tmp_path, ctx, monkeypatch, request):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(path, as_version=4)
    # The kernel runs in tmp_path (files it saves land there) on the device under test.
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    # A device profile a notebook measures (08-roofline) is cached there, not in the user's cache;
    # on a GPU the roofline notebook reads the session's full profile, measured once for it and
    # the roofline page (tests/conftest.py: full_profiles).
    shared = ctx.info.is_gpu and path.name in FULL_PROFILE_ON_A_GPU
    profiles = request.getfixturevalue("full_profiles") if shared else tmp_path / "profiles"
    monkeypatch.setenv("PYCLPERF_PROFILES", str(profiles))
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, errors
    assert os.listdir(tmp_path), "the notebook saves its results"
