"""A CSV row's machine, decided once for the import, the report and `record stale`: its hardware
tag and the memory its accelerator can address.

The row's `hardware` value names both (`NVIDIA_GB10_CUDA13.0_122GB` -> gb10, 122 GiB; a discrete
GPU is its own size: `NVIDIA_Tesla_V100-PCIE-32GB_CUDA12.9_755GB` -> v100, 32 GiB). A row that
leaves it empty (the harness's and oomrec's skip rows) ran where its file was written: it takes
the one class the file's other rows name (`file_class`), else the host from the file's name,
`{backend}_{host}[_vlm|_longprompt]_{YYYY-MM-DD}[...].csv`, with no memory (so it applies at
every size: the safe side when the file does not say).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from functools import lru_cache

from oomrec.core.hardware import memory_from_text, normalize

# The harness's backends, oomrec's `cpu`, and bench_mlxlm.py's `pylm` prefix.
BACKENDS = frozenset({"cuda", "metal", "rocm", "pylm", "cpu"})
# A hostile cell can be megabytes long: only this much of it is read.
MAX_HARDWARE_CHARS = 128
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
# Words of a file name that end its host part (before the date).
_AFTER_HOST = frozenset({"vlm", "longprompt", "single"})


@lru_cache(maxsize=256)
def row_tag(text: str) -> str | None:
    """The tag of a `hardware` value, as the record file will read it back (so a rerun finds
    it again); None when it settles on none (an untagged record applies everywhere)."""
    tag = normalize(text[:MAX_HARDWARE_CHARS]) if text else None
    for _ in range(3):
        again = normalize(tag)
        if again == tag:
            return tag
        tag = again
    return None


@lru_cache(maxsize=256)
def row_memory(text: str | None) -> int | None:
    """The accelerator memory a `hardware` value names, in bytes; None when it names none (or
    0: `..._0GB` is no size a record could be scoped by)."""
    return (memory_from_text(text[:MAX_HARDWARE_CHARS]) or None) if text else None


@lru_cache(maxsize=1024)
def file_host(path: str) -> str | None:
    """`cuda_gb10_longprompt_2026-07-03.csv` -> `gb10`, `cpu_amd_epyc_longprompt_...` ->
    `amd_epyc`; None for a name that does not follow the harness's pattern."""
    parts = os.path.basename(path).split("_")
    if len(parts) < 3 or parts[0] not in BACKENDS:
        return None
    host: list[str] = []
    for part in parts[1:]:
        if _DATE.match(part) or part in _AFTER_HOST:
            break
        host.append(part)
    if not host or len(host) == len(parts) - 1:
        # No date or known word after it: the harness's `{backend}_{host}_...` read plainly.
        host = parts[1:2]
    return row_tag("_".join(host))


MachineClass = tuple[str | None, int | None]


def row_machine(
    hardware_text: str, host: str | None, unnamed: MachineClass | None = None
) -> MachineClass:
    """A row's (tag, memory): the tag of its `hardware` value, else its file's `host`; the
    memory that value names. A row that names no hardware is its file's `unnamed` class
    (`file_class`), or the host with no memory when that is not known."""
    if not hardware_text and unnamed is not None:
        return unnamed
    return row_tag(hardware_text) or host, row_memory(hardware_text)


def file_class(host: str | None, named: Iterable[str]) -> MachineClass:
    """The class of a file's rows that name no hardware, from the `hardware` values its other
    rows name: the one class they name (one machine, one class: the harness writes a file per
    host and run), else the file's `host` with no memory. Several classes in one file, or
    none, say nothing of where a skip row ran, so its evidence keeps every size."""
    classes = set()
    for text in named:
        if text:
            classes.add(row_machine(text, host))
    return classes.pop() if len(classes) == 1 else (host, None)
