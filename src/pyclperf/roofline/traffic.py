"""The bytes a kernel must move, counted from its arguments' declared qualifiers.

Compulsory traffic, by default: each input (a ``const`` global pointer, or a ``__constant`` one)
read once, each output (a global pointer without ``const``) written once, each in/out argument
(one the tuning declares ``inout``: read and written) twice; scalars, ``__local`` buffers,
images and samplers move no global bytes here. The qualifiers come from the built kernel's
argument info (``Kernel.args``: address qualifier, const, type), not from reading the source.
The working set is the sum of the array arguments' sizes: what must fit in a cache for repeated
launches to be served from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

INPUT, OUTPUT, INOUT, NONE = "input", "output", "inout", "none"
MOVES = {INPUT: 1, OUTPUT: 1, INOUT: 2, NONE: 0}


@dataclass(frozen=True)
class ArgTraffic:
    """One kernel argument: what it is and the bytes counted for it."""

    index: int
    name: str
    qualifier: str   # global, constant, local, private
    type_name: str
    is_const: bool
    nbytes: int      # the array's bytes (0 for what is no global array)
    role: str        # input, output, inout, none

    @property
    def moved(self) -> int:
        return MOVES[self.role] * self.nbytes

    @property
    def read(self) -> int:
        return self.nbytes if self.role in (INPUT, INOUT) else 0

    @property
    def written(self) -> int:
        return self.nbytes if self.role in (OUTPUT, INOUT) else 0


def resolve(value: Any, config: dict[str, Any]) -> Any:
    """An argument as the tuner passes it: a callable of the configuration is called."""
    return value(config) if callable(value) else value


def _index(ref: int | str, names: Sequence[str]) -> int:
    if isinstance(ref, str):
        if ref not in names:
            raise ValueError(f"inout names no kernel argument {ref!r}; arguments: {', '.join(names)}")
        return names.index(ref)
    if not 0 <= int(ref) < len(names):
        raise ValueError(f"inout index {ref} is out of range for {len(names)} arguments")
    return int(ref)


def arg_traffic(infos: Sequence[Any], values: Sequence[Any], inout: Sequence[int | str] = (),
                config: dict[str, Any] | None = None) -> list[ArgTraffic]:
    """Each argument's role and bytes: ``infos`` the kernel's argument info (``Kernel.args``:
    name, address_qualifier, is_const, type_name, is_image, is_sampler), ``values`` the arguments
    as passed to tune (arrays, numbers, LocalMemory, callables of ``config``), ``inout`` the
    arguments declared read and written (indices or names)."""
    if len(infos) != len(values):
        raise ValueError(f"the kernel takes {len(infos)} arguments, {len(values)} were given")
    names = [str(a.name) for a in infos]
    both = {_index(r, names) for r in inout}
    out = []
    for i, (info, value) in enumerate(zip(infos, values)):
        value = resolve(value, config or {})
        qualifier = str(info.address_qualifier)
        array = qualifier in ("global", "constant") and isinstance(value, np.ndarray)
        image = bool(getattr(info, "is_image", False) or getattr(info, "is_sampler", False))
        if not array or image:
            role = NONE
        elif i in both:
            role = INOUT
        elif qualifier == "constant" or info.is_const:
            role = INPUT
        else:
            role = OUTPUT
        out.append(ArgTraffic(i, names[i], qualifier, str(info.type_name), bool(info.is_const),
                              int(value.nbytes) if array else 0, role))
    return out


def count(traffic: Sequence[ArgTraffic]) -> int:
    """Bytes moved by one launch: inputs once, outputs once, in/out twice."""
    return sum(a.moved for a in traffic)


def working_set(traffic: Sequence[ArgTraffic]) -> int:
    """Bytes of all global and constant arrays together."""
    return sum(a.nbytes for a in traffic if a.role != NONE)


def describe(traffic: Sequence[ArgTraffic]) -> str:
    """"a, b read once (8.39 MB); c written once (4.19 MB)", from the qualifiers."""
    parts = []
    for role, words in ((INPUT, "read once"), (OUTPUT, "written once"), (INOUT, "read and written")):
        group = [a for a in traffic if a.role == role]
        if group:
            parts.append(f"{', '.join(a.name for a in group)} {words} "
                         f"({sum(a.moved for a in group) / 1e6:.3g} MB)")
    return "; ".join(parts) or "no global array arguments"


def kernel_infos(ctx: Any, source: str, kernel_name: str, config: dict[str, Any],
                 options: str = "") -> list[Any]:
    """The argument info of ``kernel_name`` built as the tuner builds it for ``config`` (its
    parameters as -D defines, then ``options``)."""
    program = ctx.program(source=source, defines={k: v for k, v in config.items()}, options=options)
    return list(program.kernel(kernel_name).args)


BytesFn = Callable[[dict[str, Any]], float]

__all__ = ["ArgTraffic", "BytesFn", "INOUT", "INPUT", "NONE", "OUTPUT", "arg_traffic", "count",
           "describe", "kernel_infos", "resolve", "working_set"]
