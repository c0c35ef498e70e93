"""The OOM frontier (`oomrec report`): per model and machine class, the largest length that ran,
the smallest that ran out of memory (and whether a fix took it out of play), what was never tried,
and which OOMs a later successful run contradicts.

Facts come from every data row of the benchmark CSVs (not only `SKIP:oom` rows, as the import
reads) and from the record and its archive. Rows are folded as they are read into one cell per
(model, machine class, length): thousands of files repeat a few hundred cells, and only the cells
are kept. Evidence must be true, so a contradiction only ever marks an OOM: oomrec never drops
one on that alone.
"""

from __future__ import annotations

import os
import signal
import stat
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from fnmatch import fnmatchcase
from functools import lru_cache
from itertools import count, repeat
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from oomrec.core import schema
from oomrec.core.gcpause import no_cycle_collection
from oomrec.core.hardware import GIB
from oomrec.core.machine import file_host
from oomrec.core.machine import row_machine as machine_of
from oomrec.core.records import (
    KIND_FAKE,
    MEM_JITTER,
    UNKNOWN_COMMIT,
    OomRecord,
    bounded_int,
    is_date,
)
from oomrec.core.schema import JSON_SCHEMA_VERSION as SCHEMA_VERSION
from oomrec.core.schema import RECORDED_TOKENS, Token
from oomrec.csvread import files as csvscan
from oomrec.csvread.files import find_csv_files
from oomrec.importer.backfill import DEFAULT_COMMIT_COLUMNS, LENGTH_COLUMNS
from oomrec.report import fastpath as report_bytes

if TYPE_CHECKING:
    import git

    from oomrec.core.records import Loaded, RecordFile
    from oomrec.staleness.verdict import History, Judgement
    from oomrec.store.archive import ArchivedLine
    from oomrec.store.locations import Settings


class Outcome(StrEnum):
    RAN = "ran"
    OOM = "oom"
    # An OOM measured before a fix that is in effect at HEAD: out of play, kept as evidence.
    LIFTED = "oom, fixed since"
    BACKSTOP = "backstop"
    RECORD = "record"
    TIMEOUT = "timeout"
    FAILED = "failed"
    SKIPPED = "skipped"
    NOT_TRIED = "not tried"


# One glyph per outcome, ASCII so a pipe or an old terminal shows it too; colour only adds.
GLYPHS: dict[Outcome, str] = {
    Outcome.RAN: "o",
    Outcome.OOM: "X",
    Outcome.LIFTED: "x",
    Outcome.BACKSTOP: "b",
    Outcome.RECORD: "r",
    Outcome.TIMEOUT: "t",
    Outcome.FAILED: "f",
    Outcome.SKIPPED: "s",
    Outcome.NOT_TRIED: ".",
}
LEGEND: dict[Outcome, str] = {
    Outcome.RAN: "ran",
    Outcome.OOM: "out of memory (CSV SKIP:oom or a record), in play",
    Outcome.LIFTED: "out of memory before a fix in effect at HEAD",
    Outcome.BACKSTOP: "skipped by the backstop",
    Outcome.RECORD: "skipped by the record",
    Outcome.TIMEOUT: "timed out",
    Outcome.FAILED: "failed (FAIL:*)",
    Outcome.SKIPPED: "skipped for another reason (SKIP:oom_estimate, ...)",
    Outcome.NOT_TRIED: "never tried",
}
CONTRADICTED_GLYPH = "!"


def outcome_of(token: str | None) -> Outcome:
    """A row's outcome from its trailing token (None: it ran)."""
    if token is None:
        return Outcome.RAN
    if token in RECORDED_TOKENS:
        return Outcome.OOM
    if token == Token.OOM_BACKSTOP:
        return Outcome.BACKSTOP
    if token == Token.OOM_RECORD:
        return Outcome.RECORD
    if token == Token.FAIL_TIMEOUT:
        return Outcome.TIMEOUT
    return Outcome.FAILED if token.startswith("FAIL:") else Outcome.SKIPPED


class Machine(NamedTuple):
    """A machine class: its hardware tag (None: untagged) and memory in GB when known. A named
    tuple: it keys every cell, and a tuple hashes in C."""

    tag: str | None
    mem_gb: int | None = None

    @property
    def id(self) -> str:
        name = self.tag or "any"
        return f"{name} {self.mem_gb}GB" if self.mem_gb is not None else name

    def covers(self, other: Machine) -> bool:
        """Whether evidence of this class speaks for `other`, by the rule a record applies by
        (records.applicability): the same tag or none, and `other` has no more memory (within
        MEM_JITTER); an unknown tag or memory is every one (when in doubt, an OOM applies)."""
        if self.tag is not None and self.tag != other.tag:
            return False
        return (
            self.mem_gb is None
            or other.mem_gb is None
            or other.mem_gb <= self.mem_gb * (1 + MEM_JITTER)
        )


def record_machine(record: OomRecord) -> Machine:
    """The machine class of a record. The one place that reads `mem_bytes`, which records
    carry only from a later format on."""
    mem_bytes = getattr(record, "mem_bytes", None)
    mem_gb = round(mem_bytes / GIB) if isinstance(mem_bytes, int) and mem_bytes > 0 else None
    return Machine(record.hardware, mem_gb)


@lru_cache(maxsize=1024)
def row_machine(hardware_value: str, host: str | None) -> Machine:
    """A CSV row's class as core.machine decides it for the import too: its `hardware` value
    (`NVIDIA_GB10_CUDA13.0_122GB` -> gb10, 122 GB), else the file name's host."""
    tag, mem = machine_of(hardware_value, host)
    return Machine(tag, round(mem / GIB) if mem else None)


@dataclass(frozen=True, slots=True)
class Seen:
    """Where a fact was seen: `path:line` of a CSV row or a record line, its date and commit."""

    where: str
    date: str | None
    commit: str

    def to_dict(self) -> dict[str, Any]:
        return {"where": self.where, "date": self.date, "commit": self.commit}


@dataclass(slots=True)
class CellRows:
    """Every row of one (model, machine class, length): per outcome, the first and the latest
    row by date (an OOM is shown "since" its first sighting, judged against its latest)."""

    first: dict[Outcome, Seen] = field(default_factory=dict)
    latest: dict[Outcome, Seen] = field(default_factory=dict)

    def add(self, outcome: Outcome, seen: Seen) -> None:
        old = self.latest.get(outcome)
        if old is None:
            self.first[outcome] = self.latest[outcome] = seen
            return
        date = seen.date or ""
        if date > (old.date or ""):
            self.latest[outcome] = seen
        if seen.date and date < (self.first[outcome].date or "9999"):
            self.first[outcome] = seen

    def latest_not_oom(self) -> Outcome | None:
        """The latest row's outcome among the rows that did not run out of memory (OOMs are
        shown from the evidence, judged)."""
        rest = [(seen.date or "", o) for o, seen in self.latest.items() if o != Outcome.OOM]
        return max(rest)[1] if rest else None


