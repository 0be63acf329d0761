"""aos: one particle update in five memory layouts (Tradeoffs, "AoS vs SoA" and "SoAoS").

Array of structs (24-byte particles), the same bytes read as three float2, a 16-byte aligned
float4 + float2 struct (32 bytes with padding), struct of arrays, Tradeoffs' structure of arrays
of structures (a float4 array and a float2 array) and blocked AoSoA (kernels/aos.cl, one
build). Every layout needs the same 48 bytes per particle; the effective bandwidth shows what
each layout's access pattern costs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .. import _core
from ..measure.checks import POISON_U32, compare_close, max_abs_error, poison_device
from ..device.turns import host_only, host_work
from ..device.program import ceil_to
from ..measure.results import OK, Results
from ..measure.staging import read_back, write_from
from ._kit import DEFAULT_LOCAL_SIZE, EPS32, pick, positive
from .base import Check, Experiment, Launch, noise_note
from .claims import Claim, Figure, ratio

FIELDS = 6  # x, y, z, vx, vy, vz
PARTICLE_BYTES = FIELDS * 4
BLOCK = 32  # particles per AoSoA block

# Step parameters: a 1 ms step with some drag and gravity.
DT, DAMP, GRAVITY = 1e-3, 0.999, 9.81


def _aos(p: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(p)


def _from_aos(raw: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    return raw.reshape(n, FIELDS), np.zeros(0, np.float32)


def _aos16(p: np.ndarray) -> np.ndarray:
    out = np.empty((len(p), 8), np.float32)
    out[:, :FIELDS] = p
    out[:, FIELDS:] = np.frombuffer(POISON_U32.tobytes() * 2, np.float32)
    return out


def _from_aos16(raw: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    r = raw.reshape(n, 8)
    return r[:, :FIELDS], r[:, FIELDS:]  # the padding must keep the poison


def _soa(p: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(p.T)


def _from_soa(raw: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    return raw.reshape(FIELDS, n).T, np.zeros(0, np.float32)


def _soaos(p: np.ndarray) -> np.ndarray:
    return np.concatenate([p[:, :4].ravel(), p[:, 4:].ravel()])


def _from_soaos(raw: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.hstack([raw[:4 * n].reshape(n, 4), raw[4 * n:6 * n].reshape(n, 2)]), np.zeros(0, np.float32)


def _aosoa(p: np.ndarray) -> np.ndarray:
    n = len(p)
    return np.ascontiguousarray(p.reshape(n // BLOCK, BLOCK, FIELDS).transpose(0, 2, 1))


def _from_aosoa(raw: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    return raw.reshape(n // BLOCK, FIELDS, BLOCK).transpose(0, 2, 1).reshape(n, FIELDS), np.zeros(0, np.float32)


@dataclass(frozen=True)
class Layout:
    name: str
    kernel: str
    stored_bytes: int  # bytes per particle in memory (padding included)
    pack: Callable[[np.ndarray], np.ndarray]  # (n, 6) particles -> the buffer's floats
    unpack: Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]  # -> particles, padding


# The labels the claim below names its rows by (the rows' ``layout``).
AOS, SOA = "AoS", "SoA"
LAYOUTS = {v.name: v for v in (
    Layout(AOS, "update_aos", 24, _aos, _from_aos),
    Layout("AoS float2 (8-byte aligned)", "update_aos8", 24, _aos, _from_aos),
    Layout("AoS float4+float2 (16-byte aligned)", "update_aos16", 32, _aos16, _from_aos16),
    Layout(SOA, "update_soa", 24, _soa, _from_soa),
    Layout("SoAoS (float4[] + float2[])", "update_soaos", 24, _soaos, _from_soaos),
    Layout(f"AoSoA (blocks of {BLOCK})", "update_aosoa", 24, _aosoa, _from_aosoa),
)}


@host_work
def step_reference(p: np.ndarray) -> np.ndarray:
    """The kernels' update in float64: v *= damp; vz -= g dt; p += v dt."""
    q = p.astype(np.float64)
    dt, damp, g = (float(np.float32(c)) for c in (DT, DAMP, GRAVITY))
    q[:, 3:] *= damp
    q[:, 5] -= g * dt
    q[:, :3] += q[:, 3:] * dt
    return q


def aos_over_soa(results: Results) -> Figure:
    return ratio(results, "median_ns", {"layout": AOS}, {"layout": SOA})


