"""The OOM record: one frozen record type, its line format, and the record file.

A line is `model,prompt_target_len,date,commit,peak_bytes,source_csv[,hardware[,mem_bytes[,kind]]]`
(`kind`: `guard` for a cell the memory guard stopped). The first six fields are what the bash
harness writes and reads (it needs >= 6 fields and uses fields 1-2), so the file stays readable by
it. Fields are CSV-quoted only when they hold a comma or a quote. `\\n`, `\\r\\n` and a lone `\\r`
each end a line; a last line without one is an append cut short and never a record.

The file is never edited in place: new lines are appended in one write under an exclusive lock on
the file's real path (so a symlink and its target share one lock), and a rewrite re-reads the file
inside the same lock, writes a temp file beside it, fsyncs and renames it over the original. Lines
that do not parse are kept, byte for byte, in their place.
"""

from __future__ import annotations

import csv
import errno
import io
import os
import re
import stat
import sys
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from datetime import date as Date
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple, Protocol

from oomrec.core.atomic import replace_file
from oomrec.core.confine import Confinement, check_writes
from oomrec.core.errors import OomrecError
from oomrec.core.gcpause import no_cycle_collection
from oomrec.core.hardware import normalize
from oomrec.core.modelnames import model_name
from oomrec.core.pathkind import kind as file_kind
from oomrec.core.regular import NotRead, read_regular
from oomrec.core.shown import printable, shorten, show_bytes
from oomrec.core.units import MAX_INT


class Judgement(Protocol):
    """What applicability needs of a staleness verdict (staleness/verdict.py's Judgement,
    which the core layer below it cannot import): whether the record still applies."""

    @property
    def applies(self) -> bool: ...


FIELDS = (
    "model",
    "prompt_target_len",
    "date",
    "commit",
    "peak_bytes",
    "source_csv",
    "hardware",
    "mem_bytes",
    "kind",
)
MIN_FIELDS = 6
# A record file is read whole: one over this (2.5 million lines of a hundred bytes) is not a
# record file, and a pseudo-file (/proc/self/pagemap) that never ends is cut off here.
MAX_RECORD_BYTES = 256 << 20
# `kind` of a record written for a cell the memory guard stopped (no kind: an OOM seen).
KIND_GUARD = "guard"
# `kind` of a record of an OOM faked with --fake-oom: it applies as any record does (the hook
# exists to exercise the record), but it is told apart, so it is never published to other hosts
# and a listing shows it for what it is.
KIND_FAKE = "fake"
UNKNOWN_COMMIT = "unknown"
# How many hex digits of a commit people are shown, everywhere (git's own default abbreviation).
SHORT_SHA = 7
_DIRTY = "-dirty"
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
# git resolves an object name from 4 hex digits up; 64 is a SHA-256 object name.
_HEX = re.compile(r"[0-9a-fA-F]{4,64}")
LOCK_TIMEOUT_S = 60.0
# Lengths, peaks and memory sizes are 64-bit non-negative integers; 19 digits hold any of them,
# and checking the digit count first keeps int() away from 5,000-digit fields.
_MAX_DIGITS = 19
# A host with up to 2% more memory than the record's still counts as the same size: tools
# report the same machine's memory a little differently (firmware reservations, rounding).
MEM_JITTER = 0.02
# Files beside the record that belong to it: a sweep must never write its CSV over them.
SIDE_SUFFIXES = (".lock", ".archive", ".archive.lock", ".torn")

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# What a record field cannot hold as is: control characters (the harness reads the record line by
# line) and lone surrogates (bytes of a file name that are not UTF-8).
_EOL = re.compile(r"(\r\n|\r|\n)")
_BOM = "\ufeff"
_TORN = "no line ending (an append cut short?)"
# mkstemp's random part: 8 characters of this alphabet.
_TMP_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


@dataclass(frozen=True, slots=True)
class OomRecord:
    """One observed out-of-memory event: `model` OOMed at `prompt_target_len` tokens.

    `mem_bytes` is the memory the accelerator could address on the host that ran out.
    An empty `date` is a date the line gave in a form oomrec cannot read.
    """

    model: str
    prompt_target_len: int
    date: str
    commit: str
    peak_bytes: int | None = None
    source_csv: str = ""
    hardware: str | None = None
    mem_bytes: int | None = None
    # What the evidence is: None for an OOM seen, KIND_GUARD for a stop by the memory guard
    # (the operator's budget, not an OOM: so it can be listed and lifted apart), KIND_FAKE for
    # an OOM faked with --fake-oom.
    kind: str | None = None

    def to_dict(self) -> dict[str, str | int | None]:
        # `kind` only when set: every record before the guard reads back exactly as it did.
        data = {name: getattr(self, name) for name in FIELDS}
        if self.kind is None:
            del data["kind"]
        return data


EvidenceKey = tuple[str, int, str | None, int | None, str, str | None]


def evidence_key(record: OomRecord) -> EvidenceKey:
    """What makes two records the same evidence: the same OOM seen on the same host and code.

    The kind counts: a guard stop and a real OOM of one cell are two facts, and lifting guard
    records alone must not take the real OOM with them.
    """
    return (
        record.model,
        record.prompt_target_len,
        record.hardware,
        record.mem_bytes,
        record.commit,
        record.kind,
    )


class Applicability(StrEnum):
    """Whether a record pre-skips its cells on a host at HEAD, and if not, which part of the
    rule says so (hardware, then memory, then the staleness verdict)."""

    APPLIES = "applies"
    OTHER_HARDWARE = "other hardware"
    MORE_MEMORY = "this host has more memory"
    # A fix in effect at HEAD took it out of play (stale.py's verdict); kept as evidence.
    LIFTED = "lifted by a fix"

    @property
    def on_host(self) -> bool:
        """The record is about this host's hardware and memory, applying or lifted."""
        return self in (Applicability.APPLIES, Applicability.LIFTED)


