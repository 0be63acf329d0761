"""Memory checks: one launch of a kernel on Oclgrind, and what it found wrong.

``memcheck(source, kernel_name, args, global_size, local_size)`` builds the kernel on
Oclgrind's simulated device (in a child process: pyclperf.device.oclgrind), places every array
argument in a buffer of exactly its size, launches once and returns a list of ``Finding``:
accesses out of a buffer's bounds (global, constant or __local), data races between
work-items, uses of uninitialised values, barrier divergence, misuse of the API. An empty
list means Oclgrind saw nothing wrong in this launch (for these sizes and inputs: a race
that needs another schedule, or an index that only goes wrong for other sizes, is not seen).

Unlike pyclperf's own guard zones, which notice a write past an array's end after the launch,
Oclgrind catches reads too, __local accesses, and races, and names the source line. It is
slow (an interpreter, every work-item): keep sizes small.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .. import _core
from ..device.program import LocalMemory
from ..device import argtypes
from ..device.oclgrind import (DEFAULT_MAX_REPORTS, DEFAULT_TIMEOUT_S, KINDS, Finding, Memory,
                       MemcheckError, api_errors, parse, run_child, split)

__all__ = ["Finding", "KINDS", "MemcheckError", "memcheck"]
from ..device.sources import load_source

# A kernel that hands back where Oclgrind placed a buffer: its simulated address.
_WHERE = """__kernel void pyclperf_where(__global const uchar* p, __global ulong* out)
{ out[0] = (ulong)p; }"""
# __local declarations in a source: parameters and arrays declared inside kernels.
_LOCAL_DECL = re.compile(r"\b(?:__)?local\s+(?:(?:const|volatile|unsigned|signed|struct)\s+)*"
                         r"\w+\s*\*?\s*(?:(?:restrict|const|volatile)\s+)*([A-Za-z_]\w*)")

def _dims(value: Any, name: str) -> list[int]:
    """A launch size (one integer or a sequence of them) as a list of non-negative ints."""
    dims = [value] if np.isscalar(value) else list(value)
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"{name} must hold integers, got {d!r}")
        if d < 0:
            raise _core.InvalidArgumentError(f"{name} {tuple(dims)} has a negative entry")
    return [int(d) for d in dims]


def memcheck(
    source: str | os.PathLike[str],
    kernel_name: str,
    args: Sequence[Any],
    global_size: int | Sequence[int],
    local_size: int | Sequence[int] | None = None,
    *,
    options: str = "",
    defines: Mapping[str, Any] | None = None,
    data_races: bool = True,
    uninitialized: bool = True,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_reports: int = DEFAULT_MAX_REPORTS,
) -> list[Finding]:
    """Launch ``kernel_name`` once on Oclgrind and return what it found (empty: nothing).

    ``source`` is OpenCL C text, a .cl path or a shipped kernel file name; ``options`` and
    ``defines`` ({"TS": 16} -> -D TS=16) go to the build as with Context.program. ``args`` holds
    one value per kernel parameter: NumPy arrays for global and constant pointers (placed in
    buffers of exactly their size, so one element past the end is caught), numbers or NumPy
    scalars by value, LocalMemory(nbytes) for __local pointers. ``local_size`` None lets the
    device choose. ``data_races`` and ``uninitialized`` switch those (slower) checks;
    ``timeout_s`` bounds the whole run; Oclgrind stops reporting after ``max_reports`` reports
    (findings merge identical reports, so ``count`` sums to at most that).

    Raises what the launch raises (BuildError, TypeError for an argument of the wrong kind or
    dtype, naming it), and MemcheckError where Oclgrind is not installed, crashes or runs past
    ``timeout_s`` (with ``findings`` reported until then).
    """
    text = load_source(source)
    global_dims = _dims(global_size, "global size")
    local_dims = [] if local_size is None else _dims(local_size, "local size")
    values = list(args)
    for i, value in enumerate(values):
        if isinstance(value, (_core.Buffer, _core.Image, _core.Sampler)):
            raise TypeError(f"argument {i}: pass a NumPy array (memcheck places it on Oclgrind's "
                            f"device itself), not a {type(value).__name__}")
        if isinstance(value, np.ndarray):
            argtypes.check_plain_array(i, value)
        elif callable(value):
            raise TypeError(f"argument {i}: memcheck takes values, not callables")
    payload = {"source": text, "kernel": kernel_name, "args": values, "global": global_dims,
               "local": local_dims, "options": options,
               "defines": {str(k): v for k, v in (defines or {}).items()}}
    if isinstance(max_reports, bool) or not isinstance(max_reports, int) or max_reports < 1:
        raise _core.InvalidArgumentError(f"max_reports must be a positive int, got {max_reports!r}")
    # (On a timeout, the findings so far come without argument names: where the buffers went
    # is known only once the child returns.)
    run = run_child("pyclperf.tuner.memcheck:_launch", payload, timeout_s=timeout_s,
                    data_races=data_races, uninitialized=uninitialized, max_reports=max_reports)
    placed = run.result
    memory = Memory(placed["buffers"], placed["locals"], frozenset(_LOCAL_DECL.findall(text)))
    findings, _ = parse(split(run.log, [placed["start"]])[1], memory)
    extra, _ = parse(api_errors(run.stderr), memory)
    return findings + extra


def _where(ctx: Any, buffers: list[Any]) -> list[int]:
    """Oclgrind's address of each buffer (the probe kernel reads it off its pointer)."""
    kernel = ctx.program(_WHERE).kernel("pyclperf_where")
    out = ctx.buffer(8)
    found = []
    for buf in buffers:
        kernel.set_args(buf, out)
        kernel.run([1], [1])
        found.append(int(ctx.from_device(out, np.uint64)[0]))
    out.release()
    return found


