"""The source documents' own figures, each beside the same figure on this device, and the
guide's verdict on whether the documents' claim holds here.

Every figure is a ratio of two measurements the source gives (a speed-up, a slowdown), because
a 2009 GPU's absolute GB/s says nothing about today's; the same ratio is computed from this
device's verified rows. Absolute figures (a peak, a timer resolution) are shown as a ratio but
get no verdict: they describe hardware, not an effect. Sources: each experiment's ``guide``
attribute names its section of the documents it reproduces.

The verdict rule, the same for every experiment. Let e = ln(ratio), so 2x faster and 2x
slower are equally large effects, and let the source's effect be e_s, this device's e_d:

* "holds": e_d has the sign of e_s and at least half its size (|e_d| >= |e_s| / 2);
* "changed": the same sign but smaller than that, or within 10% of no effect (|e_d| < ln 1.1);
* "reversed": the opposite sign, beyond 10%.

Where a source states only a direction ("bandwidth falls as stride grows"), e_s is that sign and
the size test is dropped: "holds" beyond 10% that way, "changed" within 10%, "reversed" beyond
10% the other way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from ..measure.results import OK, Results

NO_EFFECT = math.log(1.1)
HOLDS, CHANGED, REVERSED = "holds", "changed", "reversed"


@dataclass(frozen=True)
class SourceFigure:
    experiment: str
    source: str        # what the document says, with its device
    what: str          # the ratio, in words (both for the source and this device)
    ratio: float | None  # the source's ratio; None where it states a direction only, or for an
    # absolute figure (whose ``measure`` already divides this device's figure by the source's)
    direction: int     # +1: the ratio is expected above 1; -1: below 1
    measure: Callable[[Results], float | None]  # this device's ratio; None where it cannot be had
    absolute: bool = False  # a hardware figure: a ratio is shown, no verdict
    # Where the record names its own source figure (another tool's on the same device): the
    # metadata key holding that figure's description, shown instead of ``source``.
    source_key: str | None = None


def _ok(results: Results) -> Any:
    df = results.df
    return df[df["status"] == OK] if "status" in df else df.iloc[0:0]


def _value(results: Results, column: str, metric: str, value: Any) -> float | None:
    rows = _ok(results)
    if column not in rows or metric not in rows:
        return None
    hit = rows[rows[column].astype(str) == str(value)]
    return float(hit[metric].median()) if not hit.empty else None


def _ratio(results: Results, column: str, metric: str, top: Any, bottom: Any) -> float | None:
    a, b = _value(results, column, metric, top), _value(results, column, metric, bottom)
    return a / b if a is not None and b else None


def _largest_stride_ratio(results: Results) -> float | None:
    rows = _ok(results)
    if rows.empty or "stride" not in rows:
        return None
    far = rows[rows["stride"] <= 32]["stride"].max()
    return _ratio(results, "stride", "gbps", far, 1)


def _histogram(results: Results) -> float | None:
    return _ratio(results, "variant", "median_ns", "global / uniform", "local / uniform")


def _meta_ratio(path: tuple[str, ...], reference: float) -> Callable[[Results], float | None]:
    """A number found at ``path`` in the record's metadata, over ``reference``."""
    def measure(results: Results) -> float | None:
        v: Any = results.meta
        for k in path:
            v = v.get(k) if isinstance(v, dict) else None
        return float(v) / reference if isinstance(v, (int, float)) and v else None
    return measure


