"""A user's mistake never takes the machine down: a kernel launched far past its arrays costs
one ``out of bounds`` row in seconds and bounded memory, and a worker that allocates past its
memory ceiling costs one ``out of memory`` row, while the sweep goes on."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from pyclperf import Execution, Verify, KernelRunError, run_kernel, tune
from pyclperf.measure.poison import guard_pattern
from pyclperf.tuner import ceiling, overrun

# A float4 writer without a bounds check: every work-item writes 16 bytes.
WRITER = """__kernel void w4(__global float4* out) {
    out[get_global_id(0)] = (float4)(1.0f, 2.0f, 3.0f, 4.0f); }"""
# Low enough that padding or a scan in proportion to the launch is refused (PoCL's largest
# allocation is a quarter of it), high enough for a PoCL worker (about 300 MiB of data here).
CEILING = "512M"


@pytest.fixture
def host_memory_device(ctx):
    if "CPU" not in str(ctx.info.type):
        pytest.skip("the over-launch case on a GPU is benchmarks/bounded.py's to measure")
    return ctx


@pytest.mark.parametrize("items", [10**7, 10**8])
def test_a_far_over_launch_is_out_of_bounds_in_seconds(host_memory_device, items):
    out = np.zeros(4096, np.float32)
    t0 = time.monotonic()
    with pytest.raises(KernelRunError) as caught:
        run_kernel(WRITER, "w4", items, [out], {"block_size_x": 64}, memory_limit=CEILING)
    ran = time.monotonic() - t0
    assert caught.value.status == "out of bounds", caught.value
    assert "argument 0 ('out')" in str(caught.value) and "past the end" in str(caught.value)
    assert ran < 10, f"{ran:.1f} s"

    t0 = time.monotonic()
    res = tune(
        WRITER,
        "w4",
        items,
        [out],
        {"block_size_x": [64]},
        execution=Execution(memory_limit=CEILING, progress=False),
    )
    ran = time.monotonic() - t0
    (row,) = res.rows
    assert row["status"] == "out of bounds" and "argument 0 ('out')" in row["error"], row
    assert ran < 10, f"{ran:.1f} s"


def test_an_over_launch_within_the_room_is_measured_to_the_element(host_memory_device):
    out = np.zeros(4096, np.float32)
    with pytest.raises(KernelRunError) as caught:
        run_kernel(WRITER, "w4", 10**6, [out], {"block_size_x": 64}, memory_limit=CEILING)
    assert caught.value.status == "out of bounds"
    # 10^6 float4 writes over 4096 floats: floats 4096 to 3999999 changed, and nothing after.
    assert "3995904 elements past the end (elements 4096 to 3999999 changed" in str(caught.value)



def _greedy_output(n: int):
    """The output argument of a sweep whose configuration GREEDY=1 allocates 1 GiB on the host
    as its output is made: past the ceiling."""

    def output(config):
        if config["GREEDY"] == 1:
            hog = np.ones(1 << 30, np.uint8)
            hog[::4096] = 2
        return np.zeros(n, np.float32)

    return output


def test_past_the_memory_ceiling_is_out_of_memory_and_the_sweep_goes_on(ctx, rng):
    n = 4096
    src = "__kernel void twice(__global float* y, __global const float* x) {" \
          " int i = get_global_id(0); if (i < 4096) y[i] = 2.0f * x[i]; }"
    x = rng.standard_normal(n).astype(np.float32)
    output = _greedy_output(n)

    res = tune(
        src,
        "twice",
        n,
        [output, x],
        {"block_size_x": [64], "GREEDY": [0, 1, 2]},
        verify=Verify(answer=[2 * x, None]),
        execution=Execution(memory_limit=CEILING, progress=False),
    )
    by = {r["GREEDY"]: r for r in res.rows}
    assert by[1]["status"] == "out of memory", by[1]
    assert "Unable to allocate 1.00 GiB" in by[1]["error"] and "512.0 MiB" in by[1]["error"]
    assert by[0]["status"] == "ok" and by[2]["status"] == "ok", res.rows


@pytest.mark.parametrize("item", [1, 2, 3, 4, 8, 12, 16])
def test_the_room_scan_finds_what_a_whole_copy_finds(item, rng, monkeypatch):
    monkeypatch.setattr(overrun, "CHUNK_BYTES", 4096)  # many chunks, and ends inside them
    size = int(rng.integers(20_000, 60_000))
    pattern = guard_pattern(int(rng.integers(0, 8)))
    room = np.resize(pattern, size)
    for start, length in rng.integers(0, size, (3, 2)):
        room[start:start + length // 50 + 1] ^= 0x10  # a few runs of changed bytes
    changed = np.flatnonzero(room != np.resize(pattern, size)) // item
    elements = np.unique(changed)

    def read(out, at):
        out[:] = room[at:at + out.size]

    hit = overrun.scan(read, size, item, pattern)
    assert hit is not None
    assert (hit.first, hit.last, hit.count) == (elements[0], elements[-1], elements.size)
    untouched = overrun.scan(lambda out, at: read_pattern(out, at, pattern), size, item, pattern)
    assert untouched is None


def read_pattern(out, at, pattern):
    out[:] = np.resize(np.roll(pattern, -(at % 4)), out.size)


def test_the_fenced_room_grows_with_the_array_not_the_launch():
    assert overrun.fenced_room(16384, 1_600_000_000) == overrun.FENCED_ROOM_MIN
    assert overrun.fenced_room(1 << 30, 1 << 40) == 1 << 30
    assert overrun.fenced_room(4096, 4096 + 100) == 100 and overrun.fenced_room(4096, 64) == 0


@pytest.mark.parametrize("given, nbytes", [("512M", 512 << 20), ("2G", 2 << 30),
                                           ("1.5GiB", 3 << 29), (1 << 30, 1 << 30), (None, None)])
def test_a_memory_limit_is_read_as_bytes(given, nbytes):
    assert ceiling.parse_limit(given) == nbytes


@pytest.mark.parametrize("given", ["lots", True, 1000, float("nan"), "-2G"])
def test_a_memory_limit_that_is_none_is_refused_in_one_line(given):
    with pytest.raises(ValueError, match=r"^memory_limit=") as caught:
        ceiling.parse_limit(given)
    assert "\n" not in str(caught.value)


def test_a_worker_that_dies_of_a_refused_allocation_is_out_of_memory(ctx):
    """A C++ library that cannot catch a refused allocation aborts, as the runtime does after an
    uncaught std::bad_alloc (stood in for here by its words and abort()): the row says out of
    memory, not crashed, and the next configuration runs in a fresh worker."""
    import os

    n = 256
    src = "__kernel void one(__global float* y) { y[get_global_id(0)] = 1.0f; }"

    def output(config):
        if config["DIE"] == 1:
            os.write(2, b"terminate called after throwing an instance of 'std::bad_alloc'\n")
            os.abort()
        return np.zeros(n, np.float32)

    res = tune(
        src,
        "one",
        n,
        [output],
        {"block_size_x": [64], "DIE": [0, 1, 2]},
        verify=Verify(answer=[np.ones(n, np.float32)]),
        execution=Execution(memory_limit=CEILING, progress=False),
    )
    by = {r["DIE"]: r for r in res.rows}
    assert by[1]["status"] == "out of memory" and "SIGABRT" in by[1]["error"], by[1]
    assert "std::bad_alloc" in by[1]["error"] and "512.0 MiB" in by[1]["error"]
    assert by[0]["status"] == by[2]["status"] == "ok", res.rows


# A driver that maps 1 GiB of private memory as a context is created (as NVIDIA's OpenCL maps
# much as it starts), and finds no device where it cannot: installed in the worker processes
# through a sitecustomize on their PYTHONPATH.
GREEDY_DRIVER = '''
import mmap
from pyclperf import _core
from pyclperf.device import context

_real = context.Context.__init__
_held = []


def _greedy(self, *args, **kwargs):
    try:
        _held.append(mmap.mmap(-1, 1 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS))
    except OSError:
        raise _core.InvalidArgumentError(
            "device matches no OpenCL device; no OpenCL device found (is an ICD such as "
            "pocl-opencl-icd installed?)") from None
    _real(self, *args, **kwargs)


context.Context.__init__ = _greedy
'''


def install_driver(source: str, tmp_path, monkeypatch) -> dict:
    """Workers started from here on run ``source`` as their sitecustomize (a driver stand-in);
    no device is marked to open before its ceiling, and no worker an earlier test left idle
    (started without the stand-in) is handed out. Returns the idle pool the test's workers go
    to, for kill_idle."""
    from pyclperf.tuner import supervisor, worker_process

    folder = tmp_path / "driver"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(source)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(folder), os.environ.get("PYTHONPATH")) if p))
    monkeypatch.setattr(worker_process, "_OPENED_BEFORE_CEILING", set())
    idle: dict = {}
    monkeypatch.setattr(supervisor, "_idle", idle)
    return idle


def kill_idle(idle: dict) -> None:
    """End the workers a test's stand-in driver started, so none outlives it."""
    for workers in idle.values():
        for w in workers:
            w.kill()


