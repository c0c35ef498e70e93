"""Backfilling the record from existing benchmark CSVs (`oomrec record import-csv`).

Each data row whose last field is exactly `SKIP:oom` becomes an OomRecord: model, length, date,
commit, peak and hardware from the row's own columns where the file has them, else from git and
the file (the commit that introduced the row's line, its name's host token, its modification
date). The scan that finds those rows is csvscan's, their parsing rowparse's; this module maps
them to records, asks git once for the adding commits (and, per file changed since it was
added, once for its rows' lines), filters by hardware and leaves out what the record holds.
"""

from __future__ import annotations

import math
import os
import posixpath
import stat
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date as Date
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from oomrec.core.errors import OomrecError
from oomrec.core.hardware import GIB
from oomrec.core.machine import file_host, row_machine
from oomrec.core.pathkind import kind as file_kind
from oomrec.core.records import (
    MAX_INT,
    UNKNOWN_COMMIT,
    Applicability,
    EvidenceKey,
    OomRecord,
    applicability,
    bounded_int,
    check_model_name,
    covered,
    evidence_key,
    is_date,
    printable,
    source_field,
    source_path,
)
from oomrec.core.schema import is_faked
from oomrec.importer import csvscan, rowparse
from oomrec.store.locations import Settings

if TYPE_CHECKING:
    from oomrec.store.gitrepo import AddedBy
    from oomrec.sweep.resume import Measured

DEFAULT_COMMIT_COLUMNS = ("mlxcel_commit", "commit")
DEFAULT_FOLDER = "benchmarks"
LENGTH_COLUMNS = ("prompt_target_len", "prompt_tokens")
PEAK_BYTES_COLUMN = "peak_bytes"
# Read as GiB (1024**3 bytes), the unit `record list` shows peaks in, so a value reads back as
# the CSV wrote it. Were the harness's "GB" 10**9 bytes, the record would be 7% high: a peak
# that errs large never makes a cell look safer than it is.
PEAK_GIB_COLUMN = "mlx_peak_gb"
# Harness file names are `{backend}_{host}_...`; other names carry no host token.

# float() reads any length; no real peak in GiB needs more characters than this.
_MAX_GIB_CHARS = 27
# A sweep's provenance file holds a line per cell: far under this for any real grid.
_MAX_PROVENANCE_BYTES = 64 << 20
# A commit is at most 64 hex digits and `-dirty`; a model a directory name (NAME_MAX). Longer
# cells are no such thing, and the record reader refuses fields over 131,072 characters.
_MAX_COMMIT_CHARS = 128
_MAX_MODEL_CHARS = 255
# A real hardware cell is under 60 characters; normalising an unbounded one costs unbounded time.

# Why a SKIP:oom row is not imported, as the report groups them (with csvscan's reasons).
ROW_MODEL = "model not a directory name"
ROW_LENGTH = "length not a number"
ROW_LENGTH_RANGE = "length over 64 bits"
# The harness's MLXCEL_BENCH_FAKE_OOM (and `oomrec sweep --fake-oom`) writes this prompt on the
# SKIP:oom row of a cell it never launched: no OOM was seen, so the row is no evidence.
ROW_FAKE = "faked OOM (MLXCEL_BENCH_FAKE_OOM), no evidence"


@dataclass(frozen=True, slots=True)
class SkippedRow:
    """A `SKIP:oom` row that was not imported: why, as a group (`reason`) and in detail."""

    source: str
    lineno: int
    reason: str
    problem: str

    def __str__(self) -> str:
        return f"{self.source}:{self.lineno}: SKIP:oom row not imported ({self.problem})"


@dataclass(frozen=True, slots=True)
class RowNote:
    """A `SKIP:oom` row imported with a cell it could not keep as written, and what became of it."""

    source: str
    lineno: int
    note: str

    def __str__(self) -> str:
        return f"{self.source}:{self.lineno}: SKIP:oom row imported, but {self.note}"


