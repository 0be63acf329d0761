"""histogram: a 256-bin byte histogram with global atomics vs a local histogram per work-group
(Quasar 9.2.3.1; kernels/histogram.cl).

Each kernel runs on each input distribution:

* ``uniform``: every byte value equally likely; atomics rarely collide;
* ``geometric``: value v with probability p (1 - p)^v, p = 1/4 (values past 255 folded into
  255): a quarter of all values hit bin 0, the next fifth bin 1 ... a realistic skew;
* ``hot``: a value is bin 0 with probability 230/256 (about 90%), otherwise a uniform byte:
  nearly every atomic of a warp lands on one address, the worst contention.

A launch is a zero-fill of the 256-entry histogram (clEnqueueFillBuffer, its own command, so it
never enters the kernel's event time) followed by the kernel. Verification poisons the
histogram first, then runs that launch, so a launch that does not start from zeros fails; the
counts must equal ``np.bincount`` exactly. Rows report values per second (``gvalues_per_s``)
and the effective bandwidth of the input read (n bytes: the histogram's 1 KiB is negligible).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import _core
from ..measure.checks import compare, drawn, poison_device, random_bytes
from ..device.turns import host_only, host_work
from ..measure.results import OK, Results
from ._kit import DEFAULT_LOCAL_SIZE, default_groups, pick, positive
from .base import Check, Experiment, Launch
from .claims import Claim, Figure, ratio

BINS = 256
KERNELS = {"global": "histogram_global", "local": "histogram_local"}
DISTRIBUTIONS = ("uniform", "geometric", "hot")
GEOMETRIC_P = 0.25
HOT_BIN, HOT_OF_256 = 0, 230

# Quasar 9.2.3.1, GeForce GTX 980, 100 runs over a 512 x 512 image.
QUASAR_MS = {"global": 73.7107, "local": 12.765}


@host_work
def make_values(rng: np.random.Generator, distribution: str, n: int) -> np.ndarray:
    """``n`` fresh random bytes drawn from ``distribution`` (see the module docstring)."""
    if distribution == "uniform":
        return random_bytes(rng, n)
    if distribution == "geometric":
        return drawn(rng, n, np.uint8, lambda g, count: np.minimum(
            g.geometric(GEOMETRIC_P, size=count) - 1, BINS - 1))
    if distribution == "hot":
        values = random_bytes(rng, n)
        values[random_bytes(rng, n) < HOT_OF_256] = HOT_BIN
        return values
    raise _core.InvalidArgumentError(
        f"histogram: unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")


CLAIM_DATA = "uniform"  # Quasar's input: no bin hotter than the others


def variant_label(kernel: str, distribution: str) -> str:
    """A row's ``variant``: the kernel ("global" or "local") and the input's distribution."""
    return f"{kernel} / {distribution}"


def global_over_local(results: Results) -> Figure:
    return ratio(results, "median_ns", {"variant": variant_label("global", CLAIM_DATA)},
                 {"variant": variant_label("local", CLAIM_DATA)})


class Histogram(Experiment):
    id = "histogram"
    description = ("256 bins by global atomics vs a local histogram per work-group on uniform, geometric"
                   " and one-bin-heavy inputs (Quasar 9.2; `--size` is the value count)")
    order = 220
    title = "256-bin histogram: global atomics vs a local histogram per work-group"
    x = "variant"
    x_label = "kernel / input"
    guide = "Quasar 9.2.3.1 (histogram with shared memory); Guide 3.2.2"
    claim = Claim(
        "a per-work-group histogram in local memory beats global atomics",
        "Quasar 9.2 (GTX 980): global atomics 73.7 ms, local histogram 12.8 ms",
        "time of global / local (uniform data)", global_over_local, source_ratio=73.7 / 12.8)
    plot = {"kind": "bars", "label": "variant"}
    size_arg, values_arg = "items", None  # items = input values (bytes)
    # The claim's ratio (global atomics over a local histogram) is hundreds on a GPU: 16 Mi
    # values show it as well as 128 Mi, drawn and counted in an eighth of the time.
    quick_gpu = {"items": 1 << 24}

    def __init__(self, ctx: Any, items: int | None = None, local_size: int = DEFAULT_LOCAL_SIZE,
                 groups: int | None = None, kernels: Sequence[str] = tuple(KERNELS),
                 distributions: Sequence[str] = DISTRIBUTIONS) -> None:
        super().__init__(ctx)
        info = ctx.info
        self.local_size = positive(self.id, "work-group size", local_size)
        self.kernels = pick(self.id, list(KERNELS), kernels, "kernels")
        self.distributions = pick(self.id, DISTRIBUTIONS, distributions, "distributions")
        if items is None:
            # 128 Mi values on a GPU (far past its caches; the hot input's global atomics still
            # finish in well under a second), 1 Mi on a CPU device.
            items = 1 << 27 if info.is_gpu else 1 << 20
        self.items = int(items)
        if self.items <= 0 or self.items % 4 or self.items >= 2**32:
            raise _core.InvalidArgumentError(
                f"{self.id}: {self.items} values: need a positive multiple of 4 (the kernels read "
                "uchar4) below 2^32")
        if self.items > info.max_alloc_bytes:
            raise _core.InvalidArgumentError(
                f"{self.id}: {self.items} bytes of input exceed the device's largest allocation "
                f"({info.max_alloc_bytes} bytes)")
        words = self.items // 4
        self.groups = int(groups) if groups is not None else default_groups(info, words, self.local_size)
        if self.groups <= 0:
            raise _core.InvalidArgumentError(f"{self.id}: need at least one work-group, got {self.groups}")
        self.program = ctx.program(file="histogram.cl", defines={"BINS": BINS})
        self.data = ctx.buffer(self.items)
        self.hist = ctx.buffer(BINS * 4)
        self.rng = np.random.default_rng()
        self._loaded: tuple[str, np.ndarray] | None = None  # (distribution, its reference counts)

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "items": self.items, "local_size": self.local_size,
                "groups": self.groups, "geometric_p": GEOMETRIC_P,
                "hot_share": HOT_OF_256 / 256, "quasar_gtx980_ms": QUASAR_MS}

    def points(self) -> list[dict[str, Any]]:
        # Distribution outermost: each input is drawn once and serves both kernels. The claim's
        # input comes last, so a cold check of its points (experiments/_warmcold.py) finds it
        # on the device still and draws nothing again.
        order = ([d for d in self.distributions if d != CLAIM_DATA]
                 + [d for d in self.distributions if d == CLAIM_DATA])
        return [{"variant": variant_label(k, d), "kernel": k, "distribution": d}
                for d in order for k in self.kernels]

    def kernel(self, name: str) -> Any:
        """The named kernel ("global" or "local") with its buffers bound."""
        k = self.program.kernel(KERNELS[name])
        return k.set_args(self.data, np.uint32(self.items // 4), self.hist)

    def reset(self) -> None:
        self.hist.fill(np.zeros(1, np.uint32))

    def load(self, distribution: str) -> np.ndarray:
        """Write fresh input of ``distribution`` to the device (once per distribution); its counts."""
        if self._loaded is None or self._loaded[0] != distribution:
            with host_only():
                values = make_values(self.rng, distribution, self.items)
                counts = np.bincount(values, minlength=BINS).astype(np.uint32)
            self.data.write(values)
            self._loaded = (distribution, counts)
        return self._loaded[1]

    def launch(self, point: dict[str, Any]) -> Launch:
        expected = self.load(point["distribution"])
        return Launch.one(self.kernel(point["kernel"]), self.groups * self.local_size,
                          self.local_size, self.items, reset=self.reset,
                          columns={"items": self.items, "local_size": self.local_size,
                                   "groups": self.groups,
                                   "top_bin_share": float(expected.max()) / self.items},
                          rates={"gvalues_per_s": self.items})  # values per ns = 1e9 per s

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        expected = self.load(point["distribution"])
        poison_device(self.hist)
        launch.run()  # the reset zeroes the poisoned histogram first
        got = np.empty(BINS, np.uint32)
        self.hist.read(got)
        return Check(*compare(got, expected, "bins"))

    def finish(self, results: Any) -> None:
        """The local histogram's speed-up over global atomics per input, Quasar's beside it."""
        ok = {(r["kernel"], r["distribution"]): r for r in results.rows if r.get("status") == OK}
        speedup = {d: ok[("global", d)]["median_ns"] / ok[("local", d)]["median_ns"]
                   for d in self.distributions if ("global", d) in ok and ("local", d) in ok}
        quasar = QUASAR_MS["global"] / QUASAR_MS["local"]
        source = (f"Quasar (GTX 980, 100 runs on 512x512): global {QUASAR_MS['global']:.1f} ms vs "
                  f"local {QUASAR_MS['local']:.1f} ms = {quasar:.1f}x")
        if not speedup:
            results.meta["conclusion"] = f"no input had both kernels verified; {source}"
            return
        results.meta["local_speedup"] = speedup
        parts = [f"{d} {s:.1f}x ({ok[('global', d)]['median_ns'] / 1e6:.3g} -> "
                 f"{ok[('local', d)]['median_ns'] / 1e6:.3g} ms)" for d, s in speedup.items()]
        results.meta["conclusion"] = ("local histogram over global atomics: " + ", ".join(parts)
                                      + f"; {source}")

    @classmethod
    def summary(cls, results: Any) -> Any:
        df = results.df
        cols = ["variant", "status", "top_bin_share", "median_ns", "spread_pct", "gvalues_per_s",
                "gbps"]
        return df[[c for c in cols if c in df]]
