"""Programs, kernel arguments, launch validation and the C++ timing loops."""

import numpy as np
import pytest

import pyclperf

SRC = """
__kernel void add(__global float* out, __global const float* a, __global const float* b,
                  const int n) {
    const int i = get_global_id(0);
    if (i < n) out[i] = a[i] + b[i] + BIAS;
}
__kernel void with_local(__global float* out, __local float* tmp) {
    tmp[get_local_id(0)] = (float)get_global_id(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = tmp[get_local_size(0) - 1 - get_local_id(0)];
}
"""


@pytest.fixture(scope="module")
def prog(ctx):
    return ctx.program(SRC, defines={"BIAS": 0.5})


def test_defines_reach_the_kernel(ctx, prog, rng):
    n = 1000
    a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    out = ctx.buffer(4 * n)
    out.fill(np.array([np.nan], np.float32))
    k = prog.kernel("add").set_args(out, ctx.to_device(a), ctx.to_device(b), n)
    k.run(1024, 64)
    np.testing.assert_allclose(ctx.from_device(out, np.float32), a + b + np.float32(0.5), rtol=1e-6)
    assert "-D BIAS=0.5f" in prog.options


def test_program_builds_are_cached(ctx, prog):
    assert ctx.program(SRC, defines={"BIAS": 0.5}) is prog
    assert ctx.program(SRC, defines={"BIAS": 1.5}) is not prog


def test_syntax_error_carries_log_and_options(ctx):
    with pytest.raises(pyclperf.BuildError) as info:
        ctx.program("__kernel void broken(__global float* x) { x[0] = ; }", options="-Werror")
    err = info.value
    assert err.name == "CL_BUILD_PROGRAM_FAILURE" and err.call == "clBuildProgram"
    assert "error" in err.log.lower() and "-Werror" in err.options
    assert "build log" in str(err)


@pytest.mark.parametrize("source", ["", "   \n"])
def test_empty_source(ctx, source):
    with pytest.raises(pyclperf.InvalidArgumentError, match="empty"):
        ctx.program(source)


def test_bad_define_name(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="not a C identifier"):
        ctx.program(SRC, defines={"1BAD": 1})


def test_unknown_kernel_lists_the_known_ones(prog):
    with pytest.raises(pyclperf.InvalidArgumentError, match="add, with_local|with_local, add"):
        prog.kernel("nope")


def test_argument_count_and_kinds(ctx, prog):
    k = prog.kernel("add")
    buf = ctx.buffer(64)
    with pytest.raises(TypeError, match="takes 4 argument"):
        k.set_args(buf, buf)
    with pytest.raises(pyclperf.InvalidArgumentError, match="is a pointer, but a scalar"):
        k.set_arg(0, np.float32(1))
    with pytest.raises(pyclperf.InvalidArgumentError, match="not a global or constant pointer"):
        k.set_arg(3, buf)
    with pytest.raises(TypeError, match="pass a Buffer"):
        k.set_arg(1, np.zeros(16, np.float32))
    with pytest.raises(pyclperf.InvalidArgumentError, match="CL_INVALID_ARG_SIZE"):
        k.set_arg(3, np.int64(5))
    with pytest.raises(pyclperf.InvalidArgumentError, match="does not fit"):
        k.set_arg(3, 2**40)
    with pytest.raises(TypeError, match="cannot pass str"):
        k.set_arg(3, "5")
    with pytest.raises(pyclperf.InvalidArgumentError, match="out of range"):
        k.set_buffer(7, buf)


def test_unset_arguments_are_named(prog):
    k = prog.kernel("add")
    with pytest.raises(pyclperf.InvalidArgumentError, match="unset argument.*'out'"):
        k.run(64, 64)


@pytest.mark.parametrize(
    "global_size, local_size, message",
    [
        (100, 64, "does not divide"),
        (0, None, "has a zero"),
        ((64, 64, 64, 64), None, "dimensions"),
        ((64, 64), (64,), "differ in dimensions"),
    ],
)
def test_impossible_launches_are_refused_before_enqueue(ctx, prog, global_size, local_size, message):
    k = prog.kernel("add")
    buf = ctx.buffer(4096)
    k.set_args(buf, buf, buf, 1)
    with pytest.raises(pyclperf.InvalidArgumentError, match=message):
        k.run(global_size, local_size)


@pytest.mark.parametrize("local_size", [None, (1, 1, 1)])
def test_more_work_groups_than_pocl_can_count_is_refused_not_a_crash(ctx, prog, local_size):
    """4999^3 work-items in groups of one: PoCL 3.1's scheduler asserts (aborting the process)
    past 2^32 work-groups, a case Hypothesis found in tests/test_properties.py."""
    if "portable computing language" not in ctx.info.platform_name.lower():
        pytest.skip(f"the limit is PoCL's; this platform is {ctx.info.platform_name}")
    k = prog.kernel("add")
    buf = ctx.buffer(4096)
    k.set_args(buf, buf, buf, 1)
    with pytest.raises(pyclperf.InvalidArgumentError, match="over 2.32 work-groups"):
        k.run((4999, 4999, 4999), local_size)


