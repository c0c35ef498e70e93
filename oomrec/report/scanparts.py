"""The report's scan kept in parts, so that a report reads only the files that changed.

A report is often asked again over files that have not changed, or after a sweep added a CSV
or grew one; reading and folding every row again would take seconds. So the fold of the rows
(before git is asked anything) is kept in parts: each part is the fold of some of the files,
under each file's signature and its provenance files' (report/scancache.py). A part whose
files are all unchanged is taken as it is; the files of the other parts, and the files no part
holds, are read and folded into one new part; the parts are merged. Over unchanged files,
nothing is read and polars is not even imported.

The merge gives what one fold of all the files gives, because the fold is a choice per cell
that does not depend on how the files are grouped: per outcome, the latest row (the greatest
date; undated rows lose to any dated one) and the first (the smallest date), each tie going
to the row earlier in file order (the order the files are found in now, then the line); per
day, the longest length that ran, a tie again by file order; targets, counts and skip reasons
added up. A file that another path names too (a symlink, a hard link) is read once, under one
of its paths: such files are always read afresh, together, and kept in no part, so that which
path is read never depends on a part made when the link was not there.

Parts are files `<git dir>/oomrec/report-parts/<digest>`, each with how it was asked (root,
commit columns, reader) and oomrec's version in its head: a part of another version or another
question, a part no longer clean and one that cannot be read are ignored and removed. Past
MAX_PARTS, the smallest parts are merged into one, so that a report never loads more than a
few files; a merged part is clean only while all its files are, so a change to one of them
reads all of them again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from oomrec.report import scancache
from oomrec.report.folded import CellRows, FileAt, Scan, Seen
from oomrec.report.scancache import Signature, Signed

# At most this many parts are kept: each costs a file read and a merge per report.
MAX_PARTS = 8


@dataclass(eq=False)
class Part:
    """The fold of some files, before git: `files`, each file's signature with its provenance
    file's; `at`, each read file by its source field. Equal only to itself."""

    files: dict[str, Signature]
    scan: Scan
    at: dict[str, FileAt]


Fold = Callable[[list[str]], tuple[Scan, dict[str, FileAt]]]


def scan(
    folder: Path, asked: Sequence[object], files: list[str], signed: Signed, fold: Fold
) -> tuple[Scan, dict[str, FileAt]]:
    """The fold of `files` (in this order) and each read file by its source field: the clean
    parts kept in `folder`, and `fold` of the other files. Keeps the parts it was made of."""
    # A part of another format (core/schema.REPORT_PARTS_FORMAT, in key_of) is of another
    # question.
    head = scancache.key_of("part", *asked)
    now = {path: signed.files[path] + signed.sidecar_of.get(path, ()) for path in files}
    kept = _load_all(folder, head)
    clean: list[tuple[str, Part]] = []
    covered: set[str] = set()
    for name, part in kept:
        if (
            all(now.get(path) == sig for path, sig in part.files.items())
            and not covered.intersection(part.files)
            and not signed.shared.intersection(part.files)
        ):
            clean.append((name, part))
            covered.update(part.files)
    todo = [path for path in files if path not in covered]
    plain = [path for path in todo if path not in signed.shared]
    linked = [path for path in todo if path in signed.shared]
    parts = [part for _, part in clean]
    new: list[Part] = []
    if plain:
        new.append(Part({path: now[path] for path in plain}, *fold(plain)))
    while len(parts) + len(new) > MAX_PARTS:
        smallest = sorted([*parts, *new], key=lambda p: len(p.files))[:2]
        parts = [p for p in parts if p not in smallest]
        new = [p for p in new if p not in smallest]
        position = _positions(files, smallest)
        if position is None:
            return fold(files)
        new.append(_merge(smallest, position))
    names = [name for name, part in clean if part in parts]
    for part in new:
        names.append(_save(folder, head, part))
    _remove_others(folder, set(names))
    every = [*parts, *new]
    if linked:
        # Read together, so that scan_files reads each linked file once; kept in no part.
        every.append(Part({}, *fold(linked)))
    if not every:
        return Scan(), {}
    position = _positions(files, every)
    if position is None:
        return fold(files)
    merged = _merge(every, position)
    return merged.scan, merged.at


