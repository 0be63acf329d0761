"""Bring your own kernel, safely: what used to crash the interpreter or launch the wrong shape.

Each crash of the first report is reproduced here: an object array, a kernel with no bounds
check on a ragged size, a TYPE parameter with arrays of the other type. A deliberate write past
an array's end is a row status, and the process lives on.
"""

import numpy as np
import pytest

import pyclperf
from pyclperf import LocalMemory, run_kernel, tune
from pyclperf.tuner.options import from_flat

FAST = dict(min_time=0.0, min_repeats=2, max_repeats=2, warmup=1)

# No bounds check, as BabelStream writes its kernels (see test_third_party.py).
COPY = """__kernel void copy(__global const float* a, __global float* c) {
    const size_t i = get_global_id(0); c[i] = a[i]; }"""
TYPED = """__kernel void scale(__global TYPE* y, __global const TYPE* x, const int n) {
    const int i = get_global_id(0); if (i < n) y[i] = (TYPE)2 * x[i]; }"""


def test_object_array_is_refused_before_the_device(ctx):
    objects = np.array([object()] * 16, dtype=object)
    with pytest.raises(TypeError, match="object.*numeric NumPy array"):
        run_kernel(COPY, "copy", 16, [objects, np.zeros(16, np.float32)], ctx=ctx)
    with pytest.raises(TypeError, match="object"):
        tune(COPY, "copy", 16, [objects, np.zeros(16, np.float32)], {"block_size_x": [16]}, ctx=ctx)
    with pytest.raises(TypeError, match="object"):
        ctx.to_device(objects)
    with pytest.raises(pyclperf.InvalidArgumentError, match="no plain numbers"):
        ctx.buffer(128).write(objects)


def test_unbounded_kernel_on_a_ragged_size_is_out_of_bounds_not_a_crash(ctx, rng):
    n = 1_000_000  # the first report's stream copy: 256 does not divide it, 64 does
    a = rng.standard_normal(n).astype(np.float32)
    res = tune(
        COPY,
        "copy",
        n,
        [a, np.empty_like(a)],
        {"block_size_x": [64, 256]},
        **from_flat(dict(ctx=ctx, answer=[None, a], **FAST)),
    )
    by = {r["block_size_x"]: r for r in res.rows}
    assert by[64]["status"] == "ok", by[64]["error"]
    assert by[256]["status"] == "out of bounds"
    assert "argument 1 ('c')" in by[256]["error"] and "past the end" in by[256]["error"]
    assert by[256]["global_size"] == "(1000192,)"
    # The driver's own choice of work-group (no block size, as BabelStream launches) is exact.
    c = run_kernel(COPY, "copy", n, [a, np.empty_like(a)], ctx=ctx)[1]
    np.testing.assert_array_equal(c, a)


def test_deliberate_out_of_bounds_write_is_reported_and_process_lives(ctx):
    src = """__kernel void oob(__global float* out, const int n) {
        const int i = get_global_id(0); out[i] = 1.0f; if (i == 0) out[n + 100] = 2.0f; }"""
    res = tune(
        src,
        "oob",
        256,
        [np.zeros(256, np.float32), 256],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, answer=[np.ones(256, np.float32), None], **FAST)),
    )
    row = res.rows[0]
    assert row["status"] == "out of bounds" and "'out'" in row["error"]
    assert "101 elements past the end (element 356 changed; 1 element in all)" in row["error"]
    with pytest.raises(pyclperf.KernelRunError, match="out of bounds.*'out'") as info:
        run_kernel(src, "oob", 256, [np.zeros(256, np.float32), 256], {"block_size_x": 64}, ctx=ctx)
    assert info.value.status == "out of bounds"
    # Still alive, and the context still works.
    np.testing.assert_array_equal(run_kernel(COPY, "copy", 8, [np.ones(8, np.float32),
                                                               np.zeros(8, np.float32)], ctx=ctx)[1], 1)


def test_type_parameter_with_mismatched_arrays_is_invalid_not_an_abort(ctx, rng):
    x = rng.standard_normal(1000).astype(np.float32)
    res = tune(
        TYPED,
        "scale",
        1000,
        [np.empty_like(x), x, 1000],
        {"TYPE": ["float", "double"], "block_size_x": [64]},
        **from_flat(dict(ctx=ctx, answer=[2 * x, None, None], **FAST)),
    )
    by = {r["TYPE"]: r for r in res.rows}
    assert by["float"]["status"] == "ok"
    assert by["double"]["status"] == "invalid"
    assert "holds double, but the array is float32" in by["double"]["error"]


def test_arguments_as_callables_of_the_configuration(ctx, rng):
    x64 = rng.standard_normal(1000)
    dtype = {"float": np.float32, "double": np.float64}
    args = [lambda c: np.empty(1000, dtype[c["TYPE"]]), lambda c: x64.astype(dtype[c["TYPE"]]), 1000]
    res = tune(
        TYPED,
        "scale",
        1000,
        args,
        {"TYPE": ["float", "double"], "block_size_x": [64]},
        **from_flat(dict(ctx=ctx, reference=lambda c, y, x, n: [2 * x, None, None], **FAST)),
    )
    assert [r["status"] for r in res.rows] == ["ok", "ok"], [r["error"] for r in res.rows]


