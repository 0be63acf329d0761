"""The low-level API (Context, Buffer, PinnedBuffer, Kernel, LocalMemory, Image) at its edges:
host memory that is no plain numbers, numbers in the other byte order, sizes that are no
integers, source text with a NUL, a launch whose arguments were only half replaced, and values
pybind11 alone would answer with its "incompatible function arguments" dump. Each was accepted
or crashed before; each now works or raises an exception naming the argument and the problem."""

from __future__ import annotations

import numpy as np
import pytest

import pyclperf
from pyclperf import Timing, Verify, LocalMemory, run_kernel

WRITE = """
__kernel void put_int(__global int* out, const int v) { out[get_global_id(0)] = v; }
__kernel void put_double(__global double* out, const double v) { out[get_global_id(0)] = v; }
__kernel void put_int2(__global int* out, const int2 v) { out[0] = v.x; out[1] = v.y; }
__kernel void scale(__global float* y, __global const float* x, const float k, const int n) {
    const int i = get_global_id(0);
    if (i < n) y[i] = k * x[i];
}
__kernel void with_local(__global float* out, __local float* tmp) {
    tmp[get_local_id(0)] = 1.0f; out[get_global_id(0)] = tmp[get_local_id(0)];
}
"""
# A struct of plain numbers, as a kernel would declare it (int then float, 8 bytes).
PAIR = np.dtype([("i", np.int32), ("f", np.float32)])
# What pybind11 prints when no overload matches: none of it may reach the user.
PYBIND_DUMP = ("incompatible", "Invoked with", "Unable to cast")


@pytest.fixture(scope="module")
def prog(ctx):
    return ctx.program(WRITE)


def _big(values, dtype):
    """values as an array in the other byte order than the host's."""
    return np.asarray(values, dtype=np.dtype(dtype).newbyteorder("S"))


# --- 1. host memory that is no plain numbers ---------------------------------------------------

NOT_PLAIN = [
    (object, "Python object pointers"),
    ("U4", "unicode text"),
    ("S4", "byte strings"),
    ("V8", "raw bytes"),
    ("M8[s]", "dates"),
    ([("a", np.int32), ("b", object)], "Python object pointers"),
]


@pytest.mark.parametrize("dtype, problem", NOT_PLAIN)
def test_pinned_refuses_dtypes_that_are_no_plain_numbers(ctx, dtype, problem):
    """ctx.pinned(16, object) handed out a view whose 'objects' were the device's bytes: printing
    it after a kernel wrote the buffer dereferenced them (segfault)."""
    with pytest.raises(pyclperf.InvalidArgumentError, match=f"{problem}.*no plain numbers"):
        ctx.pinned(16, dtype)
    buf = pyclperf.PinnedBuffer(ctx, 256)
    with pytest.raises(pyclperf.InvalidArgumentError, match=f"{problem}.*no plain numbers"):
        buf.array(dtype)
    assert buf.views == 0  # nothing was handed out
    buf.release()


def test_pinned_refuses_the_other_byte_order(ctx):
    other = np.dtype(np.float32).newbyteorder("S")
    with pytest.raises(pyclperf.InvalidArgumentError, match="byte order"):
        ctx.pinned(16, other)
    with pytest.raises(pyclperf.InvalidArgumentError, match="byte order"):
        pyclperf.PinnedBuffer(ctx, 64).array(np.dtype([("a", other)]))


def test_pinned_struct_of_numbers_sees_what_a_kernel_wrote(ctx, prog, rng):
    buf, view = ctx.pinned(8, PAIR)
    v = int(rng.integers(-2**31, 2**31))
    prog.kernel("put_int").set_args(buf, np.int32(v)).run(16)  # 16 ints = 8 pairs
    assert view.dtype == PAIR
    np.testing.assert_array_equal(view["i"], np.full(8, v, np.int32))
    np.testing.assert_array_equal(view["f"], np.full(8, v, np.int32).view(np.float32))