class StructLayout(Experiment):
    id = "aos"
    host_bound = True  # its references and checks: most of its seconds on a GPU
    description = ("a particle update in AoS, float2-read AoS, a 16-byte aligned struct, SoA, SoAoS and "
                   "AoSoA (Tradeoffs; `--size` is the particle count)")
    order = 80
    title = "Particle update: AoS, SoA, aligned structs and SoAoS"
    x = "layout"
    x_label = "layout"
    guide = "Tradeoffs (AoS vs SoA, alignment, SoAoS)"
    claim = Claim(
        "a struct of arrays beats an array of structs: its reads coalesce",
        "Tradeoffs, AoS vs SoA (in words, G80)", "time of AoS / SoA", aos_over_soa)
    plot = {"kind": "bars", "label": "layout"}
    size_arg, values_arg = "particles", None

    def __init__(self, ctx: Any, particles: int | None = None, local_size: int = DEFAULT_LOCAL_SIZE,
                 layouts: Sequence[str] | None = None) -> None:
        super().__init__(ctx)
        info = ctx.info
        self.layouts = pick(self.id, LAYOUTS, layouts, "layouts")
        self.local_size = positive(self.id, "work-group size", local_size)
        if particles is None:
            # 8 Mi particles (192-256 MiB per buffer, far past the L2) on a GPU; 64 Ki on a CPU.
            particles = 1 << 23 if info.is_gpu else 1 << 16
            widest = max(v.stored_bytes for v in self.layouts)
            while particles > BLOCK and 2 * particles * widest > min(info.max_alloc_bytes, info.global_mem_bytes // 2):
                particles //= 2
        self.n = int(particles)
        if self.n <= 0 or self.n % BLOCK or self.n >= 2**31 // FIELDS:
            raise _core.InvalidArgumentError(
                f"{self.id}: particles must be a positive multiple of {BLOCK} (the AoSoA block) "
                f"below {2**31 // FIELDS}, got {self.n}")
        nbytes = self.n * max(v.stored_bytes for v in self.layouts)
        if nbytes > info.max_alloc_bytes:
            raise _core.InvalidArgumentError(
                f"{self.n} particles need {nbytes} bytes per buffer, over the device's largest "
                f"allocation of {info.max_alloc_bytes} bytes")
        self.src, self.dst = ctx.buffer(nbytes), ctx.buffer(nbytes)
        self.rng = np.random.default_rng()
        self._particles: tuple[np.ndarray, np.ndarray] | None = None

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "particles": self.n, "local_size": self.local_size}

    def points(self) -> list[dict[str, Any]]:
        return [{"layout": v.name, "stored_bytes": v.stored_bytes} for v in self.layouts]

    def bytes_moved(self) -> int:
        """Six floats read and six written per particle, whatever the layout stores."""
        return 2 * PARTICLE_BYTES * self.n

    def global_size(self) -> int:
        return ceil_to(self.n, self.local_size)

    def program(self) -> Any:
        return self.ctx.program(file="aos.cl", defines={"BLOCK": BLOCK})

    def kernel(self, v: Layout) -> Any:
        return self.program().kernel(v.kernel).set_args(
            self.dst, self.src, np.int32(self.n), np.float32(DT), np.float32(DAMP), np.float32(GRAVITY))

    def launch(self, point: dict[str, Any]) -> Launch:
        return Launch.one(self.kernel(LAYOUTS[point["layout"]]), self.global_size(),
                          self.local_size, self.bytes_moved(), columns={"particles": self.n})

    @host_work
    def particles(self) -> tuple[np.ndarray, np.ndarray]:
        """The run's particles and their stepped reference, drawn and computed on first use.
        Every layout's kernel reads ``src`` and writes ``dst`` only, and each point packs the
        particles into ``src`` afresh in its own layout, so all layouts share one draw and one
        reference (per point they cost the guide seconds); outputs are poisoned per point."""
        if self._particles is None:
            p = np.empty((self.n, FIELDS), np.float32)
            p[:, :3] = self.rng.uniform(-1, 1, (self.n, 3))
            p[:, 3:] = self.rng.uniform(-10, 10, (self.n, 3))
            self._particles = (p, step_reference(p))
        return self._particles

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        v = LAYOUTS[point["layout"]]
        p, want = self.particles()
        with host_only():  # packing and unpacking hundreds of MiB: the device's turn is given up
            packed = v.pack(p)
        write_from(self.src, packed)
        poison_device(self.dst)
        launch.run()
        raw = read_back(self.dst, np.float32, self.n * v.stored_bytes // 4)
        with host_only():
            got, padding = v.unpack(raw, self.n)
            intact = bool((padding.view(np.uint32) == POISON_U32).all())
        if not intact:
            return Check(False, "padding bytes between particles were overwritten")
        # Each output is two or three float32 operations on values below 11 in magnitude (the
        # device may fuse them): a few eps of 11 bounds the rounding.
        return Check(*compare_close(got, want, 4 * EPS32 * 11, "particle fields"),
                     {"max_abs_error": max_abs_error(got, want)})

    def finish(self, results: Any) -> None:
        """The fastest layout, and each layout against plain AoS and SoA."""
        rows = {r["layout"]: r for r in results.rows if r.get("status") == OK}
        if not rows:
            results.meta["conclusion"] = "no layout verified: no comparison"
            return
        best = max(rows, key=lambda n: rows[n]["gbps"])
        aos = rows.get(AOS)
        for r in rows.values():
            if aos is not None:
                r["speedup_vs_aos"] = aos["median_ns"] / r["median_ns"]
        results.meta["best_layout"] = best
        text = f"fastest layout: {best} ({rows[best]['gbps']:.1f} GB/s effective){noise_note(rows[best])}"
        if aos is not None:
            text += "; vs AoS: " + ", ".join(
                f"{n} {r['speedup_vs_aos']:.2f}x" for n, r in rows.items() if n != AOS)
        results.meta["conclusion"] = text + (
            ". Tradeoffs (G80): SoA beats plain AoS (coalesced), aligned structs read in 64/128-bit"
            " pieces cut memory operations, SoAoS keeps wide reads contiguous")

    summary_columns = ["layout", "status", "stored_bytes", "median_ns", "spread_pct",
                      "gbps", "fraction_of_peak", "speedup_vs_aos", "max_abs_error"]
