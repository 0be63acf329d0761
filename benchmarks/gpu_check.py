"""The GPU check after a change to launching or timing, in one call: `make gpu-check`, the Guide in
its default, --quick and --thorough modes, `benchmarks/overhead.py --rounds 5` and a roofline
profile, each a stage of its own; then every figure the targets ask for, as a block ready for
RESULTS.md (date, device, driver, commit, figure, the same-run reference as a ratio).

A stage that fails or runs past its time loses its own figures only: each runs in a process of
its own under a time limit, its output streamed as it comes (prefixed with the stage's name) and
kept in the log. With $OUT set (the GPU machine's folder of files that come back), the log, the
figures as JSON, the three guide.json files and the default run's page are written there; the
guides' own folders stay in --work.

    python benchmarks/gpu_check.py --device nvidia --commit $(git rev-parse --short HEAD)

Targets: make gpu-check <= 120 s; the default guide <= 90 s and exit 0; --quick <= 30 s with
every experiment's verdict the same as the default run's and --thorough's; overhead.py's
unverified offset sweep <= 1.02x PyOpenCL's loop and Kernel.time(repeats=1) <= 1.0x, medians
over 5 rounds; the check's own stages (all but --thorough) <= 600 s. The thorough run, the
reference the verdicts are held to, comes last and takes what the budget leaves: on a slow
H200 machine it needs about 290 s, so where the check's stages and it exceed one sitting, run
`--stages guide-thorough` next on the same machine.
"""

from __future__ import annotations

import argparse
import codecs
import datetime as dt
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODES = ("default", "quick", "thorough")
# Seconds each stage may take at most (the stage is stopped there, its figures lost, the rest
# go on); what the whole run has left bounds them too.
LIMITS = {"guide-default": 240, "guide-quick": 120, "gpu-check": 300, "overhead": 240,
          "guide-thorough": 420, "profile": 120}
# Seconds kept back for each stage still to come when an earlier one is given its limit.
RESERVE = {"guide-default": 60, "guide-quick": 30, "gpu-check": 60, "overhead": 40,
           "guide-thorough": 60, "profile": 30}
ORDER = ("guide-default", "guide-quick", "overhead", "gpu-check", "profile", "guide-thorough")
TARGETS = {"gpu_check_s": 120.0, "guide_default_s": 90.0, "guide_quick_s": 30.0,
           "sweep_over_pyopencl": 1.02, "time_over_pyopencl": 1.0, "script_s": 600.0}


class Log:
    """Every line to stdout at once, and to the log file where there is one."""

    def __init__(self, path: Path | None) -> None:
        self.file = open(path, "a", encoding="utf-8", buffering=1) if path else None

    def __call__(self, text: str) -> None:
        print(text, flush=True)
        if self.file:
            self.file.write(text + "\n")

    def close(self) -> None:
        if self.file:
            self.file.close()


def stage(log: Log, name: str, cmd: list[str], limit_s: float, env: dict[str, str] | None = None,
          cwd: Path = ROOT) -> dict[str, Any]:
    """Run ``cmd`` as a process group of its own, its output streamed line by line; stop it
    after ``limit_s``. Its exit status, wall time, whether it was stopped, and its output."""
    log(f"== {name}: {' '.join(cmd)} (limit {limit_s:.0f} s)")
    start = time.monotonic()
    lines: list[str] = []
    try:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    except OSError as exc:
        log(f"{name}: could not start: {exc}")
        return {"stage": name, "rc": None, "wall_s": 0.0, "stopped": False, "output": str(exc)}
    stopped = False
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    decode = codecs.getincrementaldecoder("utf-8")("replace")
    pending = ""
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            chunk = b""
            if sel.select(timeout=0.2):
                chunk = os.read(fd, 65536)
                if not chunk:  # the stage closed its output: it has ended or is ending
                    break
            pending += decode.decode(chunk)
            *whole, pending = pending.split("\n")
            for line in whole:
                # tqdm redraws with carriage returns: the last state of a line is the one kept
                shown = line.rsplit("\r", 1)[-1]
                lines.append(shown)
                log(f"[{name} {time.monotonic() - start:5.1f}s] {shown}")  # when each line came
            if time.monotonic() - start > limit_s and not stopped:
                stopped = True
                log(f"{name}: past its {limit_s:.0f} s: stopped")
                os.killpg(proc.pid, signal.SIGTERM)  # the guide writes its page on SIGTERM
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
    proc.stdout.close()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:  # it closed its output but lives on: stop it
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    pending += decode.decode(b"", final=True)
    if pending.strip():
        lines.append(pending)
        log(f"[{name}] {pending}")
    wall = time.monotonic() - start
    log(f"== {name}: exit {proc.returncode}, {wall:.1f} s" + (" (stopped)" if stopped else ""))
    return {"stage": name, "rc": proc.returncode, "wall_s": round(wall, 2), "stopped": stopped,
            "output": "\n".join(lines[-400:])}


