"""shuffle: work-group sums by tree, shuffles, sub-group and work-group reductions. On PoCL the
tree runs and verifies; every variant either verifies or is skipped with the build's reason; a
tree that drops a level is caught; the bound is the derived one."""

from __future__ import annotations

import numpy as np
import pytest

import pyclperf
from pyclperf.checks import gamma
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments.shuffle import Shuffle
from pyclperf.sources import kernel_source

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
        if row["status"] == "skipped":
            assert "does not build" in row["error"]


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