CellKey = tuple[str, Machine, int]


@dataclass
class Scan:
    """What the CSVs hold, folded into cells, and which files were read or skipped why."""

    cells: dict[CellKey, CellRows] = field(default_factory=dict)
    # (model, machine, date) -> the largest length that ran that day, and its row's commit.
    fits: dict[tuple[str, Machine, str], tuple[int, str]] = field(default_factory=dict)
    # Per machine class, the lengths runs aimed at (`prompt_target_len`): the grid's columns. A
    # measured `prompt_tokens` (20, 26, ...) is a fact about one row, not a length to try.
    targets: dict[Machine, set[int]] = field(default_factory=dict)
    files_read: int = 0
    files_skipped: dict[str, int] = field(default_factory=dict)
    rows: int = 0
    unreadable_rows: int = 0


# The cyclic collector off (the CLI turns it off around `gather`; here library callers and
# `to_json` get it too): the scan and the build make millions of acyclic tuples and dicts that a
# collection would walk again and again and not free (0.19-0.37 s of a 1.2-2.2 s scan and build of
# 1,000,000 rows in process, measured with bench_report.py's corpus).
@no_cycle_collection()
def scan_csvs(
    paths: Sequence[Path],
    root: Path,
    commit_columns: Sequence[str] = DEFAULT_COMMIT_COLUMNS,
    *,
    fast: bool = True,
    workers: int | None = None,
    meanwhile: Callable[[], object] | None = None,
    ooms_known: Callable[[set[str]], object] | None = None,
) -> Scan:
    """Every data row of every CSV under `paths` (files and folders, recursive `*.csv`), folded.

    Files are found and skipped as `record import-csv` does (not regular, no `model` column,
    empty, binary, header not UTF-8). Rows without a length (and that ran) say nothing here.
    A clean harness file is read from its bytes (report_bytes); `fast=False` parses every row of
    every file one by one, the reference that path is tested against. Many files are scanned by
    `workers` processes (default: one per CPU from PARALLEL_MIN_FILES files on, on Linux), each
    folding a run of consecutive files; the runs are merged in file order, so the Scan is the one
    a single process folds. `meanwhile()` is called once no process will be forked any more
    (the workers are running, or none will be), so it may start a thread to work beside the
    scan. `ooms_known(commits)` is called as soon as every row is folded, before the Scan is
    made: `commits` are those of the OOMs csv_evidence will find (each cell's latest OOM row's),
    for git to look up while the rest is made.
    """
    files, refused = find_csv_files(paths)
    scanner = _Scanner(Scan(), str(root.resolve()).rstrip("/") + "/", tuple(commit_columns))
    out = scanner.out
    for bad in refused:
        out.files_skipped[bad.skipped or ""] = out.files_skipped.get(bad.skipped or "", 0) + 1
    n = _default_workers(len(files)) if workers is None else max(1, min(workers, len(files)))
    if n <= 1:
        if meanwhile is not None:
            meanwhile()
        scanner.files(files, fast)
    else:
        _scan_in_parallel(scanner, files, fast, n, meanwhile)
    if ooms_known is not None:
        ooms_known(scanner.oom_commits())
    return scanner.finish()


# Below this many files one process scans (a run of fewer than half as many would not repay its
# worker: the break-even measured on 2 cores lies at 250-500 files).
PARALLEL_MIN_FILES = 500
_MAX_WORKERS = 8
# The run this process folds, against a worker's: a worker also forks, flushes and sends what it
# folded, so the runs end together when this one is longer (on 2 cores and bench_report.py's
# 10,000 files, this process's run at 54-58% of the files waits least for the worker).
_OWN_SHARE = 1.2


