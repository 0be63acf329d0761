"""What a poisoned output that does not match its answer means: elements the kernel never
writes, or an argument it reads as well as writes.

The verified launch poisons every checked output, so that an element the kernel does not write
cannot pass by holding the right value already. Kernel Tuner, and most users, mean something
else by a kernel's result: its arguments' inputs are copied to the device, the kernel runs, and
what it leaves is the result; an element it never writes keeps its input, and an argument it
reads and writes (BabelStream's ``a[i] += b[i] + scalar * c[i]``) is read from its input. When
a poisoned output does not match, settle() finds out which of these the poison changed:

* The launch is repeated with a second, different poison. An element that holds the first
  poison after the first launch and the second after the second was never written (or only
  copied from itself): it takes the input's value, as it would have without poison.
* An argument whose result still differs from its answer where it held poison, or holds a
  NaN the answer lacks, or differs between the two launches where it held neither poison,
  may be read by the kernel (a NaN carrying the poison's payload through arithmetic looks
  like an element never written). It is launched once with its input, every other argument as
  before: if any output changes, the kernel reads it, and from then on it is verified with its
  input (in/out). If none does, the poisoned launches told the truth: what is wrong is the
  kernel's. One argument at a time, so that the one named in/out is the one whose content the
  result depends on.

Nothing here runs when the first launch matches: a passing configuration costs one launch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .arguments import holds_poison, same_bits
from .verification import Verification

# launch(poisoned, which poison) -> every argument after one more launch, every other writable
# array given its input again first
Launch = Callable[[list[int], int], list[Any]]


@dataclass
class Settled:
    """The outputs to judge, with what the relaunches found."""

    outputs: list[Any]
    unwritten: dict[int, np.ndarray] = field(default_factory=dict)  # per argument: never written
    inout: list[int] = field(default_factory=list)  # read by the kernel: now given their input


def _nan(values: np.ndarray) -> np.ndarray:
    return np.isnan(values) if values.dtype.kind in "fc" else np.zeros(values.shape, bool)


def settle(first: list[Any], launch: Launch, expected: Sequence[Any], poisoned: Sequence[int],
           inputs: dict[int, np.ndarray], verification: Verification) -> Settled:
    """The outputs as Kernel Tuner would see them (see the module's text), from the first
    launch's ``first`` (every argument of ``poisoned`` holding poison 0 before it) and as few
    relaunches as it takes. ``inputs``: each poisoned argument's input array."""
    outputs, poisoned = list(first), list(poisoned)  # outputs: the last launch with poison 0
    checked = [i for i in poisoned if expected[i] is not None]
    settled, cleared = Settled(outputs), set()
    second = None
    while True:
        if second is None:
            second = launch(poisoned, 1) if checked else outputs
        held = {i: holds_poison(outputs[i], 0) & holds_poison(second[i], 1) for i in checked}
        view = list(outputs)
        suspects = []
        for i in checked:
            view[i] = np.where(held[i], inputs[i], outputs[i])
            varies = (~held[i] & ~same_bits(outputs[i], second[i])).any()
            bad = verification.bad(view[i], expected[i])
            if i not in cleared and (varies or (bad is not None
                                                and (bad & (held[i] | _nan(outputs[i]))).any())):
                suspects.append(i)
        if not suspects:
            settled.outputs = view
            settled.unwritten = {i: held[i] for i in checked if held[i].any()}
            return settled
        i = suspects[0]
        rest = [j for j in poisoned if j != i]
        third = launch(rest, 0)
        changed = not same_bits(third[i], view[i]).all() or any(
            not same_bits(third[j], outputs[j]).all() for j, o in enumerate(outputs)
            if j != i and isinstance(o, np.ndarray))
        if changed:  # the outputs depend on what argument i held: the kernel reads it
            settled.inout.append(i)
            poisoned, outputs, second = rest, third, None
            checked.remove(i)
            cleared = set()  # given its input, i may lead the kernel to read the others too
        else:
            cleared.add(i)


def inout_note(index: int, name: str) -> str:
    return (f"argument {index} ('{name}') is read and written by the kernel (in/out): the outputs "
            f"changed with what '{name}' held before the launch, so it was verified with its "
            "input, not poisoned, and its input is restored before every timed launch")
