"""rgba: a horizontal Gaussian on RGB pixels from four layouts and a vertical wavelet step on RGBA
pixels from three. On PoCL the global layouts and the float RGBA images verify; the half image runs
where a probe reads it back as stored, else it is skipped saying why; a filter with a tap off by
one, and a wavelet that starts a row late or swaps its outputs, are caught."""

from __future__ import annotations

import numpy as np
import pytest

import pyclperf
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments import _wavelet
from pyclperf.experiments.rgba import Rgba, gaussian, reference
from pyclperf.device.sources import kernel_source

QUICK = {"warmup": 1, "repeats": 2}
SIDE = 64


@pytest.fixture(scope="module")
def rgba(ctx):
    return pyclperf.run("rgba", ctx, size=SIDE, peak_gbps=1000.0, **QUICK)


def test_variants_verify_or_say_why_not(ctx, rgba):
    df = rgba.df.set_index("variant")
    assert list(df.index) == ["interleaved", "planar", "rgba float image", "rgba half image",
                              "wavelet interleaved", "wavelet planar", "wavelet rgba float image"]
    assert (df.loc[["interleaved", "planar"], "status"] == "ok").all(), df["error"].tolist()
    if ctx.info.image_support:
        assert df.loc["rgba float image", "status"] == "ok", df.loc["rgba float image", "error"]
        half = df.loc["rgba half image"]
        assert half["status"] == "ok" or (half["status"] == "skipped" and "probe read" in half["error"])
    assert "Quasar 9.5" in rgba.meta["conclusion"] and "513 ms" in rgba.meta["conclusion"]


def test_wavelet_rows_verify_and_the_ratio_is_reported(ctx, rgba):
    df = rgba.df.set_index("variant")
    names = ["wavelet interleaved", "wavelet planar"] + (["wavelet rgba float image"] if ctx.info.image_support else [])
    assert (df.loc[names, "status"] == "ok").all(), df.loc[names, "error"].tolist()
    assert (df.loc[names, "bytes"] == SIDE * SIDE * 32).all() and (df.loc[names, "taps"] == 16).all()
    assert rgba.meta["wavelet_taps"] == 16
    if ctx.info.image_support:
        ratio = df.loc["wavelet interleaved", "median_ns"] / df.loc["wavelet rgba float image", "median_ns"]
        assert f"is {ratio:.2f}x" in rgba.meta["conclusion"]
    else:
        assert df.loc["wavelet rgba float image", "status"] == "skipped"

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


def test_wavelet_filters_and_reference(rng):
    for taps in (2, 4, 16):
        lo, hi = (f.astype(np.float64) for f in _wavelet.filter_pair(taps))
        # An orthogonal pair: unit norm, orthogonal to its even shifts and to each other.
        assert np.isclose(lo @ lo, 1.0, atol=1e-6) and np.isclose(lo.sum(), np.sqrt(2), atol=1e-6)
        assert all(abs(lo[2 * m:] @ lo[:taps - 2 * m]) < 1e-6 for m in range(1, taps // 2))
        assert abs(lo @ hi) < 1e-6 and abs(hi.sum()) < 1e-6
    assert np.allclose(_wavelet.daubechies(4)[:2], [0.4829629131, 0.8365163037])  # db2's own values
    # A constant column: all of it in the low-pass half (value * sqrt 2), none in the high-pass.
    lo, hi = _wavelet.filter_pair(16)
    out, mag = _wavelet.reference(np.full((32, 4, 4), 0.5, np.float32), lo, hi)
    assert np.allclose(out[:16], 0.5 * np.sqrt(2), atol=1e-6) and np.allclose(out[16:], 0.0, atol=1e-6)
    # An orthogonal step keeps the energy of each column.
    x = rng.random((32, 4, 4))
    out, _ = _wavelet.reference(x, lo, hi)
    assert np.allclose((out ** 2).sum(axis=0), (x ** 2).sum(axis=0), rtol=1e-5)


@pytest.mark.parametrize("variant", list(_wavelet.VARIANTS))
@pytest.mark.parametrize("fault", ["one row late", "outputs swapped"])
def test_a_wrong_wavelet_is_caught(ctx, variant, fault):
    if "image" in variant and not ctx.info.image_support:
        pytest.skip("no image support")
    source = kernel_source("rgba.cl")
    if fault == "one row late":
        wrong = source.replace("((2 * (i) + SHIFT) % (height))", "((2 * (i) + SHIFT + 1) % (height))")
    else:
        wrong = source.replace("a += lo[k] * u;", "a += hi[k] * u;").replace("b += hi[k] * u;", "b += lo[k] * u;")
    assert wrong != source

    class Wrong(Rgba):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.wavelet.program = ctx.program(wrong, defines={"TAPS": self.wavelet.taps, "SHIFT": _wavelet.SHIFT})

    res = run_experiment(Wrong(ctx, side=SIDE, variants=[variant]), **QUICK)
    assert res.rows[0]["status"] == "wrong result", res.rows[0]


def test_bad_parameters_are_refused(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="multiple of 16"):
        Rgba(ctx, side=30)
    with pytest.raises(pyclperf.InvalidArgumentError, match="radius"):
        Rgba(ctx, side=SIDE, radius=-1)
    with pytest.raises(pyclperf.InvalidArgumentError, match="taps"):
        Rgba(ctx, side=SIDE, variants=["wavelet planar"], wavelet_taps=5)


def test_each_reference_is_computed_once_a_run(ctx, monkeypatch):
    """The Gaussian's variants share one set of pixels (exact in float16, so the half image holds
    them too) and one host reference; the wavelet's likewise."""
    from pyclperf.experiments import rgba as module
    calls = {"gauss": 0, "wavelet": 0}

    def counted(name, real):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(module, "reference", counted("gauss", module.reference))
    monkeypatch.setattr(_wavelet, "reference", counted("wavelet", _wavelet.reference))
    res = run_experiment(Rgba(ctx, side=SIDE), **QUICK)
    verified = res.df[res.df["status"] == "ok"]["variant"].tolist()
    assert "interleaved" in verified and "wavelet interleaved" in verified, res.df["error"].tolist()
    assert calls == {"gauss": 1, "wavelet": 1}
    exp = Rgba(ctx, side=SIDE, variants=["interleaved"])
    pixels = exp.gauss_input()[0]
    assert np.array_equal(pixels.astype(np.float16).astype(np.float32), pixels)


def test_the_references_take_magnitudes_of_signed_pixels():
    # Non-negative pixels let the references skip |x|; signed ones must still be summed as |w x|.
    rng = np.random.default_rng()
    signed = rng.standard_normal((64, 32, 4)).astype(np.float32)
    w = gaussian(3)
    out, mag = reference(signed[..., :3].copy(), w)
    r = 3
    padded = np.pad(signed[..., :3].astype(np.float64), ((0, 0), (r, r), (0, 0)), mode="edge")
    want_mag = sum(float(wk) * np.abs(padded[:, k:k + 32]) for k, wk in enumerate(w))
    assert np.allclose(mag, want_mag, rtol=1e-12) and not np.allclose(mag, np.abs(out))
    lo, hi = _wavelet.filter_pair(4)
    out, mag = _wavelet.reference(signed, lo, hi)
    _, mag_of_abs = _wavelet.reference(np.abs(signed), np.abs(lo), np.abs(hi))
    assert np.allclose(mag, mag_of_abs, rtol=1e-12)
