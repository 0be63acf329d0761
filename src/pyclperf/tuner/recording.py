"""A recorded tuning run, read back so a search can be replayed instead of measured.

Two formats are read: Kernel Tuner's cache file (what ``tune_kernel(..., cache=...)`` writes and
what the Auto-Tuning Benchmark Hub publishes, gzipped or not) and a T4 results file (the open
autotuning results schema). A Recording answers, for one configuration, what the file says it
gave: a time in milliseconds or why it failed, how long compiling, verifying and benchmarking it
took (the simulated time a replay charges against a time limit, as Kernel Tuner's simulation
mode does), and any other figure recorded beside the time (a metric, an energy).

Configurations are matched by their values as the file's keys write them (Kernel Tuner's cache
key: the values str()-ed in the file's parameter order, comma-joined).
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .ktcache import parse_text

# A search space that ships with pyclperf, so that searches can be replayed and compared on any
# machine: a tiled SGEMM (benchmarks/kernels/sgemm_tiled.cl, 256^3) brute-forced on a CPU
# OpenCL device (PoCL) by benchmarks/record_space.py, every configuration verified against NumPy
# before it was timed. ``Recording(EXAMPLE).recorded_with`` says where, when and under which
# restrictions it was recorded.
EXAMPLE = Path(__file__).parent / "data" / "sgemm_pocl.json.gz"

# Kernel Tuner's failure markers -> the status a replayed row carries.
_FAILED = {"InvalidConfig": "skipped", "CompilationFailedConfig": "build failed",
           "RuntimeFailedConfig": "launch failed", "ErrorConfig": "invalid"}
# T4 invalidity classes -> the same.
_T4_FAILED = {"compile": "build failed", "runtime": "launch failed", "correctness": "wrong result",
              "constraints": "skipped"}
_TIMING_FIELDS = ("time", "times", "compile_time", "verification_time", "benchmark_time",
                  "strategy_time", "framework_time", "timestamp")


@dataclass
class Recorded:
    """What a file recorded for one configuration (times in milliseconds)."""

    time_ms: float | None                 # None where it failed
    status: str                           # "replayed", or the failure it recorded
    error: str = ""
    compile_ms: float = 0.0
    verification_ms: float = 0.0
    benchmark_ms: float = 0.0
    times_ms: list[float] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)   # metrics, energy, ...

    @property
    def cost_s(self) -> float:
        """The seconds it took to produce (compile + verify + benchmark)."""
        return (self.compile_ms + self.verification_ms + self.benchmark_ms) / 1e3


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def _read_json(path: Path) -> Any:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":                  # gzip's magic, whatever the file is called
        raw = gzip.decompress(raw)
    text = raw.decode("utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return parse_text(text)                       # a Kernel Tuner cache left open by a crash


class Recording:
    """A Kernel Tuner cache or T4 results file, indexed by configuration."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"replay: no file {str(self.path)!r}")
        try:
            data = _read_json(self.path)
        except (UnicodeDecodeError, OSError, ValueError) as e:
            raise ValueError(f"replay: {self.path} is neither a Kernel Tuner cache nor a T4 "
                             f"results file ({e})") from None
        self.entries: dict[str, Recorded] = {}
        self._figures: list[str] | None = None
        if isinstance(data, dict) and "cache" in data and "tune_params_keys" in data:
            self.kind = "Kernel Tuner cache"
            self._from_cache(data)
        elif isinstance(data, dict) and isinstance(data.get("results"), list):
            self.kind = "T4 results"
            self._from_t4(data)
        else:
            raise ValueError(f"replay: {self.path} is neither a Kernel Tuner cache nor a T4 "
                             "results file (no 'cache' with 'tune_params_keys', no 'results')")
        self.objective = "time"
        # What pyclperf's own recordings say of themselves (benchmarks/record_space.py).
        self.recorded_with: dict[str, Any] = dict(data.get("pyclperf_recording") or {}) \
            if isinstance(data, dict) else {}

    # --- reading ------------------------------------------------------------------------------
    def _from_cache(self, data: Mapping[str, Any]) -> None:
        self.keys: list[str] = [str(k) for k in data["tune_params_keys"]]
        self.tune_params: dict[str, list[Any]] = {k: list(v) for k, v in
                                                  dict(data.get("tune_params") or {}).items()}
        self.device_name = data.get("device_name")
        self.kernel_name = data.get("kernel_name")
        self.problem_size = data.get("problem_size")
        entries = data["cache"]
        if not isinstance(entries, dict):
            raise ValueError(f"replay: {self.path}'s 'cache' is not an object")
        for key, e in entries.items():
            if not isinstance(e, dict):
                continue
            t = e.get("time")
            ms = _number(t)
            status = "replayed" if ms is not None else _FAILED.get(str(t), "invalid")
            figures = {k: v for k, v in e.items()
                       if k not in self.keys and k not in _TIMING_FIELDS and not k.startswith(("pyclperf_", "__"))}
            self.entries[str(key)] = Recorded(
                ms, status, "" if ms is not None else str(t),
                _number(e.get("compile_time")) or 0.0, _number(e.get("verification_time")) or 0.0,
                _number(e.get("benchmark_time")) or 0.0,
                [float(x) for x in e.get("times") or [] if _number(x) is not None], figures)

    def _from_t4(self, data: Mapping[str, Any]) -> None:
        results = [r for r in data["results"] if isinstance(r, dict)
                   and isinstance(r.get("configuration"), dict)]
        if not results:
            raise ValueError(f"replay: {self.path} holds no T4 result with a configuration")
        self.keys = list(results[0]["configuration"])
        values: dict[str, list[Any]] = {k: [] for k in self.keys}
        self.device_name = self.kernel_name = self.problem_size = None
        for r in results:
            cfg = r["configuration"]
            for k in self.keys:
                if k in cfg and cfg[k] not in values[k]:
                    values[k].append(cfg[k])
            figures: dict[str, Any] = {}
            ms = None
            for m in r.get("measurements") or []:
                if isinstance(m, dict) and "name" in m:
                    if m["name"] == "time":
                        ms = _number(m.get("value"))
                    else:
                        figures[str(m["name"])] = m.get("value")
            times = r.get("times") or {}
            runtimes = [float(x) for x in times.get("runtimes") or [] if _number(x) is not None]
            invalidity = str(r.get("invalidity", "correct"))
            if invalidity != "correct":
                ms = None
            if ms is None and invalidity == "correct" and runtimes:
                ms = sum(runtimes) / len(runtimes)
            status = "replayed" if ms is not None else _T4_FAILED.get(invalidity, "launch failed")
            compile_ms = _number(times.get("compilation", times.get("compilation_time"))) or 0.0
            # T4 records no benchmarking time of its own: the runtimes add up to it.
            bench = _number(times.get("benchmark")) or float(sum(runtimes))
            self.entries[self.key(cfg)] = Recorded(
                ms, status, "" if ms is not None else invalidity, compile_ms,
                _number(times.get("validation")) or 0.0, bench, runtimes, figures)
        self.tune_params = values

    # --- answering ----------------------------------------------------------------------------
    def key(self, config: Mapping[str, Any]) -> str:
        return ",".join(str(config[k]) for k in self.keys)

    def check_params(self, names: Sequence[str]) -> None:
        """The tuned parameters must be the file's: a mismatch names both sides' extras."""
        mine, theirs = set(names), set(self.keys)
        if mine != theirs:
            parts = []
            if mine - theirs:
                parts.append(f"the file has no {', '.join(sorted(mine - theirs))}")
            if theirs - mine:
                parts.append(f"the run does not tune {', '.join(sorted(theirs - mine))}")
            raise ValueError(f"replay: {self.path} records other parameters than this run "
                             f"tunes: {'; '.join(parts)}")

    def lookup(self, config: Mapping[str, Any]) -> Recorded | None:
        return self.entries.get(self.key(config))

    def __len__(self) -> int:
        return len(self.entries)

    def figures(self) -> list[str]:
        """The names of the numeric figures recorded beside the time (for objectives). Worked
        out once: a file is read once per process and replayed many times (a benchmark's seeds),
        and looking through every entry each time cost a tenth of a 100-evaluation replay."""
        if self._figures is None:
            names: dict[str, None] = {}
            for e in self.entries.values():
                for k, v in e.figures.items():
                    if _number(v) is not None:
                        names.setdefault(k)
            self._figures = list(names)
        return list(self._figures)


