"""bandwidth: read, write and float-to-half bandwidth over launch shapes. A size that no grid
divides on PoCL, every point verified; kernels that stop one float4 short, or write one past the
end, or a read that misses half its data, are caught; the convert check demands round to nearest
even, ties included; the default size adapts to the device; another tool's read figure comes
from the data file (on its own device only) or an option, never from the experiment's code."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import pyclperf
from pyclperf.guide import figures as guide_figures
from pyclperf.reference import tool_figures
from pyclperf.experiments import bandwidth as bandwidth_module
from pyclperf.experiments.bandwidth import (MODES, Bandwidth, convert_input, default_nbytes,
                                            half_ties)
from pyclperf.experiments.base import run_experiment

QUICK = {"warmup": 1, "repeats": 2, "min_time_s": 0.0}
# 100003 float4s: a prime count, so no grid of these shapes divides it and the grid-stride
# loops' last trip is a partial one for some work-items and none for others.
COUNT = 100_003
SMALL = {"size": 16 * COUNT, "values": [64, 256], "per_cu": (2, 8)}


@pytest.fixture(scope="module")
def bw(ctx):
    return pyclperf.run("bandwidth", ctx, **SMALL, **QUICK)


def test_every_point_verifies_on_a_size_no_grid_divides(bw, ctx):
    df = bw.df
    assert bw.all_verified and (df["status"] == "ok").all(), df["error"].tolist()
    # A per-CU grid that would already cover every float4 is left out (a GPU of 132 CUs at
    # 8 x 256 work-items does), so the shapes expected depend on the device's compute units.
    cus = ctx.info.compute_units

    def shapes(size: int) -> list[str]:
        fit = [f"{k} x CU" for k in (2, 8) if k * cus < -(-COUNT // size)]
        return fit + ["full"]

    assert list(zip(df["mode"], df["local_size"], df["shape"])) == [
        (m, s, shape) for m in MODES for s in (64, 256) for shape in shapes(s)]
    assert (df["float4s"] % df["work_items"] != 0).all()
    per_cu = df[df["shape"] != "full"]
    assert (per_cu["groups"] == per_cu["shape"].str.split().str[0].astype(int) * cus).all()
    full = df[df["shape"] == "full"]
    assert (full["groups"] == -(-COUNT // full["local_size"])).all()  # one float4 per work-item
    assert (full["work_items"] >= COUNT).all() and (full["per_item"] == 1).all()


def test_bytes_and_bandwidth_follow_from_the_rows(bw):
    df = bw.df
    read, write, convert = (df[df["mode"] == m] for m in MODES)
    assert (read["bytes_read"] == 16 * COUNT).all() and (read["bytes_written"] == 4 * read["groups"]).all()
    assert (write["bytes_read"] == 0).all() and (write["bytes_written"] == 16 * COUNT).all()
    assert (convert["bytes_read"] == 16 * COUNT).all() and (convert["bytes_written"] == 8 * COUNT).all()
    assert (df["bytes"] == df["bytes_read"] + df["bytes_written"]).all()
    assert np.allclose(df["gbps"], df["bytes"] / df["median_ns"])
    assert (read["sum_error"] <= read["tolerance"]).all()


def test_the_conclusion_names_each_best_shape(bw, ctx):
    meta, df = bw.meta, bw.df
    for mode in MODES:
        rows = df[df["mode"] == mode]
        best = rows.loc[rows["gbps"].idxmax()]
        assert meta[f"best_{mode}_gbps"] == best["gbps"]
        assert meta[f"best_{mode}_shape"] == {"local_size": best["local_size"],
                                             "groups": best["groups"], "shape": best["shape"]}
        assert f"best {mode} {best['gbps']:.1f} GB/s at work-group {best['local_size']}" in meta["conclusion"]
    # Another tool's read is set beside the best read only where one is on record for this
    # very device (an H200 has clpeak's; PoCL's CPU device none).
    on_record = tool_figures.for_device("bandwidth", "read_gbps", ctx.info)
    figure = guide_figures.compare_to_source(bw, "bandwidth")
    assert figure["absolute"] and figure["verdict"] == ""  # a device's figure: shown, never judged
    if on_record is None:
        assert meta["reference_read_gbps"] is None and "read_over_reference" not in meta
        assert f"No other tool's read figure is on record for {ctx.info.name}" in meta["conclusion"]
        assert figure["device_ratio"] is None
    else:
        ratio = meta["best_read_gbps"] / on_record.value
        assert meta["read_over_reference"] == pytest.approx(ratio)
        assert f"beside {on_record.label}: {ratio:.3f}x" in meta["conclusion"]
        assert figure["source"] == on_record.label and figure["device_ratio"] == pytest.approx(ratio)


def test_a_reference_given_as_an_option_is_set_beside_the_best_read(ctx):
    res = pyclperf.run("bandwidth", ctx, size=16 * 4096, values=[64], per_cu=(2,), full=False,
                       modes=["read"], reference_read_gbps=123.0, reference_label="clpeak (here)",
                       **QUICK)
    meta = res.meta
    assert meta["reference_read_gbps"] == 123.0
    assert meta["read_over_reference"] == pytest.approx(meta["best_read_gbps"] / 123.0)
    assert f"beside clpeak (here): read 123 GB/s: {meta['read_over_reference']:.3f}x" in meta["conclusion"]
    figure = guide_figures.compare_to_source(res, "bandwidth")
    assert figure["source"] == "clpeak (here): read 123 GB/s" and figure["verdict"] == ""
    assert figure["device_ratio"] == pytest.approx(meta["best_read_gbps"] / 123.0)
    with pytest.raises(pyclperf.InvalidArgumentError, match="reference_read_gbps"):
        Bandwidth(ctx, nbytes=16 * 4096, modes=["read"], reference_read_gbps=-1.0)


def test_tool_figures_come_from_the_data_file_for_their_own_device(tmp_path):
    """The experiment's code holds no other tool's figure; the data file does, per device."""
    import inspect

    source = inspect.getsource(bandwidth_module)
    assert "4348" not in source and "4274" not in source
    h200 = SimpleNamespace(name="NVIDIA H200")
    figure = tool_figures.for_device("bandwidth", "read_gbps", h200)
    assert figure is not None and figure.tool.startswith("clpeak") and figure.device == "NVIDIA H200"
    assert figure.value == max((f for f in tool_figures.load() if f.device == "NVIDIA H200"),
                               key=lambda f: f.measured).value  # the newest measurement
    assert tool_figures.for_device("bandwidth", "read_gbps", SimpleNamespace(name="NVIDIA H100")) is None
    # Another file: its own figures; a malformed entry is refused naming the file.
    mine = tmp_path / "figures.json"
    mine.write_text('{"schema": "pyclperf.tool_figures/1", "figures": [{"experiment": "bandwidth", '
                    '"metric": "read_gbps", "value": 7.5, "unit": "GB/s", "tool": "t", "device": '
                    '" my gpu ", "measured": "2020-01-01", "what": "read"}]}')
    got = tool_figures.for_device("bandwidth", "read_gbps", SimpleNamespace(name="My GPU"), str(mine))
    assert got is not None and got.value == 7.5 and got.label == "t ( my gpu , measured 2020-01-01): read 7.5 GB/s"
    mine.write_text('{"schema": "pyclperf.tool_figures/1", "figures": [{"value": "fast"}]}')
    with pytest.raises(pyclperf.InvalidArgumentError, match="figures.json: figure 0 needs"):
        tool_figures.load(str(mine))


class Miscounted(Bandwidth):
    """The same experiment with its kernels handed a wrong float4 count (the classic grid-stride
    bugs: one short, one past the end, half the data)."""

    id = ""  # not registered
    shift: Any = None

    def launch(self, point):
        launch = super().launch(point)
        index = 2 if point["mode"] == "write" else 1  # fill(out, value, count); others (in, count, out)
        launch.steps[0][0].set_scalar(index, np.uint64(self.shift(self.count)))
        return launch


@pytest.mark.parametrize("shift, modes", [
    (lambda n: n - 1, ["write", "convert"]),  # the last float4 never written: still poison
    (lambda n: n + 1, ["write", "convert"]),  # one float4 past the end: the guard's poison gone
    (lambda n: n // 2, ["read", "write", "convert"]),  # half the input summed / converted
])
def test_wrong_results_are_caught(ctx, shift, modes):
    cls = type("Shifted", (Miscounted,), {"shift": staticmethod(shift)})
    exp = cls(ctx, nbytes=16 * COUNT, sizes=[64], per_cu=(2,), full=True, modes=modes)
    res = run_experiment(exp, **QUICK)
    assert (res.df["status"] == "wrong result").all(), res.df[["mode", "status", "error"]]
    assert res.df["error"].str.contains("differ").all()


def test_a_read_one_float4_short_is_caught_when_that_float4_matters(ctx):
    # The sum's tolerance is a worst-case rounding bound, so a missing float4 of small values
    # can hide in it; one of large values cannot. Input of 1.0 everywhere except the last
    # float4, 2^20 each: its group's sum is off by 2^22, far past the bound.
    cls = type("Short", (Miscounted,), {"shift": staticmethod(lambda n: n - 1)})
    exp = cls(ctx, nbytes=16 * COUNT, sizes=[64], per_cu=(2,), full=False, modes=["read"])

    class Ones:  # what the read check draws its input from
        def random(self, n, dtype):
            out = np.full(n, 1.0, dtype)
            out[-4:] = 2.0**20
            return out

    exp.rng = Ones()
    point = exp.points()[0]
    verdict = exp.verify(point)
    assert not verdict.passed and "work-group sums" in verdict.detail
    exp.shift = lambda n: n  # the right count passes the same check
    assert exp.verify(point).passed


def test_the_convert_input_has_ties_and_every_range(rng):
    x = convert_input(rng, 1 << 16)
    assert np.isfinite(x).all()
    with np.errstate(over="ignore"):
        h = x.astype(np.float16)
    assert np.isinf(h).any() and (h == 0).any() and (np.abs(h) < 2.0**-14).any()
    assert 0.04 < half_ties(x).mean() < 0.09  # about 1/17 forced onto a tie
    # ... on every lane of a float4, and every exponent range is drawn with and without a sign.
    lanes = np.flatnonzero(half_ties(x)) % 4
    assert set(lanes.tolist()) == {0, 1, 2, 3}
    exponents = (x.view(np.uint32) >> 23) & 0xFF
    assert set(np.unique(exponents).tolist()) >= set(range(127 - 14, 127 + 16))
    assert (x < 0).mean() == pytest.approx(0.5, abs=0.02)
    # NumPy's reference breaks ties to even: 1 + 2^-11 lies half-way between 1 and 1 + 2^-10.
    assert np.float32(1 + 2.0**-11).astype(np.float16) == np.float16(1.0)
    assert np.float32(1 + 3 * 2.0**-11).astype(np.float16) == np.float16(1 + 2 * 2.0**-10)


def test_each_input_is_drawn_once_per_run_and_outputs_poisoned_per_point(ctx, monkeypatch):
    # 256 MiB inputs drawn per point cost the guide minutes: the kernels only read them, so
    # every point of a mode reads the same one, while every point poisons its output afresh.
    drawn, poisoned = [], []
    monkeypatch.setattr(bandwidth_module, "convert_input",
                        lambda rng, n: drawn.append("convert") or convert_input(rng, n))
    real_poison = bandwidth_module.poison_device
    monkeypatch.setattr(bandwidth_module, "poison_device",
                        lambda b: poisoned.append(b) or real_poison(b))
    exp = Bandwidth(ctx, nbytes=16 * COUNT, sizes=[64, 256], per_cu=(2,), modes=["read", "convert"])
    real = exp.rng

    class Counted:  # the experiment's generator, counting the read input's draws
        bit_generator, integers = real.bit_generator, real.integers

        def random(self, *args, **kwargs):
            drawn.append("read")
            return real.random(*args, **kwargs)

    exp.rng = Counted()
    res = run_experiment(exp, **QUICK)
    assert (res.df["status"] == "ok").all() and len(res.df) >= 4
    assert sorted(drawn) == ["convert", "read"]
    assert len(poisoned) == len(res.df)


class InputWriter(Bandwidth):
    """A kernel that also writes into the input it should only read, as the first point's
    launch: the points after it read the input the host no longer holds."""

    id = ""  # not registered

    def check(self, point, launch):
        verdict = super().check(point, launch)
        self.src.write(np.zeros(16, np.float32), offset=0)
        return verdict


def test_a_kernel_writing_into_its_shared_input_fails_the_points_after_it(ctx):
    exp = InputWriter(ctx, nbytes=16 * COUNT, sizes=[64], per_cu=(2,), modes=["convert"])
    res = run_experiment(exp, **QUICK)
    assert list(res.df["status"]) == ["ok"] + ["wrong result"] * (len(res.df) - 1)
    assert res.df["error"].iloc[1:].str.contains("halves differ").all()


def test_default_size_adapts_to_the_device():
    gpu = SimpleNamespace(is_gpu=True, max_alloc_bytes=32 << 30, global_mem_bytes=140 << 30)
    assert default_nbytes(gpu) == 256 << 20
    small_gpu = SimpleNamespace(is_gpu=True, max_alloc_bytes=1 << 30, global_mem_bytes=1 << 30)
    assert default_nbytes(small_gpu) == 128 << 20  # an eighth of its memory
    cpu = SimpleNamespace(is_gpu=False, max_alloc_bytes=4 << 30, global_mem_bytes=16 << 30)
    assert default_nbytes(cpu) == 1 << 20


def test_bad_knobs_are_refused(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="powers of two"):
        Bandwidth(ctx, nbytes=1 << 16, sizes=[96])
    with pytest.raises(pyclperf.InvalidArgumentError, match="multiple of 16"):
        Bandwidth(ctx, nbytes=1000)
    with pytest.raises(pyclperf.InvalidArgumentError, match="unknown or no modes"):
        Bandwidth(ctx, nbytes=1 << 16, modes=["dot"])
    with pytest.raises(pyclperf.InvalidArgumentError, match="'bandwidth' takes no local_size"):
        pyclperf.run("bandwidth", ctx, local_size=64)
