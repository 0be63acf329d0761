"""The experiment catalogue: one class per id of EXPERIMENTS.md, run through one engine."""

from __future__ import annotations

import os
from typing import Any

from ..results import Results
from .banks import Banks
from .base import Experiment, Sweep, run_experiment
from .batching import Batching
from .blocksize import BlockSize
from .caches import ConstantMemory, Texture
from .coalescing import OffsetCopy, StrideCopy
from .divergence import Divergence
from .histogram import Histogram
from .instructions import BuildOptions, IntOps, MathFunctions
from .launchbounds import LaunchBounds
from .layout import StructLayout
from .matmul import AAT, MatMul, Tiling
from .occupancy import Occupancy
from .p2p import P2P
from .peak_bandwidth import PeakExperiment
from .reduction import Reduction
from .separable import Separable
from .timers import Timers
from .transfer import Transfer
from .vector import VectorWidth

# In the order of EXPERIMENTS.md: timing, transfers, coalescing, local memory, read-only caches,
# execution configuration, instructions, cooperative patterns.
CATALOGUE: tuple[type[Sweep], ...] = (
    Timers, PeakExperiment, Transfer, Batching, P2P,
    OffsetCopy, StrideCopy, VectorWidth, StructLayout,
    MatMul, AAT, Banks, Tiling,
    ConstantMemory, Texture,
    BlockSize, Occupancy, LaunchBounds,
    MathFunctions, IntOps, BuildOptions, Divergence,
    Histogram, Reduction, Separable,
)
REGISTRY: dict[str, type[Sweep]] = {cls.id: cls for cls in CATALOGUE}


def names() -> list[str]:
    return sorted(REGISTRY)


def get(name: str) -> type[Sweep]:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown experiment {name!r}; available: {', '.join(names())}") from None


def run(
    name: str,
    ctx: Any = None,
    *,
    size: int | None = None,
    local_size: int = 256,
    values: list[int] | None = None,
    warmup: int = 3,
    repeats: int = 20,
    method: str = "events",
    verify: bool = True,
    out: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    peak_gbps: float | None = None,
    memory_clock_mhz: float | None = None,
    bus_width_bits: int | None = None,
    pcie_gbps: float | None = None,
    **options: Any,
) -> Results:
    """Run experiment ``name`` on ``ctx`` (default: pyclperf.Context()) and return its Results.

    ``size`` is the problem size (work-items for kernel sweeps, bytes for transfers: see each
    experiment), ``values`` the swept parameter's values (default: the experiment's), ``out`` a
    JSON-lines file written as points finish. ``peak_gbps``, ``memory_clock_mhz`` with
    ``bus_width_bits``, and ``pcie_gbps`` override the theoretical ceilings NVML would give
    (``fraction_of_peak``); ``options`` go to the experiment's constructor.
    """
    from ..context import Context
    from ..peak import theoretical

    cls = get(name)
    ctx = Context() if ctx is None else ctx
    peak = theoretical(ctx, peak_gbps=peak_gbps, memory_clock_mhz=memory_clock_mhz,
                       bus_width_bits=bus_width_bits, pcie_gbps=pcie_gbps)
    experiment = cls.configure(ctx, size=size, local_size=local_size, values=values, **options)
    return run_experiment(experiment, warmup=warmup, repeats=repeats, method=method,
                          verify=verify, out=out, progress=progress, peak=peak)


__all__ = ["Experiment", "REGISTRY", "Sweep", "get", "names", "run", "run_experiment"]
