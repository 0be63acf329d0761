"""A tune() worker interrupted while it owes a reply is never handed the next request.

Ctrl-C can land while the caller waits for the worker to open its device or to load a job. The
worker then still sends that reply; a later request on the same pipe would read it as its own
answer, and every answer after it would be one behind. Such a worker is killed on checkin and
passed over on checkout, and the next call gets a fresh one that answers in step.
"""

from __future__ import annotations

import signal

import pytest

from pyclperf.tuner import supervisor
from pyclperf.tuner.worker_process import Worker


@pytest.fixture
def spec(ctx) -> str:
    return supervisor.device_spec(ctx)


def _interrupted_open(spec: str) -> Worker:
    """A worker whose wait for its "ready" is cut by a KeyboardInterrupt, as Ctrl-C would."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    worker = Worker(spec)
    signal.setitimer(signal.ITIMER_REAL, 0.02)  # well before an interpreter and a device start
    try:
        with pytest.raises(KeyboardInterrupt):
            worker.summary  # noqa: B018 - waits for the "ready" reply
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return worker


def test_a_worker_interrupted_mid_reply_is_killed_on_checkin_not_pooled(spec):
    worker = _interrupted_open(spec)
    assert worker.awaiting and not worker.usable()
    supervisor.checkin(supervisor.Supervisor(spec, worker))
    assert not worker.alive()
    assert worker not in supervisor._idle.get((spec, None), [])


def test_the_next_call_gets_a_worker_that_answers_in_step(spec, ctx):
    stale = _interrupted_open(spec)
    with supervisor._lock:  # as if it had reached the pool before the rule existed
        supervisor._idle.setdefault((spec, None), []).append(stale)
    sup = supervisor.checkout(spec)
    try:
        assert sup.worker is not stale and not stale.alive()
        assert sup.summary()["name"] == ctx.info.name
    finally:
        sup.close()
        supervisor.checkin(sup)
    stale.kill()


def test_a_worker_that_answered_is_reused(spec):
    sup = supervisor.checkout(spec)
    first = sup._ready()
    sup.summary()
    assert first.usable()
    sup.close()
    supervisor.checkin(sup)
    again = supervisor.checkout(spec)
    try:
        assert again.worker is first
    finally:
        again.close()
        supervisor.checkin(again)
