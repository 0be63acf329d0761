"""Execution configuration and control flow: blocksize, occupancy, launchbounds, divergence.

Each experiment runs once per module on small sizes; the rest checks formulas, the occupancy
estimate against hand-worked limits, the register parser, and that wrong kernels and impossible
launches are caught."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import pyclperf
from pyclperf import cli
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments.blocksize import BlockSize, default_sizes, matmul_shape
from pyclperf.experiments.divergence import Divergence, path_sum
from pyclperf.experiments.divergence import reference as divergence_reference
from pyclperf.experiments.launchbounds import COEFFS, LANE_GAP, STEP_GAP, LaunchBounds, flops_per_item
from pyclperf.experiments.launchbounds import reference as poly_reference
from pyclperf.experiments.occupancy import Occupancy
from pyclperf.theory.limits import CANNOT_KNOW, estimate, parse_registers
from pyclperf.device.sources import kernel_source

QUICK = {"warmup": 1, "repeats": 2}
BS_SIZES = [32, 48, 64, 200]
BS_ITEMS, BS_N = 1 << 14, 40
OCC_ITEMS, OCC_TARGETS = 1 << 14, [1, 4, 16]
LB_ITEMS, LB_SIZES, LB_STEPS, LB_LANES = 1 << 10, [64, 128], 8, 4
DV_ITEMS, DV_LOCAL, DV_GRAN, DV_ITERS = 1 << 12, 128, [1, 4, 32, 64], 8


def _device_env(ctx, monkeypatch):
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")


def refused_launch(name, code):
    """The exception the core raises where the driver's enqueue refuses a launch (its call,
    code and name attributes set as the core's translation sets them)."""
    exc = pyclperf.ClError(f"clEnqueueNDRangeKernel: {name}")
    exc.call, exc.code, exc.name = "clEnqueueNDRangeKernel", code, name
    return exc


class CappedKernel:
    """A kernel that reports a smaller CL_KERNEL_WORK_GROUP_SIZE, as a register-hungry kernel
    does on a GPU. With ``refuse`` its launches over that size fail as a driver that enforces
    it answers (CL_INVALID_WORK_GROUP_SIZE from the enqueue); without, they run (NVIDIA reports
    256 for every kernel and runs 1024)."""

    def __init__(self, kernel, cap, refuse=True):
        self._kernel, self._cap, self._refuse = kernel, cap, refuse

    def __getattr__(self, name):
        return getattr(self._kernel, name)

    def set_args(self, *args):
        self._kernel.set_args(*args)
        return self

    def _enqueue_check(self, local):
        items = int(np.prod(local)) if local is not None else 0
        if self._refuse and items > self._cap:
            raise refused_launch("CL_INVALID_WORK_GROUP_SIZE", -54)

    def run(self, global_size, local_size=None):
        self._enqueue_check(local_size)
        self._kernel.run(global_size, local_size)

    def time(self, global_size, local_size=None, **kwargs):
        self._enqueue_check(local_size)
        return self._kernel.time(global_size, local_size, **kwargs)

    def limits(self):
        real = self._kernel.limits()
        fields = ("preferred_multiple", "local_mem_bytes", "private_mem_bytes", "compile_work_group_size")
        return SimpleNamespace(work_group_size=self._cap, **{f: getattr(real, f) for f in fields})


class CappedProgram:
    def __init__(self, program, cap):
        self._program, self._cap = program, cap
        self.build_log = program.build_log

    def kernel(self, name):
        return CappedKernel(self._program.kernel(name), self._cap)


# --- blocksize ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def blocksize(ctx):
    return pyclperf.run("blocksize", ctx, size=BS_ITEMS, values=BS_SIZES, n=BS_N, **QUICK)