@pytest.fixture
def greedy_driver(tmp_path, monkeypatch):
    idle = install_driver(GREEDY_DRIVER, tmp_path, monkeypatch)
    yield
    kill_idle(idle)


def test_a_driver_that_maps_much_as_it_starts_opens_and_the_ceiling_still_holds(ctx, rng, greedy_driver):
    """The ceiling bounds what a configuration allocates, not the driver: the worker opens the
    device first and takes the ceiling on top, and a configuration past it is still out of
    memory while the others run."""
    n = 1024
    src = "__kernel void twice(__global float* y, __global const float* x) {" \
          " int i = get_global_id(0); y[i] = 2.0f * x[i]; }"
    x = rng.standard_normal(n).astype(np.float32)
    output = _greedy_output(n)

    res = tune(src, "twice", n, [output, x], {"block_size_x": [64], "GREEDY": [0, 1, 2]},
               verify=Verify(answer=[2 * x, None]),
               execution=Execution(memory_limit=CEILING, progress=False))
    by = {r["GREEDY"]: r for r in res.rows}
    assert by[0]["status"] == by[2]["status"] == "ok", res.rows
    assert by[1]["status"] == "out of memory" and "512.0 MiB" in by[1]["error"], by[1]
    from pyclperf.tuner import worker_process

    # The first worker was refused the device under the ceiling (what every worker met before
    # the ceiling could follow the opening): the later ones opened first.
    assert worker_process._OPENED_BEFORE_CEILING, "the greedy driver started under the ceiling"