@pytest.mark.parametrize("dtype, needle", [(np.float64, "holds float, but the array is float64"),
                                           (np.int32, "holds float, but the array is int32")])
def test_array_dtype_checked_against_the_declared_pointer(ctx, dtype, needle):
    res = tune(
        COPY,
        "copy",
        64,
        [np.ones(64, dtype), np.zeros(64, np.float32)],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, **FAST)),
    )
    assert res.rows[0]["status"] == "invalid" and needle in res.rows[0]["error"]


def test_scalar_and_local_arguments_checked(ctx):
    src = """__kernel void k(__global float* y, const float a, __local float* s) {
        s[get_local_id(0)] = a; barrier(CLK_LOCAL_MEM_FENCE); y[get_global_id(0)] = s[0]; }"""
    ok = tune(
        src,
        "k",
        64,
        [np.zeros(64, np.float32), 3.0, LocalMemory(256)],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, answer=[np.full(64, 3, np.float32), None, None], **FAST)),
    )
    assert ok.rows[0]["status"] == "ok", ok.rows[0]["error"]
    bad = tune(
        src,
        "k",
        64,
        [np.zeros(64, np.float32), np.int32(3), LocalMemory(256)],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, **FAST)),
    )
    assert bad.rows[0]["status"] == "invalid" and "takes one float" in bad.rows[0]["error"]
    arr = tune(
        src,
        "k",
        64,
        [np.zeros(64, np.float32), 3.0, np.zeros(64, np.float32)],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, **FAST)),
    )
    assert "__local pointer: pass LocalMemory" in arr.rows[0]["error"]


def test_block_size_y_alone_is_the_second_dimension(ctx):
    src = """__kernel void k(__global int* out, const int w) {
        out[get_global_id(1) * w + get_global_id(0)] = get_local_size(0) * 100 + get_local_size(1); }"""
    w, h = 8, 16
    res = tune(
        src,
        "k",
        (w, h),
        [np.zeros(w * h, np.int32), w],
        {"block_size_y": [4]},
        **from_flat(dict(ctx=ctx, answer=[np.full(w * h, 104, np.int32), None], **FAST)),
    )
    assert res.rows[0]["local_size"] == "(1, 4)" and res.rows[0]["status"] == "ok", res.rows[0]["error"]


def test_every_user_callable_fails_safely(ctx, rng):
    x = rng.standard_normal(256).astype(np.float32)
    params = {"block_size_x": [32, 64]}

    def boom(c):
        if c["block_size_x"] == 64:
            raise RuntimeError("boom in the user's code")
        return True

    cases = {
        "restriction 0": dict(restrictions=[boom]),
        "global_size": dict(global_size=lambda c: [256] if boom(c) else []),
        "metric 'x'": dict(metrics={"x": lambda c, s: 1 / 0 if c["block_size_x"] == 64 else 1.0}),
        "verify": dict(verify=lambda c, out: boom(c)),
        "argument 0": dict(args=[lambda c: x if boom(c) else x, np.zeros(256, np.float32)]),
    }
    for what, extra in cases.items():
        args = extra.pop("args", [x, np.zeros(256, np.float32)])
        res = tune(COPY, "copy", 256, args, params, **from_flat(dict(ctx=ctx, **extra, **FAST)))
        by = {r["block_size_x"]: r for r in res.rows}
        assert by[32]["status"] in ("ok", "timed"), (what, by[32]["error"])
        assert by[64]["status"] == "invalid", what
        assert what.split(" (")[0] in by[64]["error"] and ("boom" in by[64]["error"]
                                                           or "division" in by[64]["error"]), by[64]


def test_launch_over_the_kernels_reported_size_is_tried(ctx, monkeypatch):
    """CL_KERNEL_WORK_GROUP_SIZE is recorded, not enforced (NVIDIA reports 256 and runs 1024)."""
    real_limits = pyclperf.Kernel.limits

    class Small:
        def __init__(self, real):
            self.__dict__.update({k: getattr(real, k) for k in ("preferred_multiple", "local_mem_bytes",
                                                                 "private_mem_bytes", "compile_work_group_size")})
            self.work_group_size = 16

    monkeypatch.setattr(pyclperf.Kernel, "limits", lambda self: Small(real_limits(self)))
    a = np.arange(256, dtype=np.float32)
    res = tune(
        COPY,
        "copy",
        256,
        [a, np.zeros_like(a)],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, answer=[None, a], isolate=False, **FAST)),
    )  # the patch holds in this process only
    assert res.rows[0]["status"] == "ok" and res.rows[0]["kernel_work_group_size"] == 16


def test_interrupt_keeps_finished_rows(ctx, tmp_path, rng):
    x = rng.standard_normal(256).astype(np.float32)
    calls = []

    def metric(c, s):
        calls.append(c)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return 1.0

    out = tmp_path / "k.jsonl"
    res = tune(
        COPY,
        "copy",
        256,
        [x, np.zeros_like(x)],
        {"block_size_x": [16, 32, 64]},
        **from_flat(dict(ctx=ctx, metrics={"m": metric}, out=out, **FAST)),
    )
    # The first finished (nothing to verify it against: timed); the second's row says the run
    # stopped while it ran.
    assert res.meta.get("interrupted") and [r["status"] for r in res.rows] == ["timed", "stopped"]
    assert [r["status"] for r in pyclperf.Results.load(out).rows] == ["timed", "stopped"]
