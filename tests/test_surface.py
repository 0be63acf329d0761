"""surface: image writes vs global stores on PoCL (which has images); the next launch reads what
the previous one wrote; a kernel that skips a texel, or writes the wrong value, is caught."""

from __future__ import annotations

import numpy as np
import pytest

import pyclperf
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments.surface import Surface
from pyclperf.device.sources import kernel_source

QUICK = {"warmup": 1, "repeats": 2}
SIDE = 64


@pytest.fixture(scope="module")
def surf(ctx):
    return pyclperf.run("surface", ctx, size=SIDE, peak_gbps=1000.0, **QUICK)


def test_every_variant_verifies_or_is_skipped_for_want_of_images(ctx, surf):
    df = surf.df.set_index("variant")
    assert list(df.index) == ["global", "image", "image, next launch"]
    assert df.loc["global", "status"] == "ok"
    want = "ok" if ctx.info.image_support else "skipped"
    assert (df.loc[["image", "image, next launch"], "status"] == want).all(), df["error"].tolist()


def test_metrics(surf):
    df = surf.df[surf.df["status"] == "ok"]
    n = SIDE * SIDE
    assert (df["bytes"] == 8 * n * df["launches"]).all()
    assert np.allclose(df["gtexels_per_s"], n / df["median_ns"])
    assert "Guide 3.2.4" in surf.meta["conclusion"]


@pytest.mark.parametrize("variant, old, new", [
    ("global", "out[i] = 2.0f * in[i] + 1.0f;", "if (x != 3) out[i] = 2.0f * in[i] + 1.0f;"),
    ("image", "(float4)(2.0f * in[y * width + x] + 1.0f", "(float4)(2.0f * in[y * width + x] + 1.5f"),
    ("image, next launch", "read_imagef(img, (int2)(x, y)).x", "read_imagef(img, (int2)(y, x)).x"),
])
def test_wrong_kernels_are_caught(ctx, variant, old, new):
    if variant != "global" and not ctx.info.image_support:
        pytest.skip("no image support")
    source = kernel_source("surface.cl")
    assert old in source

    class Wrong(Surface):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.program = ctx.program(source.replace(old, new))

    res = run_experiment(Wrong(ctx, side=SIDE, variants=[variant]), **QUICK)
    assert res.rows[0]["status"] == "wrong result", res.rows[0]


def test_bad_sides_are_refused(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="multiple of 16"):
        Surface(ctx, side=100)


def test_the_one_ulp_bounds_agree_with_compare_ulp():
    from pyclperf.experiments.surface import within_one_ulp
    from pyclperf.measure.checks import ulp_error
    rng = np.random.default_rng()
    x = np.concatenate([rng.standard_normal(4000).astype(np.float32), np.float32([-0.5, 0, 3e-39])])
    want = x.astype(np.float64) * 2.0 + 1.0
    lo, hi = within_one_ulp(want)
    for steps in range(-3, 4):  # each result 0..3 float32 steps either side of the rounded value
        got = want.astype(np.float32)
        for _ in range(abs(steps)):
            got = np.nextafter(got, np.float32(np.sign(steps) * np.inf))
        assert np.array_equal((got >= lo) & (got <= hi), ulp_error(got, want) <= 1.0)
