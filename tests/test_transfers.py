"""Host <-> device transfers (transfer, batching), the theoretical ceilings (peak) and event vs
host timing (timers): every mode lands verified data, the checks can fail, bad requests are
refused before anything runs."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import pyclperf
from pyclperf import cli
from pyclperf.measure.checks import landed, poison, random_bytes
from pyclperf.experiments.transfer import Transfer, plateau, sizes_up_to
from pyclperf.experiments._transfer import ALL_MODES, GUARD_BYTES, Mode, TransferRig
from pyclperf.device.peak import dram_bandwidth, pcie_bandwidth, theoretical

KiB = 1024
SIZES = [KiB, 16 * KiB, 256 * KiB]
QUICK = {"warmup": 1, "repeats": 2}
MODE_NAMES = [m.name for m in ALL_MODES]


@pytest.fixture(scope="module")
def rig(ctx: pyclperf.Context) -> TransferRig:
    r = TransferRig(ctx, max(SIZES), list(ALL_MODES))
    yield r
    r.release()


@pytest.fixture
def no_hook(rig: TransferRig):
    yield rig
    rig.after_timing = None


# --- every mode moves the right bytes -------------------------------------------------------

@pytest.mark.parametrize("nbytes", SIZES)
@pytest.mark.parametrize("mode", MODE_NAMES)
def test_every_mode_lands_verified_data(rig, mode, nbytes):
    m = Mode.parse(mode)
    row = rig.measure(m, nbytes, **QUICK)
    assert row["status"] == "ok" and row["verified"], row["error"]
    assert row["bytes"] == (2 * nbytes if mode == "d2d" else nbytes)
    assert row["gbps"] == pytest.approx(row["bytes"] / row["median_ns"])


@pytest.mark.parametrize("pieces", [1, 4, 64])
@pytest.mark.parametrize("mode", ["h2d pageable direct", "h2d pinned mapped", "d2h pinned direct",
                                  "d2h pageable mapped"])
def test_batches_land_every_piece(rig, mode, pieces):
    row = rig.measure(Mode.parse(mode), 64 * KiB, pieces=pieces, **QUICK)
    assert row["status"] == "ok", row["error"]


@pytest.mark.parametrize("mode", ["h2d pinned direct", "d2h pageable mapped", "d2d"])
def test_host_clock_method(rig, mode):
    row = rig.measure(Mode.parse(mode), 16 * KiB, method="host", **QUICK)
    assert row["status"] == "ok" and row["method"] == "host" and row["median_ns"] > 0


@pytest.mark.parametrize("mode", ["h2d pinned mapped", "d2h pageable mapped"])
def test_a_mapped_transfer_is_timed_by_the_host_clock_whatever_was_asked(rig, mode):
    # Its span by events joins two commands with the host's memcpy between them, which a
    # driver may stamp on different clocks; the row says which clock timed it.
    row = rig.measure(Mode.parse(mode), 16 * KiB, method="events", **QUICK)
    assert row["status"] == "ok" and row["method"] == "host" and row["median_ns"] > 0
    direct = rig.measure(Mode.parse(mode.replace("mapped", "direct")), 16 * KiB, method="events", **QUICK)
    assert direct["method"] == "events"


def test_public_functions_default_to_the_smaller_side(ctx):
    dev = ctx.buffer(8 * KiB)
    host = np.zeros(4 * KiB, np.uint8)
    assert pyclperf.time_transfer("h2d", dev, host, **QUICK).shape == (2,)
    other = ctx.buffer(16 * KiB)
    assert pyclperf.time_copy(dev, other, method="host", **QUICK).shape == (2,)


# --- the checks can fail ---------------------------------------------------------------------

def _corrupt(rig: TransferRig, at: int):
    """A hook that overwrites one byte of the destination at ``at`` after the timed transfers."""

    def hook(mode: Mode, nbytes: int) -> None:
        if mode.direction == "d2h":
            view = rig.host(mode)[1]
            view[at] ^= 0xFF
        else:
            dest = rig.device if mode.direction == "h2d" else rig.device2
            byte = np.empty(1, np.uint8)
            dest.read(byte, offset=at)
            dest.write(byte ^ 0xFF, offset=at)

    return hook


@pytest.mark.parametrize("mode", MODE_NAMES)
def test_corrupted_destination_fails_the_check(no_hook, mode):
    rig = no_hook
    rig.after_timing = _corrupt(rig, at=100)
    row = rig.measure(Mode.parse(mode), 16 * KiB, **QUICK)
    assert row["status"] == "wrong result" and not row["verified"]
    assert "first at 100" in row["error"]


@pytest.mark.parametrize("mode", ["h2d pageable direct", "d2h pinned direct", "d2d"])
def test_write_past_the_end_fails_the_check(no_hook, mode):
    rig = no_hook
    rig.after_timing = _corrupt(rig, at=16 * KiB + 5)
    row = rig.measure(Mode.parse(mode), 16 * KiB, **QUICK)
    assert row["status"] == "wrong result" and "guard bytes" in row["error"]


def test_one_draw_serves_every_mode_and_size(ctx, monkeypatch):
    # A GiB drawn per point cost seconds each: the rig draws its capacity once, and each
    # transfer's destination is poisoned before it, so a shared source proves as much.
    from pyclperf.experiments import _transfer

    drawn = []
    real = _transfer.random_bytes
    monkeypatch.setattr(_transfer, "random_bytes", lambda rng, n: drawn.append(n) or real(rng, n))
    rig = TransferRig(ctx, max(SIZES), list(ALL_MODES))
    try:
        rows = [rig.measure(m, n, **QUICK) for m in ALL_MODES for n in SIZES]
    finally:
        rig.release()
    assert all(r["status"] == "ok" for r in rows), [r.get("error") for r in rows]
    assert drawn == [max(SIZES)]


class Unread:
    """A device buffer whose reads bring nothing back (a driver that drops a read)."""

    def __init__(self, buffer):
        self.buffer = buffer

    def read(self, array, offset=0):
        pass


@pytest.mark.parametrize("mode", ["h2d pinned direct", "d2d"])
def test_a_readback_that_brings_nothing_fails_even_after_a_passing_check(no_hook, mode):
    rig = no_hook
    assert rig.measure(Mode.parse(mode), 16 * KiB, **QUICK)["status"] == "ok"
    name = "device" if mode.startswith("h2d") else "device2"
    real = getattr(rig, name)

    def drop_reads(mode, nbytes):
        setattr(rig, name, Unread(real))

    rig.after_timing = drop_reads
    try:
        row = rig.measure(Mode.parse(mode), 16 * KiB, **QUICK)
    finally:
        setattr(rig, name, real)
    assert row["status"] == "wrong result" and "transferred bytes differ" in row["error"]


def test_landed_on_right_and_wrong_data():
    data = random_bytes(np.random.default_rng(), 1000)
    out = np.empty(1000 + GUARD_BYTES, np.uint8)
    poison(out)
    out[:1000] = data
    assert landed(out, data) == (True, "")
    out[999] ^= 1
    ok, detail = landed(out, data)
    assert not ok and "first at 999" in detail
    out[999] ^= 1
    out[1000] = 0  # the first guard byte
    assert not landed(out, data)[0]


def test_poison_is_never_zeros():
    out = np.zeros(64, np.uint8)
    poison(out)
    assert not (out == 0).any()


# --- refused requests ------------------------------------------------------------------------

def test_released_buffers_raise(ctx):
    dev, other = ctx.buffer(4 * KiB), ctx.buffer(4 * KiB)
    host = np.zeros(4 * KiB, np.uint8)
    dev.release()
    with pytest.raises(pyclperf.ReleasedError, match="released"):
        pyclperf.time_transfer("h2d", dev, host, 4 * KiB)
    with pytest.raises(pyclperf.ReleasedError):
        pyclperf.time_transfer("d2h", dev, host, 4 * KiB)
    with pytest.raises(pyclperf.ReleasedError):
        pyclperf.time_copy(other, dev, 4 * KiB)
    pinned = pyclperf.PinnedBuffer(ctx, 4 * KiB)
    pinned.release()
    with pytest.raises(pyclperf.ReleasedError):
        pyclperf.time_transfer("h2d", other, pinned, 4 * KiB)


def test_a_pinned_buffer_in_use_cannot_be_released(ctx):
    pinned = pyclperf.PinnedBuffer(ctx, 4 * KiB)
    view = pinned.array()
    with pytest.raises(pyclperf.InvalidArgumentError, match="view"):
        pinned.release()
    del view
    pinned.release()


@pytest.mark.parametrize("call, message", [
    (lambda d, o, p, h: pyclperf.time_transfer("h2d", d, h, 0), "positive"),
    (lambda d, o, p, h: pyclperf.time_transfer("h2d", d, h, -1), "positive"),
    (lambda d, o, p, h: pyclperf.time_transfer("h2d", d, np.zeros(8 * KiB, np.uint8), 8 * KiB), "outside the buffer"),
    (lambda d, o, p, h: pyclperf.time_transfer("h2d", d, h[:KiB], 2 * KiB), "exceeds the host memory"),
    (lambda d, o, p, h: pyclperf.time_transfer("h2d", d, h, pieces=3), "3 equal pieces"),
    (lambda d, o, p, h: pyclperf.time_transfer("h2d", d, h, pieces=0), "at least 1 piece"),
    (lambda d, o, p, h: pyclperf.time_transfer("h2d", p, h), "not a PinnedBuffer"),
    (lambda d, o, p, h: pyclperf.time_transfer("h2d", d, h.reshape(64, 64)[:, ::2]), "C-contiguous"),
    (lambda d, o, p, h: pyclperf.time_transfer("d2h", d, _read_only()), "read-only"),
    (lambda d, o, p, h: pyclperf.time_transfer("h2d", d, [0] * 16, 16), "NumPy array"),
    (lambda d, o, p, h: pyclperf.time_transfer("sideways", d, h), "direction"),
    (lambda d, o, p, h: pyclperf.time_transfer("h2d", d, h, access="teleport"), "access"),
    (lambda d, o, p, h: pyclperf.time_transfer("h2d", d, h, method="sundial"), "timing method"),
    (lambda d, o, p, h: pyclperf.time_copy(d, d), "two distinct buffers"),
    (lambda d, o, p, h: pyclperf.time_copy(d, o, 8 * KiB), "outside the buffer"),
    (lambda d, o, p, h: pyclperf.time_transfer("h2d", d, h, repeats=0), "repeats"),
])
def test_invalid_requests_are_refused(ctx, call, message):
    dev, other = ctx.buffer(4 * KiB), ctx.buffer(4 * KiB)
    pinned = pyclperf.PinnedBuffer(ctx, 4 * KiB)
    host = np.zeros(4 * KiB, np.uint8)
    with pytest.raises(pyclperf.InvalidArgumentError, match=message) as info:
        call(dev, other, pinned, host)
    assert isinstance(info.value, ValueError)


def _read_only() -> np.ndarray:
    a = np.zeros(4 * KiB, np.uint8)
    a.setflags(write=False)
    return a


def test_rig_refuses_impossible_sizes(ctx, rig):
    with pytest.raises(pyclperf.InvalidArgumentError, match="do not fit"):
        TransferRig(ctx, ctx.info.max_alloc_bytes * 2, [Mode("d2d")])
    with pytest.raises(pyclperf.InvalidArgumentError, match="outside this rig"):
        rig.measure(Mode("d2d"), rig.capacity + 1)
    with pytest.raises(pyclperf.InvalidArgumentError, match="no transfer mode"):
        Mode.parse("h2d pinned sideways")


# --- the transfer and batching experiments ---------------------------------------------------

def test_transfer_sweep_rows_and_plateau(ctx):
    res = pyclperf.run("transfer", ctx, values=SIZES, **QUICK)
    df = res.df
    assert len(df) == len(ALL_MODES) * len(SIZES) and res.all_verified
    assert set(df["mode"]) == set(MODE_NAMES)
    mapped = df["access"] == "mapped"
    assert (df[~mapped]["method"] == "events").all() and (df[mapped]["method"] == "host").all()
    d2d = df[df["direction"] == "d2d"]
    assert (d2d["bytes"] == 2 * d2d["size_bytes"]).all()
    table = plateau(res, largest=2)
    assert len(table) == len(ALL_MODES) and (table["points"] == 2).all()
    assert (table["from_bytes"] == SIZES[1]).all() and (table["to_bytes"] == SIZES[2]).all()
    for _, row in table.iterrows():
        mode_rows = df[(df["mode"] == row["mode"]) & (df["size_bytes"] >= SIZES[1])]
        assert row["gbps"] == pytest.approx(mode_rows["gbps"].median())
    assert res.meta["plot"]["kind"] == "modes"


def test_default_sizes_are_powers_of_four_within_limits(ctx):
    assert sizes_up_to(16 * KiB * KiB) == [KiB * 4**k for k in range(8)]
    exp = Transfer(ctx, modes=["d2d"])
    assert exp.sizes[0] == KiB and all(b == 4 * a for a, b in zip(exp.sizes, exp.sizes[1:]))
    assert exp.sizes[-1] <= (256 * KiB * KiB if ctx.info.is_gpu else 16 * KiB * KiB)
    with pytest.raises(pyclperf.InvalidArgumentError, match="positive"):
        Transfer(ctx, sizes=[0])


def test_user_peak_gives_the_fraction(ctx):
    res = pyclperf.run("transfer", ctx, values=[16 * KiB], modes=["h2d pinned direct", "d2d"],
                       peak_gbps=1000.0, pcie_gbps=10.0, **QUICK)
    assert res.meta["peak_gbps"] == 1000.0 and res.meta["pcie_gbps"] == 10.0
    for row in res.rows:
        ceiling = 1000.0 if row["mode"] == "d2d" else 10.0
        assert row["fraction_of_peak"] == pytest.approx(row["gbps"] / ceiling)
    assert "fraction_of_peak" in plateau(res)


def test_unknown_peak_leaves_no_fraction(ctx, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    res = pyclperf.run("transfer", ctx, values=[KiB], modes=["d2d"], **QUICK)
    assert res.meta["peak_gbps"] is None and "fraction_of_peak" not in res.rows[0]


def test_batching_sweep(ctx):
    res = pyclperf.run("batching", ctx, size=64 * KiB, values=[1, 4, 64], **QUICK)
    df = res.df
    assert len(df) == 4 * 3 and res.all_verified
    assert (df["piece_bytes"] * df["pieces"] == 64 * KiB).all()
    assert (df["host_median_ns"] > 0).all() and (df["host_over_events"] > 0).all()
    with pytest.raises(pyclperf.InvalidArgumentError, match="3 equal pieces"):
        pyclperf.run("batching", ctx, size=64 * KiB, values=[3])
    with pytest.raises(pyclperf.InvalidArgumentError, match="not d2d"):
        pyclperf.run("batching", ctx, size=64 * KiB, modes=["d2d"])


# --- theoretical ceilings --------------------------------------------------------------------

def test_the_guides_formulas():
    assert dram_bandwidth(1107, 512) == pytest.approx(141.7, abs=0.05)  # GTX 280, Guide 2.2.1
    assert dram_bandwidth(3201, 6144) == pytest.approx(4917, abs=0.5)  # H200 (GPU.md)
    assert pcie_bandwidth(5, 16) == pytest.approx(63.0, abs=0.05)
    assert pcie_bandwidth(2, 16) == pytest.approx(8.0)  # Guide 3.1: PCIe x16 Gen2
    with pytest.raises(pyclperf.InvalidArgumentError, match="PCIe generation"):
        pcie_bandwidth(9, 16)


NVIDIA = types.SimpleNamespace(name="NVIDIA H200", vendor="NVIDIA Corporation",
                               platform_name="NVIDIA CUDA")


def fake_nvml(**overrides: object) -> types.SimpleNamespace:
    """Stands in for pynvml with the H200's figures from GPU.md."""

    class NVMLError(Exception):
        pass

    def unsupported(handle: object) -> int:
        raise NVMLError("Not Supported")

    nvml = types.SimpleNamespace(
        NVMLError=NVMLError, NVML_CLOCK_MEM=2, nvmlInit=lambda: None, nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: 1, nvmlDeviceGetHandleByIndex=lambda i: "gpu0",
        nvmlDeviceGetName=lambda h: "NVIDIA H200",
        nvmlDeviceGetMaxClockInfo=lambda h, clock: 3201 if clock == 2 else 1980,
        nvmlDeviceGetMemoryBusWidth=lambda h: 6144,
        nvmlDeviceGetMaxPcieLinkGeneration=lambda h: 5,
        nvmlDeviceGetMaxPcieLinkWidth=lambda h: 16,
    )
    for key, value in overrides.items():
        setattr(nvml, key, unsupported if value == "unsupported" else value)
    return nvml


