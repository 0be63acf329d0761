"""Property-based tests: any input to the public API either runs and verifies, or raises a
pyclperf/Python exception naming the problem. Nothing crashes or hangs."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyclperf
from pyclperf.experiments.offset import OffsetCopy
from pyclperf.experiments.stride import StrideCopy

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
EXPECTED = (pyclperf.PyclperfError, ValueError, TypeError, OverflowError)

SCALE = """__kernel void scale(__global float* y, __global const float* x, const float k, const int n) {
    const int i = get_global_id(0);
    if (i < n) y[i] = k * x[i];
}"""


@SETTINGS
@given(items=st.integers(-10, 1 << 14), local=st.integers(-4, 2048),
       offsets=st.lists(st.integers(-3, 40), min_size=0, max_size=3))
def test_offset_experiment_inputs(ctx, items, local, offsets):
    try:
        exp = OffsetCopy(ctx, items=items, local_size=local, values=offsets)
    except EXPECTED as exc:
        assert str(exc)
        return
    for v in offsets:
        # Only the device's limits bound the work-group size (a kernel's reported
        # CL_KERNEL_WORK_GROUP_SIZE does not): every size up to the device's maximum must verify.
        if local <= ctx.info.max_work_group_size:
            check = exp.verify({"offset": v})
            assert check.passed, check.detail


@SETTINGS
@given(items=st.sampled_from([256, 512, 1024, 3072]), strides=st.lists(st.integers(-2, 70), min_size=1, max_size=2))
def test_stride_experiment_inputs(ctx, items, strides):
    try:
        exp = StrideCopy(ctx, items=items, local_size=64, values=strides)
    except EXPECTED as exc:
        assert str(exc)
        return
    for v in strides:
        assert exp.verify({"stride": v}).passed


@SETTINGS
@given(global_size=st.lists(st.integers(-2, 5000), min_size=0, max_size=4),
       local_size=st.one_of(st.none(), st.lists(st.integers(-2, 5000), min_size=0, max_size=4)))
def test_launch_geometry(ctx, global_size, local_size):
    n = 4096
    k = ctx.program(SCALE).kernel("scale")
    x = ctx.to_device(np.arange(n, dtype=np.float32))
    y = ctx.buffer(4 * n)
    k.set_args(y, x, 2.0, n)
    try:
        k.run(global_size, local_size)
    except EXPECTED as exc:
        assert str(exc)
        return
    got = ctx.from_device(y, np.float32)
    covered = min(n, int(np.prod(global_size)) if len(global_size) == 1 else n)
    if len(global_size) == 1:
        np.testing.assert_array_equal(got[:covered], 2 * np.arange(covered, dtype=np.float32))


scalars = st.one_of(
    st.integers(-(2**70), 2**70), st.floats(allow_nan=True), st.booleans(), st.text(max_size=3),
    st.none(), st.sampled_from([np.int8(1), np.int32(7), np.int64(7), np.float32(1.5), np.float64(2.5),
                                np.zeros(3, np.float32), np.zeros((2, 2), np.int32)]))


@SETTINGS
@given(args=st.lists(scalars, min_size=0, max_size=6))
def test_argument_values_and_counts(ctx, args):
    k = ctx.program(SCALE).kernel("scale")
    try:
        k.set_args(*args)
    except EXPECTED as exc:
        assert str(exc)


@SETTINGS
@given(options=st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=20),
       define=st.text(alphabet="ABCxyz_019 -=", min_size=1, max_size=6))
def test_build_options_and_defines(ctx, options, define):
    try:
        ctx.program(SCALE, defines={define: 1}, options=options, cache=False)
    except EXPECTED as exc:
        assert str(exc)


@SETTINGS
@given(nbytes=st.integers(-5, 1 << 20), dtype=st.sampled_from(["uint8", "float32", "float64", "int16", "V3"]),
       shape=st.one_of(st.none(), st.lists(st.integers(-1, 300), max_size=3)))
def test_pinned_views(ctx, nbytes, dtype, shape):
    try:
        buf = pyclperf.PinnedBuffer(ctx, nbytes)
        view = buf.array(dtype, shape)
    except EXPECTED as exc:
        assert str(exc)
        return
    if view.size:
        view.reshape(-1).view(np.uint8)[:] = 7
    assert buf.views == 1
