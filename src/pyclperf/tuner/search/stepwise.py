"""Searches written as sequential programs, behind ask()/tell().

Most optimisers are sequential programs: they propose a point, need its value, and decide the
next from it. ``Stepwise`` runs such a program written as a generator, which yields the id of
the configuration it wants measured and receives its objective (None where the configuration
failed); the engine's ask() and tell() step it one configuration at a time. ``driven`` turns an
optimiser that calls an objective function itself (SciPy's style) into such a generator by
running it on a thread that waits for each answer, so the optimiser is still stepped one
configuration at a time, deterministically, and stopped at once when the budget ends.

What the wrapper guarantees, whatever the program does: no configuration is handed out twice
nor one outside the allowed set; a program that ends before the budget does is started again
(its random generator moved on, as a restart), and one that keeps proposing only what is
known is cut short; where restarts bring nothing new, random unseen configurations fill the
rest. An engine that asks again before telling (several devices at once) gets a random unseen
configuration for the extra worker, whose result the program then finds known.
"""

from __future__ import annotations

import queue
import random
import threading
import weakref
from typing import Any, Callable, Generator, Sequence

import numpy as np

from ..searchspace import Space
from .base import Base, RandomOrder
from .encoding import Encoding

Program = Generator[int, "float | None", None]
# A program that proposes this many known or disallowed configurations in a row is stuck.
STUCK_AFTER = 2000
# Restarts in a row that bring no new configuration before random ones fill the rest.
FUTILE_RESTARTS = 3


class Stepwise(Base):
    """ask()/tell() over ``program(self, rng)``, a generator of configuration ids."""

    def __init__(self, configs: Space | Sequence[dict], program: Callable[[Stepwise, random.Random], Program],
                 *, seed: int | None = None, algorithm: str = "") -> None:
        super().__init__(configs)
        self.algorithm = algorithm or self.algorithm
        self.encoding = Encoding(self.space)
        self.rng = random.Random(seed)
        self._program_of = program
        self._gen: Program | None = None
        self._pending: int | None = None              # asked by the program, not yet told
        self._answer: float | None = None
        self._started = False
        self._fill = RandomOrder(self.space, random.Random(self.rng.getrandbits(64)))
        self._futile = 0
        self.restarts = 0
        self._closed = False

    # --- what programs use ---------------------------------------------------------------
    def known(self, i: int) -> bool:
        return i in self.results

    def value(self, i: int) -> float | None:
        return self.results.get(i)

    def random_unseen(self) -> int | None:
        return self._fill.next_unseen(self.seen)

    # --- ask / tell --------------------------------------------------------------------------
    def ask(self) -> dict | None:
        if self._closed or self._exhausted():
            return None
        if self._pending is not None:                 # asked again before the answer came
            return self._hand_out(self.random_unseen())
        while True:
            i = self._step()
            if i is None:
                return self._hand_out(self.random_unseen())
            if i in self.seen:
                continue                              # known since the program asked
            self._pending = i
            return self._hand_out(i)

    def _hand_out(self, i: int | None) -> dict | None:
        if i is None:
            return None
        self.seen.add(i)
        return self.space.config(i)

    def _step(self) -> int | None:
        """The program's next wish: an unseen allowed id, or None once restarts are futile."""
        stuck = 0
        while self._futile < FUTILE_RESTARTS:
            if self._gen is None:
                self._gen = self._program_of(self, random.Random(self.rng.getrandbits(64)))
                self._started = False
                self.restarts += 1
                self._futile += 1
            try:
                if not self._started:
                    self._started = True
                    i = next(self._gen)
                else:
                    answer, self._answer = self._answer, None
                    i = self._gen.send(answer)
            except StopIteration:
                self._gen = None
                continue
            if i is not None and i not in self.seen and self.space.allows_id(i, report=False):
                self._futile = 0
                return int(i)
            # known (answer from what was told), disallowed (a failure), or nothing
            self._answer = self.results.get(i) if i is not None and i in self.results else None
            stuck += 1
            if stuck >= STUCK_AFTER:
                self._stop_program()
        return None

    def _stop_program(self) -> None:
        if self._gen is not None:
            self._gen.close()
            self._gen = None

    def tell(self, config: dict, objective: float | None) -> None:
        super().tell(config, objective)
        i = self._index_of(config)
        if i == self._pending:
            self._pending = None
            self._answer = self.results[i]

    def close(self) -> None:
        self._closed = True
        self._stop_program()

    def __del__(self) -> None:                  # a strategy dropped unclosed ends its thread
        try:
            self._stop_program()
        except Exception:  # noqa: BLE001 - at interpreter exit anything may be gone
            pass


# --- optimisers that call the objective themselves ------------------------------------------
class _Stop(Exception):
    """Raised inside an optimiser's objective to end its run."""


_DONE = object()


def driven(run: Callable[[Stepwise, Callable[[np.ndarray], float], random.Random], Any]
           ) -> Callable[[Stepwise, random.Random], Program]:
    """A program for Stepwise from ``run(s, objective, rng)``, which calls an optimiser that calls
    ``objective(x)`` with points of the Encoding's box. The optimiser runs on a thread; each
    point it asks for that is new is yielded to the engine, and the thread waits for the
    answer. Known points are answered at once, disallowed or failed ones with the penalty."""

    def program(strong: Stepwise, rng: random.Random) -> Program:
        # The thread holds the strategy weakly: one dropped unclosed can then be collected,
        # and collecting this generator ends the thread (its finally below).
        s = weakref.proxy(strong)
        del strong
        wants: queue.Queue[Any] = queue.Queue(maxsize=1)
        answers: queue.Queue[Any] = queue.Queue(maxsize=1)
        idle = [0]

        def objective(x: np.ndarray) -> float:
            i = s.encoding.id_of(s.encoding.snap(x))
            if i is None or i in s.seen:
                idle[0] += 1
                if idle[0] > STUCK_AFTER:
                    raise _Stop()
                v = s.value(i) if i is not None else None
                return s.penalty() if v is None else v
            idle[0] = 0
            wants.put(i)
            v = answers.get()
            if v is _DONE:
                raise _Stop()
            return s.penalty() if v is None else float(v)

        def body() -> None:
            try:
                run(s, objective, rng)
            except (_Stop, ReferenceError):
                pass
            finally:
                wants.put(_DONE)

        thread = threading.Thread(target=body, name="pyclperf-search", daemon=True)
        thread.start()
        try:
            while True:
                i = wants.get()
                if i is _DONE:
                    return
                answers.put((yield i))
        finally:
            if thread.is_alive():
                # Closed while the optimiser waits for an answer (budget spent, Ctrl-C): end it.
                try:
                    answers.put_nowait(_DONE)
                except queue.Full:
                    pass
                while thread.is_alive():
                    try:
                        if wants.get(timeout=0.1) is _DONE:
                            break
                    except queue.Empty:
                        continue
                    try:
                        answers.put_nowait(_DONE)
                    except queue.Full:
                        pass
                thread.join(timeout=5)

    return program
