"""Context.prebuild: a sweep's variants built side by side before its first point, into the
context's cache, so that each point's own request finds its build there."""

from __future__ import annotations

import pyclperf
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments.buildopts import BuildOptions

SOURCE = "__kernel void k(__global float* x) { x[get_global_id(0)] = VALUE; }"


def test_prebuild_fills_the_cache_and_leaves_failures_to_their_request(ctx):
    ctx = pyclperf.Context(f"{ctx.info.platform_index}:{ctx.info.device_index}")
    requests = [{"source": SOURCE, "defines": {"VALUE": f"{v}.0f"}} for v in (1, 2, 3)]
    broken = {"source": "__kernel void k(__global float* x) { x[0] = nope; }"}
    assert ctx.prebuild(requests + requests[:1] + [broken, {"file": "no-such.cl"}]) == 3
    cached = dict(ctx._programs)
    # Each request now finds its build: the same object, built once.
    for r in requests:
        assert any(ctx.program(**r) is p for p in cached.values())
    assert len(ctx._programs) == 3
    # What failed here fails again, with its own message, where it is asked for.
    try:
        ctx.program(**broken)
    except pyclperf.BuildError as exc:
        assert "nope" in exc.log
    else:
        raise AssertionError("the broken source built")
    assert ctx.prebuild(requests) == 0  # all cached: nothing to build


def test_a_sweep_builds_its_variants_before_its_first_point(ctx, monkeypatch):
    ctx = pyclperf.Context(f"{ctx.info.platform_index}:{ctx.info.device_index}")
    seen = []
    real = ctx.prebuild
    monkeypatch.setattr(ctx, "prebuild", lambda requests: seen.append(list(requests)) or real(seen[-1]))
    exp = BuildOptions(ctx, items=256, iters=4)
    res = run_experiment(exp, warmup=0, repeats=2)
    assert res.all_verified, res.df["error"].tolist()
    options = {r["options"] for r in seen[0]}
    assert options == {p["options"] for p in exp.points()} and len(seen) == 1
