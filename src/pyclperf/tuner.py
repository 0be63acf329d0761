"""Sweep any kernel: tune() over tunable -D parameters, run_kernel() for one configuration.

Compared with Kernel Tuner, every configuration is warmed up before it is timed, the number of
timed launches grows until a minimum total time is reached, a wrong result or a failed build is
a row status rather than the end of the run, and the results file resumes.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from . import _core
from .program import Kernel, LocalMemory, ceil_to
from .results import Results
from .sources import kernel_source
from .engine.timing import time_adaptively
from .stats import summarize
from .sweep import BUILD_FAILED, INVALID, OK, SKIPPED, WRONG, base_meta, classify, run_points

Config = dict[str, Any]
LOCAL_SIZE_NAMES = ("block_size_x", "block_size_y", "block_size_z")


@dataclass
class Verification:
    """How outputs are checked: expected arrays (None for unchecked args) and tolerances."""

    answer: list[Any] | None = None
    rtol: float = 1e-5
    atol: float = 1e-8


@dataclass
class KernelSpec:
    """Everything tune() and run_kernel() need to build and launch one kernel."""

    source: str
    name: str
    problem_size: tuple[int, ...]
    args: list[Any]
    options: str = ""
    global_size: Callable[[Config], Sequence[int]] | None = None
    pinned: bool = False
    extra_defines: dict[str, Any] = field(default_factory=dict)

    def local_size(self, config: Config) -> list[int] | None:
        dims = [config[n] for n in LOCAL_SIZE_NAMES[: len(self.problem_size)] if n in config]
        if not dims:
            return None
        return [int(d) for d in dims] + [1] * (len(self.problem_size) - len(dims))

    def ndrange(self, config: Config) -> tuple[list[int], list[int] | None]:
        local = self.local_size(config)
        if self.global_size is not None:
            g = [int(v) for v in self.global_size(config)]
        elif local is None:
            g = list(self.problem_size)
        else:
            g = [ceil_to(p, l) for p, l in zip(self.problem_size, local)]
        return g, local


def _problem_size(problem_size: int | Sequence[int]) -> tuple[int, ...]:
    dims = [problem_size] if isinstance(problem_size, (int, np.integer)) else list(problem_size)
    size = tuple(int(p) for p in dims)
    if not 1 <= len(size) <= 3 or min(size) <= 0:
        raise _core.InvalidArgumentError(f"problem size must be 1-3 positive integers, got {problem_size!r}")
    return size


def _load_source(source: str | os.PathLike[str]) -> str:
    """OpenCL C given as text, as a path to a .cl file, or as the name of a shipped kernel file."""
    text = os.fspath(source)
    if "\n" in text or not text.endswith(".cl"):
        return text
    if Path(text).is_file():
        return Path(text).read_text(encoding="utf-8")
    try:
        return kernel_source(text)
    except FileNotFoundError as exc:
        raise _core.InvalidArgumentError(f"{text!r} is not a path that exists here, and {exc}") from None


def _poison_for(dtype: np.dtype) -> np.ndarray:
    """One element's worth of poison: NaN for floats, an unlikely pattern for integers."""
    if dtype.kind == "f":
        return np.array([np.nan], dtype=dtype)
    if dtype.kind == "c":
        return np.array([complex(np.nan, np.nan)], dtype=dtype)
    return np.frombuffer((b"\xa5\x5a\xc3\x3c" * 4)[: dtype.itemsize], dtype=dtype).copy()


