"""The device profile against its references, in one call, each against its criterion:

    python benchmarks/profile_h200.py --device nvidia [--clpeak "CMD"] [--json out.json]

1. ``pyclperf profile --refresh`` in a process of its own, timed by the wall clock around the
   whole command (import, context, every measurement, the file written): at most 60 s.
2. Its DRAM read ceiling against a CUDA float4 read (sum) kernel through CuPy
   (pyclperf.reference.cuda, fastest launch shape, verified), timed by CUDA events around 20
   back-to-back launches, in batches, over the same number of bytes: at least 0.99x.
3. The last-level cache size it found (where the curves reach DRAM; steps inside it, such as
   the H200's far-partition step at about half its L2, are not levels) against CUDA's
   ``l2CacheSize``
   (``cupy.cuda.runtime.getDeviceProperties(0)``): within 25%; its read bandwidth beside
   gpu-benches' published H200 L2 figures (9.1-13.5 TB/s), and its copy bandwidth (a copy
   looped inside one launch over a set the level holds) beside that read figure.
4. Its DRAM read and FP32 ceilings against clpeak's global-memory bandwidth and
   single-precision compute in the same call (at least 1.0x each): ``--clpeak "CMD"`` runs
   clpeak (e.g. ``--clpeak "clpeak/build/clpeak --cl-platform 1 --cl-device 0
   --global-bandwidth --compute-sp"``) and parses its text output; ``--clpeak-output FILE``
   parses a saved one; ``--clpeak-read-gbps`` / ``--clpeak-fp32-gflops`` take the figures.

5. ``pyclperf explain`` on the README's vector addition (notebooks/specs/vadd.json) and on the tiled
   matrix product (notebooks/specs/tiled_matmul.json, n = 1024, ``--flops 2*1024**3``) on that
   profile: the binding roof and the % of it, at most 1.05x (``--figures DIR`` keeps the
   figures).
6. The whole catalogue (``pyclperf guide``, after the profile) and each experiment's best
   point against the roof that binds it on that profile: at most 1.05x (profile_checks.py).
7. On a CPU device, the cache levels found against the caches the OS reports: each within 25%,
   and no level the OS does not list.

Prints a table (markdown, for RESULTS.md) and writes every figure to ``--json``. ``--quick``
profiles quickly and runs the guide with ``--quick`` (as it always does on a CPU device), with n = 256 for the matrix product (a
CPU device's run); ``--skip-cuda`` leaves CUDA out, ``--no-explain`` step 5, ``--no-catalogue``
step 6 (``--catalogue IDS`` runs those experiments only).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any



def _beside(name: str) -> Any:
    """A module of benchmarks/ loaded from its file: benchmarks/ stays off sys.path, where its
    distributed.py would hide Dask's package of that name from the rest of the process."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_checks = _beside("profile_checks")
catalogue_rows, os_rows, run_catalogue = _checks.catalogue_rows, _checks.os_rows, _checks.run_catalogue

PROFILE_LIMIT_S = 60.0
CUDA_LAUNCHES = 20
GPU_BENCHES_L2_TBPS = (9.1, 13.5)  # gpu-benches' published H200 L2 bandwidth range
L2_TOLERANCE = 0.25


def run_profile(device: str, quick: bool, folder: Path) -> dict[str, Any]:
    """``pyclperf profile --refresh`` in its own process, timed around the whole command."""
    cmd = [sys.executable, "-m", "pyclperf", "profile", "--device", device, "--refresh"]
    cmd += ["--quick"] if quick else []
    env = {**os.environ, "PYCLPERF_PROFILES": str(folder), "MPLBACKEND": "Agg"}
    began = time.monotonic()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - began
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    files = sorted(folder.glob("*.json"))
    if len(files) != 1:
        raise RuntimeError(f"expected one profile file in {folder}, found {[f.name for f in files]}")
    return {"seconds": seconds, "command": " ".join(cmd), "data": json.loads(files[0].read_text()),
            "printed": done.stdout}


def cuda_read(nbytes: int) -> dict[str, Any]:
    """CUDA's read kernel over ``nbytes``: fastest shape, verified, CUDA_LAUNCHES per batch."""
    from pyclperf.reference import cuda as rc

    try:
        prepared = rc.CudaReference().read_kernel(nbytes)
    except rc.CudaUnavailableError as exc:
        return {"skipped": str(exc)}
    prepared.timer.launches = CUDA_LAUNCHES
    result = prepared.measure(batches=5)
    result["how"] = (f"{prepared.name}, fastest launch shape, CUDA events around "
                     f"{CUDA_LAUNCHES} back-to-back launches (5 batches, median)")
    return result


