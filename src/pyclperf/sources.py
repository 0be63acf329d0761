"""The OpenCL C sources shipped inside the package (kernels/*.cl)."""

from __future__ import annotations

from importlib import resources


def kernel_source(filename: str) -> str:
    """Text of a shipped kernel file, e.g. ``kernel_source("copy.cl")``."""
    path = resources.files("pyclperf").joinpath("kernels", filename)
    if not path.is_file():
        available = sorted(p.name for p in resources.files("pyclperf").joinpath("kernels").iterdir())
        raise FileNotFoundError(f"no shipped kernel file {filename!r}; available: {available}")
    return path.read_text(encoding="utf-8")
