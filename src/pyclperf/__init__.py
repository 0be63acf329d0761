"""pyclperf: GPU memory-performance experiments over OpenCL, verified and timed in C++.

Five lines in a notebook::

    import pyclperf
    ctx = pyclperf.Context()                  # $PYCLPERF_DEVICE, else first GPU, else CPU
    res = pyclperf.run("offset", ctx)         # verified sweep -> Results
    res.df                                    # tidy pandas DataFrame
    pyclperf.plot_bandwidth(res)

Transfers and ceilings: ``pyclperf.run("transfer", ctx)``, ``pyclperf.time_transfer(...)``,
``pyclperf.peak.theoretical(ctx)``.
"""

from __future__ import annotations

from . import _icd  # noqa: F401  (must configure the ICD loader before _core loads OpenCL)
from . import peak
from ._core import (
    Buffer,
    BuildError,
    ClError,
    DeviceInfo,
    DeviceMemoryError,
    Image,
    InvalidArgumentError,
    PinnedBuffer,
    PyclperfError,
    ReleasedError,
    Sampler,
)
from .context import Context
from .engine.kt import tune_kernel
from .devices import default_device, device_summary, list_devices, select_device
from .experiments import names as experiment_names
from .experiments import run
from .plot import plot_bandwidth, plot_results, save_plot
from .program import Kernel, LocalMemory, Program
from .results import Results, ResultsFileError, ResultsWriteError
from .sources import kernel_source
from .stats import bandwidth_gbps, summarize
from .transfers import time_copy, time_transfer
from .engine.measure import KernelRunError
from .engine.tune import run_kernel, tune

__version__ = "0.1.0"

__all__ = [
    "Buffer",
    "BuildError",
    "ClError",
    "Context",
    "DeviceInfo",
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
    "kernel_source",
    "list_devices",
    "peak",
    "plot_bandwidth",
    "plot_results",
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
