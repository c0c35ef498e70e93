"""The NVIDIA GPUs this process may use, and each one's memory, read one way for every view:
the record's machine class (core/hardware.detect, detect_memory), the guard's GPU limits and
the sweep's header (sweep/cell/accel.py).

Through NVML (`nvidia-ml-py`, the optional extra `oomrec[nvidia]`) where it starts, else through
`nvidia-smi`, which reads NVML itself (its `memory.total` is NVML's total in MiB: 143771 MiB on
an H200, 150754820096 bytes either way). Both are narrowed by CUDA_VISIBLE_DEVICES by one rule
(`visible`), so the class a record gets is the memory of the device its cell ran on: on a host
of an 80 GiB and a 40 GiB GPU, a cell given the 40 GiB one records 40 GiB, not the first
device's 80 (which would keep the record off the 80 GiB host where the cell would also run out).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from oomrec.core.probe import probe
from oomrec.core.units import MAX_INT, MIB

EXTRA_HINT = "pip install 'oomrec[nvidia]' (nvidia-ml-py) on a host with an NVIDIA driver"
_SMI = (
    "nvidia-smi",
    "--query-gpu=index,name,memory.total",
    "--format=csv,noheader,nounits",
)
# A GPU's name is short; more of a line than this is not read.
_MAX_LINE = 256


@dataclass(frozen=True, slots=True)
class Device:
    """One GPU this process may use: its index (NVML's and nvidia-smi's), name and memory; None
    where the driver gives no total (a GB10, whose memory is the host's: `[N/A]`)."""

    index: int
    name: str
    total: int | None


def visible(count: int) -> list[int]:
    """The indices CUDA_VISIBLE_DEVICES allows of `count` devices, in its order (CUDA stops at
    the first entry it cannot use). Every device where it is unset, names devices by UUID, or
    leaves none: judged and watched as all of them, the safe side (a record of the first
    device's class still applies, and the guard watches every device)."""
    raw = os.environ.get("CUDA_VISIBLE_DEVICES")
    every = list(range(count))
    if raw is None:
        return every
    indices: list[int] = []
    for part in raw.split(","):
        part = part.strip()
        # ASCII digits only: `²` is a digit to str.isdigit and no index to int().
        if not (part.isascii() and part.isdigit()):
            if part:
                return every
            break
        if int(part) >= count:
            break
        indices.append(int(part))
    return indices or every


@functools.cache
def nvml_module() -> Any:
    """pynvml, imported and initialised once per process; a str saying why it cannot be used."""
    try:
        import pynvml
    except ImportError:
        return f"nvidia-ml-py is not installed ({EXTRA_HINT})"
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return f"NVML cannot start here ({str(exc)[:80] or type(exc).__name__})"
    return pynvml


def nvml_devices(module: Any, every: bool = False) -> list[tuple[Device, Any]]:
    """The visible devices (`every`: all of them) through an initialised NVML `module`, each
    with its handle."""
    out: list[tuple[Device, Any]] = []
    count = module.nvmlDeviceGetCount()
    for index in range(count) if every else visible(count):
        handle = module.nvmlDeviceGetHandleByIndex(index)
        name = module.nvmlDeviceGetName(handle)
        if isinstance(name, bytes):
            name = name.decode("utf-8", "replace")
        try:
            total: int | None = int(module.nvmlDeviceGetMemoryInfo(handle).total)
        except getattr(module, "NVMLError", Exception):
            # NOT_SUPPORTED on a GB10 (unified memory): the device still names the host.
            total = None
        out.append((Device(index, str(name), total), handle))
    return out


def smi_every(text: str) -> list[Device]:
    """Every device in `nvidia-smi --query-gpu=index,name,memory.total` output (CSV, no
    header, no units: `0, NVIDIA H200, 143771`; a GB10 prints `[N/A]` for its memory, a device
    of no known total), by index; a line without an index or a name is no device."""
    found: dict[int, Device] = {}
    for line in text.splitlines():
        index, _, rest = line[:_MAX_LINE].partition(",")
        name, _, mib = rest.rpartition(",")
        index, name, mib = index.strip(), name.strip(), mib.strip()
        if not (index.isascii() and index.isdigit() and len(index) < 6 and name):
            continue
        size = int(mib) if mib.isascii() and mib.isdigit() and len(mib) < 20 else 0
        total = size * MIB if 0 < size <= MAX_INT // MIB else None
        found.setdefault(int(index), Device(int(index), name, total))
    return [found[i] for i in sorted(found)]


def smi_devices(text: str) -> list[Device]:
    """The visible devices of that output, in CUDA_VISIBLE_DEVICES's order."""
    return _visible_of(smi_every(text))


def _visible_of(every: Sequence[Device]) -> list[Device]:
    by_index = {device.index: device for device in every}
    count = max(by_index, default=-1) + 1
    return [by_index[i] for i in visible(count) if i in by_index]


@functools.cache
def every_device() -> tuple[Device, ...]:
    """Every NVIDIA GPU of this host, by index: NVML's reading where it starts, else
    nvidia-smi's (core/probe: once per process, bounded); none on a host without either."""
    module = nvml_module()
    if not isinstance(module, str):
        try:
            return tuple(device for device, _ in nvml_devices(module, every=True))
        except Exception:  # an NVMLError on one device: nvidia-smi may still say
            pass
    return tuple(smi_every(probe(_SMI) or ""))


def devices() -> tuple[Device, ...]:
    """The GPUs this process may use, in CUDA_VISIBLE_DEVICES's order (the first is where a
    one-GPU cell runs)."""
    return tuple(_visible_of(every_device()))


def order_warning() -> str | None:
    """Why the device read may not be the one a cell runs on, or None: CUDA numbers GPUs
    fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, NVML and nvidia-smi by PCI bus, so on a
    host of GPUs of different memory the numbers can name different devices."""
    sizes = {device.total for device in every_device()}
    if len(sizes) < 2 or os.environ.get("CUDA_DEVICE_ORDER", "").strip() == "PCI_BUS_ID":
        return None
    return (
        "this host's GPUs differ in memory and CUDA may number them otherwise than NVML: the "
        "GPU read may not be the cell's; export CUDA_DEVICE_ORDER=PCI_BUS_ID"
    )


def forget() -> None:
    """Forget what was read (a test that changes PATH or CUDA_VISIBLE_DEVICES in process)."""
    every_device.cache_clear()
    nvml_module.cache_clear()
    probe.cache_clear()
