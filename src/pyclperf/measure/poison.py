"""The one poison and guard vocabulary: what an output holds before a kernel writes it, and
what the bytes past an array's end hold, so that an element nobody wrote, or a write past the
end, shows.

Experiments fill outputs with one 32-bit word (POISON_U32, a NaN no kernel computes by
accident, and not zero) and check guard bytes against ``poison_pattern``. tune() knows each
argument's element type, so it poisons element by element (``poison_element``), with two
poisons: an element holding the first after one launch and the second after another is one
the kernel left alone (tuner/verdict.py). Guard zones hold a pattern of their own per argument
(``guard_pattern``).
"""

from __future__ import annotations

import numpy as np

# A NaN no kernel computes by accident, and not zero.
POISON_U32 = np.uint32(0x7FBADBAD)
POISON_BYTES = np.frombuffer(POISON_U32.tobytes(), dtype=np.uint8)

# Two poisons, so that an element holding the first after one launch and the second after
# another is one the kernel left alone (tuner/verdict.py): for floats, quiet NaNs whose payloads no
# arithmetic produces (an operation on a NaN returns its payload, or the hardware's one default
# NaN), for each part of a complex; for everything else, repeated bytes.
_NAN_BITS = {2: (0x7EA5, 0x7F5A), 4: (0x7FC5A5A5, 0x7FDA5A5A),
             8: (0x7FF8A5A5A5A5A5A5, 0x7FFA5A5A5A5A5A5A)}
_POISON_BYTES = (0xA5, 0x5A)


def poison_pattern(nbytes: int, phase: int = 0) -> np.ndarray:
    """The poison bytes that lie at byte offsets ``phase .. phase + nbytes`` of a poisoned buffer."""
    return np.resize(np.roll(POISON_BYTES, -(phase % POISON_BYTES.size)), int(nbytes))


def poison_element(dtype: np.dtype, which: int = 0) -> np.ndarray:
    """One element of poison ``which`` (0 or 1): a NaN with a payload for floats, 0xA5 (or
    0x5A) bytes otherwise."""
    dtype = np.dtype(dtype).newbyteorder("=")
    part = dtype.itemsize // 2 if dtype.kind == "c" else dtype.itemsize
    if dtype.kind in "fc" and part in _NAN_BITS:
        words = np.full(2 if dtype.kind == "c" else 1, _NAN_BITS[part][which], dtype=f"u{part}")
        return words.view(dtype)
    return np.frombuffer(bytes([_POISON_BYTES[which]]) * dtype.itemsize, dtype=dtype).copy()


def typed_poison_fill(dtype: np.dtype, which: int = 0) -> np.ndarray:
    """A fill pattern (power-of-two bytes, at most 128) made of poison elements."""
    element = poison_element(dtype, which).view(np.uint8)
    size = element.size
    if size & (size - 1) or size > 128:  # odd-sized structs: a byte pattern tiles anything
        return np.array([_POISON_BYTES[which]], dtype=np.uint8)
    return element


def guard_pattern(index: int) -> np.ndarray:
    """The bytes the guard zone of argument ``index`` holds. Different for every argument, so
    a kernel that copies past one array's end from past another's is still caught."""
    return np.array([0xBD, 0x47 + index % 128, 0x9E, 0x2B], dtype=np.uint8)


__all__ = ["POISON_BYTES", "POISON_U32", "guard_pattern", "poison_element", "poison_pattern",
           "typed_poison_fill"]
