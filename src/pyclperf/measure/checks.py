"""Verification helpers: fresh random inputs, poisoned outputs, and comparisons that say what
differed. A copy must reproduce random bytes exactly; a poisoned output (never zeros, which
would hide a destination nobody wrote) shows any byte that was not written."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..device.turns import host_work
from .parallel import CHUNK, chunks, map_chunks, threads
from .poison import POISON_U32, poison_pattern  # noqa: F401  (the experiments' names)


def drawn(rng: np.random.Generator, n: int, dtype: Any,
          draw: Callable[[np.random.Generator, int], np.ndarray]) -> np.ndarray:
    """``n`` values of ``dtype`` from ``draw(generator, count)``: a large draw in chunks on the
    host's cores, each by a generator spawned from ``rng``, a small one (or one under NumPy <
    1.25, which cannot spawn) by ``rng``."""
    out = np.empty(int(n), dtype)
    parts = chunks(out.size)
    if len(parts) < 2 or threads() < 2 or not hasattr(rng, "spawn"):
        out[:] = draw(rng, out.size)
        return out
    children = rng.spawn(len(parts))

    def part(s: slice) -> None:
        out[s] = draw(children[s.start // CHUNK], s.stop - s.start)

    map_chunks(part, out.size)
    return out


@host_work
def random_bytes(rng: np.random.Generator, nbytes: int) -> np.ndarray:
    """``nbytes`` fresh random bytes as a writable uint8 array: the generator's raw 64-bit
    outputs (``drawn``), three times faster than ``rng.integers`` over the full range (which
    draws the same words and then checks the bounds), and far faster than ``rng.bytes``."""
    n = int(nbytes)
    words = drawn(rng, -(-n // 8), np.uint64, lambda g, count: g.bit_generator.random_raw(count))
    return words.view(np.uint8)[:n]


def poison(array: np.ndarray) -> None:
    """Overwrite a contiguous array's bytes with the repeated poison pattern."""
    raw = array.reshape(-1).view(np.uint8)
    if raw.size % 4 == 0 and raw.ctypes.data % 4 == 0:
        words = raw.view(np.uint32)

        def fill(part: slice) -> None:
            words[part] = POISON_U32

        map_chunks(fill, words.size)
    else:
        raw[:] = poison_pattern(raw.size)


def poison_device(buffer: Any) -> None:
    """Fill a device buffer with the poison pattern (its size must be a multiple of 4 bytes)."""
    buffer.fill(np.array([POISON_U32]))


# --- the one wording of a failed comparison ---------------------------------------------------
# Every check (compare, compare_close, compare_ulp, the device compare, tune()'s verification)
# reports through these two, so a row's error reads the same whichever found it, and tests and
# users can rely on "N of M <what> differ...; first at I: got G, want W".

def mismatch_report(count: int, total: int, what: str, where: Any, got: Any, want: Any,
                    how: str = "", note: str = "") -> str:
    """"<count> of <total> <what> differ<how>; first at <where>: got <got>, want <want><note>"."""
    return (f"{count} of {total} {what} differ{how}; first at {_plain(where)}: "
            f"got {_plain(got)}, want {_plain(want)}{note}")


def _plain(value: Any) -> str:
    """A NumPy scalar or index tuple as a person writes it: 4, (0, 4), 0.2096302, not
    np.int64(4) or np.float32(0.2096302) (NumPy 2's repr)."""
    if isinstance(value, tuple):
        return "(" + ", ".join(_plain(v) for v in value) + ")"
    if isinstance(value, np.generic):
        return repr(value.item())
    return repr(value)


def first_mismatch(bad: np.ndarray, got: np.ndarray, want: Any, what: str, how: str = "",
                   note: Any = None, unravel: bool = False) -> str:
    """mismatch_report for the elements the mask ``bad`` marks ("" when it marks none);
    ``note(i)`` adds a suffix about the first, flat index i; ``unravel`` names it by its
    N-d index."""
    wrong = np.flatnonzero(np.asarray(bad).reshape(-1))
    if wrong.size == 0:
        return ""
    first = int(wrong[0])
    where = np.unravel_index(first, got.shape) if unravel and got.ndim > 1 else first
    return mismatch_report(wrong.size, got.size, what, where, got.reshape(-1)[first],
                           np.asarray(want).reshape(-1)[first], how, note(first) if note else "")


def shape_mismatch(got: Any, want: Any, what: str) -> str:
    """"" when the shapes agree, else the sentence saying they do not."""
    if np.shape(got) == np.shape(want):
        return ""
    return f"{what}: shape {np.shape(got)} differs from the expected {np.shape(want)}"


