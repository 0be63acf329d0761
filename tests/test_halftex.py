"""halftex: a gather from global floats, a float image and a half image. On PoCL the float
variants verify exactly; the half image runs where a probe reads it back as stored, else it is
skipped with what the probe saw; a kernel reading the wrong texel is caught."""

from __future__ import annotations

import numpy as np
import pytest

import pyclperf
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments.halftex import HALF_U, HalfTexture, shifted
from pyclperf.device.sources import kernel_source

QUICK = {"warmup": 1, "repeats": 2}
SIDE = 64


@pytest.fixture(scope="module")
def half(ctx):
    return pyclperf.run("halftex", ctx, size=SIDE, peak_gbps=1000.0, **QUICK)


def test_variants_verify_or_say_why_not(ctx, half):
    df = half.df.set_index("variant")
    assert list(df.index) == ["global", "float image", "half image"]
    assert df.loc["global", "status"] == "ok" and df.loc["global", "max_rel_error"] == 0
    if ctx.info.image_support:
        assert df.loc["float image", "status"] == "ok" and df.loc["float image", "max_rel_error"] == 0
        row = df.loc["half image"]
        if row["status"] == "skipped":
            assert "probe read" in row["error"] and half.meta["half_probe"] == row["error"]
        else:
            assert row["status"] == "ok" and row["max_rel_error"] <= HALF_U and row["texel_bytes"] == 2
    assert "Quasar 9.4" in half.meta["conclusion"]


def test_bytes_follow_the_texel_size(half):
    df = half.df[half.df["status"] == "ok"]
    assert (df["bytes"] == SIDE * SIDE * (df["texel_bytes"] + 4)).all()
    assert np.allclose(df["gbps"], df["bytes"] / df["median_ns"])


def test_shifted_clamps_at_the_edges():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert shifted(x, 1, 0)[0].tolist() == [1, 2, 3, 3]
    assert shifted(x, 0, -1)[:, 0].tolist() == [0, 0, 4]


@pytest.mark.parametrize("variant", ["global", "float image"])
def test_a_wrong_texel_is_caught(ctx, variant):
    if variant != "global" and not ctx.info.image_support:
        pytest.skip("no image support")
    source = kernel_source("halftex.cl")
    source = source.replace("clamp(x + dx, 0, width - 1)", "clamp(x + dx + 1, 0, width - 1)")
    source = source.replace("(int2)(x + dx, y + dy)", "(int2)(x + dx + 1, y + dy)")

    class Wrong(HalfTexture):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.program = ctx.program(source)

    res = run_experiment(Wrong(ctx, side=SIDE, variants=[variant]), **QUICK)
    assert res.rows[0]["status"] == "wrong result", res.rows[0]


def test_bad_parameters_are_refused(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="multiple of 16"):
        HalfTexture(ctx, side=40)
    with pytest.raises(pyclperf.InvalidArgumentError, match="65504"):
        HalfTexture(ctx, side=SIDE, value_range=1e5)