def test_nvml_absent_is_unknown_not_an_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml now raises ImportError
    peak = theoretical(NVIDIA)
    assert peak.dram_gbps is None and peak.pcie_gbps is None
    assert peak.dram_source.startswith("unknown (") and "pyclperf[nvml]" in peak.dram_source
    assert "peak_gbps=" in peak.dram_source and "pcie_gbps=" in peak.pcie_source
    assert peak.gbps("dram") is None


def test_nvml_figures_are_used(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml())
    peak = theoretical(NVIDIA)
    assert peak.dram_gbps == pytest.approx(4917, abs=0.5)
    assert peak.pcie_gbps == pytest.approx(63.0, abs=0.05)
    assert peak.dram_source.startswith("NVML") and peak.readings["bus_width_bits"] == 6144


def test_one_unsupported_nvml_query_leaves_the_rest(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(nvmlDeviceGetMemoryBusWidth="unsupported"))
    peak = theoretical(NVIDIA)
    assert peak.dram_gbps is None and "unknown" in peak.dram_source
    assert peak.pcie_gbps == pytest.approx(63.0, abs=0.05)


def test_nvml_without_the_device_is_unknown(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(nvmlDeviceGetName=lambda h: "Other GPU"))
    peak = theoretical(NVIDIA)
    assert peak.dram_gbps is None and "no NVML device is named" in peak.dram_source


