"""Interrupted work keeps what finished; threads sweep correctly; misuse raises, never crashes."""

import json
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import pyclperf
from pyclperf import Execution, Timing, Verify, tune

SLOW_SWEEP = textwrap.dedent("""
    import sys, numpy as np, pyclperf
    from pyclperf import tune
    src = '''__kernel void spin(__global float* y, const int reps) {
        float v = (float)get_global_id(0);
        for (int r = 0; r < reps * 64; ++r) v = v * 0.999f + 1.0f;
        y[get_global_id(0)] = v; }'''
    ctx = pyclperf.Context(sys.argv[2])
    print("started", flush=True)
    tune(src, "spin", 4096, [np.zeros(4096, np.float32), 200], {"block_size_x": [16, 32, 64, 128], "R": list(range(3))},
         ctx=ctx, out=sys.argv[1], timing=pyclperf.Timing(min_time=0.05, min_repeats=3),
         execution=pyclperf.Execution(progress=False))
    print("finished", flush=True)
""")


def _spec(ctx):
    return f"{ctx.info.platform_index}:{ctx.info.device_index}"


def _start(tmp_path, ctx):
    script = tmp_path / "sweep.py"
    script.write_text(SLOW_SWEEP)
    out = tmp_path / "sweep.jsonl"
    proc = subprocess.Popen([sys.executable, str(script), str(out), _spec(ctx)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline().strip()
    if first != "started":
        proc.kill()
        pytest.fail(f"the sweep process did not start: {proc.stderr.read()[-2000:]}")
    deadline = time.time() + 120
    while time.time() < deadline:  # wait for at least two finished rows
        if out.exists() and len(out.read_text().splitlines()) >= 3:
            return proc, out
        time.sleep(0.05)
    proc.kill()
    pytest.fail("the sweep wrote no rows within 120 s")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
@pytest.mark.slow  # 10-15 s on an H200 beside the other tests
def test_killed_sweep_keeps_rows_and_resumes(tmp_path, ctx, sig):
    proc, out = _start(tmp_path, ctx)
    proc.send_signal(sig)
    proc.communicate(timeout=120)
    kept = pyclperf.Results.load(out)
    assert len(kept.rows) >= 2 and all("status" in r for r in kept.rows)
    if sig == signal.SIGINT:  # it stopped the sweep, which says so, rather than being ignored
        assert kept.meta.get("interrupted") is True and len(kept.rows) < 12
    # Every line but possibly a cut last one is complete JSON.
    lines = out.read_text().splitlines()
    for line in lines[:-1]:
        json.loads(line)
    # Resuming runs only what is missing and completes the grid.
    src = SLOW_SWEEP.split("'''")[1]
    res = tune(
        src,
        "spin",
        4096,
        [np.zeros(4096, np.float32), 200],
        {"block_size_x": [16, 32, 64, 128], "R": list(range(3))},
        ctx=ctx,
        timing=Timing(min_time=0.0, min_repeats=2, max_repeats=2),
        execution=Execution(progress=False),
        out=out,
    )
    configs = [r["config"] for r in res.rows]
    assert len(configs) == 12 and len(set(configs)) == 12


def test_two_threads_sweeping_one_device(ctx, rng):
    src = """__kernel void axpb(__global float* y, __global const float* x, const float a, const float b) {
        y[get_global_id(0)] = a * x[get_global_id(0)] + b; }"""
    results, errors = {}, []

    def work(tag, a):
        try:
            x = np.random.default_rng().standard_normal(8192).astype(np.float32)
            results[tag] = tune(
                src,
                "axpb",
                8192,
                [np.empty_like(x), x, a, 1.0],
                {"block_size_x": [32, 64, 128, 256]},
                ctx=ctx,
                verify=Verify(
                    answer=[np.float32(a) * x + np.float32(1.0), None, None, None], atol=1e-5
                ),
                timing=Timing(min_time=0.0, min_repeats=5, max_repeats=5),
                execution=Execution(progress=False),
            )
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t, a)) for t, a in (("a", 2.0), ("b", -3.0))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    for res in results.values():
        assert [r["status"] for r in res.rows] == ["ok"] * 4


def test_pinned_view_outlives_everything(ctx):
    pinned, view = ctx.pinned(64, np.float32)
    view[:] = np.arange(64)
    del pinned
    import gc

    gc.collect()
    assert view.sum() == np.arange(64).sum()


def test_released_pinned_buffer_in_transfers(ctx):
    buf = pyclperf.PinnedBuffer(ctx, 64)
    buf.release()
    with pytest.raises(pyclperf.ReleasedError):
        buf.write(np.zeros(16, np.float32))
    with pytest.raises(pyclperf.ReleasedError):
        buf.map()
    dev = ctx.buffer(64)
    with pytest.raises(pyclperf.ReleasedError):
        dev.copy_from(buf, 64)


def test_buffer_from_another_context(ctx):
    other = pyclperf.Context(ctx.info)
    k = ctx.program("__kernel void z(__global float* a) { a[0] = 1; }").kernel("z")
    with pytest.raises(pyclperf.InvalidArgumentError, match="another context"):
        k.set_args(other.buffer(64))