def cuda_l2_bytes() -> dict[str, Any]:
    from pyclperf.reference import cuda as rc

    try:
        cp = rc.cupy_module()
    except rc.CudaUnavailableError as exc:
        return {"skipped": str(exc)}
    props = cp.cuda.runtime.getDeviceProperties(0)
    return {"l2_bytes": int(props["l2CacheSize"]), "name": str(props.get("name", b"?"))}


_HEADER = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 \-]*?)\s*\((GBPS|GFLOPS|GIOPS|us)\)\s*$")
_VALUE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*:\s*([0-9]+(?:\.[0-9]*)?)\s*$")


def parse_clpeak(text: str) -> dict[str, dict[str, float]]:
    """clpeak's text output as {section title: {vector type: value}}."""
    sections: dict[str, dict[str, float]] = {}
    current: dict[str, float] | None = None
    for line in text.splitlines():
        head = _HEADER.match(line)
        if head:
            current = sections.setdefault(f"{head.group(1).strip()} ({head.group(2)})", {})
            continue
        value = _VALUE.match(line)
        if value and current is not None:
            current[value.group(1)] = float(value.group(2))
        elif line.strip():
            current = None  # a line of another kind ends the section
    return sections


def clpeak_best(sections: dict[str, dict[str, float]], title: str) -> float | None:
    """The best value of the section whose title starts with ``title`` (case-insensitive)."""
    for name, values in sections.items():
        if name.lower().startswith(title.lower()) and values:
            return max(values.values())
    return None


def clpeak_figures(args: argparse.Namespace) -> dict[str, Any]:
    text, source = None, None
    if args.clpeak:
        done = subprocess.run(shlex.split(args.clpeak), capture_output=True, text=True)
        text, source = done.stdout, f"ran: {args.clpeak} (exit {done.returncode})"
    elif args.clpeak_output:
        text, source = Path(args.clpeak_output).read_text(), f"parsed {args.clpeak_output}"
    out: dict[str, Any] = {"source": source or "given as options"}
    if text is not None:
        sections = parse_clpeak(text)
        out["sections"] = sections
        out["read_gbps"] = clpeak_best(sections, "Global memory bandwidth")
        out["fp32_gflops"] = clpeak_best(sections, "Single-precision compute")
    out["read_gbps"] = args.clpeak_read_gbps or out.get("read_gbps")
    out["fp32_gflops"] = args.clpeak_fp32_gflops or out.get("fp32_gflops")
    return out


def last_level(data: dict[str, Any]) -> dict[str, Any] | None:
    """The last-level cache the profile found: the level where the curves reach DRAM (its
    steps inside, such as an L2 partition's, are not levels of their own)."""
    levels = data["caches"]
    last = [c for c in levels if c.get("last")]
    return last[-1] if last else None


def level_text(level: dict[str, Any]) -> str:
    """The level's name and what it was found from, with the steps inside it."""
    steps = "; ".join(f"{s['label']} at {s['size_bytes'] / (1 << 20):.1f} MiB" for s in level.get("steps", []))
    return f"{level['name']}, from {' and '.join(level['found_from'])}" + (f"; {steps}" if steps else "")


def _value(fig: dict[str, Any] | None) -> float | None:
    return fig["value"] if fig and fig.get("status") == "ok" else None


def _row(figure: str, ours: float | None, unit: str, reference: float | None, how: str | None,
         criterion: str, minimum: float | None = None, tolerance: float | None = None) -> dict[str, Any]:
    """One line of the table: the ratio ours / reference and whether it meets ``minimum`` (or
    lies within ``tolerance`` of 1); None where either side is missing."""
    ratio = ours / reference if ours and reference else None
    met = None
    if ratio is not None and minimum is not None:
        met = ratio >= minimum
    elif ratio is not None and tolerance is not None:
        met = abs(ratio - 1) <= tolerance
    return {"figure": figure, "ours": ours, "unit": unit, "reference": reference, "ref_how": how,
            "ratio": ratio, "criterion": criterion, "met": met}