def test_work_group_over_the_device_limit(ctx, prog):
    k = prog.kernel("add")
    buf = ctx.buffer(4096)
    k.set_args(buf, buf, buf, 1)
    too_big = ctx.info.max_work_item_sizes[0] * 2
    with pytest.raises(pyclperf.InvalidArgumentError, match="CL_DEVICE_MAX_WORK_ITEM_SIZES"):
        k.run(too_big, too_big)


def test_local_memory_argument(ctx, prog):
    k = prog.kernel("with_local")
    out = ctx.buffer(4 * 256)
    k.set_args(out, pyclperf.LocalMemory(4 * 64))
    k.run(256, 64)
    got = ctx.from_device(out, np.float32)
    want = np.concatenate([np.arange(g * 64, g * 64 + 64)[::-1] for g in range(4)]).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    with pytest.raises(pyclperf.InvalidArgumentError, match="CL_DEVICE_LOCAL_MEM_SIZE"):
        k.set_arg(1, pyclperf.LocalMemory(ctx.info.local_mem_bytes + 1))
    with pytest.raises(pyclperf.InvalidArgumentError, match="not a __local pointer"):
        k.set_local(0, 64)


def test_released_argument_is_caught_at_launch(ctx, prog):
    k = prog.kernel("add")
    a = ctx.buffer(4096)
    k.set_args(a, a, a, 1)
    a.release()
    with pytest.raises(pyclperf.ReleasedError, match="argument 0"):
        k.run(64, 64)


def test_event_and_host_timing(ctx, prog):
    k = prog.kernel("add")
    buf = ctx.buffer(4 * 4096)
    k.set_args(buf, buf, buf, 4096)
    ev = k.time(4096, 64, warmup=1, repeats=7, method="events")
    host = k.time(4096, 64, warmup=1, repeats=5, method="host")
    assert ev.shape == (7,) and np.all(ev > 0)
    assert host.shape == (5,) and np.all(host > 0)
    raw = pyclperf._core.time_events(k, [4096], [64], 0, 3)
    assert raw.shape == (3, 4) and raw.dtype == np.uint64
    queued, submit, start, end = raw.T
    assert np.all(queued <= submit) and np.all(submit <= start) and np.all(start <= end)
    with pytest.raises(pyclperf.InvalidArgumentError, match="repeats"):
        k.time(4096, 64, repeats=0)
    with pytest.raises(pyclperf.InvalidArgumentError, match="method"):
        k.time(4096, 64, method="stopwatch")


def test_local_memory_use_is_the_drivers_to_refuse(ctx):
    """CL_KERNEL_LOCAL_MEM_SIZE is not pyclperf's to enforce: a driver may report more than a
    kernel uses (34,816 bytes for 17,408 was seen) and run it. A kernel asking for the device's
    whole local memory plus a static array passes the launch check; what the driver then says
    is the answer (it runs, or ClError such as CL_OUT_OF_RESOURCES), never pyclperf's own
    refusal."""
    src = """__kernel void big(__global float* out, __local float* table) {
        __local float extra[16];
        const int lid = get_local_id(0);
        table[lid] = (float)lid; extra[lid % 16] = 1.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        out[get_global_id(0)] = table[lid] + extra[lid % 16];
    }"""
    k = ctx.program(source=src).kernel("big")
    out = ctx.buffer(4 * 64)
    k.set_args(out, pyclperf.LocalMemory(ctx.info.local_mem_bytes))
    pyclperf._core.validate_launch(k, [64], [64])   # no refusal of pyclperf's own
    try:
        k.run(64, 64)
    except pyclperf.ClError:
        pass                                       # the driver's refusal, in its own words


def test_a_device_limit_is_its_own_error_type(ctx, prog):
    """Beyond what the device reports is DeviceLimitError (still an InvalidArgumentError): a
    sweep reads the type, not the message, to call such a point skipped."""
    k = prog.kernel("add")
    too_big = ctx.info.max_work_group_size * 2
    with pytest.raises(pyclperf.DeviceLimitError, match="exceeds the device's limit"):
        pyclperf._core.validate_launch(k, [too_big], [too_big])
    assert issubclass(pyclperf.DeviceLimitError, pyclperf.InvalidArgumentError)
    with pytest.raises(pyclperf.InvalidArgumentError) as not_a_limit:
        pyclperf._core.validate_launch(k, [100], [64])   # 64 does not divide 100: no limit
    assert not isinstance(not_a_limit.value, pyclperf.DeviceLimitError)
