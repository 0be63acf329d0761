"""benchmarks/overhead.py's per-call comparison: the calls each side makes (pyclperf's
Kernel.time and Kernel.run of a tiny kernel, PyOpenCL's enqueue + wait + profile read of it), and
their figures measured in pairs: both sides' processes alive at once, their blocks of calls
alternating in time, one side working at any moment while the other waits on its pipe.

Run one after the other, two sides' per-call figures differ by the drift between the moments
they run (the GPU's clock state, the driver's threads) as much as by their code: on an H200 the
ratio of pyclperf's Kernel.time to PyOpenCL's loop moved 0.81-1.20 from round to round that way.
Here each side is a process (``serve``) that builds its calls, says it is ready, and then runs,
for each line the parent writes to its stdin, one block of calls and answers its microseconds
per call on a line; the parent (``paired_round``) asks the sides in turn, A B A B ..., so that
what drifts falls on both alike. Each side's figure is the median of its blocks, as before.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, TextIO

import numpy as np

CALLS = 1000       # calls per block
BLOCKS = 7         # blocks per figure and round: their median is the figure
WARM_CALLS = 500   # calls of each kind before the first block
WARM = "warm"      # the line that asks a side for its warm-up
TINY = "__kernel void tiny(__global float* x) { x[get_global_id(0)] = 1.0f; }"  # the calls' kernel
READY_TIMEOUT_S = 300.0   # a side's start: its imports, context and kernel build
BLOCK_TIMEOUT_S = 120.0   # one answer: a block, or the warm-up
JOBS = {"pyclperf": ("time", "run"), "pyopencl": ("time",)}  # each side's calls, as named below


def block(fn: Callable[[], Any], calls: int = CALLS) -> float:
    """Microseconds per call of ``fn`` over ``calls`` calls."""
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e6


def alone(fn: Callable[[], Any]) -> float:
    """The same figure in one process alone: the median of BLOCKS blocks, after the warm-up."""
    block(fn, WARM_CALLS)
    return float(np.median([block(fn) for _ in range(BLOCKS)]))


def pyclperf_calls(ctx: Any) -> dict[str, Any]:
    """The per-call figures' calls on pyclperf's side, on the tiny kernel."""
    k = ctx.program(TINY).kernel("tiny").set_args(ctx.buffer(4096))
    return {"time": lambda: k.time(256, 256, warmup=0, repeats=1), "run": lambda: k.run(256, 256)}


def pyopencl_queue() -> tuple[Any, Any, Any]:
    """PyOpenCL, a context on NVIDIA's platform where it is there, else the first (PoCL), and a
    profiling queue."""
    import pyopencl as cl

    platforms = cl.get_platforms()
    platform = next((p for p in platforms if "NVIDIA" in p.name or "nvidia" in p.vendor.lower()),
                    platforms[0])
    ctx = cl.Context(platform.get_devices())
    return cl, ctx, cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)


def pyopencl_calls(cl: Any, ctx: Any, q: Any) -> dict[str, Any]:
    """The reference call: the tiny kernel's enqueue, wait and profile read."""
    knl = cl.Program(ctx, TINY).build().tiny
    tiny_buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)
    knl.set_args(tiny_buf)

    def one() -> int:
        e = cl.enqueue_nd_range_kernel(q, knl, (256,), (256,))
        e.wait()
        return e.profile.end - e.profile.start

    one.buffer = tiny_buf  # kept alive with the call: set_args holds no reference
    return {"time": one}


def take_stdout() -> TextIO:
    """The answers' channel: the process's stdout, taken for them alone; whatever else writes to
    file descriptor 1 from now on (a driver, a compiler's warnings) goes to stderr instead, where
    it cannot be read as an answer."""
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return answers