def applicability(
    record: OomRecord,
    host_tag: str | None,
    host_mem: int | None,
    verdict: Judgement | None = None,
) -> Applicability:
    """The one decision "does this record apply here", for the sweep and the import.

    A record applies iff its hardware tag is this host's (or it has none; `host_tag` None: any
    host), its memory is unknown, this host's is unknown, or this host has no more memory than
    it (within MEM_JITTER): an OOM on a 96 GiB machine says nothing about a 512 GiB one of the
    same chip; and `verdict` (stale.py's judgement at HEAD; None: not judged) does not lift it.
    """
    if record.hardware is not None and host_tag is not None and record.hardware != host_tag:
        return Applicability.OTHER_HARDWARE
    if not mem_covers(record.mem_bytes, host_mem):
        return Applicability.MORE_MEMORY
    if verdict is not None and not verdict.applies:
        return Applicability.LIFTED
    return Applicability.APPLIES


def mem_covers(recorded: int | None, host: int | None) -> bool:
    """Whether an OOM with `recorded` bytes speaks for a host with `host` bytes: either unknown
    or 0 (when in doubt, an OOM applies), or the host has no more memory (within MEM_JITTER).
    The one memory rule: applicability and the report's machine classes (report/folded) both
    call it."""
    # A recorded size of 0 (`..._0GB`, a hand-written 0) says nothing: unknown, so it applies.
    return not recorded or host is None or host <= recorded * (1 + MEM_JITTER)


def not_applying_because(
    record: OomRecord,
    host_tag: str | None,
    host_mem: int | None,
    verdict: Judgement | None = None,
) -> str | None:
    """Why `record` does not apply on this host (see `applicability`), or None when it does."""
    reach = applicability(record, host_tag, host_mem, verdict)
    if reach == Applicability.OTHER_HARDWARE:
        return f"recorded on {record.hardware}, this host is {host_tag}"
    if reach == Applicability.MORE_MEMORY:
        recorded, here = show_bytes(record.mem_bytes or 0), show_bytes(host_mem or 0)
        return f"recorded on {recorded}, this host has {here}"
    if reach == Applicability.LIFTED:
        return str(verdict)
    return None


def applies_on(
    record: OomRecord,
    host_tag: str | None,
    host_mem: int | None,
    verdict: Judgement | None = None,
) -> bool:
    """True when `record` pre-skips its cells on this host (see `applicability`)."""
    return applicability(record, host_tag, host_mem, verdict) == Applicability.APPLIES


class CommitField(NamedTuple):
    """A record's commit field as git will see it: hex to resolve (lower case), whether it was
    measured on uncommitted changes (`<sha>-dirty`), or why there is no commit (`unknown`)."""

    hex: str | None
    dirty: bool = False
    unknown: str = ""


def read_commit(text: str) -> CommitField:
    """The commit field read: `unknown` or empty is no commit, `<hex>[-dirty]` is one."""
    value = text.strip()
    if not value or value.lower() == UNKNOWN_COMMIT:
        return CommitField(None, unknown="no commit recorded")
    base = value.removesuffix(_DIRTY)
    if not _HEX.fullmatch(base):
        return CommitField(None, unknown=f"{value!r} is not a commit SHA")
    return CommitField(base.lower(), dirty=base != value)


def short_commit(commit: str) -> str:
    """A commit as people are shown it: `abcdef1`, `abcdef1-dirty`, or the text as written when
    it is not hex (`unknown`, a tag name), so nothing that is not a SHA is cut."""
    base = commit.removesuffix(_DIRTY)
    if base and all(c in _HEX_DIGITS for c in base):
        return base[:SHORT_SHA] + commit[len(base) :]
    return commit


def source_path(
    path: str | os.PathLike[str], root: str | os.PathLike[str] | None, *, resolved: bool = False
) -> str:
    """How a record names the CSV at `path` (its `source_csv`): relative to `root` (the
    repository's top level; None: the working directory) when under it, as posix; else absolute.

    The folders on both sides are resolved, so a CSV reached through a symlinked folder is named
    once; the file's own name is kept, so a symlinked CSV keeps the name git tracks it under.
    `resolved`: `path` is absolute with its folders resolved and `root` is resolved (the import
    resolves every path once while finding the files, and names thousands of them).
    """
    if resolved:
        where, base = os.fspath(path), os.fspath(root if root is not None else os.getcwd())
    else:
        folder, name = os.path.split(os.path.abspath(path))
        where = os.path.join(os.path.realpath(folder), name)
        base = os.path.realpath(root if root is not None else os.getcwd())
    prefix = base.rstrip(os.sep) + os.sep
    relative = where[len(prefix) :] if where.startswith(prefix) else where
    return relative.replace(os.sep, "/")


def source_field(source: str) -> str:
    """A source as the record file holds it and reads it back: stripped, and any control
    character or byte that is not UTF-8 escaped (see `printable`)."""
    return printable(source).strip()


class NotARecord(ValueError):
    """A line that is not a record; the message says why, in a few words."""


class RecordLine(NamedTuple):
    """A line of the record file as read: its text (without line ending) and what it holds.

    `problem` says why a line is not a record, or, for a record, which fields oomrec read as
    unknown or why the bash harness would not honour it.

    A NamedTuple rather than a frozen dataclass: it is built once per line, and a 100k-line
    record is loaded by every prune.
    """

    lineno: int
    text: str
    record: OomRecord | None
    problem: str | None = None
    # Written back as read, so a rewrite keeps a CRLF (or CR) file so.
    ending: str = "\n"

    @property
    def is_blank(self) -> bool:
        return not self.text.strip()


@dataclass(frozen=True, slots=True)
class Warning_:
    path: Path
    lineno: int
    problem: str
    # A record with a note (unknown fields) rather than a line that is not one.
    is_record: bool = False

    def __str__(self) -> str:
        if self.is_record:
            return f"warning: {self.path}:{self.lineno}: {self.problem}"
        return f"warning: {self.path}:{self.lineno}: not a record ({self.problem}), kept as is"


def parse_line(text: str) -> OomRecord:
    """Parse one line (without its line ending). Raises NotARecord with the reason."""
    return read_line(text)[0]


