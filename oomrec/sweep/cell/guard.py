"""The memory guard: stop a cell before it drives the host into the near-OOM state.

An OOM at full force is what degrades a GPU driver for hours (a GB10's unified memory exhausted,
NVRM `NV_ERR_NO_MEMORY` accumulating), so the operator may set a budget: the cell's memory (the
summed RSS of its process tree) must stay at or under `--max-cell-memory`, and the host's
available memory must stay at or over `--min-available`. The runner checks both every CHECK_S
while a guard is on and stops the cell's whole tree when one is broken (see runner.py).

Host memory is the accelerator's memory on unified-memory hosts (GB10, Strix Halo, Apple), so
there the guard watches the right quantity. A discrete NVIDIA GPU's memory is not host memory:
its own limits (`--max-cell-gpu-memory`, `--min-gpu-available`, each device on its own, `N%` of
each device's memory) are read through NVML (accel.py) where `oomrec[nvidia]` is installed.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import psutil

from oomrec.core.errors import OomrecError
from oomrec.core.hardware import parse_size
from oomrec.core.memscope import CgroupAvailable, enclosing_limit
from oomrec.core.shown import show_apart, show_bytes

# How often a guarded cell's memory is checked: fast enough to act within one allocation step
# of a typical runner (benchmarks/perf/bench_guard.py measures the reaction time), cheap enough
# to stay far under 1% of a core, since a check reads only /proc/PID/statm of known processes.
CHECK_S = 0.025
# Between SIGTERM and SIGKILL: time for a runner to release the GPU cleanly, short enough that
# the memory it holds does not linger.
GRACE_S = 1.0
OFF = "off"
_MEMINFO = "/proc/meminfo"
_AVAILABLE = b"MemAvailable:"
_LIMIT_HELP = "give e.g. 110G, 512M, 85% (of this host's memory) or off"
_GPU_LIMIT_HELP = "give e.g. 40G, 90% (of each GPU's memory) or off"


@dataclass(frozen=True, slots=True)
class GpuLimit:
    """A limit as given: a size, or a share of a memory's total (each GPU's own for the GPU
    limits)."""

    size: int | None = None
    share: float | None = None

    def of(self, total: int) -> int:
        return self.size if self.size is not None else int(total * (self.share or 0) / 100)

    def describe(self) -> str:
        return show_bytes(self.size) if self.size is not None else f"{self.share:g}%"


@dataclass(frozen=True, slots=True)
class GuardLimits:
    """The budget a cell must keep; None: that limit is off."""

    max_cell_bytes: int | None = None
    min_available_bytes: int | None = None
    max_cell_gpu: GpuLimit | None = None
    min_gpu_available: GpuLimit | None = None

    @property
    def on(self) -> bool:
        return self.max_cell_bytes is not None or self.min_available_bytes is not None or self.gpu

    @property
    def gpu(self) -> bool:
        return self.max_cell_gpu is not None or self.min_gpu_available is not None

    def describe(self) -> str:
        if not self.on:
            return "off"
        parts = []
        if self.max_cell_bytes is not None:
            parts.append(f"max cell memory {show_bytes(self.max_cell_bytes)}")
        if self.min_available_bytes is not None:
            parts.append(f"min available {show_bytes(self.min_available_bytes)}")
        if self.max_cell_gpu is not None:
            parts.append(f"max cell GPU memory {self.max_cell_gpu.describe()}")
        if self.min_gpu_available is not None:
            parts.append(f"min GPU available {self.min_gpu_available.describe()}")
        return f"{', '.join(parts)}; checked every {CHECK_S * 1000:.0f} ms"

    def gpu_breach(self, device: str, total: int, used: int, free: int | None) -> str | None:
        """Why the cell must stop for one GPU (`device` names it), or None."""
        if self.max_cell_gpu is not None and used > (limit := self.max_cell_gpu.of(total)):
            shown, cap = show_apart(used, limit)
            return f"cell memory {shown} on {device} passed --max-cell-gpu-memory {cap}"
        if (
            self.min_gpu_available is not None
            and free is not None
            and free < (floor := self.min_gpu_available.of(total))
        ):
            shown, least = show_apart(free, floor)
            return f"free memory {shown} on {device} fell under --min-gpu-available {least}"
        return None

    def warnings(self, available: int | None) -> list[str]:
        """What the operator should know before any cell runs under these limits."""
        floor = self.min_available_bytes
        if floor is None:
            return []
        if available is None:
            return [
                "warning: the host's available memory cannot be read: --min-available "
                "cannot act; use --max-cell-memory"
            ]
        if available < floor:
            shown, least = show_apart(available, floor)
            return [
                f"warning: this host has {shown} available now, under --min-available "
                f"{least}: every cell will be stopped at once"
            ]
        return []

    def breach(self, cell_bytes: int, available: int | None) -> str | None:
        """Why the cell must stop now, or None while it keeps its budget."""
        if self.max_cell_bytes is not None and cell_bytes > self.max_cell_bytes:
            shown, cap = show_apart(cell_bytes, self.max_cell_bytes)
            return f"cell memory {shown} passed --max-cell-memory {cap}"
        if (
            self.min_available_bytes is not None
            and available is not None
            and available < self.min_available_bytes
        ):
            shown, least = show_apart(available, self.min_available_bytes)
            return f"available memory {shown} fell under --min-available {least}"
        return None


@dataclass(frozen=True, slots=True)
class GuardStop:
    """The guard stopped a cell: why, what it measured, and when it sent SIGTERM (monotonic)."""

    reason: str
    cell_bytes: int
    available_bytes: int | None
    signalled_at: float


def parse_limit(value: object, where: str, total: int) -> int | None:
    """A limit as bytes: a size (`110G`, `512M`, bytes), a share of `total` (`85%`), or None for
    `off`. OomrecError (one line) otherwise, or when it is 0 or not under `total`."""
    limit = _size_or_share(value, where, _LIMIT_HELP)
    if limit is None:
        return None
    size = limit.of(total)
    if limit.size is not None and size >= total:
        raise OomrecError(
            f"{where} {str(value).strip()!r} is not under this host's {show_bytes(total)}; it "
            f"could never act (or always would); {_LIMIT_HELP}"
        )
    return size


def parse_gpu_limit(value: object, where: str) -> GpuLimit | None:
    """A GPU limit: a size, `N%` of each device's memory, or None for `off`; OomrecError (one
    line) otherwise, or when NVML cannot read this host's GPUs (the limit could not act)."""
    from oomrec.sweep.cell import accel

    limit = _size_or_share(value, where, _GPU_LIMIT_HELP)
    if limit is None:
        return None
    found = accel.nvml()
    if isinstance(found, str):
        raise OomrecError(f"{where} cannot act here: {found}; or leave it off")
    return limit


