"""How a configuration's outputs are judged: a fixed answer, a reference computed per
configuration, or the user's own verify function; and the harness mistakes caught before the
first configuration runs."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..measure.checks import first_mismatch
from .space import Config


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
    list, or verify(config, outputs) -> bool | (bool, str). Integers must match exactly; a float
    element passes when |got - want| <= atol + rtol * |want| (see tolerance()); NaN never
    passes."""

    answer: Sequence[Any] | None = None
    reference: Callable[..., Sequence[Any]] | None = None
    verify: Callable[[Config, list[Any]], Any] | None = None
    rtol: float = 1e-5
    atol: float | None = None     # None: rtol times the answer's typical magnitude
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

    def tolerance(self, want: np.ndarray) -> float:
        """The absolute tolerance for ``want``: ``atol`` as given, else ``rtol`` times the
        answer's typical magnitude (typical_magnitude). An element near zero that is the
        difference of large numbers carries the rounding of those numbers, not of itself: it
        is judged on the scale of the data. A relative tolerance alone would fail it; a fixed
        absolute one (NumPy's 1e-8) would pass any answer smaller than that, a subnormal
        answer written as zero included."""
        if self.atol is not None:
            return float(self.atol)
        return float(self.rtol) * typical_magnitude(want)

    def bad(self, got: np.ndarray, want: np.ndarray) -> np.ndarray | None:
        """The mask of elements of ``got`` that do not match ``want``; None when all match.
        With the default tolerance, a nonzero subnormal expected value is judged by ``rtol``
        alone (see subnormal_wants): the data's scale would swallow it, a flush to zero
        included."""
        if np.array_equal(got, want):  # the common case, at memory speed (NaN is never equal)
            return None
        if got.dtype.kind in "fc":
            mask = _outside(got, want, self.rtol, self.tolerance(want))
            if self.atol is None and got.dtype.kind == "f":
                mask |= _outside(got, want, self.rtol, 0.0) & subnormal_wants(want)
        else:
            mask = got != want
        return mask if mask.any() else None

    def element_atol(self, want: np.ndarray, flat_index: int) -> float:
        """The absolute part of one element's tolerance (0 for a subnormal expected value
        under the default tolerance)."""
        if (self.atol is None and want.dtype.kind == "f"
                and bool(subnormal_wants(want.reshape(-1)[flat_index: flat_index + 1])[0])):
            return 0.0
        return self.tolerance(want)

    def masks(self, outputs: Sequence[Any], expected: Sequence[Any]) -> dict[int, np.ndarray | None]:
        """Per checked argument, the mask of its elements that do not match (None: all do)."""
        return {i: self.bad(outputs[i], want) for i, want in enumerate(expected) if want is not None}

    def judge(self, config: Config, outputs: list[Any], expected: Sequence[Any],
              names: Sequence[str], masks: Mapping[int, np.ndarray | None] | None = None,
              unwritten: Mapping[int, np.ndarray] | None = None) -> tuple[bool, str]:
        """(passed, what differed) for one configuration's outputs. ``masks``: from masks(),
        when already worked out; ``unwritten``: per argument, the elements the kernel was found
        never to write (they hold the input in ``outputs``)."""
        if masks is None:
            masks = self.masks(outputs, expected)
        for i, bad in sorted(masks.items()):
            if bad is None:
                continue
            got, want = outputs[i], expected[i]
            detail = self._report(bad, got, want)
            never = (unwritten or {}).get(i)
            if never is not None and (bad & never).any():
                detail += ". " + never_written(never, bad, names[i])
            return False, f"argument {i} ('{names[i]}'): {detail}"
        if self.verify is not None:
            verdict = self.verify(config, outputs)
            passed, detail = verdict if isinstance(verdict, tuple) else (verdict, "")
            if not isinstance(passed, (bool, np.bool_)):
                raise TypeError(f"verify returned {passed!r}; it must return a bool or "
                                "(bool, message)")
            if not passed:
                return False, f"verify: {detail or 'returned False'}"
        return True, ""

    def _report(self, bad: np.ndarray, got: np.ndarray, want: np.ndarray) -> str:
        if got.dtype.kind not in "fc":
            return first_mismatch(bad, got, want, "elements", unravel=True)
        wide = want.reshape(-1)
        detail = first_mismatch(
            bad, got, want, "elements", " by more than the tolerance",
            lambda i: f" (tolerance {self.element_atol(want, i) + self.rtol * float(abs(wide[i])):.3g})",
            unravel=True)
        flushed = bad.reshape(-1) & (got.reshape(-1) == 0) if got.dtype.kind == "f" else None
        if self.atol is None and flushed is not None and (flushed & subnormal_wants(wide)).any():
            count = int((flushed & subnormal_wants(wide)).sum())
            detail += (f"; {count} of them are subnormal expected values written as zero (a "
                       "device that flushes subnormals does this; give atol to accept it)")
        return detail


