"""The provenance file oomrec's sweep keeps beside its CSV (`<csv>.oomrec.json`): for each row
it wrote, the cell, the token, the commit and runner it ran with and the machine it ran on.

The sweep writes it (sweep.resume) and reads it back to resume; the import and the report read
it for the commit and machine of a sweep's own rows, which the harness layout does not hold.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from oomrec.core.errors import OomrecError
from oomrec.core.schema import RECORDED_TOKENS, split_row

# Where the provenance file is: `<csv>` + this.
SIDECAR_SUFFIX = ".oomrec.json"
# The provenance file's own format (not a --json shape).
SCHEMA_VERSION = 1


@dataclass
class Entry:
    model: str
    length: int
    token: str
    row: str
    commit: str
    runner: str
    # The machine the row was measured on, as its record names it (absent in older files).
    hardware: str | None = None
    mem_bytes: int | None = None


def sidecar_path(csv_path: Path) -> Path:
    return csv_path.with_name(csv_path.name + SIDECAR_SUFFIX)


class Measured(NamedTuple):
    """Where a sweep's row was measured: the commit, and the machine when the file says it."""

    commit: str
    hardware: str | None
    mem_bytes: int | None


def measured_on(csv_path: Path) -> dict[tuple[str, int], Measured]:
    """Where each OOM row of a sweep's CSV was measured, by (the row's model field, length),
    from its provenance file; {} when it has none or it cannot be read (the import then asks
    git, as for any CSV)."""
    try:
        entries = read_entries(sidecar_path(csv_path))
    except OomrecError:
        return {}
    out = {}
    for entry in entries.values():
        # Read as untrusted: an entry of the wrong shape is no provenance (the import then
        # asks git for that row, as for any CSV).
        if not (
            isinstance(entry.row, str)
            and isinstance(entry.token, str)
            and isinstance(entry.commit, str)
            and type(entry.length) is int
            and entry.token in RECORDED_TOKENS
        ):
            continue
        fields = split_row(entry.row)
        if not fields:
            continue
        mem = entry.mem_bytes if type(entry.mem_bytes) is int and entry.mem_bytes > 0 else None
        hardware = entry.hardware if isinstance(entry.hardware, str) and entry.hardware else None
        out[(fields[0].strip(), entry.length)] = Measured(entry.commit, hardware, mem)
    return out


def read_entries(path: Path) -> dict[str, Entry]:
    """The provenance file's entries by the row text they describe; OomrecError when it is
    not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise OomrecError(
            f"{path}: cannot read the sweep's provenance ({exc}); delete it to resume without "
            "it (every row is then of unknown provenance)"
        ) from None
    cells = data.get("cells", []) if isinstance(data, dict) else None
    if not isinstance(cells, list) or data.get("schema_version") != SCHEMA_VERSION:
        raise OomrecError(f"{path}: not a provenance file of this oomrec; delete it to resume")
    out = {}
    for item in cells:
        try:
            entry = Entry(**item)
        except TypeError:
            continue
        if isinstance(entry.row, str):
            out[entry.row] = entry
    return out
