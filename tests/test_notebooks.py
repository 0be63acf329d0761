"""The notebooks users start from execute top to bottom on the test device."""

import os
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes(path, tmp_path, ctx, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(path, as_version=4)
    # The kernel runs in tmp_path (files it saves land there) on the device under test.
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    # A device profile a notebook measures (08-roofline) is cached there, not in the user's cache.
    monkeypatch.setenv("PYCLPERF_PROFILES", str(tmp_path / "profiles"))
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, errors
    assert os.listdir(tmp_path), "the notebook saves its results"
