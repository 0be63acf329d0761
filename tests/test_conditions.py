"""tuner.conditions: the clocks, throttle reasons, power, temperature and energy around a point,
from NVML, and the flags a row gets when the GPU was not at full speed or not alone. NVML is
stood in for (pynvml's names, an H200's figures); the GPU suite reads the real one."""

from __future__ import annotations

import os
import sys
import types

import pytest

from pyclperf.measure import conditions
from pyclperf.measure.conditions import Conditions, energy_columns

H200 = types.SimpleNamespace(name="NVIDIA H200", vendor="NVIDIA Corporation",
                             platform_name="NVIDIA CUDA")


def fake_nvml(sm=1980, reasons=0, others=(), energy_step_mj=500):
    class NVMLError(Exception):
        pass

    energy = [1_000_000]

    def total_energy(handle):
        energy[0] += energy_step_mj
        return energy[0]

    procs = [types.SimpleNamespace(pid=p) for p in (os.getpid(), *others)]
    return types.SimpleNamespace(
        NVMLError=NVMLError, NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2, NVML_TEMPERATURE_GPU=0,
        nvmlClocksEventReasonGpuIdle=1, nvmlClocksEventReasonSwPowerCap=4,
        nvmlClocksEventReasonHwSlowdown=8, nvmlClocksEventReasonSwThermalSlowdown=32,
        nvmlInit=lambda: None, nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: 1, nvmlDeviceGetHandleByIndex=lambda i: "gpu0",
        nvmlDeviceGetName=lambda h: "NVIDIA H200",
        nvmlDeviceGetMaxClockInfo=lambda h, c: 1980 if c == 1 else 3201,
        nvmlDeviceGetClockInfo=lambda h, c: sm if c == 1 else 3201,
        nvmlDeviceGetPowerUsage=lambda h: 412_000, nvmlDeviceGetTemperature=lambda h, s: 51,
        nvmlDeviceGetCurrentClocksEventReasons=lambda h: reasons,
        nvmlDeviceGetTotalEnergyConsumption=total_energy,
        nvmlDeviceGetComputeRunningProcesses=lambda h: procs,
        # What pyclperf.device.peak asks for the theoretical ceilings (an H200's figures).
        nvmlDeviceGetMemoryBusWidth=lambda h: 6144, nvmlDeviceGetMaxPcieLinkGeneration=lambda h: 5,
        nvmlDeviceGetMaxPcieLinkWidth=lambda h: 16,
    )


@pytest.fixture
def nvml(monkeypatch):
    def install(**kwargs):
        module = fake_nvml(**kwargs)
        monkeypatch.setitem(sys.modules, "pynvml", module)
        monkeypatch.setattr(conditions, "_initialised", None)
        return module
    return install


def test_a_point_at_full_speed_alone_has_no_flag(nvml, monkeypatch):
    nvml()
    monkeypatch.setattr(conditions, "ENERGY_MIN_S", 0.0)  # every point reads the energy counter
    c = Conditions.for_device(H200)
    c.begin()
    row = c.end()
    assert row["sm_clock_mhz"] == 1980 and row["sm_clock_max_mhz"] == 1980
    assert row["mem_clock_mhz"] == 3201 and row["power_w"] == 412.0 and row["temperature_c"] == 51
    assert row["energy_j"] == pytest.approx(0.5) and row["mean_power_w"] > 0
    assert row["conditions"] == "" and row["throttle"] == ""


def test_throttling_low_clocks_and_another_process_are_flagged(nvml):
    nvml(sm=1395, reasons=4 | 32 | 1, others=(424242,))
    c = Conditions.for_device(H200)
    c.begin()
    row = c.end()
    assert "software power cap" in row["throttle"] and "software thermal slowdown" in row["throttle"]
    assert "throttled" in row["conditions"]
    assert "SM clock 1395 of 1980 MHz" in row["conditions"]
    assert "1 other process(es) on the GPU (pid 424242)" in row["conditions"]


def test_idle_reason_alone_is_no_flag(nvml):
    nvml(reasons=1)
    c = Conditions.for_device(H200)
    c.begin()
    assert c.end()["conditions"] == ""


def test_no_nvml_or_not_nvidia_means_nothing_is_claimed(monkeypatch, nvml):
    nvml()
    cpu = types.SimpleNamespace(name="pthread-haswell", vendor="AuthenticAMD",
                                platform_name="Portable Computing Language")
    assert Conditions.for_device(cpu) is None
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setattr("pyclperf.device.peak._PYNVML_ABSENT", False)
    assert Conditions.for_device(H200) is None


def test_energy_per_byte_and_bandwidth_per_watt():
    cols = {"energy_j": 2.0, "mean_power_w": 400.0}
    got = energy_columns(cols, bytes_moved=4e9, gbps=4000.0)
    assert got == {"j_per_gb": pytest.approx(0.5), "gbps_per_w": pytest.approx(10.0)}
    assert energy_columns({"energy_j": 0.0, "mean_power_w": None}, 4e9, 4000.0) == {}


def test_the_report_says_when_points_were_not_taken_at_full_speed():
    from pyclperf.views.report import conditions_warnings

    rows = [{"conditions": "throttled (software power cap); SM clock 1395 of 1980 MHz"},
            {"conditions": ""}, {"cache_resident": True}]
    said = conditions_warnings(rows)
    assert said[0].startswith("1 of 3 points were taken while the GPU was not at full speed")
    assert "throttled" in said[0]
    assert said[1].startswith("1 of 3 points were timed warm")
    assert conditions_warnings([{"conditions": ""}]) == []


