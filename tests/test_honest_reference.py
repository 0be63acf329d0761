"""benchmarks/honest_reference.py end to end at tiny sizes: without CuPy every CUDA column says
it was skipped and why; with a NumPy stand-in for CuPy (tests/fake_cupy.py) every figure gets
a CUDA value, a how-timed note and a ratio."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from fake_cupy import FakeCupy, cupyx_module

from pyclperf.experiments import tiling, vector

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "honest_reference.py"
FIGURES = 10  # 2 transfers, enqueueCopyBuffer, best copy x3, offset 0, read, fill, tiling


@pytest.fixture
def script(monkeypatch):
    spec = importlib.util.spec_from_file_location("honest_reference", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "honest_reference", module)  # dataclasses look it up
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "MiB", 1 << 16)  # --quick's sizes / 16: seconds on PoCL
    return module


def _run(script, ctx, tmp_path, capsys):
    out = tmp_path / "honest.json"
    code = script.main(["--device", f"{ctx.info.platform_index}:{ctx.info.device_index}",
                        "--quick", "--json", str(out)])
    return code, json.loads(out.read_text()), capsys.readouterr().out


def test_without_cupy_every_cuda_column_says_skipped(script, ctx, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    code, record, out = _run(script, ctx, tmp_path, capsys)
    assert code == 0, out
    rows = record["figures"]
    assert len(rows) == FIGURES
    for row in rows:
        assert "error" not in row, row
        assert row["pyclperf"]["verified"] and row["pyclperf"]["value"] > 0, row
        assert row["cuda"]["skipped"].startswith("skipped: CuPy is not available"), row
        assert "ratio" not in row
    table = out[out.index("| figure | pyclperf | CUDA reference (how timed) | ratio |"):]
    assert table.count("skipped: CuPy is not available") == FIGURES


def test_with_a_cuda_reference_every_figure_has_a_ratio(script, ctx, tmp_path, capsys, monkeypatch):
    fake = FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setitem(sys.modules, "cupyx", cupyx_module())
    monkeypatch.setattr(vector, "is_nvidia", lambda info: True)
    monkeypatch.setattr(tiling, "is_nvidia", lambda info: True)  # tiling's cuBLAS line too
    code, record, out = _run(script, ctx, tmp_path, capsys)
    assert code == 0, out
    for row in record["figures"]:
        assert "error" not in row, row
        assert row["cuda"]["verified"], row
        assert "CUDA events around" in row["cuda"]["how"], row
        ours, theirs = row["pyclperf"]["value"], row["cuda"]["value"]
        assert row["ratio"]["median"] == pytest.approx(ours / theirs, rel=0.5), row
    assert {"memcpy", "copyto", "copy_f4", "read_f4", "fill_f4", "matmul"} <= set(fake.launched)
    assert out.rstrip().splitlines()[-1].startswith("pyclperf: OpenCL events")


def test_a_wrong_or_failing_cuda_side_is_reported_and_fails_the_run(script, ctx, tmp_path, capsys,
                                                                   monkeypatch):
    fake = FakeCupy(broken=("memcpy",))  # cudaMemcpyAsync silently does nothing

    def no_compiler(code):
        raise RuntimeError("NVRTC is missing")

    fake.RawModule = no_compiler
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setitem(sys.modules, "cupyx", cupyx_module())
    code, record, out = _run(script, ctx, tmp_path, capsys)
    assert code == 1
    rows = {r["figure"]: r for r in record["figures"]}
    pinned = next(r for name, r in rows.items() if name.startswith("pinned H2D"))
    assert pinned["cuda"]["verified"] is False and "NOT VERIFIED" in out
    read = next(r for name, r in rows.items() if name.startswith("read-only"))
    assert read["cuda"] == {"failed": "RuntimeError: NVRTC is missing"} and "ratio" not in read
    assert "**FAILED: RuntimeError: NVRTC is missing**" in out
    copyto = next(r for name, r in rows.items() if name.endswith("vs cupy.copyto"))
    assert copyto["cuda"]["verified"]  # the rest of the run went on
