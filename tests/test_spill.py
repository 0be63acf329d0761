"""spill: a dynamically indexed private array vs the same array unrolled. Every point verifies
exactly on PoCL; the register columns follow the driver (unknown on PoCL, parsed from an NVIDIA
log); a kernel that skips elements is caught."""

from __future__ import annotations

import numpy as np
import pytest

import pyclperf
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments.spill import Spill, reference, stack_bytes
from pyclperf.device.sources import kernel_source

QUICK = {"warmup": 1, "repeats": 2}
SIZES, ROUNDS, ITEMS = [4, 16, 64], 4, 1024

NV_LOG = """ptxas info    : Compiling entry function 'spill_dynamic' for 'sm_90'
ptxas info    : Function properties for spill_dynamic
    256 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, 380 bytes cmem[0]
"""


@pytest.fixture(scope="module")
def spill(ctx):
    return pyclperf.run("spill", ctx, size=ITEMS, values=SIZES, rounds=ROUNDS, local_size=64, **QUICK)


def test_every_point_verifies(spill):
    df = spill.df
    assert spill.all_verified, df["error"].tolist()
    assert list(zip(df["variant"], df["length"])) == [(v, n) for v in ("unrolled", "dynamic") for n in SIZES]


def test_metrics_and_register_columns(ctx, spill):
    df = spill.df
    assert (df["updates"] == ITEMS * ROUNDS * df["length"]).all()
    assert np.allclose(df["gupdates"], df["updates"] / df["median_ns"])
    assert set(spill.meta["dynamic_over_unrolled"]) == set(SIZES)
    assert "Guide 3.2.3" in spill.meta["conclusion"]
    if not ctx.info.has_extension("cl_nv_compiler_options"):
        assert df["registers"].isna().all() and spill.meta["registers"].startswith("unknown")
        assert (Spill.summary(spill)["registers"] == "unknown").all()


def test_the_nvidia_log_is_read():
    assert stack_bytes(NV_LOG, "spill_dynamic") == 256
    assert stack_bytes(NV_LOG, "spill_unrolled") is None and stack_bytes("", "x") is None


def test_reference_by_steps(rng):
    x = rng.integers(0, 1024, size=50).astype(np.float32)
    a = x.astype(np.float64)[:, None] + np.arange(8)[None, :]
    for _ in range(ROUNDS):
        a = a * 1.0 + 2.0
    assert np.array_equal(reference(x, 8, ROUNDS), (a * np.arange(1, 9)).sum(axis=1).astype(np.float32))


def test_an_index_that_misses_elements_is_caught(ctx):
    source = kernel_source("spill.cl")
    old = "i = (i + stride) & (N - 1);"
    assert old in source

    class Wrong(Spill):
        def launch(self, point):
            launch = super().launch(point)
            program = ctx.program(source.replace(old, "i = (i + stride) & (N / 2 - 1);"),
                                  defines={"N": point["length"], "ROUNDS": self.rounds})
            kernel = program.kernel("spill_dynamic").set_args(
                self.src, np.float32(1.0), np.float32(2.0), np.uint32(1), self.dst)
            launch.steps[0] = (kernel, *launch.steps[0][1:])
            return launch

    res = run_experiment(Wrong(ctx, items=ITEMS, local_size=64, sizes=[8], rounds=ROUNDS,
                               variants=["dynamic"]), **QUICK)
    assert res.rows[0]["status"] == "wrong result", res.rows[0]


def test_bad_parameters_are_refused(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="powers of two"):
        Spill(ctx, sizes=[12])
    with pytest.raises(pyclperf.InvalidArgumentError, match="multiple"):
        Spill(ctx, items=1000, local_size=64)