class _Bound:
    """Device copies of a KernelSpec's array arguments for one context."""

    def __init__(self, ctx: Any, spec: KernelSpec) -> None:
        self.ctx = ctx
        self.host: list[Any] = []
        self.device: list[Any] = []
        for i, a in enumerate(spec.args):
            if isinstance(a, np.ndarray):
                if a.size == 0:
                    raise _core.InvalidArgumentError(f"argument {i} is an empty array")
                host = np.ascontiguousarray(a)
                if spec.pinned:
                    buf = _core.PinnedBuffer(ctx, host.nbytes)
                    buf.write(host)
                else:
                    buf = ctx.to_device(host)
                self.host.append(host)
                self.device.append(buf)
            else:
                self.host.append(a)
                self.device.append(a)

    def reset(self) -> None:
        """Upload every array argument again (a previous configuration may have changed it)."""
        for h, d in zip(self.host, self.device):
            if isinstance(h, np.ndarray):
                d.write(h)

    def poison(self, indices: Sequence[int]) -> None:
        for i in indices:
            self.device[i].fill(_poison_for(self.host[i].dtype))

    def fetch(self, i: int) -> np.ndarray:
        out = np.empty_like(self.host[i])
        self.device[i].read(out)
        return out


def check_outputs(bound: _Bound, verification: Verification) -> tuple[bool, str]:
    """Compare each checked argument with its expected array; NaN never passes."""
    assert verification.answer is not None
    for i, want in enumerate(verification.answer):
        if want is None:
            continue
        got = bound.fetch(i)
        want = np.asarray(want)
        if want.shape != got.shape and want.size == got.size:
            want = want.reshape(got.shape)
        if want.shape != got.shape:
            return False, f"argument {i}: expected shape {want.shape}, kernel argument has {got.shape}"
        if want.dtype != got.dtype:
            return False, f"argument {i}: expected dtype {want.dtype}, kernel argument has {got.dtype}"
        if got.dtype.kind in "fc":
            bad = ~np.isclose(got, want, rtol=verification.rtol, atol=verification.atol, equal_nan=False)
        else:
            bad = got != want
        if bad.any():
            idx = np.flatnonzero(bad.ravel())
            first = int(idx[0])
            return False, (f"argument {i}: {idx.size} of {got.size} elements differ; first at flat "
                           f"index {first}: got {got.ravel()[first]!r}, want {want.ravel()[first]!r}")
    return True, ""


def _device_limit_problem(ctx: Any, local: list[int] | None) -> str:
    if local is None:
        return ""
    info = ctx.info
    for d, (l, m) in enumerate(zip(local, info.max_work_item_sizes)):
        if l > m:
            return f"local size {l} in dimension {d} over the device's {m}"
    if math.prod(local) > info.max_work_group_size:
        return f"work-group of {math.prod(local)} over the device's {info.max_work_group_size}"
    return ""


def _kernel_limit_problem(kernel: Kernel, local: list[int] | None) -> str:
    lim = kernel.limits()
    if local is not None and math.prod(local) > lim.work_group_size:
        return f"work-group of {math.prod(local)} over this kernel's {lim.work_group_size}"
    if lim.local_mem_bytes > kernel.context.info.local_mem_bytes:
        return f"local memory {lim.local_mem_bytes} B over the device's {kernel.context.info.local_mem_bytes} B"
    return ""


def configurations(params: Mapping[str, Sequence[Any]],
                   restrictions: Sequence[Callable[[Config], bool]] = ()) -> list[tuple[Config, bool]]:
    """The cartesian product of ``params`` in order, each with whether the restrictions allow it."""
    names = list(params)
    for n in names:
        if isinstance(params[n], (str, bytes)) or not isinstance(params[n], Sequence) or not params[n]:
            raise _core.InvalidArgumentError(f"tunable parameter {n!r} needs a non-empty list of values")
    out = []
    for values in itertools.product(*(params[n] for n in names)):
        config = dict(zip(names, values))
        out.append((config, all(r(config) for r in restrictions)))
    return out


def config_key(config: Config) -> str:
    return ",".join(f"{k}={config[k]!r}" for k in sorted(config))


def _source_hash(spec: KernelSpec) -> str:
    return hashlib.sha256(spec.source.encode()).hexdigest()[:16]


