"""benchmarks/record_space.py on a few configurations: every one verified, the recording a
Kernel Tuner cache that replays; and the recording pyclperf ships is what that script wrote."""

from __future__ import annotations

import gzip
import json

import pyclperf
from pyclperf.tuner.recording import EXAMPLE, Recording


def test_a_small_space_is_recorded_verified_and_replays(benchmark_script, ctx, tmp_path,
                                                        monkeypatch) -> None:
    script = benchmark_script("record_space")
    monkeypatch.setattr(script, "PARAMS", {"block_size_x": [8], "block_size_y": [1, 2], "WPX": [1, 2],
                                           "WPY": [1], "TK": [8], "USE_LOCAL": [0, 1]})
    out = tmp_path / "space.json.gz"
    spec = f"{ctx.info.platform_index}:{ctx.info.device_index}"
    assert script.main(["--device", spec, "--size", "256", "--out", str(out), "--min-time", "0"]) == 0
    doc = json.loads(gzip.decompress(out.read_bytes()))
    entries = doc["cache"].values()
    assert len(entries) == 8 and all(e["pyclperf_status"] == "ok" for e in entries)
    assert doc["pyclperf_recording"]["statuses"] == {"ok": 8}
    rec = Recording(out)
    res = pyclperf.tune("", "sgemm", rec.problem_size, [], rec.tune_params,
                        restrictions=rec.recorded_with["restrictions"], replay=out,
                        search="brute_force", execution=pyclperf.Execution(progress=False))
    assert res.best()["time_ms"] == min(e["time"] for e in entries)


def test_the_shipped_recording_says_how_it_was_made() -> None:
    rec = Recording(EXAMPLE)
    made = rec.recorded_with
    assert made["statuses"] == {"ok": len(rec)} and len(rec) > 900
    assert made["size"] == 256 and rec.tune_params["USE_LOCAL"] == [0, 1]
    assert all(e.status == "replayed" and e.time_ms > 0 for e in rec.entries.values())