def _default_workers(n_files: int) -> int:
    # fork starts a worker in milliseconds with the modules already imported; spawn (macOS,
    # Windows) would import them again in each, a cost the scan of a few thousand files won't
    # repay.
    if n_files < PARALLEL_MIN_FILES or sys.platform != "linux":
        return 1
    return min(len(os.sched_getaffinity(0)), _MAX_WORKERS, 2 * n_files // PARALLEL_MIN_FILES)


def _scan_in_parallel(
    scanner: _Scanner,
    files: Sequence[str],
    fast: bool,
    n: int,
    meanwhile: Callable[[], object] | None,
) -> None:
    """`files` cut into `n` runs of consecutive files: the first (longer, see _OWN_SHARE)
    folded here, the others by forked workers while it is, each merged in turn after it."""
    import multiprocessing
    from concurrent.futures import Future, ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    first = round(len(files) * _OWN_SHARE / (_OWN_SHARE + n - 1))
    first = max(1, min(len(files) - (n - 1), first))
    rest = files[first:]
    step = -(-len(rest) // (n - 1))
    runs = [files[:first], *(rest[i : i + step] for i in range(0, len(rest), step))]
    context = multiprocessing.get_context("fork")
    pool = ProcessPoolExecutor(
        len(runs) - 1, mp_context=context, initializer=_die_with, initargs=(os.getpid(),)
    )
    try:
        parts: list[Future[_Part] | None] = []
        # SIGINT held back while forking: a worker takes it only once _die_with ignores it.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            for run in runs[1:]:
                try:
                    parts.append(
                        pool.submit(_scan_part, run, scanner.root, scanner.commit_columns, fast)
                    )
                except (OSError, BrokenProcessPool):
                    parts.append(None)  # no process to fork (EAGAIN, ENOMEM): folded here below
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        # With fork, the pool forked every worker at the first submit.
        if meanwhile is not None:
            meanwhile()
        scanner.files(runs[0], fast)
        scanner.flush()
        for run, part in zip(runs[1:], parts, strict=True):
            try:
                folded = part.result() if part is not None else None
            except BrokenProcessPool:
                # A worker died (the OOM killer, a kill -9): its run folded here is the same
                # part, so the report stays exact, only slower.
                folded = None
            if folded is None:
                folded = _scan_part(run, scanner.root, scanner.commit_columns, fast)
            scanner.merge(folded)
    except BaseException:
        # Interrupted (Ctrl-C) or failed: no waiting for the workers' runs. They ignore SIGINT
        # and die with the report's process (_die_with); for a caller that goes on, each ends
        # once its run is done.
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()


def _die_with(parent: int) -> None:
    """A scan worker's first step: end when the report's process ends, however it ends (SIGTERM's
    default, SIGKILL, the OOM killer). Left alone, a worker waits for work forever, holding the
    report's stdout open for whoever reads it (found by a hostile test: `kill` of a report
    mid-scan left its caller waiting). Ctrl-C, which signals the terminal's whole process
    group, is the report's to handle: a worker that took it printed a KeyboardInterrupt
    traceback, or sent it back to fail the scan."""
    # Pending since the fork (blocked there), a SIGINT is dropped once ignored.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if sys.platform == "linux":
        import ctypes

        # PR_SET_PDEATHSIG: this process gets SIGKILL when the thread that forked it ends.
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    if os.getppid() != parent:
        # The report ended before the line above took effect.
        os._exit(1)


class _Part(NamedTuple):
    """What a worker folded from its run of files, for `_Scanner.merge`: per cell (in the order
    cells were first seen) and outcome, the run's first row of that outcome, its earliest and its
    latest (each once, in that order); rows as (date, source path, line, commit)."""

    cells: list[tuple[CellKey, list[tuple[Outcome, tuple[_Row, ...]]]]]
    # The points, their lengths, their commits.
    fits: tuple[list[tuple[str, Machine, str]], list[int], list[str]]
    targets: dict[Machine, set[int]]
    files_read: int
    files_skipped: dict[str, int]
    rows: int
    unreadable_rows: int


def _scan_part(
    files: Sequence[str], root: str, commit_columns: tuple[str, ...], fast: bool
) -> _Part:
    """A worker's run of files, folded (in a worker process)."""
    scanner = _Scanner(Scan(), root, commit_columns, undated_first=_AFTER_EVERY_DATE)
    scanner.files(files, fast)
    return scanner.part()


# A row's commit: text, or its commit columns' raw field or fields (decoded if the row is kept).
_Commit = str | bytes | tuple[bytes, ...]
# A row as the fold keeps it: date, source (index or path), line number, commit (text or raw).
_Row = tuple[str | None, int | str, int, _Commit]
# An outcome's first row is its earliest unless a dated row is earlier; an undated row counts as
# this late, so a dated row of year 9999 does not displace it (as CellRows.add does).
_UNDATED_FIRST = "9999"
# A worker has no earlier rows to keep: it takes its run's earliest dated row, whatever the year,
# for the merge to judge against the rows before the run (its opening row goes along).
_AFTER_EVERY_DATE = "\uffff"
# A clean row's fields the fold reads but its date: model, hardware, prompt_tokens,
# prompt_target_len, tail.
_Key = tuple[bytes, ...]
# What a clean row's key says: its cell's rows per outcome, its outcome, its cell's key if it ran.
_Meaning = tuple[dict[Outcome, list[_Row]], Outcome, CellKey | None]
# Distinct rows held before they are folded: ~400 bytes each. Folding early is always exact (a
# row equal to one already folded changes nothing), it only folds some rows twice.
_PENDING_MAX = 100_000


class _Scanner:
    """Folds rows into a Scan in file and line order: a clean file's distinct rows through
    `pending` (each kept at its first occurrence, folded in that order by `flush`), any other
    file's rows one by one, after the pending ones.

    A row equal to an earlier one in every fact the fold reads (model, machine, length, outcome,
    date, aimed) changes nothing: each test the fold makes is strict, so the earlier row already
    won it. Hence only the first occurrence of each distinct row is folded."""

    def __init__(
        self,
        out: Scan,
        root: str,
        commit_columns: tuple[str, ...],
        undated_first: str = _UNDATED_FIRST,
    ) -> None:
        self.out = out
        self.root = root
        self.commit_columns = commit_columns
        # The date an undated first row of an outcome is taken to have: see _AFTER_EVERY_DATE.
        self.undated_first = undated_first
        # (prefix id, key, date field) -> (source id, line number, commit fields) of its first
        # row; the key is the row's other fields the fold reads (report_bytes.Layout.key).
        self.pending: dict[tuple[int, _Key, bytes], tuple[int, int, _Commit]] = {}
        # Per prefix id, what each key says (see _meaning), or None (no row to fold).
        self.meanings: list[dict[_Key, _Meaning | None]] = []
        self.sources: list[str] = []
        # A prefix is what a row's key means apart from its fields: (header width, file host).
        self.prefixes: dict[tuple[int, str | None], int] = {}
        self.prefix_list: list[tuple[int, str | None]] = []
        self.headers: dict[bytes, tuple[str, ...] | None] = {}
        self.layouts: dict[tuple[str, ...], report_bytes.Layout | None] = {}
        self.tails: dict[tuple[int, bytes], Outcome | None] = {}
        self.machines: dict[tuple[bytes, str | None], Machine] = {}
        self.days: dict[bytes, str | None] = {}
        self.lengths: dict[tuple[bytes, bytes], tuple[str, bool]] = {}
        # The fold's state: per cell and outcome [first, latest, opening] row (opening: the one
        # that made it, kept for `part`); per fit (length, commit).
        self.cells: dict[CellKey, dict[Outcome, list[_Row]]] = {}
        self.fits: dict[tuple[str, Machine, str], tuple[int, _Commit]] = {}

    def files(self, paths: Iterable[str], fast: bool) -> None:
        """Fold these files' rows, counting those read and those skipped, by why."""
        out = self.out
        for path in paths:
            problem = self.file(path, fast)
            if problem is None:
                out.files_read += 1
            else:
                out.files_skipped[problem] = out.files_skipped.get(problem, 0) + 1

    def file(self, path: str, fast: bool) -> str | None:
        """Fold one file's rows; why it was not read, or None."""
        data = _read(path)
        if isinstance(data, str):
            return data
        data = data.removeprefix(b"\xef\xbb\xbf")
        # As `not data.strip()` and `b"\0" in data[:8000]`, without copying the file twice.
        if not data or data.isspace():
            return csvscan.EMPTY
        if data.find(b"\0", 0, 8000) >= 0:
            return csvscan.BINARY
        source = path[len(self.root) :] if path.startswith(self.root) else path
        if fast:
            done = self._clean_file(data, source, file_host(path))
            if done is not False:
                return done
            self.flush()
        return self._any_file(data, source, file_host(path))

    def _clean_file(self, data: bytes, source: str, host: str | None) -> str | bool | None:
        """A clean file's rows into `pending`: why the file was not read, None, or False when it
        is not clean (nothing is folded then)."""
        split = report_bytes.clean_lines(data)
        if split is None:
            return False
        head, body = split
        if head not in self.headers:
            text = head.decode("utf-8", errors="replace")
            # A first line the reference would pass over (blank, a comment) or not read as a
            # header (not UTF-8): the reference decides.
            clean = text.strip() and not text.startswith("#") and "\ufffd" not in text
            self.headers[head] = (
                tuple(name.strip() for name in schema.split_row(text)) if clean else None
            )
        header = self.headers[head]
        if header is None:
            return False
        if csvscan.MODEL_COLUMN not in header:
            return csvscan.NO_MODEL
        if header not in self.layouts:
            self.layouts[header] = report_bytes.layout(header, self.commit_columns)
        lay = self.layouts[header]
        if lay is None:
            return False
        found = report_bytes.rows(body, lay)
        if found is None:
            return False
        out = self.out
        out.rows += len(found)
        width = lay.width
        for tail in filter(None, map(lay.tail, found)):
            if self._tail(width, tail) is None:
                out.unreadable_rows += 1
        prefix = self.prefixes.get((width, host))
        if prefix is None:
            prefix = self.prefixes[(width, host)] = len(self.prefix_list)
            self.prefix_list.append((width, host))
            self.meanings.append({})
        self.sources.append(source)
        commits = map(lay.commits, found) if lay.commits is not None else repeat(())
        # In C, one step per row: first occurrences kept, in order.
        deque(
            map(
                self.pending.setdefault,
                zip(repeat(prefix), map(lay.key, found), map(lay.date, found)),
                zip(repeat(len(self.sources) - 1), count(2), commits),
            ),
            0,
        )
        if len(self.pending) > _PENDING_MAX:
            self.flush()
        return None

    def flush(self) -> None:
        """Fold the pending rows, in the order of their first occurrence. What a key says is
        read once (`meanings`); the loop per row is _fold inlined, the one Python code that
        runs per distinct row."""
        fits = self.fits
        days = self.days
        undated_first = self.undated_first
        meanings_of = self.meanings
        for (prefix, key, date_b), (source, lineno, commit) in self.pending.items():
            meaning = meanings_of[prefix].get(key, False)
            if meaning is False:
                meaning = meanings_of[prefix][key] = self._meaning(prefix, key)
            if meaning is None:
                continue
            cell, outcome, fit = meaning
            date = days.get(date_b, "")
            if date == "":
                date = days[date_b] = _day(date_b.decode("utf-8", errors="replace"))
            # _fold, inlined.
            pair = cell.get(outcome)
            if pair is None:
                row = (date, source, lineno, commit)
                cell[outcome] = [row, row, row]
            elif date is not None:
                if date > (pair[1][0] or ""):
                    pair[1] = (date, source, lineno, commit)
                if date < (pair[0][0] or undated_first):
                    pair[0] = (date, source, lineno, commit)
            if fit is not None and date is not None:
                point = (fit[0], fit[1], date)
                best = fits.get(point)
                if best is None or best[0] < fit[2]:
                    fits[point] = (fit[2], commit)
        self.pending.clear()

    def _meaning(self, prefix: int, key: _Key) -> _Meaning | None:
        """What a clean row's key says: its cell's outcomes (made here: its first row is folded
        next), its outcome, and its cell's key when it ran (a fit); None when the reference
        folds no such row (no length, no model, not a row of its header). Notes the target it
        names."""
        model_b, hardware_b, tokens_b, target_b, tail = key
        width, host = self.prefix_list[prefix]
        if tail:
            outcome = self._tail(width, tail)
            if outcome is None:
                return None
        else:
            outcome = Outcome.RAN
        length_text, aimed = self._length(target_b, tokens_b)
        if (parsed := bounded_int(length_text)) is not None:
            length = parsed
        elif not length_text and outcome is Outcome.OOM:
            length = 0
        else:
            return None
        model = model_b.decode("utf-8", errors="replace").strip()
        if not model:
            return None
        machine = self.machines.get((hardware_b, host))
        if machine is None:
            hardware = hardware_b.decode("utf-8", errors="replace").strip()
            machine = self.machines[(hardware_b, host)] = row_machine(hardware, host)
        if aimed:
            # Per key, not per row: the targets are a set.
            self.out.targets.setdefault(machine, set()).add(length)
        cell_key = (model, machine, length)
        cell = self.cells.get(cell_key)
        if cell is None:
            cell = self.cells[cell_key] = {}
        return cell, outcome, cell_key if outcome is Outcome.RAN else None

    def _tail(self, width: int, tail: bytes) -> Outcome | None:
        """The outcome of a row with fields after its header's columns (`tail`, from its first
        comma), read as the reference reads it; None: not a row of the header."""
        known = self.tails.get((width, tail), False)
        if known is not False:
            return known
        extra = tail.decode("utf-8", errors="replace").split(",")[1:]
        fields = width + len(extra)
        last = extra[-1]
        token = schema.trailing_token([last]) if last.lstrip().startswith(_TOKENS) else None
        if token is not None:
            fields -= 1
            if fields == width + 1 and not extra[-2].strip():
                fields -= 1
        outcome = outcome_of(token) if fields == width and token is not None else None
        self.tails[(width, tail)] = outcome
        return outcome

    def _length(self, target: bytes, tokens: bytes) -> tuple[str, bool]:
        """The length text a row is read at (`prompt_target_len`, else `prompt_tokens`) and
        whether it names a target."""
        known = self.lengths.get((target, tokens))
        if known is None:
            aimed = target.decode("utf-8", errors="replace").strip()
            text = aimed or tokens.decode("utf-8", errors="replace").strip()
            known = self.lengths[(target, tokens)] = (text, bool(aimed))
        return known

    def _fold(
        self,
        model: str,
        machine: Machine,
        length: int,
        outcome: Outcome,
        date: str | None,
        source: int | str,
        lineno: int,
        commit: _Commit,
    ) -> None:
        """One row into its cell and the fits, as CellRows.add would take it. `source` is a
        `sources` index or a path; a commit is text, or the raw commit fields. Rows are kept as
        tuples, made Seens only by `finish` for the rows that remain (most are replaced)."""
        key = (model, machine, length)
        cell = self.cells.get(key)
        if cell is None:
            cell = self.cells[key] = {}
        pair = cell.get(outcome)
        if pair is None:
            row = (date, source, lineno, commit)
            cell[outcome] = [row, row, row]
        elif date is not None:
            if date > (pair[1][0] or ""):
                pair[1] = (date, source, lineno, commit)
            if date < (pair[0][0] or self.undated_first):
                pair[0] = (date, source, lineno, commit)
        if outcome is Outcome.RAN and date is not None:
            point = (model, machine, date)
            best = self.fits.get(point)
            if best is None or best[0] < length:
                self.fits[point] = (length, commit)

    def oom_commits(self) -> set[str]:
        """The commit of each cell's latest OOM row (the Seen csv_evidence judges), once every
        row is folded."""
        self.flush()
        oom = Outcome.OOM
        return {_commit(rows[oom][1][3]) for rows in self.cells.values() if oom in rows}

    def finish(self) -> Scan:
        """The Scan, once every row is folded."""
        self.flush()
        sources = self.sources

        def made(row: _Row) -> Seen:
            date, source, lineno, commit = row
            where = f"{sources[source] if type(source) is int else source}:{lineno}"
            return Seen(where, date, commit if type(commit) is str else _commit(commit))

        out = self.out
        cells = out.cells
        for key, pairs in self.cells.items():
            first: dict[Outcome, Seen] = {}
            latest: dict[Outcome, Seen] = {}
            for outcome, (row, last, _) in pairs.items():
                # A row first and latest at once is one Seen, as CellRows.add makes it; a row
                # is kept for one cell and outcome only.
                first[outcome] = known = made(row)
                latest[outcome] = known if last is row else made(last)
            cells[key] = CellRows(first, latest)
        # The fits dict itself becomes the Scan's, each raw commit decoded in place.
        fits = self.fits
        for point, (n, commit) in fits.items():
            if type(commit) is not str:
                fits[point] = (n, _commit(commit))
        out.fits = fits
        return out

    def part(self) -> _Part:
        """What this scanner folded, for another to merge after its own rows (see _Part)."""
        self.flush()
        sources = self.sources

        def plain(row: _Row) -> _Row:
            date, source, lineno, commit = row
            return (
                date,
                sources[source] if isinstance(source, int) else source,
                lineno,
                _commit(commit),
            )

        cells = []
        for key, pairs in self.cells.items():
            outcomes = []
            for outcome, (first, latest, opening) in pairs.items():
                rows = [opening]
                if first is not opening:
                    rows.append(first)
                if latest is not opening and latest is not first:
                    rows.append(latest)
                outcomes.append((outcome, tuple(map(plain, rows))))
            cells.append((key, outcomes))
        fits = self.fits.values()
        # Three flat lists, not a pair per point: fewer objects to pickle and unpickle.
        fit_lists = (list(self.fits), [n for n, _ in fits], _commits(c for _, c in fits))
        out = self.out
        return _Part(
            cells,
            fit_lists,
            out.targets,
            out.files_read,
            out.files_skipped,
            out.rows,
            out.unreadable_rows,
        )

    def merge(self, part: _Part) -> None:
        """Fold a run of files that follows every row folded so far, from its `part`.

        Folding only some rows of the run, in their order, folds what the whole run does when
        they include, per cell and outcome, its first row (which makes the cell's entry when it
        is new), its latest and its earliest: each is the first of its kind in the run, so no
        row left out could have won a strict test the ones kept lose. The fits go first: a kept
        row that ran then ties the run's best fit, which it does not follow, and changes nothing.
        """
        for point, n, commit in zip(*part.fits, strict=True):
            best = self.fits.get(point)
            if best is None or best[0] < n:
                self.fits[point] = (n, commit)
        for (model, machine, length), outcomes in part.cells:
            for outcome, rows in outcomes:
                for date, source, lineno, commit in rows:
                    self._fold(model, machine, length, outcome, date, source, lineno, commit)
        out = self.out
        for machine, lengths in part.targets.items():
            out.targets.setdefault(machine, set()).update(lengths)
        out.files_read += part.files_read
        for why, n in part.files_skipped.items():
            out.files_skipped[why] = out.files_skipped.get(why, 0) + n
        out.rows += part.rows
        out.unreadable_rows += part.unreadable_rows

    def _any_file(self, data: bytes, source: str, host: str | None) -> str | None:
        """Every row of any file, parsed one by one: the reference."""
        lines = data.decode("utf-8", errors="replace").splitlines()
        start = 0
        while start < len(lines) and (not lines[start].strip() or lines[start].startswith("#")):
            start += 1
        if start == len(lines):
            return csvscan.EMPTY
        if "\ufffd" in lines[start]:
            return csvscan.NOT_UTF8
        header = tuple(name.strip() for name in schema.split_row(lines[start]))
        if csvscan.MODEL_COLUMN not in header:
            return csvscan.NO_MODEL
        self._fold_rows(lines, start, header, source, host)
        return None

    def _fold_rows(
        self, lines: list[str], start: int, header: tuple[str, ...], source: str, host: str | None
    ) -> None:
        index: dict[str, int] = {}
        for i, name in enumerate(header):
            index.setdefault(name, i)
        model_at = index[csvscan.MODEL_COLUMN]
        length_at = [index[n] for n in LENGTH_COLUMNS if n in index]
        target_at = index.get(LENGTH_COLUMNS[0])
        date_at = index.get("date")
        hw_at = index.get("hardware")
        commit_at = [index[n] for n in self.commit_columns if n in index]
        prompt_at = index.get("prompt")
        split = splitter(header)
        width = len(header)
        out = self.out
        aimed: set[tuple[Machine, int]] = set()
        machines: dict[str, Machine] = {}
        dates: dict[str, str | None] = {}
        ran, oom = Outcome.RAN, Outcome.OOM
        # Each line is a row (the harness never breaks a line inside a quoted field), so a line
        # number is the row's own even when a line is not what its header says.
        for lineno in range(start + 2, len(lines) + 1):
            line = lines[lineno - 1]
            if not line or line.isspace():
                continue
            out.rows += 1
            fields = split(line)
            # The token is read from the end, as the harness reads it; a row may carry it, and
            # an empty field before it, beyond the header's columns.
            token = None
            if fields[-1].lstrip().startswith(_TOKENS):
                token = schema.trailing_token(fields)
            if token is not None and len(fields) > width:
                fields = fields[:-1]
                if len(fields) == width + 1 and not fields[-1].strip():
                    fields = fields[:-1]
            if len(fields) != width:
                out.unreadable_rows += 1
                continue
            model = fields[model_at].strip()
            outcome = ran if token is None else outcome_of(token)
            if outcome is oom and prompt_at is not None and schema.is_faked(fields[prompt_at]):
                # MLXCEL_BENCH_FAKE_OOM / sweep --fake-oom: a cell never launched, no evidence.
                continue
            length_text = ""
            for i in length_at:
                length_text = fields[i].strip()
                if length_text:
                    break
            if (parsed := bounded_int(length_text)) is not None:
                length = parsed
            elif not length_text and outcome is oom:
                # No length at all: as the import does, an OOM then stands at the shortest
                # prompt.
                length = 0
            else:
                continue
            if not model:
                continue
            hardware = fields[hw_at] if hw_at is not None else ""
            machine = machines.get(hardware)
            if machine is None:
                machine = machines[hardware] = row_machine(hardware.strip(), host)
            day = fields[date_at] if date_at is not None else ""
            date = dates.get(day, "")
            if date == "":
                date = dates[day] = _day(day)
            commit = UNKNOWN_COMMIT
            for i in commit_at:
                if fields[i].strip():
                    commit = fields[i].strip()
                    break
            if target_at is not None and fields[target_at].strip():
                aimed.add((machine, length))
            self._fold(model, machine, length, outcome, date, source, lineno, commit)
        for machine, length in aimed:
            out.targets.setdefault(machine, set()).add(length)


_TOKENS = ("SKIP:", "FAIL:")


def _commit(commit: _Commit) -> str:
    """A row's commit: the first commit column with a value (`commit` as text already, or those
    columns' raw field or fields)."""
    if isinstance(commit, str):
        return commit
    for raw in (commit,) if isinstance(commit, bytes) else commit:
        text = raw.decode("utf-8", errors="replace").strip()
        if text:
            return text
    return UNKNOWN_COMMIT


def _commits(commits: Iterable[_Commit]) -> list[str]:
    """_commit of each, a single field decoded inline: tens of thousands of fit points each
    need one, and a call per point would cost more than the decoding."""
    return [
        commit
        if type(commit) is str
        else (commit.decode("utf-8", errors="replace").strip() or UNKNOWN_COMMIT)
        if type(commit) is bytes
        else _commit(commit)
        for commit in commits
    ]


def _read(path: str) -> bytes | str:
    """A file's bytes (one read), or why it cannot be read. As the import reads: opened without
    blocking and checked to be a regular file, so a FIFO cannot hang the report."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return csvscan.UNREADABLE
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return csvscan.NOT_A_FILE
        if info.st_size > csvscan.MAX_FILE_BYTES:
            return csvscan.TOO_LARGE
        chunks = []
        left = info.st_size
        while left > 0 and (chunk := os.read(fd, left)):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return csvscan.UNREADABLE
    finally:
        os.close(fd)


def _day(text: str) -> str | None:
    """The YYYY-MM-DD a date cell starts with, else None."""
    day = text.strip()[:10]
    # records.is_date: a real day (no 2026-02-30), as the import reads it.
    return day if is_date(day) else None


def splitter(header: tuple[str, ...]) -> Callable[[str], list[str]]:
    """How to split a row of this header into its fields, exactly as the csv module does.

    str.split is several times faster than a csv reader; it is used for the rows it reads the
    same way: no quote at all, or (with a `prompt` column) a prompt wholly quoted with no quote
    inside and no quote elsewhere. Any other row goes to the csv module.
    """
    if "prompt" not in header:
        return lambda line: line.split(",") if '"' not in line else schema.split_row(line)
    before = header.index("prompt")

    def split(line: str) -> list[str]:
        if '"' not in line:
            return line.split(",")
        head = line.split(",", before)
        if len(head) <= before:
            return schema.split_row(line)
        rest = head.pop()
        end = rest.find('"', 1)
        if (
            not rest.startswith('"')
            or end < 0
            or (end + 1 < len(rest) and rest[end + 1] != ",")
            or '"' in rest[end + 1 :]
            or '"' in line[: len(line) - len(rest)]
        ):
            return schema.split_row(line)
        head.append(rest[1:end])
        if end + 1 < len(rest):
            head.extend(rest[end + 2 :].split(","))
        return head

    return split


@dataclass(frozen=True, slots=True)
class Evidence:
    """One OOM: a CSV `SKIP:oom` row or a record line (live or archived)."""

    model: str
    length: int
    machine: Machine
    # The latest sighting (what a later run must beat) and the first (what "since" names).
    seen: Seen
    since: Seen
    kind: str  # "csv", "record" or "archive"
    record: OomRecord

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "length": self.length,
            "machine": self.machine.id,
            "kind": self.kind,
            **self.seen.to_dict(),
            "since": self.since.to_dict(),
        }


def csv_evidence(scan: Scan) -> list[Evidence]:
    """The OOM rows of the CSVs, as records, so the one rule judges them like the record's."""
    out = []
    for (model, machine, length), cell in scan.cells.items():
        seen = cell.latest.get(Outcome.OOM)
        if seen is None:
            continue
        record = OomRecord(
            model,
            length,
            seen.date or "",
            seen.commit,
            None,
            seen.where.rsplit(":", 1)[0],
            machine.tag,
        )
        out.append(Evidence(model, length, machine, seen, cell.first[Outcome.OOM], "csv", record))
    return out


def record_evidence(records: Iterable[tuple[OomRecord, str, str]]) -> list[Evidence]:
    """Records as evidence: (record, where it is as `path:line`, "record" or "archive"); an
    OOM faked with --fake-oom (kind `fake`) is none."""
    out = []
    for r, where, kind in records:
        if r.kind == KIND_FAKE:
            continue
        seen = Seen(where, r.date or None, r.commit)
        out.append(Evidence(r.model, r.prompt_target_len, record_machine(r), seen, seen, kind, r))
    return out


@dataclass(frozen=True, slots=True)
class Contradiction:
    """An OOM and the later CSV row where the same model ran at that length or more."""

    evidence: Evidence
    machine: Machine
    length: int
    seen: Seen

    def to_dict(self) -> dict[str, Any]:
        return {
            "oom": self.evidence.to_dict(),
            "ran": {
                "length": self.length,
                "machine": self.machine.id,
                **self.seen.to_dict(),
            },
        }


def contradictions(evidence: Iterable[Evidence], scan: Scan) -> list[Contradiction]:
    """Each OOM that a strictly later (by date) successful row of the same model, at its length or
    more, on its machine (the same tag, and a memory not known to differ) contradicts, with that
    row (the latest such). An untagged OOM is never contradicted: a run on one machine says
    nothing about another. Evidence to act on: nothing is dropped."""
    runs: dict[str, list[tuple[Machine, int, Seen]]] = {}
    for (model, machine, length), cell in scan.cells.items():
        seen = cell.latest.get(Outcome.RAN)
        if seen is not None and seen.date is not None:
            runs.setdefault(model, []).append((machine, length, seen))
    out = []
    for ev in evidence:
        if not ev.seen.date:
            continue
        later = [
            (seen.date or "", length, seen, machine)
            for machine, length, seen in runs.get(ev.model, ())
            if length >= ev.length
            and (seen.date or "") > ev.seen.date
            and ev.machine.tag is not None
            and ev.machine.covers(machine)
        ]
        if later:
            _, length, seen, machine = max(later, key=lambda t: (t[0], t[1]))
            out.append(Contradiction(ev, machine, length, seen))
    return out


@dataclass(frozen=True, slots=True)
class Judged:
    """An OOM with its judgement at HEAD: `fix` is the fix that took it out of play, if any."""

    evidence: Evidence
    applies: bool
    fix: str | None
    status: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.evidence.to_dict(), "status": self.status, "fix": self.fix}


@dataclass(frozen=True, slots=True)
class FixMarker:
    sha: str
    date: str
    subject: str
    globs: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "sha": self.sha,
            "date": self.date,
            "subject": self.subject,
            "globs": list(self.globs),
        }