def test_transfers_refuse_dtypes_that_are_no_plain_numbers(ctx, prog):
    buf = ctx.buffer(64)
    with pytest.raises(pyclperf.InvalidArgumentError, match="unicode text"):
        buf.read(np.empty(4, "U4"))
    with pytest.raises(pyclperf.InvalidArgumentError, match="Python object pointers"):
        buf.write(np.zeros(2, [("a", np.int32), ("b", object)]))
    with pytest.raises(TypeError, match="Python object pointers"):
        ctx.to_device(np.zeros(2, [("a", np.float64), ("b", object)]))
    with pytest.raises(pyclperf.InvalidArgumentError, match="Python object pointers"):
        prog.kernel("put_int").set_arg(1, np.array(None, dtype=object))


# --- 2. numbers in the other byte order ---------------------------------------------------------

def test_big_endian_scalars_reach_the_kernel_as_their_values(ctx, prog, rng):
    out = ctx.buffer(8)
    k = prog.kernel("put_int")
    v = int(rng.integers(-2**31, 2**31))
    k.set_args(out, _big(v, np.int32)).run(1)  # was v's bytes reversed: 1024 read as 262144
    assert ctx.from_device(out, np.int32)[0] == v
    d = float(rng.standard_normal())
    prog.kernel("put_double").set_args(out, _big(d, np.float64)).run(1)
    assert ctx.from_device(out, np.float64)[0] == d
    pair = rng.integers(-2**31, 2**31, size=2).astype(np.int32)
    prog.kernel("put_int2").set_args(out, _big(pair, np.int32)).run(1)
    np.testing.assert_array_equal(ctx.from_device(out, np.int32), pair)


def test_to_device_and_read_back_in_either_byte_order(ctx, rng):
    x = rng.standard_normal(1000)
    buf = ctx.to_device(_big(x, np.float32))  # was garbage read back as float32
    np.testing.assert_array_equal(ctx.from_device(buf, np.float32), x.astype(np.float32))
    back = np.empty(1000, np.dtype(np.float32).newbyteorder("S"))
    buf.read(back)  # the numbers, not the device's bytes reinterpreted
    np.testing.assert_array_equal(back, x.astype(np.float32))
    np.testing.assert_array_equal(ctx.from_device(buf, back.dtype), x.astype(np.float32))


def test_buffer_write_read_and_fill_convert_the_other_byte_order(ctx, rng):
    x = rng.integers(-2**62, 2**62, size=64)
    buf = ctx.buffer(8 * 64)
    buf.write(_big(x[:32], np.int64))
    buf.write(x[32:], offset=8 * 32)
    np.testing.assert_array_equal(ctx.from_device(buf, np.int64), x)
    pairs = np.zeros(4, PAIR)
    pairs["i"] = rng.integers(-100, 100, size=4)
    pairs["f"] = rng.standard_normal(4)
    big_pairs = pairs.astype(PAIR.newbyteorder("S"))
    buf.write(big_pairs)
    got = np.empty(4, big_pairs.dtype)
    buf.read(got)
    assert got.tolist() == pairs.tolist()
    buf.fill(_big([0x01020304], np.uint32))
    assert np.all(ctx.from_device(buf, np.uint32) == 0x01020304)


def test_run_kernel_takes_arrays_and_scalars_in_the_other_byte_order(ctx, rng):
    """Refused before as a type mismatch ("holds float, but the array is >f4")."""
    x = rng.standard_normal(300).astype(np.float32)
    k = float(rng.uniform(0.5, 2.0))
    y = run_kernel(WRITE, "scale", 300, [_big(np.zeros(300), np.float32), _big(x, np.float32),
                                         np.float32(k), 300], ctx=ctx)[0]
    np.testing.assert_allclose(y, np.float32(k) * x, rtol=1e-6)
    out = pyclperf.tune(
        WRITE,
        "scale",
        300,
        [_big(np.zeros(300), np.float32), _big(x, np.float32), np.float32(k), 300],
        {"block_size_x": [64]},
        ctx=ctx,
        verify=Verify(answer=[np.float32(k) * x, None, None, None]),
        timing=Timing(min_repeats=1, max_repeats=1, min_time=0.0),
    )
    assert out.rows[0]["status"] == "ok", out.rows[0]["error"]


