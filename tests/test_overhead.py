"""What keeps a launch from Python cheap must not cost a check or a figure: the once-per-range
validation, the GIL given up only around the wait, the warm-ups queued in one call, the cached
NVML readings and package versions, and the quartiles computed without np.percentile."""

import threading
import time
import types

import numpy as np
import pytest

import pyclperf
from pyclperf.device import peak
from pyclperf.measure import stats
from pyclperf.measure import sweep
from pyclperf.measure.timing import time_adaptively

SRC = """
__kernel void add(__global float* out, __global const float* a, const int n) {
    const int i = get_global_id(0);
    if (i < n) out[i] = a[i] + 1.0f;
}
__kernel void spin(__global float* out, const int n) {
    float acc = (float)get_global_id(0);
    for (int j = 0; j < n; ++j) acc = acc * 0.999f + 1.0f;
    out[get_global_id(0)] = acc;
}
"""


@pytest.fixture(scope="module")
def prog(ctx):
    return ctx.program(SRC)


def test_a_validated_range_does_not_let_another_through(ctx, prog):
    k = prog.kernel("add").set_args(ctx.buffer(4096), ctx.buffer(4096), 64)
    k.run(64, 64)
    k.time(64, 64, warmup=0, repeats=2)
    with pytest.raises(pyclperf.InvalidArgumentError, match="does not divide"):
        k.run(100, 64)
    with pytest.raises(pyclperf.InvalidArgumentError, match="does not divide"):
        k.time(100, 64)
    k.run(64, 64)  # the good range still runs after a refused one


def test_repeated_launches_still_catch_a_released_argument(ctx, prog):
    a = ctx.buffer(4096)
    k = prog.kernel("add").set_args(ctx.buffer(4096), a, 64)
    k.time(64, 64, warmup=0, repeats=1)
    a.release()
    with pytest.raises(pyclperf.ReleasedError, match="argument 1"):
        k.time(64, 64, warmup=0, repeats=1)
    with pytest.raises(pyclperf.ReleasedError, match="argument 1"):
        k.run(64, 64)


def test_event_durations_are_end_minus_start(ctx, prog):
    k = prog.kernel("add").set_args(ctx.buffer(4096), ctx.buffer(4096), 64)
    t = k.time(64, 64, warmup=0, repeats=5)
    assert t.dtype == np.float64 and t.shape == (5,) and np.all(t > 0)
    raw = pyclperf._core.time_durations(k, [64], [64], 1, 3)
    assert raw.dtype == np.float64 and raw.shape == (3,) and np.all(raw > 0)


def _long_launch(ctx, prog, at_least_s=0.08):
    """The spin kernel, its iterations grown until one launch lasts ``at_least_s``."""
    k = prog.kernel("spin")
    k.set_arg(0, ctx.buffer(4 * 64))
    n = 1 << 12
    while True:
        k.set_arg(1, np.int32(n))
        if k.time(64, 64, warmup=0, repeats=1)[0] * 1e-9 >= at_least_s or n >= 1 << 30:
            return k
        n *= 4


@pytest.mark.parametrize("call", ["run", "time"])
def test_other_threads_run_while_a_launch_waits(ctx, prog, call):
    """The GIL is given up around the blocking wait: this thread keeps running Python while the
    other one is inside Kernel.run / Kernel.time. Held through the wait, it could run only
    before the call or after it, never twice with the call in flight far apart in time."""
    k = _long_launch(ctx, prog)
    in_call = threading.Event()
    done = threading.Event()

    def launch() -> None:
        in_call.set()
        if call == "run":
            k.run(64, 64)
        else:
            k.time(64, 64, warmup=0, repeats=1)
        done.set()

    seen: list[float] = []
    worker = threading.Thread(target=launch)
    worker.start()
    in_call.wait()
    while not done.is_set():
        seen.append(time.perf_counter())
        time.sleep(0.001)
    worker.join()
    assert seen and seen[-1] - seen[0] > 0.02, \
        f"the waiting launch held the GIL ({len(seen)} looks)"


