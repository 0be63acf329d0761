"""How many work-groups of a kernel fit on one compute unit: a theoretical occupancy estimate.

Occupancy (Guide 4.1) is the number of warps resident on a multiprocessor over the most it can
hold. Three resources cap the work-groups per compute unit (Guide 4.2, 4.5): local memory,
work-items (threads and groups per multiprocessor) and registers. OpenCL reports only some of
them: the local memory a kernel declares (CL_KERNEL_LOCAL_MEM_SIZE), the device's local memory
per work-group, and on NVIDIA the registers per block and the compute capability. The rest comes
from the per-compute-capability table below; where a limit is not known the estimate says
``None`` rather than guessing.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

KiB = 1024

# Per-multiprocessor limits by NVIDIA compute capability, from the CUDA C++ Programming Guide's
# table "Technical Specifications per Compute Capability" (and the CUDA occupancy calculator for
# the register allocation unit). smem_per_sm is the largest shared-memory carve-out; the driver
# may choose a smaller one. reserved_smem is what the system keeps per block (1 KB since 8.0).
NVIDIA_SM: dict[tuple[int, int], dict[str, int]] = {
    (7, 0): {"threads": 2048, "groups": 32, "smem_per_sm": 96 * KiB, "reserved_smem": 0, "registers": 65536},
    (7, 5): {"threads": 1024, "groups": 16, "smem_per_sm": 64 * KiB, "reserved_smem": 0, "registers": 65536},
    (8, 0): {"threads": 2048, "groups": 32, "smem_per_sm": 164 * KiB, "reserved_smem": KiB, "registers": 65536},
    (8, 6): {"threads": 1536, "groups": 16, "smem_per_sm": 100 * KiB, "reserved_smem": KiB, "registers": 65536},
    (8, 9): {"threads": 1536, "groups": 24, "smem_per_sm": 100 * KiB, "reserved_smem": KiB, "registers": 65536},
    (9, 0): {"threads": 2048, "groups": 32, "smem_per_sm": 228 * KiB, "reserved_smem": KiB, "registers": 65536},
}
NVIDIA_SOURCE = ("CUDA C++ Programming Guide, 'Technical Specifications per Compute Capability' "
                 "(resident threads, blocks, shared memory and registers per SM); register "
                 "allocation unit of 256 per warp from the CUDA occupancy calculator")
REGISTER_UNIT = 256  # registers are allocated per warp in units of this many (cc >= 7.0)

# What no estimate from these limits can see; every occupancy record states it.
CANNOT_KNOW = (
    "the shared-memory/L1 carve-out the driver picks for this kernel (the table assumes the "
    "largest); the exact register allocation granularity and any per-block register rounding "
    "of this driver; registers the OpenCL compiler adds at run time; how the scheduler "
    "distributes work-groups over compute units and the tail of the last wave; how caches and "
    "memory-level parallelism hide latency at a given occupancy (so occupancy is not speed)")


def nv_compute_capability(info: Any) -> tuple[int, int] | None:
    major = int(getattr(info, "nv_compute_capability_major", -1))
    minor = int(getattr(info, "nv_compute_capability_minor", -1))
    return (major, minor) if major >= 0 and minor >= 0 else None


def warp_size(info: Any) -> int | None:
    """The device's warp size where the driver says (cl_nv_device_attribute_query), else None."""
    w = int(getattr(info, "nv_warp_size", -1))
    return w if w > 0 else None


# ptxas's report in an NVIDIA build log (-cl-nv-verbose): one block per kernel, e.g.
#   ptxas info    : Compiling entry function 'poly' for 'sm_90'
#   ptxas info    : Function properties for poly
#       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
#   ptxas info    : Used 40 registers, 380 bytes cmem[0]
_ENTRY = re.compile(r"Compiling entry function\s+'([^']+)'")
_USED = re.compile(r"Used\s+(\d+)\s+registers")
_SPILLS = re.compile(r"(\d+)\s+bytes spill stores,\s*(\d+)\s+bytes spill loads")


@dataclass(frozen=True)
class RegisterReport:
    registers: int | None
    spill_store_bytes: int | None = None
    spill_load_bytes: int | None = None


def parse_registers(build_log: str, kernel: str) -> RegisterReport:
    """Registers per work-item (and spills) of ``kernel`` from a verbose NVIDIA build log.

    The log's format is the driver's, not a contract: anything not found is None.
    """
    log = build_log or ""
    entries = list(_ENTRY.finditer(log))
    if entries:
        for i, m in enumerate(entries):
            if m.group(1) != kernel and not m.group(1).endswith(f"_{kernel}"):
                continue
            end = entries[i + 1].start() if i + 1 < len(entries) else len(log)
            return _report(log[m.end():end])
        return RegisterReport(None)
    # No per-kernel blocks: only an unambiguous single report is trusted.
    return _report(log) if len(_USED.findall(log)) == 1 else RegisterReport(None)


