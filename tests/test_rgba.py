"""rgba: a horizontal Gaussian on RGB pixels from four layouts. On PoCL the global layouts and the
float RGBA image verify; the half image runs where a probe reads it back as stored, else it is
skipped saying why; a filter with a tap off by one is caught."""

from __future__ import annotations

import numpy as np
import pytest

import pyclperf
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments.rgba import Rgba, gaussian, reference
from pyclperf.sources import kernel_source

QUICK = {"warmup": 1, "repeats": 2}
SIDE = 64


@pytest.fixture(scope="module")
def rgba(ctx):
    return pyclperf.run("rgba", ctx, size=SIDE, peak_gbps=1000.0, **QUICK)


def test_variants_verify_or_say_why_not(ctx, rgba):
    df = rgba.df.set_index("variant")
    assert list(df.index) == ["interleaved", "planar", "rgba float image", "rgba half image"]
    assert (df.loc[["interleaved", "planar"], "status"] == "ok").all(), df["error"].tolist()
    if ctx.info.image_support:
        assert df.loc["rgba float image", "status"] == "ok", df.loc["rgba float image", "error"]
        half = df.loc["rgba half image"]
        assert half["status"] == "ok" or (half["status"] == "skipped" and "probe read" in half["error"])
    assert "Quasar 9.5" in rgba.meta["conclusion"]


def test_bytes_and_rates(rgba):
    df = rgba.df[rgba.df["status"] == "ok"].set_index("variant")
    n = SIDE * SIDE
    assert df.loc["interleaved", "bytes"] == n * 24 and df.loc["planar", "bytes"] == n * 24
    assert np.allclose(df["mpix_per_s"], n * 1e3 / df["median_ns"])


def test_reference_and_weights(rng):
    w = gaussian(3)
    assert w.size == 7 and np.isclose(w.sum(), 1.0) and np.allclose(w, w[::-1])
    pixels = np.ones((4, 8, 3), np.float32)
    out, mag = reference(pixels, w)
    assert np.allclose(out, 1.0) and np.allclose(mag, 1.0)  # clamped edges keep a flat image flat


@pytest.mark.parametrize("variant", ["interleaved", "planar", "rgba float image"])
def test_a_tap_off_by_one_is_caught(ctx, variant):
    if "image" in variant and not ctx.info.image_support:
        pytest.skip("no image support")
    source = kernel_source("rgba.cl")
    source = source.replace("#define TAP(k) clamp(x + (k) - R, 0, width - 1)",
                            "#define TAP(k) clamp(x + (k) - R + 1, 0, width - 1)")
    source = source.replace("(int2)(x + k - R, y)", "(int2)(x + k - R + 1, y)")

    class Wrong(Rgba):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.program = ctx.program(source, defines={"R": self.radius})

    res = run_experiment(Wrong(ctx, side=SIDE, variants=[variant]), **QUICK)
    assert res.rows[0]["status"] == "wrong result", res.rows[0]


def test_bad_parameters_are_refused(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="multiple of 16"):
        Rgba(ctx, side=30)
    with pytest.raises(pyclperf.InvalidArgumentError, match="radius"):
        Rgba(ctx, side=SIDE, radius=-1)