def _size_or_share(value: object, where: str, hint: str) -> GpuLimit | None:
    """`value` as a size or a share `N%` (0 < N < 100), None for `off` (the parse of every
    limit, the host's and the GPUs'); OomrecError naming `where` and ending in `hint` else."""
    plain = isinstance(value, str | int) and not isinstance(value, bool)
    text = str(value).strip() if plain else ""
    if text.lower() == OFF:
        return None
    if text.endswith("%"):
        try:
            percent = float(text[:-1].strip())
        except ValueError:
            percent = -1.0
        if not 0 < percent < 100:
            raise OomrecError(f"{where} {text[:40]!r} is not a share from 0 to 100%; {hint}")
        return GpuLimit(share=percent)
    size = parse_size(text) if text else None
    if size is None:
        raise OomrecError(f"{where} {str(value)[:40]!r} is not a memory size; {hint}")
    return GpuLimit(size=size)


class AvailableMemory:
    """The available memory that binds, read cheaply many times a second: the host's, or what
    an enclosing memory cgroup has left where that is less (memscope.CgroupAvailable).

    Linux: MemAvailable of /proc/meminfo (the kernel's estimate of what can be allocated without
    swapping), read through one descriptor kept open; elsewhere psutil's `available` (macOS:
    free + inactive pages).
    """

    def __init__(self) -> None:
        self._fd: int | None = None
        scope = enclosing_limit()
        self._cgroup = CgroupAvailable(scope) if scope is not None else None
        if sys.platform.startswith("linux"):
            try:
                self._fd = os.open(_MEMINFO, os.O_RDONLY)
            except OSError:
                self._fd = None

    def read(self) -> int | None:
        host = self._host()
        inside = self._cgroup.read() if self._cgroup is not None else None
        if inside is None:
            return host
        return inside if host is None else min(host, inside)

    def _host(self) -> int | None:
        if self._fd is not None:
            try:
                data = os.pread(self._fd, 4096, 0)
                start = data.index(_AVAILABLE) + len(_AVAILABLE)
                return int(data[start : data.index(b"kB", start)]) * 1024
            except (OSError, ValueError):
                # A kernel without MemAvailable (before 3.14): psutil estimates it.
                self.close()
        try:
            return int(psutil.virtual_memory().available)
        except (OSError, RuntimeError):
            return None

    def close(self) -> None:
        """Release the descriptors; later reads ask psutil."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._cgroup is not None:
            self._cgroup.close()
            self._cgroup = None
