"""The CPU name PoCL from PyPI compiles kernels for, where its own choice cannot build.

pocl-binary-distribution 3.0 (the newest on PyPI, from 2022) hands clang, as ``-target-cpu``,
the host CPU name its bundled LLVM 14 detects. For an x86 CPU newer than LLVM 14 (an AMD EPYC
of family 1Ah, Zen 5: LLVM 14 names AMD families up to 19h) that name is ``generic``, which
clang 14 refuses: every build fails with "unknown target CPU 'generic'". PoCL 5.0 added the
variable POCL_LLVM_CPU_NAME to override the name; 3.0 reads no variable for it and takes no
build option for it (it sets the CPU after parsing the options).

So for that one library, known by the exact code of its exported ``pocl_get_llvm_cpu_name``,
pyclperf replaces that function in this process's memory (the file is not touched) by one that
returns another name, before PoCL first calls it (when OpenCL lists the devices):

* POCL_LLVM_CPU_NAME where the user set it (the variable PoCL 5.0 and later read themselves);
* else, only where PoCL detects ``generic`` (or nothing), the CPU that PoCL's own kernel library
  for this host was compiled for (``haswell`` for its AVX2 variant, ``skylake-avx512`` for its
  AVX-512 one, ...): PoCL picks the variant from the CPU's features and already runs its code
  here, so the name asks nothing more of the CPU, and kernels and library agree on their target
  attributes. It is the name Debian's PoCL gives such a host too.

For any other PoCL build the name goes into POCL_LLVM_CPU_NAME instead (never over the
user's value). This module imports nothing of pyclperf: tests load it on its own.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
from typing import Any, MutableMapping

ENV = "POCL_LLVM_CPU_NAME"
SYMBOL = "pocl_get_llvm_cpu_name"

# PoCL 3.0's kernel library variants for x86-64 (its getX86KernelLibName), each with the CPU it
# was compiled for and the features PoCL requires for it, as /proc/cpuinfo spells them (LLVM's
# lzcnt is "abm", bmi is "bmi1", sse4.1 is "sse4_1"). PoCL takes the last row that matches.
KERNELLIB_VARIANTS: tuple[tuple[str, str, frozenset[str]], ...] = (
    ("sse2", "x86-64", frozenset({"sse2"})),
    ("ssse3", "core2", frozenset({"ssse3", "cx16"})),
    ("sse41", "penryn", frozenset({"sse4_1", "cx16"})),
    ("avx", "sandybridge", frozenset({"avx", "cx16", "popcnt"})),
    ("avx_f16c", "ivybridge", frozenset({"avx", "cx16", "popcnt", "f16c"})),
    ("avx_fma4", "bdver1", frozenset({"avx", "cx16", "popcnt", "xop", "fma4"})),
    ("avx2", "haswell", frozenset({"avx", "avx2", "cx16", "popcnt", "abm", "f16c", "fma", "bmi1",
                                   "bmi2"})),
    ("avx512", "skylake-avx512", frozenset({"avx512f"})),
)

# pocl_get_llvm_cpu_name as pocl-binary-distribution 3.0 (libpocl-21062cec.so) ships it, all 83
# bytes up to its last instruction: call LLVM's getHostCPUName, copy the name with malloc and
# strncpy. The calls are rip-relative, so the bytes are the same wherever the library is mapped.
POCL30_CODE = bytes.fromhex(
    "55534883ec08e8058ab0034885d274304889c54889d3488d7a01e841b1ecff4889da4889ee4889c7e843a0ecff"
    "c60418004883c4085b5dc30f1f840000000000bf08000000bb07000000488d2d140bc603ebc7")
# The replacement: lea rdi, [rip+12] (the name stored after the code); mov rax, strdup; jmp rax.
# A tail call, so the caller gets a malloc'd copy it may free, as from PoCL's own function.
_STUB_HEAD = bytes.fromhex("488d3d0c000000") + b"\x48\xb8"
_STUB_TAIL = b"\xff\xe0"
_MAX_NAME = len(POCL30_CODE) - len(_STUB_HEAD) - 8 - len(_STUB_TAIL) - 1

BUILD_FAILURE_HINT = (
    "the OpenCL compiler does not know the CPU name it was given. With PoCL from PyPI, set "
    f"{ENV} to one it knows (x86-64 always works; pyclperf applies it to PyPI's PoCL 3.0 too), "
    "or install the distribution's PoCL (Debian/Ubuntu: apt install pocl-opencl-icd), which "
    "pyclperf then uses in place of PyPI's")


class UnknownBuild(Exception):
    """The library's pocl_get_llvm_cpu_name is not the one this module knows how to replace."""


