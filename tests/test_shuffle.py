"""shuffle: work-group sums by tree, shuffles, sub-group and work-group reductions. On PoCL the
tree runs and verifies; every variant either verifies or is skipped with the build's reason; a
tree that drops a level is caught; the bound is the derived one."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import pyclperf
from pyclperf.device.devices import build_std, missing
from pyclperf.experiments.shuffle import NEEDS
from pyclperf.measure.checks import gamma
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments.shuffle import Shuffle
from pyclperf.device.sources import kernel_source

QUICK = {"warmup": 1, "repeats": 2}
ITEMS, LOCAL = 1 << 14, 64


@pytest.fixture(scope="module")
def shuf(ctx):
    return pyclperf.run("shuffle", ctx, size=ITEMS, local_size=LOCAL, peak_gbps=1000.0, **QUICK)


def test_each_variant_verifies_or_says_why_not(shuf):
    df = shuf.df.set_index("variant")
    assert list(df.index) == ["tree", "shuffle", "subgroup", "workgroup"]
    assert df.loc["tree", "status"] == "ok"
    for variant, row in df.iterrows():
        assert row["status"] in ("ok", "skipped"), (variant, row["error"])
        unclaimed = missing(shuf_ctx_info(shuf), NEEDS[variant])
        if unclaimed:  # never built, let alone run, where the device does not claim it
            assert row["status"] == "skipped" and row["error"] == unclaimed, (variant, row["error"])
        elif row["status"] == "skipped":
            assert "does not build" in row["error"]


def shuf_ctx_info(res):
    return pyclperf.select_device(f"{res.meta['device']['platform_index']}:{res.meta['device']['device_index']}")


def test_what_a_device_claims_decides_which_variants_run():
    """A device that lists no OpenCL C 2.0 and no work-group collective functions gets no
    work-group variant, even where its compiler would build one (a driver did, and summed 8
    lanes); OpenCL 3.0 features and 2.x versions both count as claims."""
    def info(c_version, versions=(), features=(), extensions=""):
        return SimpleNamespace(opencl_c_version=c_version, opencl_c_all_versions=list(versions),
                               opencl_c_features=list(features),
                               has_extension=lambda e: e in extensions.split())

    old = info("OpenCL C 1.2")
    assert "work-group collective functions" in missing(old, NEEDS["workgroup"])
    assert "sub-groups" in missing(old, NEEDS["subgroup"]) and build_std(old) == []
    v20 = info("OpenCL C 2.0")
    assert missing(v20, NEEDS["workgroup"]) == "" and build_std(v20) == ["-cl-std=CL2.0"]
    assert missing(v20, NEEDS["subgroup"]) != ""            # sub-groups came with 2.1
    v30 = info("OpenCL C 1.2", ["1.2", "3.0"], ["__opencl_c_subgroups"])
    assert missing(v30, NEEDS["workgroup"]) != "" and missing(v30, NEEDS["subgroup"]) == ""
    assert build_std(v30) == ["-cl-std=CL3.0"]
    both = info("OpenCL C 1.2", ["1.2", "3.0"], ["__opencl_c_work_group_collective_functions"],
                "cl_khr_subgroups cl_khr_subgroup_shuffle")
    assert all(missing(both, NEEDS[v]) == "" for v in NEEDS)


def test_metrics_and_bounds(shuf):
    df = shuf.df[shuf.df["status"] == "ok"]
    assert (df["bytes"] == (ITEMS + ITEMS // LOCAL) * 4).all()
    assert np.allclose(df["gbps"], df["bytes"] / df["median_ns"])
    tree = df[df["variant"] == "tree"].iloc[0]
    assert tree["rel_bound"] == pytest.approx(gamma(6)) and tree["max_rel_error"] <= tree["rel_bound"]
    assert "Quasar 9.8" in shuf.meta["conclusion"]


def test_a_tree_missing_a_level_is_caught(ctx):
    source = kernel_source("shuffle.cl")
    old = "for (uint step = WG / 2; step > 0; step >>= 1)"
    assert old in source

    class Wrong(Shuffle):
        def build(self, variant):
            program = ctx.program(source.replace(old, "for (uint step = WG / 2; step > 1; step >>= 1)"),
                                  defines={"WG": self.local_size, "TREE": 1})
            return program.kernel("group_sum"), "wrong tree"

    res = run_experiment(Wrong(ctx, items=ITEMS, local_size=LOCAL, variants=["tree"]), **QUICK)
    assert res.rows[0]["status"] == "wrong result", res.rows[0]


def test_bad_parameters_are_refused(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="power of two"):
        Shuffle(ctx, local_size=48)
    with pytest.raises(pyclperf.InvalidArgumentError, match="multiple"):
        Shuffle(ctx, items=1000, local_size=64)
    with pytest.raises(pyclperf.InvalidArgumentError, match="unknown"):
        Shuffle(ctx, variants=["ballot"])