def read_line(text: str, *, whole: bool = True) -> tuple[OomRecord, str | None]:
    """A line as the harness would honour it: the record, and a note on what oomrec read as
    unknown (a free-form date or peak) or why the harness would not honour it. Raises NotARecord.

    The harness writes `model,len,date,commit,peak,source` with `echo`, its `--output` path
    unquoted: fields after the sixth are oomrec's (hardware tag, memory, kind) only when they
    are what oomrec writes (`_written_by_oomrec`), else the rest of that path, and the record
    applies on every machine (the safe side). `whole=False`: a last line without a line ending,
    whose fields after the sixth may be cut short; they count as unknown.
    """
    plain = text.split(",")
    notes: list[str] = []
    if len(plain) >= 2 and ('"' in plain[0] or '"' in plain[1]):
        # Only a hand edit quotes the model or the length; CSV reads it, the harness does not.
        try:
            fields = next(csv.reader([text]))
        except csv.Error as exc:
            raise NotARecord(f"bad CSV quoting: {exc}") from None
        if len(fields) < MIN_FIELDS:
            raise NotARecord(f"{len(fields)} fields, needs at least {MIN_FIELDS}")
        head, source, extra = fields[:5], fields[5], fields[6:]
        # A hand edit: whether its source was quoted is not known, so the seven-field rule holds.
        whole_source = False
        if plain[0].strip() != fields[0].strip() or plain[1].strip() != fields[1].strip():
            notes.append(HARNESS_QUOTED)
    else:
        if len(plain) < MIN_FIELDS:
            raise NotARecord(f"{len(plain)} fields, needs at least {MIN_FIELDS}")
        head = plain[:5]
        source, extra, whole_source = _source_and_extra(plain[5:])
    model_raw, length_raw = head[0], head[1]
    model, length = model_raw.strip(), length_raw.strip()
    day, commit, peak = (f.strip() for f in head[2:5])
    if not model:
        raise NotARecord("empty model")
    if not (length.isdigit() and length.isascii()):
        raise NotARecord(f"length {shorten(length)} is not a number")
    prompt_target_len = bounded_int(length)
    if prompt_target_len is None:
        raise NotARecord(f"length {shorten(length)} is out of range")
    if not notes and (model != model_raw or length != length_raw):
        notes.append(HARNESS_PADDED)
    # `plain-8b/` (the harness's key for `--models plain-8b/`) is model `plain-8b`: one identity
    # on the reading side and the writing side.
    model = model_name(model)
    if len(length) > 1 and length.startswith("0"):
        octal = harness_octal(length)
        if octal is None:
            notes.append(HARNESS_ZERO)
        else:
            # The harness compares lengths in bash arithmetic, where `0512` is octal 330; the
            # smaller reading covers both, so no cell either tool would skip is launched.
            prompt_target_len = min(prompt_target_len, octal)
            notes.append(HARNESS_OCTAL)
    unknown = []
    # A field the harness does not read is evidence oomrec can do without: the line still
    # pre-skips (as the harness's would), with that field unknown.
    if day and not is_date(day):
        unknown.append(f"date {shorten(day)} is not YYYY-MM-DD")
        day = ""
    peak_bytes = bounded_int(peak) if peak else None
    if peak and peak_bytes is None:
        unknown.append(f"peak_bytes {shorten(peak)} is not a number of bytes")
    if not whole:
        extra = []
        notes.append(UNTERMINATED)
    elif extra and not _written_by_oomrec(None if whole_source else source, extra):
        source = ",".join([source, *extra])
        extra = []
        notes.append(UNQUOTED_SOURCE)
    hardware = extra[0].strip() if extra else ""
    mem = extra[1].strip() if len(extra) > 1 else ""
    kind = extra[2].strip() if len(extra) > 2 else ""
    mem_bytes = bounded_int(mem) if mem else None
    if unknown:
        notes.insert(0, f"{'; '.join(unknown)}: read as unknown, the record applies")
    record = _interned(
        model, prompt_target_len, day, commit, peak_bytes, source, hardware, mem_bytes, kind
    )
    return record, "; ".join(notes) or None


def _interned(
    model: str,
    length: int,
    day: str,
    commit: str,
    peak: int | None,
    source: str,
    hardware: str,
    mem: int | None,
    kind: str,
) -> OomRecord:
    """The record of a line's fields as read (read_line and read_plain alike). Interned: a
    record's models, dates, commits, sources and tags repeat across its lines, and one copy of
    each keeps a million-line record's load at a fraction of the memory."""
    return OomRecord(
        model=sys.intern(model),
        prompt_target_len=length,
        date=sys.intern(day),
        commit=sys.intern(commit),
        peak_bytes=peak,
        source_csv=sys.intern(source.strip()),
        hardware=_tag(hardware) if hardware else None,
        mem_bytes=mem,
        kind=sys.intern(kind) if kind else None,
    )


# Why the bash harness would not honour a line oomrec reads (each warned once per file).
HARNESS_QUOTED = (
    "the bash harness reads its model and length without CSV quoting, so it would not honour "
    "this line"
)
HARNESS_PADDED = (
    "the bash harness compares the model and the length as written, spaces included, so it "
    "would not honour this line"
)
HARNESS_ZERO = (
    "the bash harness reads a length with a leading zero as octal (or not at all), so it would "
    "not honour this line as written"
)
HARNESS_OCTAL = (
    "the bash harness reads a length with a leading zero as octal (0512 is 330), so the record "
    "covers the smaller reading: every cell either tool would skip is skipped"
)
HARNESS_BOM = (
    "the bash harness reads the byte order mark as part of the first model name, so it would "
    "not honour this line"
)
UNQUOTED_SOURCE = (
    "the fields after the sixth are not a hardware tag, memory and kind as oomrec writes them: "
    "read as the rest of the harness's unquoted source path, so the record applies on every "
    "machine"
)
UNTERMINATED = (
    "no line ending: read as the harness reads it, the fields after the sixth as unknown (the "
    "record applies on every machine); the next append completes the line"
)
HARNESS_NOTES = (
    HARNESS_QUOTED,
    HARNESS_PADDED,
    HARNESS_ZERO,
    HARNESS_OCTAL,
    HARNESS_BOM,
    UNQUOTED_SOURCE,
    UNTERMINATED,
)
_KINDS = frozenset({KIND_GUARD, KIND_FAKE})
_EXTRA_FIELDS = 3


