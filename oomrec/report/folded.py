"""What a scan of the CSVs folds into: machine classes, cells and where each fact was seen.
Apart from the scan (report/scan.py) so that the parts kept of earlier scans
(report/scanparts.py) can hold them without importing the scan that uses those parts."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

from oomrec.core.machine import MachineClass
from oomrec.core.machine import row_machine as machine_of
from oomrec.core.records import OomRecord, mem_covers
from oomrec.core.rowfacts import Outcome
from oomrec.core.units import GIB, MIB


class Machine(NamedTuple):
    """A machine class: its hardware tag (None: untagged) and its memory in bytes when known, as
    the evidence gives it (a record's `mem_bytes`, a row's `_122GB`). A named tuple: it keys
    every cell, and a tuple hashes in C."""

    tag: str | None
    mem_bytes: int | None = None

    @property
    def id(self) -> str:
        name = self.tag or "any"
        return f"{name} {mem_id(self.mem_bytes)}" if self.mem_bytes is not None else name

    @property
    def mem_gb(self) -> int | None:
        """The memory in whole GiB (--json's `mem_gb`, kept beside the exact `mem_bytes`)."""
        return round(self.mem_bytes / GIB) if self.mem_bytes is not None else None

    def covers(self, other: Machine) -> bool:
        """Whether evidence of this class speaks for `other`, by the rule a record applies by
        (records.applicability): the same tag or none, and records.mem_covers on the bytes;
        an unknown tag or memory is every one (when in doubt, an OOM applies)."""
        if self.tag is not None and self.tag != other.tag:
            return False
        return mem_covers(self.mem_bytes, other.mem_bytes)


def mem_id(n: int) -> str:
    """A class's memory in its id, in the unit that fits: `122GB` (the harness's own spelling
    of whole GiB), `97.9GB`, `512MB` under 1 GiB; as many decimals as it takes (up to three)
    for the bytes to read back as the same size to a MiB."""
    unit, scale = ("GB", GIB) if n >= GIB else ("MB", MIB)
    for digits in range(4):
        shown = f"{n / scale:.{digits}f}"
        if abs(float(shown) * scale - n) < MIB or digits == 3:
            return f"{shown}{unit}"
    raise AssertionError("unreachable")


def record_machine(record: OomRecord) -> Machine:
    """The machine class of a record."""
    return Machine(record.hardware, mem_of(record.mem_bytes))


def mem_of(mem_bytes: int | None) -> int | None:
    return mem_bytes if isinstance(mem_bytes, int) and mem_bytes > 0 else None


@lru_cache(maxsize=1024)
def row_machine(
    hardware_value: str, host: str | None, unnamed: MachineClass | None = None
) -> Machine:
    """A CSV row's class as core.machine decides it for the import too: its `hardware` value
    (`NVIDIA_GB10_CUDA13.0_122GB` -> gb10, 122 GB), else its file's class (`unnamed`, from
    core.machine.file_class), else the file name's host."""
    tag, mem = machine_of(hardware_value, host, unnamed)
    return Machine(tag, mem_of(mem))


@dataclass(frozen=True, slots=True)
class Seen:
    """Where a fact was seen: `path:line` of a CSV row or a record line, its date and commit."""

    where: str
    date: str | None
    commit: str

    def to_dict(self) -> dict[str, Any]:
        return {"where": self.where, "date": self.date, "commit": self.commit}

    def __reduce__(self) -> tuple[type[Seen], tuple[str, str | None, str]]:
        # A kept scan (report/scancache.py) holds tens of thousands: pickled as the call that
        # makes one, not by the dataclass's state methods (a fields() walk per object).
        return Seen, (self.where, self.date, self.commit)


@dataclass(slots=True)
class CellRows:
    """The rows of one (model, machine class, length): per outcome, the first row by date (an
    OOM is shown "since" its first sighting) and the latest (what it is judged by). The latest
    is the dated row with the greatest date, the first the dated row with the smallest (the
    earliest in file order on a tie); with no dated row, both are the first row."""

    first: dict[Outcome, Seen] = field(default_factory=dict)
    latest: dict[Outcome, Seen] = field(default_factory=dict)

    def latest_not_oom(self) -> Outcome | None:
        """The latest row's outcome among the rows that did not run out of memory (OOMs are
        shown from the evidence, judged)."""
        rest = [(seen.date or "", o) for o, seen in self.latest.items() if o != Outcome.OOM]
        return max(rest)[1] if rest else None

    def __reduce__(self) -> tuple[type[CellRows], tuple[dict[Outcome, Seen], dict[Outcome, Seen]]]:
        return CellRows, (self.first, self.latest)


CellKey = tuple[str, Machine, int]


@dataclass
class Scan:
    """What the CSVs hold, folded into cells, and which files were read or skipped why."""

    cells: dict[CellKey, CellRows] = field(default_factory=dict)
    # (model, machine, date) -> the largest length that ran that day, its row's commit and
    # where the row is (`path:line`).
    fits: dict[tuple[str, Machine, str], tuple[int, str, str]] = field(default_factory=dict)
    # Per machine class, the lengths runs aimed at (`prompt_target_len`): the grid's columns. A
    # measured `prompt_tokens` (20, 26, ...) is a fact about one row, not a length to try.
    targets: dict[Machine, set[int]] = field(default_factory=dict)
    files_read: int = 0
    files_skipped: dict[str, int] = field(default_factory=dict)
    rows: int = 0
    unreadable_rows: int = 0
    # `SKIP:oom` rows (not faked) without a model or a length the import reads: it leaves them
    # out with a warning naming each, and so does the report, counted.
    oom_rows_left_out: int = 0
    # Each read file by its source field (scan._finish sets it): what git is asked about when a
    # row's commit is wanted after the scan (scan.resolve_commits).
    files_at: dict[str, FileAt] = field(default_factory=dict, repr=False, compare=False)


class FileAt(NamedTuple):
    """A read file, by the source field its rows' `where` names: its path, its path relative to
    the root (as git names it) and git's line numbers (files with lone CRs only)."""

    path: str
    relative: str
    git_lines: list[int] | None