def pytest_counts(output: str) -> dict[str, int]:
    """The counts of every pytest summary line in ``output`` added up (passed, failed, skipped,
    errors, ...): `make gpu-check` runs two sessions, the timing tests alone and the rest."""
    found: dict[str, int] = {}
    for line in output.splitlines():
        if re.search(r"\d+ (passed|failed|error|skipped|deselected)", line) and re.search(r" in [\d.]+s", line):
            for count, what in re.findall(r"(\d+) (\w+)", line):
                if what != "deselected":
                    found[what] = found.get(what, 0) + int(count)
    return found


def guide_document(folder: Path) -> dict[str, Any] | None:
    try:
        return json.loads((folder / "guide.json").read_text())
    except (OSError, ValueError):
        return None


def verdict_table(docs: dict[str, dict[str, Any] | None]) -> dict[str, dict[str, str]]:
    """experiment -> mode -> verdict, for the modes whose guide.json exists."""
    table: dict[str, dict[str, str]] = {}
    for mode, doc in docs.items():
        for e in (doc or {}).get("experiments", []):
            table.setdefault(e["experiment"], {})[mode] = str(e["verdict"])
    return table


def device_facts(device: str) -> dict[str, Any]:
    """Name, driver and platform of the device, asked in a process of its own."""
    code = ("import json, pyclperf; i = pyclperf.Context(%r).info; print(json.dumps({'name': i.name, "
            "'driver': i.driver_version, 'platform': i.platform_name, 'opencl': i.version}))" % device)
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=120, cwd="/")
    except (subprocess.SubprocessError, OSError) as exc:
        return {"name": "unknown", "error": str(exc)}
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        # The process's own last words (pyclperf's one-line error) say why.
        said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return {"name": "unknown", "error": said}


def commit_of(given: str | None) -> str:
    if given:
        return given
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def fmt(value: Any, unit: str = "", digits: int = 1) -> str:
    if isinstance(value, (int, float)):
        return f"{value:.{digits}f}{unit}"
    return "not measured"


def met(value: Any, limit: float) -> str:
    return ("yes" if value <= limit else "no") if isinstance(value, (int, float)) else "not measured"


