"""Running code on Oclgrind, the OpenCL device simulator, and reading what it reports.

Oclgrind executes every work-item of a launch in an interpreter and checks each memory access:
out of a buffer's bounds, data races between work-items (``OCLGRIND_DATA_RACES``), uses of
uninitialised values (``OCLGRIND_UNINITIALIZED``), barrier divergence, and misuse of the API
(``OCLGRIND_CHECK_API``). It writes one report per offending access to the file named by
``OCLGRIND_LOG`` (API errors go to stderr).

Work runs in a child process (``python -m pyclperf.device.oclgrind JOB``) whose ICD loader
sees Oclgrind alone: its vendors directory holds one .icd file naming Oclgrind's ICD library
(pyclperf.device.icd.find_oclgrind). A child because Oclgrind carries its own LLVM, which must not
meet PoCL's in one process; because the simulator may run for long, and a timeout must be able
to stop it; and because the environment variables that configure it are read as it loads.

The child calls a function named by the job ("module:function") with an Oclgrind Context, the
job's payload and ``mark()``, which returns how far the log has grown: a caller that runs
several things in one child splits the log at those marks (``split``) and reads each part with
``parse``.
"""

from __future__ import annotations

import importlib
import os
import pickle
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from typing import Any, Mapping

from .. import _core
from . import icd as _icd

# Oclgrind's simulated addresses (core/Memory.cpp, 64-bit hosts): the top 16 bits number the
# buffer, the rest is the byte offset in it. Buffer 0 is NULL.
OFFSET_BITS = 48
DEFAULT_TIMEOUT_S = 120.0
# Oclgrind stops reporting after this many reports in a process. Its own default, 1000, is
# too few: one wrong index reports once per work-item, and a launch of a few thousand
# work-items with two such bugs hid the second (a tiled GEMM's overrun of local memory hid
# its write past C).
DEFAULT_MAX_REPORTS = 20000

OUT_OF_BOUNDS = "out of bounds"
DATA_RACE = "data race"
UNINITIALIZED = "uninitialized"
DIVERGENCE = "divergence"
INVALID = "invalid"
# Not a problem in the kernel: Oclgrind stopped reporting at max_reports, so what came after is
# missing from the list (never silently).
REPORT_LIMIT = "report limit"
KINDS = (OUT_OF_BOUNDS, DATA_RACE, UNINITIALIZED, DIVERGENCE, INVALID, REPORT_LIMIT)


class MemcheckError(_core.PyclperfError):
    """Oclgrind could not be run, did not finish in time, or crashed. ``findings`` holds what it
    had reported before it stopped."""

    def __init__(self, message: str, findings: list["Finding"] | None = None) -> None:
        super().__init__(message)
        self.findings = findings or []


@dataclass(frozen=True)
class Finding:
    """One problem Oclgrind found, with every identical report of it merged (``count``).

    ``kind`` is one of KINDS; ``message`` Oclgrind's first line for the first report, with what
    pyclperf could work out added (which argument's buffer, how far past its end, the other
    line of a race); ``line`` and ``code`` the source line (1-based, in the program as built:
    shipped kernels have their includes in place) and its text where Oclgrind gives one;
    ``argument`` the kernel parameter whose memory was accessed, where that can be determined;
    ``work_item`` the first report's work-item (or work-group).
    """

    kind: str
    message: str
    kernel: str
    line: int | None = None
    code: str | None = None
    argument: str | None = None
    work_item: str | None = None
    count: int = 1

    def __str__(self) -> str:
        where = f"line {self.line}" + (f" ({self.code})" if self.code else "") if self.line else "no line"
        arg = f", argument '{self.argument}'" if self.argument else ""
        times = f" [{self.count} reports]" if self.count > 1 else ""
        return f"{self.kind} in kernel '{self.kernel}' at {where}{arg}: {self.message}{times}"


