"""The worker side of distributed tuning: what runs inside a Dask worker process.

This module imports no Dask (the client imports it too, and so can a worker's preload). Each
worker process serves one OpenCL device, named by $PYCLPERF_DEVICE (set by the user on the
``dask worker`` command line, or by pyclperf's own LocalCluster through a worker plugin). A
worker keeps its Context and the Jobs built on it for the life of the process, so a sweep's
configurations rebuild neither: each Job is rebuilt from its picklable description once per
worker and found again by its job id.

As a preload (``dask worker ... --preload pyclperf.tuner.remote``) it opens the device when
the worker starts, so a wrong $PYCLPERF_DEVICE fails there instead of in the first task.
"""

from __future__ import annotations

import os
import socket
import time
from collections import OrderedDict
from dataclasses import dataclass, fields
from typing import Any

from ..device.devices import ENV_VAR, device_summary, select_device
from ..measure.results import INVALID
from .measure import Job, measure
from .space import Config

# Jobs kept per worker: each holds device buffers, so only the few most recent sweeps stay.
KEEP_JOBS = 4
# Job descriptions kept per worker after their sweeps, in host memory only: a later sweep of
# the same job (same fingerprint) then ships nothing. Few, since each holds the job's arrays.
KEEP_SPECS = 4

_contexts: dict[str, Any] = {}
_jobs: "OrderedDict[str, Job]" = OrderedDict()
# Job descriptions delivered to this worker (by a worker plugin, so a restarted worker gets
# them too), by job id: a fingerprint of the description, so equal jobs share one.
_specs: "OrderedDict[str, JobSpec]" = OrderedDict()


class JobMissing(LookupError):
    """A task found no description of its job here: the client sent none, since every worker
    held it when the sweep began, and this worker was (re)started since. The client ships it
    then and runs the task again."""


@dataclass
class JobSpec:
    """A Job without its Context: what is shipped to the workers (pickled by Dask, with
    cloudpickle for the user's callables) and turned back into a Job there."""

    job_id: str
    fields: dict[str, Any]

    @classmethod
    def of(cls, job: Job, job_id: str) -> "JobSpec":
        return cls(job_id, {f.name: getattr(job, f.name) for f in fields(Job) if f.name != "ctx"})


def _spec() -> str:
    return os.environ.get(ENV_VAR, "")


def context() -> Any:
    """This process's Context on its device (one per device spec, opened on first use)."""
    from ..device.context import Context

    spec = _spec()
    if spec not in _contexts:
        _contexts[spec] = Context(spec or None)
    return _contexts[spec]


def label(info: Any) -> str:
    """Names one physical device across a fleet: host, platform:device index, name."""
    return f"{socket.gethostname()}/{info.platform_index}:{info.device_index} {info.name}"


def describe() -> dict[str, Any]:
    """This worker's device (without opening a context: cheap, and safe from any thread)."""
    info = select_device(_spec() or None)
    return {"label": label(info), "summary": device_summary(info), "pid": os.getpid()}


def job_for(spec: JobSpec) -> Job:
    job = _jobs.get(spec.job_id)
    if job is None:
        while len(_jobs) >= KEEP_JOBS:
            _, old = _jobs.popitem(last=False)
            old.arguments.release()
        job = Job(context(), **spec.fields)
        _jobs[spec.job_id] = job
    _jobs.move_to_end(spec.job_id)
    return job


def install(spec: JobSpec) -> None:
    _specs[spec.job_id] = spec
    _specs.move_to_end(spec.job_id)
    while len(_specs) > KEEP_SPECS:
        old, _ = _specs.popitem(last=False)
        forget(old)


def holds(job_id: str) -> bool:
    """Whether this worker has the job's description (the client then need not ship it)."""
    if job_id in _specs:
        _specs.move_to_end(job_id)
        return True
    return False


def forget(job_id: str) -> None:
    """The end of a sweep: its device buffers are freed; the description stays (see KEEP_SPECS)."""
    job = _jobs.pop(job_id, None)
    if job is not None:
        job.arguments.release()


def run_chunk(job_id: str, configs: list[Config]) -> dict[str, Any]:
    """Several configurations' measured rows, in order, each tagged with the device that
    produced it, and how long they took here (the client sizes later chunks by it). One task
    per chunk, not per configuration: Dask's own cost per task is several milliseconds, more
    than a trivial configuration's whole run."""
    t0 = time.perf_counter()
    spec = _specs.get(job_id)
    if spec is None:
        raise JobMissing(job_id)
    job = job_for(spec)
    device = label(job.ctx.info)
    rows = []
    for config in configs:
        try:
            row = measure(job, config)
        except Exception as exc:  # noqa: BLE001 - one configuration's failure is its own row
            row = {"status": INVALID, "verified": False,
                   "error": f"the worker could not run it: {type(exc).__name__}: {exc}"}
        row["device"] = device
        rows.append(row)
    return {"rows": rows, "seconds": time.perf_counter() - t0}


def dask_setup(worker: Any = None) -> None:
    """Dask preload hook: open this worker's device now, so a bad spec stops the worker."""
    context()
