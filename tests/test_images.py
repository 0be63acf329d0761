"""The core's images and samplers: round trips, a kernel sampling an image checked against
NumPy, and every misuse raising a named error (wrong dtype or shape, too large, after release,
wrong kernel argument types, unknown sampler modes)."""

from __future__ import annotations

import numpy as np
import pytest

import pyclperf
from pyclperf import _core

SAMPLE = """
__kernel void sample(__global float* out, __read_only image2d_t img, sampler_t s,
                     const int w, const float dx, const float dy) {
    const int i = get_global_id(0), j = get_global_id(1);
    out[j * w + i] = read_imagef(img, s, (float2)(i + dx, j + dy)).x;
}
__kernel void sample4(__global float4* out, __read_only image2d_t img, sampler_t s, const int w) {
    const int i = get_global_id(0), j = get_global_id(1);
    out[j * w + i] = read_imagef(img, s, (int2)(i, j)).wzyx;
}
__kernel void plain(__global float* out, const float v) { out[get_global_id(0)] = v; }
"""


@pytest.fixture(scope="module")
def program(ctx):
    if not ctx.info.image_support:
        pytest.skip("device has no image support")
    return ctx.program(SAMPLE)


@pytest.fixture
def images(ctx):
    if not ctx.info.image_support:
        pytest.skip("device has no image support")


def test_device_reports_image_limits(ctx):
    info = ctx.info
    if info.image_support:
        assert info.image2d_max_width >= 2048 and info.image2d_max_height >= 2048
    else:
        assert info.image2d_max_width == info.image2d_max_height == 0


@pytest.mark.usefixtures("images")
@pytest.mark.parametrize("shape", [(37, 53), (8, 16, 4)], ids=["r", "rgba"])
def test_round_trip(ctx, rng, shape):
    data = rng.standard_normal(shape).astype(np.float32)
    img = ctx.to_image(data)
    assert (img.height, img.width) == shape[:2] and img.shape == shape
    assert img.channels == (4 if len(shape) == 3 else 1)
    assert img.nbytes == data.nbytes
    assert np.array_equal(ctx.from_image(img), data)
    assert "float x" in repr(img)


@pytest.mark.usefixtures("images")
@pytest.mark.parametrize("shape", [(37, 53), (8, 16, 4)], ids=["r", "rgba"])
def test_half_images_round_trip(ctx, rng, shape):
    # CL_HALF_FLOAT (Quasar 9.4): float16 texels, half the bytes of a float image.
    data = rng.standard_normal(shape).astype(np.float16)
    img = ctx.to_image(data)
    assert img.half and img.shape == shape and img.nbytes == data.nbytes == ctx.image(
        shape[1], shape[0], img.channels).nbytes // 2
    back = ctx.from_image(img)
    assert back.dtype == np.float16 and np.array_equal(back, data)
    assert "half x" in repr(img)
    with pytest.raises(pyclperf.InvalidArgumentError, match="float16 texels, got dtype float32"):
        img.write(data.astype(np.float32))


@pytest.mark.usefixtures("images")
def test_wrong_dtype_and_shape_are_refused(ctx):
    img = ctx.image(16, 8)
    with pytest.raises(pyclperf.InvalidArgumentError, match="float32 texels, got dtype float64"):
        img.write(np.zeros((8, 16)))
    with pytest.raises(pyclperf.InvalidArgumentError, match=r"shape \(16, 8\) does not match .*\(8, 16\)"):
        img.write(np.zeros((16, 8), np.float32))
    with pytest.raises(pyclperf.InvalidArgumentError, match="C-contiguous"):
        img.write(np.zeros((8, 32), np.float32)[:, ::2])
    with pytest.raises(pyclperf.InvalidArgumentError, match="does not match"):
        img.read(np.empty((8, 16, 4), np.float32))
    with pytest.raises(pyclperf.InvalidArgumentError, match="read-only"):
        dst = np.empty((8, 16), np.float32)
        dst.setflags(write=False)
        img.read(dst)
    with pytest.raises(pyclperf.InvalidArgumentError, match="float32"):
        ctx.to_image(np.zeros((4, 4), np.int32))
    with pytest.raises(pyclperf.InvalidArgumentError, match=r"\(height, width, 4\)"):
        ctx.to_image(np.zeros((4, 4, 3), np.float32))
    with pytest.raises(pyclperf.InvalidArgumentError, match="channels must be 1"):
        ctx.image(4, 4, channels=2)