def summarize(stages: dict[str, dict[str, Any]], docs: dict[str, dict[str, Any] | None],
              overhead: dict[str, Any] | None, facts: dict[str, Any], commit: str,
              script_s: float) -> tuple[dict[str, Any], list[str]]:
    """The figures, and the RESULTS.md block that states them."""
    # The target is on the check's own stages; the thorough run is the reference beside them.
    thorough_s = (stages.get("guide-thorough") or {}).get("wall_s") or 0.0
    fig: dict[str, Any] = {"date": dt.date.today().isoformat(), "device": facts, "commit": commit,
                           "script_s": round(script_s - thorough_s, 1),
                           "with_thorough_s": round(script_s, 1)}
    for mode in MODES:
        st, doc = stages.get(f"guide-{mode}"), docs.get(mode)
        if st:
            fig[f"guide_{mode}_s"] = st["wall_s"]
            fig[f"guide_{mode}_exit"] = st["rc"]
            fig[f"guide_{mode}_stopped"] = st["stopped"]
        if doc:
            exps = doc["experiments"]
            fig[f"guide_{mode}_passed"] = sum(1 for e in exps if e["status"] == "passed")
            fig[f"guide_{mode}_experiments"] = len(exps)
            fig[f"guide_{mode}_seconds"] = {e["experiment"]: e["seconds"] for e in exps}
            fig[f"guide_{mode}_device_s"] = {e["experiment"]: e.get("device_s") for e in exps}
            fig[f"guide_{mode}_not_passed"] = [f"{e['experiment']} ({e['status'][:80]})" for e in exps
                                               if e["status"] != "passed"
                                               and not e["status"].startswith("not run (")]
            fig[f"guide_{mode}_unfinished"] = sum(1 for e in exps if e["status"].startswith("not run ("))
    # Verdicts are compared where at least two modes ran the experiment to its end: a run
    # stopped part-way (timed out, not run) holds a verdict from the rows it left, not the run's.
    ran = {m: {e["experiment"] for e in (docs.get(m) or {}).get("experiments", [])
               if e["status"] == "passed" or str(e["status"]).startswith("not run:")} for m in MODES}
    table = verdict_table(docs)
    compared = {n: {m: v for m, v in modes.items() if n in ran[m]} for n, modes in table.items()}
    compared = {n: v for n, v in compared.items() if len(v) >= 2}
    differing = {n: v for n, v in compared.items() if len(set(v.values())) > 1}
    fig["verdict_modes"] = [m for m in MODES if docs.get(m)]
    fig["verdicts_compared"] = len(compared)
    # Compared in every mode that ran: the criterion's "default = quick = thorough" (an
    # experiment a stopped thorough run left is compared between the other two only).
    fig["verdicts_in_every_mode"] = sum(1 for v in compared.values() if len(v) == len(fig["verdict_modes"]))
    fig["verdicts_differing"] = differing
    gc = stages.get("gpu-check")
    if gc:
        fig["gpu_check_s"] = gc["wall_s"]
        fig["gpu_check_exit"] = gc["rc"]
        fig["gpu_check_counts"] = pytest_counts(gc["output"])
    if overhead:
        s = overhead
        fig["sweep_over_pyopencl"] = s.get("unverified_experiment_s_over_pyopencl")
        fig["sweep_by_round"] = s.get("experiment_over_pyopencl_each_round")
        fig["time_over_pyopencl"] = s.get("time_us_over_pyopencl")
        fig["time_by_round"] = s.get("time_over_pyopencl_each_round")
        fig["run_over_pyopencl"] = s.get("run_us_over_pyopencl")
        fig["same_launches"] = s.get("same_launches")
        fig["overhead_rounds"] = s.get("rounds")
        fig["pyopencl_time_us"] = s.get("pyopencl_time_us")
        fig["pyclperf_time_us"] = s.get("time_us")
        fig["pyopencl_loop_s"] = s.get("pyopencl_loop_s")
        fig["pyclperf_sweep_s"] = s.get("unverified_experiment_s")
    pr = stages.get("profile")
    if pr:
        fig["profile_s"], fig["profile_exit"] = pr["wall_s"], pr["rc"]
    return fig, results_block(fig)


