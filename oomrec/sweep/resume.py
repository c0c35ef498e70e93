"""`oomrec sweep --resume`: continue an aggregate CSV instead of replacing it.

The CSV keeps the harness layout; what oomrec needs to trust a row lives beside it, in
`<csv>.oomrec.json`: for every row the sweep wrote, the cell (model, length), its verdict, and
its provenance (the commit and the runner command it ran with). A cell is done when its row is
there with the same provenance. A true OOM is never run again (keeping it out of reach is the
record's job, and its row rebuilds the backstop); a FAIL:* cell runs again only when asked; a
row of another commit or runner runs again, with the reason, unless the user keeps it.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from pathlib import Path

from oomrec.core import rowfacts
from oomrec.core.atomic import replace_file
from oomrec.core.errors import OomrecError
from oomrec.core.provenance import (
    SCHEMA_VERSION,
    SIDECAR_SUFFIX,
    Entry,
    Measured,
    journal_path,
    measured_on,
    read_entry_list,
    read_regular,
    sidecar_path,
)
from oomrec.core.records import short_commit
from oomrec.core.schema import RECORDED_TOKENS, Token, line_token
from oomrec.csvread import rows as rowread
from oomrec.csvread.files import header_names

__all__ = ["SCHEMA_VERSION", "SIDECAR_SUFFIX", "Entry", "Measured", "measured_on", "sidecar_path"]


class Mode(StrEnum):
    # A row of another commit or runner runs again.
    RERUN = "rerun"
    # Such a row is kept.
    KEEP = "keep"


@dataclass(frozen=True)
class Provenance:
    commit: str
    runner: str


@dataclass
class Prior:
    """What an earlier run left: the CSV's header and rows, and what the sidecar says of them."""

    header: str | None
    rows: list[str]
    entries: dict[tuple[str, int], Entry] = field(default_factory=dict)
    # Rows the sidecar does not know (a harness run, a hand edit), by cell when readable.
    unknown: dict[tuple[str, int], str] = field(default_factory=dict)
    # The same rows by their `model_path` (`models/org/moe-30b`): the runner's rows name a
    # nested model by its last part, the path names it whole.
    unknown_paths: dict[tuple[str, int], str] = field(default_factory=dict)

    def true_ooms(self) -> Iterable[tuple[str, int]]:
        """The cells whose row is a true OOM: the backstop starts from them."""
        for key, entry in self.entries.items():
            if entry.token in RECORDED_TOKENS:
                yield key
        for key, row in self.unknown.items():
            if line_token(row) in RECORDED_TOKENS:
                yield key


@dataclass(frozen=True)
class PriorCell:
    """A cell the earlier run has a row for: whether it counts as done, and why."""

    done: bool
    reason: str


def load(csv_path: Path, *, cells: bool = True) -> Prior:
    """The earlier run's CSV and sidecar; an absent CSV is an empty prior (nothing done).
    `cells`: read each row's cell and provenance (not needed to append rows: `oomrec run`).

    Read as untrusted: the CSV a regular file of at most MAX_CSV_BYTES (a FIFO or /dev/zero
    as --output is refused, not waited on); a last line without its line ending (the run was
    killed mid-write) is no row: it is moved to `<csv>.torn`, never kept as one. A provenance
    entry counts only for the row it describes: one whose model, length or token are not its
    row's (an entry copied onto another cell's row) gives that row no provenance, so its cell
    runs again rather than counting as done."""
    text = read_regular(csv_path, MAX_CSV_BYTES, "the sweep's CSV to resume")
    if text is None:
        return Prior(None, [])
    if text and not text.endswith("\n"):
        cut = text.rfind("\n") + 1
        _move_aside(csv_path, text[cut:])
        text = text[:cut]
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines:
        return Prior(None, [])
    header, rows = lines[0], lines[1:]
    prior = Prior(header, rows)
    if not cells:
        return prior
    by_text: dict[str, list[Entry]] = {}
    for candidate in read_entry_list(sidecar_path(csv_path)):
        by_text.setdefault(candidate.row.removesuffix("\r"), []).append(candidate)
    for row, cell in zip(rows, _cells_of(header, rows), strict=True):
        # A spreadsheet's save ends each line in CRLF: still the row the entry describes.
        same = by_text.get(row.removesuffix("\r"), ())
        entry = next((e for e in same if _describes(e, row, cell)), None)
        if entry is not None:
            # As the CSV holds it now: the row a rerun drops and a kept entry names.
            prior.entries[(entry.model, entry.length)] = replace(entry, row=row)
            continue
        if cell is not None:
            prior.unknown[cell[:2]] = row
            if cell[2]:
                prior.unknown_paths[(cell[2], cell[1])] = row
    return prior


# A sweep's CSV holds a row per cell: far under this for any real grid.
MAX_CSV_BYTES = 256 << 20


def _describes(entry: Entry, row: str, cell: tuple[str, int, str] | None) -> bool:
    """Whether `entry` is the provenance of `row` (whose text it holds): the same length and
    token. Not the model: the cell's CSV belongs to the cell, so its row may name another (a
    nested model's last part, a symlink's target)."""
    if cell is None or cell[1] != entry.length:
        return False
    return (line_token(row) or Token.SUCCESS) == entry.token


def _move_aside(csv_path: Path, fragment: str) -> None:
    """Keep a torn last line in `<csv>.torn` (appended, never lost) before the CSV is read."""
    torn = csv_path.with_name(csv_path.name + ".torn")
    try:
        fd = os.open(torn, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, (fragment + "\n").encode("utf-8", errors="surrogateescape"))
        finally:
            os.close(fd)
    except OSError as exc:
        raise OomrecError(
            f"{torn}: cannot keep the torn last line of {csv_path} there ({exc.strerror}); "
            "free disk space or fix its permissions"
        ) from None


