"""The Guide recommendations that apply to a kernel, each linked to the experiment that tests
it on this device.

A handful of plain rules, on what explain() knows: the tuned parameters' names, the kernel's
source, whether memory or compute binds and how close the kernel comes to that roof, and which
memory level holds its working set. Each recommendation names the experiment (``pyclperf run
<id>`` measures the claim here), the source document's section (the experiment's own ``guide``
attribute), and why it applies; where the experiment states the document's claim (its
``claim``), that too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

WORK_GROUP = re.compile(r"block_size|local|wg|work_?group|group_size|threads", re.IGNORECASE)
TILE = re.compile(r"^(ts|tile|tile_size|wpt|tsm|tsn|tsk|rts|bk|bm|bn)$|tile", re.IGNORECASE)
VECTOR = re.compile(r"^(vec|vw|width|vector|v)$|vec", re.IGNORECASE)
TILED = re.compile(r"tile", re.IGNORECASE)
MATH = re.compile(r"\b(sin|cos|tan|exp|exp2|log|log2|pow|sqrt|rsqrt|powr|divide)\s*\(")
LOCAL = re.compile(r"__local\b|\blocal\s+\w")
INT_DIV = re.compile(r"[^/]/[^/*=]|%")


@dataclass(frozen=True)
class Facts:
    """What a rule may look at."""

    params: Sequence[str]
    source: str
    bound: str            # "memory" or "compute"
    fraction: float       # of the binding roof
    level: str            # the memory roof that applies ("L2", "DRAM copy", ...)
    level_kind: str       # "cache" or "dram"
    uses_local: bool


@dataclass(frozen=True)
class Rule:
    experiment: str
    applies: Callable[[Facts], bool]
    why: Callable[[Facts], str]


def _names(facts: Facts, pattern: re.Pattern[str]) -> list[str]:
    return [p for p in facts.params if pattern.search(p)]


RULES = (
    Rule("blocksize", lambda f: bool(_names(f, WORK_GROUP)),
         lambda f: f"{', '.join(_names(f, WORK_GROUP))} "
                   f"{'set' if len(_names(f, WORK_GROUP)) > 1 else 'sets'} the work-group size: the "
                   "Guide's heuristic is a multiple of the warp, 128 to 256 work-items"),
    Rule("occupancy", lambda f: f.uses_local,
         lambda f: "the kernel uses __local memory, whose size per group limits how many groups "
                   "a compute unit holds at once"),
    Rule("banks", lambda f: f.uses_local,
         lambda f: "the kernel reads __local memory: strided accesses there conflict in banks"),
    Rule("offset", lambda f: f.bound == "memory" and f.fraction < 0.6,
         lambda f: f"memory binds and the kernel reaches {100 * f.fraction:.0f}% of the {f.level} "
                   "roof: misaligned or strided accesses waste the bytes each transaction moves"),
    Rule("stride", lambda f: f.bound == "memory" and f.fraction < 0.6,
         lambda f: "neighbouring work-items should touch neighbouring words (coalescing)"),
    Rule("vector", lambda f: f.bound == "memory" and (f.fraction < 0.8 or bool(_names(f, VECTOR))),
         lambda f: "wider accesses per work-item (float4) reach more of the memory roof"),
    Rule("workingset", lambda f: f.level_kind == "cache",
         lambda f: f"the working set fits {f.level}: launches repeated on the same data are served "
                   "from that cache, a larger problem runs at DRAM's roof"),
    Rule("tiling", lambda f: bool(_names(f, TILE)) or (f.uses_local and bool(TILED.search(f.source))),
         lambda f: "a tiled kernel: tiles in __local memory, work per work-item and prefetching "
                   "decide its speed" + (f" ({', '.join(_names(f, TILE))} look like tile parameters)"
                                         if _names(f, TILE) else "")),
    Rule("ilp", lambda f: f.bound == "compute",
         lambda f: "compute binds: independent operations per work-item hide arithmetic latency"),
    Rule("math", lambda f: bool(MATH.search(f.source)),
         lambda f: "the kernel calls math functions whose native_ versions are much faster, "
                   "at a stated loss of accuracy"),
    Rule("buildopts", lambda f: f.bound == "compute",
         lambda f: "build options (-cl-mad-enable, -cl-fast-relaxed-math) change arithmetic speed"),
    Rule("intops", lambda f: f.bound == "compute" and bool(INT_DIV.search(f.source)),
         lambda f: "integer division and modulo by a power of two cost more than shifts and masks"),
)


def recommendations(facts: Facts) -> list[dict[str, Any]]:
    """The rules that apply, each with its experiment, the document section and why."""
    from ..experiments import REGISTRY
    from ..experiments.claims import claim_of

    out = []
    for rule in RULES:
        if rule.experiment not in REGISTRY or not rule.applies(facts):
            continue
        cls = REGISTRY[rule.experiment]
        item = {"experiment": rule.experiment, "guide": cls.guide, "why": rule.why(facts),
                "run": f"pyclperf run {rule.experiment}"}
        claim = claim_of(cls)
        if claim is not None:
            item["claim"] = claim.source
        out.append(item)
    return out


def uses_local(source: str, values: Sequence[Any] = ()) -> bool:
    """Whether a kernel uses __local memory: declared in its source, or passed LocalMemory."""
    from ..device.program import LocalMemory

    return bool(LOCAL.search(source)) or any(isinstance(v, LocalMemory) for v in values)


__all__ = ["Facts", "RULES", "Rule", "recommendations", "uses_local"]
