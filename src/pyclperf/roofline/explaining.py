"""``pyclperf explain``: a tuned kernel on this device's measured roofline.

For the best configuration (or a chosen one) of a tune run, and for every verified one as a
point: the bytes moved (traffic.py: compulsory traffic from the argument qualifiers, or the
user's ``bytes(config)``), the FLOPs where ``flops(config)`` is given, the achieved GB/s and
FLOP/s, the arithmetic intensity, the roof that binds given the working set (the smallest cache
level the arrays fit in: its read figure for a kernel that only reads, the higher of its read
and copy figures for one that writes; else DRAM: read, write or copy as the kernel reads, writes
or does both) and the % of it reached; the sensitivity of time to each tuned parameter from the rows
already measured; the Guide recommendations that apply (advice.py); a figure and a text summary.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..measure.results import OK, TIMED, Results
from . import advice, traffic
from .binding import SPILL, level_roof, memory_roof
from .memory import size_text
from .profiling import Profile, Roof
from .refresh import BEATEN

Config = dict


@dataclass
class Explanation:
    """What explain() found; ``text()`` says it, ``figure()`` draws it, ``as_dict()`` stores it."""

    kernel: str
    device: str
    config: Config
    best: bool
    verified: bool
    time_s: float
    spread_pct: float | None
    bytes: float
    bytes_how: str
    working_set: int
    gbps: float
    flops: float | None
    gflops: float | None
    intensity: float | None
    memory_roof: Roof
    compute_roof: Roof | None
    bound: str
    attainable: float
    unit: str
    fraction: float
    level_why: str
    points: list[dict[str, Any]]
    sensitivity: list[dict[str, Any]]
    recommendations: list[dict[str, Any]]
    memory_roofs: list[Roof] = field(default_factory=list)
    compute_roofs: list[Roof] = field(default_factory=list)
    launch: dict[str, Any] = field(default_factory=dict)  # the shape known: local_size, vector
    refreshed: str | None = None  # what measuring the beaten roof again changed (explain's refresh)

    @property
    def binding(self) -> Roof:
        return self.memory_roof if self.bound == "memory" or self.compute_roof is None else self.compute_roof

    @property
    def beaten(self) -> bool:
        """Whether the kernel runs more than BEATEN above its roof: the profile is wrong there."""
        return self.fraction > BEATEN

    def headline(self) -> str:
        """The binding roof and the share of it, in one line; never a share above 100%: a
        kernel at or above its roof is said to be at it (within the 5% a measurement allows)
        or above it (the profile is wrong)."""
        roof = self.binding
        where = (f"{self.fraction * 100:.1f}% of" if self.fraction <= 1.0 else
                 "at" if not self.beaten else "above")
        return (f"{where} the {roof.name} roof "
                f"({self.attainable:,.1f} {self.unit} attainable at this intensity, "
                f"{roof.value:,.1f} {roof.unit} measured): {self.bound}-bound")

    def wrong_roof(self) -> str:
        """The one line that says the profile is wrong here ("" where it is not)."""
        if not self.beaten:
            return ""
        return (f"the profile is wrong: this kernel reaches {self.fraction:.2f}x the measured "
                f"{self.binding.name} roof, which should be a ceiling; measure it again from this "
                "kernel's launch shape: explain(..., refresh=True), or pyclperf explain SPEC --refresh")

    def text(self) -> str:
        cfg = ", ".join(f"{k}={v}" for k, v in self.config.items())
        which = "best configuration" if self.best else "chosen configuration"
        lines = [f"{self.kernel} on {self.device}: {which} {cfg} "
                 f"({'verified' if self.verified else 'timed, not verified'})",
                 f"  time {self.time_s * 1e3:.4g} ms (median" + (f", spread {self.spread_pct:.1f}%)"
                                                                  if self.spread_pct is not None else ")"),
                 f"  bytes {self.bytes / 1e6:.4g} MB ({self.bytes_how}); working set {size_text(self.working_set)}",
                 f"  achieved {self.gbps:,.2f} GB/s" + (
                     f", {self.gflops:,.2f} GFLOP/s at {self.intensity:.3g} FLOP/byte"
                     if self.gflops is not None and self.intensity is not None else "; FLOPs not given"),
                 f"  memory roof: {self.memory_roof.label()} ({self.level_why})"]
        if self.compute_roof is not None:
            lines.append(f"  compute roof: {self.compute_roof.label()}")
        lines.append(f"  => {self.headline()}")
        if self.refreshed:
            lines.append(f"  refresh: {self.refreshed}")
        if self.beaten:
            lines.append(f"  {self.wrong_roof()}")
        for s in self.sensitivity:
            around = (f"; around this configuration {s['around_ratio']:.2f}x"
                      if s.get("around_ratio") is not None else "")
            lines.append(f"  {s['param']} moves the median time {s['ratio']:.2f}x over its values "
                         f"(fastest {s['fastest']}, slowest {s['slowest']}){around}")
        for r in self.recommendations:
            lines.append(f"  Guide: {r['experiment']} ({r['guide']}): {r['why']}; test it here: {r['run']}")
        return "\n".join(lines)

    __str__ = text

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: what the report needs to say and draw it again without the profile."""
        from dataclasses import asdict

        out = asdict(self)
        out["headline"], out["text"] = self.headline(), self.text()
        return out

    def figure(self, ax: Any = None) -> Any:
        """The roofline with the configurations as points (the bandwidth chart where no FLOP
        count was given)."""
        return draw(self.as_dict(), ax=ax)

    def save_figure(self, path: str | os.PathLike[str]) -> Path:
        import matplotlib.pyplot as plt

        fig = self.figure()
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(p, dpi=110)
        plt.close(fig)
        return p


