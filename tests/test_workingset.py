"""workingset: bandwidth and latency against working-set size. Small sets on PoCL; the closed-form
reference against a brute-force one; the default size list adapts to the device; wrong kernels
(a read that skips half the set, a copy that misses a word, a chase one step short) are caught."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import pyclperf
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments._chain import BLOCK_WORDS, FULL_PERMUTATION_WORDS, cycle
from pyclperf.experiments.workingset import WorkingSet, default_sizes, read_reference
from pyclperf.device.sources import kernel_source

QUICK = {"warmup": 1, "repeats": 2}
SIZES = [4096, 1 << 16, 1 << 20]
SMALL = {"min_bytes": 1 << 18, "steps": 1 << 12, "groups": 4, "local_size": 64}


@pytest.fixture(scope="module")
def ws(ctx):
    return pyclperf.run("workingset", ctx, values=SIZES, peak_gbps=1000.0, **SMALL, **QUICK)


def test_every_point_verifies(ws):
    df = ws.df
    assert ws.all_verified, df["error"].tolist()
    assert list(zip(df["kind"], df["size"])) == [(k, s) for k in ("read", "copy", "chase") for s in SIZES]


def test_metrics_follow_from_the_rows(ws):
    df = ws.df
    bw = df[df["kind"] != "chase"]
    per_word = np.where(bw["kind"] == "read", 4, 8)
    assert (bw["bytes"] == bw["grid"] * bw["iters"] * per_word).all()
    assert np.allclose(bw["gbps"], bw["bytes"] / bw["median_ns"])
    assert (bw["sweeps"] >= 4).all()  # passes: every set swept at least four times a launch
    chase = df[df["kind"] == "chase"]
    assert np.allclose(chase["latency_ns"], chase["median_ns"] / SMALL["steps"])
    assert "fraction_of_peak" not in chase or chase["fraction_of_peak"].isna().all()


def test_conclusion_sets_the_guide_beside_the_levels(ctx, ws):
    text = ws.meta["conclusion"]
    assert "400-600 cycles" in text and "dependent loads" in text and "read:" in text
    assert ws.meta["global_mem_cache_bytes"] == ctx.info.global_mem_cache_bytes


def test_the_closed_form_reference_matches_brute_force(rng):
    for n, grid in ((64, 16), (16, 64), (32, 32)):
        words = rng.integers(0, 2**32, size=n, dtype=np.uint32)
        r = max(1, n // grid)
        iters = 3 * r
        g = np.arange(grid)[:, None]
        idx = (g + np.arange(iters)[None, :] * grid) % n
        brute = (words.astype(np.uint64)[idx].sum(axis=1) % (1 << 32)).astype(np.uint32)
        assert np.array_equal(read_reference(words, grid, iters), brute)


@pytest.mark.parametrize("n, block", [(1024, None), (1 << 12, 1 << 12), (1 << 12, 64),
                                      (1 << 12, 1), (1 << 10, 512)])
def test_the_chase_is_one_cycle_with_a_closed_form(rng, n, block):
    """Following next from the start visits every word once before coming back, and the word
    reached after s steps is what after(s) says: whole permutations and block-structured ones."""
    chain = cycle(rng, n, block)
    p, seen = chain.after(0), []
    for s in range(n):
        assert p == chain.after(s), s
        seen.append(p)
        p = int(chain.next[p])
    assert len(set(seen)) == n and p == chain.after(0) == chain.after(n)


def test_large_chases_jump_between_blocks_at_random_offsets(rng):
    """Past FULL_PERMUTATION_WORDS the cycle is block-structured: no step stays in its block,
    and one round's offsets are spread (not all the same, which would crowd a few cache sets)."""
    n = 4 * FULL_PERMUTATION_WORDS
    chain = cycle(rng, n)
    assert chain.blocks.size == n // BLOCK_WORDS
    walk = [chain.after(s) for s in range(2048)]
    blocks = np.array(walk) // BLOCK_WORDS
    assert (blocks[1:] != blocks[:-1]).all()
    assert len(set(np.array(walk) % BLOCK_WORDS)) > 1500
    assert all(int(chain.next[a]) == b for a, b in zip(walk, walk[1:]))


