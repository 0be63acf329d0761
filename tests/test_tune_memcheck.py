"""tune(check="memory") and run_kernel(check="memory"): each configuration's launch runs on
Oclgrind first, and what it finds is the row's status, with the source line."""

from __future__ import annotations

import numpy as np
import pytest

from pyclperf import KernelRunError, LocalMemory, run_kernel, tune
from pyclperf.device.icd import find_oclgrind
from pyclperf.tuner.options import from_flat

pytestmark = pytest.mark.skipif(find_oclgrind() is None,
                                reason="Oclgrind is not installed (apt-get install oclgrind)")

FAST = dict(min_time=0.0, min_repeats=1, max_repeats=1, warmup=0, progress=False)

# myGEMM3 from CNugteren/myGEMM (src/kernels.cl, MIT licence): tiled GEMM with WPT results per
# work-item, column-major. The project launches it with local size (TS, TS/WPT) over a global
# size (M, N/WPT); RTS is its settings.h's (TS/WPT).
MYGEMM3 = """
#define RTS (TS/WPT)
__kernel void myGEMM3(const int M, const int N, const int K,
                      const __global float* A,
                      const __global float* B,
                      __global float* C) {
    const int row = get_local_id(0);
    const int col = get_local_id(1);
    const int globalRow = TS*get_group_id(0) + row;
    const int globalCol = TS*get_group_id(1) + col;
    __local float Asub[TS][TS];
    __local float Bsub[TS][TS];
    float acc[WPT];
    for (int w=0; w<WPT; w++) {
        acc[w] = 0.0f;
    }
    const int numTiles = K/TS;
    for (int t=0; t<numTiles; t++) {
        for (int w=0; w<WPT; w++) {
            const int tiledRow = TS*t + row;
            const int tiledCol = TS*t + col;
            Asub[col + w*RTS][row] = A[(tiledCol + w*RTS)*M + globalRow];
            Bsub[col + w*RTS][row] = B[(globalCol + w*RTS)*K + tiledRow];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k=0; k<TS; k++) {
            for (int w=0; w<WPT; w++) {
                acc[w] += Asub[k][row] * Bsub[col + w*RTS][k];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int w=0; w<WPT; w++) {
        C[(globalCol + w*RTS)*M + globalRow] = acc[w];
    }
}"""


def test_a_gemm_launched_with_the_wrong_work_group_shape_is_named(ctx, rng):
    m = n = k = 64  # N/WPT = 16: both work-group shapes divide the global size
    a = rng.standard_normal((k, m)).astype(np.float32)   # column-major M x K: A[k*M + m]
    b = rng.standard_normal((n, k)).astype(np.float32)   # column-major K x N: B[n*K + k]
    c = (b.astype(np.float64) @ a.astype(np.float64)).astype(np.float32)  # C[n*M + m]
    res = tune(
        MYGEMM3,
        "myGEMM3",
        (m, n),
        [np.int32(m), np.int32(n), np.int32(k), a, b, np.empty((n, m), np.float32)],
        {"TS": [16], "WPT": [4], "block_size_x": [16], "block_size_y": [4, 16]},
        **from_flat(
            dict(
                global_size=lambda cfg: (m, n // cfg["WPT"]),
                ctx=ctx,
                answer=[None] * 5 + [c],
                rtol=1e-4,
                atol=1e-4,
                check="memory",
                **FAST,
            )
        ),
    )
    rows = {r["block_size_y"]: r for r in res.rows}
    assert rows[4]["status"] == "ok", rows[4]          # (TS, TS/WPT): the shape it is written for
    wrong = rows[16]
    assert wrong["status"] == "out of bounds", wrong
    assert "memory check (Oclgrind)" in wrong["error"] and "line " in wrong["error"], wrong
    assert "myGEMM3" in wrong["error"]


def test_local_memory_smaller_than_the_work_group_uses_is_out_of_bounds(ctx):
    src = """__kernel void stage(__global float* out, __local float* tmp) {
        const int lid = get_local_id(0);
        tmp[lid] = (float)get_global_id(0);
        barrier(CLK_LOCAL_MEM_FENCE);
        out[get_global_id(0)] = tmp[lid];
    }"""
    want = np.arange(64, dtype=np.float32)
    # Without the check this runs as 'ok' (the device does not catch the __local overrun).
    args = [np.empty(64, np.float32), LocalMemory(4 * 16)]
    plain = tune(
        src,
        "stage",
        64,
        args,
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, answer=[want, None], **FAST)),
    )
    checked = tune(
        src,
        "stage",
        64,
        args,
        {"block_size_x": [64]},
        **from_flat(dict(ctx=ctx, answer=[want, None], check="memory", **FAST)),
    )
    row = checked.rows[0]
    assert row["status"] == "out of bounds" and "'tmp'" in row["error"], (plain.rows[0], row)


def test_run_kernel_memory_check_raises_with_the_line(ctx):
    src = """__kernel void shifted(__global float* out, __global const float* a) {
        const int i = get_global_id(0);
        out[i + 1100] = a[i];
    }"""
    a = np.arange(256, dtype=np.float32)
    with pytest.raises(KernelRunError) as err:
        run_kernel(src, "shifted", 256, [np.empty_like(a), a], {"block_size_x": 64}, ctx=ctx,
                   check="memory")
    assert err.value.status == "out of bounds"
    assert "line 3" in str(err.value) and "'out'" in str(err.value)


def test_an_unknown_check_is_refused(ctx):
    with pytest.raises(ValueError, match="check="):
        tune(
            "__kernel void k(__global float* x) { x[0] = 1; }",
            "k",
            1,
            [np.empty(1, np.float32)],
            {"block_size_x": [1]},
            **from_flat(dict(ctx=ctx, check="races", **FAST)),
        )
