"""The report's fast path: the rows of a clean harness file read from its bytes in one regex pass.

The report needs a handful of fields of every row (model, hardware, date, lengths, commit, the
token), and splitting 1,000,000 rows into Python strings one by one costs seconds. Here one
compiled pattern per header turns a whole file into one tuple per row, in C: the fields the report
reads, and the rest of the line after the header's columns (`tail`: a token, or fields no column
names). The caller keeps each distinct row once (report.py), so Python code runs per distinct row,
not per row.

Only a clean file takes this path; for any other the caller parses every row on its own, the
reference this path must equal (tests/test_report_scan.py generates files to hold them equal).
Clean means every condition under which a row's fields here are the csv module's fields of that
line as the reference splits it:
- the header is the first line, and the only line breaks are `\n` and `\r\n` (no lone CR, no
  VT, FF, FS, GS, RS, NEL, LS or PS, which `str.splitlines` also breaks at);
- every line after the header is a row: no blank line, at least the header's columns;
- no quote in any field but the `prompt`, which is quoted whole with no quote inside (as the
  harness writes it): a file's quote count must be two per row;
- the last column holds no `SKIP:` or `FAIL:`, so a row with nothing after its columns ran;
- no row is a faked OOM (the prompt `(faked via MLXCEL_BENCH_FAKE_OOM)`), which the reference
  leaves out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from oomrec.core.schema import FAKE_OOM_PROMPT

# Every line break str.splitlines knows besides \n and \r (which are checked apart): in the bytes
# of UTF-8 text, each is one of these substrings.
_OTHER_BREAKS = (b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e")
_FAKE = FAKE_OOM_PROMPT.encode()
_NON_ASCII_BREAKS = (b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9")
# The fields a row's key is made of, in this order, then the tail; the date is apart.
KEY_COLUMNS = ("model", "hardware", "prompt_tokens", "prompt_target_len")
DATE = "date"
PROMPT = "prompt"
# A field that may be a token: the reference then reads the row's outcome from it.
_NO_TOKEN = rb"(?![^,\n]*(?:SKIP|FAIL):)"
_NO_QUOTED_TOKEN = rb'(?![^"]*(?:SKIP|FAIL):)'


@dataclass(frozen=True, slots=True)
class Layout:
    """How to read the rows of one header: `key(row)` is (model, hardware, prompt_tokens,
    prompt_target_len, tail) and `date(row)` the date (b"" for a column the header lacks),
    `commits(row)` the commit columns' field, or fields in the order they are tried (None: the
    header has none)."""

    pattern: re.Pattern[bytes]
    width: int
    quotes: int
    key: Any
    date: Any
    tail: Any
    commits: Any | None


def layout(header: Sequence[str], commit_columns: Sequence[str]) -> Layout | None:
    """The pattern and field getters of a header (names stripped, as the reference reads them).
    None for a one-column header: a blank line would read as a row of one empty field."""
    if len(header) < 2:
        return None
    first: dict[str, int] = {}
    for i, name in enumerate(header):
        first.setdefault(name, i)
    wanted = [first[n] for n in (*KEY_COLUMNS, DATE, *commit_columns) if n in first]
    group_of: dict[int, int] = {}
    parts = []
    last = len(header) - 1
    for i in range(len(header)):
        capture = i in wanted
        if capture:
            group_of[i] = len(group_of)
        if first.get(PROMPT) == i:
            # Possessive (`*+`): a field never gives back what it matched (the byte after it, a
            # quote, comma or line break, cannot be one), so the engine keeps no state to.
            inner = rb'[^"]*+'
            part = rb'"' + (_NO_QUOTED_TOKEN if i == last else b"")
            part += (b"(" + inner + b")" if capture else inner) + rb'"'
        else:
            field = rb"[^,\n]*+" if i == last else rb"[^,]*+"
            part = (_NO_TOKEN if i == last else b"") + (b"(" + field + b")" if capture else field)
        parts.append(part)
    tail = len(group_of)
    # A column the header lacks reads as an empty field (the reference treats both alike): an
    # empty group after the tail stands in for each.
    empty = tail + 1
    absent = 0
    key_groups = []
    for name in (*KEY_COLUMNS, DATE):
        if name in first:
            key_groups.append(group_of[first[name]])
        else:
            key_groups.append(empty + absent)
            absent += 1
    date_group = key_groups.pop()
    pattern = b"^" + b",".join(parts) + rb"([^\n]*+)" + b"()" * absent
    commits = [group_of[first[n]] for n in commit_columns if n in first]
    return Layout(
        pattern=re.compile(pattern, re.MULTILINE),
        width=len(header),
        quotes=2 if PROMPT in first else 0,
        key=itemgetter(*key_groups, tail),
        date=itemgetter(date_group),
        tail=itemgetter(tail),
        # A field for one commit column (the harness's case), a tuple of fields for several.
        commits=itemgetter(*commits) if commits else None,
    )


def clean_lines(data: bytes) -> tuple[bytes, bytes] | None:
    """The first line and the rest (without its trailing line breaks) of a file's bytes (BOM
    removed), `\r\n` read as `\n`; None when some line break other than those is present."""
    if b"\r" in data:
        if data.count(b"\r") != data.count(b"\r\n"):
            return None
        data = data.replace(b"\r\n", b"\n")
    if any(brk in data for brk in _OTHER_BREAKS):
        return None
    if _FAKE in data:
        # A faked OOM's row is no evidence: the reference path leaves it out by its prompt.
        return None
    if not data.isascii() and any(brk in data for brk in _NON_ASCII_BREAKS):
        return None
    head, _, body = data.partition(b"\n")
    return head, body.rstrip(b"\n")


def rows(body: bytes, lay: Layout) -> list[tuple[bytes, ...]] | None:
    """One tuple per line of `body` (the lines after the header), or None when a line is not a
    clean row of this layout (blank, too few fields, a quote where none may be)."""
    if not body:
        return []
    # replace() finds each byte with memchr; bytes.count's one-byte loop is 3x slower.
    lines = len(body) - len(body.replace(b"\n", b"")) + 1
    if len(body) - len(body.replace(b'"', b"")) != lay.quotes * lines:
        return None
    found = lay.pattern.findall(body)
    # Each match is anchored at a line start and runs to its line's end, so as many matches as
    # lines means each line is one row; a match that ran over a line break leaves one short.
    return found if len(found) == lines else None