def test_a_bad_block_size_is_refused(rng):
    with pytest.raises(ValueError, match="power of two dividing"):
        cycle(rng, 1 << 12, 96)


def test_default_sizes_adapt_to_the_device():
    gib = 1 << 30
    gpu = SimpleNamespace(is_gpu=True, global_mem_bytes=80 * gib, max_alloc_bytes=20 * gib)
    cpu = SimpleNamespace(is_gpu=False, global_mem_bytes=16 * gib, max_alloc_bytes=4 * gib)
    small = SimpleNamespace(is_gpu=True, global_mem_bytes=2 * gib, max_alloc_bytes=gib // 4)
    assert default_sizes(gpu)[0] == 4096 and default_sizes(gpu)[-1] == gib
    assert default_sizes(cpu)[-1] == 64 << 20
    assert default_sizes(small)[-1] == gib // 4


@pytest.mark.parametrize("old, new, kind", [
    ("sum += src[(gid + j * grid) & mask]", "sum += src[(gid + j * grid) & (mask >> 1)]", "read"),
    ("dst[i] = src[i];", "if (i != 7) dst[i] = src[i];", "copy"),
    ("s < steps", "s + 1 < steps", "chase"),
])
def test_wrong_kernels_are_caught(ctx, old, new, kind):
    source = kernel_source("workingset.cl")
    assert old in source

    class Wrong(WorkingSet):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.program = ctx.program(source.replace(old, new))

    res = run_experiment(Wrong(ctx, sizes=[1 << 14], kinds=[kind], **SMALL), **QUICK)
    assert res.rows[0]["status"] == "wrong result", res.rows[0]


def test_bad_sizes_are_refused(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="powers of two"):
        WorkingSet(ctx, sizes=[3000])
    with pytest.raises(pyclperf.InvalidArgumentError, match="largest allocation"):
        WorkingSet(ctx, sizes=[1 << 62])


def test_points_in_any_order_verify_on_what_src_holds(ctx):
    """The run's random words are written once and again after a chase's cycle replaced them; a
    block-structured cycle (a set past FULL_PERMUTATION_WORDS) verifies like a whole one."""
    big = 8 * FULL_PERMUTATION_WORDS
    exp = WorkingSet(ctx, sizes=[1 << 14, big], **SMALL)
    order = [("chase", big), ("read", 1 << 14), ("copy", big), ("chase", 1 << 14), ("read", big),
             ("copy", 1 << 14)]
    for kind, size in order:
        result = exp.verify({"kind": kind, "size": size})
        assert result.passed, (kind, size, result.detail)


def test_a_short_chase_over_a_structured_cycle_is_caught(ctx):
    source = kernel_source("workingset.cl").replace("s < steps", "s + 1 < steps")

    class Short(WorkingSet):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.program = ctx.program(source)

    big = 8 * FULL_PERMUTATION_WORDS
    result = Short(ctx, sizes=[big], kinds=["chase"], **SMALL).verify({"kind": "chase", "size": big})
    assert not result.passed and "chase end positions" in result.detail


def test_a_cycle_over_a_size_no_block_divides_is_a_full_permutation():
    """The device profile measures sizes between powers of two (1,482,912 words, say): past
    FULL_PERMUTATION_WORDS they cannot be cut into blocks, so the cycle is a full random
    permutation, still one loop through every word, with ``after`` walking it."""
    from pyclperf.experiments import _chain

    n = _chain.FULL_PERMUTATION_WORDS + 3 * 1000 + 1
    c = _chain.cycle(np.random.default_rng(1), n)
    assert c.n == n and c.blocks.size == 1
    p, seen = c.after(0), 0
    for s in range(1, 2000):
        p = int(c.next[p])
        assert p == c.after(s)
        seen += 1
    assert np.sort(c.next)[[0, -1]].tolist() == [0, n - 1] and np.unique(c.next).size == n