def test_images_take_and_give_the_other_byte_order(ctx, rng):
    if not ctx.info.image_support:
        pytest.skip("device has no image support")
    x = rng.standard_normal((8, 16)).astype(np.float32)
    img = ctx.to_image(_big(x, np.float32))
    np.testing.assert_array_equal(ctx.from_image(img), x)
    back = np.empty((8, 16), np.dtype(np.float32).newbyteorder("S"))
    img.read(back)
    np.testing.assert_array_equal(back, x)


# --- 3. sizes are integers ---------------------------------------------------------------------

@pytest.mark.parametrize("size", [4.7, 4.0, True, np.float64(8), "8", None])
def test_buffer_sizes_must_be_integers(ctx, size):
    """ctx.buffer(4.7) was a buffer of 4 bytes."""
    with pytest.raises(TypeError, match="buffer size must be an integer"):
        ctx.buffer(size)
    with pytest.raises(TypeError, match="buffer size must be an integer"):
        pyclperf.PinnedBuffer(ctx, size)


def test_other_sizes_must_be_integers(ctx):
    with pytest.raises(TypeError, match="pinned shape must hold integers, got 4.7"):
        ctx.pinned((2, 4.7))
    with pytest.raises(TypeError, match="pinned shape must be an integer or a sequence"):
        ctx.pinned(4.7)
    buf = ctx.buffer(64)
    with pytest.raises(TypeError, match="write offset must be an integer"):
        buf.write(np.zeros(4, np.uint8), offset=1.0)
    with pytest.raises(TypeError, match="read offset must be an integer"):
        buf.read(np.zeros(4, np.uint8), offset=True)
    with pytest.raises(TypeError, match="copy size must be an integer"):
        buf.copy_from(ctx.buffer(64), 8.0)
    with pytest.raises(TypeError, match="LocalMemory.*integer number of bytes"):
        LocalMemory(64.0)
    if ctx.info.image_support:
        with pytest.raises(TypeError, match="image width must be an integer"):
            ctx.image(4.5, 4)


def test_numpy_integers_are_sizes(ctx):
    assert ctx.buffer(np.int64(24)).nbytes == 24
    assert ctx.buffer(np.uint16(8)).nbytes == 8
    _, view = ctx.pinned((np.int32(3), 2), np.float64)
    assert view.shape == (3, 2)
    assert LocalMemory(np.uint32(64)).nbytes == 64 and type(LocalMemory(np.int8(4)).nbytes) is int


# --- 4. program text with a NUL ------------------------------------------------------------------

def test_source_with_a_nul_is_refused(ctx):
    """OpenCL read the source up to the NUL: the kernel after it silently did not exist."""
    src = "__kernel void a(__global int* o) { o[0] = 1; }\0__kernel void b(__global int* o) {}"
    with pytest.raises(pyclperf.InvalidArgumentError, match=r"NUL character \(at offset 46\)"):
        ctx.program(src, cache=False)
    with pytest.raises(pyclperf.InvalidArgumentError, match="build options contains a NUL"):
        ctx.program(src.split("\0")[0], options="-cl-fast-relaxed-math\0-DX=1", cache=False)


# --- 5. what a launch can know ------------------------------------------------------------------

def test_a_refused_set_args_leaves_no_mix_of_old_and_new_arguments(ctx, prog, rng):
    k = prog.kernel("scale")
    x = rng.standard_normal(64).astype(np.float32)
    y_old, y_new, xb = ctx.buffer(4 * 64), ctx.buffer(4 * 64), ctx.to_device(x)
    k.set_args(y_old, xb, 2.0, 64).run(64)
    with pytest.raises(TypeError, match="cannot pass str"):
        k.set_args(y_new, xb, "3", 64)  # y_new and xb set, k still 2.0 and n 64 from before
    with pytest.raises(pyclperf.InvalidArgumentError,
                       match=r"unset argument\(s\): 0 \('y'\), 1 \('x'\), 2 \('k'\), 3 \('n'\)"):
        k.run(64)
    k.set_args(y_new, xb, 3.0, 64).run(64)  # set again, the same buffers included: it runs
    np.testing.assert_array_equal(ctx.from_device(y_new, np.float32), np.float32(3.0) * x)


