"""The OOM record: one frozen record type, its line format, and the record file.

A line is `model,prompt_target_len,date,commit,peak_bytes,source_csv[,hardware]`. The first six
fields are what the bash harness writes and reads (it needs >= 6 fields and uses fields 1-2), so
the file stays readable by it. Fields are CSV-quoted only when they hold a comma or a quote.

The file is never edited in place: new lines are appended in one write under an exclusive lock,
and a rewrite re-reads the file inside the same lock, writes a temp file beside it, fsyncs and
renames it over the original. Lines that do not parse are kept, byte for byte, in their place.
"""

from __future__ import annotations

import csv
import io
import os
import re
import stat
import tempfile
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date as Date
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from oomrec.bulk import no_cycle_collection
from oomrec.errors import OomrecError
from oomrec.hardware import normalize

FIELDS = ("model", "prompt_target_len", "date", "commit", "peak_bytes", "source_csv", "hardware")
MIN_FIELDS = 6
UNKNOWN_COMMIT = "unknown"
LOCK_TIMEOUT_S = 60.0

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_BOM = "\ufeff"


@dataclass(frozen=True, slots=True)
class OomRecord:
    """One observed out-of-memory event: `model` OOMed at `prompt_target_len` tokens."""

    model: str
    prompt_target_len: int
    date: str
    commit: str
    peak_bytes: int | None = None
    source_csv: str = ""
    hardware: str | None = None

    def to_dict(self) -> dict[str, str | int | None]:
        return {name: getattr(self, name) for name in FIELDS}


class NotARecord(ValueError):
    """A line that is not a record; the message says why, in a few words."""


class RecordLine(NamedTuple):
    """A line of the record file as read: its text (without line ending) and what it holds.

    A NamedTuple rather than a frozen dataclass: it is built once per line, and a 100k-line
    record is loaded by every prune.
    """

    lineno: int
    text: str
    record: OomRecord | None
    problem: str | None = None
    # Written back as read, so a rewrite keeps a CRLF file CRLF.
    ending: str = "\n"

    @property
    def is_blank(self) -> bool:
        return not self.text.strip()


@dataclass(frozen=True, slots=True)
class Warning_:
    path: Path
    lineno: int
    problem: str

    def __str__(self) -> str:
        return f"warning: {self.path}:{self.lineno}: not a record ({self.problem}), kept as is"


def parse_line(text: str) -> OomRecord:
    """Parse one line (without its line ending). Raises NotARecord with the reason."""
    if '"' in text:
        try:
            fields = next(csv.reader([text]))
        except csv.Error as exc:
            raise NotARecord(f"bad CSV quoting: {exc}") from None
    else:
        # The harness never quotes; a plain split is ~5x faster than csv.reader per line,
        # which matters for record files of 100k lines.
        fields = text.split(",")
    if len(fields) < MIN_FIELDS:
        raise NotARecord(f"{len(fields)} fields, needs at least {MIN_FIELDS}")
    model, length, day, commit, peak, source = (
        fields[0].strip(),
        fields[1].strip(),
        fields[2].strip(),
        fields[3].strip(),
        fields[4].strip(),
        fields[5].strip(),
    )
    hardware = fields[6].strip() if len(fields) > 6 else ""
    if not model:
        raise NotARecord("empty model")
    if not (length.isdigit() and length.isascii()):
        raise NotARecord(f"length {length!r} is not a number")
    if not _is_date(day):
        raise NotARecord(f"date {day!r} is not YYYY-MM-DD")
    if peak and not (peak.isdigit() and peak.isascii()):
        raise NotARecord(f"peak_bytes {peak!r} is not a number")
    return OomRecord(
        model=model,
        prompt_target_len=int(length),
        date=day,
        commit=commit,
        peak_bytes=int(peak) if peak else None,
        source_csv=source,
        # Compared with this host's tag: `GB10` or `NVIDIA_GB10_122GB` written by hand is `gb10`.
        hardware=normalize(hardware) if hardware else None,
    )


def format_line(record: OomRecord) -> str:
    """The record as one line, without line ending; the hardware field only when known.

    A field holding a line break or another control character is refused (OomrecError): CSV
    would quote it, but the harness reads the file line by line, so it would see two records.
    """
    values = [
        record.model,
        str(record.prompt_target_len),
        record.date,
        record.commit,
        "" if record.peak_bytes is None else str(record.peak_bytes),
        record.source_csv,
    ]
    if record.hardware:
        values.append(record.hardware)
    for name, value in zip(FIELDS, values, strict=False):
        if _CONTROL.search(value):
            raise OomrecError(
                f"record {name} {value!r} holds a line break or control character; remove it"
            )
    out = io.StringIO()
    csv.writer(out, lineterminator="", quoting=csv.QUOTE_MINIMAL).writerow(values)
    return out.getvalue()


