"""Python overhead and sweep wall time: pyclperf against a plain PyOpenCL loop, same launches.

1. Per call: Kernel.time(repeats=1) and Kernel.run of a tiny kernel from Python, against
   PyOpenCL's enqueue + wait + profile read.
2. The offset sweep (33 points, 2 x 256 MiB buffers, 3 warm-up + 20 timed launches): the
   verified experiment (pyclperf.run("offset")), the same unverified, and a 30-line PyOpenCL loop
   doing the same launches: the experiment's own kernel (kernels/copy.cl's offset_copy), the
   same ranges, the same offsets; once on buffers made beforehand (the loop alone) and once
   making, using and releasing its own, as the experiment does (the script). The experiment
   runs with a fixed count (a policy with no interval goal), so it makes exactly the loop's
   launches (the summary's ``same_launches`` checks it), and once more as users run it.

Each side runs in its own process (PyOpenCL's wheel bundles its own ICD loader: --vendors DIR
is made for it, naming NVIDIA's library), pinned to the same CPUs (--cpus), for --rounds rounds.
Per call: paired blocks, alternating (benchmarks/paired_blocks.py): each round, a pyclperf and a
PyOpenCL process alive at once run one block of 1,000 calls in turn, A B A B ..., 7 a side (the
first side alternating by round); a side's figure is the median of its blocks. Measured one
process after the other, the ratio followed the drift between them (0.81-1.20 by round on an
H200): kept as ``alone``. The sweeps run one side's process after the other's. The summary
gives each figure's median over the rounds and the ratios, and per point
(``host_us_per_point``: each sweep's wall time less its kernels' time, the warm-ups counted at
the timed launches' mean; ``experiment_extra_us_per_point``: what the experiment adds to
PyOpenCL's loop). Run on the GPU machine:

    python benchmarks/overhead.py --device nvidia --rounds 5 --json overhead.json

Elsewhere, on PoCL, with small buffers and a PyOpenCL installed apart from pyclperf's environment
(``pip install --target DIR pyopencl``):

    python benchmarks/overhead.py --device cpu --items 16384 --cpus "" --pyopencl-path DIR
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.append(str(Path(__file__).resolve().parent))  # its module beside it, when loaded apart
from paired_blocks import (JOBS, alone, paired_round, pyclperf_calls, pyopencl_calls,  # noqa: E402
                           pyopencl_queue, serve, take_stdout)

# The experiment's own kernel, read from the source tree so that the PyOpenCL side needs no
# pyclperf.
OFFSET = (Path(__file__).resolve().parent.parent / "kernels" / "copy.cl").read_text()
ITEMS = 1 << 26  # 256 MiB of floats per buffer
POINTS, WARMUP, REPEATS = 33, 3, 20  # the sweep: offsets 0..32, each 3 warm-up + 20 timed launches


class InsideTiming:
    """Seconds spent inside pyclperf's C++ timing calls (launches, waits, timestamps) while
    active: a sweep's wall time less this is its Python's, on any device. A timed call split in
    two (device/busy.py: the last row finished while the launches run) counts its two halves,
    not the Python between them."""

    def __init__(self) -> None:
        from pyclperf.device import program

        self.program, self.seconds = program, 0.0
        self.real, self.real_begin = program._time_durations, program._begin_durations

    def _timed(self, call: Any) -> Any:
        def timed(*args: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return call(*args)
            finally:
                self.seconds += time.perf_counter() - t0
        return timed

    def __enter__(self) -> "InsideTiming":
        outer = self

        class Pending:
            def __init__(self, inner: Any) -> None:
                self.finish = outer._timed(inner.finish)

        begin = self._timed(self.real_begin)
        self.seconds = 0.0
        self.program._time_durations = self._timed(self.real)
        self.program._begin_durations = lambda *args: Pending(begin(*args))
        return self

    def __exit__(self, *exc: object) -> None:
        self.program._time_durations = self.real
        self.program._begin_durations = self.real_begin


def stand_in_for_nvml(ctx: Any, costs: str) -> None:
    """Make ``ctx``'s device read its conditions from a stand-in for NVML whose readings cost
    what ``costs`` says ("QUICK,ENERGY" in ms: each clock, power, temperature, throttle or
    process reading, and the energy counter; the H200's driver: about 0.005 and 3.8), so that
    their effect on a sweep shows on any device. The figures it gives are an H200's."""
    import types

    from pyclperf.measure import conditions, residency

    quick_ms, energy_ms = (float(v) for v in costs.split(","))

    def costing(ms: float, value: Any) -> Any:
        return lambda *args: (time.sleep(ms / 1e3), value)[1]

    nvml = types.SimpleNamespace(
        NVMLError=RuntimeError, NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2, NVML_TEMPERATURE_GPU=0,
        nvmlDeviceGetMaxClockInfo=lambda h, c: 1980,
        nvmlDeviceGetClockInfo=costing(quick_ms, 1980),
        nvmlDeviceGetPowerUsage=costing(quick_ms, 412_000),
        nvmlDeviceGetTemperature=costing(quick_ms, 51),
        nvmlDeviceGetCurrentClocksEventReasons=costing(quick_ms, 0),
        nvmlDeviceGetComputeRunningProcesses=costing(quick_ms, []),
        nvmlDeviceGetTotalEnergyConsumption=costing(energy_ms, 1_000_000))
    residency._conditions[ctx] = conditions.Conditions(nvml, "stand-in")


def side_pyclperf(device: str, items: int, fake_nvml: str = "") -> dict[str, Any]:
    import pyclperf
    from pyclperf.measure.timing_policy import Policy

    ctx = pyclperf.Context(device)
    if fake_nvml:
        stand_in_for_nvml(ctx, fake_nvml)
    calls = pyclperf_calls(ctx)
    out: dict[str, Any] = {f"alone_{name}_us": alone(fn) for name, fn in calls.items()}
    copy = ctx.program(OFFSET).kernel("offset_copy")
    src, dst = ctx.buffer(4 * (items + 64)), ctx.buffer(4 * (items + 64))
    timed = 0.0
    with InsideTiming() as inside:
        t0 = time.perf_counter()
        for k_off in range(POINTS):
            copy.set_args(dst, src, np.int32(k_off))
            timed += float(copy.time(items, 256, warmup=WARMUP, repeats=REPEATS).sum())
        out["unverified_loop_s"] = time.perf_counter() - t0
    out["unverified_loop_timed_s"] = timed * 1e-9
    out["unverified_loop_inside_s"] = inside.seconds
    # One untimed run first builds the kernels (as the PyOpenCL side's build is outside its loop).
    t0 = time.perf_counter()
    pyclperf.run("offset", ctx, size=items, values=[0], warmup=1, repeats=1, progress=False)
    out["first_run_s"] = time.perf_counter() - t0
    # The experiment with a fixed count (no interval goal: exactly the loop's 3 + 20 launches
    # per point, so the figures compare the same device work), and as users run it (the
    # default policy: at least 20 launches, more until the median's interval is within 1%).
    fixed = Policy(min_samples=REPEATS, rel_target=None)
    for verify, adaptive in ((False, False), (True, False), (False, True), (True, True)):
        with InsideTiming() as inside:
            t0 = time.perf_counter()
            res = pyclperf.run("offset", ctx, size=items, warmup=WARMUP, repeats=REPEATS,
                               verify=verify, progress=False, min_time_s=0.0,
                               policy="default" if adaptive else fixed)
            key = ("verified" if verify else "unverified") + ("_adaptive" if adaptive else "")
            out[f"{key}_experiment_s"] = time.perf_counter() - t0
        out[f"{key}_inside_s"] = inside.seconds
        out[f"{key}_statuses"] = sorted({r["status"] for r in res.rows})
        out[f"{key}_launches"] = int(sum(r.get("n", 0) for r in res.rows))
        # The timed launches' own time: the rest of the wall time is the host's (and warm-ups).
        out[f"{key}_timed_s"] = sum(r.get("n", 0) * r.get("mean_ns", 0.0) for r in res.rows) * 1e-9
        # Where NVML knows the GPU: the rows whose readings were done while their launches ran,
        # and those that read the energy counter (milliseconds a reading on NVIDIA's driver).
        if any("conditions_during" in r for r in res.rows):
            out[f"{key}_conditions_during"] = sum(bool(r.get("conditions_during"))
                                                  for r in res.rows)
            out[f"{key}_energy_rows"] = sum("energy_j" in r for r in res.rows)
    return out


def side_pyopencl(items: int) -> dict[str, Any]:
    cl, ctx, q = pyopencl_queue()
    reference = pyopencl_calls(cl, ctx, q)["time"]
    out: dict[str, Any] = {"version": cl.VERSION_TEXT, "alone_time_us": alone(reference)}
    t0 = time.perf_counter()
    copy = cl.Program(ctx, OFFSET).build().offset_copy
    out["build_s"] = time.perf_counter() - t0

    def buffers() -> tuple[Any, Any]:
        return tuple(cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * (items + 64)) for _ in range(2))

    def sweep(src: Any, dst: Any) -> float:
        timed = 0
        for k_off in range(POINTS):
            copy.set_args(dst, src, np.int32(k_off))
            for _ in range(WARMUP):
                cl.enqueue_nd_range_kernel(q, copy, (items,), (256,))
            q.finish()
            events = [cl.enqueue_nd_range_kernel(q, copy, (items,), (256,)) for _ in range(REPEATS)]
            q.finish()
            timed += sum(e.profile.end - e.profile.start for e in events)
        return timed * 1e-9

    src, dst = buffers()
    t0 = time.perf_counter()
    timed = sweep(src, dst)
    out["unverified_loop_s"] = time.perf_counter() - t0
    out["unverified_loop_timed_s"] = timed
    src.release()
    dst.release()
    # The same as a whole script does it, as the experiment does: its own buffers made, used
    # and released inside the timed span (the build stays outside, as the experiment's is
    # cached by its warm-up run).
    t0 = time.perf_counter()
    src, dst = buffers()
    sweep(src, dst)
    src.release()
    dst.release()
    out["script_s"] = time.perf_counter() - t0
    return out


