"""--quick: the quick timing, one warm-up and each experiment's quick sizes (Sweep.quick_options):
smaller sizes or fewer points on a GPU where the claim's verdict does not need the defaults."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pyclperf
from pyclperf import cli
from pyclperf.experiments import catalogue, get
from pyclperf.experiments.transfer import Transfer
from pyclperf.measure.results import Results

# What quick_options may read of a GPU's info (an H200's figures).
H200 = SimpleNamespace(is_gpu=True, max_work_group_size=1024, max_alloc_bytes=35 << 30,
                       global_mem_bytes=140 << 30, compute_units=132, local_mem_bytes=49152,
                       name="NVIDIA H200", vendor="NVIDIA Corporation", platform_name="NVIDIA CUDA")


def test_every_quick_option_is_one_the_experiment_takes(ctx):
    smaller = {}
    for cls in catalogue():
        options = cls.quick_options(H200)
        takes = set(inspect.signature(cls.__init__).parameters) - {"self", "ctx"}
        assert set(options) <= takes, (cls.id, options)
        if options:
            smaller[cls.id] = options
        # A CPU device's sizes are small already: its quick run is its default run's size.
        assert cls.quick_options(ctx.info) == {} or ctx.info.is_gpu, cls.id
    assert {"transfer", "vector", "histogram", "blocksize"} <= set(smaller)
    assert smaller["transfer"]["max_bytes"] < 1 << 30


def test_quick_options_apply_under_those_given(ctx, monkeypatch, tmp_path):
    monkeypatch.setattr(Transfer, "quick_options", classmethod(lambda cls, info: {"max_bytes": 16 << 10}))
    res = pyclperf.run("transfer", ctx, quick=True, policy="quick", warmup=0, modes=["d2d"],
                       out=tmp_path / "t.jsonl", progress=False)
    assert sorted({r["size_bytes"] for r in res.rows}) == [1 << 10, 4 << 10, 16 << 10]
    assert res.meta["quick_options"] == {"max_bytes": 16 << 10}
    assert Results.load(tmp_path / "t.jsonl").meta["quick_options"] == {"max_bytes": 16 << 10}
    # What the caller gives wins, and is not recorded as a quick size.
    res = pyclperf.run("transfer", ctx, quick=True, policy="quick", warmup=0, modes=["d2d"],
                       size=4 << 10, progress=False)
    assert sorted({r["size_bytes"] for r in res.rows}) == [1 << 10, 4 << 10]
    assert res.meta["quick_options"] == {}
    assert "quick_options" not in pyclperf.run("transfer", ctx, policy="quick", warmup=0,
                                               modes=["d2d"], size=1 << 10, progress=False).meta


def test_run_quick_on_the_command_line(ctx, tmp_path, capsys):
    spec = f"{ctx.info.platform_index}:{ctx.info.device_index}"
    assert cli.main(["run", "offset", "--quick", "--size", "4096", "--local-size", "64",
                     "--device", spec, "--out", str(tmp_path), "--no-plot"]) == 0
    meta = Results.load(tmp_path / "offset.jsonl").meta
    assert meta["timing_policy"] == "quick" and meta["warmup"] == 1 and meta["quick_options"] == {}
    # --timing and --warmup given beside --quick stay as given.
    assert cli.main(["run", "offset", "--quick", "--timing", "default", "--warmup", "2", "--size",
                     "4096", "--local-size", "64", "--device", spec, "--out", str(tmp_path),
                     "--no-plot"]) == 0
    meta = Results.load(tmp_path / "offset.jsonl").meta
    assert meta["timing_policy"] == "default" and meta["warmup"] == 2
    assert get("offset").quick_options(ctx.info) == {}