def _source_and_extra(rest: list[str]) -> tuple[str, list[str], bool]:
    """The source field, the fields after it, and whether the source was quoted (so oomrec
    wrote it whole), from the plain split of everything after the fifth comma; a source oomrec
    quoted (it held a comma or a quote) read as CSV."""
    if rest[0].lstrip().startswith('"'):
        try:
            quoted = next(csv.reader([",".join(rest).lstrip()]))
        except csv.Error:
            quoted = []
        # Quoted, so oomrec wrote it (the harness never quotes): its source is known whole.
        if quoted and _written_by_oomrec(None, quoted[1:]):
            return quoted[0], quoted[1:], True
    return rest[0], rest[1:], False


def _written_by_oomrec(source: str | None, extra: list[str]) -> bool:
    """Whether the fields after the source are oomrec's: at most hardware, memory and kind; a
    tag that reads back as itself (not a file name's part), a number, a kind oomrec writes.
    `source` None: the source was quoted, so it cannot have run on into the fields after it."""
    if not extra:
        return True
    if len(extra) > _EXTRA_FIELDS:
        return False
    tag = extra[0].strip()
    if len(extra) == 1 and tag and source is not None and not _csv_name(source):
        # Seven fields: oomrec writes a tag with its memory field (eight), so this is a harness
        # line whose `--output` held a comma (`benchmarks/sweep,h200`) unless the source is a
        # CSV's name; read on the safe side, the record applies on every machine.
        return False
    if tag and not _reads_as_tag(tag):
        return False
    mem = extra[1].strip() if len(extra) > 1 else ""
    if mem and bounded_int(mem) is None:
        return False
    kind = extra[2].strip() if len(extra) > 2 else ""
    return not kind or kind in _KINDS


@lru_cache(maxsize=1024)
def _reads_as_tag(tag: str) -> bool:
    """A tag that reads back as itself and is no file name's part. Cached: a record holds a
    few tags over many lines."""
    lowered = tag.lower()
    return normalize(tag) == lowered and not lowered.endswith(".csv") and lowered not in _NOT_TAGS


@lru_cache(maxsize=1024)
def _tag(hardware: str) -> str | None:
    """A line's hardware field as this host's tag is compared (`GB10` written by hand is
    `gb10`), one interned copy per tag."""
    tag = normalize(hardware)
    return None if tag is None else sys.intern(tag)


def _csv_name(source: str) -> bool:
    return source.strip().lower().endswith(".csv")


# File-name endings that normalize to themselves but name no hardware.
_NOT_TAGS = frozenset({"csv", "tsv", "txt", "json", "out", "log"})


def harness_octal(length: str) -> int | None:
    """A length with a leading zero as bash arithmetic reads it (octal), else None: bash refuses
    one with an 8 or a 9 (`value too great for base`), and the harness honours no such line."""
    if not (length.startswith("0") and length.isascii() and length.isdigit()):
        return None
    if any(digit in "89" for digit in length):
        return None
    value = int(length, 8)
    return value if value <= MAX_INT else None


def bounded_int(text: str) -> int | None:
    """A non-negative 64-bit integer written in ASCII digits (leading zeros allowed), else None
    (never a traceback). The one check of every length, peak and memory size oomrec reads."""
    if not (text.isascii() and text.isdigit()):
        return None
    if len(text) > _MAX_DIGITS:
        text = text.lstrip("0") or "0"
        if len(text) > _MAX_DIGITS:
            return None
    value = int(text)
    return value if value <= MAX_INT else None


def format_line(record: OomRecord) -> str:
    """The record as one line, without line ending; hardware, memory and kind only when known
    (a kind keeps the empty fields before it, so it stays the ninth).

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
    if record.hardware or record.mem_bytes is not None or record.kind:
        # The memory field comes with the tag, even empty: a seventh field alone is what a
        # harness line whose unquoted `--output` held a comma looks like (`_written_by_oomrec`).
        values.append(record.hardware or "")
        values.append("" if record.mem_bytes is None else str(record.mem_bytes))
    if record.kind:
        values.append(record.kind)
    for name, value in zip(FIELDS, values, strict=False):
        if _CONTROL.search(value):
            raise OomrecError(
                f"record {name} {shorten(value)} holds a line break or control character; remove it"
            )
    out = io.StringIO()
    csv.writer(out, lineterminator="", quoting=csv.QUOTE_MINIMAL).writerow(values)
    return out.getvalue()


def split_lines(text: str) -> list[tuple[str, str]]:
    """Each line's text and its ending (`\\n`, `\\r\\n`, `\\r`, or "" for a last line without)."""
    if "\r" in text:
        parts = _EOL.split(text)
        pairs = list(zip(parts[0::2], parts[1::2], strict=False))
        last = parts[-1]
    else:
        # The common case, and the fast one: a 100k-line record is read by every prune.
        *body, last = text.split("\n")
        pairs = [(line, "\n") for line in body]
    if last:
        pairs.append((last, ""))
    return pairs


def parse_text(text: str) -> list[RecordLine]:
    """Every line of a record file's text, in order; a BOM and any line ending are tolerated.

    A last line without a line ending is read as the harness reads it when it has six fields
    or more (its model and length are whole: a comma follows them); a shorter one may be an
    append half done, and only a whole line is evidence.
    """
    bom = text.startswith(_BOM)
    text = text.removeprefix(_BOM)
    lines: list[RecordLine] = []
    tails: dict[str, _Tail] = {}
    for lineno, (line, ending) in enumerate(split_lines(text), start=1):
        if not line.strip():
            lines.append(RecordLine(lineno, line, None, None, ending))
        elif not ending and line.count(",") < MIN_FIELDS - 1:
            lines.append(RecordLine(lineno, line, None, _TORN, ending))
        else:
            # A BOM before the first line is noted below, by read_line's path.
            plain = read_plain(line, tails) if ending and not (bom and lineno == 1) else None
            if plain is not None:
                lines.append(RecordLine(lineno, line, plain, None, ending))
                continue
            try:
                record, note = read_line(line, whole=bool(ending))
            except NotARecord as exc:
                lines.append(RecordLine(lineno, line, None, str(exc), ending))
            else:
                if bom and lineno == 1:
                    note = f"{note}; {HARNESS_BOM}" if note else HARNESS_BOM
                lines.append(RecordLine(lineno, line, record, note, ending))
    return lines


