"""Locked clocks: held at their maxima inside a run, reset however the run ends, and a record
of why not wherever the driver (or the device, or a missing NVML) does not allow it.

NVML is replaced by a stand-in module that records every call (no GPU is needed, and no real
board's clocks are touched); the runs on the test device check the record a user sees."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import pyclperf
from pyclperf.device import peak
from pyclperf.device.clock_lock import locked_clocks
from pyclperf import Execution, Timing, Verify

class _Error(Exception):
    pass


def _fake_nvml(refuse: str | None = None) -> types.ModuleType:
    calls: list[tuple] = []
    nvml = types.ModuleType("pynvml")
    nvml.calls = calls  # type: ignore[attr-defined]
    nvml.NVMLError = _Error  # type: ignore[attr-defined]
    nvml.NVML_CLOCK_SM, nvml.NVML_CLOCK_MEM = 1, 2  # type: ignore[attr-defined]

    def record(name: str, result=None):
        def call(*args):
            calls.append((name, *args[1:]))
            if name == refuse:
                raise _Error("Insufficient Permissions")
            return result
        return call

    for name in ("nvmlInit", "nvmlShutdown"):
        setattr(nvml, name, lambda *a, n=name: calls.append((n,)))
    nvml.nvmlDeviceGetCount = lambda: 1  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetHandleByIndex = lambda i: f"gpu{i}"  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetName = lambda h: "Fake H200"  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetMaxClockInfo = lambda h, kind: 1980 if kind == 1 else 3201  # type: ignore[attr-defined]
    for name in ("nvmlDeviceSetGpuLockedClocks", "nvmlDeviceSetMemoryLockedClocks",
                 "nvmlDeviceResetGpuLockedClocks", "nvmlDeviceResetMemoryLockedClocks"):
        setattr(nvml, name, record(name))
    return nvml


INFO = types.SimpleNamespace(vendor="NVIDIA Corporation", platform_name="NVIDIA CUDA", name="Fake H200")


@pytest.fixture
def nvml(monkeypatch):
    def install(refuse: str | None = None):
        fake = _fake_nvml(refuse)
        monkeypatch.setitem(sys.modules, "pynvml", fake)
        monkeypatch.setattr(peak, "_PYNVML_ABSENT", False)
        return fake
    return install


def _names(fake) -> list[str]:
    return [c[0] for c in fake.calls if c[0].startswith("nvmlDevice")]


def test_clocks_are_locked_inside_and_reset_after(nvml):
    fake = nvml()
    with locked_clocks(INFO) as lock:
        assert lock["clocks_locked"] and "1980 MHz" in lock["clock_lock"] and "3201 MHz" in lock["clock_lock"]
        assert ("nvmlDeviceSetGpuLockedClocks", 1980, 1980) in fake.calls
        assert "nvmlDeviceResetGpuLockedClocks" not in _names(fake)
    assert _names(fake)[-2:] == ["nvmlDeviceResetMemoryLockedClocks", "nvmlDeviceResetGpuLockedClocks"]


def test_clocks_are_reset_when_the_run_raises(nvml):
    fake = nvml()
    with pytest.raises(RuntimeError, match="the sweep failed"):
        with locked_clocks(INFO):
            raise RuntimeError("the sweep failed")
    assert "nvmlDeviceResetGpuLockedClocks" in _names(fake)
    assert "nvmlDeviceResetMemoryLockedClocks" in _names(fake)
    assert fake.calls[-1] == ("nvmlShutdown",)


def test_a_refusal_is_recorded_and_nothing_is_left_to_reset(nvml):
    fake = nvml(refuse="nvmlDeviceSetGpuLockedClocks")
    with locked_clocks(INFO) as lock:
        assert not lock["clocks_locked"] and "refused" in lock["clock_lock"]
        assert "Insufficient Permissions" in lock["clock_lock"]
    assert not any(n.startswith("nvmlDeviceReset") for n in _names(fake))


def test_a_memory_clock_refusal_still_locks_and_resets_the_sm_clock(nvml):
    fake = nvml(refuse="nvmlDeviceSetMemoryLockedClocks")
    with locked_clocks(INFO) as lock:
        assert lock["clocks_locked"] and "memory clock not locked" in lock["clock_lock"]
    assert _names(fake)[-1] == "nvmlDeviceResetGpuLockedClocks"
    assert "nvmlDeviceResetMemoryLockedClocks" not in _names(fake)


def test_not_asked_means_nothing_is_touched(nvml):
    fake = nvml()
    with locked_clocks(INFO, enabled=False) as lock:
        assert lock == {}
    assert fake.calls == []


def test_a_run_on_a_device_nvml_does_not_know_says_why(ctx, nvml, tmp_path):
    nvml()
    res = pyclperf.run("offset", ctx, size=1 << 14, values=[0, 1], warmup=1, repeats=2,
                       min_time_s=0.0, lock_clocks=True, out=tmp_path / "o.jsonl")
    assert res.all_verified
    if "NVIDIA" not in f"{ctx.info.vendor} {ctx.info.platform_name}".upper():
        assert res.meta["clock_lock"].startswith("not locked:") and res.meta["clocks_locked"] is False
    assert pyclperf.Results.load(tmp_path / "o.jsonl").meta["clock_lock"] == res.meta["clock_lock"]


def test_tune_records_the_lock_in_its_metadata(ctx, nvml):
    nvml()
    a = np.random.default_rng().standard_normal(4096).astype(np.float32)
    src = "__kernel void cp(__global float *o, __global const float *a) { o[get_global_id(0)] = a[get_global_id(0)]; }"
    res = pyclperf.tune(
        src,
        "cp",
        a.size,
        [np.empty_like(a), a],
        {"block_size_x": [64]},
        ctx=ctx,
        verify=Verify(answer=[a, None]),
        timing=Timing(lock_clocks=True),
        execution=Execution(progress=False),
    )
    assert res.rows[0]["status"] == "ok"
    assert "clock_lock" in res.meta and "clocks_locked" in res.meta
