"""Finding and opening benchmark CSV files: which files a path names, each file's header, its
body (every line after the header) and data-row count, and the few lines that may be rows whose
last field is `SKIP:oom`, found in the raw bytes before anything is parsed.

The import needs only the `SKIP:oom` rows, so it hands only those candidate lines to the row
reader (`rows`): the bytes are searched for `SKIP:oom` (a C-speed substring search), and a hit is
a candidate only when nothing but blanks or a quote follows it up to the line end, which already
rules out `SKIP:oom_estimate` and friends. The report hands it every line of the body.

A line is a row: the harness never writes a line break inside a quoted field. `\n`, `\r\n` and a
lone `\r` each end a line (a CR-only file is many rows, not one); git counts only `\n`, so a file
with lone CRs also maps its line numbers to git's, for the blame of its rows.

Only regular files are read: each is opened non-blocking (a FIFO cannot hang the open), its type
checked with fstat on the open descriptor (so a symlink is judged by its target, with no race
between check and read), and at most the size fstat gave is read (a device or a file growing
meanwhile cannot make the read unbounded).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from oomrec.core import schema
from oomrec.core.errors import OomrecError
from oomrec.core.pathkind import kind as file_kind
from oomrec.core.regular import NotRead, read_regular
from oomrec.core.schema import Token

# Why a file is not read, as the report groups them.
NOT_A_FILE = "not a regular file"
UNREADABLE = "cannot be read"
EMPTY = "empty (no header line)"
BINARY = "binary, not CSV text"
NOT_UTF8 = "header is not UTF-8 text"
TOO_LARGE = "larger than 1 GiB"
NO_MODEL = "no model column"
TOO_WIDE = "more than 4,096 columns"
# A harness header names 14 to 20 columns; a header of a million (a 10 MB line of commas) would
# make every row's read cost a million fields. Such a file is no benchmark CSV.
MAX_COLUMNS = 4096
SAME_FILE = "same file as another path"


MODEL_COLUMN = "model"

_OOM = Token.TRUE_OOM.encode()
_BOM = b"\xef\xbb\xbf"
# git's own test for "binary": a NUL byte in the first 8000 bytes.
_BINARY_PROBE = 8000
# What may follow the token before the line end and still leave it the whole last field.
_TRAILER = frozenset(b' \t"\r')
_BLANKS = frozenset(b" \t\r\n")
_LONE_CR = re.compile(rb"\r(?!\n)")
_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
# Benchmark CSVs are kilobytes to megabytes; a larger file (a sparse `truncate -s 100G`) would
# only fill memory.
MAX_FILE_BYTES = 1 << 30


@dataclass(frozen=True, slots=True)
class UnreadRow:
    """A line ending in `SKIP:oom` that could not be read as a row of its header: why, as a
    group (`reason`) and in detail."""

    lineno: int
    reason: str
    problem: str


class OomRow(NamedTuple):
    """A data row whose last field is exactly `SKIP:oom` and whose other fields match the header:
    its line number and the cells of the columns the import asked for, in that order. A named
    tuple: an import can make hundreds of thousands, at half a frozen dataclass's cost each."""

    lineno: int
    cells: tuple[str, ...]


@dataclass(slots=True)
class ScannedFile:
    """What one file holds, as far as the import cares. `skipped` says why it was not read."""

    path: str
    skipped: str | None = None
    detail: str = ""
    # (device, inode): a file reached by two paths (a symlink, a hard link) is read once.
    identity: tuple[int, int] | None = None
    header: tuple[str, ...] = ()
    data_rows: int = 0
    # The candidate lines (without the \n; a CR before it stays) and their line numbers.
    candidate_linenos: list[int] = field(default_factory=list)
    candidate_lines: list[bytes] = field(default_factory=list)
    # The lines after the header, every line break a `\n` (kept only when asked for), and the
    # line number of the first.
    body: bytes = b""
    body_line: int = 0
    # Filled in by the import from the candidates.
    oom_rows: list[OomRow] = field(default_factory=list)
    bad_rows: list[UnreadRow] = field(default_factory=list)
    # Only for a file with lone CRs: git's line number (it counts `\n` only) of each line,
    # index = our line number - 1.
    git_lines: list[int] | None = None


def scan_files(paths: Iterable[str], keep_body: bool = False) -> list[ScannedFile]:
    """Scan each file, in order. Never raises for a bad file: the result says what is wrong.

    A file reached by several paths counts once, under a path that is not a symlink when there
    is one (so removing the link later does not change the records' source); the other paths
    are skipped as SAME_FILE, their detail naming the path read.
    """
    results = [scan_file(path, keep_body) for path in paths]
    paths_of: dict[tuple[int, int], list[ScannedFile]] = {}
    for result in results:
        if result.identity is not None:
            paths_of.setdefault(result.identity, []).append(result)
    for group in paths_of.values():
        if len(group) > 1:
            kept = next((r for r in group if not os.path.islink(r.path)), group[0])
            for result in group:
                if result is not kept:
                    result.skipped, result.detail = SAME_FILE, kept.path
    return results


