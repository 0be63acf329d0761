"""What defines a tuning result, as digests, so that a results file is resumed only when every
one of them still holds, and a refusal can say which one changed."""

from __future__ import annotations

import hashlib
import types
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..measure.results import STOPPED, Results


def _feed(h: Any, value: Any, depth: int = 0) -> None:
    """Hash a value by content: arrays by dtype, shape and bytes; functions by their code,
    constants and the values they close over (so a lambda over another n differs)."""
    if depth > 6:
        h.update(b"<deep>")
        return
    if isinstance(value, np.ndarray):
        h.update(f"ndarray{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).view(np.uint8).tobytes())
    elif isinstance(value, (types.FunctionType, types.MethodType)):
        fn = value.__func__ if isinstance(value, types.MethodType) else value
        _feed(h, fn.__code__, depth + 1)
        for cell in fn.__closure__ or ():
            try:
                _feed(h, cell.cell_contents, depth + 1)
            except ValueError:  # an empty cell
                h.update(b"<empty>")
        _feed(h, fn.__defaults__, depth + 1)
    elif isinstance(value, types.CodeType):
        h.update(value.co_code)
        h.update(repr(value.co_names).encode())
        for c in value.co_consts:
            _feed(h, c, depth + 1)
    elif isinstance(value, Mapping):
        for k in sorted(value, key=repr):
            h.update(repr(k).encode())
            _feed(h, value[k], depth + 1)
    elif isinstance(value, (list, tuple)):
        h.update(f"{type(value).__name__}{len(value)}".encode())
        for v in value:
            _feed(h, v, depth + 1)
    elif isinstance(value, (str, bytes, int, float, bool, complex, type(None), np.generic)):
        h.update(f"{type(value).__name__}:{value!r}".encode())
    elif callable(value):
        h.update(type(value).__qualname__.encode())
        _feed(h, getattr(value, "__dict__", None), depth + 1)
    else:
        h.update(f"{type(value).__qualname__}:{value!r}".encode())


def digest(value: Any) -> str:
    h = hashlib.sha256()
    _feed(h, value)
    return h.hexdigest()[:16]


# Human names of the digests, in the order a refusal checks them.
LABELS = {
    "source": "the kernel source", "kernel": "the kernel name", "options": "the build options",
    "param_names": "the tunable parameters' names", "arguments": "the argument arrays",
    "verification": "the answer, reference or verify function, or its tolerances",
    "launch": "the launch geometry (problem size, global_size, grid divisors, block size names)",
    "restrictions": "the restrictions", "handling": "poison, inout or pinned",
    "device": "the device or its driver", "version": "pyclperf's version",
}


def fingerprint(parts: Mapping[str, Any]) -> dict[str, str]:
    """One digest per defining input; ``parts`` maps each key of LABELS to its value."""
    return {key: digest(parts[key]) for key in LABELS}


def defining(job: Any, params: Mapping[str, Any], restrictions: Sequence[Any],
             ctx: Any) -> dict[str, str]:
    """The digests of what defines tune()'s rows for ``job`` (a tuner.measure.Job) on ``ctx``'s
    device: a results file resumes only while they all hold."""
    from .._version import __version__

    v = job.verification
    g = job.geometry
    info = ctx.info
    return fingerprint({
        "source": job.source, "kernel": job.kernel_name, "options": job.options,
        "param_names": list(params), "arguments": list(job.args),
        "verification": [v.answer, v.reference, v.verify, v.rtol, v.atol],
        "launch": [g.problem_size, g.global_size, list(g.grid_div), list(g.block_size_names)],
        "restrictions": list(restrictions),
        # The clock is named only where it was chosen: "auto" follows the device and driver,
        # which the fingerprint holds already (and files written before the choice existed
        # timed by events there, as "auto" does on a sound clock).
        "handling": [job.poison if not isinstance(job.poison, bool) else bool(job.poison),
                     list(job.inout), job.pinned, job.reset_outputs]
                    + ([job.method] if job.method != "auto" else []),
        "device": [info.name, info.platform_name, info.driver_version],
        "version": __version__,
    })


def check_resume(path: Path, defining: dict[str, str]) -> set[str]:
    """The config keys already in ``path`` when it holds results of the same defining inputs;
    ValueError naming what changed otherwise."""
    previous = Results.load(path)
    old = previous.meta.get("defining")
    if not isinstance(old, dict):
        raise ValueError(f"{path} was not written by this version of tune() (it records no "
                         "defining inputs); write to a new file, or pass resume=False to "
                         "overwrite it")
    changed = [LABELS[k] for k in LABELS if old.get(k) != defining.get(k)]
    if changed:
        raise ValueError(f"cannot resume {path}: {', '.join(changed)} changed since it was "
                         "written, so its rows would not be results of this run; write to a new "
                         "file (out=...), or pass resume=False to overwrite it")
    return {str(r["config"]) for r in previous.rows
            if "config" in r and r.get("status") != STOPPED}  # a stopped one runs again