def draw(d: dict[str, Any], ax: Any = None) -> Any:
    """The figure of an explanation's dict (as_dict), as the report draws it."""
    from .plot import plot_bandwidth_roofs, plot_roofline

    title = f"{d['kernel']} on {d['device']}\n{d['headline']}"
    if d.get("flops") and d.get("compute_roofs"):
        return plot_roofline(d, d["points"], ax=ax, title=title)
    return plot_bandwidth_roofs(d, d["points"], ax=ax, title=title, binding=d["memory_roof"]["name"])


def launch_shape(config: Config, counted: Sequence[traffic.ArgTraffic]) -> dict[str, Any]:
    """What is known of a configuration's launch shape: its work-group size (the tuned
    parameter that names one, x first) and the widest vector its array arguments hold."""
    out: dict[str, Any] = {}
    groups = sorted((k for k in config if advice.WORK_GROUP.search(k)), key=lambda k: (not k.endswith("_x"), k))
    if groups and isinstance(config[groups[0]], int):
        out["local_size"] = int(config[groups[0]])
    widths = [int(m.group(1)) if m.group(1) else 1 for a in counted if a.role != traffic.NONE
              for m in [re.match(r"^[a-z ]*?(\d*)\s*\*?$", a.type_name.strip())] if m]
    if widths:
        out["vector"] = max(widths)
    return out


def _rows(results: Results) -> tuple[list[dict[str, Any]], bool]:
    ok = [r for r in results.rows if r.get("status") == OK and r.get("time_ms")]
    if ok:
        return ok, True
    timed = [r for r in results.rows if r.get("status") == TIMED and r.get("time_ms")]
    if timed:
        return timed, False
    raise ValueError(f"{results.experiment}: no verified (or timed) configuration to explain "
                     f"among {len(results.rows)} rows")


def _choose(rows: list[dict[str, Any]], params: Sequence[str], config: Config | None) -> dict[str, Any]:
    if not config:
        return min(rows, key=lambda r: float(r["time_ms"]))
    unknown = sorted(set(config) - set(params))
    if unknown:
        raise ValueError(f"config names {unknown}, which are not tuned parameters ({', '.join(params)})")
    hits = [r for r in rows if all(str(r.get(k)) == str(v) for k, v in config.items())]
    if not hits:
        raise ValueError(f"no verified configuration has {config}")
    return min(hits, key=lambda r: float(r["time_ms"]))


