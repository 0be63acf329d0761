"""Supervised execution: a user's kernel that writes far past its array, crashes its process or
never ends costs its own configuration, never the caller's process or the rest of the sweep."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

import pyclperf
from pyclperf import KernelRunError, run_kernel, tune
from pyclperf.testing import assert_kernel
from pyclperf.tuner.options import from_flat

FAST = dict(min_time=0.0, min_repeats=2, max_repeats=2, warmup=0, progress=False)

OVERRUN = """
__kernel void over(__global float* out, __global const float* a) {
    const int i = get_global_id(0);
    out[i + OFF] = a[i];
}"""

SPIN = """
__kernel void spin(__global float* out, const int n) {
    const int i = get_global_id(0);
    float x = 0.0f;
    while (n > 0) { x += 1.0f; if (x < 0.0f) break; }   // never ends for n > 0
    out[i] = x;
}"""

COPY = """
__kernel void copy(__global float* dst, __global const float* src) {
    const int i = get_global_id(0);
    dst[i] = src[i];
}"""

# Ends its process the way a kernel that corrupted the heap does, from a configuration: the
# kernel runs, then the argument callable of CRASH=1 aborts the worker.
def _crash_if_asked(config):
    if config["CRASH"]:
        os.abort()
    return np.arange(256, dtype=np.float32)


N = 65536


@pytest.mark.parametrize("offset", (1100, 16384, 10**6))
def test_a_write_past_the_end_is_measured_and_costs_only_its_configuration(ctx, rng, offset):
    a = rng.standard_normal(N).astype(np.float32)
    res = tune(
        OVERRUN,
        "over",
        N,
        [np.empty_like(a), a],
        {"block_size_x": [64], "OFF": [offset]},
        **from_flat(dict(ctx=ctx, verify=lambda c, outputs: True, **FAST)),
    )
    row = res.rows[0]
    assert row["status"] == "out of bounds", row
    # The real extent, not the guard zone's size: the kernel writes out[OFF .. OFF + N - 1].
    last = offset + N - 1
    assert f"argument 0 ('out')" in row["error"], row
    assert f"{last - N + 1} elements past the end" in row["error"], row
    assert f"elements {max(N, offset)} to {last} changed" in row["error"], row
    # This process is alive and the next sweep runs normally.
    again = tune(
        COPY,
        "copy",
        1024,
        [np.empty(1024, np.float32), a[:1024]],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, answer=[a[:1024], None], **FAST)),
    )
    assert again.rows[0]["status"] == "ok", again.rows[0]


def test_a_sweep_of_writes_ever_further_past_the_end_costs_each_its_own_configuration(ctx, rng):
    """1,100 / 16,384 / 10^6 elements past the end of a 256 KiB array land in its guard zone;
    10^8 elements (400 MB) lands beyond every guard. On a CPU device, whose memory is the
    process's own, it faults in the inaccessible memory fenced off around each array in the
    worker (tuner/fences.py), and the row names the argument and the element. On a GPU it
    faults or lands in whatever the worker's context mapped there (on the H200 on 2026-11-27,
    once each): the output it never wrote is then what tells, never a plain ok. Either way the
    configuration after them runs and is verified, in this process, alive."""
    a = rng.standard_normal(N).astype(np.float32)
    offsets = [1100, 16384, 10**6, 10**8, 0]

    def verify(config, outputs):
        # out[i + OFF] = in[i]: what lands inside the array must be the input, shifted; a
        # configuration that wrote nothing inside it has nothing right
        off = config["OFF"]
        return off < N and np.array_equal(outputs[0][off:], a[:N - off])

    res = tune(
        OVERRUN,
        "over",
        N,
        [np.empty_like(a), a],
        {"block_size_x": [64], "OFF": offsets},
        **from_flat(dict(ctx=ctx, verify=verify, **FAST)),
    )
    rows = {r["OFF"]: r for r in res.rows}
    assert sorted(rows) == sorted(offsets), res.df
    for offset in offsets[:3]:
        assert rows[offset]["status"] == "out of bounds", rows[offset]
        assert "argument 0 ('out')" in rows[offset]["error"], rows[offset]
    far = rows[10**8]
    if "CPU" in ctx.info.type:
        assert far["status"] == "out of bounds", far
        assert "argument 0 ('out'): the kernel wrote element " in far["error"], far
        assert "elements past the end" in far["error"], far
    else:
        assert far["status"] in ("out of bounds", "crashed", "launch failed", "wrong result"), far
    assert rows[0]["status"] == "ok" and rows[0]["verified"], rows[0]
    again = tune(
        COPY,
        "copy",
        1024,
        [np.empty(1024, np.float32), a[:1024]],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, answer=[a[:1024], None], **FAST)),
    )
    assert again.rows[0]["status"] == "ok", again.rows[0]


def test_a_crashing_configuration_is_crashed_and_the_others_run(ctx):
    x = np.arange(256, dtype=np.float32)
    res = tune(
        COPY,
        "copy",
        256,
        [np.empty_like(x), _crash_if_asked],
        {"block_size_x": [32, 64], "CRASH": [0, 1]},
        **from_flat(dict(ctx=ctx, answer=[x, None], **FAST)),
    )
    assert [r["status"] for r in res.rows] == ["ok", "crashed", "ok", "crashed"], res.df
    crashed = [r for r in res.rows if r["status"] == "crashed"]
    assert all(r["CRASH"] == 1 for r in crashed)
    assert all("SIGABRT" in r["error"] for r in crashed), crashed


def test_a_kernel_that_never_ends_is_a_timeout_within_its_limit(ctx):
    t0 = time.monotonic()
    res = tune(
        SPIN,
        "spin",
        64,
        [np.empty(64, np.float32), np.int32(1)],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, timeout=2, **FAST)),
    )
    took = time.monotonic() - t0
    row = res.rows[0]
    assert row["status"] == "timeout" and "time limit of 2 s" in row["error"], row
    # The limit plus two seconds, plus this call's worker start (a fresh device context).
    assert took < 2 + 2 + 10, took


def test_time_limit_bounds_the_whole_run_even_while_a_kernel_hangs(ctx):
    t0 = time.monotonic()
    res = tune(
        SPIN,
        "spin",
        64,
        [np.empty(64, np.float32), np.int32(1)],
        {"block_size_x": [16, 32, 64]},
        **from_flat(dict(ctx=ctx, time_limit=2, **FAST)),
    )
    assert time.monotonic() - t0 < 2 + 2 + 10
    # The configuration the limit cut short has its row, saying so; the stop says why.
    (row,) = res.rows
    assert row["status"] == "stopped" and row["block_size_x"] == 16 and row["ran_s"] > 1
    assert row["error"].startswith("stopped by the 2 s time limit after it ran ")
    assert res.meta["stop"]["reason"] == ("stopped by the 2 s time limit while configuration "
                                          "block_size_x=16 ran; 0 of 3 configurations finished")


def test_ctrl_c_during_a_hung_kernel_returns_at_once_with_the_finished_rows(ctx, tmp_path):
    src = COPY + SPIN.replace("__kernel void spin", "__kernel void spin_unused")
    x = np.arange(64, dtype=np.float32)
    spin_after_first = f"""
    __kernel void copy_or_spin(__global float* dst, __global const float* src, const int n) {{
        const int i = get_global_id(0);
        float x = 0.0f;
        while (SPIN && n > 0) {{ x += 1.0f; if (x < 0.0f) break; }}
        dst[i] = src[i] + x;
    }}"""
    out = tmp_path / "spin.jsonl"
    # Ctrl-C once the first configuration's row is saved and the spinning one has begun: not
    # after a fixed delay, which a loaded machine (CI under the sanitizers) can spend before the
    # first configuration is done.
    sent: list[float] = []
    done = threading.Event()

    def interrupt_during_the_spin() -> None:
        while not done.wait(0.05):
            if out.is_file() and len(out.read_text().splitlines()) >= 2:  # meta + the first row
                time.sleep(0.5)
                sent.append(time.monotonic())
                os.kill(os.getpid(), signal.SIGINT)
                return

    watcher = threading.Thread(target=interrupt_during_the_spin, daemon=True)
    watcher.start()
    try:
        res = tune(
            spin_after_first,
            "copy_or_spin",
            64,
            [np.empty_like(x), x, np.int32(1)],
            {"block_size_x": [64], "SPIN": [0, 1]},
            **from_flat(dict(ctx=ctx, answer=[x, None, None], out=out, **FAST)),
        )
    finally:
        done.set()
        watcher.join()
    assert sent, "the first configuration's row never reached the results file"
    assert time.monotonic() - sent[0] < 2
    assert res.meta.get("interrupted") is True
    assert [r["status"] for r in res.rows] == ["ok", "stopped"]
    assert res.rows[1]["error"].startswith("stopped by Ctrl-C after it ran ")
    kept = pyclperf.Results.load(out)
    assert [(r["SPIN"], r["status"]) for r in kept.rows] == [(0, "ok"), (1, "stopped")]
    assert kept.meta["interrupted"] is True and kept.meta["stop"] == res.meta["stop"]
    assert kept.meta["stop"]["reason"] == ("stopped by Ctrl-C while configuration "
                                           "SPIN=1,block_size_x=64 ran; 1 of 2 configurations "
                                           "finished")
    del src


def test_a_const_input_changed_by_the_launch_is_named(ctx, rng):
    src = """__kernel void cast_away(__global float* out, __global const float* a) {
        const int i = get_global_id(0);
        out[i] = a[i];
        ((__global float*)a)[i] = -1.0f;   // writes an input the kernel declares const
    }"""
    a = rng.standard_normal(256).astype(np.float32)
    res = tune(
        src,
        "cast_away",
        256,
        [np.empty_like(a), a],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, answer=[a, None], **FAST)),
    )
    row = res.rows[0]
    assert row["status"] == "out of bounds", row
    assert "argument 1 ('a'), an input declared const, was changed" in row["error"]
    assert "256 element(s) changed, from index 0 to 255" in row["error"]


@pytest.mark.slow  # 10-15 s on an H200 beside the other tests
def test_run_kernel_reports_a_crash_and_a_hang_as_its_status(ctx):
    x = np.arange(256, dtype=np.float32)
    with pytest.raises(KernelRunError) as crash:
        run_kernel(COPY, "copy", 256, [np.empty_like(x), _crash_if_asked],
                   {"block_size_x": 64, "CRASH": 1}, ctx=ctx)
    assert crash.value.status == "crashed" and "SIGABRT" in str(crash.value)
    with pytest.raises(KernelRunError) as hang:
        run_kernel(SPIN, "spin", 64, [np.empty(64, np.float32), np.int32(1)], {"block_size_x": 64},
                   ctx=ctx, timeout=1)
    assert hang.value.status == "timeout"
    out = run_kernel(COPY, "copy", 256, [np.empty_like(x), x], {"block_size_x": 64}, ctx=ctx)
    assert np.array_equal(out[0], x)


def test_assert_kernel_fails_the_assertion_not_the_session(ctx):
    with pytest.raises(AssertionError, match="timeout"):
        assert_kernel(ctx, SPIN, "spin", [np.empty(64, np.float32), np.int32(1)], [None, None],
                      64, 64, timeout=1)
    x = np.arange(64, dtype=np.float32)
    got = assert_kernel(ctx, COPY, "copy", [np.empty_like(x), x], [x, None], 64, 64)
    assert np.array_equal(got[0], x)


def test_a_job_that_cannot_be_sent_to_the_worker_is_refused_in_words(ctx):
    lock = threading.Lock()  # cannot be pickled, even by cloudpickle

    def reference(config, dst, src):
        with lock:
            return [src, None]

    x = np.arange(64, dtype=np.float32)
    with pytest.raises(TypeError, match="isolate=False"):
        tune(
            COPY,
            "copy",
            64,
            [np.empty_like(x), x],
            {"block_size_x": [64]},
            **from_flat(dict(ctx=ctx, reference=reference, **FAST)),
        )
    # The same job in this process, unprotected, runs.
    res = tune(
        COPY,
        "copy",
        64,
        [np.empty_like(x), x],
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, reference=reference, isolate=False, **FAST)),
    )
    assert res.rows[0]["status"] == "ok"


def test_large_arrays_reach_the_worker_intact(ctx, rng):
    # 2 x 4 MiB: above the size that travels through shared memory instead of the pipe.
    a = rng.standard_normal(1 << 20).astype(np.float32)
    b = rng.standard_normal(1 << 20).astype(np.float32)
    vadd = """__kernel void vadd(__global float* c, __global const float* a,
                                 __global const float* b) {
        const int i = get_global_id(0); c[i] = a[i] + b[i]; }"""
    out = run_kernel(vadd, "vadd", a.size, [np.empty_like(a), a, b], {"block_size_x": 64}, ctx=ctx)
    assert np.array_equal(out[0], a + b)
    assert np.array_equal(out[1], a) and np.array_equal(out[2], b)
