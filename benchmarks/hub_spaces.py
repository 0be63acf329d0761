"""The Auto-Tuning Benchmark Hub's brute-forced spaces that benchmarks/strategies.py replays:
which spaces, with which restrictions, and each one read from its Kernel Tuner cache file into
the allowed configurations, their recorded times and the optimum.

The Hub: github.com/AutoTuningAssociation/benchmark_hub (MIT licence). Where it is absent, the
tests' small recordings (tests/data) stand in: they check the machinery and say nothing about
search quality.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# The Hub's tuning scripts' restrictions: kernels/convolution_milo.py and kernels/gemm_milo.py
# of benchmark_hub (Kernel Tuner string expressions over the parameters).
CONVOLUTION = ["use_padding==0 or block_size_x % 32 != 0", "block_size_x*block_size_y<=1024",
               "use_padding==0 or use_shmem != 0",
               "use_shmem == 0 or (((block_size_x*tile_size_x+(filter_width-1)))*"
               "((block_size_y*tile_size_y+(filter_height-1)))) < 12*1024"]
GEMM = ["KWG % KWI == 0", "MWG % (MDIMC * VWM) == 0", "NWG % (NDIMC * VWN) == 0",
        "MWG % (MDIMA * VWM) == 0", "NWG % (NDIMB * VWN) == 0",
        "KWG % ((MDIMC * NDIMC)/MDIMA) == 0", "KWG % ((MDIMC * NDIMC)/NDIMB) == 0",
        "not (MWG == 128 and NWG == 128 and MDIMC == 8 and NDIMC == 8)"]
KT_GEMM = "currently_unused/cachefiles/KernelTuner data/gemm"
HUB_SPACES = {
    "convolution A100": ("cachefiles/convolution_milo/A100.json.gz", CONVOLUTION),
    "convolution A4000": ("cachefiles/convolution_milo/A4000.json.gz", CONVOLUTION),
    "convolution A6000": ("cachefiles/convolution_milo/A6000.json.gz", CONVOLUTION),
    "GEMM RTX 3090": (f"{KT_GEMM}/RTX_3090.json.gz", GEMM),
    "GEMM RTX 2080 Ti": (f"{KT_GEMM}/RTX_2080_Ti.json.gz", GEMM),
    "GEMM Titan RTX": (f"{KT_GEMM}/RTX_Titan.json.gz", GEMM),
}
# The Hub's other convolution spaces, kept out of every design choice of auto: --held-out.
HELD_OUT_SPACES = {
    "convolution MI250X": ("cachefiles/convolution_milo/MI250X.json.gz", CONVOLUTION),
    "convolution W7800": ("cachefiles/convolution_milo/W7800.json.gz", CONVOLUTION),
    "convolution W6600": ("cachefiles/convolution_milo/W6600.json.gz", CONVOLUTION),
}
# The tests' recordings (Kernel Tuner's own test files), for a run without the Hub.
SMALL_SPACES = {
    "vector_add RTX A4000 (test file)": (ROOT / "tests/data/kernel_tuner/test_cache_file.json", []),
    "vector_add RTX 4000 Ada (test file)": (
        ROOT / "tests/data/kernel_tuner/test_cache_time_energy.json", []),
}


def hub_dir(given: str | None) -> Path | None:
    for candidate in (given, os.environ.get("PYCLPERF_HUB"), ROOT / "shared/benchmark_hub",
                      ROOT.parent / "shared/benchmark_hub"):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


def spaces(hub: Path | None, names: list[str] | None,
           held_out: bool = False) -> dict[str, tuple[Path, list[str]]]:
    """The spaces to run: the Hub's six (``held_out``: its held-out ones), those of them its
    checkout holds, or without the Hub the tests' small recordings; ``names``: only these."""
    if hub is None:
        if held_out:
            raise SystemExit("--held-out needs the Hub: give --hub or set PYCLPERF_HUB")
        found = {n: (Path(p), r) for n, (p, r) in SMALL_SPACES.items()}
    else:
        table = HELD_OUT_SPACES if held_out else HUB_SPACES
        found = {n: (hub / p, r) for n, (p, r) in table.items() if (hub / p).is_file()}
        missing = [n for n, (p, _) in table.items() if not (hub / p).is_file()]
        if missing:
            print(f"not in {hub}: {', '.join(missing)}", file=sys.stderr)
    if names:
        found = {n: v for n, v in found.items() if n in names}
    return found


# --- one space ------------------------------------------------------------------------------------
class Space:
    """A recorded space: its parameters, restrictions, allowed configurations and optimum."""

    def __init__(self, name: str, path: Path, restrictions: list[str]) -> None:
        from pyclperf.tuner.replay import load
        from pyclperf.tuner.restrictions import compile_restrictions
        from pyclperf.tuner.searchspace import Space as Configs

        self.name, self.path, self.restrictions = name, path, restrictions
        self.rec = load(path)
        self.params = {k: list(v) for k, v in self.rec.tune_params.items()}
        self.kernel = self.rec.kernel_name or "kernel"
        size = self.rec.problem_size
        self.problem_size = tuple(size) if isinstance(size, list) else (size or 1)
        configs = Configs(self.params, compile_restrictions(restrictions, list(self.params)))
        self.allowed = [configs.config(i) for i in configs.allowed_ids]
        times = [self.rec.lookup(c) for c in self.allowed]
        valid = [r.time_ms for r in times if r is not None and r.time_ms is not None]
        self.optimum = min(valid)
        self.size = len(self.allowed)

    def fraction(self, best: float | None) -> float:
        return 0.0 if best is None else self.optimum / best

    def kt_cache(self, folder: Path) -> Path:
        """The recording as a plain JSON file (Kernel Tuner reads no gzip)."""
        out = folder / (self.path.name.removesuffix(".gz"))
        if not out.exists():
            raw = self.path.read_bytes()
            out.write_bytes(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
        return out

    def t4(self, folder: Path) -> Path:
        """The allowed configurations as a T4 results file, for the methodology's statistics."""
        out = folder / f"{self.name.replace(' ', '_')}_T4.json"
        results = []
        for c in self.allowed:
            r = self.rec.lookup(c)
            if r is None:
                continue
            results.append({
                "configuration": c, "objectives": ["time"],
                "times": {"compilation": r.compile_ms, "validation": r.verification_ms,
                          "benchmark": r.benchmark_ms, "framework": 0.0, "search_algorithm": 0.0,
                          "runtimes": r.times_ms or ([r.time_ms] if r.time_ms else [])},
                "invalidity": "correct" if r.time_ms is not None else "runtime",
                "correctness": 1 if r.time_ms is not None else 0,
                "measurements": [{"name": "time", "value": r.time_ms if r.time_ms is not None
                                  else "RuntimeFailedConfig", "unit": "ms"}]})
        out.write_text(json.dumps({"schema_version": "1.0.0",
                                   "metadata": {"timeunit": "milliseconds"}, "results": results}))
        return out