@dataclass
class Memory:
    """What the caller knows of the launch's memory, for naming arguments in findings:
    ``buffers`` {Oclgrind buffer number: (parameter name, bytes)} for global and constant
    arrays, ``locals`` {parameter name: bytes} for LocalMemory arguments, ``local_names`` every
    __local name in the source (parameters and arrays declared in kernels)."""

    buffers: Mapping[int, tuple[str, int]]
    locals: Mapping[str, int]
    local_names: frozenset[str] = frozenset()


# --- reading the log ------------------------------------------------------------------------
_ADDRESS = re.compile(r"(global|local|constant|private) memory address 0x([0-9a-fA-F]+)")
_SIZE = re.compile(r"of size (\d+)")
_LINE = re.compile(r"At line (\d+) \(column \d+\) of [^\n]*:")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_SUPPRESSED = re.compile(r"^Oclgrind: (\d+) errors generated")
API_ERROR = "Oclgrind - OpenCL runtime error detected"


def _kind(headline: str) -> str:
    if (headline.startswith("Invalid ") and " of size " in headline) or \
            " exceeds static array size" in headline:
        return OUT_OF_BOUNDS
    if " data race at " in headline:
        return DATA_RACE
    if "ninitialized" in headline:
        return UNINITIALIZED
    if "divergence" in headline:
        return DIVERGENCE
    return INVALID


def _blocks(text: str) -> list[list[str]]:
    """Reports: a report starts with a line at column 0 (the rest of it is indented)."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if line and not line[0].isspace():
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
    return blocks


def _field(lines: list[str], name: str) -> str | None:
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(name + ":"):
            return stripped[len(name) + 1:].strip()
    return None


def _locations(lines: list[str]) -> list[tuple[int, str | None]]:
    """(line, its text) for every "At line" of a report, in order."""
    found = []
    for i, line in enumerate(lines):
        m = _LINE.search(line)
        if m:
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            found.append((int(m.group(1)), nxt or None))
    return found


def _global_argument(address: int, size: int, memory: Memory) -> tuple[str | None, str]:
    buf, offset = address >> OFFSET_BITS, address & ((1 << OFFSET_BITS) - 1)
    if buf not in memory.buffers:
        return None, ""
    name, nbytes = memory.buffers[buf]
    return name, _where(f"'{name}'", nbytes, offset, size)


def _where(what: str, nbytes: int, offset: int, size: int) -> str:
    """Where an access of ``size`` bytes at ``offset`` lies in memory of ``nbytes`` bytes."""
    at = f"byte {offset}" + (f" (index {offset // size} of {size}-byte elements)" if size > 1 else "")
    if offset + size > nbytes:
        return f"{what} holds {nbytes} bytes; the access is at {at}, past its end"
    return f"{what} holds {nbytes} bytes; the access is at {at}"


def _local_argument(code: str | None, offset: int, size: int, memory: Memory) -> tuple[str | None, str]:
    """Oclgrind numbers a work-group's __local allocations in no order pyclperf can see, so
    the argument is read from the source line instead: named only where that line mentions
    exactly one __local name and it is a LocalMemory argument the access lies past."""
    if not code:
        return None, ""
    used = {w for w in _IDENT.findall(code)} & (set(memory.locals) | memory.local_names)
    if len(used) != 1:
        return None, ""
    name = used.pop()
    nbytes = memory.locals.get(name)
    if nbytes is None or offset + size <= nbytes:
        return None, ""
    return name, _where(f"LocalMemory '{name}'", nbytes, offset, size)


def _one(lines: list[str], memory: Memory | None) -> tuple[Finding, tuple[Any, ...]]:
    """A report as a finding, and what identifies it among reports of the same access by
    other work-items (which differ only in address and work-item)."""
    headline = lines[0].strip()
    kind = INVALID if headline == API_ERROR else _kind(headline)
    locations = _locations(lines)
    line, code = locations[0] if locations else (None, None)
    message, argument = headline, None
    m = _ADDRESS.search(headline)
    if m and memory is not None:
        space, address = m.group(1), int(m.group(2), 16)
        size_m = _SIZE.search(headline)
        size = int(size_m.group(1)) if size_m else 1
        if space in ("global", "constant"):
            argument, note = _global_argument(address, size, memory)
        elif space == "local" and kind == OUT_OF_BOUNDS:
            argument, note = _local_argument(code, address & ((1 << OFFSET_BITS) - 1), size, memory)
        else:
            note = ""
        if note:
            message += f" ({note})"
    if kind == DATA_RACE and len(locations) > 1:
        message += f"; the other access at line {locations[1][0]}: {locations[1][1]}"
    if headline == API_ERROR:
        message = "; ".join(x.strip() for x in lines if x.strip())
    kernel = _field(lines, "Kernel") or ""
    entity = _field(lines, "Entity") or _field(lines, "First entity") or _field(lines, "Work-group")
    key = (kind, kernel, line, argument, re.sub(r"0x[0-9a-fA-F]+|^Index \(\d+\)", "", headline),
           tuple(locations[1:]) if kind == DATA_RACE else ())
    return Finding(kind, message, kernel, line, code, argument, entity), key


def parse(text: str, memory: Memory | None = None) -> tuple[list[Finding], int]:
    """Oclgrind's reports in ``text`` as findings, identical ones merged (in order of first
    appearance), and the number of reports after which Oclgrind stopped reporting (0 where it
    did not stop). A stop is also the last finding, of kind REPORT_LIMIT."""
    merged: dict[tuple[Any, ...], Finding] = {}
    limit = 0
    for lines in _blocks(text):
        stop = _SUPPRESSED.match(lines[0])
        if stop:
            limit = int(stop.group(1))
            continue
        if lines[0].startswith("Oclgrind:"):
            continue  # Oclgrind's own notes, not reports about the kernel
        f, key = _one(lines, memory)
        old = merged.get(key)
        merged[key] = f if old is None else replace(old, count=old.count + 1)
    found = list(merged.values())
    if limit:
        kernel = found[-1].kernel if found else ""
        found.append(Finding(REPORT_LIMIT, f"Oclgrind stopped reporting after {limit} reports "
                             "(max_reports): later problems are not listed", kernel))
    return found, limit


def api_errors(stderr: str) -> str:
    """The API error reports in a child's stderr (Oclgrind prints them there, not in the log)."""
    parts = stderr.split(API_ERROR)
    return "".join(API_ERROR + p.split("\n\n")[0] + "\n" for p in parts[1:])


