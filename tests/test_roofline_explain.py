"""``pyclperf explain`` and ``Results.explain``: bytes counted from argument qualifiers, the roof
that binds, the % of it, sensitivities and the figure, on the README's vector addition and a
tiled matrix product (tune specs in notebooks/specs/), on the device under test."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import pyclperf
from pyclperf import Verify, cli
from pyclperf.device.program import LocalMemory
from pyclperf.measure.results import Results
from pyclperf.roofline import traffic
from pyclperf.roofline.explaining import memory_roof, sensitivity
from pyclperf.roofline.profiling import Profile

EXAMPLES = Path(__file__).parent.parent / "notebooks" / "specs"
PNG = b"\x89PNG\r\n\x1a\n"

MIXED = """
__kernel void mixed(__global float* out, __global const float* a, __constant float* w,
                    __global float* acc, __local float* scratch, const int n,
                    __global const double* b) {
    const int i = get_global_id(0);
    scratch[get_local_id(0)] = a[i];
    acc[i] += scratch[get_local_id(0)] * w[i % 16] + (float)b[i];
    out[i] = acc[i];
}"""


def test_bytes_are_counted_from_the_kernels_argument_qualifiers(ctx):
    n = 1000
    out, a, acc = np.zeros(n, np.float32), np.ones(n, np.float32), np.zeros(n, np.float32)
    w, b = np.ones(16, np.float32), np.ones(n, np.float64)
    args = [out, a, w, acc, LocalMemory(256), n, b]
    infos = traffic.kernel_infos(ctx, MIXED, "mixed", {})
    counted = traffic.arg_traffic(infos, args, inout=["acc"])
    roles = {t.name: t.role for t in counted}
    assert roles == {"out": "output", "a": "input", "w": "input", "acc": "inout", "scratch": "none",
                     "n": "none", "b": "input"}
    # Inputs once (a, w, b), the output once, the in/out argument twice; nothing for the rest.
    assert traffic.count(counted) == 4 * n + 4 * n + 64 + 2 * 4 * n + 8 * n
    assert traffic.working_set(counted) == 4 * n + 4 * n + 64 + 4 * n + 8 * n
    assert "acc read and written" in traffic.describe(counted)
    # Undeclared, a non-const pointer is an output: written once.
    assert traffic.count(traffic.arg_traffic(infos, args)) == 4 * n + 4 * n + 64 + 4 * n + 8 * n
    # Arguments given as callables of the configuration are sized for that configuration.
    sized = list(args)
    sized[1] = lambda cfg: np.ones(cfg["N"], np.float32)
    assert traffic.count(traffic.arg_traffic(infos, sized, ["acc"], {"N": 10})) == \
        4 * n + 4 * 10 + 64 + 2 * 4 * n + 8 * n
    with pytest.raises(ValueError, match="inout names no kernel argument 'nope'"):
        traffic.arg_traffic(infos, args, inout=["nope"])
    with pytest.raises(ValueError, match="takes 7 arguments, 3 were given"):
        traffic.arg_traffic(infos, args[:3])


def _spec(tmp_path: Path, name: str, **changes) -> Path:
    for f in EXAMPLES.glob(f"{name}.*"):
        shutil.copy(f, tmp_path / f.name)
    path = tmp_path / f"{name}.json"
    spec = json.loads(path.read_text())
    spec.update(changes)
    path.write_text(json.dumps(spec))
    return path


def test_explain_on_the_readme_vector_addition_spec(roofline_env, tmp_path, capsys):
    spec = _spec(tmp_path, "vadd")
    figure = tmp_path / "vadd.png"
    assert cli.main(["explain", str(spec), "--quick", "--out", str(figure)]) == 0
    out = capsys.readouterr().out
    assert "vadd on" in out and "best configuration block_size_x=" in out and "(verified)" in out
    assert "a, b read once (8.39 MB); c written once (4.19 MB)" in out
    assert re.search(r"=> (\d+\.\d% of|at|above) the .+ roof \(", out) and "memory-bound" in out
    assert ("the profile is wrong" in out) == ("=> above the" in out)
    assert "block_size_x moves the median time" in out and "pyclperf run blocksize" in out
    assert figure.read_bytes().startswith(PNG)
    stored = Results.load(tmp_path / "vadd.jsonl")
    assert stored.meta["explain"]["headline"] in out
    assert len(stored.rows) == 5 and all(r["status"] == "ok" for r in stored.rows)
    # The report of the tune run shows the explanation with its figure.
    assert cli.main(["report", str(tmp_path / "vadd.jsonl"), "--out", str(tmp_path / "report")]) == 0
    page = (tmp_path / "report" / "report.html").read_text()
    assert "class='explain'" in page and "alt='measured roofline'" in page
    # Again with a chosen configuration: read from the results file, not tuned again.
    assert cli.main(["explain", str(spec), "--quick", "--config", "block_size_x=64",
                     "--out", str(figure)]) == 0
    again = capsys.readouterr()
    assert "chosen configuration block_size_x=64" in again.out and "tuning" not in again.err
    # The same from Python, on the spec: its results file read, its kernel's arguments counted.
    found = pyclperf.explain(str(spec), quick=True)
    fastest = min(stored.rows, key=lambda r: r["time_ms"])
    assert found.best and found.config == {"block_size_x": fastest["block_size_x"]}
    assert found.bytes == 3 * 4 * 1048576 and found.bytes_how.startswith("a, b read once")


def test_explain_on_a_tiled_matrix_product_with_flops(roofline_env, tmp_path, capsys):
    n = 128
    spec = _spec(tmp_path, "tiled_matmul", problem_size=[n, n], metrics={},
                 arguments=[{"name": "C", "dtype": "float32", "shape": [n, n], "fill": "zeros"},
                            {"name": "A", "dtype": "float32", "shape": [n, n], "fill": "random"},
                            {"name": "B", "dtype": "float32", "shape": [n, n], "fill": "random"},
                            {"name": "n", "dtype": "int32", "value": n}],
                 tune_params={"block_size_x": [8, 16], "block_size_y": [8, 16], "PAD": [0, 1]})
    figure = tmp_path / "mm.png"
    assert cli.main(["explain", str(spec), "--quick", "--flops", f"2*{n}**3", "--out", str(figure)]) == 0
    out = capsys.readouterr().out
    assert "matmul on" in out and "(verified)" in out and "FLOP/byte" in out
    assert "compute roof: FP32" in out and re.search(r"=> (\d+\.\d% of|at|above) the ", out)
    assert "A, B read once" in out and "C written once" in out
    assert "pyclperf run tiling" in out and "pyclperf run banks" in out  # tiles in __local memory
    assert figure.read_bytes().startswith(PNG)
    with pytest.raises(SystemExit):  # a precision the profile knows nothing of is refused by argparse
        cli.main(["explain", str(spec), "--precision", "fp8"])


VADD = (EXAMPLES / "vadd.cl").read_text()


def test_explain_in_python(roofline_env, ctx):
    profile = pyclperf.profile(ctx, quick=True)  # the session's cached quick profile
    n = 1 << 16
    a, b = np.random.rand(n).astype(np.float32), np.random.rand(n).astype(np.float32)
    args = [np.empty_like(a), a, b, np.int32(n)]
    res = pyclperf.tune(
        VADD,
        "vadd",
        n,
        args,
        params={"block_size_x": [32, 64, 128]},
        ctx=ctx,
        verify=Verify(answer=[a + b, None, None, None]),
    )
    found = pyclperf.explain(res, profile, source=VADD, args=args, flops=lambda cfg: n)
    fastest = min(res.rows, key=lambda r: r["time_ms"])
    assert found.best and found.config == {"block_size_x": fastest["block_size_x"]}
    assert found.bytes == 3 * 4 * n and found.working_set == 3 * 4 * n
    assert found.gbps == pytest.approx(3 * 4 * n / (fastest["time_ms"] / 1e3) / 1e9)
    assert found.intensity == pytest.approx(1 / 12)
    # 768 KiB fits the smallest cache level that holds it, or no level is that large: DRAM.
    assert found.memory_roof.name in [r.name for r in profile.memory_roofs()]
    roof = found.binding
    assert found.fraction == pytest.approx(found.gflops / found.attainable)
    assert found.attainable == pytest.approx(min(found.intensity * found.memory_roof.value,
                                                 found.compute_roof.value))
    assert roof.name in found.text() and len(found.points) == 3
    json.dumps(found.as_dict())  # what the results file stores
    other = pyclperf.explain(res, profile, source=VADD, args=args, config={"block_size_x": 32})
    assert not other.best and other.config == {"block_size_x": 32} and other.flops is None
    with pytest.raises(ValueError, match="give source= and args="):
        pyclperf.explain(res, profile)
    with pytest.raises(ValueError, match="not tuned parameters"):
        pyclperf.explain(res, profile, source=VADD, args=args, config={"TILE": 4})
    with pytest.raises(ValueError, match="no verified configuration has"):
        pyclperf.explain(res, profile, source=VADD, args=args, config={"block_size_x": 1024})
    by_user = pyclperf.explain(res, profile, bytes=lambda cfg: 1e6)
    assert by_user.bytes == 1e6 and "bytes(config)" in by_user.bytes_how


def _figure(value, unit="GB/s"):
    return {"value": value, "unit": unit, "how": "synthetic", "status": "ok", "spread_pct": 1.0, "n": 3}


def synthetic_profile() -> Profile:
    """A profile of made-up figures: L1 of 64 KiB reading at 1000 GB/s and copying at 800, L2
    of 4 MiB reading at 500 and copying at 600, DRAM read 200, copy 150, write 180, FP32 10000
    GFLOP/s."""
    from pyclperf.roofline import store

    names = store.schema()["properties"]["ceilings"]["required"]
    ceilings = {k: {"value": None, "unit": "GB/s", "how": "synthetic", "status": "skipped", "reason": "-"}
                for k in names}
    ceilings.update(dram_read=_figure(200.0), dram_copy=_figure(150.0), dram_write=_figure(180.0),
                    local=_figure(2000.0), fp32=_figure(10000.0, "GFLOP/s"))
    level = {"found_from": ["bandwidth"], "bandwidth_knee_bytes": None, "latency_knee_bytes": None,
             "bracket_bytes": [1, 2], "latency": None}
    caches = [dict(level, name="L1", label="L1/local-cache-sized", last=False, steps=[],
                   size_bytes=64 << 10, read=_figure(1000.0), copy=_figure(800.0)),
              dict(level, name="L2", label="last-level cache", last=True, steps=[],
                   size_bytes=4 << 20, read=_figure(500.0), copy=_figure(600.0))]
    return Profile({"schema": store.SCHEMA, "created": "", "pyclperf_version": "0", "quick": True,
                    "seconds": 1.0, "key": "k", "device": {"name": "synthetic", "vendor": "", "type": "GPU",
                                                          "compute_units": 1, "global_mem_bytes": 1},
                    "driver": "", "platform": "", "ceilings": ceilings, "caches": caches,
                    "reported": {"global_mem_cache_bytes": 0, "global_mem_cacheline_bytes": 0,
                                 "local_mem_bytes": 0}, "curves": {"read": [], "chase": []},
                    "timings": {}})


def test_the_working_set_picks_the_memory_roof():
    p = synthetic_profile()
    # A kernel that writes is held against the higher of a level's read and copy figures: L1's
    # read (its copy runs slower), L2's copy (faster than its read); a read alone, the read.
    assert memory_roof(p, 32 << 10, True, True)[0].name == "L1"
    assert memory_roof(p, 64 << 10, True, False)[0].name == "L1"
    roof, why = memory_roof(p, 1 << 20, True, True)
    assert roof.name == "L2 copy" and roof.value == 600.0 and roof.traffic == "copy"
    assert "fits L2 (4 MiB)" in why and "copy runs faster than its read" in why
    assert memory_roof(p, 1 << 20, False, True)[0].name == "L2 copy"
    assert memory_roof(p, 1 << 20, True, False)[0].name == "L2"
    assert memory_roof(p, 64 << 20, True, False)[0].name == "DRAM read"
    assert memory_roof(p, 64 << 20, False, True)[0].name == "DRAM write"
    roof, why = memory_roof(p, 64 << 20, True, True)
    assert roof.name == "DRAM copy" and "larger than L2 (4 MiB)" in why
    assert [r.name for r in p.compute_roofs()] == ["FP32"]


def test_sensitivity_from_the_rows_already_measured():
    rows = [{"bx": bx, "v": v, "time_ms": t} for bx, v, t in
            ((64, 1, 4.0), (64, 2, 2.0), (128, 1, 3.0), (128, 2, 1.0), (256, 1, 5.0), (256, 2, 6.0))]
    found = {s["param"]: s for s in sensitivity(rows, ["bx", "v"], rows[3])}
    # bx: medians 3.0 (64), 2.0 (128), 5.5 (256): 2.75x; around bx=128, v=2: 2.0, 1.0, 6.0.
    assert found["bx"]["ratio"] == pytest.approx(5.5 / 2.0) and found["bx"]["fastest"] == "128"
    assert found["bx"]["around_ratio"] == pytest.approx(6.0)
    assert found["v"]["ratio"] == pytest.approx(4.0 / 2.0) and found["v"]["around_ratio"] == pytest.approx(3.0)
    assert [s["param"] for s in sensitivity(rows, ["bx", "v"], rows[3])] == ["bx", "v"]


def test_spec_references_by_expression_and_matrix_product(tmp_path):
    from pyclperf.tuner.spec import SpecError, parse_spec

    spec = parse_spec(_spec(tmp_path, "vadd"))
    c, a, b, _ = spec.kwargs["args"]
    assert np.array_equal(spec.kwargs["answer"][0], a + b) and spec.kwargs["answer"][0].dtype == np.float32
    mm = parse_spec(_spec(tmp_path, "tiled_matmul"))
    C, A, B, _ = mm.kwargs["args"]
    assert np.allclose(mm.kwargs["answer"][0], A.astype(np.float64) @ B.astype(np.float64), rtol=1e-6)
    with pytest.raises(SpecError, match="unknown name 'd'"):
        parse_spec(_spec(tmp_path, "vadd", reference={"kind": "expression", "arg": "c", "expression": "a + d"}))
    with pytest.raises(SpecError, match="2-D arrays"):
        parse_spec(_spec(tmp_path, "vadd", reference={"kind": "matmul", "a": "a", "b": "b", "to": "c"}))