def scan_file(path: str, keep_body: bool = False) -> ScannedFile:
    """The header, data-row count and candidate lines of one file (with `keep_body`, its body
    instead), or why it cannot be read."""
    result = ScannedFile(path)
    data = _read(path, result)
    if data is None:
        return result
    start = len(_BOM) if data.startswith(_BOM) else 0
    if data.find(b"\0", start, start + _BINARY_PROBE) >= 0:
        result.skipped = BINARY
        return result
    if b"\r" in data and _LONE_CR.search(data):
        data = _lone_crs_to_newlines(data, result)
    header_at, body_at = _header_span(data, start)
    if header_at < 0:
        result.skipped = EMPTY
        return result
    header = _parse_header(data[header_at:body_at].rstrip(b"\r\n"))
    if header is None:
        result.skipped = NOT_UTF8
        return result
    if len(header) > MAX_COLUMNS:
        result.skipped, result.detail = TOO_WIDE, f"{len(header):,} columns"
        return result
    if MODEL_COLUMN not in header:
        result.skipped = NO_MODEL
        return result
    result.header = header
    if not keep_body:
        _scan_body(data, body_at, result)
    else:
        # The reader takes every line from here: no candidates, and it counts the rows.
        body = data[body_at:]
        result.body = body if body.endswith(b"\n") or not body else body + b"\n"
        result.body_line = data.count(b"\n", 0, body_at) + 1
    return result


def _read(path: str, result: ScannedFile) -> bytes | None:
    try:
        data, info = read_regular(path, MAX_FILE_BYTES)
    except FileNotFoundError as exc:
        result.skipped, result.detail = UNREADABLE, exc.strerror or str(exc)
        return None
    except NotRead as why:
        if why.kind:
            result.skipped, result.detail = NOT_A_FILE, why.kind
        elif why.size:
            result.skipped, result.detail = TOO_LARGE, f"{why.size:,} bytes"
        else:
            result.skipped, result.detail = UNREADABLE, why.error
        return None
    if info.st_ino:
        # Some filesystems (FUSE, network mounts) report inode 0 for every file.
        result.identity = (info.st_dev, info.st_ino)
    if not data or data.isspace():
        result.skipped = EMPTY
        return None
    return data


def _lone_crs_to_newlines(data: bytes, result: ScannedFile) -> bytes:
    """Every line break as `\n`, and git's line number of each line (rare: old Mac files)."""
    git_lines = [1]
    for brk in _LINE_BREAK.finditer(data):
        git_lines.append(git_lines[-1] + (brk.group() != b"\r"))
    result.git_lines = git_lines
    return _LINE_BREAK.sub(b"\n", data)


def _header_span(data: bytes, pos: int) -> tuple[int, int]:
    """Where the header line starts and where the line after it starts; (-1, -1) if none.

    Blank lines and `#` comment lines before the header are passed over.
    """
    size = len(data)
    while pos < size:
        end = data.find(b"\n", pos)
        nxt = size if end < 0 else end + 1
        line = data[pos:nxt].strip()
        if line and not line.startswith(b"#"):
            return pos, nxt
        pos = nxt
    return -1, -1


def header_names(line: bytes) -> tuple[str, ...] | None:
    """A header line's column names as the import reads them: a leading BOM (a spreadsheet's
    save) dropped, each name stripped; None when the line is not UTF-8."""
    return _parse_header(line.removeprefix(_BOM).rstrip(b"\r\n"))


@lru_cache(maxsize=256)
def _parse_header(line: bytes) -> tuple[str, ...] | None:
    # Cached: thousands of files share a handful of headers.
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return tuple(name.strip() for name in schema.split_row(text))


def _scan_body(data: bytes, body_at: int, result: ScannedFile) -> None:
    """Count the data rows and collect the candidate lines."""
    size = len(data)
    first_row = lineno = data.count(b"\n", 0, body_at) + 1
    counted_to = body_at
    hit = data.find(_OOM, body_at)
    while hit >= 0:
        after = hit + len(_OOM)
        while after < size and data[after] in _TRAILER:
            after += 1
        if after < size and data[after] != 0x0A:
            # More text follows on this line: `SKIP:oom_estimate`, a prompt, ...
            hit = data.find(_OOM, after)
            continue
        line_at = max(data.rfind(b"\n", body_at, hit) + 1, body_at)
        lineno += _newlines(data[counted_to:line_at])
        counted_to = line_at
        result.candidate_linenos.append(lineno)
        result.candidate_lines.append(data[line_at:after])
        hit = data.find(_OOM, after)
    # Rows run from the first line after the header to the last line that is not blank.
    end = size
    while end > body_at and data[end - 1] in _BLANKS:
        end -= 1
    if end > body_at:
        last_row = _newlines(data) - data.count(b"\n", end) + 1
        result.data_rows = last_row - first_row + 1


def _newlines(chunk: bytes) -> int:
    # 3x faster than bytes.count, whose one-byte loop is not vectorised: replace() finds each
    # line break with memchr. Its transient copy is as large as the chunk.
    return len(chunk) - len(chunk.replace(b"\n", b""))


def find_csv_files(paths: Sequence[Path]) -> tuple[list[str], list[ScannedFile]]:
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
    refused: list[ScannedFile] = []
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
            refused.append(ScannedFile(real, NOT_A_FILE, file_kind(mode)))
    return sorted(files), refused


def _walk(top: str, files: set[str], refused: list[ScannedFile]) -> None:
    # A stack, not recursion: a hostile tree can be nested deeper than Python's recursion limit.
    folders = [top]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as entries:
                listed = list(entries)
        except OSError as exc:
            refused.append(ScannedFile(folder, UNREADABLE, exc.strerror or str(exc)))
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
                    refused.append(ScannedFile(entry.path, NOT_A_FILE, kind))
            except OSError as exc:
                refused.append(ScannedFile(entry.path, UNREADABLE, exc.strerror or str(exc)))
