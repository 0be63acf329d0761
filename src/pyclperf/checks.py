"""Verification helpers: fresh random inputs, poisoned outputs, and comparisons that say what
differed. A copy must reproduce random bytes exactly; a poisoned output (never zeros, which
would hide a destination nobody wrote) shows any byte that was not written."""

from __future__ import annotations

from typing import Any

import numpy as np

# A NaN no kernel computes by accident, and not zero.
POISON_U32 = np.uint32(0x7FBADBAD)
POISON_BYTES = np.frombuffer(POISON_U32.tobytes(), dtype=np.uint8)


def random_bytes(rng: np.random.Generator, nbytes: int) -> np.ndarray:
    """``nbytes`` fresh random bytes as a writable uint8 array (whole 64-bit draws: fast)."""
    n = int(nbytes)
    words = rng.integers(0, 2**64, size=-(-n // 8), dtype=np.uint64)
    return words.view(np.uint8)[:n]


def poison_pattern(nbytes: int, phase: int = 0) -> np.ndarray:
    """The poison bytes that lie at byte offsets ``phase .. phase + nbytes`` of a poisoned buffer."""
    return np.resize(np.roll(POISON_BYTES, -(phase % POISON_BYTES.size)), int(nbytes))


def poison(array: np.ndarray) -> None:
    """Overwrite a contiguous array's bytes with the repeated poison pattern."""
    raw = array.reshape(-1).view(np.uint8)
    if raw.size % 4 == 0 and raw.ctypes.data % 4 == 0:
        raw.view(np.uint32)[:] = POISON_U32
    else:
        raw[:] = poison_pattern(raw.size)


def poison_device(buffer: Any) -> None:
    """Fill a device buffer with the poison pattern (its size must be a multiple of 4 bytes)."""
    buffer.fill(np.array([POISON_U32]))


def compare(got: np.ndarray, want: np.ndarray, what: str = "bytes") -> tuple[bool, str]:
    """(True, "") when equal; else (False, how many elements differ and the first of them)."""
    if got.shape != want.shape:
        return False, f"{what}: shape {got.shape} differs from the expected {want.shape}"
    if np.array_equal(got, want):
        return True, ""
    wrong = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
    first = int(wrong[0])
    return False, (f"{wrong.size} of {got.size} {what} differ; first at {first}: "
                   f"got {got.reshape(-1)[first]!r}, want {want.reshape(-1)[first]!r}")


def compare_close(got: np.ndarray, want: np.ndarray, tolerance: Any,
                  what: str = "values") -> tuple[bool, str]:
    """Like compare, for floats: each |got - want| must be within ``tolerance`` (absolute; a
    scalar or one per element). NaN never passes, so a poisoned element left unwritten fails."""
    if got.shape != want.shape:
        return False, f"{what}: shape {got.shape} differs from the expected {want.shape}"
    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    bad = ~(err <= np.broadcast_to(np.asarray(tolerance, dtype=np.float64), err.shape))
    if not bad.any():
        return True, ""
    wrong = np.flatnonzero(bad.reshape(-1))
    first = int(wrong[0])
    tol = np.broadcast_to(np.asarray(tolerance, dtype=np.float64), err.shape).reshape(-1)[first]
    return False, (f"{wrong.size} of {got.size} {what} differ beyond the tolerance; first at "
                   f"{first}: got {got.reshape(-1)[first]!r}, want {want.reshape(-1)[first]!r} "
                   f"(tolerance {tol:.3g})")


def landed(out: np.ndarray, data: np.ndarray) -> tuple[bool, str]:
    """Whether ``out`` starts with ``data`` and keeps the poison after it (no overrun).

    Both are uint8; the bytes of ``out`` past ``data`` must be the poison pattern of a buffer
    poisoned from byte 0.
    """
    n = data.size
    ok, detail = compare(out[:n], data, "transferred bytes")
    if not ok:
        return False, detail
    ok, detail = compare(out[n:], poison_pattern(out.size - n, phase=n), "guard bytes after the end")
    return ok, detail
