"""The constant and texture experiments: every variant verifies, wrong kernels are caught, the
bandwidth and comparison columns follow from the rows, invalid sizes are refused, image
variants are skipped on a device without images, and the CLI writes a plot."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pyclperf
from pyclperf import cli
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments.constant import CONV_VARIANTS, ConstantMemory
from pyclperf.experiments.texture import TEX_VARIANTS, Texture, sample_reference
from pyclperf.device.peak import theoretical

QUICK = {"warmup": 1, "repeats": 2}
W, H = 128, 16  # constant: a small image; texture uses 64 x 32 (powers of two)


@pytest.fixture(scope="module")
def constant(ctx):
    return pyclperf.run("constant", ctx, size=W, height=H, local_size=64, peak_gbps=1000.0, **QUICK)


@pytest.fixture(scope="module")
def texture(ctx):
    return pyclperf.run("texture", ctx, size=64, height=32, local_size=64, peak_gbps=1000.0, **QUICK)


def test_every_convolution_variant_verifies(constant):
    df = constant.df
    assert list(df["variant"]) == list(CONV_VARIANTS) and constant.all_verified, df["error"].tolist()
    assert (df["bytes"] == 2 * W * H * 4 + 32 * 4).all()
    assert np.allclose(df["gbps"], df["bytes"] / df["median_ns"])
    assert (df["max_abs_error"] < 1e-5).all()


def test_convolution_conclusion_compares_with_quasar(constant):
    df = constant.df
    assert np.allclose(df["speedup_vs_global"],
                       df.loc[df.variant == "global", "median_ns"].item() / df["median_ns"])
    quasar = df.set_index("variant")["quasar_speedup"]
    assert quasar["f constant"] == pytest.approx(513 / 132)
    assert quasar["x,f read-only"] == pytest.approx(513 / 95)
    text = constant.meta["conclusion"]
    assert "Quasar" in text and constant.meta["best_variant"] in text


def test_convolution_reference_clamps_at_the_right_edge(ctx):
    exp = ConstantMemory(ctx, width=8, height=1, taps=3, variants=["global"])
    x = np.arange(8, dtype=np.float32)[None]
    y = exp.reference(x, np.array([1, 10, 100], np.float32))
    assert y[0, 0] == 0 + 10 + 200 and y[0, 7] == 7 * 111 and y[0, 6] == 6 + 70 + 700


WRONG_CONV = """
__kernel void conv_global(__global float* y, __global float* x, __global float* f,
                          const int width, const int height) {
    const int c = get_global_id(0), r = get_global_id(1);
    if (c >= width || r >= height) return;
    float sum = 0.0f;
    for (int k = 0; k < TAPS; ++k)          /* no clamp: reads past the row's end */
        sum += x[(size_t)r * width + c + k] * f[k];
    y[(size_t)r * width + c] = sum;
}
"""


def test_a_wrong_convolution_fails(ctx):
    exp = ConstantMemory(ctx, width=W, height=H, local_size=64, variants=["global"])
    exp.kernel = lambda v: ctx.program(WRONG_CONV, defines={"TAPS": 32}).kernel(v.kernel).set_args(
        exp.y_buf, exp.x_buf, exp.f_buf, np.int32(W), np.int32(H))
    res = run_experiment(exp, **QUICK)
    assert res.rows[0]["status"] == "wrong result" and "differ by more than" in res.rows[0]["error"]
    assert "no comparison" in res.meta["conclusion"]


def test_every_texture_variant_verifies(texture):
    df = texture.df
    assert list(df["variant"]) == list(TEX_VARIANTS) and texture.all_verified, df["error"].tolist()
    assert (df["bytes"] == 2 * 64 * 32 * 4).all()
    nearest = df[df["filter"] == "nearest"]
    assert (nearest["tolerance"] == 0).all()
    manual = nearest[nearest["path"] == "global"]
    assert (manual["max_abs_error"] == 0).all()  # exact coordinates: the one right texel
    linear = df[(df["filter"] == "linear") & (df["path"] == "image")]
    assert (linear["tolerance"] > 2 / 256 * 0.9).all()  # 8-bit weights allowed for
    assert "Quasar" in texture.meta["conclusion"]
    hw = df[df["path"] == "image"].set_index("variant")
    assert np.isfinite(hw["speedup_vs_manual"]).all()


def test_sample_reference_follows_the_opencl_rules():
    img = np.arange(4, dtype=np.float32)[None].repeat(2, axis=0)  # columns 0 1 2 3
    u = np.array([0.5, 1.0, 3.75, 4.5, -0.25])
    v = np.array([0.5])
    lin = sample_reference(img, u, v, "linear", "clamp_to_edge")[0]
    assert lin.tolist() == [0.0, 0.5, 3.0, 3.0, 0.0]  # texel centres at k + 0.5
    rep = sample_reference(img, u, v, "linear", "repeat")[0]
    assert rep.tolist() == [0.0, 0.5, 2.25, 0.0, 2.25]  # 3.75 blends texels 3 and 0 (wrapped)
    near = sample_reference(img, u, v, "nearest", "repeat")[0]
    assert near.tolist() == [0.0, 1.0, 3.0, 0.0, 3.0]


WRONG_MANUAL = """
__kernel void resample_manual(__global float* out, const __global float* src, const int w,
                              const int h, const int ow, const int oh, const float4 xf,
                              const float2 inv) {
    const int i = get_global_id(0), j = get_global_id(1);
    if (i >= ow || j >= oh) return;
    /* linear filtering without the half-texel shift: the corner convention, not OpenCL's */
    const float u = clamp(i * xf.s0 + xf.s1, 0.0f, w - 1.0f), v = clamp(j * xf.s2 + xf.s3, 0.0f, h - 1.0f);
    const int x0 = (int)u, y0 = (int)v, x1 = min(x0 + 1, w - 1), y1 = min(y0 + 1, h - 1);
    const float a = u - x0, b = v - y0;
    out[j * ow + i] = mix(mix(src[y0 * w + x0], src[y0 * w + x1], a),
                          mix(src[y1 * w + x0], src[y1 * w + x1], a), b);
}
"""


def test_a_texture_lookup_without_the_half_texel_shift_fails(ctx):
    exp = Texture(ctx, width=64, height=32, local_size=64, variants=["global linear clamp_to_edge"])
    size = (np.int32(64), np.int32(32))
    exp.kernel = lambda v: ctx.program(WRONG_MANUAL).kernel("resample_manual").set_args(
        exp.out_buf, exp.src_buf, *size, *size, exp.transform, exp.inv_size)
    res = run_experiment(exp, **QUICK)
    assert res.rows[0]["status"] == "wrong result"
    assert res.rows[0]["max_abs_error"] > 0.01


def test_invalid_sizes_are_refused(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="power of two"):
        Texture(ctx, width=100, height=64)
    with pytest.raises(pyclperf.InvalidArgumentError, match="unknown or no variants"):
        Texture(ctx, width=64, height=64, variants=["image cubic"])
    with pytest.raises(pyclperf.InvalidArgumentError, match="CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE"):
        ConstantMemory(ctx, width=64, height=4, taps=ctx.info.constant_mem_bytes)
    # The work-group size is the core's launch check to refuse, point by point.
    res = run_experiment(ConstantMemory(ctx, width=64, height=4, variants=["global"],
                                        local_size=ctx.info.max_work_group_size + 1), **QUICK)
    assert res.rows[0]["status"] == "skipped"  # the device declines it (a device limit)
    assert "exceeds the device's limit" in res.rows[0]["error"]
    with pytest.raises(pyclperf.InvalidArgumentError, match="width must be positive"):
        ConstantMemory(ctx, width=0)


class _NoImages:
    """The test device as a device without image support would show itself."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)

    @property
    def info(self) -> Any:
        real = self._ctx.info

        class Info:
            image_support = False
            image2d_max_width = image2d_max_height = 0

            def __getattr__(self, name: str) -> Any:
                return getattr(real, name)

        return Info()


