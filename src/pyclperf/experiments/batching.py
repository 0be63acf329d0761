"""batching: one transfer against many small ones of the same total (Guide 3.1: "batching many
small transfers into one larger transfer performs significantly better")."""

from __future__ import annotations

from typing import Any, Sequence

from .. import _core
from ..measure.stats import MiB
from ..measure.sweep import host_clock_columns
from ..measure.results import Results
from .base import Sweep
from ._transfer import Mode, TransferRig, transfer_limit
from .claims import Claim, Figure, largest, ratio

PIECES = (1, 4, 16, 64, 256, 1024)
MODES = tuple(Mode(d, h) for d in ("h2d", "d2h") for h in ("pageable", "pinned"))


CLAIM_MODE = "h2d pinned direct"  # the mode the claim is judged on: no staging copy to hide it


def many_over_one(results: Results) -> Figure:
    """Time of the most pieces over one piece of the same total, host to device from pinned."""
    most = largest(results, "pieces", mode=CLAIM_MODE)
    return ratio(results, "median_ns", {"mode": CLAIM_MODE, "pieces": most},
                 {"mode": CLAIM_MODE, "pieces": 1})


class Batching(Sweep):
    id = "batching"
    quiet = True  # host-bus transfers: the host's own memory traffic competes
    description = ("one transfer against 4 ... 1024 pieces of the same total (Guide 3.1; `--size` is the"
                   " total in bytes)")
    order = 40
    title = "Batched transfers: N pieces of the same total"
    x = "pieces"
    x_label = "transfers in the batch (same total bytes)"
    guide = "Guide 3.1"
    claim = Claim(
        "one large transfer beats many small ones of the same total", "Guide 3.1 (in words)",
        "time of the most pieces / one piece (h2d pinned)", many_over_one)
    plot = {"kind": "modes", "group": "mode", "logx": True, "logy": False}
    size_arg, values_arg, local_size_arg = "total_bytes", "pieces", None
    adaptive = True  # each transfer timed by the run's policy, as kernel launches are
    # A quick run on a GPU splits 16 MiB rather than 64: the 1,024 pieces are then 16 KiB each,
    # where a transfer's fixed cost weighs more, so the claim's ratio only grows (the H200 on
    # 2026-11-27: 7.4-8.2x at 64 MiB). Its turn at the device, quiet, is the quick guide's longest.
    quick_gpu = {"total_bytes": 16 * MiB}

    def __init__(self, ctx: Any, total_bytes: int | None = None,
                 pieces: Sequence[int] | None = None,
                 modes: Sequence[str | Mode] | None = None) -> None:
        super().__init__(ctx)
        if total_bytes is None:
            total_bytes = min(64 * MiB if ctx.info.is_gpu else 4 * MiB, transfer_limit(ctx.info))
        self.total = int(total_bytes)
        self.pieces = [int(p) for p in (pieces or PIECES)]
        for p in self.pieces:
            if p < 1 or self.total % p:
                raise _core.InvalidArgumentError(
                    f"{self.id}: {self.total} bytes do not split into {p} equal pieces")
        self.modes = [Mode.parse(m) for m in (modes or MODES)]
        if any(m.direction == "d2d" for m in self.modes):
            raise _core.InvalidArgumentError(f"{self.id}: only host transfers are batched, not d2d")
        self.rig = TransferRig(ctx, self.total, self.modes)

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "total_bytes": self.total, "modes": [m.name for m in self.modes]}

    def points(self) -> list[dict[str, Any]]:
        return [{**m.fields(), "pieces": p, "piece_bytes": self.total // p, "size_bytes": self.total}
                for m in self.modes for p in self.pieces]

    def measure(self, point: dict[str, Any], *, warmup: int, repeats: int, method: str,
                verify: bool) -> dict[str, Any]:
        mode = Mode.parse(point["mode"])
        row = self.rig.measure(mode, self.total, pieces=point["pieces"], method=method,
                               warmup=warmup, verify=verify, policy=self.rule(repeats))
        if method == "events":
            # The host clock sees what the events miss: the enqueue cost of every piece.
            host = self.rig.time(mode, self.total, pieces=point["pieces"], method="host",
                                 warmup=warmup, repeats=repeats)
            row.update(host_clock_columns(host, self.total, row["median_ns"]))
        return row

    def peak_kind(self, row: dict[str, Any]) -> str | None:
        return "pcie"