def results_block(f: dict[str, Any]) -> list[str]:
    dev = f["device"]
    counts = f.get("gpu_check_counts") or {}
    rounds = lambda key: ", ".join(f"{r:.3f}" for r in f.get(key) or [])  # noqa: E731
    lines = [f"## {f['date']} · {dev.get('name', 'unknown')} · the GPU check · `benchmarks/gpu_check.py`",
             "",
             f"Device: {dev.get('name', 'unknown')} ({dev.get('platform', '?')}), driver "
             f"{dev.get('driver', '?')}; code at commit {f['commit']}; the check's stages "
             f"{f['script_s']:.0f} s (target <= {TARGETS['script_s']:.0f} s), "
             f"{f.get('with_thorough_s', f['script_s']):.0f} s with the thorough run.",
             "",
             "| figure | measured | target | met |", "| --- | --- | --- | --- |"]
    d_exit = f.get("guide_default_exit")
    lines.append(f"| `pyclperf guide` (default) | {fmt(f.get('guide_default_s'), ' s')}, exit {d_exit}, "
                 f"{f.get('guide_default_passed', '?')} of {f.get('guide_default_experiments', '?')} passed"
                 f" | <= 90 s, exit 0 | "
                 f"{'yes' if met(f.get('guide_default_s'), 90) == 'yes' and d_exit == 0 else 'no'} |")
    lines.append(f"| `pyclperf guide --quick` | {fmt(f.get('guide_quick_s'), ' s')}, exit "
                 f"{f.get('guide_quick_exit')} | <= 30 s | {met(f.get('guide_quick_s'), 30)} |")
    lines.append(f"| `pyclperf guide --thorough` (the reference) | {fmt(f.get('guide_thorough_s'), ' s')}, "
                 f"exit {f.get('guide_thorough_exit')}"
                 + (" (stopped)" if f.get("guide_thorough_stopped") else "") + " | | |")
    differing = f.get("verdicts_differing") or {}
    lines.append(f"| verdicts: {' = '.join(f.get('verdict_modes') or ['none'])} | "
                 f"{f.get('verdicts_compared', 0) - len(differing)} of {f.get('verdicts_compared', 0)} "
                 f"experiments agree"
                 + (f" ({f.get('verdicts_in_every_mode', 0)} of them in every mode)"
                    if f.get("verdicts_in_every_mode", 0) != f.get("verdicts_compared", 0) else "")
                 + (f"; differ: {', '.join(f'{n} {v}' for n, v in differing.items())}" if differing else "")
                 + f" | all 34 | {'yes' if not differing and f.get('verdicts_in_every_mode') == 34 else 'no'} |")
    lines.append(f"| `make gpu-check` | {fmt(f.get('gpu_check_s'), ' s')}, "
                 + ", ".join(f"{v} {k}" for k, v in counts.items())
                 + f" | <= 120 s, 0 failed | "
                 f"{'yes' if met(f.get('gpu_check_s'), 120) == 'yes' and not counts.get('failed') and f.get('gpu_check_exit') == 0 else 'no'} |")
    lines.append(f"| unverified offset sweep / PyOpenCL loop (median of {f.get('overhead_rounds', '?')} "
                 f"rounds; same launches: {f.get('same_launches')}) | "
                 f"{fmt(f.get('sweep_over_pyopencl'), 'x', 3)} (by round {rounds('sweep_by_round')}; "
                 f"{fmt(f.get('pyclperf_sweep_s'), ' s', 4)} against {fmt(f.get('pyopencl_loop_s'), ' s', 4)}) "
                 f"| <= 1.02x | {met(f.get('sweep_over_pyopencl'), 1.02)} |")
    lines.append(f"| `Kernel.time(repeats=1)` / PyOpenCL per call | {fmt(f.get('time_over_pyopencl'), 'x', 3)} "
                 f"(by round {rounds('time_by_round')}; {fmt(f.get('pyclperf_time_us'), ' us', 2)} against "
                 f"{fmt(f.get('pyopencl_time_us'), ' us', 2)}) | <= 1.0x | "
                 f"{met(f.get('time_over_pyopencl'), 1.0)} |")
    lines.append(f"| `Kernel.run` / PyOpenCL's launch + wait + profile read | "
                 f"{fmt(f.get('run_over_pyopencl'), 'x', 3)} | | |")
    lines.append(f"| `pyclperf profile --refresh` (roofline) | {fmt(f.get('profile_s'), ' s')}, exit "
                 f"{f.get('profile_exit')} | | |")
    for key, what in (("seconds", "seconds (default / quick / thorough), waits for the turn included"),
                      ("device_s", "seconds holding the device's turn (default / quick / thorough)")):
        secs = {m: f.get(f"guide_{m}_{key}") or {} for m in MODES}
        names = sorted(secs["default"] or secs["quick"], key=lambda n: -(secs["default"].get(n) or 0))

        def sec(mode: str, name: str) -> str:
            v = secs[mode].get(name)
            return f"{v:.1f}" if isinstance(v, (int, float)) else "-"

        if names:
            lines += ["", f"Per experiment, {what}, slowest default first: "
                      + "; ".join(f"{n} {sec('default', n)} / {sec('quick', n)} / {sec('thorough', n)}"
                                  for n in names) + "."]
    for mode in MODES:
        bad, unfinished = f.get(f"guide_{mode}_not_passed"), f.get(f"guide_{mode}_unfinished")
        if bad:
            lines.append(f"Not passed in the {mode} run: {', '.join(bad)}.")
        if unfinished:
            lines.append(f"The {mode} run was stopped before {unfinished} experiment(s).")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="nvidia")
    ap.add_argument("--commit", default=None, help="the code's commit (default: git's, where there is one)")
    ap.add_argument("--work", default="/tmp/pyclperf-gpu-check", help="folder for the guides' own output")
    ap.add_argument("--workers", type=int, default=None,
                    help="processes for make gpu-check (GPU_CHECK_WORKERS; the Makefile's default otherwise)")
    ap.add_argument("--out", default=os.environ.get("OUT"), help="folder for the log and figures (default $OUT)")
    ap.add_argument("--stages", default=",".join(ORDER), help=f"comma-separated, of {', '.join(ORDER)}")
    ap.add_argument("--budget", type=float, default=570.0, help="seconds the whole check may take")
    ap.add_argument("--rounds", type=int, default=5, help="overhead.py's rounds")
    ap.add_argument("--python", default=sys.executable, help="the Python with pyclperf installed")
    args = ap.parse_args(argv)
    begun = time.monotonic()
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    log = Log(out / "gpu_check.log" if out else None)
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    wanted = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = sorted(set(wanted) - set(ORDER))
    if unknown:
        ap.error(f"unknown stage(s) {', '.join(unknown)}; known: {', '.join(ORDER)}")
    py = args.python
    # make gpu-check, or the same pytest command where there is no make.
    # The Makefile's default number of processes (GPU_CHECK_WORKERS) holds unless given here;
    # without make, the serial part alone would be a second command: the whole check in one
    # process instead.
    workers = [f"GPU_CHECK_WORKERS={args.workers}"] if args.workers else []
    gpu_check = (["make", "--no-print-directory", "gpu-check", f"PY={py}",
                  f"GPU_CHECK_DEVICES={args.device}", *workers] if shutil.which("make") else
                 [py, "-m", "pytest", "-m", "device", "-p", "no:cacheprovider", "--durations=15"])
    commands: dict[str, Callable[[], list[str]]] = {
        "gpu-check": lambda: gpu_check,
        "overhead": lambda: [py, str(HERE / "overhead.py"), "--device", args.device, "--rounds",
                             str(args.rounds), "--json", str(work / "overhead.json")],
        "profile": lambda: [py, "-m", "pyclperf", "profile", "--device", args.device, "--refresh",
                            "--plot", str(work / "roofline.png")],
    }
    limits: dict[str, float] = {}
    for mode in MODES:
        extra = [] if mode == "default" else [f"--{mode}"]
        # The guide's own budget a little inside the stage's limit: it stops between
        # experiments and writes its page, where a stop from outside would cut one short.
        commands[f"guide-{mode}"] = (lambda extra=extra, mode=mode: [
            py, "-m", "pyclperf", "guide", "--device", args.device, "--out", str(work / mode),
            "--budget", f"{max(10.0, limits[f'guide-{mode}'] - 15):.0f}", *extra])
    facts = device_facts(args.device)
    log(f"device: {json.dumps(facts)}; commit {commit_of(args.commit)}; python {py}")
    if "error" in facts:
        # Every stage would only say the same thing, one experiment and one test at a time.
        log(f"gpu_check: device {args.device!r} cannot be opened: {facts['error']}; "
            "`pyclperf devices` lists the devices and how the ICD loader was set up")
        log.close()
        return 2
    stages: dict[str, dict[str, Any]] = {}
    todo = [s for s in ORDER if s in wanted]
    for i, name in enumerate(todo):
        left = args.budget - (time.monotonic() - begun)
        later = sum(RESERVE[s] for s in todo[i + 1:])
        limits[name] = min(LIMITS[name], max(left - later, min(left, RESERVE[name])) - 5)
        if limits[name] < 15:
            log(f"== {name}: not run, {left:.0f} s of the budget left")
            continue
        env = ({"PYCLPERF_PROFILES": str(work / "profiles")} if name == "profile" else
               {"PYCLPERF_TEST_DEVICES": args.device} if name == "gpu-check" else None)
        stages[name] = stage(log, name, commands[name](), limits[name], env=env)
    docs = {mode: guide_document(work / mode) for mode in MODES if f"guide-{mode}" in stages}
    overhead = None
    try:
        overhead = json.loads((work / "overhead.json").read_text())["summary"][0]
    except (OSError, ValueError, KeyError, IndexError):
        pass
    figures, block = summarize(stages, docs, overhead, facts, commit_of(args.commit),
                               time.monotonic() - begun)
    log("")
    log("---- for RESULTS.md ----")
    for line in block:
        log(line)
    log("---- figures ----")
    log(json.dumps(figures, indent=1, default=str))
    if out:
        (out / "gpu_check.json").write_text(json.dumps(
            {"figures": figures, "stages": {k: {kk: vv for kk, vv in v.items() if kk != "output"}
                                            for k, v in stages.items()}}, indent=1, default=str))
        for mode, doc in docs.items():
            if doc is not None:
                shutil.copy(work / mode / "guide.json", out / f"guide-{mode}.json")
        for src, dst in ((work / "default" / "guide.html", "guide-default.html"),
                         (work / "overhead.json", "overhead.json")):
            if src.is_file():
                shutil.copy(src, out / dst)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
