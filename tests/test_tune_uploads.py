"""tune() does each piece of host work once: the first configuration's argument callables are
called once, an input no kernel can write is uploaded once, and an output about to be poisoned
is not uploaded at all; yet an input a kernel could have written is uploaded again."""

import numpy as np
import pytest

from pyclperf import tune
from pyclperf.tuner.arguments import Arguments
from pyclperf.tuner.options import from_flat

# These tests count what happens inside this process (uploads, callable calls): they run the
# sweep here (isolate=False), where monkeypatches and counters can see it.
FAST = dict(min_time=0.0, min_repeats=2, max_repeats=2, warmup=0, isolate=False)

SCALE = """__kernel void scale(__global float* y, __global const float* x) {
    const int i = get_global_id(0); y[i] = 2.0f * x[i]; }"""
# With CLOBBER the input is writable and the kernel scribbles on it after reading it.
MAYBE_CLOBBER = """
#if CLOBBER
#define INPUT __global float*
#else
#define INPUT __global const float*
#endif
__kernel void scale(__global float* y, INPUT x) {
    const int i = get_global_id(0);
    y[i] = 2.0f * x[i];
#if CLOBBER
    x[i] = -1.0f;
#endif
}"""


@pytest.fixture
def uploads(monkeypatch):
    """Counts Arguments.upload calls per argument index."""
    counts: dict[int, int] = {}
    real = Arguments.upload

    def counting(self, index):
        counts[index] = counts.get(index, 0) + 1
        return real(self, index)

    monkeypatch.setattr(Arguments, "upload", counting)
    return counts


def test_first_configuration_resolves_its_arguments_once(ctx, rng):
    x = rng.standard_normal(256).astype(np.float32)
    calls: list[int] = []

    def make_x(config):
        calls.append(config["block_size_x"])
        return x

    res = tune(
        SCALE,
        "scale",
        256,
        [np.empty_like(x), make_x],
        {"block_size_x": [32, 64]},
        **from_flat(dict(ctx=ctx, answer=[2 * x, None], **FAST)),
    )
    assert [r["status"] for r in res.rows] == ["ok", "ok"]
    assert calls == [32, 64]  # not [32, 32, 64]: the harness check's values are reused


def test_a_const_input_is_uploaded_once_and_poisoned_outputs_never(ctx, rng, uploads):
    x = rng.standard_normal(256).astype(np.float32)
    res = tune(
        SCALE,
        "scale",
        256,
        [np.empty_like(x), x],
        {"block_size_x": [16, 32, 64]},
        **from_flat(dict(ctx=ctx, answer=[2 * x, None], **FAST)),
    )
    assert [r["status"] for r in res.rows] == ["ok"] * 3
    assert uploads.get(1) == 1 and uploads.get(0) is None


def test_an_input_a_kernel_could_write_is_uploaded_again(ctx, rng, uploads):
    x = rng.standard_normal(256).astype(np.float32)
    # CLOBBER=1 first: its kernel overwrites x on the device; CLOBBER=0 must see x again.
    res = tune(
        MAYBE_CLOBBER,
        "scale",
        256,
        [np.empty_like(x), x],
        {"block_size_x": [64], "CLOBBER": [1, 0]},
        **from_flat(dict(ctx=ctx, answer=[2 * x, None], **FAST)),
    )
    assert [r["status"] for r in res.rows] == ["ok", "ok"], [r["error"] for r in res.rows]
    assert uploads.get(1) == 2


def test_an_overrun_guard_is_clean_for_the_next_configuration(ctx, rng, uploads):
    """A configuration that overruns its (poisoned, not uploaded) output fails; the next one
    still finds its guard intact: poisoning writes the guard too."""
    src = """__kernel void scale(__global float* y, __global const float* x, const int over) {
        const int i = get_global_id(0); y[i] = 2.0f * x[i];
        if (over && i == 0) y[get_global_size(0)] = 0.0f; }"""
    x = rng.standard_normal(256).astype(np.float32)
    res = tune(
        src,
        "scale",
        256,
        [np.empty_like(x), x, lambda c: np.int32(c["OVER"])],
        {"block_size_x": [64], "OVER": [1, 0]},
        **from_flat(dict(ctx=ctx, answer=[2 * x, None, None], **FAST)),
    )
    statuses = [r["status"] for r in res.rows]
    assert statuses == ["out of bounds", "ok"], [r["error"] for r in res.rows]
