"""The provenance file oomrec's sweep keeps beside its CSV (`<csv>.oomrec.json`): for each row
it wrote, the cell, the token, the commit and runner it ran with and the machine it ran on.

The sweep writes it (sweep.resume) and reads it back to resume; the import and the report read
it for the commit and machine of a sweep's own rows, which the harness layout does not hold.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from oomrec.core.errors import OomrecError
from oomrec.core.regular import NotRead
from oomrec.core.regular import read_regular as read_regular_bytes
from oomrec.core.schema import PROVENANCE_FORMAT, split_row
from oomrec.core.units import MAX_INT

# Where the provenance file is: `<csv>` + this.
SIDECAR_SUFFIX = ".oomrec.json"
# Beside it while a sweep runs: `<csv>` + SIDECAR_SUFFIX + this, one JSON entry per line.
JOURNAL_SUFFIX = ".journal"
# The provenance file's own format (not a --json shape): core/schema.py holds every format's.
SCHEMA_VERSION = PROVENANCE_FORMAT


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
    # The cell's peak memory as the sweep measured it (the cell cgroup's maximum usage, else
    # the sampled RSS of its process tree) and the memory it ran under (absent in older files).
    peak_bytes: int | None = None
    limit_bytes: int | None = None


def sidecar_path(csv_path: Path) -> Path:
    return csv_path.with_name(csv_path.name + SIDECAR_SUFFIX)


class SidecarFinder:
    """Whether a CSV has a provenance file beside it: one listing per folder, not a stat per
    CSV, finds the few CSVs that have one (the report's scan and its peaks both ask)."""

    def __init__(self) -> None:
        self._listed: dict[str, set[str] | None] = {}

    def has_one(self, csv_path: str) -> bool:
        folder, name = os.path.split(csv_path)
        listed = self._listed.get(folder)
        if listed is None:
            try:
                listed = set(os.listdir(folder or "."))
            except OSError:
                # A folder that can be searched but not listed (mode 0711): asked per file.
                listed = None
            self._listed[folder] = listed
        if listed is None:
            return os.path.lexists(csv_path + SIDECAR_SUFFIX)
        return name + SIDECAR_SUFFIX in listed


def journal_path(csv_path: Path) -> Path:
    """Where a running sweep appends each cell's entries (sweep.resume.Sidecar)."""
    return csv_path.with_name(csv_path.name + SIDECAR_SUFFIX + JOURNAL_SUFFIX)


class Measured(NamedTuple):
    """Where a sweep's row was measured: the commit, and the machine when the file says it."""

    commit: str
    hardware: str | None
    mem_bytes: int | None


def measured_on(csv_path: Path) -> dict[tuple[str, int], Measured]:
    """Where each row of a sweep's CSV was measured, by (the row's model field, length),
    from its provenance file; {} when it has none or it cannot be read (the import then asks
    git, as for any CSV)."""
    try:
        entries = read_entries(sidecar_path(csv_path))
    except OomrecError:
        return {}
    out = {}
    for entry in entries.values():
        # Every row's: a skip row or a runner's row with no hardware column is still of the
        # machine that ran the sweep (no phantom machine class `any` in the report).
        fields = split_row(entry.row)
        if not fields:
            continue
        out[(fields[0].strip(), entry.length)] = Measured(
            entry.commit, entry.hardware or None, entry.mem_bytes
        )
    return out


def read_entries(path: Path) -> dict[str, Entry]:
    """The provenance file's entries by the row text they describe (the last of several for
    one text); OomrecError when it is not one."""
    return {entry.row: entry for entry in read_entry_list(path)}


def read_entry_list(path: Path) -> list[Entry]:
    """The provenance file's entries, in order; OomrecError when it is not one.

    Read as untrusted: a regular file only (opened without blocking, so a FIFO there cannot
    hang the sweep), at most MAX_BYTES, no deeper than JSON of this format nests; an entry of
    the wrong shape or types is left out (its row then has no provenance, and its cell runs
    again under --resume)."""
    journal = read_regular(
        path.with_name(path.name + JOURNAL_SUFFIX), MAX_BYTES, "the sweep's provenance journal"
    )
    text = read_regular(path, MAX_BYTES, "the sweep's provenance")
    if text is None:
        return []
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        why = "nested too deep" if isinstance(exc, RecursionError) else str(exc)[:200]
        raise OomrecError(
            f"{path}: cannot read the sweep's provenance ({why}); delete it to resume without "
            "it (every row is then of unknown provenance)"
        ) from None
    cells = data.get("cells", []) if isinstance(data, dict) else None
    if not isinstance(cells, list) or data.get("schema_version") != SCHEMA_VERSION:
        raise OomrecError(f"{path}: not a provenance file of this oomrec; delete it to resume")
    entries = [entry for entry in map(_entry, cells) if entry is not None]
    # The running (or killed) sweep's journal: one entry per line; a torn last line (no line
    # ending: the sweep killed mid-write) and a line of the wrong shape are no entry.
    for line in (journal or "").split("\n")[:-1]:
        try:
            item = json.loads(line)
        except (ValueError, RecursionError):
            continue
        entry = _entry(item)
        if entry is not None:
            entries.append(entry)
    return entries


# A provenance file holds a line per cell of the sweep: far under this for any real grid.
MAX_BYTES = 64 << 20
_TEXT_FIELDS = ("model", "token", "row", "commit", "runner")


def _entry(item: object) -> Entry | None:
    """An entry, if `item` has this format's keys with this format's types, else None."""
    if not isinstance(item, dict):
        return None
    # Keys of a later format are left out, not the entry: it still says its row's commit.
    item = {key: value for key, value in item.items() if key in Entry.__dataclass_fields__}
    if not all(isinstance(item.get(name), str) for name in _TEXT_FIELDS):
        return None
    length = item.get("length")
    hardware = item.get("hardware")
    if type(length) is not int or not 0 <= length <= MAX_INT:
        return None
    for size in ("mem_bytes", "peak_bytes", "limit_bytes"):
        value = item.get(size)
        if value is not None and (type(value) is not int or not 0 < value <= MAX_INT):
            return None
    if hardware is not None and not isinstance(hardware, str):
        return None
    return Entry(**item)


def read_regular(path: Path, limit: int, what: str) -> str | None:
    """A state file's text (UTF-8, undecodable bytes kept as surrogates), None when there is
    none; OomrecError for anything else than a regular file of at most `limit` bytes. Opened
    without blocking: a FIFO or a device there is refused, never waited on or read forever."""
    try:
        data, _ = read_regular_bytes(path, limit)
    except FileNotFoundError:
        return None
    except NotRead as why:
        if why.kind:
            raise OomrecError(
                f"{path}: is {why.kind}, not a regular file; remove it or pass another --output"
            ) from None
        if why.size:
            raise OomrecError(
                f"{path}: {why.size:,} bytes, more than {what} can be ({limit:,}); remove it "
                "or pass another --output"
            ) from None
        raise OomrecError(f"{path}: cannot read {what} ({why.error})") from None
    return data.decode("utf-8", errors="surrogateescape")
