"""Each cell's peak memory, as the sweep measured it at run time (the cell cgroup's maximum
usage, else the sampled RSS of its process tree), and the limit it ran under: read from the
provenance files beside the CSVs (`<csv>.oomrec.json`), which the harness's CSV has no room for.

A cell swept several times has a peak per sweep: its sightings are kept in the order the
provenance files list them, each with the commit it ran at, so a peak that grew between two
commits is a memory regression (report/regressions.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oomrec.core.errors import OomrecError
from oomrec.core.modelnames import model_name
from oomrec.core.provenance import SidecarFinder, read_entry_list, sidecar_path
from oomrec.core.schema import Token, split_row
from oomrec.report.folded import CellKey, Machine, mem_of


@dataclass(frozen=True, slots=True)
class Peak:
    """One run of a cell: its peak and the limit it ran under (bytes; None: not known), the
    commit it ran at and where its provenance is (`<csv>.oomrec.json:<entry>`)."""

    peak_bytes: int
    limit_bytes: int | None
    commit: str
    where: str

    @property
    def headroom(self) -> float | None:
        """The share of the limit the peak used (peak / limit)."""
        return self.peak_bytes / self.limit_bytes if self.limit_bytes else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "peak_bytes": self.peak_bytes,
            "limit_bytes": self.limit_bytes,
            "headroom": None if self.headroom is None else round(self.headroom, 4),
            "commit": self.commit,
            "where": self.where,
        }


def read_peaks(csv_paths: Iterable[str]) -> dict[CellKey, list[Peak]]:
    """The peaks of the cells that ran (a success row), per cell, from the provenance files of
    `csv_paths`; a file that cannot be read gives none (the report says nothing of peaks it
    cannot show)."""
    sidecars = SidecarFinder()
    out: dict[CellKey, list[Peak]] = {}
    for path in csv_paths:
        if not sidecars.has_one(path):
            continue
        sidecar = sidecar_path(Path(path))
        try:
            entries = read_entry_list(sidecar)
        except OomrecError:
            continue
        for n, entry in enumerate(entries, start=1):
            if entry.peak_bytes is None or entry.token != Token.SUCCESS:
                continue
            fields = split_row(entry.row)
            if not fields or entry.hardware is None:
                continue
            key = (
                model_name(fields[0].strip()),
                Machine(entry.hardware, mem_of(entry.mem_bytes)),
                entry.length,
            )
            peak = Peak(entry.peak_bytes, entry.limit_bytes, entry.commit, f"{sidecar}:{n}")
            out.setdefault(key, []).append(peak)
    return out
