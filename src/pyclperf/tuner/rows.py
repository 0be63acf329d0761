"""Which keys of a tune() row are tuned parameters, which are metrics, which are the engine's own.

Exporters and plots need to tell them apart. The engine records the parameters in
``Results.meta["tune_params"]`` (name -> values) and the metric names in
``Results.meta["metrics"]``; rows read from elsewhere (a Kernel Tuner cache, an older file) may
lack that, so the fallback infers it: every key that is not an engine field nor a metric is a
parameter.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

# The fields tune() itself writes into every row (see the Results row contract).
ROW_FIELDS = frozenset({
    "config", "status", "error", "verified", "time_ms", "times_ns", "median_ns", "min_ns",
    "max_ns", "spread_pct", "compile_s", "verify_s", "benchmark_s", "global_size", "local_size",
    "timestamp", "strategy_s", "framework_s", "worker_output", "kernel_work_group_size",
    "build_log", "memcheck_s", "working_set_bytes", "cache_bytes", "cache_resident", "cold",
    "compulsory_bytes", "compulsory_gbps", "sm_clock_mhz", "mem_clock_mhz", "sm_clock_max_mhz",
    "power_w", "temperature_c", "conditions_during", "energy_j", "mean_power_w",
    "energy_per_launch_j", "throttle", "conditions", "residency", "method", "method_reason", "suspect", "notes",
    "replayed", "simulated_s", "pareto", "strategy", "ran_s",
})


def metric_names(meta: Mapping[str, Any]) -> list[str]:
    """Metric names from ``meta["metrics"]`` (a list or a name -> callable dict)."""
    m = meta.get("metrics") or ()
    return [str(k) for k in m]


def param_names(meta: Mapping[str, Any], rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The tuned parameters, in their tune_params order when the metadata has it."""
    tp = meta.get("tune_params") or meta.get("params")
    if tp:
        return [str(k) for k in tp]
    metrics = set(metric_names(meta))
    names: list[str] = []
    for r in rows:
        for k in r:
            if k not in ROW_FIELDS and k not in metrics and k not in names:
                names.append(k)
    return names


def best_table(results: Any, top: int = 10) -> str:
    """A text table of the ``top`` fastest configs (verified ones first, then unverified), a
    count of the rows by status and of the configurations the restrictions ruled out (which
    have no rows): what ``pyclperf tune`` prints at the end."""
    rows = list(results.rows)
    names = param_names(results.meta, rows)
    metrics = [m for m in metric_names(results.meta) if m not in ROW_FIELDS]
    timed = [r for r in rows if r.get("status") in ("ok", "timed", "replayed")
             and r.get("time_ms") is not None]
    timed.sort(key=lambda r: (r["status"] != "ok", float(r["time_ms"])))
    cols = names + ["status", "time_ms", "spread_pct"] + metrics
    lines = []
    if timed:
        cells = [[_cell(r.get(c)) for c in cols] for r in timed[:top]]
        widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
        lines.append("  ".join(c.rjust(w) for c, w in zip(cols, widths)))
        lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells]
    else:
        lines.append("no config ran to completion")
    counts: dict[str, int] = {}
    for r in rows:
        counts[str(r.get("status"))] = counts.get(str(r.get("status")), 0) + 1
    line = f"{len(rows)} configs: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    pruned = results.meta.get("pruned")
    if pruned:  # they have no rows (the restrictions took them out of the space): say so
        line += f"; {pruned} more ruled out by the restrictions"
    lines.append(line)
    if results.meta.get("replay"):
        lines.append("replayed: these times are what the recorded run measured, not measured here")
    elif timed and timed[0]["status"] != "ok":
        lines.append("no config was verified: give a reference to verify the outputs")
    return "\n".join(lines)


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)