def _report(text: str) -> RegisterReport:
    used = _USED.search(text)
    spills = _SPILLS.search(text)
    return RegisterReport(int(used.group(1)) if used else None,
                          int(spills.group(1)) if spills else None,
                          int(spills.group(2)) if spills else None)


def verbose_build_options(info: Any) -> str:
    """Build options that make the driver report registers in the build log: NVIDIA's
    -cl-nv-verbose where cl_nv_compiler_options is offered, "" elsewhere."""
    return "-cl-nv-verbose" if info.has_extension("cl_nv_compiler_options") else ""


@dataclass(frozen=True)
class OccupancyEstimate:
    """Work-groups per compute unit allowed by each limit; None where the limit is unknown."""

    local_size: int
    local_bytes_per_group: int
    groups_by_local: int | None  # None when the groups use no local memory (no limit)
    groups_by_threads: int | None
    groups_by_registers: int | None
    registers_per_item: int | None
    # The smallest known limit: exact when ``complete``, otherwise only an upper bound; None
    # when no limit is known.
    groups_per_cu: int | None
    limited_by: str  # "local memory", "threads", "work-groups", "registers" or "unknown"
    complete: bool  # whether all three limits (local memory, threads, registers) were known
    occupancy: float | None  # resident warps / the most a compute unit holds, where known
    max_threads_per_cu: int | None
    source: str

    def as_row(self) -> dict[str, Any]:
        row = asdict(self)
        row.pop("source")
        row["occupancy_pct"] = None if self.occupancy is None else 100.0 * self.occupancy
        return row


def estimate(info: Any, local_size: int, local_bytes: int,
             registers_per_item: int | None = None) -> OccupancyEstimate:
    """The theoretical work-groups per compute unit for work-groups of ``local_size`` items
    using ``local_bytes`` of local memory each (static + dynamic) and, where known,
    ``registers_per_item`` registers per work-item."""
    local_size, local_bytes = int(local_size), int(local_bytes)
    if local_size <= 0 or local_bytes < 0:
        raise ValueError(f"need a positive work-group size and non-negative local memory, got "
                         f"{local_size} and {local_bytes}")
    cc = nv_compute_capability(info)
    sm = NVIDIA_SM.get(cc) if cc is not None else None
    warp = warp_size(info) or 32
    if cc is not None and sm is not None:
        source = f"compute capability {cc[0]}.{cc[1]}: " + NVIDIA_SOURCE
        per_group = local_bytes + sm["reserved_smem"]
        by_local = sm["smem_per_sm"] // per_group if per_group else None
        warps_per_group = -(-local_size // warp)
        max_warps = sm["threads"] // warp
        by_threads = min(max_warps // warps_per_group, sm["groups"])
        threads_limit = "threads" if max_warps // warps_per_group <= sm["groups"] else "work-groups"
        by_regs = None
        if registers_per_item:
            per_warp = -(-registers_per_item * warp // REGISTER_UNIT) * REGISTER_UNIT
            by_regs = sm["registers"] // (per_warp * warps_per_group)
        max_threads: int | None = sm["threads"]
    else:
        # Nothing is known about the compute unit but the local memory one work-group may use:
        # assume a compute unit holds exactly that much (true of PoCL's CPU device, where local
        # memory is ordinary memory; an assumption anywhere else).
        what = (f"compute capability {cc[0]}.{cc[1]} is not in pyclperf's table" if cc is not None
                else "no compute-unit limits known for this device")
        source = (f"{what}: local memory per compute unit assumed to be the device's local "
                  "memory per work-group; thread limits unknown; registers (where the build log "
                  "gives them) held against the registers per block")
        by_local = int(info.local_mem_bytes) // local_bytes if local_bytes else None
        by_threads, by_regs, threads_limit, max_threads = None, None, "threads", None
        registers_per_block = int(getattr(info, "nv_registers_per_block", -1))
        if registers_per_item and registers_per_block > 0:
            by_regs = registers_per_block // (registers_per_item * local_size)
    limits = {"local memory": by_local, threads_limit: by_threads, "registers": by_regs}
    known = {k: v for k, v in limits.items() if v is not None}
    if not known:
        groups, limited_by = None, "unknown"
    else:
        limited_by = min(known, key=lambda k: known[k])
        groups = known[limited_by]
    # A group that uses no local memory is not limited by it: that limit is known (absent).
    complete = by_threads is not None and by_regs is not None
    occupancy = None
    if groups is not None and max_threads is not None:
        occupancy = min(1.0, groups * (-(-local_size // warp)) * warp / max_threads)
    return OccupancyEstimate(local_size, local_bytes, by_local, by_threads, by_regs,
                             registers_per_item, groups, limited_by, complete, occupancy,
                             max_threads, source)