@dataclass
class ImportReport:
    """What an import found and did. `new` holds the records it adds (or would add); after the
    append, `written` makes it what was written."""

    hardware: str | None
    files_read: int = 0
    files_skipped: dict[str, list[str]] = field(default_factory=dict)
    data_rows: int = 0
    oom_rows: int = 0
    new: list[OomRecord] = field(default_factory=list)
    already_present: int = 0
    other_hardware: Counter[str] = field(default_factory=Counter)
    shortest_prompt: list[OomRecord] = field(default_factory=list)
    bad_rows: list[SkippedRow] = field(default_factory=list)
    row_notes: list[RowNote] = field(default_factory=list)
    no_adding_commit: list[str] = field(default_factory=list)
    # Rows without a commit column on lines not committed yet: (source, line number).
    uncommitted_rows: list[tuple[str, int]] = field(default_factory=list)
    # Files whose rows git could not blame: the rows without a commit column get `unknown`.
    blame_failed: list[tuple[str, str]] = field(default_factory=list)
    parsed_with: str = rowparse.CSV

    @property
    def rows_skipped(self) -> Counter[str]:
        """How many SKIP:oom rows were not imported, by reason."""
        return Counter(b.reason for b in self.bad_rows)

    def written(self, appended: list[OomRecord]) -> None:
        """`new` becomes what the append wrote; the rest another import added meanwhile."""
        self.already_present += len(self.new) - len(appended)
        self.new = appended

    def to_dict(self) -> dict[str, object]:
        return {
            "hardware": self.hardware,
            "files_read": self.files_read,
            "files_skipped": self.files_skipped,
            "data_rows": self.data_rows,
            "oom_rows": self.oom_rows,
            "added": len(self.new),
            "already_present": self.already_present,
            "other_hardware": sum(self.other_hardware.values()),
            "other_hardware_tags": dict(sorted(self.other_hardware.items())),
            "records": [r.to_dict() for r in self.new],
            "shortest_prompt": [r.to_dict() for r in self.shortest_prompt],
            "rows_skipped": dict(sorted(self.rows_skipped.items())),
            "bad_rows": [
                {"source": b.source, "line": b.lineno, "reason": b.reason, "problem": b.problem}
                for b in self.bad_rows
            ],
            "row_notes": [
                {"source": n.source, "line": n.lineno, "note": n.note} for n in self.row_notes
            ],
            "blame_failed": [{"source": s, "problem": p} for s, p in self.blame_failed],
            "no_adding_commit": self.no_adding_commit,
            "uncommitted_rows": [{"source": s, "line": n} for s, n in self.uncommitted_rows],
            "parsed_with": self.parsed_with,
        }


def commit_columns(settings: Settings) -> tuple[str, ...]:
    """The columns that hold a row's commit, first match wins: `[tool.oomrec] commit_columns`."""
    configured = settings.get("commit_columns")
    if configured is None:
        return DEFAULT_COMMIT_COLUMNS
    if (
        not isinstance(configured, list)
        or not configured
        or not all(isinstance(c, str) and c.strip() for c in configured)
    ):
        raise OomrecError(
            f"{settings.source}: [tool.oomrec] commit_columns must be a list of column names, "
            'e.g. ["mlxcel_commit", "commit"]'
        )
    return tuple(c.strip() for c in configured)


def default_paths(settings: Settings) -> list[Path]:
    """`benchmarks/` under the git top level (or the cwd outside git)."""
    folder = settings.base / DEFAULT_FOLDER
    if not folder.is_dir():
        raise OomrecError(
            f"no {DEFAULT_FOLDER}/ folder in {settings.base}; pass the CSV files or folders "
            "to import"
        )
    return [folder]


def find_csv_files(paths: Sequence[Path]) -> tuple[list[str], list[csvscan.ScannedFile]]:
    """Every file named and every `*.csv` below every folder named, sorted, each once.

    Also returns what is not read at all: folders that cannot be listed, and FIFOs, sockets and
    devices (a read could block or never end). A path that does not exist is an error, raised
    before anything is read. Symlinks below a folder are read when they lead to a regular file
    (the read checks); symlinked folders are not searched, so a link loop cannot trap the walk.
    """
    missing = [p for p in paths if not os.path.lexists(p)]
    if missing:
        raise OomrecError(
            f"{missing[0]}: no such file or folder; pass CSV files or folders to import"
        )
    files: set[str] = set()
    refused: list[csvscan.ScannedFile] = []
    for path in paths:
        real = os.path.realpath(path)
        try:
            mode = os.stat(real).st_mode
        except OSError:
            # A dangling link or a loop: the read reports why.
            files.add(real)
            continue
        if stat.S_ISDIR(mode):
            _walk(real, files, refused)
        elif stat.S_ISREG(mode):
            files.add(real)
        else:
            refused.append(csvscan.ScannedFile(real, csvscan.NOT_A_FILE, file_kind(mode)))
    return sorted(files), refused