@pytest.mark.usefixtures("images")
def test_too_large_or_empty_images_are_refused(ctx):
    info = ctx.info
    with pytest.raises(pyclperf.InvalidArgumentError, match="CL_DEVICE_IMAGE2D_MAX_WIDTH"):
        ctx.image(info.image2d_max_width + 1, 1)
    with pytest.raises(pyclperf.InvalidArgumentError, match="CL_DEVICE_IMAGE2D_MAX_HEIGHT"):
        ctx.image(1, info.image2d_max_height + 1)
    with pytest.raises(pyclperf.InvalidArgumentError, match="width must be positive"):
        ctx.image(0, 4)


@pytest.mark.usefixtures("images")
def test_use_after_release_raises(ctx, program):
    img = ctx.to_image(np.ones((4, 8), np.float32))
    out = ctx.buffer(32 * 4)
    k = program.kernel("sample").set_args(out, img, ctx.sampler(), np.int32(8), 0.5, 0.5)
    img.release()
    img.release()  # idempotent
    assert img.released and "released" in repr(img)
    with pytest.raises(pyclperf.ReleasedError, match="released"):
        img.write(np.ones((4, 8), np.float32))
    with pytest.raises(pyclperf.ReleasedError):
        img.read(np.empty((4, 8), np.float32))
    with pytest.raises(pyclperf.ReleasedError, match="'img'.* released image"):
        k.run((8, 4))
    with pytest.raises(pyclperf.ReleasedError):
        k.set_arg(1, img)


@pytest.mark.usefixtures("images")
def test_sampler_names_are_validated(ctx):
    s = ctx.sampler(normalized=True, addressing="mirrored_repeat", filter="linear")
    assert (s.normalized, s.addressing, s.filter) == (True, "mirrored_repeat", "linear")
    assert set(pyclperf.Sampler.addressing_modes) == {
        "none", "clamp_to_edge", "clamp", "repeat", "mirrored_repeat"}
    assert pyclperf.Sampler.filter_modes == ["nearest", "linear"]
    with pytest.raises(pyclperf.InvalidArgumentError, match="unknown sampler addressing 'wrap'; valid: none"):
        ctx.sampler(addressing="wrap")
    with pytest.raises(pyclperf.InvalidArgumentError, match="unknown sampler filter 'cubic'"):
        ctx.sampler(filter="cubic")
    with pytest.raises(pyclperf.InvalidArgumentError, match="needs normalized coordinates"):
        ctx.sampler(normalized=False, addressing="repeat")


def _sampled(img: np.ndarray, x: np.ndarray, y: np.ndarray, linear: bool) -> np.ndarray:
    """What a clamp_to_edge sampler returns at texel coordinates (x, y), in float64."""
    h, w = img.shape
    if not linear:
        i = np.clip(np.floor(x).astype(int), 0, w - 1)
        j = np.clip(np.floor(y).astype(int), 0, h - 1)
        return img[np.ix_(j, i)].astype(np.float64)
    i0, j0 = np.floor(x - 0.5).astype(int), np.floor(y - 0.5).astype(int)
    a, b = np.meshgrid((x - 0.5) - i0, (y - 0.5) - j0)
    i1, j1 = np.clip(i0 + 1, 0, w - 1), np.clip(j0 + 1, 0, h - 1)
    i0, j0 = np.clip(i0, 0, w - 1), np.clip(j0, 0, h - 1)
    t = img.astype(np.float64)
    return ((1 - a) * (1 - b) * t[np.ix_(j0, i0)] + a * (1 - b) * t[np.ix_(j0, i1)]
            + (1 - a) * b * t[np.ix_(j1, i0)] + a * b * t[np.ix_(j1, i1)])