def path_key(model_path: str) -> str:
    """A `model_path` as rows of one cell write it either way (`./models/x/`, `models/x`)."""
    return model_path.strip().removeprefix("./").rstrip("/")


def _cells_of(header: str, rows: list[str]) -> list[tuple[str, int, str] | None]:
    """Each row's model, length and `model_path` key ("" without that column), read as
    `record import-csv` reads a CSV (csvread: a spreadsheet's BOM, any column order, extra
    columns; the length `prompt_target_len`, else `prompt_tokens`); None when a row names none."""
    columns = header_names(header.encode("utf-8", errors="surrogateescape"))
    if not rows or columns is None or "model" not in columns:
        return [None] * len(rows)
    data = "\n".join(rows).encode("utf-8", errors="surrogateescape")
    # Numbered by index into `rows`: every row is a non-blank line, so each gets one frame row.
    part = rowread.Lines(0, columns, data, linenos=range(len(rows)))
    frame = rowread.read([part], (), wanted=("model", "model_path", "target", "tokens"))
    found: list[tuple[str, int, str] | None] = [None] * len(rows)
    for index, model, path, target, tokens in frame.select(
        rowread.LINE, "model", "model_path", "target", "tokens"
    ).iter_rows():
        name = rowfacts.model_of(model)
        length = rowfacts.length_of(target, tokens).value
        if name and length is not None:
            found[index] = (name, length, path_key(path))
    return found


def prior_cell(
    prior: Prior,
    model: str,
    length: int,
    now: Provenance,
    *,
    rerun_failed: bool = False,
    mode: Mode = Mode.RERUN,
    model_path: str = "",
) -> PriorCell | None:
    """Whether the cell is done; None when the earlier run has no row for it."""
    key = (model, length)
    entry = prior.entries.get(key)
    if entry is None:
        row = prior.unknown.get(key) or prior.unknown_paths.get((path_key(model_path), length))
        if row is None:
            return None
        token = line_token(row) or Token.SUCCESS
        if token in RECORDED_TOKENS:
            return PriorCell(True, f"earlier {token}")
        if mode == Mode.KEEP:
            return PriorCell(True, "kept (no provenance: not written by oomrec --resume)")
        return PriorCell(False, "its row has no provenance (not written by an oomrec sweep)")
    if entry.token in RECORDED_TOKENS:
        return PriorCell(True, f"earlier {entry.token}")
    if entry.token.startswith("FAIL:") and rerun_failed:
        return PriorCell(False, f"earlier {entry.token}, --rerun-failed")
    changed = []
    if entry.commit != now.commit:
        then, head = short_commit(entry.commit), short_commit(now.commit)
        changed.append(f"ran at commit {then}, now {head}")
    if entry.runner != now.runner:
        changed.append(f"ran with runner {entry.runner!r}, now {now.runner!r}")
    if changed and mode == Mode.RERUN:
        return PriorCell(False, "; ".join(changed))
    if changed:
        return PriorCell(True, f"kept ({'; '.join(changed)})")
    return PriorCell(True, f"earlier {entry.token}")


class Sidecar:
    """The provenance file. The entries so far are written once, atomically, as the sweep
    starts and as it ends (compacted); meanwhile each cell's entries are appended to a journal
    beside it (`<csv>.oomrec.json.journal`): one write per cell, whatever the size of the sweep
    (rewriting the whole file after every cell made a sweep O(n^2)). A sweep killed mid-run
    leaves both, and every reader reads both (core.provenance).

    The journal's lines are not fsynced (~0.5 ms a cell): a killed sweep's writes are in the
    page cache, which outlives the process. What a lost power can take is the last lines; their
    cells then have no provenance and --resume runs them again. That is never an OOM hidden or
    lost: the record, fsynced, holds a cell's OOM before its row and journal line are written.
    """

    def __init__(self, csv_path: Path, kept: Iterable[Entry]) -> None:
        self.path = sidecar_path(csv_path)
        self.journal = journal_path(csv_path)
        self.entries: list[Entry] = list(kept)
        self._compact()

    def add(self, entries: Iterable[Entry]) -> None:
        new = list(entries)
        self.entries.extend(new)
        data = "".join(json.dumps(asdict(e), ensure_ascii=True) + "\n" for e in new).encode()
        fd = os.open(self.journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            if os.write(fd, data) != len(data):
                raise OSError(f"short write to {self.journal}")
        finally:
            os.close(fd)

    def close(self) -> None:
        """Fold the journal into the provenance file (the sweep's end)."""
        if os.path.lexists(self.journal):
            self._compact()

    def _compact(self) -> None:
        data = {"schema_version": SCHEMA_VERSION, "cells": [asdict(e) for e in self.entries]}
        replace_file(
            self.path,
            json.dumps(data, ensure_ascii=True).encode("utf-8"),
            keep_mode=False,
            new_mode=None,
            sync_folder=False,
            suffix="",
        )
        # Its entries are in the file now (a kill before this line only repeats them).
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.journal)


def rewrite_csv(csv_path: Path, header: str, rows: Iterable[str]) -> None:
    """Replace the CSV with `header` and `rows` (the rows kept, byte for byte), atomically.
    A symlinked CSV stays a symlink (its target is replaced), and the file keeps its mode."""
    csv_path = Path(os.path.realpath(csv_path))
    text = header + "\n" + "".join(row + "\n" for row in rows)
    replace_file(
        csv_path,
        text.encode("utf-8", errors="surrogateescape"),
        create_folder=False,
        new_mode=None,
        sync_folder=False,
        suffix="",
    )