@dataclass(frozen=True, slots=True)
class Frontier:
    """One model on one machine class."""

    model: str
    machine: Machine
    ran_max: tuple[int, Seen] | None
    oom_min: Judged | None
    lifted_min: Judged | None
    never_tried: tuple[int, ...]
    contradicted: bool

    def to_dict(self) -> dict[str, Any]:
        ran = None
        if self.ran_max is not None:
            ran = {"length": self.ran_max[0], **self.ran_max[1].to_dict()}
        return {
            "model": self.model,
            "machine": self.machine.id,
            "ran_max": ran,
            "oom_min": self.oom_min.to_dict() if self.oom_min else None,
            "lifted_oom_min": self.lifted_min.to_dict() if self.lifted_min else None,
            "never_tried": list(self.never_tried),
            "contradicted": self.contradicted,
        }


@dataclass
class Report:
    """The whole picture; `to_json()` is the one documented shape (see SCHEMA_VERSION)."""

    head: str | None
    machines: list[Machine]
    models: list[str]
    lengths: dict[Machine, list[int]]
    frontier: dict[tuple[str, Machine], Frontier]
    grid: dict[CellKey, tuple[Outcome, bool]]
    ooms: list[Judged]
    contradictions: list[Contradiction]
    timeline: dict[tuple[str, Machine], list[tuple[str, str, int]]]
    fixes: list[FixMarker]
    files_read: int
    files_skipped: dict[str, int]
    rows: int

    def machine(self, tag: str) -> Machine | None:
        """The class a `--machine` value names: its id (`gb10 122GB`) or its tag when unique."""
        for m in self.machines:
            if m.id == tag:
                return m
        tagged = [m for m in self.machines if m.tag == tag]
        return tagged[0] if len(tagged) == 1 else None

    def fixes_for(self, model: str) -> list[FixMarker]:
        """The fix commits whose globs match `model`."""
        return [f for f in self.fixes if any(fnmatchcase(model, g) for g in f.globs)]

    @no_cycle_collection()
    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "head": self.head,
            "files": {"read": self.files_read, "skipped": self.files_skipped, "rows": self.rows},
            "machines": [
                {"id": m.id, "hardware": m.tag, "mem_gb": m.mem_gb, "lengths": self.lengths[m]}
                for m in self.machines
            ],
            "models": self.models,
            "frontier": [f.to_dict() for f in self.frontier.values()],
            "cells": [
                {
                    "model": model,
                    "machine": machine.id,
                    "length": length,
                    "outcome": outcome.value,
                    "contradicted": flagged,
                }
                for (model, machine, length), (outcome, flagged) in self.grid.items()
            ],
            "ooms": [j.to_dict() for j in self.ooms],
            "contradictions": [c.to_dict() for c in self.contradictions],
            "timeline": [
                {
                    "model": model,
                    "machine": machine.id,
                    "points": [{"date": d, "commit": c, "length": n} for d, c, n in points],
                }
                for (model, machine), points in self.timeline.items()
            ],
            "fixes": [f.to_dict() for f in self.fixes],
        }