def _as_words(a: np.ndarray) -> np.ndarray | None:
    """A contiguous array's bytes as uint64 words, where they divide into aligned words."""
    if not a.flags.c_contiguous or a.nbytes % 8 or a.ctypes.data % 8:
        return None
    return a.reshape(-1).view(np.uint8).view(np.uint64)


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Whether two arrays of one shape and item size hold the same bits. Compared as 64-bit words
    where both allow it: np.array_equal on a GiB of bytes takes half a second, on its words a
    tenth of that."""
    if got.dtype.itemsize == want.dtype.itemsize and got.dtype.kind in "uib" and want.dtype.kind in "uib":
        g, w = _as_words(got), _as_words(want)
        if g is not None and w is not None:
            return all(map_chunks(lambda part: bool(np.array_equal(g[part], w[part])), g.size))
    return bool(np.array_equal(got, want))


@host_work
def compare(got: np.ndarray, want: np.ndarray, what: str = "bytes") -> tuple[bool, str]:
    """(True, "") when equal; else (False, how many elements differ and the first of them).
    Integer arrays compare bit for bit (as 64-bit words where they allow it)."""
    if got.shape != want.shape:
        return False, shape_mismatch(got, want, what)
    if same_bits(got, want):
        return True, ""
    return False, first_mismatch(got.reshape(-1) != want.reshape(-1), got, want, what)


def outside(got: np.ndarray, want: np.ndarray, atol: Any = 0.0, rtol: Any = 0.0) -> np.ndarray:
    """The mask of elements with |got - want| > atol + rtol |want|; NaN is always outside."""
    want64 = np.asarray(want, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # the poison is a signalling NaN
        err = np.abs(np.asarray(got, dtype=np.float64) - want64)
        return ~(err <= np.asarray(atol, dtype=np.float64) + np.asarray(rtol, dtype=np.float64)
                 * np.abs(want64))


@host_work
def compare_close(got: np.ndarray, want: np.ndarray, atol: Any = 0.0, what: str = "values", *,
                  rtol: Any = 0.0) -> tuple[bool, str]:
    """Like compare, for floats: each |got - want| must be within ``atol + rtol * |want|``
    (either a scalar or one per element). NaN never passes, so a poisoned element left unwritten
    fails. The detail says how many elements differ, the first of them and its tolerance."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False, shape_mismatch(got, want, what)
    if _count_outside(got, want, atol, rtol) == 0:
        return True, ""
    # Something differs: the whole arrays again, for the report (one float64 temporary, worked
    # in place: the arrays run to hundreds of MiB).
    want64 = np.asarray(want, dtype=np.float64)
    atol64, rtol64 = np.asarray(atol, dtype=np.float64), np.asarray(rtol, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.subtract(got, want64, dtype=np.float64)
        np.abs(err, out=err)
        tol = atol64 if rtol64.ndim == 0 and rtol64 == 0 else atol64 + rtol64 * np.abs(want64)
        bad = ~(err <= tol)  # NaN compares False: counted as wrong
    if not bad.any():
        return True, ""
    tol = np.broadcast_to(tol, err.shape)
    return False, first_mismatch(bad, got, want, what, " by more than the tolerance",
                                 lambda i: f" (tolerance {tol.reshape(-1)[i]:.3g})")


def _flat(a: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``a`` as one flat array of ``shape``'s size in its own type (a chunk is widened where it
    is used); a scalar as a 0-d float64 array."""
    a = np.asarray(a)
    if a.ndim == 0:
        return a.astype(np.float64)
    return a.reshape(-1) if a.shape == shape else np.broadcast_to(a, shape).reshape(-1)


def _count_outside(got: np.ndarray, want: np.ndarray, atol: Any, rtol: Any) -> int:
    """How many elements have |got - want| > atol + rtol |want| (NaN counted), a chunk at a
    time on the host's cores (measure.parallel)."""
    g, w = got.reshape(-1), want.reshape(-1)
    a, r = _flat(atol, got.shape), _flat(rtol, got.shape)
    relative = not (r.ndim == 0 and r == 0)

    def count(part: slice) -> int:
        w64 = w[part].astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.subtract(g[part], w64, dtype=np.float64)
            np.abs(err, out=err)
            tol = a if a.ndim == 0 else a[part].astype(np.float64)
            if relative:
                np.abs(w64, out=w64)
                tol = tol + (r if r.ndim == 0 else r[part].astype(np.float64)) * w64
            return int(err.size - np.count_nonzero(err <= tol))  # NaN compares False

    return sum(map_chunks(count, g.size))


@host_work
def max_abs_error(got: np.ndarray, want: np.ndarray) -> float:
    """The largest |got - want| among finite differences (NaN where none is finite), a chunk at
    a time on the host's cores."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        got, want = np.broadcast_arrays(got, want)
    g, w = got.reshape(-1), want.reshape(-1)

    def largest(part: slice) -> tuple[bool, float]:
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.subtract(g[part], w[part].astype(np.float64), dtype=np.float64)
            np.abs(err, out=err)
            return bool(np.isfinite(err).any()), float(np.fmax.reduce(err)) if err.size else float("nan")

    parts = map_chunks(largest, g.size)
    if not any(finite for finite, _ in parts):
        return float("nan")
    return float(np.fmax.reduce(np.array([m for _, m in parts])))


FLT_MIN = 2.0**-126  # smallest normal float
FLOAT32_U = 2.0**-24  # unit roundoff of float32: a correctly rounded operation errs by at most this


def gamma(chain: int) -> float:
    """Higham's gamma_k for float32: the relative error bound of a chain of k roundings."""
    ku = chain * FLOAT32_U
    if ku >= 1:
        from .. import _core

        raise _core.InvalidArgumentError(f"{chain} chained float32 roundings bound nothing")
    return ku / (1 - ku)


def ulp32(ref: np.ndarray) -> np.ndarray:
    """ULP of float32 at each real value ``ref`` (float64): the gap between the two floats that
    enclose |ref| (the OpenCL C definition), 2^-149 below the normal range."""
    a = np.abs(np.asarray(ref, dtype=np.float64))
    _, e = np.frexp(a)  # a = m * 2**e with 0.5 <= m < 1, so the gap is 2**(e - 24)
    return np.where(a < FLT_MIN, 2.0**-149, np.ldexp(1.0, e - 24))


@host_work
def ulp_error(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in ULPs of ``ref``; infinite where ``got`` is not finite. A result flushed to
    zero where the exact one is below the normal range counts as exact (OpenCL allows it)."""
    g = np.asarray(got, dtype=np.float64)
    err = np.abs(g - ref) / ulp32(ref)
    err[(np.abs(ref) < FLT_MIN) & (np.abs(g) < FLT_MIN)] = 0.0
    err[~np.isfinite(g)] = np.inf
    return err


def compare_ulp(got: np.ndarray, ref: np.ndarray, max_ulp: float,
                what: str = "values") -> tuple[bool, str]:
    """Each float32 result within ``max_ulp`` ULPs of the float64 reference; a non-finite result
    never passes. The detail says how many differ and the first."""
    got = np.asarray(got)
    if got.shape != np.shape(ref):
        return False, shape_mismatch(got, ref, what)
    ulps = ulp_error(got, np.asarray(ref, dtype=np.float64))
    bad = ~(ulps <= max_ulp)
    if not bad.any():
        return True, ""
    return False, first_mismatch(bad, got, ref, what, f" by more than {max_ulp:g} ulp",
                                 lambda i: f" ({ulps.reshape(-1)[i]:.3g} ulp)")


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


def product_tolerance(k: int, magnitude: np.ndarray) -> np.ndarray:
    """How far a float32 dot product of length ``k`` may lie from the exact one.

    A float32 dot product of length k, summed in any order, with or without fused multiply-add,
    differs from the exact value by at most gamma_k * sum |a_i b_i| with
    gamma_k = k u / (1 - k u) and u = 2^-24 (Higham, Accuracy and Stability of Numerical
    Algorithms, 3.1). ``magnitude`` is |A| |B| (the sums of |a_i b_i|); the reference itself is
    float64, whose error is ~1e-16 relative and ignored. k tiny normals are added for a device
    that flushes subnormal products to zero.
    """
    u = 2.0 ** -24
    gamma = k * u / (1 - k * u)
    return gamma * magnitude + k * float(np.finfo(np.float32).tiny)


@host_work
def product_reference(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A B in float64 and each element's product_tolerance (as float32, rounded up): what
    ``within_product`` holds a device's C to, computed once for as many products of the same
    A and B as there are (an experiment's variants all compute one C)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = np.empty((a.shape[0], b.shape[1]))
    tol = np.empty(want.shape, np.float32)
    rows = max(1, (1 << 24) // max(1, b.shape[1]))  # a few hundred MiB of temporaries at most
    for r0 in range(0, a.shape[0], rows):
        block = slice(r0, r0 + rows)
        want[block] = a64[block] @ b64
        # float32 rounds by at most 2^-24 relative: the margin keeps every bound at or above
        # the float64 one.
        tol[block] = product_tolerance(a.shape[1], np.abs(a64[block]) @ np.abs(b64)) * (1 + 2.0**-22)
    return want, tol


@host_work
def within_product(got: np.ndarray, want: np.ndarray, tol: np.ndarray,
                   what: str = "elements of C") -> tuple[bool, str]:
    """Whether ``got`` lies within ``tol`` of ``want`` (product_reference's), a chunk at a time
    on the host's cores; the detail names the first element outside by row and column. NaN (the
    poison) never passes."""
    if got.shape != want.shape:
        return False, f"{what}: shape {got.shape}, expected {want.shape}"
    wrong = _count_outside(got, want, tol, 0.0)
    if not wrong:
        return True, ""
    bad = outside(got, want, tol)
    r, c = np.argwhere(bad)[0]
    return False, (f"{wrong} of {got.size} {what} outside the float32 rounding bound; first at row "
                   f"{r}, column {c}: got {got[r, c]!r}, want {want[r, c]!r} +- {tol[r, c]:.3g}")


def check_product(got: np.ndarray, a: np.ndarray, b: np.ndarray,
                  what: str = "elements of C") -> tuple[bool, str]:
    """Whether ``got`` (float32, shape (rows, cols)) is A B within product_tolerance."""
    if got.shape != (a.shape[0], b.shape[1]):
        return False, f"{what}: shape {got.shape}, expected {(a.shape[0], b.shape[1])}"
    return within_product(got, *product_reference(a, b), what)
