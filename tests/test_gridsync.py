"""gridsync: the single-pass sum finished by the last work-group, two launches, a persistent grid
and the fence-less variant. On PoCL each is checked over several launches; a counter that is never
set back is caught on the second launch; the conclusion says whether the missing fence showed."""

from __future__ import annotations

import numpy as np
import pytest

import pyclperf
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments.gridsync import SYNC_12, GridSync, atomics20_options, resident_groups
from pyclperf.device.sources import kernel_source

QUICK = {"warmup": 1, "repeats": 2}
ITEMS, LOCAL = 1 << 16, 64


@pytest.fixture(scope="module")
def grid(ctx):
    return pyclperf.run("gridsync", ctx, size=ITEMS, local_size=LOCAL, trials=4, peak_gbps=1000.0, **QUICK)


def test_variants_verify_over_several_launches(grid):
    df = grid.df.set_index("variant")
    assert list(df.index) == ["two_pass", "last_group", "persistent", "no_fence"]
    for v in ("two_pass", "last_group", "persistent"):
        assert df.loc[v, "status"] == "ok", df.loc[v, "error"]
        assert df.loc[v, "wrong_trials"] == 0 and df.loc[v, "trials"] == 4
    assert df.loc["no_fence", "status"] in ("ok", "wrong result")


def test_shapes_and_metrics(ctx, grid):
    df = grid.df.set_index("variant")
    assert df.loc["two_pass", "launches"] == 2 and df.loc["last_group", "launches"] == 1
    assert df.loc["last_group", "groups"] == ITEMS // (8 * LOCAL)
    assert df.loc["persistent", "groups"] == resident_groups(ctx.info, LOCAL)[0]
    ok = grid.df[grid.df["status"] == "ok"]
    assert (ok["bytes"] == 4 * ITEMS).all() and np.allclose(ok["gbps"], ok["bytes"] / ok["median_ns"])
    assert (ok["rel_error"] <= ok["rel_bound"]).all()
    text = grid.meta["conclusion"]
    assert "Quasar 9.8.2" in text and "without fences" in text
    assert grid.meta["no_fence_shown_wrong"] == (df.loc["no_fence", "status"] == "wrong result")


def test_a_counter_never_set_back_is_caught(ctx):
    source = kernel_source("gridsync.cl")
    old = "        RESET(count);\n"
    assert old in source

    class Wrong(GridSync):
        def program(self, variant):
            defines = {"WG": self.local_size, **({"ATOMICS20": 1} if self.build_options else {})}
            return ctx.program(source.replace(old, ""), defines=defines, options=self.build_options)

    res = run_experiment(Wrong(ctx, items=ITEMS, local_size=LOCAL, variants=["last_group"], trials=3), **QUICK)
    assert res.rows[0]["status"] == "wrong result", res.rows[0]
    assert res.rows[0]["wrong_trials"] == 2  # the first launch is right; the counter then never ends


@pytest.mark.parametrize("atomics", ["1.2", "2.0"])
def test_both_ways_of_ordering_the_sums_verify(ctx, atomics):
    """OpenCL 2.0 acquire/release atomics where the device has them (PoCL 3: -cl-std=CL3.0), and
    the OpenCL 1.2 atomics-and-fences kernel on any device; each row says which it ran."""
    options, note = atomics20_options(ctx)
    if atomics == "2.0" and options is None:
        with pytest.raises(pyclperf.InvalidArgumentError, match="no device-scope acquire/release"):
            GridSync(ctx, atomics="2.0")
        return
    exp = GridSync(ctx, items=ITEMS, local_size=LOCAL, variants=["last_group", "persistent"],
                   trials=3, atomics=atomics)
    res = run_experiment(exp, **QUICK)
    assert [r["status"] for r in res.rows] == ["ok", "ok"], res.rows
    assert all(r["wrong_trials"] == 0 for r in res.rows)
    sync = {r["sync"] for r in res.rows}
    if atomics == "1.2":
        assert exp.build_options == "" and sync == {SYNC_12} and "does not promise" in SYNC_12
    else:
        assert exp.build_options == options and len(sync) == 1
        assert sync.pop().startswith(f"OpenCL C {options[-3:]} atomics: acq_rel")
    assert res.meta["sync"] == res.rows[0]["sync"]


def test_bad_parameters_are_refused(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="power of two"):
        GridSync(ctx, local_size=96)
    with pytest.raises(pyclperf.InvalidArgumentError, match="unknown"):
        GridSync(ctx, variants=["cooperative"])
    with pytest.raises(pyclperf.InvalidArgumentError, match="atomics must be one of"):
        GridSync(ctx, atomics="3.0")
