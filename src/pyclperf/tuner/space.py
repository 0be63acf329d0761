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


# The largest number of work-items one dimension of an NDRange can name (size_t).
SIZE_MAX = (1 << 64) - 1


def work_items(value: Any, what: str) -> int:
    """``value`` as a count of work-items (or groups): a positive integer that fits size_t.
    Integral floats pass (Kernel Tuner converts with int()); anything else, 0, inf, NaN or a
    count past size_t is an InvalidArgumentError naming ``what``, instead of a ZeroDivisionError
    or OverflowError further down."""
    if isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
        value = int(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise _core.InvalidArgumentError(f"{what} is {value!r}: it must be a positive integer")
    if int(value) < 1:
        raise _core.InvalidArgumentError(f"{what} is {value!r}: it must be a positive integer")
    if int(value) > SIZE_MAX:
        raise _core.InvalidArgumentError(f"{what} is {value!r}, more than an NDRange can name "
                                         "(2**64-1, size_t)")
    return int(value)


def _as_dims(value: Any, what: str) -> tuple[int, ...]:
    dims = [value] if not isinstance(value, (list, tuple, np.ndarray)) else list(value)
    if not 1 <= len(dims) <= 3:
        raise _core.InvalidArgumentError(f"{what} must be 1-3 positive integers, got {value!r}")
    return tuple(work_items(d, f"{what} in {'xyz'[i]}") for i, d in enumerate(dims))


def _names_params(size: Any) -> bool:
    return isinstance(size, str) or (isinstance(size, (list, tuple)) and
                                     any(isinstance(d, str) for d in size))


def block_names(names: Sequence[str] | None) -> tuple[str, str, str]:
    """Kernel Tuner's block_size_names: 1-3 names, the defaults filling the dimensions left
    out (["TS"] is TS, block_size_y, block_size_z). A name may repeat: ["TS", "TS"] makes a
    square work-group of TS x TS."""
    given = list(DEFAULT_BLOCK_NAMES if names is None else names)
    if isinstance(names, (str, bytes)) or not 1 <= len(given) <= 3 or not all(
            isinstance(n, str) and n for n in given):
        raise _core.InvalidArgumentError(
            f"block_size_names must be a list of 1-3 names, got {names!r}")
    return tuple(given + list(DEFAULT_BLOCK_NAMES[len(given):]))  # type: ignore[return-value]


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
        self.block_size_names = block_names(self.block_size_names)

    def size(self, config: Config) -> tuple[int, ...]:
        """Kernel Tuner's forms too: a parameter's name stands for its value."""
        p = self.problem_size
        if callable(p):
            return _as_dims(p(config), "problem_size(config)")
        if isinstance(p, str):
            return _as_dims(config[p], f"problem size {p!r}")
        return _as_dims([config[d] if isinstance(d, str) else d for d in p], "problem size")

    def tuned_dims(self, config: Config) -> int:
        """How many dimensions the tuned block sizes span: 2 when the y name is a parameter of
        the configuration, 3 for z, else 1 (0 when no block-size name is tuned)."""
        tuned = [d for d, n in enumerate(self.block_size_names) if n in config]
        return max(tuned) + 1 if tuned else 0

    def local(self, config: Config, dims: int) -> list[int] | None:
        if self.local_size is not None:
            return [int(v) for v in self.local_size]
        names = list(self.block_size_names)[:dims]
        if not any(n in config for n in names):
            return None  # the driver chooses, as a plain clEnqueueNDRangeKernel(..., NULL) does
        return [work_items(config[n], f"the work-group size in {'xyz'[d]} ({n})")
                if n in config else 1
                for d, n in enumerate(names)] + [1] * (dims - len(names))

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
            value = math.prod(config[p] if isinstance(p, str) else
                              p(config) if callable(p) else p for p in parts)
        return work_items(value, f"the grid divisor of dimension {'xyz'[d]}")

    def ndrange(self, config: Config) -> tuple[list[int], list[int] | None]:
        """(global, local) work-items, by Kernel Tuner's rule: the problem size, padded with
        1s to the dimensions the tuned block sizes span (a 1-D problem with block_size_y tuned
        launches 2-D, as Kernel Tuner's 3-D launch does), divided (rounded up) by the grid
        divisor, default the block size, is the grid; global = grid x block. Or
        ``global_size(config)``. InvalidArgumentError names a size that is no positive
        integer (a block size of 0, inf or 2**70)."""
        if self.global_size is not None:
            glob = list(_as_dims(self.global_size(config), "global_size(config)"))
            return glob, self.local(config, len(glob))
        size = self.size(config)
        dims = max(len(size), self.tuned_dims(config))
        size = size + (1,) * (dims - len(size))
        local = self.local(config, dims)
        glob = []
        for d, p in enumerate(size):
            groups = -(-p // self.divisor(config, d, local))
            glob.append(work_items(groups * (local[d] if local is not None else 1),
                                   f"the global size in {'xyz'[d]}"))
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
