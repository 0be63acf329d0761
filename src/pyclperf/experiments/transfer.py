"""transfer: host <-> device and device copies over a size sweep (Guide 3.1; Reverse's
oclBandwidthTest), in every mode of _transfer.py: direction x host memory x access."""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from .. import _core
from ..measure.results import OK, Results
from ..measure.stats import KiB, MiB
from .base import Sweep
from ._transfer import ALL_MODES, Mode, TransferRig, sizes_up_to, transfer_limit
from .claims import Claim, Figure, pooled, rows_for


def plateau(results: Any, largest: int = 3) -> pd.DataFrame:
    """Per mode, the median bandwidth over its ``largest`` sizes: where the curve flattens out."""
    df = results.df
    if df.empty or "gbps" not in df:
        return pd.DataFrame(columns=["mode", "gbps", "from_bytes", "to_bytes", "points"])
    ok = df[df["status"] == OK]
    rows = []
    for mode, group in ok.groupby("mode", sort=False):
        top = group.nlargest(largest, "size_bytes")
        row = {"mode": mode, "gbps": float(top["gbps"].median()),
               "from_bytes": int(top["size_bytes"].min()), "to_bytes": int(top["size_bytes"].max()),
               "points": len(top)}
        if "fraction_of_peak" in top and top["fraction_of_peak"].notna().any():
            row["fraction_of_peak"] = float(top["fraction_of_peak"].median())
        rows.append(row)
    return pd.DataFrame(rows)


PINNED_H2D, PAGEABLE_H2D = "h2d pinned direct", "h2d pageable direct"
# The claim's figure is each mode's plateau: the median bandwidth of its largest sizes, as the
# sources quote sustained transfer rates (oclBandwidthTest times one 32 MB transfer). A median
# over the whole sweep from 1 KiB would move with the sweep's range: small transfers are
# latency, alike in both modes.
PLATEAU_SIZES = 3


def plateau_rows(results: Results, mode: str) -> list[dict[str, Any]]:
    """The verified rows of ``mode`` at its PLATEAU_SIZES largest verified sizes."""
    rows = sorted(rows_for(results, mode=mode), key=lambda r: r["size_bytes"])
    return rows[-PLATEAU_SIZES:]


def pinned_over_pageable(results: Results) -> Figure:
    return (pooled(plateau_rows(results, PINNED_H2D), "gbps")
            / pooled(plateau_rows(results, PAGEABLE_H2D), "gbps"))


# The default sweep's top on a GPU: every mode has reached its plateau well before (pinned
# transfers from 16 MiB on an H200), and the 1 GiB points, 13 transfers each in nine modes,
# took ten seconds of the guide. --size takes the sweep further, up to transfer_limit.
GPU_TOP = 256 * MiB


class Transfer(Sweep):
    id = "transfer"
    quiet = True  # host-bus transfers: the host's own memory traffic competes
    description = ("H2D, D2H, D2D x pageable/pinned x direct/mapped, 1 KiB to 256 MiB, every transfer "
                   "checked (Guide 3.1; `--size` is the largest transfer in bytes)")
    order = 30
    title = "Host <-> device transfers"
    x = "size_bytes"
    x_label = "transfer size (bytes)"
    guide = "Guide 3.1, 3.1.1; Reverse (oclBandwidthTest)"
    claim = Claim(
        "pinned host memory makes host-to-device copies faster than pageable memory",
        "Guide 3.1.1: pinned > 5 GB/s; Reverse (9600 GT): pageable H2D 2.27 GB/s",
        "H2D pinned / H2D pageable bandwidth at the three largest sizes", pinned_over_pageable,
        source_ratio=5.0 / 2.27)
    plot = {"kind": "modes", "group": "mode", "logx": True, "logy": True}
    size_arg, values_arg, local_size_arg = "max_bytes", "sizes", None  # bytes
    adaptive = True  # each transfer timed by the run's policy, as kernel launches are
    # The plateau (the claim's figure) holds from a few MiB: a quick sweep ends at 64 MiB.
    quick_gpu = {"max_bytes": 64 * MiB}

    def __init__(self, ctx: Any, sizes: Sequence[int] | None = None,
                 modes: Sequence[str | Mode] | None = None, max_bytes: int | None = None) -> None:
        super().__init__(ctx)
        limit = transfer_limit(ctx.info)
        if sizes is None:
            if max_bytes is not None and not KiB <= max_bytes <= limit:
                # An error, not a clamp: a silently smaller sweep reads like the one asked for.
                raise _core.InvalidArgumentError(
                    f"{self.id}: --size {max_bytes} bytes is outside {KiB}..{limit} (the smallest "
                    f"transfer swept, and the largest that fits on '{ctx.info.name}')")
            # Up to 256 MiB on a GPU (oclBandwidthTest goes to 1 GiB: --size), 16 MiB on a CPU device (PoCL).
            top = max_bytes if max_bytes is not None else (GPU_TOP if ctx.info.is_gpu else 16 * MiB)
            sizes = sizes_up_to(min(top, limit))
        self.sizes = [int(s) for s in sizes]
        if not self.sizes or min(self.sizes) <= 0:
            raise _core.InvalidArgumentError(f"{self.id}: sizes must be positive, got {self.sizes}")
        self.modes = [Mode.parse(m) for m in (modes or ALL_MODES)]
        self.rig = TransferRig(ctx, max(self.sizes), self.modes)

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "sizes": self.sizes, "modes": [m.name for m in self.modes]}

    def points(self) -> list[dict[str, Any]]:
        return [{**m.fields(), "size_bytes": n} for m in self.modes for n in self.sizes]

    def measure(self, point: dict[str, Any], *, warmup: int, repeats: int, method: str,
                verify: bool) -> dict[str, Any]:
        return self.rig.measure(Mode.parse(point["mode"]), point["size_bytes"], method=method,
                                warmup=warmup, verify=verify, policy=self.rule(repeats))

    def peak_kind(self, row: dict[str, Any]) -> str | None:
        return Mode.parse(row["mode"]).peak_kind

    @classmethod
    def summary(cls, results: Any) -> pd.DataFrame:
        return plateau(results)
