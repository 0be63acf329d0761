"""What a kernel parameter's declared type accepts from NumPy.

The kernel's argument info (built with -cl-kernel-arg-info, which Program always adds) names
each parameter's type after preprocessing: "float*", "double*", "float4*", "uint". An array or
scalar whose element type differs is refused before anything reaches the device: a float64
array behind a ``float*`` is read as garbage, and a ``double*`` kernel writing into a float32
buffer writes twice its length.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .. import _core

# OpenCL C scalar type -> NumPy dtype.
SCALAR_TYPES: dict[str, Any] = {
    "char": np.int8, "uchar": np.uint8, "short": np.int16, "ushort": np.uint16,
    "int": np.int32, "uint": np.uint32, "long": np.int64, "ulong": np.uint64,
    "float": np.float32, "double": np.float64, "half": np.float16, "bool": np.bool_,
    "unsigned char": np.uint8, "unsigned short": np.uint16, "unsigned int": np.uint32,
    "unsigned long": np.uint64, "size_t": np.uint64, "ptrdiff_t": np.int64,
    "intptr_t": np.int64, "uintptr_t": np.uint64,
}
_QUALIFIERS = re.compile(r"\b(const|volatile|restrict|__restrict|__global|global|__constant|"
                         r"constant|__local|local|__private|private|struct|enum|union)\b")
_VECTOR = re.compile(r"^([a-z ]+?)(2|3|4|8|16)$")


def element_type(type_name: str) -> tuple[np.dtype | None, int, str]:
    """(dtype, vector width, base name) of a declared type; dtype None when it is no OpenCL C
    scalar or vector type (a struct, a typedef the driver reports by name, void)."""
    base = _QUALIFIERS.sub(" ", type_name.replace("*", " ")).strip()
    base = " ".join(base.split())
    if base in SCALAR_TYPES:
        return np.dtype(SCALAR_TYPES[base]), 1, base
    m = _VECTOR.match(base)
    if m and m.group(1) in SCALAR_TYPES:
        return np.dtype(SCALAR_TYPES[m.group(1)]), int(m.group(2)), base
    return None, 1, base


def describe(index: int, info: Any) -> str:
    return f"argument {index} ('{info.name}', {info.address_qualifier} {info.type_name})"


def plain_problem(dtype: np.dtype) -> str:
    """Why an array of ``dtype`` holds no plain numbers a kernel could read (empty when it
    does): booleans, integers, floats, complex numbers and structs or sub-arrays of them are
    plain; objects (host pointers), strings, dates and raw void bytes are not. The core checks
    the same rule wherever host memory crosses (src/cpp/bindings/arrays.hpp)."""
    if dtype.kind in "biufc":
        return ""
    if dtype.kind == "O":
        return "Python object pointers"
    if dtype.kind == "V":
        if dtype.subdtype is not None:
            return plain_problem(dtype.subdtype[0])
        if dtype.fields is None:
            return "raw bytes (void) with no numeric fields (numpy.uint8 is bytes)"
        for name, (field, *_) in dtype.fields.items():
            problem = plain_problem(field)
            if problem:
                return f"{problem} (in field '{name}')"
        return ""
    return {"U": "unicode text", "S": "byte strings", "M": "dates", "m": "time spans"}.get(
        dtype.kind, f"NumPy kind '{dtype.kind}' values")


def check_plain_array(index: int, array: np.ndarray) -> None:
    """TypeError for arrays that are no plain numbers: pyclperf hands the device raw bytes, and
    object arrays hold host pointers."""
    problem = plain_problem(array.dtype)
    if problem:
        raise TypeError(f"argument {index}: a {array.dtype} array cannot go to the device (it "
                        f"holds {problem}, no plain numbers); pass a numeric NumPy array, e.g. "
                        "np.asarray(values, dtype=np.float32)")


def in_host_order(array: np.ndarray) -> np.ndarray:
    """``array`` itself, or a copy of its numbers in the host's byte order where it is in the
    other one (``">f4"`` on x86): the device reads numbers in the host's order, so a big-endian
    array's raw bytes would be other numbers there."""
    dtype = array.dtype
    if dtype.isnative if dtype.kind != "V" else dtype == dtype.newbyteorder("="):
        return array  # (isnative misses a struct's sub-array fields in the other order)
    return array.astype(dtype.newbyteorder("="))


