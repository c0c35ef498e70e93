"""Backfilling the record from existing benchmark CSVs (`oomrec record import-csv`).

Each data row whose last field is exactly `SKIP:oom` becomes an OomRecord: model, length, date,
commit, peak and hardware from the row's own columns where the file has them, else from git and
the file (the commit that introduced the row's line, its name's host token, its modification
date). csvread finds those rows and reads them, rowfacts decides what they say; this module maps
them to records, asks git once for the adding commits (and, per file changed since it was
added, once for its rows' lines), filters by hardware and leaves out what the record holds.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, NamedTuple

from oomrec.core import rowfacts
from oomrec.core.errors import OomrecError
from oomrec.core.machine import MachineClass, file_class, file_host, row_machine
from oomrec.core.provenance import measured_on
from oomrec.core.records import (
    UNKNOWN_COMMIT,
    Applicability,
    EvidenceKey,
    OomRecord,
    applicability,
    covered,
    evidence_key,
    source_field,
    source_path,
)
from oomrec.core.rowfacts import clip
from oomrec.core.schema import DEFAULT_COMMIT_COLUMNS, ROW_FIELDS, ROW_QUOTING, Token, is_faked
from oomrec.csvread import files as csvscan
from oomrec.csvread import rows as rowread
from oomrec.csvread.commits import GitCommits, Wanted, git_commits, row_date
from oomrec.csvread.files import find_csv_files
from oomrec.importer import held as heldrule
from oomrec.store.locations import Settings

if TYPE_CHECKING:
    from oomrec.store.gitrepo import AddedBy
    from oomrec.store.retractions import Event

DEFAULT_FOLDER = "benchmarks"
# Why a SKIP:oom row is not imported: rowfacts' reasons and schema.ROW_*.


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
    # Rows whose evidence was taken back (`record retract`, no later restore): not re-added.
    retracted: int = 0
    # Rows of a nested model whose model column is its last part, recorded under the nested
    # name their `model_path` gives: (source, line number, the row's name, the nested name).
    nested: list[tuple[str, int, str, str]] = field(default_factory=list)
    other_hardware: Counter[str] = field(default_factory=Counter)
    shortest_prompt: list[OomRecord] = field(default_factory=list)
    bad_rows: list[SkippedRow] = field(default_factory=list)
    row_notes: list[RowNote] = field(default_factory=list)
    no_adding_commit: list[str] = field(default_factory=list)
    # Rows without a commit column on lines not committed yet: (source, line number).
    uncommitted_rows: list[tuple[str, int]] = field(default_factory=list)
    # Files whose rows git could not blame: the rows without a commit column get `unknown`.
    blame_failed: list[tuple[str, str]] = field(default_factory=list)
    # The engine that split the rows (the one reader's); kept in the JSON for its readers.
    parsed_with: str = "polars"

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
            "retracted": self.retracted,
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
            "nested_rows": [
                {"source": s, "line": n, "model_column": column, "model": model}
                for s, n, column, model in self.nested
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


def import_csvs(
    paths: Sequence[Path],
    *,
    root: Path,
    in_git: bool,
    existing: Iterable[OomRecord],
    hardware: str | None,
    commit_columns: Sequence[str] = DEFAULT_COMMIT_COLUMNS,
    engine: str = rowread.POLARS,
    archived: Iterable[OomRecord] = (),
    events: Iterable[Event] = (),
    shared: Callable[[], tuple[list[OomRecord], list[Event]]] | None = None,
    models_dir: Path | None = None,
) -> ImportReport:
    """Find the `SKIP:oom` rows under `paths` and the records they make that are not yet known.

    `root` is what sources are relative to; `in_git` says whether it is a git work tree (for
    commits). `hardware` keeps rows of that tag and untagged rows; None keeps all.
    `engine`: the row reader's (csvread.rows.CSV, the reference, for tests). `archived`: the
    archive's records (pruned, verified), held as the record's are; `events`: its retractions
    and restores, whose latest says what was taken back, never re-added (importer.held decides
    what holds a row); `shared`: other hosts' published records and events, asked only when a
    row is held by nothing local (it reads git notes). `models_dir`: where a
    row's `model_path` names a nested model (default: `models` under `root`). Nothing is
    written: the caller appends `report.new`.
    """
    files, refused = find_csv_files(paths)
    scanned = csvscan.scan_files(files)
    commit_names = tuple(commit_columns)
    report = ImportReport(hardware=hardware)
    report.parsed_with = engine
    _read_candidates(scanned, commit_names, engine)
    unnamed = _unnamed_classes(scanned, commit_names, engine)
    root_str = str(root.resolve())
    drafts: list[_Draft] = []
    models = Path(os.path.normpath((models_dir or root / "models").resolve()))
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
        host = file_host(result.path)
        measured = measured_on(Path(result.path))
        for row in result.oom_rows:
            draft = _draft(row, host, source, result, unnamed.get(result.path))
            if isinstance(draft, SkippedRow):
                report.bad_rows.append(SkippedRow(shown, draft.lineno, draft.reason, draft.problem))
                continue
            if draft.commit is None and measured:
                # A sweep's own CSV: where its cell ran, as the sweep recorded it (its skip
                # rows leave hardware empty, as the harness's do).
                where = measured.get((draft.model, draft.length))
                if where is not None:
                    draft = draft._replace(commit=where.commit)
                    if where.hardware is not None:
                        draft = draft._replace(hardware=where.hardware, mem_bytes=where.mem_bytes)
            nested = _nested_name(draft.model, row.cells[_ROLE["model_path"]], models, root)
            if nested is not None:
                report.nested.append((shown, row.lineno, draft.model, nested))
                draft = draft._replace(model=nested)
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
    commits = _git_commits(drafts, root, in_git, report) if drafts else GitCommits()
    evidence = heldrule.Evidence([*existing, *archived], events, shared)
    _select(drafts, commits, evidence, report, heldrule.PastNames(root, in_git))
    return report


def _nested_name(model: str, model_path: str | None, models: Path, root: Path) -> str | None:
    """The nested model a row names by its last part (`llama` for `./models/org/llama`, as a
    runner writes it), from its `model_path` under the models dir; None when it names no other.
    """
    if not model_path or "/" in model:
        return None
    text = model_path.strip().rstrip("/")
    if not text:
        return None
    path = Path(text) if os.path.isabs(text) else root.resolve() / text
    try:
        parts = Path(os.path.normpath(path)).relative_to(models).parts
    except ValueError:
        return None
    if len(parts) < 2 or parts[-1] != model or ".." in parts:
        return None
    nested = str(PurePosixPath(*parts))
    return nested if rowfacts.model_problem(nested) is None else None


def _read_candidates(
    scanned: Sequence[csvscan.ScannedFile], commit_columns: tuple[str, ...], engine: str
) -> None:
    """Each read file's `oom_rows` and `bad_rows`, from its candidate lines by the one reader: a
    row whose token is `SKIP:oom`, or a line ending in it that is no row of its header."""
    parts = [
        rowread.Lines(
            i, f.header, b"\n".join(f.candidate_lines) + b"\n", linenos=f.candidate_linenos
        )
        for i, f in enumerate(scanned)
        if f.skipped is None and f.candidate_lines
    ]
    if not parts:
        return
    frame = rowread.read(parts, commit_columns, engine)
    import polars as pl

    oom = frame.filter(
        pl.col(rowread.PROBLEM).is_null() & (pl.col(rowread.TOKEN) == Token.TRUE_OOM)
    )
    for file, lineno, *cells in oom.select(rowread.FILE, rowread.LINE, *rowread.ROLES).iter_rows():
        scanned[file].oom_rows.append(csvscan.OomRow(lineno, tuple(cells)))
    # A line that is no row of its header, if it is a SKIP:oom row at all: its last field is the
    # token, or it cannot be split to tell.
    problem = pl.col(rowread.PROBLEM)
    bad = frame.filter(
        problem.is_not_null()
        & ((problem != ROW_FIELDS) | (pl.col(rowread.LAST_TOKEN) == Token.TRUE_OOM))
    )
    for file, lineno, reason in bad.select(rowread.FILE, rowread.LINE, problem).iter_rows():
        found = scanned[file]
        found.bad_rows.append(csvscan.UnreadRow(lineno, reason, _unread(reason, found, lineno)))


def _unnamed_classes(
    scanned: Sequence[csvscan.ScannedFile], commit_columns: tuple[str, ...], engine: str
) -> dict[str, MachineClass]:
    """Per file with an OOM row that names no hardware (the harness's skip rows never do), the
    class such a row takes: core.machine.file_class of the hardware its other rows name, read
    by the one reader, as the report reads them. Only those files are read again, whole."""
    wanted = [f for f in scanned if any(not r.cells[_ROLE["hardware"]] for r in f.oom_rows)]
    if not wanted:
        return {}
    parts = []
    for i, f in enumerate(wanted):
        whole = csvscan.scan_file(f.path, keep_body=True)
        if whole.skipped is None and whole.header == f.header:
            parts.append(rowread.Lines(i, whole.header, whole.body, whole.body_line))
    frame = rowread.read(parts, commit_columns, engine, wanted=("hardware",), ordered=False)
    import polars as pl

    named = frame.filter(pl.col(rowread.PROBLEM).is_null() & (pl.col("hardware") != ""))
    values: dict[int, list[str]] = {}
    for file, value in named.select(rowread.FILE, "hardware").unique().iter_rows():
        values.setdefault(file, []).append(value)
    return {f.path: file_class(file_host(f.path), values.get(i, ())) for i, f in enumerate(wanted)}


def _unread(reason: str, file: csvscan.ScannedFile, lineno: int) -> str:
    """What a reason for an unreadable SKIP:oom line means, in detail."""
    if reason == ROW_FIELDS:
        raw = file.candidate_lines[file.candidate_linenos.index(lineno)]
        judged = rowread.judge_line(raw, len(file.header))
        fields = len(judged[2]) if judged is not None else 0
        return (
            f"{fields} fields where the header names {len(file.header)} and a token follows "
            "them; its columns cannot be matched"
        )
    if reason == ROW_QUOTING:
        return "CSV quoting makes its last field other than SKIP:oom"
    return "not UTF-8 text"


# A row's cells by role, as csvread.rows reads them.
_ROLE = {role: i for i, role in enumerate(rowread.ROLES)}


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
    row: csvscan.OomRow,
    host: str | None,
    source: str,
    file: csvscan.ScannedFile,
    unnamed: MachineClass | None = None,
) -> _Draft | SkippedRow:
    """The row (its cells by role, as csvread.rows reads them) as a draft record, or why it
    cannot be one. Each fact is rowfacts' decision, the report's too."""
    cells = row.cells
    model = rowfacts.model_of(cells[_ROLE["model"]])
    problem = rowfacts.model_problem(model)
    if problem:
        return SkippedRow(source, row.lineno, rowfacts.ROW_MODEL, problem)
    if is_faked(cells[_ROLE["prompt"]]):
        return SkippedRow(
            source, row.lineno, rowfacts.ROW_FAKE, "its prompt says the OOM was faked"
        )
    length = rowfacts.length_of(cells[_ROLE["target"]], cells[_ROLE["tokens"]])
    if length.value is None:
        return SkippedRow(source, row.lineno, length.reason or "", length.problem or "")
    notes: tuple[str, ...] = ()
    peak_bytes, peak_gib = cells[_ROLE["peak_bytes"]], cells[_ROLE["peak_gib"]]
    peak = rowfacts.peak_of(peak_bytes, peak_gib)
    if peak is None and (peak_bytes or peak_gib):
        shown = f"peak_bytes {clip(peak_bytes)}" if peak_bytes else f"GiB {clip(peak_gib)}"
        notes += (f"its peak ({shown}) is not a size in 64 bits; recorded as unknown",)
    commit, note = rowfacts.commit_of(cells[_ROLE["commit"]])
    if note:
        notes += (note,)
    git_lines = file.git_lines
    hardware, mem_bytes = row_machine(cells[_ROLE["hardware"]], host, unnamed)
    return _Draft(
        model=model,
        length=length.value,
        date=rowfacts.date_of(cells[_ROLE["date"]]),
        commit=commit,
        peak_bytes=peak,
        hardware=hardware,
        mem_bytes=mem_bytes,
        source=source,
        path=file.path,
        lineno=row.lineno,
        git_line=row.lineno if git_lines is None else git_lines[row.lineno - 1],
        notes=notes,
    )


def _git_commits(
    drafts: list[_Draft], root: Path, in_git: bool, report: ImportReport
) -> GitCommits:
    """git's answer for the drafts that lack a commit or a date, its gaps noted in `report`."""
    commits = git_commits(
        (_wanted(d) for d in drafts if d.commit is None or d.date is None), root, in_git
    )
    report.no_adding_commit = [source_field(s) for s in commits.no_adding_commit]
    report.blame_failed = [(source_field(s), why) for s, why in commits.blame_failed]
    report.uncommitted_rows = sorted(
        (source_field(d.source), d.lineno) for d in drafts if commits.uncommitted(_wanted(d))
    )
    return commits


def _wanted(draft: _Draft) -> Wanted:
    return Wanted(draft.source, draft.git_line, draft.commit is None)


def _select(
    drafts: list[_Draft],
    commits: GitCommits,
    evidence: heldrule.Evidence,
    report: ImportReport,
    names: heldrule.PastNames,
) -> None:
    known = evidence.known
    sources: dict[str, str] = {}
    shortest: dict[EvidenceKey, OomRecord] = {}
    for draft in drafts:
        source = sources.get(draft.source)
        if source is None:
            source = sources[draft.source] = source_field(draft.source)
        record = _finish(draft, commits.of(_wanted(draft)), source)
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
        # The row's own facts (the commit a sidecar or a commit column gave), to match it with
        # the record its sweep wrote, however that record names its commit and memory.
        found = evidence.holds(record, draft.date, draft.commit, source, names)
        if found == heldrule.RETRACTED:
            report.retracted += 1
            continue
        if found == heldrule.HELD:
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
        date=row_date(draft.date, commit, draft.path),
        commit=draft.commit or (commit.sha if commit else UNKNOWN_COMMIT),
        peak_bytes=draft.peak_bytes,
        source_csv=source,
        hardware=draft.hardware,
        mem_bytes=draft.mem_bytes,
    )