def _check_resume(path: Path, meta: dict[str, Any]) -> set[str]:
    previous = Results.load(path)
    for key in ("kernel", "source_sha256", "problem_size"):
        if previous.meta.get(key) != meta.get(key):
            raise ValueError(f"{path} holds results of another {key.replace('_', ' ')} "
                             f"({previous.meta.get(key)!r}, now {meta.get(key)!r}); "
                             "use another file or resume=False")
    old_dev = previous.meta.get("device", {})
    for key in ("name", "driver_version", "platform_name"):
        if old_dev.get(key) != meta["device"].get(key):
            raise ValueError(f"{path} was measured on another device ({old_dev.get('name')!r}, "
                             f"{old_dev.get('driver_version')!r}); use another file or resume=False")
    return {r["config"] for r in previous.rows if "config" in r}


def tune(
    source: str | os.PathLike[str],
    kernel_name: str,
    problem_size: int | Sequence[int],
    args: Sequence[Any],
    params: Mapping[str, Sequence[Any]],
    *,
    ctx: Any = None,
    restrictions: Sequence[Callable[[Config], bool]] = (),
    options: str = "",
    global_size: Callable[[Config], Sequence[int]] | None = None,
    answer: Sequence[Any] | None = None,
    reference: Callable[..., Sequence[Any]] | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    metrics: Mapping[str, Callable[[Config, float], float]] | None = None,
    warmup: int = 3,
    min_time: float = 0.05,
    min_repeats: int = 7,
    max_repeats: int = 1000,
    reset_outputs: bool = False,
    poison: bool | Sequence[int] = True,
    pinned: bool = False,
    out: str | os.PathLike[str] | None = None,
    resume: bool = True,
    progress: bool | None = None,
) -> Results:
    """Build, verify and time ``kernel_name`` for every configuration of ``params``.

    * ``params``: name -> values; each becomes ``-D name=value``. ``block_size_x/y/z`` also set
      the work-group size; the global size is ``problem_size`` rounded up to it (or
      ``global_size(config)``).
    * ``args``: NumPy arrays (copied to device buffers, pinned if ``pinned``), NumPy scalars,
      Python numbers (typed from the kernel's declaration) or ``LocalMemory(nbytes)``.
    * ``answer`` (a list parallel to ``args``, None where unchecked) or ``reference(*args)``
      returning such a list: outputs are poisoned, the kernel runs once, results are compared.
    * ``poison``: which checked arguments are overwritten with NaN/garbage before the verified
      run: True (all checked ones), False, or a list of indices. Leave out arguments the kernel
      also reads (in/out arguments): their input must survive.
    * ``metrics``: name -> f(config, median seconds), e.g. GB/s from a bytes formula.
    * Every configuration ends with a status: ok, wrong result, build failed, launch failed,
      skipped (restriction or device limit) or invalid.
    * ``out``: JSON-lines file written as configurations finish; with ``resume``, an existing
      file of the same kernel and device is continued, running only the missing configurations.
    """
    from .context import Context

    ctx = Context() if ctx is None else ctx
    size = _problem_size(problem_size)
    spec = KernelSpec(_load_source(source), kernel_name, size, list(args), options, global_size, pinned)
    if answer is not None and reference is not None:
        raise TypeError("give answer= or reference=, not both")
    if reference is not None:
        answer = list(reference(*[np.copy(a) if isinstance(a, np.ndarray) else a for a in spec.args]))
    if answer is not None and len(answer) != len(spec.args):
        raise _core.InvalidArgumentError(f"answer has {len(answer)} entries for {len(spec.args)} arguments")
    verification = Verification(list(answer) if answer is not None else None, rtol, atol)
    metrics = dict(metrics or {})
    configs = configurations(params, restrictions)

    meta = base_meta(ctx, experiment=f"tune:{kernel_name}", kernel=kernel_name,
                     source_sha256=_source_hash(spec), problem_size=list(size),
                     params={k: list(v) for k, v in params.items()}, options=options,
                     method="events", warmup=warmup, min_time_s=min_time, verified=answer is not None,
                     metrics=list(metrics), x=None)
    done: set[str] = set()
    append = False
    if out is not None and resume and Path(out).is_file():
        done = _check_resume(Path(out), meta)
        append = True
    bound = _Bound(ctx, spec)
    checked = [i for i, a in enumerate(verification.answer or []) if a is not None]
    poisoned = checked if poison is True else [] if poison is False else [int(i) for i in poison]

    def measure(point: Config) -> dict[str, Any]:
        config = {k: v for k, v in point.items() if k != "config"}
        row: dict[str, Any] = {}
        if point["config"] in restricted:
            return {"status": SKIPPED, "error": "excluded by a restriction"}
        g, local = spec.ndrange(config)
        row.update(global_size=str(tuple(g)), local_size=str(tuple(local)) if local else "auto")
        problem = _device_limit_problem(ctx, local)
        if problem:
            return {**row, "status": SKIPPED, "error": f"device limit: {problem}"}
        try:
            program = ctx.program(spec.source, defines=config, options=spec.options)
        except _core.BuildError as exc:
            return {**row, "status": BUILD_FAILED, "error": f"{exc.name}: {exc.log[:4000]}"}
        kernel = program.kernel(spec.name)
        problem = _kernel_limit_problem(kernel, local)
        if problem:
            return {**row, "status": SKIPPED, "error": f"device limit: {problem}"}
        bound.reset()
        kernel.set_args(*bound.device)
        passed, detail = True, ""
        if checked:
            bound.poison(poisoned)
            kernel.run(g, local)
            passed, detail = check_outputs(bound, verification)
        reset = bound.reset if reset_outputs else None
        times = time_adaptively(kernel, g, local, warmup=warmup, min_time_s=min_time,
                                min_repeats=min_repeats, max_repeats=max_repeats, reset=reset)
        stats = summarize(times)
        seconds = stats["median_ns"] * 1e-9
        row.update(stats, time_ms=stats["median_ns"] * 1e-6, verified=bool(checked) and passed,
                   status=OK if passed else WRONG, error=detail)
        for name, f in metrics.items():
            row[name] = float(f(config, seconds))
        return row

    restricted = {config_key(c) for c, allowed in configs if not allowed}
    points = [{**c, "config": config_key(c)} for c, _ in configs if config_key(c) not in done]
    results = run_points(points, _guarded(measure), meta=meta, out=out, progress=progress,
                         append=append)
    if append:
        previous = Results.load(out)  # type: ignore[arg-type]
        results = Results(previous.meta, previous.rows)
    return results