@no_cycle_collection()
def build(
    scan: Scan,
    records: Sequence[Evidence],
    judge: Callable[[list[OomRecord]], Sequence[Judgement]] | None = None,
    fixes: Sequence[FixMarker] = (),
    head: str | None = None,
) -> Report:
    """The report from the folded CSVs and the record's evidence. `judge(records)` returns a
    `stale.Judgement` per record (None: every OOM applies); it runs in a thread while what does
    not need it is built (a judge mostly waits for git: ~0.15 s over 3,000 OOMs)."""
    # An OOM row a record was made from is that record's evidence, not a second OOM: a sweep
    # writes both, and import-csv makes one from the other.
    held = {(e.model, e.length, e.record.source_csv) for e in records}
    rows = [e for e in csv_evidence(scan) if (e.model, e.length, e.record.source_csv) not in held]
    evidence = rows + list(records)
    if judge is None:
        return _build(scan, evidence, [None] * len(evidence), fixes, head)
    from concurrent.futures import ThreadPoolExecutor

    with threads_wait_less(), ThreadPoolExecutor(1) as pool:
        judging = pool.submit(judge, [e.record for e in evidence])
        return _build(scan, evidence, judging.result, fixes, head)


@contextmanager
def threads_wait_less() -> Iterator[None]:
    """Python's thread switch interval at 0.5 ms inside, restored after. A thread that asks git
    needs the GIL back after each of its many short waits (spawning, each read), and a busy
    thread holds it up to the interval each time (5 ms by default): at 5 ms, reading the
    history beside the scan's last steps took 0.22 s, not 0.13 s, and the build over 3,000
    OOMs 0.21 s, not 0.165 s (bench_report.py)."""
    global _short_switch_users, _switch_before
    # The interval is the process's: with callers in several threads, the first in sets it and
    # the last out restores it (each restoring what it found left the short one behind).
    with _switch_lock:
        if _short_switch_users == 0:
            _switch_before = sys.getswitchinterval()
            sys.setswitchinterval(min(_switch_before, 0.0005))
        _short_switch_users += 1
    try:
        yield
    finally:
        with _switch_lock:
            _short_switch_users -= 1
            if _short_switch_users == 0:
                sys.setswitchinterval(_switch_before)