def median_of(values: list[float]) -> float:
    return float(np.median(values)) if values else float("nan")


def summarize(out: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Median over the rounds of each figure, and pyclperf's figures over PyOpenCL's."""
    def median(side: str, key: str) -> float:
        values = [r[key] for r in out.get(side, []) if key in r]
        return float(np.median(values)) if values else float("nan")

    reference_loop = median("pyopencl", "unverified_loop_s")
    summary: dict[str, Any] = {"rounds": len(out.get("pyclperf", [])),
                               "pyopencl_loop_s": reference_loop,
                               "loop_launches": POINTS * REPEATS}
    # Per call, from the paired rounds (both sides alive, their blocks alternating): PyOpenCL's
    # enqueue + wait + profile read is the reference of Kernel.time and Kernel.run alike. A
    # round whose side failed gives no figure. The ratio is the median of each round's own
    # ratio, which the pairing makes free of the drift between rounds; the ratio of each side's
    # median is not: on the H200 (2026-11-30) pyclperf was faster in four rounds of five
    # (0.93-0.96) and one side's median came from another round than the other's, 1.05x.
    paired = [p for p in out.get("paired", []) if "error" not in p]
    reference_call = median_of([p["pyopencl"]["time_us"] for p in paired])
    summary.update(per_call="paired blocks, alternating", paired_rounds=len(paired),
                   pyopencl_time_us=reference_call)
    for key, name in (("time_us", "time"), ("run_us", "run")):
        ratios = [p["pyclperf"][key] / p["pyopencl"]["time_us"] for p in paired]
        summary[key] = median_of([p["pyclperf"][key] for p in paired])
        summary[f"{key}_over_pyopencl"] = median_of(ratios)
        summary[f"{name}_over_pyopencl_each_round"] = [round(r, 4) for r in ratios]
    # The same measured alone, one side's process after the other's: their ratio carries the
    # drift between the moments the sides ran, which the paired figures are free of.
    pairs = list(zip(out.get("pyclperf", []), out.get("pyopencl", [])))
    ratios_alone = [c["alone_time_us"] / p["alone_time_us"] for c, p in pairs
                    if "alone_time_us" in c and "alone_time_us" in p]
    summary["alone"] = {"time_over_pyopencl_each_round": [round(r, 4) for r in ratios_alone],
                        "time_over_pyopencl_median_round": median_of(ratios_alone)}
    # The fixed-count sweeps must have made exactly the loop's launches: otherwise their wall
    # times measure different work, not overhead.
    summary["same_launches"] = all(
        r.get(f"{key}_launches") == POINTS * REPEATS for r in out.get("pyclperf", [])
        for key in ("unverified", "verified") if f"{key}_launches" in r)
    for key in ("unverified_loop_s", "unverified_experiment_s", "verified_experiment_s"):
        summary[key] = median("pyclperf", key)
        summary[f"{key}_over_pyopencl"] = summary[key] / reference_loop
    # Per point, in microseconds: what each sweep spends besides its kernels (the wall time less
    # the timed launches, the warm-ups counted at the timed launches' mean), and what the
    # experiment adds over PyOpenCL's loop and over pyclperf's own loop in the same process.
    def host_us(side: str, wall: str, timed: str) -> float:
        values = [(r[wall] - r[timed] * (WARMUP + REPEATS) / REPEATS) / POINTS * 1e6
                  for r in out.get(side, []) if wall in r and timed in r]
        return float(np.median(values)) if values else float("nan")

    summary["host_us_per_point"] = {
        "pyopencl_loop": host_us("pyopencl", "unverified_loop_s", "unverified_loop_timed_s"),
        "pyclperf_loop": host_us("pyclperf", "unverified_loop_s", "unverified_loop_timed_s"),
        "unverified_experiment": host_us("pyclperf", "unverified_experiment_s",
                                         "unverified_timed_s")}
    # The clearest figure, on any device: per point, the sweep's wall time less the time inside
    # the C++ timing calls (launches and waits), i.e. the Python around them.
    summary["python_us_per_point"] = {
        "pyclperf_loop": median_of([(r["unverified_loop_s"] - r["unverified_loop_inside_s"])
                                    / POINTS * 1e6 for r in out.get("pyclperf", [])
                                    if "unverified_loop_inside_s" in r]),
        "unverified_experiment": median_of(
            [(r["unverified_experiment_s"] - r["unverified_inside_s"]) / POINTS * 1e6
             for r in out.get("pyclperf", []) if "unverified_inside_s" in r])}
    summary["experiment_extra_us_per_point"] = (
        (summary["unverified_experiment_s"] - reference_loop) / POINTS * 1e6)
    summary["experiment_over_own_loop_us_per_point"] = median_of(
        [(r["unverified_experiment_s"] - r["unverified_loop_s"]) / POINTS * 1e6
         for r in out.get("pyclperf", [])
         if "unverified_loop_s" in r and "unverified_experiment_s" in r])
    # Round by round too: the targets read "in the same device run".
    reference_script = median("pyopencl", "script_s")
    summary["pyopencl_script_s"] = reference_script
    summary["unverified_experiment_s_over_pyopencl_script"] = (
        summary["unverified_experiment_s"] / reference_script)
    for mine, theirs, name in (("unverified_experiment_s", "unverified_loop_s", "experiment"),
                               ("unverified_experiment_s", "script_s", "experiment_script")):
        summary[f"{name}_over_pyopencl_each_round"] = [
            round(c[mine] / p[theirs], 4) for c, p in pairs if mine in c and theirs in p]
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="nvidia")
    ap.add_argument("--side", default="both", choices=["both", "pyclperf", "pyopencl",
                                                       "pyclperf-paired", "pyopencl-paired"])
    ap.add_argument("--items", type=int, default=ITEMS)
    ap.add_argument("--vendors", default="/tmp/kt-vendors")
    ap.add_argument("--pyopencl-path", default="",
                    help="folders put first on PYTHONPATH for the PyOpenCL side alone (a PyOpenCL "
                         "installed with pip --target, kept out of pyclperf's environment)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--fake-nvml", default="", metavar="QUICK_MS,ENERGY_MS",
                    help="pyclperf's side reads its conditions from a stand-in for NVML costing "
                         "this much a reading (e.g. 0.005,3.8 as on the H200), on any device")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cpus", default="2,3", help="CPUs every side is pinned to ('' for none)")
    args = ap.parse_args(argv)
    if args.cpus:
        # One CPU set for both sides: where the thread runs moves per-call figures by more than
        # the difference being measured.
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})
    if args.side == "pyclperf":
        print(json.dumps(side_pyclperf(args.device, args.items, args.fake_nvml)))
        return 0
    if args.side == "pyopencl":
        print(json.dumps(side_pyopencl(args.items)))
        return 0
    if args.side == "pyclperf-paired":
        answers = take_stdout()
        import pyclperf

        ctx = pyclperf.Context(args.device)
        if args.fake_nvml:
            stand_in_for_nvml(ctx, args.fake_nvml)
        serve(pyclperf_calls(ctx), answers, {"device": ctx.info.name})
        return 0
    if args.side == "pyopencl-paired":
        answers = take_stdout()
        cl, ctx, q = pyopencl_queue()
        serve(pyopencl_calls(cl, ctx, q), answers,
              {"device": ctx.devices[0].name, "version": cl.VERSION_TEXT})
        return 0
    vend = Path(args.vendors)
    vend.mkdir(parents=True, exist_ok=True)
    for lib in ("/usr/lib/libnvidia-opencl.so", "/usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1"):
        if os.path.exists(lib):
            (vend / "nvidia.icd").write_text(lib + "\n")
            break
    else:  # no NVIDIA driver here: PyOpenCL's loader reads the system's vendor files
        vend = Path("/etc/OpenCL/vendors")

    def command(side: str) -> tuple[list[str], dict[str, str]]:
        env = dict(os.environ)
        if side.startswith("pyopencl"):
            env["OCL_ICD_VENDORS"] = str(vend)
            if args.pyopencl_path:
                env["PYTHONPATH"] = os.pathsep.join(
                    p for p in (args.pyopencl_path, env.get("PYTHONPATH", "")) if p)
        return [sys.executable, __file__, "--side", side, "--device", args.device, "--items",
                str(args.items), "--cpus", args.cpus, "--fake-nvml", args.fake_nvml], env

    out: dict[str, list[dict[str, Any]]] = {}
    for round_index in range(args.rounds):
        # The per-call figures: both sides at once, their blocks alternating, the side that
        # goes first alternating too.
        order = ("pyopencl", "pyclperf")[::-1 if round_index % 2 else 1]
        paired = paired_round({side: command(f"{side}-paired") for side in order}, JOBS, order)
        if "error" in paired:
            print("paired round failed:", paired["error"], file=sys.stderr)
        out.setdefault("paired", []).append(paired)
        # The sweeps, one side's process after the other's.
        for side in ("pyopencl", "pyclperf"):
            argv, env = command(side)
            done = subprocess.run(argv, env=env, capture_output=True, text=True)
            if done.returncode:
                print(done.stderr[-3000:], file=sys.stderr)
                out.setdefault(side, []).append({"error": done.stderr[-1500:]})
                continue
            out.setdefault(side, []).append(json.loads(done.stdout.strip().splitlines()[-1]))
    for side, runs in out.items():
        for r in runs:
            print(side, json.dumps(r))
    summary = summarize(out)
    print(json.dumps(summary, indent=1))
    out["summary"] = [summary]
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