@pytest.mark.parametrize("filt", ["nearest", "linear"])
def test_a_kernel_samples_the_image_like_numpy(ctx, program, rng, filt):
    h, w = 12, 20
    data = rng.random((h, w), dtype=np.float32)
    out = ctx.buffer(h * w * 4)
    dx, dy = 0.75, 0.25  # a quarter-texel shift: the linear weights are exact in 8 bits
    k = program.kernel("sample").set_args(out, ctx.to_image(data), ctx.sampler(filter=filt),
                                          np.int32(w), dx, dy)
    k.run((w, h))
    got = ctx.from_device(out, np.float32, (h, w))
    want = _sampled(data, np.arange(w) + dx, np.arange(h) + dy, filt == "linear")
    # Nearest returns texels unchanged; linear allows the hardware's 8-bit weights (1/256).
    tol = 0.0 if filt == "nearest" else 2 / 256
    assert np.abs(got - want).max() <= tol + 1e-6


def test_rgba_channels_reach_the_kernel(ctx, program, rng):
    h, w = 4, 8
    data = rng.random((h, w, 4), dtype=np.float32)
    out = ctx.buffer(h * w * 16)
    program.kernel("sample4").set_args(out, ctx.to_image(data), ctx.sampler(), np.int32(w)).run((w, h))
    assert np.array_equal(ctx.from_device(out, np.float32, (h, w, 4)), data[..., ::-1])


def test_wrong_kernel_argument_types_name_the_argument(ctx, program):
    img = ctx.image(8, 4)
    smp = ctx.sampler()
    buf = ctx.buffer(128)
    k = program.kernel("sample")
    with pytest.raises(pyclperf.InvalidArgumentError, match=r"argument 1 \('img', image2d_t\).*takes a Image"):
        k.set_arg(1, buf)
    with pytest.raises(pyclperf.InvalidArgumentError, match=r"argument 2 \('s', sampler_t\).*takes a Sampler"):
        k.set_arg(2, 0)
    with pytest.raises(pyclperf.InvalidArgumentError, match="'out'.*is not an image2d_t"):
        k.set_arg(0, img)
    with pytest.raises(pyclperf.InvalidArgumentError, match="'w'.*is not a sampler_t"):
        k.set_arg(3, smp)
    # The core refuses too, when called directly.
    with pytest.raises(pyclperf.InvalidArgumentError, match="'img'.*is an image: pass an Image"):
        k.set_buffer(1, buf)
    with pytest.raises(pyclperf.InvalidArgumentError, match="'s'.*is a sampler"):
        k.set_scalar(2, np.int32(0))
    plain = program.kernel("plain")
    with pytest.raises(pyclperf.InvalidArgumentError, match="not an image2d_t"):
        plain.set_image(0, img)
    # An argument set to an image and then re-set to a buffer keeps no stale image.
    k.set_args(buf, img, smp, np.int32(8), 0.0, 0.0)
    img.release()
    with pytest.raises(pyclperf.ReleasedError):
        k.check_ready()
    k.set_arg(1, ctx.image(8, 4))
    k.check_ready()


def test_images_of_another_context_are_refused(ctx, program):
    other = pyclperf.Context(f"{ctx.info.platform_index}:{ctx.info.device_index}")
    k = program.kernel("sample")
    with pytest.raises(pyclperf.InvalidArgumentError, match="another context"):
        k.set_image(1, other.image(4, 4))
    with pytest.raises(pyclperf.InvalidArgumentError, match="another context"):
        k.set_sampler(2, other.sampler())


def test_no_image_support_is_a_clear_error(ctx, monkeypatch):
    """On a device without images, creating one says so (checked on whatever device runs)."""
    if ctx.info.image_support:
        pytest.skip("device has image support; the message is covered by the core's check")
    with pytest.raises(pyclperf.InvalidArgumentError, match="needs image support"):
        ctx.image(4, 4)
    with pytest.raises(pyclperf.InvalidArgumentError, match="needs image support"):
        ctx.sampler()
    assert _core.Image is pyclperf.Image