def test_short_points_skip_the_costly_energy_counter(nvml, monkeypatch):
    """Reading NVML's energy counter costs milliseconds (3.8 ms on the H200), as much as a short
    point's whole measurement: only after a point that lasted ENERGY_MIN_S do points read it
    (its start on the reading thread), its end only where the point itself lasted that long,
    and after a short one they stop again."""
    module = nvml()
    reads = []
    counter = module.nvmlDeviceGetTotalEnergyConsumption
    module.nvmlDeviceGetTotalEnergyConsumption = lambda h: (reads.append(1), counter(h))[1]
    clock = iter([0.0, 0.5, 1.0, 1.5, 2.0, 2.001, 3.0, 3.001])
    monkeypatch.setattr(conditions.time, "perf_counter", lambda: next(clock))
    c = Conditions.for_device(H200)
    c.begin()
    assert "energy_j" not in c.end() and not reads       # the first point: 0.5 s, not read
    c.begin()
    assert "energy_j" in c.end() and len(reads) == 2     # after a long point it is read
    c.begin()
    # This one lasts 1 ms: its start was read (the last point was long), its end is not.
    assert "energy_j" not in c.end() and len(reads) == 3
    c.begin()
    assert "energy_j" not in c.end() and len(reads) == 3  # and the next reads neither


def _slow(module, seconds):
    """``module``'s per-point readings, each taking ``seconds`` (NVML on a busy driver)."""
    import time

    for name in ("nvmlDeviceGetClockInfo", "nvmlDeviceGetPowerUsage", "nvmlDeviceGetTemperature",
                 "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetComputeRunningProcesses"):
        call = getattr(module, name)
        setattr(module, name, lambda *a, _call=call: (time.sleep(seconds), _call(*a))[1])


def test_readings_are_taken_while_the_launches_run(nvml):
    """The readings come from a thread of their own while the point's launches run: a point
    longer than NVML's readings waits for none of them, and its row says they were done during
    it; a point shorter than them waits for the rest and says so."""
    import time

    module = nvml(sm=1395)
    _slow(module, 0.01)  # 6 readings: 60 ms
    c = Conditions.for_device(H200)
    c.begin()
    time.sleep(0.3)  # the point's launches
    t0 = time.perf_counter()
    row = c.end()
    assert time.perf_counter() - t0 < 0.03
    assert row["conditions_during"] is True and row["sm_clock_mhz"] == 1395
    assert "SM clock 1395 of 1980 MHz" in row["conditions"] and row["power_w"] == 412.0
    c.begin()
    row = c.end()  # a point shorter than its readings
    assert row["conditions_during"] is False and row["sm_clock_mhz"] == 1395


def test_a_point_that_raised_leaves_no_reading_in_the_way(nvml):
    """A point whose launches raised never calls end(): its reading, if not taken yet, is
    skipped, and the next point gets its own."""
    module = nvml()
    _slow(module, 0.02)
    c = Conditions.for_device(H200)
    c.begin()
    c.begin()  # the first point raised before end()
    c.begin()
    row = c.end()
    assert row["sm_clock_mhz"] == 1980 and row["conditions"] == ""


def test_a_reading_that_fails_is_raised_by_end(nvml):
    module = nvml()

    def broken(handle):
        raise RuntimeError("driver went away")

    module.nvmlDeviceGetPowerUsage = broken
    c = Conditions.for_device(H200)
    c.begin()
    with pytest.raises(RuntimeError, match="driver went away"):
        c.end()


def test_the_reading_thread_ends_when_idle_and_comes_back(nvml, monkeypatch):
    nvml()
    monkeypatch.setattr(conditions, "IDLE_S", 0.05)
    c = Conditions.for_device(H200)
    c.begin()
    c.end()
    reader = c._reader
    assert reader is not None
    reader.join(timeout=2)
    assert not reader.is_alive() and c._reader is None
    c.begin()
    assert c.end()["sm_clock_mhz"] == 1980


def test_a_sweep_s_first_point_reads_no_energy_whatever_the_last_sweep(nvml, monkeypatch):
    """A long point of one run must not make the next run's first, short point pay for the
    counter (3.8 ms a reading on the H200): each sweep starts afresh (run_experiment says so)."""
    module = nvml()
    reads = []
    counter = module.nvmlDeviceGetTotalEnergyConsumption
    module.nvmlDeviceGetTotalEnergyConsumption = lambda h: (reads.append(1), counter(h))[1]
    clock = iter([0.0, 0.5, 1.0, 1.001])
    monkeypatch.setattr(conditions.time, "perf_counter", lambda: next(clock))
    c = Conditions.for_device(H200)
    c.begin()
    c.end()  # a point of 0.5 s ends one sweep
    c.new_sweep()
    c.begin()
    assert "energy_j" not in c.end() and not reads


def test_an_experiment_sweep_starts_its_energy_afresh(ctx, monkeypatch):
    """run_experiment tells the device's readings that a sweep begins."""
    from pyclperf.measure import residency

    started = []
    watch = types.SimpleNamespace(new_sweep=lambda: started.append(1), begin=lambda: None,
                                  end=lambda: {})
    monkeypatch.setitem(residency._conditions, ctx, watch)
    import pyclperf

    pyclperf.run("offset", ctx, size=1024, values=[0, 1], repeats=2, verify=False, progress=False)
    assert started == [1]
