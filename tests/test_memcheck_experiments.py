"""Every registered experiment's kernels on Oclgrind (pyclperf.experiments._memcheck): each point
verified once on the simulated device at a tiny size, with data-race detection on, and no
finding allowed: no access out of bounds, no race, no barrier divergence. (No variant exists to
show a race: gridsync's ``no_fence`` may give a wrong sum through missing ordering, but every
access it shares across work-groups is atomic, so it has no data race either.)

Oclgrind's check for uninitialised values is off here: Oclgrind 21.10 (its Uninitialized plugin)
keeps a buffer's shadow memory only for the bytes of the last host write or fill pattern, so
after ``Buffer.fill`` (pyclperf's poison) or a partial write, values a kernel stores later read
back as uninitialised (shown below with a two-launch sum). pyclperf.tuner.memcheck writes each
argument whole, where the check works.

Skipped with a reason where Oclgrind is not installed; ``-m memcheck`` selects these tests.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from pyclperf.device import icd as _icd
from pyclperf.device import oclgrind
from pyclperf.tuner.memcheck import memcheck
from pyclperf.experiments import REGISTRY
from pyclperf.experiments._memcheck import check_experiment
from pyclperf.device.sources import kernel_source

pytestmark = [
    pytest.mark.memcheck,
    pytest.mark.skipif(_icd.find_oclgrind() is None, reason="Oclgrind is not installed "
                       "(apt-get install oclgrind, or pip install 'pyclperf[memcheck]')"),
]

# Options (as pyclperf.run's keywords) that make each experiment tiny: Oclgrind interprets every
# work-item, about a million simple operations a second.
TINY: dict[str, dict] = {
    "timers": {"sizes": [256, 1024], "local_size": 64},
    "peak": {},
    "transfer": {"sizes": [4096]},
    "batching": {"total_bytes": 65536, "pieces": [1, 4]},
    "p2p": {"sizes": [4096]},
    "offset": {"size": 2048, "local_size": 64, "values": [0, 1, 17]},
    "stride": {"size": 2048, "local_size": 64, "values": [1, 2, 5]},
    "vector": {"nbytes": 16384, "local_size": 64},
    "bandwidth": {"nbytes": 16384, "sizes": [64], "per_cu": [1]},
    "aos": {"particles": 1024, "local_size": 64},
    "workingset": {"sizes": [4096], "local_size": 64, "steps": 64, "groups": 2, "min_bytes": 8192,
                   "passes": 1},
    "matmul": {"size": 32, "tile": 16},
    "aat": {"size": 32, "tile": 16},
    "banks": {"size": 256, "local_size": 64, "strides": [1, 2], "words": 256, "steps": 2},
    "tiling": {"size": 64, "tile": 16},
    "constant": {"width": 64, "height": 8, "local_size": 64, "taps": 4},
    "texture": {"width": 64, "height": 8, "local_size": 64},
    "blocksize": {"size": 2048, "sizes": [32, 64], "n": 32},
    "occupancy": {"size": 2048, "targets": [1, 2], "work_group_sizes": [64]},
    "halftex": {"side": 32},
    "rgba": {"side": 32, "radius": 2, "wavelet_taps": 4},
    "launchbounds": {"size": 1024, "sizes": [64], "lanes": 4, "steps": 4},
    "surface": {"side": 32},
    "math": {"size": 256, "local_size": 64, "iters": 4},
    "intops": {"size": 256, "local_size": 64, "iters": 4},
    "buildopts": {"size": 256, "local_size": 64, "iters": 4},
    "ilp": {"accumulators": [1, 4], "local_size": 64, "low_local_size": 32,
            "full_groups_per_cu": 2, "total": 16},
    "spill": {"size": 256, "local_size": 64, "sizes": [4, 16], "rounds": 2},
    "divergence": {"size": 256, "local_size": 64, "granularities": [1, 32], "iters": 4},
    "histogram": {"size": 4096, "local_size": 64, "groups": 4},
    "reduction": {"size": 2048, "local_size": 64, "groups": 4},
    "shuffle": {"size": 2048, "local_size": 64},
    "gridsync": {"size": 2048, "local_size": 64, "trials": 2},
    "separable": {"width": 32, "height": 16, "local_size": 64, "radii": [2]},
}

# Points Oclgrind (an OpenCL 1.2 device, alone on its platform, without NVML) cannot run, and
# the reason each must give. Any other skip, and any point that raises, fails the test.
CANNOT = {
    "peak": r"NVML is not available",  # no kernels: the theoretical ceilings
    "p2p": r"needs two devices of one platform",  # copy_words is checked below instead
    # Oclgrind claims OpenCL C 1.2 and none of these features: never built, let alone run.
    "reduction": r"no sub-groups: the device does not claim sub-groups",
    "shuffle": r"the device does not claim (sub-group shuffles|sub-groups|work-group collective)",
    "math": r"half_(sin|cos) is defined only for",  # the point's own domain, on any device
}


def test_every_experiment_has_tiny_options():
    assert set(TINY) == set(REGISTRY), "give each new experiment tiny options here"


@pytest.mark.parametrize("name", sorted(TINY))
def test_no_finding_in_any_kernel(name):
    checks = check_experiment(name, TINY[name], timeout_s=120, uninitialized=False)
    ran = [c for c in checks[1:] if c.outcome == "checked"]
    for c in checks:
        where = "construction" if c.point is None else c.point
        assert c.findings == [], (where, [str(f) for f in c.findings])
        assert c.outcome != "failed", (where, c.reason)
        if c.outcome == "skipped":
            assert name in CANNOT and re.search(CANNOT[name], c.reason), (where, c.reason)
    # What ran was verified there: Oclgrind computed what NumPy did.
    assert all(c.passed for c in ran), [(c.point, c.reason) for c in ran if not c.passed]
    if not ran:
        pytest.skip(f"{name}: no point runs on Oclgrind: {checks[1].reason}")


def test_the_p2p_copy_kernel():
    """p2p launches copy_words only across two devices of one context; here on one."""
    words = np.arange(4 * 100, dtype=np.uint32)
    assert memcheck(kernel_source("p2p.cl"), "copy_words",
                    [words, np.zeros_like(words), np.uint64(100)], 64, 16) == []
    # The check can fail: one word too many is read past the source (and what it read is
    # stored, uninitialised, into the destination).
    found = memcheck(kernel_source("p2p.cl"), "copy_words",
                     [words, np.zeros(4 * 101, np.uint32), np.uint64(101)], 64, 16)
    assert [(f.kind, f.argument) for f in found] == [(oclgrind.OUT_OF_BOUNDS, "src"),
                                                     (oclgrind.UNINITIALIZED, "dst")], found
    assert "index 100 of 16-byte elements" in found[0].message


def test_the_races_fixed_in_gridsync_and_reduction_are_found_in_the_old_kernels():
    """The checks can fail: the kernels as they were (a plain load of the total beside other
    groups' compare-and-swap; the last group reading the sums and resetting the counter with
    plain accesses) show their races."""
    old_atomic = kernel_source("reduction.cl").replace("uint seen = 0u;", "uint seen = *total;")
    n, wg = 1024, 64
    data = np.random.default_rng().random(n, dtype=np.float32)
    found = memcheck(old_atomic, "reduce_atomic", [data, n, np.zeros(1, np.uint32)], 4 * wg, wg,
                     defines={"WG": wg}, uninitialized=False)
    assert {f.kind for f in found} == {oclgrind.DATA_RACE} and found[0].argument == "total", found
    old_last = (kernel_source("gridsync.cl")
                .replace("#define LOAD_SUM(p) as_float(atomic_or(p, 0u))", "#define LOAD_SUM(p) as_float(*(p))")
                .replace("#define RESET(c) atomic_xchg(c, 0u)", "#define RESET(c) (*(c) = 0u)"))
    assert old_last != kernel_source("gridsync.cl")
    found = memcheck(old_last, "last_group", [data, n, np.zeros(4, np.uint32), np.zeros(1, np.uint32),
                                              np.zeros(1, np.float32)], 4 * wg, wg,
                     defines={"WG": wg}, uninitialized=False)
    assert {(f.kind, f.argument) for f in found} >= {(oclgrind.DATA_RACE, "partial"),
                                                     (oclgrind.DATA_RACE, "count")}, found
    assert memcheck(kernel_source("gridsync.cl"), "last_group",
                    [data, n, np.zeros(4, np.uint32), np.zeros(1, np.uint32), np.zeros(1, np.float32)],
                    4 * wg, wg, defines={"WG": wg}) == []


FILLED = """
__kernel void fill_then_sum(__global float* part) { part[get_global_id(0)] = 1.0f; }
"""


def _filled_then_stored(ctx, payload, mark):
    """In the child: a buffer filled by clEnqueueFillBuffer, every element then stored by a
    kernel, then read by another kernel."""
    part = ctx.buffer(16)
    part.fill(np.zeros(1, np.float32))
    k = ctx.program(FILLED).kernel("fill_then_sum")
    k.set_args(part)
    k.run([4], [4])
    start = mark()
    reader = ctx.program("__kernel void r(__global const float* p, __global float* o)"
                         "{ if (p[get_global_id(0)] > 0.5f) o[get_global_id(0)] = 2.0f; }").kernel("r")
    out = ctx.buffer(16)
    out.write(np.zeros(4, np.float32))
    reader.set_args(part, out)
    reader.run([4], [4])
    return start


def test_why_the_uninitialised_check_is_off_for_experiments(monkeypatch):
    here = os.path.dirname(os.path.abspath(__file__))  # the child imports this module
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])))
    run = oclgrind.run_child(f"{__name__}:_filled_then_stored", None)
    found, _ = oclgrind.parse(oclgrind.split(run.log, [run.result])[1])
    # Every element was stored by the first kernel; Oclgrind still calls three of four
    # uninitialised (all but the first pattern's bytes). When it stops, this test says so.
    assert [f.kind for f in found] == [oclgrind.UNINITIALIZED] and found[0].count == 3, found