def cpu_flags(path: str = "/proc/cpuinfo") -> frozenset[str]:
    """The CPU feature flags the kernel reports (the first processor's), or none if unreadable."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


def kernellib_cpu(flags: frozenset[str]) -> tuple[str, str]:
    """(variant, CPU name) of the kernel library PoCL 3.0 picks for a CPU with ``flags``; the
    SSE2 one, which every x86-64 CPU runs, where the flags are unknown."""
    variant, cpu = KERNELLIB_VARIANTS[0][:2]
    for name, target, needs in KERNELLIB_VARIANTS:
        if needs <= flags:
            variant, cpu = name, target
    return variant, cpu


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.free.argtypes = [ctypes.c_void_p]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return libc


def _address(lib: Any) -> int:
    return int(ctypes.cast(getattr(lib, SYMBOL), ctypes.c_void_p).value or 0)


def current_name(lib: Any) -> str:
    """The CPU name PoCL's ``pocl_get_llvm_cpu_name`` returns now (it is PoCL's own answer)."""
    raw = ctypes.CFUNCTYPE(ctypes.c_void_p)(_address(lib))()
    if not raw:
        return ""
    try:
        return ctypes.string_at(raw).decode("ascii", "replace")
    finally:
        _libc().free(raw)


def replace(lib: Any, name: str) -> None:
    """Make PoCL 3.0's ``pocl_get_llvm_cpu_name`` return ``name`` from now on, in this process.

    UnknownBuild where the function is not PoCL 3.0's (nor already replaced here), ValueError for
    a name that does not fit, OSError where the code page cannot be made writable."""
    raw = name.encode("ascii", "replace")  # a non-ASCII character becomes '?', refused below
    if not raw or b"?" in raw or len(raw) > _MAX_NAME or any(c <= 32 or c >= 127 for c in raw):
        raise ValueError(f"{ENV}={name!r}: a CPU name is 1 to {_MAX_NAME} printable characters")
    addr = _address(lib)
    code = ctypes.string_at(addr, len(POCL30_CODE))
    if code != POCL30_CODE and not code.startswith(_STUB_HEAD):
        raise UnknownBuild(f"{SYMBOL} is not PoCL 3.0's")
    libc = _libc()
    strdup = int(ctypes.cast(libc.strdup, ctypes.c_void_p).value or 0)
    stub = _STUB_HEAD + struct.pack("<Q", strdup) + _STUB_TAIL + raw + b"\0"
    page = os.sysconf("SC_PAGE_SIZE")
    start = addr - addr % page
    prot_rx = 0x1 | 0x4  # PROT_READ | PROT_EXEC, as the loader mapped it
    if libc.mprotect(start, addr + len(stub) - start, prot_rx | 0x2) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mprotect: {os.strerror(err)}")
    ctypes.memmove(addr, stub, len(stub))
    libc.mprotect(start, addr + len(stub) - start, prot_rx)


def _load(library: str) -> Any:
    return ctypes.CDLL(library)


def configure(library: str, env: MutableMapping[str, str]) -> str:
    """Give PoCL from PyPI, at ``library``, a CPU name it can build for where it needs one (see
    the module's docstring); return one sentence (no "; ": the ICD note is split on it) saying
    which name it builds for and why."""
    if platform.machine() != "x86_64":
        return "PoCL from PyPI: CPU name left to PoCL (not x86-64)"
    try:
        lib = _load(library)
        detected = current_name(lib)
    except (OSError, AttributeError) as exc:
        return f"PoCL from PyPI: CPU name left to PoCL ({SYMBOL} not callable: {exc})"
    user = env.get(ENV, "")
    if user:
        wanted, why = user, f"{ENV} set"
    elif detected in ("", "generic"):
        variant, wanted = kernellib_cpu(cpu_flags())
        why = (f"its LLVM cannot build for '{detected or 'generic'}', so the CPU of the "
               f"'{variant}' kernel library it runs on this CPU, unless {ENV} names another")
    else:
        return f"PoCL from PyPI builds for CPU '{detected}'"
    if wanted == detected:
        return f"PoCL from PyPI builds for CPU '{detected}' ({why})"
    try:
        replace(lib, wanted)
    except UnknownBuild:
        env.setdefault(ENV, wanted)
        return (f"PoCL from PyPI detects CPU '{detected}', {ENV}={wanted} set for it ({why}, "
                "read by PoCL 5.0 and later, while older ones build for what they detect)")
    except (ValueError, OSError) as exc:
        return f"PoCL from PyPI builds for CPU '{detected}': not given '{wanted}' ({exc})"
    got = current_name(lib)
    return f"PoCL from PyPI detects CPU '{detected}', builds for '{got}' ({why})"
