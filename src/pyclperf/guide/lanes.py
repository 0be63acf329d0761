"""The guide's lanes: several experiments at once on one GPU, each measuring in its turn.

On a GPU most of an experiment's seconds are host work (inputs drawn, NumPy references
computed and compared) while its kernels run for well under a second. Lanes run experiments in
separate worker processes at the same time; device/turns.py lets one lane at a time have
work on the device, so no measurement overlaps another's, while the others' host work runs on
the host's other cores.

Where the device is the host itself (a CPU device), or where every point is timed by the host's
clock (``--method host``), the host's work is the measurement's noise: one lane, as before.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Callable, Sequence

from ..measure.parallel import cores as host_cores

# Lanes on a GPU host: one per two cores, at most six. More lanes keep the device's turn
# taken while the others compute on the host; past six they only add processes (each holds an
# interpreter and a context). On the H200's 16-core host (2026-11-27) the quick guide took
# 28.8 s in six lanes and 32.1 s in four, the turn held 23.7 and 23.4 s of it.
MAX_LANES = 6
CORES_PER_LANE = 2


def most_lanes(method: str = "auto", cpus: int | None = None) -> int:
    """The lanes the host allows before the device is known: ``lanes_for`` gives these or one.
    The guide starts that many workers while it looks the device up (a second on a GPU host)."""
    if method == "host":
        return 1
    return max(1, min(MAX_LANES, (cpus if cpus is not None else host_cores()) // CORES_PER_LANE))


def lanes_for(device: str | None, method: str = "auto", cpus: int | None = None) -> tuple[int, str]:
    """How many lanes suit ``device``, and why (for the page and the log)."""
    if method == "host":
        return 1, "one lane: the host's clock times every point, and other lanes' host work would move it"
    try:
        from ..device.devices import select_device

        info = select_device(device)
    except Exception as exc:  # noqa: BLE001 - the run itself will say what is wrong with it
        return 1, f"one lane: the device could not be looked up here ({type(exc).__name__})"
    if "GPU" not in str(info.type) and "ACCELERATOR" not in str(info.type):
        return 1, "one lane: a CPU device runs on the host's cores, which other lanes' work would take"
    from ..device.clocks import remembered

    clock = remembered(info)
    if method == "auto" and clock is not None and not clock.usable:
        # auto then times by the host's clock, which other lanes' host work moves (on the H200 a
        # clock judged under load made the quick guide's banks and texture verdicts change).
        return 1, ("one lane: the device's event clock failed its check, so the host's clock "
                   "times every point, and other lanes' host work would move it")
    cores = cpus if cpus is not None else host_cores()
    lanes = most_lanes(cpus=cores)
    return lanes, (f"{lanes} lanes on {cores} host cores, taking turns at the device" if lanes > 1
                   else f"one lane: {cores} host cores")


def start_order(ids: Sequence[str]) -> list[int]:
    """The order in which lanes start ``ids`` (indices into it): the experiments whose class
    says ``host_bound`` first, then the rest, each in the order given. Started last in the
    catalogue's order, the experiments with seconds of host work each can end a run in lanes
    alone while the device stands idle: on the H200 (2026-11-27), once transfers went through
    pinned memory, a quick run held the device's turn 17.9 s of its 27.1 s, and math and
    intops, 24th and 25th of 34, took 8 s each with 0.3 s of it in the turn. (While the turn
    was the bound, 23-24 s of a 30 s run, the order changed nothing.) An id the catalogue does
    not know keeps its place."""
    from ..experiments import get

    def bound(name: str) -> bool:
        try:
            return bool(getattr(get(name), "host_bound", False))
        except Exception:  # noqa: BLE001 - not an experiment id: the caller's own work
            return False

    first = [i for i, name in enumerate(ids) if bound(name)]
    return first + [i for i in range(len(ids)) if i not in set(first)]


def run_in_lanes(ids: Sequence[str], lanes: int, start_one: Callable[[str, float], Any],
                 left: Callable[[], float], done: Callable[[Any], None],
                 not_run: Callable[[str], Any], stop: Callable[[], None]) -> tuple[list[Any], bool]:
    """Run ``start_one(name, seconds_allowed)`` for every id, ``lanes`` at a time, started in
    ``start_order``; ``done(outcome)`` on the calling thread as each ends. An id that
    finds less than a second of ``left()`` when its lane is free gets ``not_run(name)``.

    Returns the outcomes in ``ids``' order and whether Ctrl-C stopped the run: then ``stop()``
    has stopped every worker, nothing more is started, and the experiments that had not ended
    are None (those stopped mid-way lose their outcome, not the rows they had written)."""
    outcomes: list[Any] = [None] * len(ids)
    stopping = threading.Event()

    def one(i: int) -> Any:
        if stopping.is_set():
            return None
        allowed = left()
        return not_run(ids[i]) if allowed < 1 else start_one(ids[i], allowed)

    pool = ThreadPoolExecutor(max_workers=lanes, thread_name_prefix="pyclperf-lane")
    running: dict[Future[Any], int] = {}
    try:
        for i in start_order(ids):  # inside the try: Ctrl-C may come while the lanes start
            running[pool.submit(one, i)] = i
        while running:
            finished, _ = wait(list(running), timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in finished:
                i = running.pop(fut)
                outcomes[i] = fut.result()
                done(outcomes[i])
    except KeyboardInterrupt:
        stopping.set()
        for fut in running:
            fut.cancel()
        stop()  # the lanes' calls return as their workers die (finally: waits for them)
        return outcomes, True
    finally:
        pool.shutdown(wait=True)
    return outcomes, False


def turns_summary(turns: Sequence[dict[str, Any]], wall_s: float, longest: int = 8) -> str:
    """One line: how long the device's turn was held in all, against the run's wall time, and
    the experiments that held it longest (what bounds a run in lanes)."""
    total = sum(t["held_s"] for t in turns)
    top = sorted(turns, key=lambda t: -t["held_s"])[:longest]
    return (f"the device's turn was held {total:.1f} s of the run's {wall_s:.1f} s; longest: "
            + ", ".join(f"{t['label']} {t['held_s']:.1f} s" for t in top))


__all__: Sequence[str] = ["MAX_LANES", "lanes_for", "most_lanes", "run_in_lanes", "start_order",
                           "turns_summary"]