def _walk(top: str, files: set[str], refused: list[csvscan.ScannedFile]) -> None:
    # A stack, not recursion: a hostile tree can be nested deeper than Python's recursion limit.
    folders = [top]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as entries:
                listed = list(entries)
        except OSError as exc:
            refused.append(
                csvscan.ScannedFile(folder, csvscan.UNREADABLE, exc.strerror or str(exc))
            )
            continue
        for entry in listed:
            try:
                # The entry types come with the listing: no stat call per file.
                if entry.is_dir(follow_symlinks=False):
                    # Searched whatever its name (`old.csv/` too).
                    folders.append(entry.path)
                elif not entry.name.lower().endswith(".csv"):
                    continue
                elif entry.is_file(follow_symlinks=False) or entry.is_symlink():
                    files.add(entry.path)
                else:
                    kind = file_kind(entry.stat(follow_symlinks=False).st_mode)
                    refused.append(csvscan.ScannedFile(entry.path, csvscan.NOT_A_FILE, kind))
            except OSError as exc:
                refused.append(
                    csvscan.ScannedFile(entry.path, csvscan.UNREADABLE, exc.strerror or str(exc))
                )


def import_csvs(
    paths: Sequence[Path],
    *,
    root: Path,
    in_git: bool,
    existing: Iterable[OomRecord],
    hardware: str | None,
    commit_columns: Sequence[str] = DEFAULT_COMMIT_COLUMNS,
    polars_min_rows: int | None = None,
) -> ImportReport:
    """Find the `SKIP:oom` rows under `paths` and the records they make that are not yet known.

    `root` is what sources are relative to; `in_git` says whether it is a git work tree (for
    commits). `hardware` keeps rows of that tag and untagged rows; None keeps all.
    `polars_min_rows`: from how many candidate rows polars parses them (default:
    `rowparse.polars_min_rows()`). Nothing is written: the caller appends `report.new`.
    """
    files, refused = find_csv_files(paths)
    scanned = csvscan.scan_files(files)
    commit_names = tuple(commit_columns)
    report = ImportReport(hardware=hardware)
    report.parsed_with = rowparse.parse_candidates(
        scanned,
        columns_read(commit_names),
        rowparse.polars_min_rows() if polars_min_rows is None else polars_min_rows,
    )
    root_str = str(root.resolve())
    drafts: list[_Draft] = []
    for result in refused + scanned:
        if result.skipped is not None:
            source = source_field(source_path(result.path, root_str, resolved=True))
            detail = result.detail
            if result.skipped == csvscan.SAME_FILE:
                detail = f"read as {source_field(source_path(detail, root_str, resolved=True))}"
            shown = f"{source} ({detail})" if detail else source
            report.files_skipped.setdefault(result.skipped, []).append(shown)
            continue
        report.files_read += 1
        report.data_rows += result.data_rows
        if not result.oom_rows and not result.bad_rows:
            continue
        source = source_path(result.path, root_str, resolved=True)
        # How the report and the record name the file: escaped if git and the OS name it oddly.
        shown = source_field(source)
        report.oom_rows += len(result.oom_rows) + len(result.bad_rows)
        report.bad_rows.extend(
            SkippedRow(shown, b.lineno, b.reason, b.problem) for b in result.bad_rows
        )
        columns = _columns(result.header, commit_names)
        host = file_host(result.path)
        measured = _measured_on(result.path)
        for row in result.oom_rows:
            draft = _draft(row, columns, host, source, result)
            if isinstance(draft, SkippedRow):
                report.bad_rows.append(SkippedRow(shown, draft.lineno, draft.reason, draft.problem))
                continue
            if draft.commit is None and measured:
                # A sweep's own CSV: where its cell ran, as the sweep recorded it (its skip
                # rows leave hardware empty, as the harness's do).
                where = measured.get((row.cells[columns.model].strip(), draft.length))
                if where is not None:
                    draft = draft._replace(commit=where.commit)
                    if where.hardware is not None:
                        draft = draft._replace(hardware=where.hardware, mem_bytes=where.mem_bytes)
            drafts.append(draft)
            notes = draft.notes
            if shown != source:
                notes += (f"its file name is recorded as {shown!r}",)
            if notes:
                report.row_notes.extend(RowNote(shown, row.lineno, n) for n in notes)
    for shown_files in report.files_skipped.values():
        shown_files.sort()
    report.bad_rows.sort(key=lambda b: (b.source, b.lineno))
    report.row_notes.sort(key=lambda n: (n.source, n.lineno))
    commits = _git_commits(drafts, root, in_git, report) if drafts else _GitCommits({}, {})
    _select(drafts, commits, existing, report)
    return report