def test_image_variants_are_skipped_without_image_support(ctx):
    fake = _NoImages(ctx)
    peak = theoretical(ctx, peak_gbps=1000.0)
    exp = ConstantMemory(fake, width=W, height=H, local_size=64, variants=["global", "f image"])
    res = run_experiment(exp, peak=peak, **QUICK)
    assert [r["status"] for r in res.rows] == ["ok", "skipped"]
    assert "needs image support" in res.rows[1]["error"]
    exp = Texture(fake, width=64, height=32, local_size=64,
                  variants=["image nearest repeat", "global nearest repeat"])
    res = run_experiment(exp, peak=peak, **QUICK)
    assert [r["status"] for r in res.rows] == ["skipped", "ok"]


def test_cli_runs_texture_and_plots(ctx, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    code = cli.main(["run", "texture", "--size", "32", "--local-size", "64", "--warmup", "1",
                     "--repeats", "2", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "texture unit vs manual" in out and (tmp_path / "texture.png").is_file()
    back = pyclperf.Results.load(tmp_path / "texture.jsonl")
    assert "conclusion" in back.meta


def test_inputs_and_references_are_drawn_once_a_run(ctx, monkeypatch):
    """constant filters one image for all variants, texture samples one image per run with one
    reference per (filter, addressing): the host's work does not grow with the variants."""
    from pyclperf.experiments import texture as tex
    calls = {"constant": 0, "texture": 0}
    real_conv, real_tex = ConstantMemory.reference, tex.sample_reference

    def conv(self, *args):
        calls["constant"] += 1
        return real_conv(self, *args)

    def sample(*args):
        calls["texture"] += 1
        return real_tex(*args)

    monkeypatch.setattr(ConstantMemory, "reference", conv)
    monkeypatch.setattr(tex, "sample_reference", sample)
    a = run_experiment(ConstantMemory(ctx, width=W, height=H, local_size=64), **QUICK)
    b = run_experiment(tex.Texture(ctx, width=64, height=32, local_size=64), **QUICK)
    assert a.all_verified and b.all_verified, (a.df["error"].tolist(), b.df["error"].tolist())
    keys = {(r["filter"], r["addressing"]) for r in b.rows if r.get("status") == "ok"}
    assert calls == {"constant": 1, "texture": len(keys)}
