"""GPU benchmark: run experiments of the catalogue on one device and collect what they concluded.

Run on the GPU machine after `pip install --no-build-isolation .`:

    python3 benchmarks/catalogue.py --device nvidia --out results/ matmul aat banks ...

Each experiment runs as `pyclperf run <id>` in its own process (a crash or a hang costs that
experiment only, within --timeout seconds), writing <id>.jsonl, .csv and .png into --out. Then
one markdown file, summary.md, gathers each experiment's device, status counts, conclusion and
summary table, ready to be read into benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path


def run_one(experiment: str, device: str, out: Path, timeout: float) -> tuple[int, float, str]:
    cmd = [sys.executable, "-m", "pyclperf.cli", "run", experiment, "--device", device,
           "--out", str(out)]
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        code, text = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        code = -1
        text = f"timed out after {timeout:.0f} s\n{exc.stdout or ''}"
    return code, time.perf_counter() - start, text


def section(experiment: str, code: int, seconds: float, text: str, out: Path) -> str:
    lines = [f"## {experiment} (exit {code}, {seconds:.0f} s)", ""]
    record = out / f"{experiment}.jsonl"
    if record.is_file():
        import pyclperf

        res = pyclperf.Results.load(record)
        statuses = res.df["status"].value_counts().to_dict() if "status" in res.df else {}
        lines += [f"- device: {res.meta.get('device', {}).get('name')}, statuses: {statuses}",
                  f"- conclusion: {res.meta.get('conclusion', '(none)')}", ""]
    lines += ["```", text.strip()[-6000:], "```", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("experiments", nargs="+")
    ap.add_argument("--device", default="nvidia")
    ap.add_argument("--out", required=True)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per experiment")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    parts = []
    for experiment in args.experiments:
        code, seconds, text = run_one(experiment, args.device, out, args.timeout)
        print(f"{experiment}: exit {code} in {seconds:.0f} s", flush=True)
        parts.append(section(experiment, code, seconds, text, out))
    (out / "summary.md").write_text("\n".join(parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