def serve(calls: dict[str, Callable[[], Any]], answers: TextIO,
          note: dict[str, Any] | None = None) -> None:
    """A side's loop: say ready (a JSON line of ``note``), then per line read, ``warm`` (each
    call WARM_CALLS times) or a call's name (one block of it), answer microseconds per call on a
    line. Ends when its stdin closes; a name it does not know ends it with the error on stderr."""
    print(json.dumps(note or {}), file=answers, flush=True)
    for line in sys.stdin:  # a blocking read: waiting, the side does nothing
        name = line.strip()
        if name == WARM:
            us = sum(block(fn, WARM_CALLS) for fn in calls.values())
        elif name in calls:
            us = block(calls[name])
        else:
            raise SystemExit(f"unknown request {name!r}: this side runs {sorted(calls)}")
        print(repr(us), file=answers, flush=True)


class SideError(RuntimeError):
    """A side that exited, did not answer in time or answered nonsense: one line saying which."""


class Side:
    """One side's process, asked over its pipes. Its answers are read with a timeout (select on
    the pipe, no spinning), so that a side that dies or hangs gives an error, not a hang; its
    stderr goes to a file, read back for the error's last line."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.name, self.pending = name, b""
        self.errors = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.errors)

    def last_error_line(self) -> str:
        self.errors.seek(0)
        lines = [ln.strip() for ln in self.errors.read().decode(errors="replace").splitlines()]
        return next((ln for ln in reversed(lines) if ln), "no message")

    def ended(self) -> str:
        try:
            return f"exited with status {self.proc.wait(timeout=10)}"
        except subprocess.TimeoutExpired:
            return "closed its pipes"

    def fail(self, what: str) -> SideError:
        if self.proc.poll() is None:  # given up on: it is not waited for
            self.proc.kill()
            self.proc.wait()
        return SideError(f"{self.name}: {what}: {self.last_error_line()}"[:500])

    def read_line(self, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise self.fail(f"no answer within {timeout_s:g} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise self.fail(self.ended())
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return line.decode(errors="replace")

    def ask(self, request: str, timeout_s: float) -> float:
        try:
            self.proc.stdin.write(request.encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise self.fail(self.ended()) from None
        answer = self.read_line(timeout_s)
        try:
            return float(answer)
        except ValueError:
            raise self.fail(f"answered {answer[:80]!r} to {request!r}") from None

    def close(self) -> None:
        """Close its stdin (it ends there), kill it if it does not within 10 s, close its pipes
        and its stderr's file."""
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.errors.close()


def paired_round(commands: dict[str, tuple[list[str], dict[str, str] | None]],
                 jobs: dict[str, tuple[str, ...]], order: tuple[str, ...], blocks: int = BLOCKS,
                 ready_timeout_s: float = READY_TIMEOUT_S,
                 block_timeout_s: float = BLOCK_TIMEOUT_S) -> dict[str, Any]:
    """One round: start every side's process (``commands``: name -> argv, env) at once, wait for
    all to be ready, warm them up one after the other, then ``blocks`` times ask each side in
    ``order`` for one block of each of its ``jobs``. Returns ``order``, the blocks in the order
    they ran (``ran``: "side.job"), each side's and job's blocks and, per side, ``JOB_us``: the
    median of its blocks, with its ready note; or ``order`` and a one-line ``error``."""
    sides: dict[str, Side] = {}
    try:
        for name in order:
            sides[name] = Side(name, *commands[name])
        notes = {name: json.loads(sides[name].read_line(ready_timeout_s)) for name in order}
        for name in order:
            sides[name].ask(WARM, block_timeout_s)
        ran: list[str] = []
        figures: dict[str, list[float]] = {}
        for _ in range(blocks):
            for name in order:
                for job in jobs[name]:
                    figures.setdefault(f"{name}.{job}", []).append(
                        sides[name].ask(job, block_timeout_s))
                    ran.append(f"{name}.{job}")
    except (SideError, OSError, ValueError) as e:
        return {"order": list(order), "error": " ".join(str(e).split())}
    finally:
        for side in sides.values():
            side.close()
    result: dict[str, Any] = {"order": list(order), "ran": ran, "blocks": figures}
    for name in order:
        result[name] = dict(notes[name], **{f"{job}_us": float(np.median(figures[f"{name}.{job}"]))
                                            for job in jobs[name]})
    return result