def check_array_for(index: int, info: Any, array: np.ndarray) -> str:
    """Why ``array`` cannot be passed as pointer parameter ``info`` (empty when it can).

    Structs and unknown typedefs accept any plain array: only the size can be wrong there,
    and the guard zone catches a kernel that reads it wider than it is.
    """
    if info.address_qualifier not in ("global", "constant"):
        if info.address_qualifier == "local":
            return (f"{describe(index, info)} is a __local pointer: pass LocalMemory(nbytes), "
                    "not an array")
        if info.is_image:
            return f"{describe(index, info)} is an image: pass ctx.to_image(array), not an array"
        return f"{describe(index, info)} is passed by value: pass a scalar, not an array"
    want, width, base = element_type(info.type_name)
    if want is None:
        return ""
    if array.dtype != want:
        return (f"{describe(index, info)} holds {base}, but the array is {array.dtype}; pass "
                f"{want} (e.g. a.astype(np.{want.name})) or change the kernel's type")
    if width > 1 and array.size % width:
        return (f"{describe(index, info)}: {array.size} {want} elements are not a whole number of "
                f"{base} vectors")
    return ""


def _signed_as_unsigned(index: int, info: Any, arr: np.ndarray, want: np.dtype,
                        base: str) -> np.ndarray:
    """A signed NumPy integer given for an unsigned parameter, converted when every value fits.
    C host code passes a ``cl_int`` for an ``unsigned int`` (SHOC does) and Kernel Tuner
    accepts ``np.int32`` there, so scripts written that way keep working; a value the
    unsigned type cannot hold is refused rather than wrapped around."""
    values = arr.reshape(-1).tolist()
    top = int(np.iinfo(want).max)
    bad = next((v for v in values if not 0 <= v <= top), None)
    if bad is not None:
        shown = arr.reshape(-1)[0] if arr.size == 1 else arr
        raise _core.InvalidArgumentError(
            f"{describe(index, info)}: np.{arr.dtype.name}({shown!s}) does not fit {base} "
            f"(0 to {top}); {'a negative value has no unsigned form' if bad < 0 else 'too big'}")
    return arr.astype(want)


def scalar_for(index: int, info: Any, value: Any) -> np.ndarray:
    """A by-value argument as the bytes the kernel declares. Python numbers take the declared
    type (and must fit it); NumPy scalars must already be of it, except that a signed NumPy
    integer passes for an unsigned parameter when its value fits (as C's implicit conversion
    and Kernel Tuner allow)."""
    if info.address_qualifier not in ("private", "unknown"):
        raise _core.InvalidArgumentError(
            f"{describe(index, info)} is a pointer: pass an array (or a Buffer), not {value!r}")
    want, width, base = element_type(info.type_name)
    if isinstance(value, (np.generic, np.ndarray)):
        arr = np.ascontiguousarray(value)
        check_plain_array(index, arr)
        arr = in_host_order(arr)
        if want is not None and want.kind == "u" and arr.dtype.kind == "i" and arr.size == width:
            arr = _signed_as_unsigned(index, info, arr, want, base)
        if want is not None and (arr.dtype != want or arr.size != width):
            raise TypeError(f"{describe(index, info)} takes one {base}; got "
                            f"{arr.size} x {arr.dtype} (use np.{want.name}(...)"
                            f"{'' if width == 1 else f' array of {width}'})")
        return arr
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{describe(index, info)}: cannot pass {type(value).__name__}; use a "
                        "number, a NumPy scalar, an array (for pointers) or LocalMemory(nbytes)")
    if want is None or width != 1:
        raise TypeError(f"{describe(index, info)} is declared '{info.type_name}': pass a NumPy "
                        "value of the right width instead of a Python number")
    if want.kind in "iub":
        if not float(value).is_integer():
            raise _core.InvalidArgumentError(f"{describe(index, info)}: {value!r} is no integer")
        if want.kind != "b":
            lim = np.iinfo(want)
            if not lim.min <= value <= lim.max:
                raise _core.InvalidArgumentError(f"{describe(index, info)}: {value!r} does not fit")
    return np.array(value, dtype=want)
