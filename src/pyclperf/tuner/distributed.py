"""tune() over many devices and machines, on Dask distributed (``pip install "pyclperf[distributed]"``).

Only this module imports Dask, and tune() imports it only when asked for devices, a client or
isolation. Dask does the scheduling, the shipping of the job (cloudpickle for the user's
callables), rescheduling when a worker is lost and restarting dead workers; pyclperf keeps the
ask/tell loop and stays the only writer of the results file, so resume works as for one device.

Each worker serves one OpenCL device and advertises the resource ``pyclperf=1``; tasks ask for
it, so other work on a shared cluster never lands on a pyclperf worker and vice versa. On a GPU
host, one worker per device::

    dask scheduler --port 8786                                     # anywhere reachable
    PYCLPERF_DEVICE=0:0 dask worker tcp://SCHEDULER:8786 --nthreads 1 --resources pyclperf=1 \\
        --preload pyclperf.tuner.remote
    PYCLPERF_DEVICE=0:1 dask worker ...                            # the next device, and so on

Tasks carry chunks of configurations (see ChunkSizer: Dask's cost per task is more than a
trivial configuration's run), and a chunk's rows are written as it completes. The job itself
reaches each worker once, by a worker plugin, so a task carries only configurations.

A configuration whose worker dies (a segfault, an abort, a driver reset, a lost host) is run
once more, alone on the cluster; if a worker dies under it again, its row is ``crashed``. When
the worker of a chunk of several dies, the chunk's configurations run again one per task, so
that the one to blame is found as above and the others are neither lost nor run twice.
pyclperf counts deaths itself, from Dask's KilledWorker; its own clusters set the scheduler's
``distributed.scheduler.allowed-failures`` to 0 so a death is reported at once, and a
scheduler you start yourself should too (``DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=0``),
otherwise Dask itself retries each attempt that setting's number of times first.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import time
import uuid
from types import SimpleNamespace
from typing import Any, Callable, Sequence

import dask
from distributed import Client, KilledWorker, LocalCluster, as_completed
from distributed.diagnostics.plugin import WorkerPlugin

from ..device.devices import ENV_VAR, list_devices, select_device
from ..measure.results import CRASHED, INVALID
from . import ceiling, remote
from .measure import Job
from .space import Config, config_key

RESOURCE = "pyclperf"
# Strategies that never learn from a result may run ahead of the results by this many
# configurations per worker; a model-based one gets one per worker, so it learns as it goes.
AHEAD_PER_WORKER = 2
UNINFORMED = ("brute_force", "random_sample")
# A task's configurations: the first ones this many, later ones about this many seconds of work.
FIRST_CHUNK = 1
CHUNK_S = 0.3
# How long to wait for a first pyclperf worker to join before saying none is there.
WAIT_FOR_WORKERS_S = 30.0


class DevicePin(WorkerPlugin):
    """Pins each worker of a cluster pyclperf started to its device, by worker name, and sets
    its memory ceiling (ceiling.py); Dask runs it again on a worker that was restarted after a
    crash."""

    name = "pyclperf-device-pin"

    def __init__(self, assign: dict[str, str], memory_limit: int | None = None) -> None:
        self.assign = assign
        self.memory_limit = memory_limit

    def setup(self, worker: Any) -> None:
        spec = self.assign.get(str(worker.name))
        if spec is not None:
            os.environ[ENV_VAR] = spec
        ceiling.apply(self.memory_limit)


def device_specs(devices: Any) -> list[str]:
    """"all" (every GPU here, else every device), one spec, or a list of specs (a spec twice
    puts two workers on that device) as "platform:device" strings."""
    if isinstance(devices, str) and devices == "all":
        found = list_devices()
        gpus = [d for d in found if "GPU" in d.type]
        chosen = gpus or found
    elif isinstance(devices, (str, int)) or devices is None:
        chosen = [select_device(devices)]
    else:
        chosen = [select_device(d) for d in devices]
    if not chosen:
        raise ValueError("devices= matched no OpenCL device on this host")
    return [f"{d.platform_index}:{d.device_index}" for d in chosen]


class JobShipper(WorkerPlugin):
    """Delivers a job's description to every worker, including ones that join or are restarted
    later (the scheduler keeps plugins and hands them to each new worker), and frees its device
    buffers after. Without a description (``spec`` None: every worker held it already) it only
    frees: a restarted worker then asks for it (remote.JobMissing)."""

    def __init__(self, job_id: str, spec: remote.JobSpec | None) -> None:
        self.job_id = job_id
        self.spec = spec
        self.name = f"pyclperf-job-{job_id}"

    def setup(self, worker: Any) -> None:
        if self.spec is not None:
            remote.install(self.spec)

    def teardown(self, worker: Any) -> None:
        remote.forget(self.job_id)


def fingerprint(fields: dict[str, Any]) -> str:
    """A job's id: a hash of its pickled description, arrays included, so a sweep of a job
    the workers already hold ships nothing (a job of large arrays took seconds to ship to two
    workers here). Equal bytes only; a job that pickles differently merely ships again."""
    import cloudpickle  # Dask's own dependency

    buffers: list[Any] = []
    digest = hashlib.sha256(cloudpickle.dumps(fields, protocol=5, buffer_callback=buffers.append))
    for buffer in buffers:  # the arrays' memory, hashed in place rather than copied
        digest.update(buffer.raw())
    return digest.hexdigest()[:32]


class FleetView:
    """What tune() reads from a Context for its metadata and fingerprint, for a set of
    workers: identical devices read as that one device, so a results file resumes across a
    one-device and a many-device run of the same hardware."""

    def __init__(self, described: Sequence[dict[str, Any]]) -> None:
        first = described[0]["summary"]
        kinds = sorted({(d["summary"]["name"], d["summary"]["platform_name"],
                         d["summary"]["driver_version"]) for d in described})
        self.info = SimpleNamespace(name=" + ".join(k[0] for k in kinds),
                                    platform_name=" + ".join(sorted({k[1] for k in kinds})),
                                    driver_version=" + ".join(sorted({k[2] for k in kinds})))
        self._summary = dict(first)
        self.labels = sorted({d["label"] for d in described})

    def summary(self) -> dict[str, Any]:
        return dict(self._summary)


class ChunkSizer:
    """How many configurations the next task carries. Dask costs several milliseconds per task
    (more than a trivial configuration takes), so tasks carry chunks: small at first, so the
    first rows stream soon and every worker has work at once, then growing (at most fourfold a
    step) toward CHUNK_S seconds of work as measured by the workers, and never more than a
    quarter of what is left per worker (down to a tenth of CHUNK_S of work), so the last chunks
    are small and no worker idles long at the end. A model-based strategy gets one
    configuration per task: it learns from each row before choosing the next."""

    def __init__(self, workers: int, total: int | None, informed: bool) -> None:
        self.workers = workers
        self.remaining = total
        self.informed = informed
        self.size = FIRST_CHUNK
        self.per_config_s: float | None = None

    def next_size(self) -> int:
        if self.informed:
            return 1
        size = self.size
        if self.per_config_s is not None:
            size = min(4 * self.size, max(1, int(CHUNK_S / max(self.per_config_s, 1e-6))))
        if self.remaining is not None:
            # A chunk worth a tenth of the target costs more in Dask than any imbalance it
            # could cause, so the tail shrinks no further than that.
            floor = 1 if self.per_config_s is None else int(0.1 * CHUNK_S / self.per_config_s)
            size = min(size, max(1, floor, self.remaining // (4 * self.workers)),
                       max(1, self.remaining))
        return max(1, size)

    def sent(self, n: int) -> None:
        self.size = max(self.size, n)
        if self.remaining is not None:
            self.remaining = max(0, self.remaining - n)

    def done(self, n: int, seconds: float) -> None:
        each = seconds / max(n, 1)
        # Half the latest chunk, half the past: follows a job whose configurations slow down
        # as it goes, without jumping at one slow chunk.
        self.per_config_s = each if self.per_config_s is None else 0.5 * (self.per_config_s + each)


class Fleet:
    """A Dask client plus the pyclperf workers it drives (and the cluster, when started here)."""

    def __init__(self, client: Any, cluster: Any = None) -> None:
        self.client = client
        self.cluster = cluster
        self.workers = self._pyclperf_workers(WAIT_FOR_WORKERS_S)
        if not self.workers:
            self.close()
            raise ValueError(
                f"no worker of this Dask cluster offers the resource '{RESOURCE}': start one per "
                f"device with PYCLPERF_DEVICE=P:D dask worker SCHEDULER --nthreads 1 "
                f"--resources {RESOURCE}=1")
        described = client.run(remote.describe, workers=self.workers)
        self.device_of = {addr: d["label"] for addr, d in described.items()}
        self.view = FleetView(list(described.values()))

    def _pyclperf_workers(self, timeout: float) -> list[str]:
        """Addresses of the workers offering the resource; waits a while for the first, since a
        cluster may still be starting, or restarting a worker that crashed."""
        deadline = time.monotonic() + timeout
        while True:
            info = self.client.scheduler_info()["workers"]
            found = [a for a, w in info.items() if w.get("resources", {}).get(RESOURCE)]
            if found or time.monotonic() >= deadline:
                return found
            time.sleep(0.2)

    @classmethod
    def open(cls, devices: Any = None, client: Any = None,
             memory_limit: int | None = None) -> "Fleet":
        if client is not None:  # a cluster of the caller's: its workers' limits are theirs
            return cls(client)
        return cls.local(device_specs(devices), memory_limit)

    @classmethod
    def local(cls, specs: Sequence[str], memory_limit: int | None = None) -> "Fleet":
        """A LocalCluster on this host: one single-threaded worker process per device spec,
        each holding at most ``memory_limit`` bytes (by default, an equal share of the default
        ceiling: ceiling.py)."""
        share = memory_limit if memory_limit is not None else ceiling.resolve(None)
        if memory_limit is None and share is not None:
            share = max(ceiling.FLOOR, share // len(specs))
        with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
            cluster = LocalCluster(n_workers=len(specs), processes=True, threads_per_worker=1,
                                   resources={RESOURCE: 1}, host="127.0.0.1",
                                   dashboard_address=None, silence_logs=logging.CRITICAL,
                                   # No dashboard, and its HTTP port taken at random: a busy
                                   # 8787 (another cluster on this host) is no reason to fail.
                                   scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"})
        client = Client(cluster)
        try:
            client.register_plugin(DevicePin({str(i): s for i, s in enumerate(specs)}, share))
            return cls(client, cluster)
        except BaseException:
            client.close()
            cluster.close()
            raise

    def close(self) -> None:
        if self.cluster is not None:  # only what this Fleet started; a user's client stays open
            self.client.close()
            self.cluster.close()
            self.cluster = None

    def sweep(self, job: Job, search: Any, strategy: str, done: set[str],
              finish: Callable[[Config, dict[str, Any]], None],
              total: int | None = None,
              batch: Callable[[], Any] = contextlib.nullcontext) -> dict[str, Any]:
        """Ask, submit in chunks, and hand each row to ``finish`` as its chunk completes (in
        this process, a chunk's rows inside one ``batch()`` context); returns counts of what
        Dask was asked to do and the seconds the workers spent in the chunks that returned
        (what a benchmark sets against the wall time)."""
        spec = remote.JobSpec.of(job, "")
        spec.job_id = fingerprint(spec.fields)
        # The job travels once per worker, not with each task, and not at all to workers
        # that hold it from an earlier sweep.
        held = self.client.run(remote.holds, spec.job_id, on_error="return",
                               workers=self._pyclperf_workers(0))
        shipped = not held or not all(h is True for h in held.values())
        shipper = JobShipper(spec.job_id, spec if shipped else None)
        self.client.register_plugin(shipper)
        # A walk or a random sample learns nothing from a row: chunks of them may go at once.
        informed = getattr(search, "informed", strategy not in UNINFORMED)
        sizer = ChunkSizer(len(self.workers), total, informed)
        limit = max(1, (1 if informed else AHEAD_PER_WORKER) * len(self.workers))
        # future -> (configurations, workers that died under it: kept for a single one only)
        inflight: dict[Any, tuple[list[Config], list[str]]] = {}
        pending = as_completed()
        stats: dict[str, Any] = {"tasks": 0, "chunks_split": 0, "worker_s": 0.0,
                                 "shipped": shipped}

        def submit(configs: list[Config], killed: list[str]) -> None:
            future = self.client.submit(remote.run_chunk, spec.job_id, configs, pure=False,
                                        resources={RESOURCE: 1},
                                        key=f"pyclperf-{spec.job_id[:8]}-{uuid.uuid4().hex}")
            inflight[future] = (configs, killed)
            pending.add(future)
            stats["tasks"] += 1

        # Configurations whose worker died under them once, each run alone. Dask blames every
        # task the dying worker held, queued ones too, so each is run again alone (nothing else
        # in flight): a death then is the configuration's own doing.
        suspects: list[tuple[list[Config], list[str]]] = []
        # The configurations of a chunk whose worker died, one task each. A chunk's rows come
        # back only when it ends, so none of them came back; which one killed it (if any did:
        # the chunk may only have been queued there) is unknown. Run one per task, a killer
        # is then found like any single configuration (suspects, above), and the rest run
        # once each.
        singles: list[Config] = []
        # Configurations sent again after their worker had no job (remote.JobMissing): tasks
        # already queued when the job was shipped miss it too, so each may go once more; not
        # twice, lest a job that keeps going missing loop.
        resent: set[str] = set()

        def top_up() -> None:
            if suspects:
                if not inflight:
                    submit(*suspects.pop(0))
                return
            while len(inflight) < limit and singles:
                submit([singles.pop(0)], [])
            while len(inflight) < limit:
                chunk: list[Config] = []
                want = sizer.next_size()
                while len(chunk) < want and (config := search.ask()) is not None:
                    if config_key(config) not in done:
                        chunk.append(config)
                if not chunk:
                    return
                sizer.sent(len(chunk))
                submit(chunk, [])

        try:
            top_up()
            for future in pending:
                configs, killed = inflight.pop(future)
                if future.status == "finished":
                    out = future.result()
                    sizer.done(len(configs), out["seconds"])
                    stats["worker_s"] += out["seconds"]
                    with batch():  # one fsync of the results file for the whole chunk
                        for config, row in zip(configs, out["rows"]):
                            finish(config, dict(row))
                elif _job_missing(future) and not resent.intersection(map(config_key, configs)):
                    if shipper.spec is None:
                        shipper = JobShipper(spec.job_id, spec)  # replaces the one of that name
                        self.client.register_plugin(shipper)
                        stats["shipped"] = True
                    resent.update(map(config_key, configs))
                    if killed:  # a suspect: again alone, or a death would not be its own
                        suspects.insert(0, (configs, killed))
                    else:
                        submit(configs, killed)  # as it was: it never began
                elif len(configs) > 1:
                    singles.extend(configs)
                    stats["chunks_split"] += 1
                else:
                    row = self._row(future, killed)
                    if row is None:
                        suspects.append((configs, killed))
                    else:
                        finish(configs[0], row)
                top_up()
        except BaseException:  # Ctrl-C above all: nothing more runs, what finished is kept
            self.client.cancel(list(inflight))
            raise
        finally:
            try:  # frees the job on the workers; a client that lost its scheduler cannot
                self.client.unregister_worker_plugin(shipper.name)
            except Exception:  # noqa: BLE001 - cleanup must not hide why the sweep ended
                pass
        return stats

    def _row(self, future: Any, killed: list[str]) -> dict[str, Any] | None:
        """The row a single configuration's failed future stands for; None when it should run
        again."""
        exc = future.exception()
        if isinstance(exc, KilledWorker):
            # One death is not proof (see sweep's suspects); one more while it ran alone is.
            address = getattr(getattr(exc, "last_worker", None), "address", None) or "?"
            killed.append(address)
            if len(killed) < 2:
                return None
            devices = sorted({self.device_of.get(a, a) for a in killed})
            return {"status": CRASHED, "verified": False, "device": ", ".join(devices),
                    "error": f"its worker process died each of the {len(killed)} times it ran "
                             f"(workers {', '.join(killed)})"}
        return {"status": INVALID, "verified": False, "device": "?",
                "error": f"the worker could not run it: {type(exc).__name__}: {exc}"}


def _job_missing(future: Any) -> bool:
    return future.status == "error" and isinstance(future.exception(), remote.JobMissing)