# A line as oomrec and the harness write it, with nothing for read_line to note: a bare model,
# a length without a leading zero (at most 18 digits: under 2**63), a date or none, a commit, a
# peak, a source without quotes, then oomrec's tag, memory and kind as it writes them. Read in
# two parts: the model and length (_PLAIN_HEAD), then the rest (_PLAIN_TAIL), which a record's
# lines share (a few dates, commits, sources and tags), so each distinct tail is checked once.
_PLAIN_HEAD = re.compile(r'([^\s,"]+),([1-9][0-9]{0,17}|0),')
_PLAIN_TAIL = re.compile(
    r'([0-9]{4}-[0-9]{2}-[0-9]{2}|),([^\s,"]*),([0-9]{0,18}),'
    r'([^,"]*)(?:,([a-z0-9][a-z0-9._-]*|)(?:,([0-9]{0,18})(?:,(guard|fake))?)?)?'
)
# A tail's record fields after the length (date to kind), or None: not the common shape.
_Tail = tuple[str, str, int | None, str, str | None, int | None, str | None] | None
# Distinct tails remembered per parse: past this many (every line's peak its own), the rest are
# checked each time rather than held.
_TAILS_KEPT = 65536


def read_plain(text: str, tails: dict[str, _Tail] | None = None) -> OomRecord | None:
    """The record of a whole line in the common shape, as read_line reads it, without its
    general checks (a million-line record is read in a third of the time); None for any other
    line, which read_line then reads. `tails` remembers the checked tails across the lines of
    one parse. tests/test_records.py holds the two to agree."""
    head = _PLAIN_HEAD.match(text)
    if head is None:
        return None
    rest = text[head.end() :]
    if tails is None:
        tail = _read_tail(rest)
    elif (tail := tails.get(rest, _UNSEEN)) is _UNSEEN:
        tail = _read_tail(rest)
        if len(tails) < _TAILS_KEPT:
            tails[rest] = tail
    if tail is None:
        return None
    model, length = head.groups()
    return OomRecord(sys.intern(model_name(model)), int(length), *tail)


_UNSEEN: _Tail = ("", "", None, "", None, None, None)


def _read_tail(rest: str) -> _Tail:
    m = _PLAIN_TAIL.fullmatch(rest)
    if m is None:
        return None
    day, commit, peak, source, *extra = m.groups()
    if day and not is_date(day):
        return None
    fields = [field for field in extra if field is not None]
    if fields and not _written_by_oomrec(source, fields):
        return None
    tag, mem, kind = (*fields, "", "", "")[:3]
    # As _interned makes them.
    return (
        sys.intern(day),
        sys.intern(commit),
        int(peak) if peak else None,
        sys.intern(source.strip()),
        _tag(tag) if tag else None,
        int(mem) if mem else None,
        sys.intern(kind) if kind else None,
    )


@lru_cache(maxsize=4096)
def is_date(text: str) -> bool:
    """Whether `text` is a record's date: a real calendar day written `YYYY-MM-DD`."""
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


def collapse_warnings(path: Path, lines: Sequence[RecordLine]) -> list[Warning_]:
    """One warning per line with a problem; a line the harness would not honour for the same
    reason as an earlier one is counted into that one's warning (`and N more lines`)."""
    warnings: list[Warning_] = []
    first: dict[str, int] = {}
    more: dict[str, int] = {}
    for line in lines:
        if line.problem is None:
            continue
        if line.problem in HARNESS_NOTES:
            if line.problem in first:
                more[line.problem] = more.get(line.problem, 0) + 1
                continue
            first[line.problem] = len(warnings)
        warnings.append(Warning_(path, line.lineno, line.problem, line.record is not None))
    for problem, n in more.items():
        at = first[problem]
        extra = f" (and {n} more {'line' if n == 1 else 'lines'} like it)"
        warnings[at] = replace(warnings[at], problem=problem + extra)
    if len(warnings) > MAX_LINE_WARNINGS:
        # A file of garbage (the wrong file named, a binary) would print a line per line on
        # every command: the first ones, then where the rest are.
        rest = warnings[MAX_LINE_WARNINGS:]
        summary = (
            f"this line and {len(rest) - 1} more up to line {rest[-1].lineno} are not records "
            "or have notes too, not listed one by one; every line is kept as is"
        )
        warnings = [*warnings[:MAX_LINE_WARNINGS], Warning_(path, rest[0].lineno, summary, True)]
    return warnings


# Warnings about a record file's lines listed one by one, at most (as import-csv lists rows).
MAX_LINE_WARNINGS = 20


# Room for a sweep's records, reserved before its first launch: 64 KiB is ~600 record lines.
RESERVE_BYTES = 64 << 10


# What RecordFile.stamp() tells a file by: its size, mtime (ns) and inode.
Stamp = tuple[int, int, int]