def _measured_on(path: str) -> dict[tuple[str, int], Measured]:
    """The provenance oomrec's sweep keeps beside its CSV (`<csv>.oomrec.json`), if any."""
    from oomrec.sweep.resume import measured_on, sidecar_path

    try:
        info = os.stat(sidecar_path(Path(path)))
    except OSError:
        return {}
    # Only a regular file of a sane size: a FIFO there would hang the import, /dev/zero fill it.
    if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_PROVENANCE_BYTES:
        return {}
    return measured_on(Path(path))


def columns_read(commit_columns: Sequence[str]) -> rowparse.Wanted:
    """Which columns of a header the import reads, for the row parser."""
    names = tuple(commit_columns)
    return lambda header: _columns(header, names).needed


@dataclass(frozen=True, slots=True)
class _Columns:
    """Which columns of a header the import reads (`needed`, for the row parser), and where each
    role's cells are among them."""

    needed: tuple[int, ...]
    model: int
    lengths: tuple[int, ...]
    date: tuple[int, ...]
    hardware: tuple[int, ...]
    commits: tuple[int, ...]
    peak_bytes: tuple[int, ...]
    peak_gib: tuple[int, ...]
    prompt: tuple[int, ...]


@lru_cache(maxsize=256)
def _columns(header: tuple[str, ...], commit_columns: tuple[str, ...]) -> _Columns:
    # The first column of a name wins, as a reader going left to right would take it.
    index: dict[str, int] = {}
    for i, name in enumerate(header):
        index.setdefault(name, i)
    roles = {
        "model": (csvscan.MODEL_COLUMN,),
        "lengths": LENGTH_COLUMNS,
        "date": ("date",),
        "hardware": ("hardware",),
        "commits": commit_columns,
        "peak_bytes": (PEAK_BYTES_COLUMN,),
        "peak_gib": (PEAK_GIB_COLUMN,),
        "prompt": ("prompt",),
    }
    needed = tuple(sorted({index[n] for names in roles.values() for n in names if n in index}))
    at = {column: cell for cell, column in enumerate(needed)}

    def cells(role: str) -> tuple[int, ...]:
        return tuple(at[index[name]] for name in roles[role] if name in index)

    return _Columns(
        needed=needed,
        model=cells("model")[0],
        lengths=cells("lengths"),
        date=cells("date"),
        hardware=cells("hardware"),
        commits=cells("commits"),
        peak_bytes=cells("peak_bytes"),
        peak_gib=cells("peak_gib"),
        prompt=cells("prompt"),
    )


class _Draft(NamedTuple):
    """A record from a row, before git fills in what the row lacks (commit, date). A named
    tuple: one is made per OOM row, at half a frozen dataclass's cost."""

    model: str
    length: int
    date: str | None
    commit: str | None
    peak_bytes: int | None
    hardware: str | None
    # The accelerator memory the row's hardware text names (`..._122GB`); a file name has none.
    mem_bytes: int | None
    source: str
    path: str
    lineno: int
    # The row's line as git's blame numbers it (they differ in a file with lone CRs).
    git_line: int
    # What the record could not keep as the row wrote it (a peak out of range, an escaped cell).
    notes: tuple[str, ...] = ()


