"""benchmarks/conditions.py's cold/warm part on the test device, small: every copy verified,
the table's ratios worked out from its own figures, the warm small copy flagged."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

MiB = 1 << 20


@pytest.fixture(scope="module")
def script():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "conditions.py"
    spec = importlib.util.spec_from_file_location("conditions_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cold_table_on_small_sizes(script, ctx):
    table = script.cold_table(ctx, [1 * MiB], 8 * MiB, None)
    assert table["dram"]["status"] == "ok" and table["dram"]["items"] in script.ITEMS
    (row,) = table["rows"]
    assert row["warm"]["status"] == row["cold"]["status"] == "ok"
    assert row["warm"]["cache_resident"] is True and row["cold"]["cache_resident"] is False
    assert row["cold"]["cold"] is True
    assert row["cold_over_dram"] == pytest.approx(row["cold"]["gbps"] / table["dram"]["gbps"])
    text = script.markdown(table)
    assert "| 1 |" in text and "cold / DRAM-sized" in text


def test_options(script):
    args = script.parse_args(["--parts", "cold", "--small"])
    assert args.parts == {"cold"} and args.sizes == [1 * MiB, 4 * MiB] and args.dram == 64 * MiB
    args = script.parse_args(["--sizes-mib", "16,0.5", "--dram-mib", "512"])
    assert args.sizes == [16 * MiB, MiB // 2] and args.dram == 512 * MiB
    for bad in (["--parts", "warm"], ["--sizes-mib", "x"], ["--sizes-mib", "0.01"]):
        with pytest.raises(SystemExit):
            script.parse_args(bad)