def _guarded(measure: Callable[[Config], dict[str, Any]]) -> Callable[[Config], dict[str, Any]]:
    """Turn exceptions of one configuration into its status, keeping the sweep going."""

    def wrapped(point: Config) -> dict[str, Any]:
        try:
            row = measure(point)
        except (_core.PyclperfError, ValueError, TypeError) as exc:
            row = {"status": classify(exc) if not isinstance(exc, TypeError) else INVALID,
                   "error": str(exc)}
        return row

    return wrapped


def run_kernel(
    source: str | os.PathLike[str],
    kernel_name: str,
    problem_size: int | Sequence[int],
    args: Sequence[Any],
    params: Mapping[str, Any] | None = None,
    *,
    ctx: Any = None,
    options: str = "",
    global_size: Callable[[Config], Sequence[int]] | None = None,
) -> list[Any]:
    """Build and run one configuration once; return the arguments with arrays read back."""
    from .context import Context

    ctx = Context() if ctx is None else ctx
    size = _problem_size(problem_size)
    spec = KernelSpec(_load_source(source), kernel_name, size, list(args), options, global_size)
    config = dict(params or {})
    bound = _Bound(ctx, spec)
    kernel = ctx.program(spec.source, defines=config, options=options).kernel(kernel_name)
    kernel.set_args(*bound.device)
    g, local = spec.ndrange(config)
    kernel.run(g, local)
    return [bound.fetch(i) if isinstance(a, np.ndarray) else a for i, a in enumerate(spec.args)]


__all__ = ["LocalMemory", "check_outputs", "configurations", "run_kernel", "time_adaptively", "tune"]