# How many elements typical_magnitude looks at, evenly spaced: enough for a steady median,
# few enough to cost nothing beside the launch.
SAMPLE = 1 << 16


def typical_magnitude(want: np.ndarray) -> float:
    """The median |value| of the answer's nonzero finite elements (of up to SAMPLE of them,
    evenly spaced); 0 when it has none. The median, not the largest: one huge element does
    not loosen the check of all the others."""
    flat = want.reshape(-1)
    sample = np.abs(flat[::max(1, flat.size // SAMPLE)])
    with np.errstate(invalid="ignore"):
        sample = sample[np.isfinite(sample) & (sample > 0)]
    return float(np.median(sample)) if sample.size else 0.0


def subnormal_wants(want: np.ndarray) -> np.ndarray:
    """The mask of nonzero expected values below the smallest normal number of their dtype.
    The default absolute tolerance (rtol times the data's typical magnitude) exists for results
    that cancel to near zero, whose error is on the data's scale; it is larger than every
    subnormal of data near 1, so it would pass a subnormal written as zero, or as another
    subnormal. These are judged relatively instead: a flush to zero is a mismatch unless the
    user gives atol."""
    tiny = np.finfo(want.dtype).tiny
    with np.errstate(invalid="ignore"):
        a = np.abs(want)
        return (a > 0) & (a < tiny)


def _outside(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """The mask of elements with |got - want| > atol + rtol |want|; equal values (infinities
    too) pass, NaN never does. Only the elements that are not equal are worked out, in double
    precision, so that neither a difference nor a subnormal's tolerance rounds."""
    with np.errstate(invalid="ignore"):
        mask = ~(got == want)
    which = np.flatnonzero(mask.reshape(-1))
    wide = np.complex128 if got.dtype.kind == "c" else np.float64
    g = got.reshape(-1)[which].astype(wide)
    w = want.reshape(-1)[which].astype(wide)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.abs(g - w) <= atol + rtol * np.abs(w)
    mask.reshape(-1)[which[close]] = False
    return mask


def mismatch(got: np.ndarray, want: np.ndarray, rtol: float = 1e-5,
             atol: float | None = None) -> str:
    """Empty when ``got`` matches ``want``; else how many elements differ and the first."""
    v = Verification(rtol=rtol, atol=atol)
    bad = v.bad(got, want)
    return "" if bad is None else v._report(bad, got, want)


def _where(mask: np.ndarray, shape: tuple[int, ...], most: int = 6) -> str:
    """The first ``most`` marked elements' indices, as a person writes them."""
    flat = np.flatnonzero(mask.reshape(-1))
    shown = [f"({', '.join(str(int(x)) for x in np.unravel_index(int(i), shape))})"
             if len(shape) > 1 else str(int(i)) for i in flat[:most]]
    return ", ".join(shown) + (f", ... ({flat.size} in all)" if flat.size > most else "")


def never_written(never: np.ndarray, bad: np.ndarray, name: str) -> str:
    """The sentence naming the elements of ``name`` the kernel never writes that the answer
    expects to change."""
    wrong = never & bad
    return (f"The kernel never writes {int(never.sum())} of the {never.size} elements of "
            f"'{name}' (they kept pyclperf's poison through two launches with two different "
            f"poisons), so they keep their input; at {int(wrong.sum())} of them the answer "
            f"expects another value: {_where(wrong, never.shape)}")


def unwritten_note(never: np.ndarray, index: int, name: str) -> str:
    """The row's note for elements the kernel never writes whose input the answer expects."""
    return (f"argument {index} ('{name}'): the kernel never writes {int(never.sum())} of its "
            f"{never.size} elements ({_where(never, never.shape)}); they keep their input, "
            "which the answer expects there")
