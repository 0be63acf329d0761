"""benchmarks/profile_h200.py end to end on the device under test: the profile timed in its own
process, a CUDA read reference (a NumPy stand-in for CuPy, tests/fake_cupy.py), CUDA's L2 size,
and clpeak's figures parsed from its text output."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
from fake_cupy import FakeCupy

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "profile_h200.py"

CLPEAK = """
Platform: NVIDIA CUDA
  Device: NVIDIA H200
    Driver version  : 580.159.04 (Linux x64)
    Compute units   : 132
    Clock frequency : 1980 MHz

    Global memory bandwidth (GBPS)
      float   : 4056.30
      float2  : 4105.90
      float16 : 4274.40

    Single-precision compute (GFLOPS)
      float   : 51000.25
      float2  : 52500.50
      float16 : 50010.00

    Transfer bandwidth (GBPS)
      enqueueWriteBuffer              : 55.10
"""


@pytest.fixture
def script(monkeypatch):
    spec = importlib.util.spec_from_file_location("profile_h200", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "profile_h200", module)
    spec.loader.exec_module(module)
    return module


def test_clpeak_output_is_parsed_by_section():
    spec = importlib.util.spec_from_file_location("profile_h200_parse", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sections = module.parse_clpeak(CLPEAK)
    assert sections["Global memory bandwidth (GBPS)"] == {"float": 4056.3, "float2": 4105.9, "float16": 4274.4}
    assert module.clpeak_best(sections, "Global memory bandwidth") == 4274.4
    assert module.clpeak_best(sections, "single-precision compute") == 52500.5
    assert module.clpeak_best(sections, "Double-precision compute") is None


@pytest.mark.slow(50)
def test_the_table_holds_every_reference(script, ctx, tmp_path, capsys, monkeypatch):
    fake = FakeCupy()
    fake.cuda.runtime.getDeviceProperties = lambda i: {"multiProcessorCount": 4, "l2CacheSize": 50 << 20}
    monkeypatch.setitem(sys.modules, "cupy", fake)
    real = script.cuda_read
    monkeypatch.setattr(script, "cuda_read", lambda nbytes: real(1 << 16))  # the stand-in is slow
    saved = tmp_path / "clpeak.txt"
    saved.write_text(CLPEAK)
    out = tmp_path / "h200.json"
    device = f"{ctx.info.platform_index}:{ctx.info.device_index}"
    assert script.main(["--device", device, "--quick", "--json", str(out), "--clpeak-output", str(saved),
                        "--figures", str(tmp_path / "figures"), "--catalogue", "stride,peak"]) == 0
    printed = capsys.readouterr().out
    record = json.loads(out.read_text())
    rows = {r["figure"].split(" (")[0]: r for r in record["rows"]}
    assert record["profile"]["quick"] and record["profile_seconds"] > 0
    assert rows["pyclperf profile, wall clock"]["ours"] == pytest.approx(record["profile_seconds"])
    read = record["profile"]["ceilings"]["dram_read"]["value"]
    assert rows["DRAM read"]["ours"] == read and record["cuda_read"]["verified"]
    assert "20 back-to-back launches" in rows["DRAM read"]["ref_how"]
    assert rows["DRAM read"]["ratio"] == pytest.approx(read / record["cuda_read"]["gbps"])
    assert rows["DRAM read vs clpeak"]["reference"] == 4274.4
    assert rows["FP32"]["reference"] == 52500.5 and rows["FP32"]["ratio"] == pytest.approx(
        record["profile"]["ceilings"]["fp32"]["value"] / 52500.5)
    assert rows["last-level cache size"]["reference"] == 50 << 20
    last = record["profile"]["caches"][-1] if record["profile"]["caches"] else {}
    copied = rows["last-level cache copy bandwidth"]  # beside the level's read figure
    assert copied["ours"] == (last.get("copy") or {}).get("value")
    assert copied["reference"] == (last.get("read") or {}).get("value")
    assert "| figure | pyclperf | reference (how) | ratio | criterion | met |" in printed
    # pyclperf explain on both example specs, on the profile just measured.
    for spec in ("vadd", "tiled_matmul"):
        row = rows[f"explain {spec}.json, best configuration"]
        assert re.match(r"(\d+\.\d% of|at|above) the .+ roof ", row["ref_how"]), row
        assert row["ratio"] > 0 and row["met"] == (row["ratio"] <= 1.05), row
        assert (tmp_path / "figures" / f"{spec}-roofline.png").read_bytes().startswith(b"\x89PNG")
    assert not list(Path(script.EXAMPLES).glob("*.jsonl"))  # nothing written beside the examples
    # The catalogue asked for, each best point against the roof that binds it.
    stride = next(r for r in record["rows"] if r["figure"].startswith("catalogue stride, best point"))
    assert stride["ratio"] == pytest.approx(stride["ours"] / stride["reference"]) and " roof: " in stride["ref_how"]
    peak = next(r for r in record["rows"] if r["figure"] == "catalogue peak")
    assert peak["met"] is None and "no verified row" in peak["ref_how"]  # not run without NVML
    if not ctx.info.is_gpu:  # a CPU device's levels against the OS's caches
        assert any(r["figure"].startswith("cache level against the OS's L1d") for r in record["rows"])
        assert rows["cache levels the OS does not list"]["criterion"] == "none"


def test_without_cupy_the_cuda_rows_say_why(script, ctx, roofline_profiles, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    # The session's quick profile stands in for a second one measured in a process of its own.
    data = json.loads(next(roofline_profiles[0].glob("*.json")).read_text())
    monkeypatch.setattr(script, "run_profile", lambda device, quick, folder: {
        "seconds": 1.0, "command": "-", "data": data, "printed": ""})
    device = f"{ctx.info.platform_index}:{ctx.info.device_index}"
    assert script.main(["--device", device, "--quick", "--clpeak-read-gbps", "10", "--no-explain",
                        "--no-catalogue"]) == 0
    printed = capsys.readouterr().out
    assert "CuPy is not available" in printed and "| DRAM read vs clpeak |" in printed