class _Counting:
    """A kernel stand-in for time_adaptively: records its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int]] = []

    def run(self, g, local):
        self.calls.append(("run", 0, 1))

    def time(self, g, local, *, warmup, repeats, method="events"):
        self.calls.append(("time", warmup, repeats))
        return np.full(repeats, 1000.0)


def test_warm_ups_are_queued_in_the_first_timing_call():
    k = _Counting()
    t = time_adaptively(k, [64], None, warmup=3, min_time_s=0.0, min_repeats=20, max_repeats=100)
    assert k.calls == [("time", 3, 20)] and len(t) == 20
    # With a reset before every launch, each warm-up needs its own reset: launched one by one.
    k = _Counting()
    resets = []
    time_adaptively(k, [64], None, warmup=2, min_time_s=0.0, min_repeats=3, max_repeats=10,
                    reset=lambda: resets.append(1))
    assert k.calls == [("run", 0, 1)] * 2 + [("time", 0, 1)] * 3 and len(resets) == 5


def test_quartiles_have_numpys_bits():
    rng = np.random.default_rng(7)
    for n in [1, 2, 3, 4, 5, 7, 20, 21, 100, 1001]:
        for _ in range(50):
            t = rng.random(n) * 10.0 ** rng.integers(0, 9)
            s = stats.summarize(t)
            assert [s["q1_ns"], s["median_ns"], s["q3_ns"]] == list(np.percentile(t, [25, 50, 75]))
            assert s["mean_ns"] == float(np.mean(t))
            assert (s["min_ns"], s["max_ns"]) == (t.min(), t.max())
    for bad in ([1.0, float("inf")], [float("-inf"), 1.0], [-1.0, 2.0], [float("nan"), 1.0]):
        with pytest.raises(ValueError, match="finite and non-negative"):
            stats.summarize(bad)


def _fake_nvml(inits: list[int]) -> types.SimpleNamespace:
    class NVMLError(Exception):
        pass

    return types.SimpleNamespace(
        NVMLError=NVMLError, NVML_CLOCK_MEM=2, nvmlInit=lambda: inits.append(1),
        nvmlShutdown=lambda: None, nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: "gpu0", nvmlDeviceGetName=lambda h: "NVIDIA H200",
        nvmlDeviceGetMaxClockInfo=lambda h, clock: 3201, nvmlDeviceGetMemoryBusWidth=lambda h: 6144,
        nvmlDeviceGetMaxPcieLinkGeneration=lambda h: 5, nvmlDeviceGetMaxPcieLinkWidth=lambda h: 16)


def test_nvml_is_asked_once_per_device_and_module(monkeypatch):
    import sys

    info = types.SimpleNamespace(vendor="NVIDIA Corporation", platform_name="NVIDIA CUDA",
                                 name="NVIDIA H200")
    inits: list[int] = []
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml(inits))
    first = peak.nvml_readings(info)
    first["bus_width_bits"] = 1  # a caller's edit must not reach the cache
    again = peak.nvml_readings(info)
    assert len(inits) == 1 and again["bus_width_bits"] == 6144 and again["memory_clock_mhz"] == 3201
    other: list[int] = []
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml(other))  # another module: asked afresh
    assert peak.nvml_readings(info)["pcie_lanes"] == 16 and len(other) == 1


def test_package_versions_are_copies():
    a = sweep.package_versions()
    a["numpy"] = "edited"
    assert sweep.package_versions()["numpy"] == np.__version__


COUNTER = """
__kernel void count(volatile __global uint* n) { atomic_inc(n); }
"""


@pytest.mark.parametrize("method", ["events", "host"])
def test_every_warm_up_runs_before_the_timed_launches(ctx, method):
    # Warm-ups are queued without a wait of their own: each must still have run exactly once.
    counter = ctx.to_device(np.zeros(1, np.uint32))
    k = ctx.program(COUNTER).kernel("count").set_args(counter)
    times = k.time(64, 64, warmup=3, repeats=2, method=method)
    got = np.empty(1, np.uint32)
    counter.read(got)
    assert got[0] == (3 + 2) * 64
    assert times.shape == (2,) and np.all(times > 0)


def test_rebinding_a_buffer_skips_only_what_is_bound_already(ctx, prog):
    # set_buffer skips the driver call when that very buffer is bound at that index: every
    # other change of argument must still reach the kernel.
    a = ctx.to_device(np.random.default_rng().random(64, dtype=np.float32))
    outs = [ctx.to_device(np.full(64, np.nan, np.float32)) for _ in range(2)]
    k = prog.kernel("add")
    for target in (0, 1, 1, 0):
        k.set_args(outs[target], a, 64)
        k.run(64, 64)
        got = np.empty(64, np.float32)
        outs[target].read(got)
        expected = np.empty(64, np.float32)
        a.read(expected)
        assert np.array_equal(got, expected + np.float32(1)), target
        outs[target].write(np.full(64, np.nan, np.float32))  # poisoned again for the next turn


def test_a_kernel_whose_arguments_were_set_is_freed(ctx, prog):
    # set_arg caches the parameters on the kernel: the cache must not keep the kernel alive
    # (an ArgInfo refers to its kernel; stored on it, it made a cycle the GC could not see).
    import gc
    import weakref

    k = prog.kernel("add").set_args(ctx.buffer(4096), ctx.buffer(4096), 64)
    k.run(64, 64)
    gone = weakref.ref(k)
    del k
    gc.collect()
    assert gone() is None