def _launch(ctx: Any, job: dict[str, Any], mark: Callable[[], int]) -> dict[str, Any]:
    """In the child: place the arguments, launch once; where each array went, and where the
    launch's part of the log starts."""
    from ..device.oclgrind import OFFSET_BITS

    program = ctx.program(job["source"], defines=job["defines"], options=job["options"])
    kernel = program.kernel(job["kernel"])
    declared = kernel.args
    values = job["args"]
    if len(values) != len(declared):
        raise TypeError(f"kernel '{kernel.name}' takes {len(declared)} argument(s) "
                        f"({', '.join(a.name for a in declared)}), got {len(values)}")
    device_args: list[Any] = []
    arrays: list[tuple[str, Any, int]] = []
    local_sizes: dict[str, int] = {}
    for i, (value, info) in enumerate(zip(values, declared)):
        if isinstance(value, np.ndarray):
            problem = argtypes.check_array_for(i, info, value)
            if problem:
                raise TypeError(problem)
            if value.size == 0:
                raise _core.InvalidArgumentError(f"argument {i} ('{info.name}') is an empty array")
            buf = ctx.to_device(value)
            arrays.append((info.name, buf, int(value.nbytes)))
            device_args.append(buf)
        elif isinstance(value, LocalMemory):
            if info.address_qualifier != "local":
                raise TypeError(f"{argtypes.describe(i, info)} is not a __local pointer, "
                                "but LocalMemory was given")
            local_sizes[info.name] = int(value.nbytes)
            device_args.append(value)
        else:
            device_args.append(argtypes.scalar_for(i, info, value))
    buffers = {}
    for (name, _, nbytes), address in zip(arrays, _where(ctx, [b for _, b, _ in arrays])):
        if address & ((1 << OFFSET_BITS) - 1) == 0:  # else the layout is not the one assumed
            buffers[address >> OFFSET_BITS] = (name, nbytes)
    kernel.set_args(*device_args)
    start = mark()
    kernel.run(job["global"], job["local"])
    ctx.finish()
    return {"buffers": buffers, "locals": local_sizes, "start": start}
