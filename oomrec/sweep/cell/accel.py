"""Discrete NVIDIA GPUs through NVML (`nvidia-ml-py`, the optional extra `oomrec[nvidia]`).

A discrete GPU's memory is not host memory: a cell can run the device out of memory while the
host has plenty. Where NVML answers, the guard's GPU limits (`--max-cell-gpu-memory`,
`--min-gpu-available`) read, for each device the cell may use, the memory the cell's own
processes hold on it (NVML's per-process `usedGpuMemory`, matched by pid against the cell's
tree) and the device's free memory. Unified-memory hosts (GB10, Apple, Strix Halo) need none of
this: their GPU's memory is host memory, which the host limits already watch.

NVML's pids are the host's: inside a container without the host's pid namespace the cell's
processes are not found (their use reads 0), while the device's free memory still binds.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from oomrec.core import nvidia
from oomrec.core.shown import show_bytes


@dataclass(frozen=True, slots=True)
class Device:
    """A GPU the guard watches: core/nvidia's reading of it, its memory total known."""

    index: int
    name: str
    total: int


class Nvml:
    """NVML, initialised once per process (core/nvidia.nvml_module), on the devices
    CUDA_VISIBLE_DEVICES leaves to the cell (core/nvidia.visible): their names and totals are
    core/nvidia's one reading; this adds the live ones, each device's free memory and the
    memory the cell's processes hold."""

    def __init__(self, module: Any) -> None:
        self._nv = module
        found = nvidia.nvml_devices(module)
        self.devices: list[Device] = []
        for device, _ in found:
            if device.total is None:
                # A limit in shares of it could not act (a GB10: its memory is the host's).
                raise ValueError(f"GPU {device.index} has no memory total")
            self.devices.append(Device(device.index, device.name, device.total))
        self._handles: list[Any] = [handle for _, handle in found]

    def free(self) -> list[int | None]:
        """Each device's free memory now, None where NVML cannot say."""
        out: list[int | None] = []
        for handle in self._handles:
            try:
                out.append(int(self._nv.nvmlDeviceGetMemoryInfo(handle).free))
            except self._nv.NVMLError:
                out.append(None)
        return out

    def used_by(self, pids: Iterable[int]) -> list[int]:
        """The memory `pids` hold on each device (compute and graphics contexts; a process NVML
        reports without a figure, as under some drivers' MIG or WDDM, counts 0)."""
        wanted = set(pids)
        out: list[int] = []
        for handle in self._handles:
            held: dict[int, int] = {}
            for query in (
                "nvmlDeviceGetComputeRunningProcesses",
                "nvmlDeviceGetGraphicsRunningProcesses",
            ):
                with contextlib.suppress(self._nv.NVMLError, AttributeError):
                    for proc in getattr(self._nv, query)(handle):
                        used = getattr(proc, "usedGpuMemory", None)
                        if proc.pid in wanted and isinstance(used, int):
                            # A process with both contexts is listed twice: count it once.
                            held[proc.pid] = max(held.get(proc.pid, 0), used)
            out.append(sum(held.values()))
        return out


@functools.cache
def nvml() -> Nvml | str:
    """NVML on this host, or why it cannot be used (one phrase)."""
    module = nvidia.nvml_module()
    if isinstance(module, str):
        return module
    try:
        found = Nvml(module)
    except Exception as exc:  # an NVMLError of a device
        return f"NVML cannot read this host's GPUs ({str(exc)[:80] or type(exc).__name__})"
    if not found.devices:
        return "NVML sees no NVIDIA GPU the cell may use (CUDA_VISIBLE_DEVICES?)"
    return found


def describe_gpus() -> str:
    """The header's line on the GPUs the GPU limits watch."""
    found = nvml()
    if isinstance(found, str):
        return f"none watched ({found})"
    return (
        "; ".join(f"GPU {d.index} {d.name} ({show_bytes(d.total)})" for d in found.devices)
        + " (NVML)"
    )
