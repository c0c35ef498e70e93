"""The guard a probe runs under: a record a fix lifted is a hypothesis, and its cell runs alone
under a guard that stops it before the machine nears OOM (docs/staleness.md, "three states").

The user's guard (`--max-cell-memory`, `--min-available`, the GPU limits) when one is set; by
default a floor under the binding limit (the host's memory, or a tighter cgroup around oomrec):
available memory must stay above FLOOR_SHARE of it (at least FLOOR_MIN). A discrete NVIDIA
GPU's memory is what a cell there runs out of, so each device gets the same floor through NVML.
Where the cell has a cgroup of its own, that cgroup also gets a hard limit: the binding limit
less the floor, so that even a spike between two checks ends in the cell's own OOM, not the
host's.

Where the memory that matters cannot be watched (a discrete GPU without NVML, a host whose
available memory cannot be read), nothing is probed: `watch_problem` says why, and the record
keeps applying.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from oomrec.core.hardware import detect_backend, unified
from oomrec.core.memscope import enclosing_limit, host_total
from oomrec.core.shown import show_bytes
from oomrec.sweep.cell import accel, cellscope
from oomrec.sweep.cell.guard import GpuLimit, GuardLimits

# The share of the binding limit a probe keeps free, and its least size: below a few percent a
# unified-memory driver is already in trouble; 64 MiB keeps tiny test cgroups usable.
FLOOR_SHARE = 0.05
FLOOR_MIN = 64 * 2**20
GPU_FLOOR = GpuLimit(share=FLOOR_SHARE * 100)


@dataclass(frozen=True, slots=True)
class ProbeGuard:
    limits: GuardLimits
    # The cell cgroup's hard limit in bytes (None: no cgroup of its own, or none set).
    hard_limit: int | None

    def describe(self) -> str:
        hard = (
            f"; the cell's cgroup capped at {show_bytes(self.hard_limit)}"
            if self.hard_limit is not None
            else ""
        )
        return f"{self.limits.describe()}{hard}"


def watch_problem(hardware: str) -> str | None:
    """Why this host cannot watch the memory a cell runs out of (no probe here), or None."""
    backend = detect_backend()
    if backend in ("cuda", "rocm") and not unified(hardware):
        if backend == "rocm":
            return "oomrec cannot read a discrete AMD GPU's memory"
        found = accel.nvml()
        if isinstance(found, str):
            return f"the GPU's memory cannot be watched ({found})"
    if not _host_memory_readable():
        return "this host's available memory cannot be read (no /proc/meminfo, no cgroup)"
    return None


def probe_guard(user: GuardLimits, hardware: str) -> ProbeGuard:
    """The limits a probe runs under here: the user's guard when on, else the default floor;
    the default GPU floor where a discrete NVIDIA GPU has none of the user's."""
    binding = host_total()
    floor = max(FLOOR_MIN, int(binding * FLOOR_SHARE))
    limits = user if user.on else GuardLimits(min_available_bytes=floor)
    if (
        not limits.gpu
        and detect_backend() == "cuda"
        and not unified(hardware)
        and not isinstance(accel.nvml(), str)
    ):
        limits = dataclasses.replace(limits, min_gpu_available=GPU_FLOOR)
    hard = binding - floor if cellscope.unavailable() is None and binding > floor else None
    return ProbeGuard(limits, hard)


def _host_memory_readable() -> bool:
    if enclosing_limit() is not None:
        return True
    return os.access("/proc/meminfo", os.R_OK) or os.uname().sysname == "Darwin"