FIGURES: dict[str, SourceFigure] = {f.experiment: f for f in (
    SourceFigure("timers", "Guide 2.1: GPU timer resolution about 0.5 µs",
                 "profiling timer resolution / 0.5 µs", None, -1,
                 _meta_ratio(("device", "profiling_timer_resolution_ns"), 500.0), absolute=True),
    SourceFigure("peak", "Guide 2.2.1: GTX 280, 1107 MHz x 512 bit -> 141.6 GB/s",
                 "theoretical bandwidth / 141.6 GB/s", None, +1, _meta_ratio(("peak_gbps",), 141.6),
                 absolute=True),
    SourceFigure("transfer", "Guide 3.1: pinned > 5 GB/s; Reverse (9600 GT): pageable H2D 2.27 GB/s",
                 "H2D pinned / H2D pageable bandwidth", 5.0 / 2.27, +1,
                 lambda r: _ratio(r, "mode", "gbps", "h2d pinned direct", "h2d pageable direct")),
    SourceFigure("offset", "Guide Fig. 3.7 (8800 GTX): ~7 GB/s misaligned vs ~74 GB/s aligned",
                 "bandwidth at offset 1 / offset 0", 7.0 / 74.0, -1,
                 lambda r: _ratio(r, "offset", "gbps", 1, 0)),
    SourceFigure("stride", "Guide Fig. 3.9: bandwidth falls as the stride grows",
                 "bandwidth at the largest stride <= 32 / stride 1", None, -1, _largest_stride_ratio),
    SourceFigure("vector", "Reverse (9600 GT): char 26.0 ms -> uint16 1.48 ms",
                 "time of reverse uchar / reverse uint16", 26.0 / 1.48, +1,
                 lambda r: _ratio(r, "variant", "median_ns", "reverse uchar", "reverse uint16")),
    # Not a 2009 document's figure but another tool's on this same device, where one is on
    # record (reference/tool_figures.json, or the experiment's reference_read_gbps=), so absolute.
    SourceFigure("bandwidth", "no other tool's read figure on record for this device",
                 "best verified read / the other tool's read", None, +1,
                 _meta_ratio(("read_over_reference",), 1.0), absolute=True,
                 source_key="reference_source"),
    SourceFigure("matmul", "Guide Table 3.2 (GTX 280): simple 8.8 GB/s, A and B tiles 29.7 GB/s",
                 "bandwidth of local A+B / simple", 29.7 / 8.8, +1,
                 lambda r: _ratio(r, "variant", "gbps", "local A+B", "simple")),
    SourceFigure("aat", "Guide Table 3.3 (GTX 280): simple 1.1 GB/s, padded tile 30.3 GB/s",
                 "bandwidth of padded tile / simple", 30.3 / 1.1, +1,
                 lambda r: _ratio(r, "variant", "gbps", "padded tile", "simple")),
    SourceFigure("banks", "Guide 3.2.2.1: a 2-way bank conflict doubles the access time",
                 "time at stride 2 / stride 1 (plain layout)", 2.0, +1,
                 lambda r: _banks(r)),
    SourceFigure("constant", "Quasar 9.1 (GTX 980): global 513 ms, f in constant memory 132 ms",
                 "time of global / f constant", 513.0 / 132.0, +1,
                 lambda r: _ratio(r, "variant", "median_ns", "global", "f constant")),
    SourceFigure("texture", "Quasar 9.3 (GeForce 435M): 2-D linear, manual 156 ms vs sampler 109 ms",
                 "time of global / image (linear, clamp)", 156.0 / 109.0, +1,
                 lambda r: _ratio(r, "variant", "median_ns", "global linear clamp_to_edge",
                                  "image linear clamp_to_edge")),
    SourceFigure("rgba", "Quasar 9.6 (GTX 780M): wavelet step, global arrays 513 ms, 4-component "
                 "texture reads and surface writes 176 ms", "time of wavelet interleaved / wavelet "
                 "rgba float image", 513.0 / 176.0, +1,
                 lambda r: _ratio(r, "variant", "median_ns", "wavelet interleaved",
                                  "wavelet rgba float image")),
    SourceFigure("math", "Guide 5.1.4: native functions ~10x faster than the precise ones",
                 "time of precise sin / native sin, on [-pi,pi]", 10.0, +1, lambda r: _math(r)),
    SourceFigure("histogram", "Quasar 9.2 (GTX 980): global atomics 73.7 ms, local histogram 12.8 ms",
                 "time of global / local (uniform data)", 73.7 / 12.8, +1, _histogram),
)}


def _banks(results: Results) -> float | None:
    rows = _ok(results)
    if rows.empty or "layout" not in rows or "slowdown" not in rows:
        return None
    hit = rows[(rows["layout"] == "plain") & (rows["stride"] == 2)]
    return float(hit["slowdown"].median()) if not hit.empty else None


def _math(results: Results) -> float | None:
    rows = _ok(results)
    if rows.empty or not {"function", "impl", "domain"} <= set(rows.columns):
        return None
    sin = rows[(rows["function"] == "sin") & (rows["domain"] == "[-pi,pi]")]
    precise, native = sin[sin["impl"] == "precise"], sin[sin["impl"] == "native"]
    if precise.empty or native.empty:
        return None
    return float(precise["median_ns"].median()) / float(native["median_ns"].median())


def verdict(figure: SourceFigure, device_ratio: float | None) -> str:
    """"holds", "changed" or "reversed" by the rule in the module docstring; "" where there is no
    verdict to give (an absolute figure, or no verified rows to compute this device's ratio)."""
    if figure.absolute or device_ratio is None or not device_ratio > 0:
        return ""
    e_d = math.log(device_ratio)
    sign = figure.direction
    if abs(e_d) < NO_EFFECT:
        return CHANGED
    if (e_d > 0) != (sign > 0):
        return REVERSED
    if figure.ratio is not None and abs(e_d) < abs(math.log(figure.ratio)) / 2:
        return CHANGED
    return HOLDS


def compare_to_source(results: Results | None, experiment: str) -> dict[str, Any] | None:
    """The source's figure, this device's, their ratio and the verdict; None where the sources
    give no figure for the experiment."""
    figure = FIGURES.get(experiment)
    if figure is None:
        return None
    mine = figure.measure(results) if results is not None else None
    source = figure.source
    if figure.source_key and results is not None and results.meta.get(figure.source_key):
        source = str(results.meta[figure.source_key])
    return {"source": source, "what": figure.what, "source_ratio": figure.ratio,
            "device_ratio": mine,
            "device_over_source": mine / figure.ratio if mine is not None and figure.ratio else None,
            "verdict": verdict(figure, mine), "absolute": figure.absolute}