def test_user_figures_win_over_nvml(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml())
    assert theoretical(NVIDIA, peak_gbps=1000).dram_gbps == 1000
    by_formula = theoretical(NVIDIA, memory_clock_mhz=1107, bus_width_bits=512, pcie_gbps=8)
    assert by_formula.dram_gbps == pytest.approx(141.7, abs=0.05) and by_formula.pcie_gbps == 8
    assert by_formula.dram_source.startswith("user") and by_formula.pcie_source.startswith("user")
    with pytest.raises(pyclperf.InvalidArgumentError, match="together"):
        theoretical(NVIDIA, memory_clock_mhz=1107)
    with pytest.raises(pyclperf.InvalidArgumentError, match="positive"):
        theoretical(NVIDIA, peak_gbps=-5)


def test_peak_experiment_and_cli_without_nvml(ctx, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    res = pyclperf.run("peak", ctx)
    assert [r["status"] for r in res.rows] == ["skipped", "skipped"]
    assert all("pyclperf[nvml]" in r["error"] for r in res.rows)
    with_user = pyclperf.run("peak", ctx, peak_gbps=500.0)
    assert with_user.rows[0]["status"] == "ok" and with_user.rows[0]["gbps"] == 500.0
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    assert cli.main(["run", "peak", "--out", str(tmp_path)]) == 0
    assert "unknown (" in capsys.readouterr().out
    assert not (tmp_path / "peak.png").exists()


# --- timers ----------------------------------------------------------------------------------

def test_timers_put_both_clocks_side_by_side(ctx):
    res = pyclperf.run("timers", ctx, values=[4096, 65536], local_size=64, **QUICK)
    df = res.df
    assert list(df["items"]) == [4096, 65536] and res.all_verified
    assert np.allclose(df["host_over_events"], df["host_median_ns"] / df["median_ns"])
    assert (df["queued_to_start_ns"] >= 0).all() and (df["bytes"] == 8 * df["items"]).all()
    assert res.meta["profiling_timer_resolution_ns"] == ctx.info.profiling_timer_resolution_ns
    with pytest.raises(pyclperf.InvalidArgumentError, match="multiple of the work-group"):
        pyclperf.run("timers", ctx, values=[1000], local_size=64)
    largest = pyclperf.experiments.get("timers").configure(ctx, size=1 << 16)
    assert largest.sizes == [1 << 10, 1 << 14, 1 << 16]


def test_an_experiment_refuses_knobs_it_lacks(ctx):
    with pytest.raises(pyclperf.InvalidArgumentError, match="'peak' takes no size"):
        pyclperf.run("peak", ctx, size=5)
    with pytest.raises(pyclperf.InvalidArgumentError, match="'vector' takes no values"):
        pyclperf.run("vector", ctx, values=[1])
    with pytest.raises(pyclperf.InvalidArgumentError, match="'transfer' takes no local_size"):
        pyclperf.run("transfer", ctx, local_size=64)


# --- CLI and plots ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, size", [("transfer", "16384"), ("batching", "65536"), ("timers", "4096")])
def test_cli_runs_and_plots(ctx, tmp_path, capsys, monkeypatch, name, size):
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    # Only timers launches kernels; transfer and batching refuse a work-group size.
    local = ["--local-size", "64"] if name == "timers" else []
    code = cli.main(["run", name, "--size", size, *local, "--warmup", "1",
                     "--repeats", "2", "--pcie-gbps", "1000", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    for suffix in ("csv", "jsonl", "png"):
        assert (tmp_path / f"{name}.{suffix}").is_file()
    back = pyclperf.Results.load(tmp_path / f"{name}.jsonl")
    # (A ceiling this CPU device's copies beat would make their rows suspect: pyclperf.measure.plausible.)
    assert back.meta["pcie_gbps"] == 1000.0 and back.all_verified


def test_transfers_are_timed_by_the_runs_policy(ctx):
    """Transfers stop by the same rule as kernel launches: --min-time-s and the interval reach
    them, and each row says how its timing stopped (they used to time a fixed 10, whatever
    was asked)."""
    res = pyclperf.run("transfer", ctx, sizes=[64 * KiB], modes=["h2d pinned direct", "d2d"],
                       min_time_s=0.02, progress=False)
    for row in res.rows:
        assert row["status"] == "ok", row
        assert row["stopped"] in ("interval", "wall cap", "sample cap") and row["rounds"] >= 1
        # The floor was reached (the mean is the times' sum over their count) unless a cap stopped it.
        assert row["n"] * row["mean_ns"] >= 0.02e9 or row["stopped"] != "interval", row
    assert res.meta["min_time_s"] == 0.02


def test_a_minimum_time_is_refused_where_a_sweep_times_fixed_repeats(ctx, monkeypatch, capsys, tmp_path):
    with pytest.raises(pyclperf.InvalidArgumentError, match="--min-time-s"):
        pyclperf.run("timers", ctx, min_time_s=0.5, progress=False)
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{ctx.info.platform_index}:{ctx.info.device_index}")
    assert cli.main(["run", "timers", "--min-time-s", "0.5", "--out", str(tmp_path)]) == 2
    assert "timers times a fixed number of repeats" in capsys.readouterr().err
