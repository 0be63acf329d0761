"""The offset and stride experiments: verified points, statuses, results files, plots, CLI."""

import json

import numpy as np
import pytest

import pyclperf
from pyclperf import cli
from pyclperf.experiments.offset import OffsetCopy
from pyclperf.experiments.stride import StrideCopy
from pyclperf.experiments.base import run_experiment

ITEMS = 4096


@pytest.mark.parametrize("offset", [0, 1, 7, 16, 17, 31, 32])
def test_offset_copy_verifies(ctx, offset):
    exp = OffsetCopy(ctx, items=ITEMS, local_size=64)
    check = exp.verify({"offset": offset})
    assert check.passed, check.detail


@pytest.mark.parametrize("stride", [1, 2, 3, 16, 33, 64])
def test_stride_copy_verifies(ctx, stride):
    exp = StrideCopy(ctx, items=ITEMS, local_size=64, values=[1, 64])
    check = exp.verify({"stride": stride})
    assert check.passed, check.detail


BROKEN = """
__kernel void offset_copy(__global float* out, __global const float* in, const int offset) {
    const size_t i = get_global_id(0) + (size_t)offset;
    if (i % 997 != 5) out[i] = in[i];          /* skips some elements */
}
__kernel void stride_copy(__global float* out, __global const float* in, const int stride) {
    const size_t i = get_global_id(0) * (size_t)stride;
    out[i + 1] = in[i];                         /* writes beside the target */
}
"""


def test_verification_catches_wrong_kernels(ctx):
    prog = ctx.program(BROKEN)
    off = OffsetCopy(ctx, items=ITEMS, local_size=64, values=[3])
    off.kernel = prog.kernel("offset_copy")
    res = run_experiment(off, warmup=0, repeats=2)
    assert res.rows[0]["status"] == "wrong result" and not res.rows[0]["verified"]
    assert "differ" in res.rows[0]["error"]
    st = StrideCopy(ctx, items=ITEMS, local_size=64, values=[2])
    st.kernel = prog.kernel("stride_copy")
    check = st.verify({"stride": 2})
    assert not check.passed and "first at 0" in check.detail


def test_sweep_rows_and_statistics(ctx):
    res = pyclperf.run("stride", ctx, size=ITEMS, local_size=64, values=[1, 2, 4], warmup=1, repeats=5)
    df = res.df
    assert list(df["stride"]) == [1, 2, 4]
    assert (df["status"] == "ok").all() and df["verified"].all()
    assert (df["bytes"] == 2 * 4 * ITEMS).all()
    assert np.allclose(df["gbps"], df["bytes"] / df["median_ns"])
    assert (df["min_ns"] <= df["median_ns"]).all() and (df["median_ns"] <= df["max_ns"]).all()
    assert res.meta["device"]["name"] == ctx.info.name
    assert res.meta["method"] == "events" and res.meta["driver"] == ctx.info.driver_version


def test_invalid_parameters_raise_before_running(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="offset must be >= 0"):
        OffsetCopy(ctx, items=ITEMS, local_size=64, values=[-1])
    with pytest.raises(pyclperf.InvalidArgumentError, match="stride must be >= 1"):
        StrideCopy(ctx, items=ITEMS, local_size=64, values=[0])
    with pytest.raises(pyclperf.InvalidArgumentError, match="multiple of the work-group size"):
        OffsetCopy(ctx, items=1000, local_size=64)
    if ctx.info.max_alloc_bytes < (1 << 20) * 1024 * 4:  # true on PoCL; GPUs may allow 4 GiB
        with pytest.raises(pyclperf.InvalidArgumentError, match="largest allocation"):
            StrideCopy(ctx, items=1 << 20, local_size=64, values=[1024])
    with pytest.raises(ValueError, match="unknown experiment"):
        pyclperf.run("nope", ctx)


def test_bad_local_size_becomes_a_row_status(ctx):
    too_big = ctx.info.max_work_group_size * 2
    res = pyclperf.run("offset", ctx, size=too_big * 2, local_size=too_big, values=[0], repeats=2)
    assert res.rows[0]["status"] == "skipped" and "exceeds" in res.rows[0]["error"]


def test_results_save_and_load(ctx, tmp_path):
    res = pyclperf.run("offset", ctx, size=ITEMS, local_size=64, values=[0, 1], repeats=3,
                       out=tmp_path / "offset.jsonl")
    lines = (tmp_path / "offset.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["schema"] == "pyclperf.results/1" and len(lines) == 3
    back = pyclperf.Results.load(tmp_path / "offset.jsonl")
    assert back.rows == json.loads(json.dumps(res.rows)) and back.meta["experiment"] == "offset"
    csv = res.to_csv(tmp_path / "offset.csv").read_text().splitlines()
    assert csv[0].startswith("offset,") and len(csv) == 3


def test_interrupted_sweep_keeps_finished_points(ctx, tmp_path, monkeypatch):
    exp = OffsetCopy(ctx, items=ITEMS, local_size=64, values=[0, 1, 2, 3])
    real = exp.launch
    calls = []

    def stop_on_third(point, *a, **k):
        calls.append(point)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(point, *a, **k)

    monkeypatch.setattr(exp, "launch", stop_on_third)
    res = run_experiment(exp, repeats=2, out=tmp_path / "r.jsonl")
    assert res.meta["interrupted"] and [r["offset"] for r in res.rows] == [0, 1]
    assert [r["offset"] for r in pyclperf.Results.load(tmp_path / "r.jsonl").rows] == [0, 1]


def test_load_tolerates_a_cut_last_line(tmp_path, ctx):
    res = pyclperf.run("offset", ctx, size=ITEMS, local_size=64, values=[0, 1], repeats=2)
    path = res.to_json(tmp_path / "cut.jsonl")
    path.write_text(path.read_text()[:-20])
    assert len(pyclperf.Results.load(path).rows) == 1


def test_plot_writes_a_png(ctx, tmp_path):
    res = pyclperf.run("offset", ctx, size=ITEMS, local_size=64, values=[0, 1, 2], repeats=3)
    path = pyclperf.save_plot(res, tmp_path / "offset.png")
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_cli_run_and_devices(ctx, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    code = cli.main(["run", "stride", "--size", str(ITEMS), "--local-size", "64", "--repeats", "3",
                     "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    for name in ("stride.csv", "stride.jsonl", "stride.png"):
        assert (tmp_path / name).is_file()
    assert cli.main(["devices", "--details"]) == 0
    assert "max_work_group_size" in capsys.readouterr().out


def test_cli_reports_bad_input_without_traceback(tmp_path, capsys):
    code = cli.main(["run", "offset", "--device", "no-such-device", "--out", str(tmp_path)])
    assert code == 2 and "matches no OpenCL device" in capsys.readouterr().err