def _positions(files: list[str], parts: Sequence[Part]) -> dict[str, int] | None:
    """Each source field's file position in `files`: the order ties go by. None when two
    files have one source field (` a.csv` and `a.csv` both name `a.csv`): a row's `where`
    then does not tell its file, and only one fold of all the files orders their rows."""
    position = {path: i for i, path in enumerate(files)}
    out = {source: position[at.path] for part in parts for source, at in part.at.items()}
    # Such files share one entry, in one part or across two.
    return out if len(out) == sum(part.scan.files_read for part in parts) else None


def _merge(parts: Sequence[Part], position: dict[str, int]) -> Part:
    """`parts` as one part: the largest taken as the base and changed in place (every part has
    been kept already or is about to be dropped), the others folded in."""
    base, *rest = sorted(parts, key=lambda p: -len(p.scan.cells))
    out = base.scan
    files = dict(base.files)
    at = dict(base.at)
    for part in rest:
        files.update(part.files)
        at.update(part.at)
        other = part.scan
        for key, cell in other.cells.items():
            mine = out.cells.get(key)
            if mine is None:
                out.cells[key] = cell
                continue
            _pick(mine, cell, position)
        for fit, (n, commit, where) in other.fits.items():
            best = out.fits.get(fit)
            if (
                best is None
                or n > best[0]
                or (n == best[0] and _order(where, position) < _order(best[2], position))
            ):
                out.fits[fit] = (n, commit, where)
        for machine, lengths in other.targets.items():
            out.targets.setdefault(machine, set()).update(lengths)
        out.files_read += other.files_read
        out.rows += other.rows
        out.unreadable_rows += other.unreadable_rows
        out.oom_rows_left_out += other.oom_rows_left_out
        for reason, count in other.files_skipped.items():
            out.files_skipped[reason] = out.files_skipped.get(reason, 0) + count
    return Part(files, out, at)


def _order(where: str, position: dict[str, int]) -> tuple[int, int]:
    """Where a row (`path:line`) is in file order: its file's position, then its line."""
    source, _, line = where.rpartition(":")
    return position[source], int(line)


def _pick(mine: CellRows, other: CellRows, position: dict[str, int]) -> None:
    """Into `mine`, per outcome, the latest and the first row of the two cells."""
    for outcome, seen in other.latest.items():
        held = mine.latest.get(outcome)
        if held is None or _wins(seen, held, position, later=True):
            mine.latest[outcome] = seen
    for outcome, seen in other.first.items():
        held = mine.first.get(outcome)
        if held is None or _wins(seen, held, position, later=False):
            mine.first[outcome] = seen


def _wins(seen: Seen, held: Seen, position: dict[str, int], *, later: bool) -> bool:
    """Whether `seen` is the latest (`later`) or the first row rather than `held`, as the fold
    chooses: a dated row over an undated one, then by date, then the earlier in file order."""
    if held.date is None or seen.date is None:
        if held.date is not None:
            return False
        return seen.date is not None or _order(seen.where, position) < _order(held.where, position)
    if seen.date != held.date:
        return (seen.date > held.date) if later else (seen.date < held.date)
    return _order(seen.where, position) < _order(held.where, position)


def _load_all(folder: Path, key: bytes) -> list[tuple[str, Part]]:
    """Each part in `folder` kept under `key`, by file name."""
    out = []
    for name in scancache.kept_names(folder):
        part = scancache.load(folder / name, key, Part)
        if part is not None and isinstance(part.scan, Scan):
            out.append((name, part))
    return out


def _save(folder: Path, key: bytes, part: Part) -> str:
    """Keep `part`; its file name, or "" when it could not be kept (time lost only)."""
    digest = hashlib.sha256(
        key + repr(sorted(part.files.items())).encode("utf-8", "surrogateescape")
    )
    name = digest.hexdigest()[:32]
    return name if scancache.save(folder / name, key, part) else ""


def _remove_others(folder: Path, keep: set[str]) -> None:
    """Every part file but those in `keep`: parts no longer clean, of another question or
    version, or cut. A temporary file of a save in flight is left alone."""
    for name in scancache.kept_names(folder):
        if name not in keep:
            with contextlib.suppress(OSError):
                os.unlink(folder / name)
