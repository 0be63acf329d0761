"""banks: the bank model (closed form against enumeration), the strided local reads verified on
both layouts, a wrong kernel caught, the slowdown column and the padding conclusion, the CLI."""

from __future__ import annotations

import numpy as np
import pytest

import pyclperf
from pyclperf import cli
from pyclperf.theory.bankmodel import (conflict_degree, strided_degree, strided_degree_formula,
                                strided_words)
from pyclperf.experiments.banks import Banks
from pyclperf.experiments.base import run_experiment

ITEMS, LOCAL, WORDS = 256, 64, 1024
STRIDES = [1, 2, 3, 4, 16, 32, 33, 256]
QUICK = {"warmup": 1, "repeats": 2}


@pytest.fixture(scope="module")
def results(ctx):
    return pyclperf.run("banks", ctx, size=ITEMS, local_size=LOCAL, values=STRIDES, words=WORDS,
                        steps=2, **QUICK)


def test_model_closed_form_matches_enumeration():
    for words in (256, 1024, 4096):
        for s in range(1, 300):
            assert strided_degree(s, words, False) == strided_degree_formula(s, words), (s, words)


def test_model_known_cases():
    assert strided_degree(1, 4096, False) == 1
    assert strided_degree(2, 4096, False) == 2
    assert strided_degree(32, 4096, False) == 32
    assert strided_degree(256, 4096, False) == 16  # 16 distinct words; pairs share (broadcast)
    assert strided_degree(32, 4096, True) == 1     # padding: row r starts r banks further on
    assert strided_degree(2, 4096, True) == 1
    assert conflict_degree([5, 5, 5, 5]) == 1      # one word: a broadcast
    assert conflict_degree([0, 32, 64, 1]) == 3
    assert list(strided_words(33, 64, padded=True, lanes=3)) == [0, 34, 2]


def test_every_point_verifies_and_carries_its_model(results):
    df = results.df
    assert results.all_verified, df["error"].tolist()
    assert list(df["layout"]) == ["plain"] * len(STRIDES) + ["padded"] * len(STRIDES)
    plain = df[df["layout"] == "plain"].set_index("stride")["conflict_degree"]
    assert plain[32] == 32 and plain[1] == 1 and plain[33] == 1
    loads = ITEMS * 8 * 2
    assert (df["loads"] == loads).all() and (df["bytes"] == 4 * loads).all()
    assert np.allclose(df["gbps"], df["bytes"] / df["median_ns"])


def test_slowdown_and_conclusion(results):
    df = results.df
    base = df[(df["layout"] == "plain") & (df["stride"] == 1)]["median_ns"].item()
    assert np.allclose(df["slowdown"], df["median_ns"] / base)
    assert "Padding" in results.meta["conclusion"]
    assert isinstance(results.meta["padding_removes_cost"], bool)
    assert set(results.meta["padding_gain"]) == {"2", "4", "16", "32", "256"}
    table = Banks.summary(results)
    assert list(table["stride"]) == STRIDES and "slowdown padded" in table


WRONG = """
__kernel void strided_sum(__global const uint* table, __global uint* out, const uint stride) {
    uint sum = 0u;                       /* reads global memory, ignores the moving index */
    for (uint k = 0; k < 8 * STEPS; ++k) sum += table[(get_local_id(0) * stride) & (WORDS - 1)];
    out[get_global_id(0)] = sum;
}
"""


def test_a_wrong_kernel_is_caught(ctx):
    exp = Banks(ctx, items=ITEMS, local_size=LOCAL, strides=[3], words=WORDS, steps=2,
                layouts=["padded"])
    exp.kernel = lambda padded: ctx.program(
        WRONG, defines={"WORDS": WORDS, "STEPS": 2}).kernel("strided_sum")
    res = run_experiment(exp, **QUICK)
    assert res.rows[0]["status"] == "wrong result" and "work-item sums" in res.rows[0]["error"]
    assert "no baseline" in res.meta["conclusion"]


def test_invalid_parameters(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="power of two"):
        Banks(ctx, items=ITEMS, local_size=LOCAL, words=1000)
    with pytest.raises(pyclperf.InvalidArgumentError, match="local memory"):
        Banks(ctx, items=ITEMS, local_size=LOCAL, words=1 << 24)
    with pytest.raises(pyclperf.InvalidArgumentError, match="multiple of the work-group"):
        Banks(ctx, items=ITEMS + 1, local_size=LOCAL)
    with pytest.raises(pyclperf.InvalidArgumentError, match="strides"):
        Banks(ctx, items=ITEMS, local_size=LOCAL, strides=[0])
    with pytest.raises(pyclperf.InvalidArgumentError, match="layouts"):
        Banks(ctx, items=ITEMS, local_size=LOCAL, layouts=["diagonal"])


def test_cli_runs_banks_and_plots(ctx, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    code = cli.main(["run", "banks", "--size", "512", "--local-size", "64", "--warmup", "0",
                     "--repeats", "1", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "slowdown padded" in out and "Padding" in out
    assert (tmp_path / "banks.png").is_file()