def sensitivity(rows: list[dict[str, Any]], params: Sequence[str], chosen: dict[str, Any]) -> list[dict[str, Any]]:
    """Per tuned parameter with several values: the median time at each value, the ratio of the
    slowest value to the fastest, and the same ratio among the chosen configuration's
    neighbours (the rows equal to it in every other parameter). Largest effect first."""
    out = []
    for p in params:
        by: dict[str, list[float]] = {}
        for r in rows:
            by.setdefault(str(r.get(p)), []).append(float(r["time_ms"]))
        if len(by) < 2:
            continue
        med = {v: sorted(ts)[len(ts) // 2] if len(ts) % 2 else sum(sorted(ts)[len(ts) // 2 - 1: len(ts) // 2 + 1]) / 2
               for v, ts in by.items()}
        fastest, slowest = min(med, key=med.get), max(med, key=med.get)  # type: ignore[arg-type]
        near = [r for r in rows if all(str(r.get(q)) == str(chosen.get(q)) for q in params if q != p)]
        times = [float(r["time_ms"]) for r in near]
        out.append({"param": p, "median_ms": med, "ratio": med[slowest] / med[fastest],
                    "fastest": fastest, "slowest": slowest,
                    "around_ratio": max(times) / min(times) if len(times) > 1 else None,
                    "around_ms": {str(r.get(p)): float(r["time_ms"]) for r in near}})
    return sorted(out, key=lambda s: -s["ratio"])


def explain(results: Results | str | os.PathLike[str], profile: Profile | None = None, *,
            source: str | None = None, args: Sequence[Any] | None = None,
            kernel_name: str | None = None, inout: Sequence[int | str] = (), options: str = "",
            config: Config | None = None, bytes: Callable[[Config], float] | None = None,
            flops: Callable[[Config], float] | None = None, precision: str = "fp32",
            ctx: Any = None, quick: bool = False, refresh: bool = False) -> Explanation:
    """Explain a tune run (Results, its .jsonl file, or a tune spec's .json: see explain_spec)
    on the device's profile (default: the cached one, full or quick, else one measured now,
    quick with ``quick``). The bytes come from the
    kernel's argument qualifiers (``source``, ``args`` and ``inout`` as given to tune) unless
    ``bytes(config)`` is given; FLOPs from ``flops(config)`` (in ``precision``: fp32, fp64,
    fp16 or int32). ``config`` picks a configuration (default: the fastest verified one).
    ``refresh``: where the kernel beats its roof (``beaten``), that ceiling is measured again
    from the kernel's launch shape, as ``pyclperf explain --refresh`` does, and the kernel placed
    on the new figure; ``refreshed`` then says what changed."""
    from . import profiling

    if not isinstance(results, Results) and str(results).endswith(".json"):
        return explain_spec(results, profile, config=config, bytes=bytes, flops=flops,
                            precision=precision, ctx=ctx, quick=quick)[0]
    res = results if isinstance(results, Results) else Results.load(results)
    rows, verified = _rows(res)
    params = list(res.meta.get("params") or res.meta.get("tune_params") or {})
    chosen = _choose(rows, params, config)
    cfg = {p: chosen[p] for p in params}
    if ctx is None and (profile is None or bytes is None or refresh):
        from ..device.context import Context

        dev = res.meta.get("device", {})
        ctx = Context(f"{dev['platform_index']}:{dev['device_index']}" if "platform_index" in dev else None)
    if profile is None:  # any cached profile (a full one first), else one measured now
        profile = profiling.cached(ctx.info) or profiling.profile(ctx, quick=quick)
    if precision not in profile.ceilings or precision not in ("fp32", "fp64", "fp16", "int32"):
        raise ValueError(f"precision must be fp32, fp64, fp16 or int32, got {precision!r}")
    name = kernel_name or str(res.meta.get("kernel") or "")
    infos = None
    if bytes is None:
        if source is None or args is None:
            raise ValueError("to count bytes from the kernel's arguments, give source= and args= "
                             "(as passed to tune), or give bytes=lambda config: ...")
        text = Path(source).read_text() if isinstance(source, Path) else source
        infos = traffic.kernel_infos(ctx, text, name, cfg, options)
    counted = traffic.arg_traffic(infos, args, inout, cfg) if infos is not None else []

    def bytes_of(c: Config) -> float:
        if bytes is not None:
            return float(bytes(c))
        return float(traffic.count(traffic.arg_traffic(infos, args, inout, c)))  # type: ignore[arg-type]

    moved = bytes_of(cfg)
    ws = traffic.working_set(counted) if counted else int(moved)
    reads = any(a.read for a in counted) if counted else True
    writes = any(a.written for a in counted) if counted else True
    mem, level_why = memory_roof(profile, ws, reads, writes)
    compute = next((r for r in profile.compute_roofs() if r.name == precision.upper()), None) if flops else None
    points = []
    for r in rows:
        c = {p: r[p] for p in params}
        b, t = bytes_of(c), float(r["time_ms"]) / 1e3
        f = float(flops(c)) if flops is not None else None
        points.append({"label": ", ".join(f"{k}={v}" for k, v in c.items()), "config": c,
                       "time_s": t, "gbps": b / t / 1e9, "gflops": f / t / 1e9 if f else None,
                       "intensity": f / b if f and b else None, "chosen": r is chosen})
    me = next(p for p in points if p["chosen"])
    if compute is not None and me["intensity"]:
        attainable = min(compute.value, me["intensity"] * mem.value)
        bound = "memory" if me["intensity"] * mem.value < compute.value else "compute"
        fraction, unit = me["gflops"] / attainable, compute.unit
    else:
        attainable, bound, fraction, unit = mem.value, "memory", me["gbps"] / mem.value, "GB/s"
    facts = advice.Facts(params, text if bytes is None else (source or ""), bound, fraction, mem.name,
                         mem.kind, advice.uses_local(source or "", args or ()))
    how = traffic.describe(counted) if counted else "counted by the bytes(config) given"
    found = Explanation(
        kernel=name, device=profile.device, config=cfg, best=not config, verified=verified,
        time_s=me["time_s"], spread_pct=chosen.get("spread_pct"), bytes=moved, bytes_how=how,
        working_set=ws, gbps=me["gbps"], flops=float(flops(cfg)) if flops else None, gflops=me["gflops"],
        intensity=me["intensity"], memory_roof=mem, compute_roof=compute, bound=bound,
        attainable=attainable, unit=unit, fraction=fraction, level_why=level_why, points=points,
        sensitivity=sensitivity(rows, params, chosen), recommendations=advice.recommendations(facts),
        launch=launch_shape(cfg, counted),
        memory_roofs=profile.memory_roofs(), compute_roofs=profile.compute_roofs())
    if not (refresh and found.beaten):
        return found
    from .refresh import Hints, remeasure

    hints = Hints(found.launch.get("local_size"), found.launch.get("vector"), ws)
    said = remeasure(ctx, profile, found.binding, hints, found.fraction * found.binding.value)
    again = explain(res, profile, source=source, args=args, kernel_name=kernel_name, inout=inout,
                    options=options, config=config, bytes=bytes, flops=flops, precision=precision, ctx=ctx)
    again.refreshed = said
    return again


def spec_results(kwargs: dict[str, Any], ctx: Any, retune: bool = False,
                 say: Callable[[str], None] = lambda text: None) -> Results:
    """A parsed tune spec's results: its results file (``out``) where that holds the spec's
    kernel and parameters, else a tune run now (which writes that file)."""
    from ..tuner.options import from_flat
    from ..tuner.tune import tune

    out = kwargs.get("out")
    if out and Path(out).is_file() and not retune:
        res = Results.load(out)
        if res.meta.get("kernel") == kwargs["kernel_name"] and \
                set(res.meta.get("params") or {}) == set(kwargs["params"]):
            say(f"reading {out} ({len(res.rows)} configurations)")
            return res
    say(f"tuning {kwargs['kernel_name']} on {ctx.info.name} first")
    return tune(**from_flat({**kwargs, "ctx": ctx}))


def explain_spec(spec: str | os.PathLike[str], profile: Profile | None = None, *,
                 config: Config | None = None, bytes: Callable[[Config], float] | None = None,
                 flops: Callable[[Config], float] | None = None, precision: str = "fp32",
                 ctx: Any = None, quick: bool = False, retune: bool = False,
                 say: Callable[[str], None] = lambda text: None) -> tuple[Explanation, Results]:
    """Explain a tune spec (as ``pyclperf tune`` takes): its results file, or a tune run
    first; the kernel's source, arguments, ``inout`` and compiler options from the spec."""
    from ..device.context import Context
    from ..tuner.inputs import options_text
    from ..tuner.spec import parse_spec
    from . import profiling

    kwargs = dict(parse_spec(spec).kwargs)
    ctx = Context() if ctx is None else ctx
    results = spec_results(kwargs, ctx, retune, say)
    if profile is None:
        profile = profiling.cached(ctx.info) or profiling.profile(
            ctx, quick=quick, progress=lambda part: say(f"  profile: measuring {part} ..."))
    found = explain(results, profile, source=kwargs["source"], args=kwargs["args"],
                    kernel_name=kwargs["kernel_name"], inout=kwargs.get("inout", ()),
                    options=options_text("", kwargs.get("compiler_options")), config=config,
                    bytes=bytes, flops=flops, precision=precision, ctx=ctx)
    return found, results


__all__ = ["Explanation", "SPILL", "draw", "explain", "explain_spec", "level_roof", "memory_roof",
           "sensitivity", "spec_results"]
