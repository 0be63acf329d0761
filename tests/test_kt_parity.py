"""Kernel Tuner scripts that run unchanged through pyclperf.tune_kernel, launched with the
shapes Kernel Tuner would use.

SHOC's reduction kernel (tests/data/shoc/reduction.cl: github.com/vetter/shoc,
src/opencl/level1/reduction/reduction.cl at commit 1829f6eedf62a257118716f09401f2f4e2b38aec,
BSD-3-Clause, see tests/data/shoc/README.md) is tuned the way SHOC's host code
(src/opencl/level1/reduction/Reduction.cpp) runs it: 64 work-groups of localWorkSize items
(globalWorkSize = localWorkSize * 64), localWorkSize * sizeof(float) bytes of __local memory,
built with -DSINGLE_PRECISION, and the element count set with
clSetKernelArg(reduce, 3, sizeof(cl_int), &size) for the kernel's ``const unsigned int n``: a
signed 32-bit integer, which a Kernel Tuner script writes as np.int32.
"""

from __future__ import annotations

import ast
import itertools
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pytest

from pyclperf import LocalMemory, run_kernel, tune_kernel
from pyclperf.tuner.space import Geometry

SHOC = Path(__file__).parent / "data" / "shoc"
DEFAULT_NAMES = ["block_size_x", "block_size_y", "block_size_z"]
GROUPS = 64  # SHOC: numBlocks = 64, globalWorkSize = localWorkSize * 64


def kt_launch(problem_size: Any, params: dict, grid_div: Sequence[Any],
              block_size_names: Sequence[str] | None = None) -> tuple[tuple, tuple]:
    """(global, local) as Kernel Tuner launches an OpenCL kernel, always in 3 dimensions.
    Its rule (kernel_tuner/util.py, backends/opencl.py): the problem size padded to 3 with 1s;
    the block-size names padded with the default ones, the block x by default 256, y and z 1;
    the grid is the problem size over the divisor (by default the block size, a list the
    product of its parameters), rounded up; global = grid x block, local = block."""
    names = list(block_size_names or DEFAULT_NAMES)
    names += DEFAULT_NAMES[len(names):]
    block = [int(params.get(names[0], 256)), int(params.get(names[1], 1)),
             int(params.get(names[2], 1))]
    size = [problem_size] if isinstance(problem_size, int) else list(problem_size)
    size += [1] * (3 - len(size))
    glob = []
    for d in range(3):
        div = grid_div[d]
        if div is None:
            div = params.get(names[d], 1)
        elif isinstance(div, (list, tuple)):
            div = math.prod(params[p] for p in div)
        glob.append(math.ceil(size[d] / div) * block[d])
    return tuple(glob), tuple(block)


def launched(row: dict) -> tuple[tuple, tuple]:
    """A row's launched (global, local) sizes padded to 3 dimensions, as Kernel Tuner's are."""
    def three(text: str) -> tuple:
        dims = list(ast.literal_eval(text))
        return tuple(dims + [1] * (3 - len(dims)))
    return three(row["global_size"]), three(row["local_size"])


def rows_of(env: dict) -> list[dict]:
    return list(env["pyclperf_results"].rows)


def test_geometry_follows_kernel_tuners_launch_rule() -> None:
    """Every combination of problem dimensions, tuned block sizes, divisors and names: the
    work-items pyclperf launches in each dimension are those Kernel Tuner launches."""
    cases = 0
    for problem in (1000, (1000,), (100, 30), (100, 30, 7)):
        for tuned in (["block_size_x"], ["block_size_x", "block_size_y"],
                      ["block_size_x", "block_size_z"], ["block_size_x", "block_size_y", "block_size_z"]):
            for div_x in (None, ["block_size_x", "vec"]):
                params = {"block_size_x": 16, "block_size_y": 4, "block_size_z": 2, "vec": 2}
                config = {k: params[k] for k in tuned + ["vec"]}
                grid_div = (div_x, None, None)
                glob, local = Geometry(problem, grid_div=grid_div).ndrange(config)
                got = (tuple(glob + [1] * (3 - len(glob))), tuple(local + [1] * (3 - len(local))))
                assert got == kt_launch(problem, config, grid_div), (problem, tuned, div_x)
                cases += 1
    # Names as Kernel Tuner reads them: repeated for a square tile, padded with the defaults.
    for names, config in ((["TS", "TS"], {"TS": 8}), (["bx"], {"bx": 32, "block_size_y": 2}),
                          (["bx", "by", "bz"], {"bx": 4, "by": 2, "bz": 2})):
        for problem in (50, (50, 20), (50, 20, 3)):
            glob, local = Geometry(problem, block_size_names=names).ndrange(config)
            got = (tuple(glob + [1] * (3 - len(glob))), tuple(local + [1] * (3 - len(local))))
            assert got == kt_launch(problem, config, (None, None, None), names), (names, problem)
            cases += 1
    assert cases == 41