def test_blocksize_every_point_verifies(blocksize):
    df = blocksize.df
    assert blocksize.all_verified, df["error"].tolist()
    assert list(zip(df["kernel"], df["local_size"])) == [(k, s) for k in ("copy", "matmul") for s in BS_SIZES]
    copy, mm = df[df["kernel"] == "copy"], df[df["kernel"] == "matmul"]
    assert (copy["items"] == BS_ITEMS // copy["local_size"] * copy["local_size"]).all()
    assert np.allclose(copy["bytes"], 2 * 4 * copy["items"])
    assert np.allclose(copy["gbps"], copy["bytes"] / copy["median_ns"])
    assert (mm["bytes"] == 3 * 4 * BS_N**2).all()
    assert np.allclose(mm["gflops"], 2 * BS_N**3 / mm["median_ns"])
    assert list(mm["shape"]) == [f"{x}x{y}" for x, y in map(matmul_shape, BS_SIZES)]
    assert (df["multiple_of_preferred"] == (df["local_size"] % df["preferred_multiple"] == 0)).all()
    assert (df["multiple_of_32"] == (df["local_size"] % 32 == 0)).all()


def test_blocksize_relative_speed_and_conclusion(blocksize):
    df = blocksize.df
    for kernel, metric in (("copy", "gbps"), ("matmul", "gflops")):
        rows = df[df["kernel"] == kernel]
        best = rows.loc[rows[metric].idxmax()]
        assert rows["relative"].max() == pytest.approx(1.0)
        assert np.allclose(rows["relative"], rows[metric] / best[metric])
        assert blocksize.meta[f"best_{kernel}_local_size"] == best["local_size"]
        assert f"{kernel}: best work-group size {best['local_size']}" in blocksize.meta["conclusion"]
    assert "128-256" in blocksize.meta["conclusion"]


def test_matmul_shapes_and_default_sizes():
    assert [matmul_shape(s) for s in (16, 32, 48, 200, 1024, 7)] == [
        (16, 1), (32, 1), (24, 2), (25, 8), (32, 32), (7, 1)]
    gpu = default_sizes(SimpleNamespace(is_gpu=True, max_work_group_size=1024))
    assert gpu == sorted(set(range(32, 1025, 32)) | {16, 48, 200})
    small = default_sizes(SimpleNamespace(is_gpu=True, max_work_group_size=128))
    assert small == [16, 32, 48, 64, 96, 128]
    assert max(default_sizes(SimpleNamespace(is_gpu=False, max_work_group_size=4096))) == 1024


WRONG_MATMUL = """
__kernel void matmul(__global float* c, __global const float* a, __global const float* b, const int n) {
    const int col = get_global_id(0), row = get_global_id(1);
    if (row >= n || col >= n) return;
    float sum = 0.0f;
    for (int k = 0; k < n - 1; ++k) sum += a[row * n + k] * b[k * n + col];   /* drops a term */
    c[row * n + col] = sum;
}
"""


def test_a_wrong_matmul_is_caught(ctx):
    exp = BlockSize(ctx, items=BS_ITEMS, sizes=[64], n=BS_N, kernels=["matmul"])
    exp.matmul_kernel = ctx.program(WRONG_MATMUL).kernel("matmul")
    res = run_experiment(exp, **QUICK)
    assert res.rows[0]["status"] == "wrong result"
    assert "by more than the tolerance" in res.rows[0]["error"]
    assert "no size verified" in res.meta["conclusion"]


def test_sizes_over_the_kernel_limit_are_tried_and_recorded(ctx):
    # The kernel's reported limit is recorded, not obeyed: a driver that refuses the launch
    # at its enqueue makes the row "skipped", the refusal and its OpenCL answer recorded ...
    exp = BlockSize(ctx, items=BS_ITEMS, sizes=[32, 64], n=BS_N, kernels=["copy"])
    exp.copy_kernel = CappedKernel(exp.copy_kernel, 32)
    res = run_experiment(exp, **QUICK)
    assert [r["status"] for r in res.rows] == ["ok", "skipped"]
    assert "refused by the device" in res.rows[1]["error"]
    assert "CL_INVALID_WORK_GROUP_SIZE" in res.rows[1]["error"]
    assert res.rows[1]["refused"] == "CL_INVALID_WORK_GROUP_SIZE" and "refused" not in res.rows[0]
    assert [r["kernel_max_work_group_size"] for r in res.rows] == [32, 32]
    assert [r["over_kernel_limit"] for r in res.rows] == [False, True]
    assert res.rows[1]["relative"] is None and "best work-group size 32" in res.meta["conclusion"]
    # ... and one that runs it (as NVIDIA does past its reported 256) gives a verified row.
    exp = BlockSize(ctx, items=BS_ITEMS, sizes=[32, 64], n=BS_N, kernels=["copy"])
    exp.copy_kernel = CappedKernel(exp.copy_kernel, 32, refuse=False)
    res = run_experiment(exp, **QUICK)
    assert [r["status"] for r in res.rows] == ["ok", "ok"]
    assert res.rows[1]["over_kernel_limit"] and res.rows[1]["kernel_max_work_group_size"] == 32


def test_blocksize_invalid_parameters(ctx):
    top = ctx.info.max_work_group_size
    # A size over the device's limit is the core's launch check to refuse, point by point: the
    # device declines it (skipped, as tune() rows say), it is not the user's mistake.
    res = run_experiment(BlockSize(ctx, items=top * 2, sizes=[top * 2], n=BS_N), **QUICK)
    assert [r["status"] for r in res.rows] == ["skipped", "skipped"]
    assert all("exceeds the device's limit" in r["error"] for r in res.rows)
    with pytest.raises(pyclperf.InvalidArgumentError, match="unknown or no kernels"):
        BlockSize(ctx, items=BS_ITEMS, sizes=[32], kernels=["gemv"])
    with pytest.raises(pyclperf.InvalidArgumentError, match="fewer than the largest"):
        BlockSize(ctx, items=16, sizes=[32], n=BS_N)
    with pytest.raises(pyclperf.InvalidArgumentError, match="positive"):
        BlockSize(ctx, items=BS_ITEMS, sizes=[0], n=BS_N)


# --- occupancy ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def occupancy(ctx):
    return pyclperf.run("occupancy", ctx, size=OCC_ITEMS, values=OCC_TARGETS, **QUICK)


def test_occupancy_every_point_verifies_with_its_estimate(ctx, occupancy):
    df = occupancy.df
    assert occupancy.all_verified, df["error"].tolist()
    assert set(df["local_size"]) == {64, 256}
    assert np.allclose(df["bytes"], 2 * 4 * OCC_ITEMS)
    static = occupancy.meta["static_local_bytes"]
    assert (df["local_bytes_per_group"] == static + df["dynamic_local_bytes"]).all()
    assert (df["dynamic_local_bytes"] >= 4 * df["local_size"]).all()  # a float per work-item
    assert (df["dynamic_local_bytes"] <= ctx.info.local_mem_bytes - static).all()
    assert occupancy.meta["estimate_cannot_know"] == CANNOT_KNOW
    assert "conclusion" in occupancy.meta and "Guide 4.5" in occupancy.meta["conclusion"]


def test_occupancy_unknown_device_is_handled(ctx, occupancy):
    df = occupancy.df
    if ctx.info.nv_compute_capability_major >= 0:
        pytest.skip("an NVIDIA device: its estimate is known")
    # Only the local-memory bound is known; threads, registers and occupancy are not.
    assert df["groups_by_threads"].isna().all() and df["occupancy_pct"].isna().all()
    assert df["groups_by_registers"].isna().all() and not df["complete"].any()
    assert (df["groups_by_local"] == ctx.info.local_mem_bytes // df["local_bytes_per_group"]).all()
    assert occupancy.meta["x"] == "groups_per_cu" and "unknown" in occupancy.meta["conclusion"]


H200 = SimpleNamespace(nv_compute_capability_major=9, nv_compute_capability_minor=0,
                       nv_warp_size=32, nv_registers_per_block=65536, local_mem_bytes=49152,
                       platform_name="NVIDIA CUDA")
POCL = SimpleNamespace(nv_compute_capability_major=-1, nv_compute_capability_minor=-1,
                       nv_warp_size=-1, nv_registers_per_block=-1, local_mem_bytes=1 << 21,
                       platform_name="Portable Computing Language")


def test_estimate_on_compute_capability_9_0():
    # 48 KiB + 1 KiB reserved per group in 228 KiB: 4 groups of 64 = 8 of 64 warps.
    e = estimate(H200, 64, 48 * 1024, registers_per_item=32)
    assert (e.groups_by_local, e.groups_by_threads, e.groups_by_registers) == (4, 32, 32)
    assert e.groups_per_cu == 4 and e.limited_by == "local memory" and e.complete
    assert e.occupancy == pytest.approx(4 * 64 / 2048)
    # 128 registers x 32 = 4096 per warp, 8 warps per group: 2 groups in 65536 registers.
    # (Even a group without local memory takes the 1 KiB the system reserves per block.)
    e = estimate(H200, 256, 0, registers_per_item=128)
    assert e.groups_by_local == 228 and e.groups_by_threads == 8 and e.groups_by_registers == 2
    assert e.limited_by == "registers" and e.occupancy == pytest.approx(0.25)
    # Small groups hit the 32-blocks-per-SM limit; 33 registers round up to 1280 per warp.
    e = estimate(H200, 32, 0, registers_per_item=33)
    assert e.groups_by_threads == 32 and e.limited_by == "work-groups"
    assert e.groups_by_registers == 65536 // 1280
    # Without a register count the estimate is an upper bound, and says so.
    e = estimate(H200, 64, 1024)
    assert not e.complete and e.groups_by_registers is None and e.occupancy is not None


def test_estimate_on_an_unknown_device():
    e = estimate(POCL, 64, 1 << 19)
    assert e.groups_by_local == 4 and e.groups_by_threads is None and e.occupancy is None
    assert e.limited_by == "local memory" and not e.complete and "unknown" in e.source
    e = estimate(POCL, 64, 0)
    assert e.groups_per_cu is None and e.limited_by == "unknown"
    with pytest.raises(ValueError):
        estimate(POCL, 0, 16)


NV_LOG = """
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'branch' for 'sm_90'
ptxas info    : Function properties for branch
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, 372 bytes cmem[0]
ptxas info    : Compiling entry function 'poly' for 'sm_90'
ptxas info    : Function properties for poly
    16 bytes stack frame, 24 bytes spill stores, 20 bytes spill loads
ptxas info    : Used 64 registers, 372 bytes cmem[0]
"""


def test_register_counts_are_parsed_defensively():
    poly = parse_registers(NV_LOG, "poly")
    assert (poly.registers, poly.spill_store_bytes, poly.spill_load_bytes) == (64, 24, 20)
    assert parse_registers(NV_LOG, "branch").registers == 12
    assert parse_registers(NV_LOG, "absent").registers is None
    assert parse_registers("", "poly").registers is None
    assert parse_registers("ptxas info : Used 7 registers", "k").registers == 7
    assert parse_registers("Used 7 registers\nUsed 9 registers", "k").registers is None


WRONG_STAGED = """
__kernel void staged_copy(__global float* out, __global const float* in, __local float* scratch) {
    const size_t i = get_global_id(0);
    scratch[get_local_id(0)] = in[i];
    if (i != 5) out[i] = scratch[get_local_id(0)];
}
"""


def test_occupancy_draws_its_words_once_a_run(ctx):
    """Every point copies the same random words, drawn once; the destination is poisoned before
    each check, so a kernel that skips an element after a verified point is still caught."""
    exp = Occupancy(ctx, items=OCC_ITEMS, targets=[1, 4], work_group_sizes=[64])
    res = run_experiment(exp, **QUICK)
    assert res.all_verified, res.df["error"].tolist()
    words = exp.copy_check._words
    assert words is not None
    exp.kernel = ctx.program(WRONG_STAGED).kernel("staged_copy")
    point = res.rows[0]
    check = exp.verify({k: point[k] for k in ("local_size", "target_groups", "dynamic_local_bytes")})
    assert not check.passed
    assert exp.copy_check._words is words


def test_occupancy_wrong_kernel_and_oversized_local(ctx):
    exp = Occupancy(ctx, items=OCC_ITEMS, targets=[4], work_group_sizes=[64])
    exp.kernel = ctx.program(WRONG_STAGED).kernel("staged_copy")
    res = run_experiment(exp, **QUICK)
    assert [r["status"] for r in res.rows] == ["wrong result"]
    # Asking for more local memory than the device has fails before anything is enqueued.
    with pytest.raises(pyclperf.InvalidArgumentError, match="local memory"):
        exp.kernel.set_args(exp.dst, exp.src, pyclperf.LocalMemory(ctx.info.local_mem_bytes + 64))
        exp.kernel.run(OCC_ITEMS, 64)
    with pytest.raises(pyclperf.InvalidArgumentError, match="targets"):
        Occupancy(ctx, items=OCC_ITEMS, targets=[0])
    with pytest.raises(pyclperf.InvalidArgumentError, match="multiple"):
        Occupancy(ctx, items=100, targets=[1])


# --- launchbounds --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def launchbounds(ctx):
    return pyclperf.run("launchbounds", ctx, size=LB_ITEMS, values=LB_SIZES, steps=LB_STEPS,
                        lanes=LB_LANES, **QUICK)


def test_launchbounds_verifies_and_reports_the_required_size(launchbounds):
    df = launchbounds.df
    assert launchbounds.all_verified, df["error"].tolist()
    assert list(zip(df["work_group_size"], df["bounds"])) == [
        (s, b) for s in LB_SIZES for b in ("none", "reqd")]
    reqd = df[df["bounds"] == "reqd"]
    assert list(reqd["compile_work_group_size"]) == [f"{s},1,1" for s in LB_SIZES]
    assert (df[df["bounds"] == "none"]["compile_work_group_size"] == "0,0,0").all()
    assert df["reqd_reported"].all()
    flops = LB_ITEMS * LB_STEPS * (2 + 8 * LB_LANES)
    assert flops_per_item(LB_STEPS, LB_LANES) * LB_ITEMS == flops
    assert np.allclose(df["gflops"], flops / df["median_ns"])
    assert "reqd_work_group_size over none" in launchbounds.meta["conclusion"]
    assert len(launchbounds.meta["reqd_over_none"]) == len(LB_SIZES)


def test_poly_reference_matches_a_direct_sum(rng):
    x = rng.random(16)
    direct = np.zeros_like(x)
    for s in range(5):
        for lane in range(3):
            y = x + s * STEP_GAP + lane * LANE_GAP
            direct += sum(c * y**j for j, c in enumerate(COEFFS))
    assert np.allclose(poly_reference(x, 5, 3), direct, rtol=1e-12)


def test_a_required_size_is_enforced_before_enqueue(ctx):
    exp = LaunchBounds(ctx, items=LB_ITEMS, sizes=[64], steps=LB_STEPS, lanes=LB_LANES)
    kernel = exp.program("reqd", 64).kernel("poly").set_args(exp.dst, exp.src, np.int32(1))
    assert list(kernel.limits().compile_work_group_size) == [64, 1, 1]
    with pytest.raises(pyclperf.InvalidArgumentError, match=r"requires work-group size.*reqd_work_group_size"):
        kernel.run(LB_ITEMS, 128)
    with pytest.raises(pyclperf.InvalidArgumentError, match="reqd_work_group_size"):
        kernel.time(LB_ITEMS, 32, warmup=0, repeats=1)
    with pytest.raises(pyclperf.InvalidArgumentError, match="lanes"):
        LaunchBounds(ctx, items=LB_ITEMS, sizes=[64], lanes=0)


def test_a_size_only_the_reqd_build_can_run(ctx):
    exp = LaunchBounds(ctx, items=LB_ITEMS, sizes=[64, 128], steps=LB_STEPS, lanes=LB_LANES)
    real = exp.program
    exp.program = lambda b, s: CappedProgram(real(b, s), 64) if b == "none" else real(b, s)
    res = run_experiment(exp, **QUICK)
    assert [r["status"] for r in res.rows] == ["ok", "ok", "skipped", "ok"]
    assert res.rows[2]["kernel_max_work_group_size"] == 64 and res.rows[2]["over_kernel_limit"]
    assert "only the reqd build ran at [128]" in res.meta["conclusion"]
    assert "at most 64 work-items" in res.meta["conclusion"]
    assert "refused the launch (CL_INVALID_WORK_GROUP_SIZE)" in res.meta["conclusion"]
    assert res.meta["only_reqd_launches"] == [128]


WRONG_POLY = """
__kernel void poly(__global float* out, __global const float* in, const int steps) {
    const size_t i = get_global_id(0);
    float acc = 0.0f;
    for (int s = 0; s < steps; ++s) {
        const float y = in[i] + (float)s * 0.001953125f;     /* lane 0 only */
        acc += ((0.0625f * y + 0.125f) * y + 0.25f) * y + 0.5f;
    }
    out[i] = acc * LANES;
}
"""


def test_a_wrong_poly_is_caught(ctx):
    exp = LaunchBounds(ctx, items=LB_ITEMS, sizes=[64], steps=LB_STEPS, lanes=LB_LANES)
    exp.program = lambda bounds, size: ctx.program(WRONG_POLY, defines={"LANES": LB_LANES})
    res = run_experiment(exp, **QUICK)
    assert {r["status"] for r in res.rows} == {"wrong result"}


# --- divergence ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def divergence(ctx):
    return pyclperf.run("divergence", ctx, size=DV_ITEMS, local_size=DV_LOCAL, values=DV_GRAN,
                        iters=DV_ITERS, **QUICK)


def test_divergence_verifies_and_relates_to_the_baseline(divergence):
    df = divergence.df
    assert divergence.all_verified, df["error"].tolist()
    assert list(df["granularity"]) == [0] + DV_GRAN + [1, 1, 1] and df["variant"].iloc[0] == "no branch"
    assert list(df["variant"].iloc[-3:]) == ["if/else", "select", "loop"]  # Guide 6.2
    base = df["median_ns"].iloc[0]
    assert np.allclose(df["slowdown"], df["median_ns"] / base)
    assert np.allclose(df["bytes"], 2 * 4 * DV_ITEMS)
    text = divergence.meta["conclusion"]
    assert "Guide 6.1" in text and "warp size" in text and "divergence_free_from" in divergence.meta
    assert "Guide 6.2" in text and "select" in text


def test_divergence_reference(rng):
    x = rng.random(8)
    for r, k in ((0.75, 0.125), (-0.5, 0.375)):
        xs, total = x.copy(), np.zeros_like(x)
        for _ in range(6):
            xs = r * xs + k
            total += xs
        assert np.allclose(path_sum(x, 6, r, k), total, rtol=1e-12)
    x = rng.random(16)
    want = divergence_reference(x, 8, 2, 6)
    lid = np.arange(16) % 8
    assert np.allclose(want[(lid // 2) % 2 == 1], path_sum(x, 6, -0.5, 0.375)[(lid // 2) % 2 == 1])
    assert np.allclose(divergence_reference(x, 8, 0, 6), path_sum(x, 6, 0.75, 0.125))


def test_divergence_draws_its_input_once_a_run(ctx, rng):
    """Every point runs on the same random input and its two path sums, computed once a run;
    each point's reference still picks per work-item what the plain index formula picks."""
    exp = Divergence(ctx, items=DV_ITEMS, local_size=DV_LOCAL, granularities=[1, 4],
                     iters=DV_ITERS)
    res = run_experiment(exp, **QUICK)
    assert res.all_verified, res.df["error"].tolist()
    drawn = exp._input
    assert drawn is not None
    exp.verify({"variant": "branch", "granularity": 4})
    assert exp._input is drawn
    x = rng.random(4 * 16)
    lid = np.arange(x.size) % 16
    for g in (0, 1, 2, 4, 8):
        b_side = (lid // g) % 2 == 1 if g else np.zeros(x.size, bool)
        plain = np.where(b_side, path_sum(x, 5, -0.5, 0.375), path_sum(x, 5, 0.75, 0.125))
        assert np.array_equal(divergence_reference(x, 16, g, 5), plain)


SWAPPED = """
__kernel void branch(__global float* out, __global const float* in, const int iters, const uint g) {
    const size_t i = get_global_id(0);
    float x = in[i], s = 0.0f;
    const int b = ((get_local_id(0) / g) % 2) == 0;      /* the paths swapped */
    for (int k = 0; k < iters; ++k) { x = b ? 0.375f - x * 0.5f : x * 0.75f + 0.125f; s += x; }
    out[i] = s;
}
"""


def test_swapped_paths_are_caught_and_bad_parameters_refused(ctx):
    exp = Divergence(ctx, items=DV_ITEMS, local_size=DV_LOCAL, granularities=[1, 64], iters=DV_ITERS)
    exp.branch = ctx.program(SWAPPED).kernel("branch")
    # select() with its operands the wrong way round: odd work-items on path A.
    source = kernel_source("divergence.cl")
    old = "select(x * RA + KA, KB - x * RB, odd)"
    assert old in source
    exp.predication["select"] = ctx.program(source.replace(old, "select(KB - x * RB, x * RA + KA, odd)")).kernel("pred_select")
    res = run_experiment(exp, **QUICK)
    assert [r["status"] for r in res.rows] == ["ok", "wrong result", "wrong result", "ok", "wrong result", "ok"]
    with pytest.raises(pyclperf.InvalidArgumentError, match="at least twice"):
        Divergence(ctx, items=DV_ITEMS, local_size=64, granularities=[64])
    with pytest.raises(pyclperf.InvalidArgumentError, match=">= 1"):
        Divergence(ctx, items=DV_ITEMS, local_size=DV_LOCAL, granularities=[0])


# --- all four --------------------------------------------------------------------------------

def test_each_record_plots(blocksize, occupancy, launchbounds, divergence, tmp_path):
    for res in (blocksize, occupancy, launchbounds, divergence):
        assert res.meta["plot"]["kind"] == "lines"
        assert pyclperf.save_plot(res, tmp_path / f"{res.experiment}.png") is not None
        assert (tmp_path / f"{res.experiment}.png").stat().st_size > 0


@pytest.mark.parametrize("name,args", [
    ("divergence", ["--size", str(DV_ITEMS)]),
    ("occupancy", ["--size", str(OCC_ITEMS)]),
])
def test_cli_runs_and_plots(ctx, name, args, tmp_path, capsys, monkeypatch):
    _device_env(ctx, monkeypatch)
    code = cli.main(["run", name, *args, "--warmup", "1", "--repeats", "2", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert (tmp_path / f"{name}.png").is_file() and (tmp_path / f"{name}.csv").is_file()
    assert pyclperf.Results.load(tmp_path / f"{name}.jsonl").meta["conclusion"] in out


def test_blocksize_draws_its_inputs_once_a_run(ctx, monkeypatch):
    """Every size copies the same random words and multiplies the same matrices: one draw and
    one float64 product a run, and a kernel that writes a wrong element is still caught."""
    exp = BlockSize(ctx, sizes=[32, 64], items=BS_ITEMS, n=BS_N)
    res = run_experiment(exp, **QUICK)
    assert res.all_verified, res.df["error"].tolist()
    words, matmul = exp.copy_check._words, exp._matmul
    assert words is not None and matmul is not None
    exp.verify({"kernel": "copy", "local_size": 32})
    exp.verify({"kernel": "matmul", "local_size": 64})
    assert exp.copy_check._words is words and exp._matmul is matmul  # drawn once, not per point
    a, b, want, _ = exp._matmul
    assert np.allclose(want, a.astype(np.float64) @ b.astype(np.float64))
    wrong = BlockSize(ctx, sizes=[32], items=BS_ITEMS, n=BS_N, kernels=["matmul"])
    wrong.matmul_kernel = ctx.program(kernel_source("blocksize.cl").replace(
        "c[(size_t)row * n + col] = sum;", "c[(size_t)row * n + col] = (row == 1 && col == 2) ? 0.0f : sum;")).kernel("matmul")
    bad = run_experiment(wrong, **QUICK)
    assert bad.rows[0]["status"] == "wrong result", bad.rows[0]
