"""The p2p experiment on PoCL: with one device every point is skipped with the reason; between
two contexts on the one device the staged copy is measured and verified, and a copy that lands
wrong is caught."""

from __future__ import annotations

import numpy as np

from pyclperf.experiments import run
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments.p2p import STAGED, P2P


def test_p2p_on_one_device_skips_every_point_with_the_reason(ctx):
    res = run("p2p", ctx, size=64 * 1024, repeats=2, warmup=0)
    assert res.rows and {r["status"] for r in res.rows} == {"skipped"}
    assert all("two devices of one platform" in r["error"] for r in res.rows)


def test_p2p_staged_copy_between_two_contexts_is_verified(ctx):
    exp = P2P(ctx, sizes=[4096, 65536], peer=ctx.info)
    res = run_experiment(exp, warmup=0, repeats=2)
    assert {r["direction"] for r in res.rows} == {"A->B", "B->A"} and len(res.rows) == 4
    assert all(r["status"] == "ok" and r["path"] == STAGED and r["gbps"] > 0 for r in res.rows)


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


class _BrokenP2P(P2P):
    def _buffer(self, ctx: object, role: str) -> object:
        buf = super()._buffer(ctx, role)
        return _Corrupting(buf) if role == "dst" else buf


def test_p2p_catches_a_copy_that_lands_wrong(ctx):
    exp = _BrokenP2P(ctx, sizes=[4096], peer=ctx.info)
    row = exp.measure({"path": STAGED, "direction": "A->B", "size_bytes": 4096},
                      warmup=0, repeats=1, method="host", verify=True)
    assert row["status"] == "wrong result" and "1 of 4096 bytes differ" in row["error"]