def rows_of(prof: dict[str, Any], cuda: dict[str, Any], l2: dict[str, Any],
            clpeak: dict[str, Any]) -> list[dict[str, Any]]:
    """The table: each figure of ours, its reference, the ratio and the criterion."""
    data = prof["data"]
    c = data["ceilings"]
    read, fp32 = _value(c["dram_read"]), _value(c["fp32"])
    level = last_level(data)
    cuda_gbps = cuda.get("gbps") if cuda.get("verified") else None
    source = clpeak["source"]
    wall = {**_row("pyclperf profile, wall clock", prof["seconds"], "s", PROFILE_LIMIT_S, "the limit",
                   f"<= {PROFILE_LIMIT_S:g} s"), "ratio": None, "met": prof["seconds"] <= PROFILE_LIMIT_S}
    lo, hi = GPU_BENCHES_L2_TBPS
    return [
        wall,
        _row("DRAM read", read, "GB/s", cuda_gbps, cuda.get("how") or cuda.get("skipped") or cuda.get("detail"),
             ">= 0.99x", minimum=0.99),
        _row("DRAM read vs clpeak", read, "GB/s", clpeak.get("read_gbps"),
             f"clpeak global memory bandwidth, best ({source})", ">= 1.0x", minimum=1.0),
        _row("FP32", fp32, "GFLOP/s", clpeak.get("fp32_gflops"),
             f"clpeak single-precision compute, best ({source})", ">= 1.0x", minimum=1.0),
        _row(f"last-level cache size ({level_text(level)})"
             if level else "last-level cache size (none found)", level["size_bytes"] if level else None,
             "bytes", l2.get("l2_bytes"), "cudaDeviceProp.l2CacheSize (CuPy)" if "l2_bytes" in l2
             else l2.get("skipped"), f"within {L2_TOLERANCE:.0%}", tolerance=L2_TOLERANCE),
        _row("last-level cache read bandwidth", _value(level.get("read")) if level else None, "GB/s",
             None, f"gpu-benches' published H200 L2: {lo}-{hi} TB/s", "beside the published range"),
        _row(f"last-level cache copy bandwidth ({copy_text(level)})", _value(level.get("copy")) if level else None,
             "GB/s", _value(level.get("read")) if level else None, "the level's read figure",
             "beside its read figure"),
    ]


def copy_text(level: dict[str, Any] | None) -> str:
    """How the last level's copy figure was measured: the set and the launch shape that won."""
    copy = (level or {}).get("copy") or {}
    if copy.get("status") != "ok":
        return copy.get("reason") or "not measured"
    shape = ", ".join(f"{k} {v}" for k, v in (copy.get("shape") or {}).items())
    return f"copy_passes looped inside one launch, {copy['bytes'] / (1 << 20):.3g} MiB set, {shape}"


