"""ilp: independent FMA chains at low and full occupancy. Every point verifies exactly on PoCL;
the flop count follows from the shapes; a kernel that drops one FMA of a chain is caught."""

from __future__ import annotations

import numpy as np
import pytest

import pyclperf
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments.ilp import Ilp, reference
from pyclperf.device.sources import kernel_source

QUICK = {"warmup": 1, "repeats": 2}
TOTAL = 64


@pytest.fixture(scope="module")
def ilp(ctx):
    return pyclperf.run("ilp", ctx, total=TOTAL, full_groups_per_cu=4, local_size=64, **QUICK)


def test_every_point_verifies(ilp):
    df = ilp.df
    assert ilp.all_verified, df["error"].tolist()
    assert list(zip(df["occupancy"], df["acc"])) == [(o, a) for o in ("low", "full") for a in (1, 2, 4, 8)]


def test_flops_follow_from_the_shapes(ctx, ilp):
    df = ilp.df
    assert (df["items"] == df["groups"] * df["local_size"]).all()
    assert (df["flops"] == 2 * df["items"] * TOTAL).all()
    assert np.allclose(df["gflops"], df["flops"] / df["median_ns"])
    low = df[df["occupancy"] == "low"]
    assert (low["groups"] == ctx.info.compute_units).all()
    assert set(ilp.meta["ilp_gain"]) == {"low", "full"}
    assert "Guide 4.3" in ilp.meta["conclusion"] and "192" in ilp.meta["conclusion"]


def test_reference_by_steps(rng):
    x = rng.integers(0, 1024, size=100).astype(np.float32)
    for acc in (1, 2, 4, 8):
        accs = [x.astype(np.float64) + k for k in range(acc)]
        for _ in range(TOTAL // acc):
            accs = [a * 1.0 + 3.0 for a in accs]
        assert np.array_equal(reference(x, acc, TOTAL), sum((k + 1) * a for k, a in enumerate(accs)).astype(np.float32))


def test_a_short_chain_is_caught(ctx):
    source = kernel_source("ilp.cl")
    old = "for (int t = 0; t < TOTAL / ACC; ++t)"
    assert old in source

    class Short(Ilp):
        def launch(self, point):
            launch = super().launch(point)
            program = ctx.program(source.replace(old, "for (int t = 1; t < TOTAL / ACC; ++t)"),
                                  defines={"ACC": point["acc"], "TOTAL": self.total})
            kernel = program.kernel("ilp").set_args(self.src, np.float32(1.0), np.float32(3.0), self.dst)
            launch.steps[0] = (kernel, *launch.steps[0][1:])
            return launch

    res = run_experiment(Short(ctx, accumulators=[4], total=TOTAL, occupancies=["low"]), **QUICK)
    assert res.rows[0]["status"] == "wrong result", res.rows[0]


def test_bad_parameters_are_refused(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="accumulators"):
        Ilp(ctx, accumulators=[3])
    with pytest.raises(pyclperf.InvalidArgumentError, match="multiple"):
        Ilp(ctx, total=100)
    with pytest.raises(pyclperf.InvalidArgumentError, match="occupancies"):
        Ilp(ctx, occupancies=["half"])