class RecordFile:
    """The record file at `path`: load, append under a lock, rewrite atomically under it.

    Generic over the file it names: the record, or its archive (`<record>.archive`).
    """

    def __init__(self, path: Path, shown_as: str | None = None) -> None:
        self.path = path
        # How warnings and errors name the file; the path as the user gave it, by default.
        self.shown_as = shown_as or str(path)
        # What writes did besides their job (a torn last line moved aside), for the user.
        self.notices: list[str] = []
        # How deep this process is inside `locked()`: append and rewrite inside it re-enter.
        self._held = 0
        # Called once, before this process first takes the lock (the first write creates the
        # lock file, maybe the record): a command's chance to keep them out of `git status`.
        self.before_first_write: Callable[[], None] | None = None
        # Where writes may go (core.confine), checked once before the first write; None: the
        # caller made the folder itself (the demo).
        self.confinement: Confinement | None = None
        self._confined = False
        # This process's last append: the file's stamp() just before it and just after it,
        # both taken under the lock (a reader that read the first knows all but its own lines).
        self.last_append: tuple[Stamp | None, Stamp | None] | None = None

    @property
    def real_path(self) -> Path:
        """The file itself, symlinks resolved: what the lock and the side files belong to."""
        return Path(os.path.realpath(self.path))

    @property
    def lock_path(self) -> Path:
        return _beside(self.real_path, ".lock")

    @property
    def torn_path(self) -> Path:
        """Where a writer moves a last line that lacks its line ending (never deleted)."""
        return _beside(self.real_path, ".torn")

    def side_paths(self) -> list[Path]:
        """The file and the files that belong to it (lock, archive, torn lines), all resolved."""
        real = self.real_path
        return [real, *(_beside(real, suffix) for suffix in SIDE_SUFFIXES)]

    def owns(self, path: Path) -> bool:
        """Whether writing `path` would write over the record or a file that belongs to it
        (through a symlink or a hard link too): what no command's output may be."""
        if Path(os.path.realpath(path)) in self.side_paths():
            return True
        try:
            return os.path.samefile(path, self.path)
        except OSError:
            return False

    def check_confined(self) -> None:
        """Writes stay inside (core.confine): the one check before this file, its lock or its
        torn-line file is created or written; OomrecError (one line) when they would not."""
        if self.confinement is None or self._confined:
            return
        check_writes(self.shown_as, self.path, [self.lock_path, self.torn_path], self.confinement)
        self._confined = True

    def stamp(self) -> Stamp | None:
        """(size, mtime in ns, inode) of the file now, None when there is none (or no stat): one
        stat tells whether it changed since a read (an append grows it, a rewrite replaces its
        inode). Take it before the read, so a write between the two is read again, never missed."""
        try:
            info = os.stat(self.path)
        except OSError:
            return None
        return (info.st_size, info.st_mtime_ns, info.st_ino)

    def load(self) -> Loaded:
        """Read the file; a missing file is an empty record. Unparsed lines come with a warning."""
        with no_cycle_collection():
            return self._parse(self._read_text())

    def read_text(self) -> str:
        """The file's text as it is now ("" when missing); call under `locked()` to act on it."""
        return self._read_text()

    def append_text(self, text: str) -> None:
        """Append `text` (whole lines) all or nothing, fsynced. The caller holds the lock that
        guards this file (the archive is written under the record's `locked()`)."""
        self.check_confined()
        self._check_regular()
        self.real_path.parent.mkdir(parents=True, exist_ok=True)
        fd = self._open_for_write()
        try:
            self._tidy(fd)
            size = os.fstat(fd).st_size
            data = text.encode("utf-8", errors="surrogateescape")
            if _ends_without_newline(fd, size):
                data = b"\n" + data
            self._write_all_or_nothing(fd, data, size)
        finally:
            os.close(fd)

    def replace_text(self, text: str) -> None:
        """Replace the file with `text` atomically (temp file, fsync, rename). The caller holds
        the lock that guards this file."""
        self.check_confined()
        self._check_rewritable()
        self._replace_with(text)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the record's lock across several reads and writes (re-entrant: append and
        rewrite inside it do not take it again). The archive is written under it too."""
        with self._lock():
            yield

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
        """`append`, returning the records written rather than how many.

        All or nothing: a write that fails or comes up short is truncated away again (under the
        lock) and reported as OomrecError.
        """
        pending = list(records)
        if not pending:
            return []
        payload = "".join(format_line(r) + "\n" for r in pending)
        self.check_confined()
        self._check_regular()
        self.real_path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock():
            if not os.path.lexists(self.path):
                # The room reserve() held on the lock file, freed for this first line.
                _release(self.lock_path)
            self.last_append = None
            before = self.stamp()
            fd = self._open_for_write()
            try:
                self._tidy(fd)
                if unless_present is not None:
                    present = self._parse(self._read_text()).records
                    pending = _new_only(pending, present, unless_present)
                    if not pending:
                        return []
                    payload = "".join(format_line(r) + "\n" for r in pending)
                data = payload.encode("utf-8", errors="surrogateescape")
                size = os.fstat(fd).st_size
                # A whitespace-only last line (a torn one was moved aside) must not swallow
                # the first new line.
                if _ends_without_newline(fd, size):
                    data = b"\n" + data
                self._write_all_or_nothing(fd, data, size)
            finally:
                os.close(fd)
            self.last_append = (before, self.stamp())
        return pending

    def reserve(self, nbytes: int = RESERVE_BYTES) -> None:
        """Prove, before a sweep launches its first cell, that an OOM can be recorded: the disk
        blocks for `nbytes` more bytes are allocated to the record beyond its end (fallocate's
        KEEP_SIZE: the file's size and text do not change, and the appends use those blocks).
        With no record yet, they are held by its lock file, and the first append frees them
        under the lock just before it creates the record. OomrecError naming the file when the
        disk has no room (a sweep must not launch a cell whose OOM it cannot record). Where the
        filesystem cannot preallocate, its free space is checked instead."""
        self.check_writable()
        with self._lock():
            holder = self.path if os.path.lexists(self.path) else self.lock_path
            fd = (
                self._open_for_write()
                if holder == self.path
                else os.open(holder, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
            )
            try:
                size = os.fstat(fd).st_size
                failed = _keep_size_fallocate(fd, size, nbytes)
                if failed in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                    stats = os.fstatvfs(fd)
                    failed = errno.ENOSPC if stats.f_bavail * stats.f_frsize < nbytes else 0
            finally:
                os.close(fd)
        if failed:
            raise OomrecError(
                f"{self.shown_as}: no room to record an OOM ({os.strerror(failed)}); free disk "
                "space there or pass --record FILE on another filesystem (no cell was launched)"
            )

    def check_writable(self) -> None:
        """OomrecError unless an append could take the lock and write (nothing is written)."""
        self.check_confined()
        self._check_regular()
        try:
            self.real_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OomrecError(
                f"{self.shown_as}: cannot create its folder ({exc.strerror}); pass --record FILE"
            ) from None
        with self._lock():
            real = self.real_path
            if real.exists():
                os.close(self._open_for_write())
            elif not os.access(real.parent, os.W_OK):
                raise OomrecError(
                    f"{self.shown_as}: cannot create it (folder not writable); pass --record FILE"
                )

    def rewrite(self, transform: Callable[[Loaded], Sequence[RecordLine]]) -> Loaded:
        """Replace the file with the lines `transform` keeps, atomically, under the lock.

        `transform` gets the file as re-read inside the lock (so a line appended a moment ago is
        there) and returns the lines to keep, in the order to write them. Kept lines are written
        back byte for byte with their own line endings (and a leading BOM stays). Returns what
        was read inside the lock.
        """
        self.check_confined()
        self._check_rewritable()
        with self._lock():
            if self.path.exists():
                fd = self._open_for_write()
                try:
                    self._tidy(fd)
                finally:
                    os.close(fd)
            else:
                self._remove_stale_temps()
            raw = self._read_text()
            current = self._parse(raw)
            kept = transform(current)
            bom = _BOM if raw.startswith(_BOM) else ""
            text = bom + "".join(line.text + (line.ending or "\n") for line in kept)
            self._replace_with(text)
        return current

    def _write_all_or_nothing(self, fd: int, data: bytes, size: int) -> None:
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(f"short write, {written} of {len(data)} bytes")
            os.fsync(fd)
        except OSError as exc:
            try:
                os.ftruncate(fd, size)
                os.fsync(fd)
            except OSError:
                pass
            why = exc.strerror or str(exc)
            raise OomrecError(
                f"{self.shown_as}: cannot append ({why}); nothing was added; check free disk "
                "space and permissions"
            ) from None

    def _tidy(self, fd: int) -> None:
        """Under the lock: move a torn last line aside, remove temp files of killed rewrites."""
        self._remove_stale_temps()
        size = os.fstat(fd).st_size
        if not _ends_without_newline(fd, size):
            return
        start = _last_line_start(fd, size)
        tail = os.pread(fd, size - start, start)
        if not tail.decode("utf-8", errors="replace").strip().removeprefix(_BOM):
            return
        commas = tail.count(b",")
        if commas == MIN_FIELDS - 1:
            # The harness's six fields, whole as it reads them (a hand-added line, say; only
            # the source may be cut): the write completes it.
            self.notices.append(
                f"{self.shown_as}: its last line had no line ending; completed it with one"
            )
            return
        self._move_aside(tail)
        if commas > MIN_FIELDS - 1:
            # Its model, length, date, commit and peak are whole (a comma follows each), and
            # the harness honours it; a hardware tag or memory after them may be cut short
            # (`v10` of `v100`), and completed as is it would scope the record wrongly. Kept:
            # its first six fields, as a record of every machine (the safe side).
            head = b",".join(tail.split(b",")[:MIN_FIELDS])
            # The file is open for appending: cut the line away, then append its head.
            os.ftruncate(fd, start)
            os.write(fd, head + b"\n")
            os.fsync(fd)
            self.notices.append(
                f"{self.shown_as}: its last line had no line ending and fields after the sixth "
                f"that may be cut short; kept its first six (the record applies on every "
                f"machine) and moved the line as it was to {self.torn_path}"
            )
            return
        os.ftruncate(fd, start)
        os.fsync(fd)
        self.notices.append(
            f"{self.shown_as}: its last line had no line ending (a write cut short); moved it "
            f"to {self.torn_path}"
        )

    def _move_aside(self, tail: bytes) -> None:
        try:
            torn = os.open(
                self.torn_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644
            )
            try:
                written = os.write(torn, tail + b"\n")
                if written != len(tail) + 1:
                    raise OSError(errno.ENOSPC, f"short write, {written} of {len(tail) + 1} bytes")
                os.fsync(torn)
            finally:
                os.close(torn)
        except OSError as exc:
            # Named as the file that failed: the torn line stays where it was, nothing is lost.
            raise OomrecError(
                f"{_shown_beside(self.shown_as, self.torn_path)}: cannot keep the record's torn "
                f"last line there ({exc.strerror or exc}); free disk space or fix permissions"
            ) from None

    def _remove_stale_temps(self) -> None:
        # Only a rewrite makes these, and it holds the lock we hold: any left is from a killed one.
        real = self.real_path
        prefix = f".{real.name}."
        try:
            names = os.listdir(real.parent)
        except OSError:
            return
        for name in names:
            middle = name[len(prefix) : -len(".tmp")]
            if (
                name.startswith(prefix)
                and name.endswith(".tmp")
                and len(middle) == 8
                and set(middle) <= _TMP_CHARS
            ):
                with suppress(OSError):
                    os.unlink(real.parent / name)

    def _replace_with(self, text: str) -> None:
        try:
            self._write_replacement(text)
        except OSError as exc:
            raise OomrecError(
                f"{self.shown_as}: cannot rewrite it ({exc.strerror or exc}); it is as it was; "
                "check free disk space and permissions"
            ) from None

    def _write_replacement(self, text: str) -> None:
        # Rewrites refuse symlinks, so the path is the file; resolved all the same, so a
        # symlinked folder puts the temp file beside the real file.

        replace_file(self.real_path, text.encode("utf-8", errors="surrogateescape"))

    def _parse(self, text: str) -> Loaded:
        lines = parse_text(text)
        return Loaded(lines, collapse_warnings(Path(self.shown_as), lines))

    def _read_text(self) -> str:
        self._check_regular()
        try:
            # Non-blocking, judged on the open file, read to the limit (core.regular): a FIFO
            # put there after the check cannot hang it, nor a pseudo-file make it unbounded.
            data, _ = read_regular(self.path, MAX_RECORD_BYTES)
        except FileNotFoundError:
            return ""
        except NotRead as why:
            if why.kind:
                raise self._irregular(why.kind) from None
            if why.size:
                raise self._too_large() from None
            raise OomrecError(f"{self.shown_as}: cannot read ({why.error})") from None
        # surrogateescape: bytes that are not UTF-8 survive a rewrite unchanged.
        return data.decode("utf-8", errors="surrogateescape")

    def _open_for_write(self) -> int:
        try:
            fd = os.open(
                self.path,
                os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC,
                0o644,
            )
        except OSError as exc:
            raise OomrecError(
                f"{self.shown_as}: cannot write ({exc.strerror}); fix its permissions or pass "
                "--record FILE"
            ) from None
        try:
            self._check_fd(fd)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _check_regular(self) -> None:
        """Only a regular file (a symlink is followed first) or nothing may be at the path."""
        try:
            mode = os.stat(self.path).st_mode
        except FileNotFoundError:
            return
        except OSError as exc:
            raise OomrecError(f"{self.shown_as}: cannot read ({exc.strerror})") from None
        self._refuse_irregular(mode)

    def _check_fd(self, fd: int) -> None:
        info = os.fstat(fd)
        self._refuse_irregular(info.st_mode)
        # Before an append tidies the last line, which it reads whole: gigabytes without a
        # newline are one line.
        if info.st_size > MAX_RECORD_BYTES:
            raise self._too_large()

    def _too_large(self) -> OomrecError:
        return OomrecError(
            f"{self.shown_as}: holds over {show_bytes(MAX_RECORD_BYTES)}, more than any OOM record "
            "file; point --record at the record file"
        )

    def _refuse_irregular(self, mode: int) -> None:
        if not stat.S_ISREG(mode):
            raise self._irregular(file_kind(mode))

    def _irregular(self, kind: str) -> OomrecError:
        return OomrecError(
            f"{self.shown_as}: is {kind}, not a regular file; point --record at a file"
        )

    def _check_rewritable(self) -> None:
        if self.path.is_symlink():
            raise OomrecError(
                f"{self.shown_as}: is a symlink; refusing to rewrite it (the link would be "
                f"replaced by a file); pass --record {self.real_path}"
            )
        self._check_regular()

    @contextmanager
    def _lock(self) -> Iterator[None]:
        if self._held:
            self._held += 1
            try:
                yield
            finally:
                self._held -= 1
            return
        self.check_confined()
        # Here: only writers pay its import (~1 ms), not every reader's start-up.
        from oomrec.core import lock

        first, self.before_first_write = self.before_first_write, None
        if first is not None:
            first()

        # The real path's lock: a writer through a symlink and one through the target exclude
        # each other.
        lock_path = self.lock_path
        try:
            # Made first, to say at once (naming the file) when it cannot be.
            os.close(os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644))
        except OSError as exc:
            raise OomrecError(
                f"{lock_path}: cannot create the record's lock file there ({exc.strerror}); "
                f"the record's folder {lock_path.parent} must take new files: pass --record "
                "FILE in a writable folder"
            ) from None
        try:
            held = lock.acquire(lock_path, LOCK_TIMEOUT_S)
        except lock.LockTimeout:
            raise OomrecError(
                f"{lock_path}: still locked after {LOCK_TIMEOUT_S:.0f} s; is another "
                "oomrec writing the record? If not, delete the lock file"
            ) from None
        except OSError as exc:
            raise OomrecError(f"{lock_path}: cannot lock ({exc.strerror})") from None
        self._held = 1
        try:
            yield
        finally:
            self._held = 0
            lock.release(held)


def _beside(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def _new_only(
    pending: list[OomRecord],
    present: Iterable[OomRecord],
    key: Callable[[OomRecord], Hashable],
) -> list[OomRecord]:
    seen = {key(r) for r in present}
    fresh = []
    for record in pending:
        k = key(record)
        if k not in seen and not covered(record, seen, key):
            seen.add(k)
            fresh.append(record)
    return fresh


def covered(
    record: OomRecord,
    seen: AbstractSet[Hashable],
    key: Callable[[OomRecord], Hashable] = evidence_key,
) -> bool:
    """Whether the same evidence of unknown memory is among `seen` keys: it applies on hosts of
    any memory, so it covers this record (a record written before memory was recorded, then
    found again with its memory, is not a new OOM)."""
    return record.mem_bytes is not None and key(replace(record, mem_bytes=None)) in seen


def _shown_beside(shown: str, path: Path) -> str:
    """How to name a file beside the record: in the folder the record is shown in."""
    return str(Path(shown).with_name(path.name))


def _release(path: Path) -> None:
    """Free what reserve() preallocated beyond a file's end (truncating frees such blocks)."""
    with suppress(OSError):
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        try:
            os.ftruncate(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)


def _keep_size_fallocate(fd: int, offset: int, length: int) -> int:
    """fallocate(FALLOC_FL_KEEP_SIZE) of `length` bytes from `offset`: 0, or the errno."""
    if sys.platform != "linux":
        return errno.ENOSYS
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    call = libc.fallocate
    call.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]
    call.restype = ctypes.c_int
    keep_size = 1  # FALLOC_FL_KEEP_SIZE, linux/falloc.h
    return 0 if call(fd, keep_size, offset, length) == 0 else ctypes.get_errno()