_switch_lock = threading.Lock()
_short_switch_users = 0
_switch_before = 0.005


def _build(
    scan: Scan,
    evidence: list[Evidence],
    judgements: Sequence[Judgement | None] | Callable[[], Sequence[Judgement]],
    fixes: Sequence[FixMarker],
    head: str | None,
) -> Report:
    """build's work; `judgements` called (to wait for them) once nothing else can be built."""
    contra = contradictions(evidence, scan)
    contradicted = {id(c.evidence) for c in contra}

    machines = sorted({m for (_, m, _) in scan.cells}, key=_machine_order)
    for e in evidence:
        if not any(e.machine.covers(m) for m in machines):
            machines.append(e.machine)
    machines.sort(key=_machine_order)
    lengths: dict[Machine, set[int]] = {m: set() for m in machines}
    grid: dict[CellKey, tuple[Outcome, bool]] = {}
    ran: dict[tuple[str, Machine], tuple[int, Seen]] = {}
    for _, machine, length in scan.cells:
        # A class whose files name no target length is shown at the lengths its rows have.
        if machine not in scan.targets:
            lengths[machine].add(length)
    for machine, aimed in scan.targets.items():
        lengths[machine] |= aimed
    for (model, machine, length), cell in scan.cells.items():
        shown = cell.latest_not_oom()
        if shown is not None:
            grid[(model, machine, length)] = (shown, False)
        seen = cell.latest.get(Outcome.RAN)
        best = ran.get((model, machine))
        if seen is not None and (best is None or best[0] < length):
            ran[(model, machine)] = (length, seen)
    timeline: dict[tuple[str, Machine], list[tuple[str, str, int]]] = {}
    for (model, machine, date), (n, commit) in scan.fits.items():
        points = timeline.get((model, machine))
        if points is None:
            points = timeline[(model, machine)] = []
        points.append((date, commit, n))
    # A series holds one point per date: sorting each by date is sorting all by date, without
    # a Python key call per point (67,000 over bench_report.py's corpus).
    for points in timeline.values():
        points.sort(key=itemgetter(0))
    if callable(judgements):
        judgements = judgements()
    judged = [_judged(e, j) for e, j in zip(evidence, judgements, strict=True)]
    by_class: dict[tuple[str, Machine], list[Judged]] = {}
    for j in judged:
        ev = j.evidence
        flagged = id(ev) in contradicted
        for m in machines:
            if not ev.machine.covers(m):
                continue
            by_class.setdefault((ev.model, m), []).append(j)
            lengths[m].add(ev.length)
            key = (ev.model, m, ev.length)
            # An OOM in play shows over every other outcome of its cell: hiding one is the
            # worse error. One a fix took out of play shows unless a row says more.
            shown, was_flagged = grid.get(key, (None, False))
            if j.applies:
                grid[key] = (Outcome.OOM, flagged or was_flagged)
            elif shown is None or shown == Outcome.LIFTED:
                grid[key] = (Outcome.LIFTED, flagged or was_flagged)
    rank = {m: i for i, m in enumerate(machines)}
    grid = dict(sorted(grid.items(), key=lambda kv: (kv[0][0], rank[kv[0][1]], kv[0][2])))
    tried: dict[tuple[str, Machine], set[int]] = {}
    for model, machine, length in grid:
        tried.setdefault((model, machine), set()).add(length)
    frontier = {}
    for (model, m), done in tried.items():
        ooms = by_class.get((model, m), [])
        oom_min, lifted_min = _oom_mins(ooms)
        frontier[(model, m)] = Frontier(
            model=model,
            machine=m,
            ran_max=ran.get((model, m)),
            oom_min=oom_min,
            lifted_min=lifted_min,
            never_tried=tuple(sorted(lengths[m] - done)),
            contradicted=any(id(j.evidence) in contradicted for j in ooms),
        )
    return Report(
        head=head,
        machines=machines,
        models=sorted({model for (model, _, _) in grid}),
        lengths={m: sorted(v) for m, v in lengths.items()},
        frontier=frontier,
        grid=grid,
        ooms=sorted(
            judged, key=lambda j: (j.evidence.model, j.evidence.length, j.evidence.seen.where)
        ),
        contradictions=contra,
        timeline=dict(
            sorted(timeline.items(), key=lambda kv: (kv[0][0], _machine_order(kv[0][1])))
        ),
        fixes=list(fixes),
        files_read=scan.files_read,
        files_skipped=scan.files_skipped,
        rows=scan.rows,
    )


