"""pyclperf: GPU memory-performance experiments over OpenCL, verified and timed in C++.

Five lines in a notebook::

    import pyclperf
    ctx = pyclperf.Context()                  # $PYCLPERF_DEVICE, else first GPU, else CPU
    res = pyclperf.run("offset", ctx)         # verified sweep -> Results
    res.df                                    # tidy pandas DataFrame
    pyclperf.plot_bandwidth(res)

Transfers and ceilings: ``pyclperf.run("transfer", ctx)``, ``pyclperf.time_transfer(...)``,
``pyclperf.device.peak.theoretical(ctx)``. The device's measured ceilings and a tuned kernel on its
roofline: ``pyclperf.profile(ctx)``, ``pyclperf.explain(results, ...)`` (pyclperf.roofline,
imported on first use).
"""

from __future__ import annotations

from .device import icd as _icd  # noqa: F401  (must configure the ICD loader before _core loads OpenCL)
from .device import peak
from ._core import (
    Buffer,
    BuildError,
    ClError,
    DeviceInfo,
    DeviceLimitError,
    DeviceMemoryError,
    Image,
    InvalidArgumentError,
    PinnedBuffer,
    PyclperfError,
    ReleasedError,
    Sampler,
)
from .device.context import Context
from .tuner.kt import tune_kernel
from .device.devices import default_device, device_summary, list_devices, select_device
from .experiments import names as experiment_names
from .experiments import run
from .views.plot import plot_bandwidth, plot_results, save_plot
from .views.plot_search import plot_convergence, plot_pareto
from .device.program import Kernel, LocalMemory, Program
from .measure.results import Results, ResultsFileError, ResultsWriteError
from .device.sources import kernel_source
from .measure.stats import bandwidth_gbps, summarize
from .device.transfers import time_copy, time_transfer
from .tuner.measure import KernelRunError
from .tuner.options import Execution, Launch, Output, Replay, Search, Timing, Verify
from .tuner.tune import run_kernel, tune
from .device import fake_clock as _fake_clock
from ._version import __version__

_fake_clock.install_if_asked()  # a test hook: PYCLPERF_FAKE_EVENT_CLOCK (see device/fake_clock.py)

# pyclperf.roofline's entry points, imported when first used (module __getattr__, PEP 562).
_ROOFLINE = ("profile", "explain", "plot_roofline")


def __getattr__(name: str) -> object:
    if name in _ROOFLINE:
        from . import roofline

        return getattr(roofline, name)
    raise AttributeError(f"module 'pyclperf' has no attribute {name!r}")


__all__ = [
    "Buffer",
    "BuildError",
    "Execution",
    "Launch",
    "Output",
    "Replay",
    "Search",
    "Timing",
    "Verify",
    "ClError",
    "Context",
    "DeviceInfo",
    "DeviceLimitError",
    "DeviceMemoryError",
    "Image",
    "InvalidArgumentError",
    "KernelRunError",
    "Kernel",
    "LocalMemory",
    "PinnedBuffer",
    "Program",
    "PyclperfError",
    "ReleasedError",
    "Sampler",
    "Results",
    "ResultsFileError",
    "ResultsWriteError",
    "bandwidth_gbps",
    "default_device",
    "device_summary",
    "experiment_names",
    "explain",
    "kernel_source",
    "list_devices",
    "peak",
    "plot_bandwidth",
    "plot_convergence",
    "plot_pareto",
    "plot_results",
    "plot_roofline",
    "profile",
    "run",
    "run_kernel",
    "save_plot",
    "select_device",
    "summarize",
    "time_copy",
    "time_transfer",
    "tune",
    "tune_kernel",
]
