"""How a configuration's outputs are judged: a fixed answer, a reference computed per
configuration, or the user's own verify function; and the harness mistakes caught before the
first configuration runs."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..checks import first_mismatch
from .arguments import is_poison

Config = dict[str, Any]


def _argument(index: int, name: str) -> str:
    return f"argument {index} ('{name}')" if name else f"argument {index}"


def _expected_array(position: str, want: Any, arg: Any, index: int, name: str) -> np.ndarray:
    """``want`` as an array shaped like argument ``index``; TypeError/ValueError for a harness
    mistake (a number for an array, another length, another dtype)."""
    what = _argument(index, name)
    if not isinstance(arg, np.ndarray):
        raise TypeError(f"{position} gives an expected value for {what}, "
                        f"which is a {type(arg).__name__}, not an array: put None there")
    if isinstance(want, np.ndarray):
        arr = want
        # Byte order is no mismatch: arrays reach the device, and come back, as their numbers.
        if arr.dtype.newbyteorder("=") != arg.dtype.newbyteorder("="):
            hint = (" (the reference was computed in double precision)"
                    if arr.dtype == np.float64 and arg.dtype.kind == "f" else "")
            raise TypeError(f"{position} for {what} is {arr.dtype}, but the "
                            f"argument is {arg.dtype}{hint}; cast it with .astype(np.{arg.dtype.name})")
    else:
        arr = np.asarray(want, dtype=arg.dtype)
    if arr.size != arg.size:
        raise ValueError(f"{position} for {what} has {arr.size} elements, "
                         f"the argument has {arg.size}")
    return arr.reshape(arg.shape)


def check_reference_signature(reference: Callable[..., Any], count: int,
                              names: Sequence[str]) -> None:
    """TypeError, saying how to write it, when ``reference`` cannot be called as
    ``reference(config, *args)`` with ``count`` kernel arguments: the usual slip is the
    Kernel-Tuner-like ``lambda a, b, c: ...`` without the configuration."""
    try:
        sig = inspect.signature(reference)
    except (TypeError, ValueError):  # a builtin or C callable: call it and see
        return
    try:
        sig.bind({}, *range(count))
    except TypeError:
        takes = ", ".join(str(p) for p in sig.parameters.values())
        wanted = ", ".join(["config"] + [n or f"arg{i}" for i, n in enumerate(names)])
        plural = "s" if count != 1 else ""
        raise TypeError(f"the reference is called as reference(config, *args): the configuration "
                        f"and the kernel's {count} argument{plural}, {count + 1} in all; it is "
                        f"reference({takes}), so write it as def reference({wanted}): ..."
                        ) from None


@dataclass
class Verification:
    """answer (parallel to args, None where unchecked), reference(config, *args) giving such a
    list, or verify(config, outputs) -> bool | (bool, str). rtol/atol for floats; integers
    must match exactly; NaN never passes."""

    answer: Sequence[Any] | None = None
    reference: Callable[..., Sequence[Any]] | None = None
    verify: Callable[[Config, list[Any]], Any] | None = None
    rtol: float = 1e-5
    atol: float = 1e-8
    _cache: dict[str, list[Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.answer is not None and self.reference is not None:
            raise TypeError("give answer= or reference=, not both")

    @property
    def active(self) -> bool:
        return self.answer is not None or self.reference is not None or self.verify is not None

    def expected(self, config: Config, key: str, args: Sequence[Any],
                 names: Sequence[str]) -> list[np.ndarray | None]:
        """The expected arrays for this configuration's ``args`` (checked: see _expected_array)."""
        if key in self._cache:
            return self._cache[key]
        if self.answer is not None:
            raw, position = list(self.answer), "answer"
        elif self.reference is not None:
            check_reference_signature(self.reference, len(args), names)
            copies = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
            raw, position = list(self.reference(config, *copies)), "the reference's result"
        else:
            return [None] * len(args)
        if len(raw) != len(args):
            raise ValueError(f"{position} has {len(raw)} entries for {len(args)} kernel arguments "
                             "(one per argument, None where unchecked)")
        out = [None if w is None else
               _expected_array(f"{position}[{i}]", w, args[i], i, names[i])
               for i, w in enumerate(raw)]
        if self.reference is not None:  # one per configuration: keep only the latest
            self._cache = {key: out}
        return out

    def checked(self, expected: Sequence[Any]) -> list[int]:
        return [i for i, e in enumerate(expected) if e is not None]

    def judge(self, config: Config, outputs: list[Any], expected: Sequence[Any],
              names: Sequence[str], poisoned: Sequence[int]) -> tuple[bool, str]:
        """(passed, what differed) for one configuration's outputs."""
        for i, want in enumerate(expected):
            if want is None:
                continue
            detail = mismatch(outputs[i], want, self.rtol, self.atol)
            if detail:
                hint = _poison_hint(outputs[i], want, names[i], i in poisoned, self.rtol, self.atol)
                return False, f"argument {i} ('{names[i]}'): {detail}{hint}"
        if self.verify is not None:
            verdict = self.verify(config, outputs)
            passed, detail = verdict if isinstance(verdict, tuple) else (verdict, "")
            if not isinstance(passed, (bool, np.bool_)):
                raise TypeError(f"verify returned {passed!r}; it must return a bool or "
                                "(bool, message)")
            if not passed:
                return False, f"verify: {detail or 'returned False'}"
        return True, ""


def _bad(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    if got.dtype.kind in "fc":
        return ~np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=False)
    return got != want


def mismatch(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str:
    """Empty when ``got`` matches ``want``; else how many elements differ and the first."""
    if np.array_equal(got, want):  # the common case, at memory speed (NaN is never equal)
        return ""
    return first_mismatch(_bad(got, want, rtol, atol), got, want, "elements", unravel=True)


def _poison_hint(got: np.ndarray, want: np.ndarray, name: str, poisoned: bool,
                 rtol: float, atol: float) -> str:
    if not poisoned:
        return ""
    bad = _bad(got, want, rtol, atol)
    held = bad & is_poison(got) & ~is_poison(want)
    if not held.any():
        return ""
    return (f". {int(held.sum())} of the differing elements still hold pyclperf's poison "
            f"(written into '{name}' before the run): the kernel never wrote them. If it writes "
            f"only part of '{name}', leave '{name}' out of poisoning (poison=[...]) so the "
            f"unwritten part keeps its input, or give the expected value there too; if it also "
            f"reads '{name}', declare it inout=['{name}']")