def _machine_order(m: Machine) -> tuple[str, int]:
    return (m.tag or "~", m.mem_gb or 0)


def _judged(e: Evidence, j: Judgement | None) -> Judged:
    if j is None:
        return Judged(e, True, None, "applies")
    fix = j.fixes[0].sha if not j.applies and j.fixes else None
    return Judged(e, j.applies, fix, str(j.status))


def _oom_mins(ooms: list[Judged]) -> tuple[Judged | None, Judged | None]:
    """The smallest OOM in play, and the smallest a fix took out of play when it is smaller."""
    oom_min = min((j for j in ooms if j.applies), key=_oom_order, default=None)
    lifted_min = min((j for j in ooms if not j.applies), key=_oom_order, default=None)
    if oom_min and lifted_min and lifted_min.evidence.length >= oom_min.evidence.length:
        lifted_min = None
    return oom_min, lifted_min


def _oom_order(j: Judged) -> tuple[int, str]:
    # The smallest length, then the earliest sighting: "since" names when it was first seen.
    return (j.evidence.length, j.evidence.since.date or "9999")


def gather(
    paths: Sequence[Path],
    record_file: RecordFile,
    loaded: Loaded,
    settings: Settings,
    parked: Sequence[ArchivedLine] | None = None,
) -> Report:
    """The report over the CSVs under `paths` and the record (live and archived: `parked`,
    read here when None), every OOM judged at HEAD by the one rule, with the fix commits in
    HEAD's history as markers."""
    from concurrent.futures import Future, ThreadPoolExecutor

    from oomrec.importer.backfill import commit_columns
    from oomrec.staleness.fixlog import trailer_key
    from oomrec.staleness.verdict import History, judge_all, repo_with_head

    key = trailer_key(settings)
    kept = record_lines(record_file, loaded, parked)
    # Git's part, beside the scan, in one thread and in this order: GitPython imported and the
    # repository opened while rows are read; the history read, for the commits of the record's
    # lines and of the CSVs' OOMs, while the scan's results are made.
    with threads_wait_less(), ThreadPoolExecutor(1) as pool:
        opening: list[Future[git.Repo | None]] = []
        reading: list[Future[History | None]] = []

        def read_history(commits: set[str]) -> History | None:
            repo = opening[0].result()
            return None if repo is None else History(repo, key, commits)

        def ooms_known(commits: set[str]) -> None:
            asked = commits | {e.record.commit for e in kept}
            reading.append(pool.submit(read_history, asked))

        scan = scan_csvs(
            paths,
            settings.base,
            commit_columns(settings),
            meanwhile=lambda: opening.append(pool.submit(repo_with_head)),
            ooms_known=ooms_known,
        )
        histories: list[History | None] = []

        def judge(records: list[OomRecord]) -> Sequence[Judgement]:
            # The commits asked about are these records' (the property tests of scan_csvs hold
            # ooms_known to csv_evidence); one it was not asked about would judge as unknown.
            history = reading[0].result()
            histories.append(history)
            return judge_all(history, records)

        report = build(scan, kept, judge)
    history = histories[0] if histories else None
    if history is not None:
        report.head = history.sha_at()
        report.fixes = fix_markers(history)
    return report