def _draft(
    row: csvscan.OomRow, columns: _Columns, host: str | None, source: str, file: csvscan.ScannedFile
) -> _Draft | SkippedRow:
    """The row as a draft record, or why it cannot be one."""
    cells = row.cells
    model = cells[columns.model].strip()
    if model.startswith("\ufeff"):
        # No name's first character; the record file would drop it on reading.
        model = model.lstrip("\ufeff").strip()
    problem = _model_problem(model)
    if problem:
        return SkippedRow(source, row.lineno, ROW_MODEL, problem)
    if columns.prompt and is_faked(cells[columns.prompt[0]]):
        return SkippedRow(source, row.lineno, ROW_FAKE, "its prompt says the OOM was faked")
    length_text = _first_value(cells, columns.lengths)
    if length_text and not (length_text.isascii() and length_text.isdigit()):
        problem = f"length {_clip(length_text)} is not a number"
        return SkippedRow(source, row.lineno, ROW_LENGTH, problem)
    length = bounded_int(length_text) if length_text else 0
    if length is None:
        return SkippedRow(
            source,
            row.lineno,
            ROW_LENGTH_RANGE,
            f"length {_clip(length_text)} is over {MAX_INT} (64 bits)",
        )
    notes: tuple[str, ...] = ()
    peak = None
    if columns.peak_bytes or columns.peak_gib:
        peak_bytes = _first_value(cells, columns.peak_bytes)
        peak_gib = _first_value(cells, columns.peak_gib)
        peak = _peak(peak_bytes, peak_gib)
        if peak is None and (peak_bytes or peak_gib):
            shown = f"peak_bytes {_clip(peak_bytes)}" if peak_bytes else f"GiB {_clip(peak_gib)}"
            notes += (f"its peak ({shown}) is not a size in 64 bits; recorded as unknown",)
    commit = _first_value(cells, columns.commits)
    if len(commit) > _MAX_COMMIT_CHARS:
        notes += (f"its commit {_clip(commit)} is not one; recorded as {UNKNOWN_COMMIT!r}",)
        commit = UNKNOWN_COMMIT
    elif printable(commit) != commit:
        # Kept, escaped: not a SHA, so every verdict on it is `unknown` and prune keeps it.
        commit = printable(commit)
        notes += (f"its commit holds control characters; recorded as {commit!r} (unknown)",)
    git_lines = file.git_lines
    hardware, mem_bytes = row_machine(_first_value(cells, columns.hardware), host)
    return _Draft(
        model=model,
        length=length,
        date=_date(_first_value(cells, columns.date)),
        commit=commit or None,
        peak_bytes=peak,
        hardware=hardware,
        mem_bytes=mem_bytes,
        source=source,
        path=file.path,
        lineno=row.lineno,
        git_line=row.lineno if git_lines is None else git_lines[row.lineno - 1],
        notes=notes,
    )


def _clip(text: str, limit: int = 40) -> str:
    """A cell as a warning shows it: quoted, escaped, at most `limit` characters of it."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def _first_value(cells: tuple[str, ...], at: tuple[int, ...]) -> str:
    """The first non-empty of the cells at these positions, stripped; "" if none."""
    for i in at:
        value = cells[i].strip()
        if value:
            return value
    return ""


# Cached: a corpus repeats a few models, hardware strings and dates over thousands of rows.
@lru_cache(maxsize=4096)
def _model_problem(model: str) -> str | None:
    if len(model) > _MAX_MODEL_CHARS:
        return f"model name {_clip(model)} is longer than a file name can be"
    try:
        check_model_name(model)
    except OomrecError as exc:
        # The model shown clipped: a hostile cell can be megabytes long.
        return str(exc).split(";")[0].replace(repr(model), _clip(model))
    return None


@lru_cache(maxsize=4096)
def _date(text: str) -> str | None:
    """The YYYY-MM-DD a date cell starts with (`2026-07-03`, `2026-07-03T12:00`), else None."""
    day = text[:10]
    return day if is_date(day) else None


def _peak(bytes_text: str, gib_text: str) -> int | None:
    if bytes_text.isascii() and bytes_text.isdigit():
        return bounded_int(bytes_text)
    if len(gib_text) > _MAX_GIB_CHARS:
        return None
    try:
        size = float(gib_text) * GIB
    except ValueError:
        return None
    return round(size) if math.isfinite(size) and 0 <= size <= MAX_INT else None


@dataclass(frozen=True, slots=True)
class _GitCommits:
    """What git says about the files drafts need it for: each file's adding commit and, for the
    files changed after it, each candidate row's own commit (None: not committed yet)."""

    added_by: dict[str, AddedBy]
    by_line: dict[str, dict[int, AddedBy | None]]

    def of(self, draft: _Draft) -> AddedBy | None:
        lines = self.by_line.get(draft.source)
        if lines is not None and draft.commit is None:
            return lines.get(draft.git_line)
        return self.added_by.get(draft.source)


