"""The search space and each configuration's launch geometry, with Kernel Tuner's meaning of
block_size_x/y/z, block_size_names, grid_div_x/y/z and a problem size that may depend on the
configuration."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence, Union

import numpy as np

from .. import _core

Config = dict[str, Any]
DEFAULT_BLOCK_NAMES = ("block_size_x", "block_size_y", "block_size_z")
# One dimension's grid divisor: param names (their product divides), a number, or a callable.
Divisor = Union[None, int, str, Sequence[Union[str, int]], Callable[[Config], Any]]


def config_key(config: Config) -> str:
    return ",".join(f"{k}={config[k]!r}" for k in sorted(config))


def check_params(params: Mapping[str, Sequence[Any]]) -> list[str]:
    """The parameter names, once each has a non-empty list of values."""
    names = list(params)
    for n in names:
        values = params[n]
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
            raise _core.InvalidArgumentError(f"tunable parameter {n!r} needs a non-empty list of "
                                             f"values, got {values!r}")
    return names


def configurations(params: Mapping[str, Sequence[Any]]) -> list[Config]:
    """The cartesian product of ``params``, in the order given, as a list: for small spaces
    only (searchspace.Space numbers the same product without building it)."""
    names = check_params(params)
    return [dict(zip(names, values)) for values in itertools.product(*(params[n] for n in names))]


def _as_dims(value: Any, what: str) -> tuple[int, ...]:
    dims = [value] if isinstance(value, (int, np.integer)) else list(value)
    out = tuple(int(d) for d in dims)
    if not 1 <= len(out) <= 3 or min(out) <= 0:
        raise _core.InvalidArgumentError(f"{what} must be 1-3 positive integers, got {value!r}")
    return out


def _names_params(size: Any) -> bool:
    return isinstance(size, str) or (isinstance(size, (list, tuple)) and
                                     any(isinstance(d, str) for d in size))


@dataclass
class Geometry:
    """How a configuration becomes an NDRange."""

    problem_size: Any  # int, sequence, or callable of the config
    global_size: Callable[[Config], Sequence[int]] | None = None
    grid_div: tuple[Divisor, Divisor, Divisor] = (None, None, None)
    block_size_names: Sequence[str] = DEFAULT_BLOCK_NAMES
    local_size: Sequence[int] | None = None  # fixed work-group (assert_kernel), else from names

    def __post_init__(self) -> None:
        if not callable(self.problem_size) and not _names_params(self.problem_size):
            self.problem_size = _as_dims(self.problem_size, "problem size")
        names = list(self.block_size_names)
        if not 1 <= len(names) <= 3 or len(set(names)) != len(names):
            raise _core.InvalidArgumentError(
                f"block_size_names must be 1-3 distinct names, got {self.block_size_names!r}")

    def size(self, config: Config) -> tuple[int, ...]:
        """Kernel Tuner's forms too: a parameter's name stands for its value."""
        p = self.problem_size
        if callable(p):
            return _as_dims(p(config), "problem_size(config)")
        if isinstance(p, str):
            return _as_dims(config[p], f"problem size {p!r}")
        return _as_dims([config[d] if isinstance(d, str) else d for d in p], "problem size")

    def local(self, config: Config, dims: int) -> list[int] | None:
        if self.local_size is not None:
            return [int(v) for v in self.local_size]
        names = list(self.block_size_names)[:dims]
        if not any(n in config for n in names):
            return None  # the driver chooses, as a plain clEnqueueNDRangeKernel(..., NULL) does
        return [int(config.get(n, 1)) for n in names] + [1] * (dims - len(names))

    def divisor(self, config: Config, d: int, local: list[int] | None) -> int:
        div = self.grid_div[d]
        if div is None:
            return local[d] if local is not None else 1
        if callable(div):
            value = div(config)
        elif isinstance(div, (int, np.integer)):
            value = div
        else:
            parts = [div] if isinstance(div, str) else list(div)
            value = math.prod(int(config[p]) if isinstance(p, str) else
                              int(p(config)) if callable(p) else int(p) for p in parts)
        if int(value) <= 0:
            raise _core.InvalidArgumentError(f"grid divisor of dimension {'xyz'[d]} is {value}")
        return int(value)

    def ndrange(self, config: Config) -> tuple[list[int], list[int] | None]:
        """(global, local) work-items. Kernel Tuner's rule: the grid is the problem size divided
        (rounded up) by the grid divisor, default the block size; global = grid x block."""
        size = self.size(config)
        local = self.local(config, len(size))
        if self.global_size is not None:
            return [int(v) for v in self.global_size(config)], local
        glob = []
        for d, p in enumerate(size):
            groups = -(-p // self.divisor(config, d, local))
            glob.append(groups * (local[d] if local is not None else 1))
        return glob, local


def compile_divisors(grid_div: Sequence[Divisor], params: Sequence[str]) -> tuple[Divisor, ...]:
    """Kernel Tuner's grid divisors with expressions compiled: a string that is no parameter
    name ("block_size_x*tile") becomes a safe expression over the parameters; one naming
    anything else is a ValueError now, before the first configuration."""
    from .restrictions import compile_expression

    def one(part: Any) -> Any:
        if isinstance(part, str) and part not in params:
            return compile_expression(part, params, what="grid divisor")
        return part

    out: list[Divisor] = []
    for div in grid_div:
        if isinstance(div, str):
            out.append([one(div)])
        elif isinstance(div, (list, tuple)):
            out.append([one(p) for p in div])
        else:
            out.append(div)
    return tuple(out)