def _ends_without_newline(fd: int, size: int) -> bool:
    return size > 0 and os.pread(fd, 1, size - 1) not in (b"\n", b"\r")


def _last_line_start(fd: int, size: int) -> int:
    """Where the last line begins: just after the last line ending, else 0."""
    end = size
    while end > 0:
        start = max(0, end - (1 << 16))
        chunk = os.pread(fd, end - start, start)
        cut = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
        if cut >= 0:
            return start + cut + 1
        end = start
    return 0


def check_length(text: str) -> int:
    """A record's prompt length as typed by a user (`typed_length`; 0 is the shortest prompt);
    OomrecError otherwise."""
    stripped = text.strip()
    value = typed_length(stripped)
    if value is not None:
        return value
    if _TYPED_LENGTH.fullmatch(stripped):
        raise OomrecError(
            f"length {shorten(text)} is over the largest a record holds, {2**63 - 1}; give a "
            "token count"
        )
    raise OomrecError(
        f"length {shorten(text)} is not a whole number >= 0; give a token count, e.g. 32768 or "
        "32k (k = 1024)"
    )


def typed_length(text: str) -> int | None:
    """A prompt length as people type it: digits, or digits and `k`/`K` (x1024), below 2**63;
    None else. The one reading of a typed length (core.amounts takes the positive ones)."""
    match = _TYPED_LENGTH.fullmatch(text)
    if match is None:
        return None
    digits, k = match.groups()
    number = bounded_int(digits)
    if number is None:
        return None
    value = number * 1024 if k else number
    return value if value < 2**63 else None


_TYPED_LENGTH = re.compile(r"([0-9]+)([kK]?)")
