"""Host work that can wait until the device is busy.

A sweep measures its points one after the other, and between two points the device idles while
Python finishes the last point's row (its statistics, flags and file line): on an H200 that took
100-170 us a point against 10 us for a bare launch-and-time loop, 2-3 % of an offset sweep's
wall time. Work handed to ``when_device_busy`` is done instead by this thread's next
``Kernel.time`` with the event clock, between enqueueing its launches and waiting for them: the
device runs the next point while the host finishes the last one.

The work is kept per thread (a thread's Kernel.time never runs another thread's work), in the
order it was handed over. Whoever hands work over must ``do_waiting_work()`` before relying on it
being done (no Kernel.time may come): measure.sweep.run_points does, after every point and when
the sweep ends or is interrupted. Work must not raise; the sweep's own work keeps any exception
for the sweep to raise (see run_points).
"""

from __future__ import annotations

import threading
from typing import Callable


class _Waiting(threading.local):
    work: list[Callable[[], None]]

    def __init__(self) -> None:
        self.work = []


# This thread's waiting work: Kernel.time reads ``waiting.work`` itself (an attribute, not a
# call: it is asked on every timed call, a ~20 us affair).
waiting = _Waiting()


def when_device_busy(work: Callable[[], None]) -> None:
    """Do ``work`` while this thread's next timed launches run (or at do_waiting_work())."""
    waiting.work.append(work)


def do_waiting_work() -> None:
    """Do this thread's waiting work now, in the order it was handed over."""
    work = waiting.work
    while work:
        work.pop(0)()