def test_shoc_reduction_runs_unchanged_with_a_signed_count(ctx, rng) -> None:
    source = (SHOC / "reduction.cl").read_text()
    size = (1 * 1024 * 1024) // 4  # SHOC's smallest problem: 1 MiB of floats
    # SHOC fills i % 3; small random integers keep every float sum exact, in any order.
    idata = rng.integers(0, 3, size).astype(np.float32)
    odata = np.zeros(GROUPS, np.float32)
    args = [idata, odata, LocalMemory(256 * 4), np.int32(size)]
    tune_params = {"block_size_x": [64, 128, 256]}

    def verify(answer: Any, result: list, atol: float = 1e-6) -> bool:
        # SHOC's checkResults: the partial sums add up to the sum of the input.
        return bool(np.isclose(result[1].sum(dtype=np.float64), idata.sum(dtype=np.float64)))

    platform, device = ctx.info.platform_index, ctx.info.device_index
    results, env = tune_kernel("reduce", source, GROUPS, args, tune_params, grid_div_x=[],
                               verify=verify, compiler_options=["-DSINGLE_PRECISION"],
                               iterations=3, platform=platform, device=device, quiet=True)
    assert [r["block_size_x"] for r in results] == [64, 128, 256]
    for row in rows_of(env):
        assert row["status"] == "ok", row.get("error")
        assert launched(row) == kt_launch(GROUPS, row, ([], None, None))
        assert launched(row) == ((GROUPS * row["block_size_x"], 1, 1), (row["block_size_x"], 1, 1))
    assert all(isinstance(r["time"], float) for r in results)
    # Each work-group's partial sum, as NumPy adds it: group g reads the chunks of 2 x block
    # elements whose index is g modulo the 64 groups.
    for block in tune_params["block_size_x"]:
        out = run_kernel(source, "reduce", GROUPS, args, {"block_size_x": block}, grid_div_x=[],
                         options="-DSINGLE_PRECISION", ctx=ctx)[1]
        chunks = idata.reshape(-1, 2 * block).sum(axis=1, dtype=np.float64)
        np.testing.assert_array_equal(out, chunks.reshape(-1, GROUPS).sum(axis=0))


@pytest.mark.parametrize("count, why", [(np.int32(-1), "a negative value has no unsigned form"),
                                        (np.int64(1 << 32), "too big")])
def test_a_signed_count_the_unsigned_parameter_cannot_hold_is_refused_naming_it(
        ctx, count: np.integer, why: str) -> None:
    source = (SHOC / "reduction.cl").read_text()
    args = [np.ones(1024, np.float32), np.zeros(GROUPS, np.float32), LocalMemory(64 * 4), count]
    results, env = tune_kernel("reduce", source, GROUPS, args, {"block_size_x": [64]},
                               grid_div_x=[], compiler_options=["-DSINGLE_PRECISION"],
                               platform=ctx.info.platform_index, device=ctx.info.device_index,
                               quiet=True)
    (row,) = rows_of(env)
    assert row["status"] == "invalid"
    assert "argument 3 ('n', private uint): np." in row["error"]
    assert "does not fit uint (0 to 4294967295)" in row["error"] and why in row["error"]
    assert "\n" not in row["error"]