def test_the_low_level_launch_says_what_it_does_not_protect():
    for doc in (pyclperf.Kernel.run.__doc__, pyclperf._core.run.__doc__):
        doc = " ".join(doc.split())
        assert "run_kernel" in doc and "tune" in doc and "past a buffer's end" in doc


# --- 6. messages in words ----------------------------------------------------------------------

MISUSES = {  # name: (the call, given ctx, a ready kernel and a buffer; what the message says)
    "global size 2**64": (lambda ctx, k, buf: k.run(2**64),
                          "global size 18446744073709551616 is too large"),
    "local size 2**64": (lambda ctx, k, buf: k.run(64, [2**64]), r"local size\[0\] .* too large"),
    "buffer of 2**64": (lambda ctx, k, buf: ctx.buffer(2**64),
                        "buffer size 18446744073709551616 is too large"),
    "repeats 2**62": (lambda ctx, k, buf: k.time(64, repeats=2**62),
                      "repeats 4611686018427387904 is too large: at most 2147483647"),
    "set_arg(-1)": (lambda ctx, k, buf: k.set_arg(-1, buf),
                    "argument index -1 out of range: kernel 'with_local' takes 2"),
    "set_buffer(-1)": (lambda ctx, k, buf: k.set_buffer(-1, buf),
                       "argument index -1 out of range"),
    "set_arg(1.0)": (lambda ctx, k, buf: k.set_arg(1.0, buf),
                     r"argument index must be an integer \(.*\), got 1.0 \(float\)"),
    "set_local(-8)": (lambda ctx, k, buf: k.set_local(1, -8),
                      "local memory size must be a non-negative number of bytes, got -8"),
    "LocalMemory(-8)": (lambda ctx, k, buf: LocalMemory(-8),
                        r"LocalMemory\(nbytes\): nbytes must be a positive number of bytes, "
                        "got -8"),
    "image(-1, 5)": (lambda ctx, k, buf: ctx.image(-1, 5),
                     "image width must be a non-negative integer, got -1"),
    "run(None)": (lambda ctx, k, buf: k.run(None),
                  "global size must be an integer or a sequence of integers, got None"),
}


@pytest.mark.parametrize("name", list(MISUSES))
def test_misuse_is_named_in_words(ctx, prog, name):
    call, message = MISUSES[name]
    if name.startswith("image") and not ctx.info.image_support:
        pytest.skip("device has no image support")
    k = prog.kernel("with_local").set_args(ctx.buffer(4 * 64), LocalMemory(4 * 64))
    with pytest.raises((pyclperf.PyclperfError, TypeError, ValueError), match=message) as info:
        call(ctx, k, ctx.buffer(4 * 64))
    assert not any(dump in str(info.value) for dump in PYBIND_DUMP), str(info.value)
    k.run(64, 64)  # the kernel is still usable after the refusal


def test_checks_now_made_by_the_core_still_name_the_problem(ctx, prog):
    """Named before too (by Python or NumPy): moving the conversions into the bindings must not
    lose that."""
    k = prog.kernel("with_local").set_args(ctx.buffer(4 * 64), LocalMemory(4 * 64))
    with pytest.raises(pyclperf.InvalidArgumentError, match="warmup must be a non-negative"):
        k.time(64, warmup=-1)
    with pytest.raises(TypeError, match="global size must be an integer or a sequence of integers"):
        k.time("64")
    with pytest.raises(TypeError, match=r"global size\[1\] must be an integer .* got 2.0"):
        k.run((64, 2.0))
    with pytest.raises(pyclperf.InvalidArgumentError, match=r"global size\[0\] must be a non-neg"):
        k.run([-64])
    with pytest.raises(pyclperf.InvalidArgumentError, match="needs more than the pinned buffer's"):
        pyclperf.PinnedBuffer(ctx, 64).array(np.float32, (2**32, 2**32))  # 2**64 wraps to 0
    k.run(np.array([64]), (np.int64(64),))  # NumPy integers and arrays of them are sizes