def _git_commits(
    drafts: list[_Draft], root: Path, in_git: bool, report: ImportReport
) -> _GitCommits:
    """The adding commit of every file some draft needs it for, from one `git log`; and, for a
    file changed since (by a later commit or in the working tree), the commit of each of its
    rows without a commit of its own, from one `git blame` of just those lines."""
    needed = sorted({d.source for d in drafts if d.commit is None or d.date is None})
    if not needed:
        return _GitCommits({}, {})
    if not in_git:
        report.no_adding_commit = [source_field(s) for s in needed]
        return _GitCommits({}, {})
    # GitPython costs ~0.2 s to import: only pay it when some row lacks a commit or a date.
    from oomrec.store import gitrepo as gitutil

    relative = [s for s in needed if not posixpath.isabs(s)]
    added_by = gitutil.first_added(root, relative)
    report.no_adding_commit = [source_field(s) for s in needed if s not in added_by]
    lineless: dict[str, list[int]] = {}
    for draft in drafts:
        if draft.commit is None and draft.source in added_by:
            lineless.setdefault(draft.source, []).append(draft.git_line)
    if not lineless:
        return _GitCommits(added_by, {})
    changed = {s for s in lineless if added_by[s].changed_later}
    changed |= gitutil.uncommitted(root, lineless)
    by_line: dict[str, dict[int, AddedBy | None]] = {}
    for source in sorted(changed):
        try:
            by_line[source] = gitutil.line_commits(root, source, lineless[source])
        except OomrecError as exc:
            # One file git cannot blame (changed while read, a name git quotes) does not stop
            # the import: its rows get no line commit, hence `unknown`, which prune keeps.
            report.blame_failed.append((source_field(source), str(exc)))
            by_line[source] = {}
    report.uncommitted_rows = sorted(
        (source_field(d.source), d.lineno)
        for d in drafts
        if d.commit is None and d.source in by_line and by_line[d.source].get(d.git_line) is None
    )
    return _GitCommits(added_by, by_line)


def _select(
    drafts: list[_Draft],
    commits: _GitCommits,
    existing: Iterable[OomRecord],
    report: ImportReport,
) -> None:
    known = {evidence_key(r) for r in existing}
    sources: dict[str, str] = {}
    shortest: dict[EvidenceKey, OomRecord] = {}
    for draft in drafts:
        source = sources.get(draft.source)
        if source is None:
            source = sources[draft.source] = source_field(draft.source)
        record = _finish(draft, commits.of(draft), source)
        # The host's memory is not asked: an import keeps every size of its hardware.
        if applicability(record, report.hardware, None) == Applicability.OTHER_HARDWARE:
            report.other_hardware[record.hardware or ""] += 1
            continue
        key = evidence_key(record)
        if record.prompt_target_len == 0:
            shortest.setdefault(key, record)
        if key in known or covered(record, known):
            report.already_present += 1
            continue
        known.add(key)
        report.new.append(record)
    report.shortest_prompt = list(shortest.values())


def _finish(draft: _Draft, commit: AddedBy | None, source: str) -> OomRecord:
    """The record, with what the row lacks taken from its commit (the row's own, else the one
    that added its file), else from the file."""
    return OomRecord(
        model=draft.model,
        prompt_target_len=draft.length,
        date=draft.date or (commit.date if commit else _modified(draft.path)),
        commit=draft.commit or (commit.sha if commit else UNKNOWN_COMMIT),
        peak_bytes=draft.peak_bytes,
        source_csv=source,
        hardware=draft.hardware,
        mem_bytes=draft.mem_bytes,
    )


def _modified(path: str) -> str:
    """The file's modification date: the last hint of when a row without a date was measured."""
    try:
        return Date.fromtimestamp(os.stat(path).st_mtime).isoformat()
    except (OSError, OverflowError, ValueError):
        # Gone, or a time stamp no date can hold (`touch -d @1e18`).
        return Date.today().isoformat()