def parse_text(text: str) -> list[RecordLine]:
    """Every line of a record file's text, in order; a BOM and CRLF endings are tolerated."""
    text = text.removeprefix(_BOM)
    # split("\n"), not splitlines(): a kept line must not be cut at \x0b, \x1c or U+2028.
    pieces = text.split("\n")
    if pieces[-1] == "":
        pieces.pop()
    lines: list[RecordLine] = []
    for lineno, raw in enumerate(pieces, start=1):
        line = raw.removesuffix("\r")
        ending = "\r\n" if len(line) != len(raw) else "\n"
        if not line.strip():
            lines.append(RecordLine(lineno, line, None, None, ending))
            continue
        try:
            lines.append(RecordLine(lineno, line, parse_line(line), None, ending))
        except NotARecord as exc:
            lines.append(RecordLine(lineno, line, None, str(exc), ending))
    return lines


@lru_cache(maxsize=4096)
def _is_date(text: str) -> bool:
    # Cached: a record file holds few distinct dates and many lines.
    if not _DATE.fullmatch(text):
        return False
    try:
        Date.fromisoformat(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Loaded:
    lines: list[RecordLine]
    warnings: list[Warning_]

    @property
    def records(self) -> list[OomRecord]:
        return [line.record for line in self.lines if line.record is not None]


class RecordFile:
    """The record file at `path`: load, append under a lock, rewrite atomically under it."""

    def __init__(self, path: Path, shown_as: str | None = None) -> None:
        self.path = path
        # How warnings and errors name the file; the path as the user gave it, by default.
        self.shown_as = shown_as or str(path)
        self.lock_path = path.with_name(path.name + ".lock")
        self._held = 0

    def load(self) -> Loaded:
        """Read the file; a missing file is an empty record. Unparsed lines come with a warning."""
        with no_cycle_collection():
            return self._parse(self._read_text())

    def append(
        self,
        records: Iterable[OomRecord],
        unless_present: Callable[[OomRecord], Hashable] | None = None,
    ) -> int:
        """Append records in one write under the lock, then fsync. Returns how many.

        With `unless_present`, a record whose key is already in the file (as re-read inside the
        lock) or earlier in `records` is left out, so two concurrent imports add it once.
        """
        return len(self.append_new(records, unless_present))

    def append_new(
        self,
        records: Iterable[OomRecord],
        unless_present: Callable[[OomRecord], Hashable] | None = None,
    ) -> list[OomRecord]:
        """`append`, returning the records written rather than how many."""
        pending = list(records)
        if not pending:
            return []
        self._check_appendable()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock():
            if unless_present is not None:
                pending = _new_only(pending, self._parse(self._read_text()).records, unless_present)
            if not pending:
                return []
            self.append_text("".join(format_line(r) + "\n" for r in pending))
        return pending

    def rewrite(self, transform: Callable[[Loaded], Sequence[RecordLine]]) -> Loaded:
        """Replace the file with the lines `transform` keeps, atomically, under the lock.

        `transform` gets the file as re-read inside the lock (so a line appended a moment ago is
        there) and returns the lines to keep, in the order to write them. Kept lines are written
        back byte for byte with their own line endings (and a leading BOM stays); only a missing
        final newline is added. Returns what was read inside the lock.
        """
        self._check_rewritable()
        with self._lock():
            raw = self._read_text()
            current = self._parse(raw)
            kept = transform(current)
            bom = _BOM if raw.startswith(_BOM) else ""
            text = bom + "".join(line.text + line.ending for line in kept)
            self.replace_text(text)
        return current

    def read_text(self) -> str:
        """The file's text as it is now ("" when missing); call under `locked()` to act on it."""
        return self._read_text()

    def append_text(self, text: str) -> None:
        """Append `text` (whole lines) in one write and fsync; the caller holds `locked()`."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            # Never glue the first new line onto a last line written without a newline.
            if _ends_without_newline(fd):
                text = "\n" + text
            data = text.encode("utf-8", errors="surrogateescape")
            written = os.write(fd, data)
            if written != len(data):
                raise OomrecError(
                    f"{self.shown_as}: short write ({written} of {len(data)} bytes); "
                    "check free disk space"
                )
            os.fsync(fd)
        finally:
            os.close(fd)

    def replace_text(self, text: str) -> None:
        """Replace the file with `text` atomically (temp file, fsync, rename); the caller holds
        `locked()`."""
        self._check_rewritable()
        self._replace_with(text)

    def _replace_with(self, text: str) -> None:
        directory = self.path.parent
        directory.mkdir(parents=True, exist_ok=True)
        mode = stat.S_IMODE(self.path.stat().st_mode) if self.path.exists() else 0o644
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape", newline="") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _fsync_dir(directory)

    def _parse(self, text: str) -> Loaded:
        lines = parse_text(text)
        warnings = [
            Warning_(Path(self.shown_as), line.lineno, line.problem)
            for line in lines
            if line.problem is not None
        ]
        return Loaded(lines, warnings)

    def _read_text(self) -> str:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return ""
        except IsADirectoryError:
            raise OomrecError(
                f"{self.shown_as}: is a directory, not a record file; pass --record FILE"
            ) from None
        except OSError as exc:
            raise OomrecError(f"{self.shown_as}: cannot read ({exc.strerror})") from None
        # surrogateescape: bytes that are not UTF-8 survive a rewrite unchanged.
        return data.decode("utf-8", errors="surrogateescape")

    def _check_appendable(self) -> None:
        if self.path.exists() and not self.path.is_file():
            raise OomrecError(f"{self.shown_as}: not a regular file; point --record at a file")

    def _check_rewritable(self) -> None:
        if self.path.is_symlink():
            raise OomrecError(
                f"{self.shown_as}: is a symlink; refusing to rewrite it (the link would be "
                f"replaced by a file); pass --record {os.path.realpath(self.path)}"
            )
        if self.path.exists() and not self.path.is_file():
            raise OomrecError(f"{self.shown_as}: not a regular file; refusing to rewrite it")

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the record's lock across several reads and writes (re-entrant: append and
        rewrite inside it do not take it again). The archive is written under it too."""
        with self._lock():
            yield

    @contextmanager
    def _lock(self) -> Iterator[None]:
        if self._held:
            self._held += 1
            try:
                yield
            finally:
                self._held -= 1
            return
        # filelock costs ~0.1 s to import; only writers pay it.
        from filelock import FileLock, Timeout

        lock = FileLock(str(self.lock_path), timeout=LOCK_TIMEOUT_S)
        try:
            lock.acquire()
        except Timeout:
            raise OomrecError(
                f"{self.lock_path}: still locked after {LOCK_TIMEOUT_S:.0f} s; is another "
                "oomrec writing the record? If not, delete the lock file"
            ) from None
        except OSError as exc:
            raise OomrecError(f"{self.lock_path}: cannot lock ({exc.strerror})") from None
        self._held = 1
        try:
            yield
        finally:
            self._held = 0
            lock.release()


def _new_only(
    pending: list[OomRecord],
    present: Iterable[OomRecord],
    key: Callable[[OomRecord], Hashable],
) -> list[OomRecord]:
    seen = {key(r) for r in present}
    fresh = []
    for record in pending:
        k = key(record)
        if k not in seen:
            seen.add(k)
            fresh.append(record)
    return fresh


def _ends_without_newline(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def check_model_name(model: str) -> str:
    """A model name safe to record (it is a directory basename); OomrecError otherwise."""
    if not model.strip():
        raise OomrecError("model name is empty; give the model's directory name")
    bad = [what for what, hit in _MODEL_FORBIDDEN if hit(model)]
    if bad:
        raise OomrecError(
            f"model name {model!r} contains {bad[0]}; give the model's directory name "
            "(its basename, as the sweep uses it)"
        )
    return model


def check_length(text: str) -> int:
    """A prompt length as typed by a user: a whole number >= 0; OomrecError otherwise."""
    stripped = text.strip()
    if not stripped.isdigit() or not stripped.isascii():
        raise OomrecError(f"length {text!r} is not a whole number >= 0; give a token count")
    return int(stripped)


_MODEL_FORBIDDEN: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("'/'", lambda m: "/" in m),
    ("','", lambda m: "," in m),
    ("'..'", lambda m: ".." in m),
    ("a line break or control character", lambda m: any(ord(c) < 32 or c == "\x7f" for c in m)),
    ("a quote", lambda m: '"' in m),
)
