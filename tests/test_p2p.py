"""The p2p experiment on PoCL: with one device every point is skipped with the reason; the shared
context's copy and kernel paths, and the staged one, are measured and verified on a loopback pair
(one device, two queues) and between two PoCL devices (POCL_DEVICES="pthread pthread", in a
child process, since PoCL reads it once); copies that land wrong are caught."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from pyclperf import _core
from pyclperf.experiments import run
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments.p2p import COPY, KERNEL, MIGRATE, POISON, STAGED, P2P
from pyclperf.device.sources import kernel_source

PATHS = {COPY, MIGRATE, KERNEL, STAGED}


def test_p2p_on_one_device_skips_every_point_with_the_reason(ctx):
    if P2P(ctx, sizes=[4096]).peer is not None:
        pytest.skip("this platform has a second device: nothing to skip")
    res = run("p2p", ctx, size=64 * 1024, repeats=2, warmup=0)
    assert res.rows and {r["status"] for r in res.rows} == {"skipped"}
    assert all("two devices of one platform" in r["error"] for r in res.rows)


def test_p2p_every_path_is_verified_on_a_loopback_pair(ctx):
    exp = P2P(ctx, sizes=[4096, 65536], peer=ctx.info, cuda=False)  # OpenCL's paths only
    res = run_experiment(exp, warmup=1, repeats=2)
    assert {r["direction"] for r in res.rows} == {"A->B", "B->A"}
    assert {r["path"] for r in res.rows} == PATHS and len(res.rows) == 2 * 2 * len(PATHS)
    assert all(r["status"] == "ok" and r["verified"] and r["gbps"] > 0 for r in res.rows), \
        [(r["mode"], r["size_bytes"], r["status"], r.get("error"), r.get("gbps")) for r in res.rows]
    assert res.meta["loopback"] is True and "loopback" in res.meta["conclusion"]


def test_peer_pair_refuses_misuse_with_named_errors(ctx):
    pair = _core.PeerPair(ctx.info.platform_index, ctx.info.device_index, ctx.info.device_index)
    with pytest.raises(_core.InvalidArgumentError, match="call allocate"):
        pair.time_copy(0)
    pair.allocate(4096)
    with pytest.raises(_core.InvalidArgumentError, match="side must be 0"):
        pair.fill(2, 0)
    with pytest.raises(_core.InvalidArgumentError, match="whole buffer"):
        pair.write(0, np.zeros(10, np.uint8))
    with pytest.raises(_core.InvalidArgumentError, match="no copy kernel"):
        pair.time_kernel_copy(0, 64, 1)
    with pytest.raises(_core.BuildError) as err:
        pair.build_copy_kernel("__kernel void broken( {", "broken", 4)
    assert err.value.log
    with pytest.raises(_core.ClError, match="CL_INVALID_KERNEL_NAME"):
        pair.build_copy_kernel(kernel_source("p2p.cl"), "no_such_kernel", 16)
    with pytest.raises(_core.DeviceMemoryError, match="largest allocation"):
        pair.allocate(ctx.info.max_alloc_bytes + 1)
    with pytest.raises(_core.InvalidArgumentError, match="holds no plain numbers"):
        pair.write(0, np.array([object()] * 4096))


def test_peer_pair_kernel_copy_moves_every_byte_of_an_odd_grid(ctx):
    """A grid much smaller than the buffer (3 groups of 7) must still copy all of it."""
    pair = _core.PeerPair(ctx.info.platform_index, ctx.info.device_index, ctx.info.device_index)
    pair.build_copy_kernel(kernel_source("p2p.cl"), "copy_words", 16)
    n = 16 * 1000
    pair.allocate(n)
    data = np.random.default_rng().integers(0, 256, n, dtype=np.uint8)
    pair.write(1, data)
    pair.fill(0, POISON)
    events, host = pair.time_kernel_copy(1, 7, 3, 0, 2)
    landed = np.full(n, 0x11, np.uint8)
    pair.read(0, landed)
    assert events.shape == host.shape == (2,) and (events > 0).all() and (host >= events).all()
    np.testing.assert_array_equal(landed, data)


class _Corrupting:
    """A destination buffer whose writes flip the first byte: a copy that lands wrong."""

    def __init__(self, buf: object) -> None:
        self.buf = buf

    def write(self, a: np.ndarray) -> None:
        b = a.copy()
        b[0] ^= 0xFF
        self.buf.write(b)

    def __getattr__(self, name: str) -> object:
        return getattr(self.buf, name)


class _BrokenStaging(P2P):
    def _staging_buffer(self, ctx: object, role: str) -> object:
        buf = super()._staging_buffer(ctx, role)
        return _Corrupting(buf) if role == "dst" else buf


class _ShortPair:
    """A shared-context pair whose copies stop one word short of the end."""

    def __init__(self, pair: object) -> None:
        self.pair = pair

    def read(self, side: int, a: np.ndarray) -> None:
        self.pair.read(side, a)
        a[-16:] = POISON  # the last word was never written: it still holds the poison

    def __getattr__(self, name: str) -> object:
        return getattr(self.pair, name)


@pytest.mark.parametrize("path", sorted(PATHS))
def test_p2p_catches_a_copy_that_lands_wrong(ctx, path):
    exp = _BrokenStaging(ctx, sizes=[4096], peer=ctx.info)
    exp.pair = _ShortPair(exp.pair)
    row = exp.measure({"path": path, "direction": "A->B", "size_bytes": 4096},
                      warmup=0, repeats=1, method="events", verify=True)
    assert row["status"] == "wrong result" and " of 4096 bytes differ" in row["error"]


def test_p2p_between_two_pocl_devices_in_one_context(ctx, tmp_path):
    if "portable computing language" not in ctx.info.platform_name.lower():
        pytest.skip("PoCL's POCL_DEVICES makes two CPU devices; this platform is "
                    f"{ctx.info.platform_name}")
    env = {**os.environ, "POCL_DEVICES": "pthread pthread"}
    env.pop("PYCLPERF_DEVICE", None)
    out = tmp_path / "p2p"
    proc = subprocess.run(
        [sys.executable, "-m", "pyclperf", "run", "p2p", "--device", "0:0", "--size", "65536",
         "--repeats", "2", "--no-plot", "--out", str(out)],
        env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in (out / "p2p.jsonl").read_text().splitlines()]
    data = [r for r in rows if "status" in r]
    assert {r["path"] for r in data} == PATHS
    assert all(r["status"] == "ok" and r["verified"] for r in data), data
    meta = next(r for r in rows if r.get("shared_context") is not None)
    assert meta["shared_context"] is True and meta["loopback"] is False


def test_p2p_conclusion_says_when_a_copy_outruns_cudas_peer_copy(ctx):
    """A figure 4.7x CUDA's peer copy (as a runtime serving its own replica gives) is called out."""
    from pyclperf.measure.results import Results

    exp = P2P(ctx, sizes=[4096], peer=ctx.info, cuda=False)
    rows = [{"status": "ok", "size_bytes": 1 << 28, "direction": "A->B", "path": p, "gbps": g,
             "spread_pct": 1.0} for p, g in ((COPY, 1823.0), (KERNEL, 400.0), ("cuda peer", 390.7))]
    res = Results(rows=rows, meta={})
    exp.finish(res)
    text = res.meta["conclusion"]
    assert "opencl copy 1823.0 GB/s, 4.666x CUDA's peer copy (faster than the link" in text
    assert "opencl kernel 400.0 GB/s, 1.024x CUDA's peer copy;" in text