# A tiled transpose in SHOC's style: a TS x TS tile through __local memory, sizes passed as
# unsigned int. Kernel Tuner scripts tune such a tile with block_size_names=["TS", "TS"].
TRANSPOSE = """
__kernel void transpose(__global float* out, __global const float* in,
                        const unsigned int width, const unsigned int height) {
    __local float tile[TS][TS + 1];
    const unsigned int x = get_global_id(0), y = get_global_id(1);
    const unsigned int lx = get_local_id(0), ly = get_local_id(1);
    if (x < width && y < height) tile[ly][lx] = in[y * width + x];
    barrier(CLK_LOCAL_MEM_FENCE);
    const unsigned int ox = get_group_id(1) * TS + lx, oy = get_group_id(0) * TS + ly;
    if (ox < height && oy < width) out[oy * height + ox] = tile[lx][ly];
}
"""


def test_a_square_tile_from_repeated_block_size_names(ctx, rng) -> None:
    width, height = 45, 30  # no tile size divides both
    a = rng.standard_normal((height, width)).astype(np.float32)
    args = [np.zeros(width * height, np.float32), a.ravel(), np.int32(width), np.int32(height)]
    answer = [a.T.ravel(), None, None, None]
    results, env = tune_kernel("transpose", TRANSPOSE, (width, height), args, {"TS": [4, 8, 16]},
                               block_size_names=["TS", "TS"], answer=answer, iterations=3,
                               platform=ctx.info.platform_index, device=ctx.info.device_index,
                               quiet=True)
    assert len(results) == 3 and all(isinstance(r["time"], float) for r in results)
    for row in rows_of(env):
        assert row["status"] == "ok", row.get("error")
        assert launched(row) == kt_launch((width, height), row, (None, None, None), ["TS", "TS"])


# One row per work-item in x, block_size_y lanes sharing it (as SHOC's vector CSR kernel
# shares a row among a warp's lanes, here along the second dimension): a 1-D problem whose
# work-group is 2-D.
ROW_SUMS = """
__kernel void row_sums(__global float* sums, __global const float* m,
                       const unsigned int rows, const unsigned int cols) {
    __local float part[block_size_x * block_size_y];
    const unsigned int r = get_global_id(0), lane = get_local_id(1), lanes = get_local_size(1);
    const unsigned int first = get_local_id(0) * lanes;
    float acc = 0.0f;
    if (r < rows)
        for (unsigned int c = lane; c < cols; c += lanes) acc += m[r * cols + c];
    part[first + lane] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane == 0 && r < rows) {
        float s = 0.0f;
        for (unsigned int l = 0; l < lanes; ++l) s += part[first + l];
        sums[r] = s;
    }
}
"""


def test_a_1d_problem_with_block_size_y_launches_2d_work_groups(ctx, rng) -> None:
    rows, cols = 1000, 37
    m = rng.standard_normal((rows, cols)).astype(np.float32)
    args = [np.zeros(rows, np.float32), m.ravel(), np.int32(rows), np.int32(cols)]
    answer = [m.sum(axis=1, dtype=np.float64).astype(np.float32), None, None, None]
    tune_params = {"block_size_x": [8, 16], "block_size_y": [1, 2, 4]}
    results, env = tune_kernel("row_sums", ROW_SUMS, rows, args, tune_params, answer=answer,
                               atol=1e-4, iterations=3, platform=ctx.info.platform_index,
                               device=ctx.info.device_index, quiet=True)
    assert len(results) == 6
    shapes = set()
    for row in rows_of(env):
        assert row["status"] == "ok", row.get("error")
        assert launched(row) == kt_launch(rows, row, (None, None, None))
        shapes.add(row["local_size"])
    assert "(16, 4)" in shapes and "(8, 2)" in shapes
    assert all(math.ceil(rows / r["block_size_x"]) * r["block_size_x"] ==
               launched(r)[0][0] for r in rows_of(env))
    assert list(itertools.product(*tune_params.values())) == [
        (r["block_size_x"], r["block_size_y"]) for r in results]