def fix_markers(history: History) -> list[FixMarker]:
    """The fix commits in the history, oldest first, dated by their commit date (one git call)."""
    fixes = {sha: e for sha, e in history.events.items() if e.globs}
    if not fixes:
        return []
    out = history.repo.git.show("-s", "--format=%H %cs", *fixes)
    dates = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    markers = [
        FixMarker(sha, dates.get(sha, ""), fixes[sha].subject, fixes[sha].globs) for sha in fixes
    ]
    return sorted(markers, key=lambda f: (f.date, f.sha))


def record_contradictions(
    record_file: RecordFile, loaded: Loaded, settings: Settings, paths: Sequence[Path] = ()
) -> list[Contradiction]:
    """The record's lines (live and archived) that a later CSV row contradicts, with that row,
    for `record stale`: the CSVs under `paths`, default `benchmarks/` (none without one)."""
    from oomrec.importer.backfill import DEFAULT_FOLDER, commit_columns

    if not paths:
        folder = settings.base / DEFAULT_FOLDER
        if not folder.is_dir():
            return []
        paths = [folder]
    kept = record_lines(record_file, loaded)
    if not kept:
        return []
    return contradictions(kept, scan_csvs(paths, settings.base, commit_columns(settings)))


def record_lines(
    record_file: RecordFile, loaded: Loaded, parked: Sequence[ArchivedLine] | None = None
) -> list[Evidence]:
    """The record's lines and its archive's (`parked`, read here when None) as evidence, each
    named `path:line`."""
    from oomrec.store import archive

    store = archive.archive_file(record_file)
    kept = [
        (line.record, f"{record_file.shown_as}:{line.lineno}", "record")
        for line in loaded.lines
        if line.record is not None
    ]
    kept += [
        (a.record, f"{store.shown_as}:{a.lineno}", "archive")
        for a in (archive.load(record_file, loaded) if parked is None else parked)
        if a.record is not None
    ]
    return record_evidence(kept)