def _num(v: Any, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "bytes":
        from pyclperf.roofline.memory import size_text

        return size_text(v)
    return f"{v:,.1f} {unit}".rstrip()


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| figure | pyclperf | reference (how) | ratio | criterion | met |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        ref = f"{_num(r['reference'], r['unit'])} ({r['ref_how']})" if r["reference"] is not None \
            else f"- ({r['ref_how']})"
        ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "-"
        met = {True: "yes", False: "**no**", None: "-"}[r["met"]]
        lines.append(f"| {r['figure']} | {_num(r['ours'], r['unit'])} | {ref} | {ratio} | {r['criterion']} | {met} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="nvidia", help="pyclperf device spec (default: nvidia)")
    ap.add_argument("--json", default=None, help="write every figure here as JSON")
    ap.add_argument("--quick", action="store_true", help="a quick profile (a CPU device's test)")
    ap.add_argument("--skip-cuda", action="store_true", help="no CUDA reference (no CuPy here)")
    ap.add_argument("--clpeak", default=None, metavar="CMD", help="run clpeak with this command line and parse it")
    ap.add_argument("--clpeak-output", default=None, metavar="FILE", help="parse a saved clpeak output")
    ap.add_argument("--clpeak-read-gbps", type=float, default=None, help="clpeak's best global-memory bandwidth")
    ap.add_argument("--clpeak-fp32-gflops", type=float, default=None, help="clpeak's best single-precision compute")
    ap.add_argument("--no-explain", action="store_true",
                    help="skip pyclperf explain on notebooks/specs/vadd.json and notebooks/specs/tiled_matmul.json")
    ap.add_argument("--figures", default=None, metavar="DIR", help="keep the explain figures here")
    ap.add_argument("--no-catalogue", action="store_true",
                    help="skip running the catalogue and holding its best points against the roofs")
    ap.add_argument("--catalogue", default=None, metavar="IDS",
                    help="comma-separated experiments to run instead of the whole catalogue")
    ap.add_argument("--catalogue-timeout", type=float, default=1800.0, metavar="S",
                    help="seconds the whole catalogue may take (default 1800)")
    return ap.parse_args(argv)


EXAMPLES = Path(__file__).resolve().parents[1] / "notebooks" / "specs"


def run_explain(device: str, spec: str, extra: list[str], profiles: Path, work: Path,
                figures: Path | None, size: int | None = None) -> dict[str, Any]:
    """``pyclperf explain`` on a copy of an example spec (so no file lands in notebooks/specs/), on
    the profile just measured; its headline and figure. ``size`` shrinks a square spec."""
    for f in EXAMPLES.glob(f"{spec}.*"):
        (work / f.name).write_text(f.read_text())
    path = work / f"{spec}.json"
    if size is not None:  # n x n matrices: every 1024 in the spec becomes ``size``
        path.write_text(path.read_text().replace("1024", str(size)))
        extra = [e.replace("1024", str(size)) for e in extra]
    figure = (figures or work) / f"{spec}-roofline.png"
    cmd = [sys.executable, "-m", "pyclperf", "explain", str(path), "--device", device,
           "--out", str(figure), *extra]
    began = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True,
                          env={**os.environ, "PYCLPERF_PROFILES": str(profiles), "MPLBACKEND": "Agg"})
    out = {"spec": spec, "command": " ".join(cmd[1:]), "seconds": time.monotonic() - began,
           "returncode": done.returncode, "printed": done.stdout, "stderr": done.stderr[-2000:]}
    heads = [line.strip()[3:] for line in done.stdout.splitlines() if line.strip().startswith("=> ")]
    out["headline"] = heads[0] if heads else f"failed: {done.stderr.strip().splitlines()[-1:] or done.returncode}"
    stored = work / f"{spec}.jsonl"
    if stored.is_file():  # the explanation explain stored, with its share of the roof
        meta = json.loads(stored.read_text().splitlines()[0])
        out["fraction"] = (meta.get("explain") or {}).get("fraction")
    out["figure"] = str(figure) if figure.is_file() else None
    return out


def explain_row(e: dict[str, Any]) -> dict[str, Any]:
    """An explain run's row: the binding roof and the share of it, at most 1.05x (the
    explanation's own ratio, read from the results file it stored)."""
    ratio = e.get("fraction")
    return {"figure": f"explain {e['spec']}.json, best configuration", "ours": None, "unit": "",
            "reference": None, "ref_how": e["headline"], "ratio": ratio,
            "criterion": "binding roof printed, <= 1.05x it",
            "met": e["returncode"] == 0 and (ratio is None or ratio <= 1.05)}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    explained: list[dict[str, Any]] = []
    catalogue: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="pyclperf-profiles-") as folder, \
            tempfile.TemporaryDirectory(prefix="pyclperf-explain-") as work:
        prof = run_profile(args.device, args.quick, Path(folder))
        if not args.no_explain:
            figures = Path(args.figures) if args.figures else None
            if figures:
                figures.mkdir(parents=True, exist_ok=True)
            explained = [run_explain(args.device, "vadd", [], Path(folder), Path(work), figures),
                         run_explain(args.device, "tiled_matmul", ["--flops", "2*1024**3"], Path(folder),
                                     Path(work), figures, size=256 if args.quick else None)]
        if not args.no_catalogue:
            cpu = "CPU" in str(prof["data"]["device"].get("type", "")).upper()
            catalogue = run_catalogue(args.device, Path(work) / "guide", Path(folder), args.quick or cpu,
                                      args.catalogue, args.catalogue_timeout)
            catalogue["rows"] = catalogue_rows(catalogue["files"], prof["data"])
    data = prof["data"]
    print(prof["printed"])
    print(f"pyclperf profile took {prof['seconds']:.1f} s (parts: "
          + ", ".join(f"{k} {v:.1f} s" for k, v in data["timings"].items()) + ")")
    for e in explained:
        print(f"\n$ pyclperf {e['command']}  ({e['seconds']:.1f} s)\n{e['printed']}")
    nbytes = int(data["ceilings"]["dram_read"].get("bytes") or (1 << 30))
    skipped = {"skipped": "--skip-cuda"}
    cuda = skipped if args.skip_cuda else cuda_read(nbytes)
    l2 = skipped if args.skip_cuda else cuda_l2_bytes()
    clpeak = clpeak_figures(args)
    rows = rows_of(prof, cuda, l2, clpeak)
    rows += [explain_row(e) for e in explained]
    rows += os_rows(data)
    if catalogue:
        print(f"\n$ {catalogue['command']}  ({catalogue['seconds']:.1f} s, exit {catalogue['returncode']})")
        rows += catalogue["rows"]
    print(markdown(rows))
    if args.json:
        record = {"device": data["device"], "driver": data["driver"], "profile": data,
                  "profile_seconds": prof["seconds"], "cuda_read": cuda, "cuda_l2": l2,
                  "clpeak": clpeak, "explain": explained, "catalogue": catalogue, "rows": rows}
        Path(args.json).write_text(json.dumps(record, indent=1, default=str))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
