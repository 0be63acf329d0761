"""Mistakes in a tune()/run_kernel() call are told in one line that names what to change, and
what the compiler prints goes into the configuration's row, not onto the console."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from pyclperf import KernelRunError, run_kernel, tune
from pyclperf.tuner.declared import kernel_parameter_names
from pyclperf.tuner.options import from_flat

FAST = dict(min_time=0.0, min_repeats=1, max_repeats=1, warmup=0, progress=False)
VADD = """
// c = a + b
__kernel void vadd(__global float *c, __global const float *a /* first */,
                   __global const float *b, const int n) {
    const int i = get_global_id(0);
    if (i < n) c[i] = a[i] + b[i];
}
"""


@pytest.mark.parametrize("isolate", [True, False])
@pytest.mark.parametrize("block, said", [
    (0, "the work-group size in x (block_size_x) is 0: it must be a positive integer"),
    (float("inf"), "the work-group size in x (block_size_x) is inf: it must be a positive integer"),
    (2 ** 70, "is 1180591620717411303424, more than an NDRange can name (2**64-1, size_t)"),
    (12.5, "is 12.5: it must be a positive integer"),
])
def test_run_kernel_with_an_impossible_block_size_raises_kernel_run_error(
        ctx, isolate: bool, block: float, said: str) -> None:
    a = np.ones(64, np.float32)
    with pytest.raises(KernelRunError) as err:
        run_kernel(VADD, "vadd", 64, [np.zeros_like(a), a, a, np.int32(64)],
                   {"block_size_x": block}, ctx=ctx, isolate=isolate)
    assert err.value.status == "invalid"
    assert said in str(err.value) and "\n" not in str(err.value)


def test_tune_makes_impossible_block_sizes_invalid_rows(ctx, rng) -> None:
    a = rng.standard_normal(64).astype(np.float32)
    res = tune(
        VADD,
        "vadd",
        64,
        [np.zeros_like(a), a, a, np.int32(64)],
        {"block_size_x": [0, 16, 2**70], "block_size_y": [1, 2.0]},
        **from_flat(dict(ctx=ctx, answer=[2 * a, None, None, None], **FAST)),
    )
    by = {(r["block_size_x"], r["block_size_y"]): r for r in res.rows}
    assert {k: r["status"] for k, r in by.items()} == {
        (0, 1): "invalid", (0, 2.0): "invalid", (16, 1): "ok", (16, 2.0): "ok",
        (2 ** 70, 1): "invalid", (2 ** 70, 2.0): "invalid"}
    assert by[(16, 2.0)]["local_size"] == "(16, 2)" and by[(16, 2.0)]["global_size"] == "(64, 2)"
    assert "(block_size_x) is 0" in by[(0, 1)]["error"]


def test_an_old_style_reference_is_told_how_to_write_it(ctx) -> None:
    a = np.ones(100, np.float32)
    with pytest.raises(TypeError) as err:
        tune(
            VADD,
            "vadd",
            100,
            [np.zeros_like(a), a, a, np.int32(100)],
            {"block_size_x": [32]},
            **from_flat(
                dict(ctx=ctx, reference=lambda c, a, b, n: [a + b, None, None, None], **FAST)
            ),
        )
    text = str(err.value)
    assert "reference(config, *args)" in text and "it is reference(c, a, b, n)" in text
    assert "write it as def reference(config, c, a, b, n): ..." in text and "\n" not in text


def test_an_answer_of_the_wrong_size_names_the_kernels_argument(ctx) -> None:
    a = np.ones(100, np.float32)
    with pytest.raises(ValueError, match=r"answer\[0\] for argument 0 \('c'\) has 50 elements"):
        tune(
            VADD,
            "vadd",
            100,
            [np.zeros_like(a), a, a, np.int32(100)],
            {"block_size_x": [32]},
            **from_flat(dict(ctx=ctx, answer=[np.ones(50, np.float32), None, None, None], **FAST)),
        )
    with pytest.raises(TypeError, match=r"the reference's result\[0\] for argument 0 \('c'\) is "
                                        "float64"):
        tune(
            VADD,
            "vadd",
            100,
            [np.zeros_like(a), a, a, np.int32(100)],
            {"block_size_x": [32]},
            **from_flat(
                dict(
                    ctx=ctx,
                    reference=lambda cfg, c, a, b, n: [a + b.astype(np.float64), None, None, None],
                    **FAST,
                )
            ),
        )


@pytest.mark.parametrize("source, names", [
    (VADD, ["c", "a", "b", "n"]),
    ("__kernel void __attribute__((reqd_work_group_size(64, 1, 1)))\nvadd(__global float* x,"
     " __local float tile[64], const uint n) {}", ["x", "tile", "n"]),
    ("__kernel void vadd(void) {}", []),
    ("__kernel void vadd(ARGS) {}", None),                    # a macro: unknown
    ("void vadd(int a); __kernel void k(void) { vadd(1); }", None),  # no kernel of that name
    ("#ifdef A\n__kernel void vadd(int a) {}\n#else\n__kernel void vadd(int b) {}\n#endif", None),
])
def test_kernel_parameter_names_from_the_source(source: str, names: list | None) -> None:
    assert kernel_parameter_names(source, "vadd") == names


WARNS = """__kernel void warns(__global float* a) {
    int x = 1.5;  /* an implicit conversion: the compiler warns */
    a[get_global_id(0)] = x + SALT; }"""


@pytest.mark.parametrize("isolate", [False, True])
def test_build_warnings_go_into_the_row_not_the_console(ctx, capfd, isolate: bool) -> None:
    # A fresh salt each run: PoCL's kernel cache would otherwise skip the compiler.
    salt = uuid.uuid4().int % 10 ** 9
    res = tune(
        WARNS,
        "warns",
        64,
        [np.zeros(64, np.float32)],
        {"block_size_x": [16, 32], "SALT": [salt]},
        **from_flat(dict(ctx=ctx, isolate=isolate, **FAST)),
    )
    console = capfd.readouterr()
    assert "warning" not in console.err + console.out
    pocl = ctx.info.platform_name.startswith("Portable Computing Language")
    for row in res.rows:
        assert row["status"] == "timed"
        if pocl:  # what a compiler logs and prints is its own; PoCL's clang is known here
            assert "implicit conversion" in row["build_log"]
            said = row["build_log"] if not isolate else row["worker_output"]
            # clang's own count, once per build: never another configuration's.
            assert said.count("warning generated.") == 1, said
