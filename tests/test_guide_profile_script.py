"""benchmarks/guide_profile.py on the test device: each experiment run as the guide's worker runs
it, under cProfile, with its wall time split between the core's calls, builds, NumPy and the rest."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def script(benchmark_script):
    return benchmark_script("guide_profile")


def bound(rec, seconds):
    """The most own time a profile of ``seconds`` can hold: those seconds where it saw the main
    thread only; where it saw every thread (Python >= 3.12), those seconds on each of them (the
    check pool's threads, the build threads and the main one, at most one per core each)."""
    import os

    if rec["threads_profiled"] == "main":
        return seconds + 0.05
    assert rec["threads_profiled"] == "all"
    return (seconds + 0.05) * (3 * (os.cpu_count() or 1) + 1)


def test_an_experiment_s_time_is_split_and_its_hot_functions_listed(script, ctx, tmp_path):
    spec = f"{ctx.info.platform_index}:{ctx.info.device_index}"
    rec = script.profile_one("offset", tmp_path, spec, "quick", top=5)
    assert rec["experiment"] == "offset" and rec["code"] == 0
    parts = rec["split_s"]
    assert set(parts) == {"core", "build", "numpy", "plot", "other"}
    assert parts["core"] > 0 and parts["plot"] == 0  # kernels ran; the guide's runs draw nothing
    assert 0 < sum(parts.values()) <= bound(rec, rec["wall_s"])
    # Its kernel, built in this process (from the driver's cache, where the machine built it
    # before, in well under the 0.01 s the split is rounded to).
    assert rec["builds"] >= 1 and parts["build"] >= 0
    assert len(rec["top"]) == 6 and "tottime" in rec["top"][0]
    assert (tmp_path / "offset.jsonl").is_file() and not (tmp_path / "offset.png").exists()


def test_held_profiles_only_the_spans_that_hold_the_device_s_turn(script, ctx, tmp_path):
    import os

    from pyclperf.device import turns

    spec = f"{ctx.info.platform_index}:{ctx.info.device_index}"
    before = os.environ.get(turns.TURNS_ENV)
    rec = script.profile_one("offset", tmp_path, spec, "quick", top=5, held=True)
    assert rec["code"] == 0
    # The turn was taken as in the guide's lanes: its seconds recorded, within the run's.
    assert 0 < rec["held_s"] <= rec["wall_s"]
    # What the profile saw fits inside the turn: the builds and the host's checks ran outside it.
    assert sum(rec["split_s"].values()) <= bound(rec, rec["held_s"])
    assert rec["split_s"]["build"] == 0  # a build gives the turn up (the compiler is host work)
    spans = rec["longest_spans"]
    assert spans and all(" s from " in s and " to " in s for s in spans)
    assert sum(float(s.split(" s from ")[0]) for s in spans) <= rec["held_s"] + 0.01
    # Everything put back: the turns' variable, and no watcher left behind.
    assert os.environ.get(turns.TURNS_ENV) == before
    assert not turns._watchers and not turns.holding()