def split(text: str, marks: list[int]) -> list[str]:
    """The log cut at byte offsets ``marks`` (from ``mark()`` in the child): len(marks) + 1 parts."""
    data = text.encode("utf-8", errors="replace")
    edges = [0, *marks, len(data)]
    return [data[a:b].decode("utf-8", errors="replace") for a, b in zip(edges, edges[1:])]


# --- the child process ----------------------------------------------------------------------
@dataclass
class ChildRun:
    """What a child run left: the target's return value, Oclgrind's log, the child's stderr."""

    result: Any
    log: str
    stderr: str


def environment(library: str, log: str, *, data_races: bool, uninitialized: bool,
                max_reports: int, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: the ICD loader sees Oclgrind alone, Oclgrind logs to ``log``."""
    env = dict(os.environ if base is None else base)
    env.pop("OCL_ICD_FILENAMES", None)  # the Khronos loader would add these libraries
    for name in ("OCLGRIND_QUICK", "OCLGRIND_INTERACTIVE"):  # skips work / waits for a user
        env.pop(name, None)
    env["OCL_ICD_VENDORS"] = _icd.write_vendors_dir({"oclgrind.icd": library}, _icd._cache_root(env))
    env["OCL_ICD_ASSUME_ICD_EXTENSION"] = "1"  # the PyPI library exports only ICD entry points
    env["PYCLPERF_NO_ICD_DISCOVERY"] = "1"
    env.update(OCLGRIND_LOG=log, OCLGRIND_CHECK_API="1", OCLGRIND_MAX_ERRORS=str(int(max_reports)),
               OCLGRIND_DATA_RACES="1" if data_races else "0",
               OCLGRIND_UNINITIALIZED="1" if uninitialized else "0")
    # The child imports this pyclperf, wherever it was imported from.
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
    return env


def library_or_raise() -> str:
    lib = _icd.find_oclgrind()
    if lib is None:
        raise MemcheckError(
            "Oclgrind is not installed: `apt-get install oclgrind` (or `make deps`), or "
            "`pip install \"pyclperf[memcheck]\"`, or set PYCLPERF_OCLGRIND to its "
            "liboclgrind-rt-icd.so")
    return lib


def run_child(target: str, payload: Any, *, timeout_s: float = DEFAULT_TIMEOUT_S,
              data_races: bool = True, uninitialized: bool = True,
              max_reports: int = DEFAULT_MAX_REPORTS) -> ChildRun:
    """Run ``target`` ("module:function") on Oclgrind in a child process; re-raise what it
    raised. MemcheckError where Oclgrind is missing, the child dies, or ``timeout_s`` passes
    (its ``findings`` then those in the log so far)."""
    if timeout_s <= 0:
        raise _core.InvalidArgumentError(f"timeout_s must be positive, got {timeout_s}")
    library = library_or_raise()
    with tempfile.TemporaryDirectory(prefix="pyclperf-oclgrind-") as tmp:
        job, out, log = (os.path.join(tmp, n) for n in ("job.pickle", "result.pickle", "oclgrind.log"))
        with open(job, "wb") as f:
            pickle.dump({"target": target, "payload": payload, "result": out, "log": log}, f)
        env = environment(library, log, data_races=data_races, uninitialized=uninitialized,
                          max_reports=max_reports)
        cmd = [sys.executable, "-m", "pyclperf.device.oclgrind", job]
        try:
            proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  timeout=timeout_s, text=True, errors="replace")
        except subprocess.TimeoutExpired:
            text = _read(log)
            raise MemcheckError(f"Oclgrind did not finish within {timeout_s:g} s (it simulates "
                                "every work-item: use smaller sizes)",
                                parse(text)[0]) from None
        text = _read(log)
        if not os.path.exists(out):
            tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
            raise MemcheckError(f"the Oclgrind child process ended with status {proc.returncode} "
                                f"before finishing:\n{tail}", parse(text)[0])
        with open(out, "rb") as f:
            answer = pickle.load(f)
    if "error" in answer:
        raise answer["error"]
    return ChildRun(answer["result"], text, proc.stderr)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def _child(job_path: str) -> None:
    with open(job_path, "rb") as f:
        job = pickle.load(f)
    log = job["log"]

    def mark() -> int:
        return os.path.getsize(log) if os.path.exists(log) else 0

    try:
        from .context import Context

        ctx = Context("oclgrind")
        if "Oclgrind" not in ctx.info.platform_name:
            raise MemcheckError(f"the child's device is {ctx.info.platform_name}, not Oclgrind")
        module, _, name = job["target"].partition(":")
        target = getattr(importlib.import_module(module), name)
        answer: dict[str, Any] = {"result": target(ctx, job["payload"], mark)}
        ctx.finish()
    except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it
        try:
            pickle.dumps(exc)
            answer = {"error": exc}
        except Exception:  # noqa: BLE001 - an exception that does not pickle goes as text
            answer = {"error": MemcheckError(f"{type(exc).__name__}: {exc}")}
    with open(job["result"], "wb") as f:
        pickle.dump(answer, f)


if __name__ == "__main__":
    # Through the module's importable name, not __main__: classes pickled back to the parent
    # (MemcheckError) must be found there under the same name.
    from pyclperf.device.oclgrind import _child as child

    child(sys.argv[1])