# A driver that ends the process as a context is created under a ceiling set as the worker
# starts, rather than refusing (as NVIDIA's OpenCL did once in a GPU check); install_driver
# puts it in the worker processes.
CRASHING_DRIVER = '''
import os
from pyclperf.device import context
from pyclperf.tuner import ceiling

_real = context.Context.__init__


def _crashing(self, *args, **kwargs):
    if ceiling.applied is not None:
        os.write(2, b"terminate called after throwing an instance of 'std::bad_alloc'\\n")
        os.abort()
    _real(self, *args, **kwargs)


context.Context.__init__ = _crashing
'''


def test_a_driver_that_dies_opening_under_the_ceiling_is_opened_before_it(ctx, rng, tmp_path,
                                                                           monkeypatch):
    """A worker whose driver aborts as it opens the device under the ceiling is started again to
    open the device first, as for a refusal: the sweep runs, and the ceiling still holds."""
    from pyclperf.tuner import worker_process

    idle = install_driver(CRASHING_DRIVER, tmp_path, monkeypatch)
    n = 1024
    src = "__kernel void twice(__global float* y, __global const float* x) {" \
          " int i = get_global_id(0); y[i] = 2.0f * x[i]; }"
    x = rng.standard_normal(n).astype(np.float32)
    try:
        res = tune(src, "twice", n, [_greedy_output(n), x],
                   {"block_size_x": [64], "GREEDY": [0, 1]}, verify=Verify(answer=[2 * x, None]),
                   execution=Execution(memory_limit=CEILING, progress=False))
    finally:
        kill_idle(idle)
    by = {r["GREEDY"]: r for r in res.rows}
    assert by[0]["status"] == "ok", res.rows
    assert by[1]["status"] == "out of memory" and "512.0 MiB" in by[1]["error"], by[1]
    assert worker_process._OPENED_BEFORE_CEILING, "the crashing driver started under the ceiling"


def test_a_device_refused_under_the_ceiling_names_the_ceiling(monkeypatch):
    monkeypatch.setattr(ceiling, "applied", 512 << 20)
    said = ceiling.open_refused("1:0", RuntimeError("device '1:0' matches no OpenCL device; no "
                                                   "OpenCL device found (is an ICD such as "
                                                   "pocl-opencl-icd installed?)"))
    assert "memory ceiling of 512.0 MiB (memory_limit=), the likely cause" in said
    assert "matches no OpenCL device" in said and "ICD" not in said and "\n" not in said
