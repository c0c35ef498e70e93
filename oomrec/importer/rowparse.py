"""Parsing the candidate lines `csvscan` found: the csv module for a few, polars for many.

Each candidate line becomes an OomRow (the cells of the columns the import reads), an UnreadRow
(a `SKIP:oom` line that does not fit its header) or nothing (its last field is not `SKIP:oom` after
all). Both parsers give the same answer. polars is handed only the lines it reads as the csv
module does (each field bare, or wholly wrapped in quotes with no quote inside; no CR, NUL or
BOM: every harness row), and it only picks out the clean OOM rows among them; every other line
goes to the csv module, whose verdict is the reference.

polars parses faster per row, but importing it costs a fixed time, so it is worth it only from
POLARS_MIN_ROWS candidate lines up. It turns only the columns the import reads into Python
strings, and judges the rows column by column rather than one by one.
"""

from __future__ import annotations

import csv
import os
from bisect import bisect_right
from collections.abc import Callable, Sequence
from functools import lru_cache
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING

from oomrec.core import schema
from oomrec.core.errors import OomrecError
from oomrec.core.schema import Token
from oomrec.importer import csvscan
from oomrec.importer.csvscan import OomRow, ScannedFile, UnreadRow

if TYPE_CHECKING:
    import polars as pl

# Break-even = polars' import cost / the time it saves per candidate row, from the "break-even"
# line of `python benchmarks/perf/bench_import.py` (200,000 and 400,000 candidate rows, 2-core
# dev VM, seven runs): importing polars costs 0.35-0.48 s from process start; the csv module
# takes 5.3-7.4 us a row and polars 3.9-4.2 us, a saving of 1.4-3.3 us: break-even at 113,000
# to 340,000 rows (median 149,000; 170,000 was the median of the first six). Wherever in that
# range the true one lies, the wrong parser costs at most ~0.25 s, so it is not tuned further.
POLARS_MIN_ROWS = 170_000
POLARS_MIN_ROWS_ENV = "OOMREC_POLARS_MIN_ROWS"

CSV = "csv"
POLARS = "polars"

# Where the csv module and polars read a line alike: fields separated by commas, each either
# bare (no quote) or one quoted run with no quote inside. No CR (the csv module refuses one
# outside quotes), no NUL, no BOM (polars drops one that starts its input), no _END.
_BARE = r'[^",\r\x00\x01\x{feff}]*'
_WRAPPED = r'"[^"\r\x00\x01\x{feff}]*"'
_REGULAR = rf"^(?:{_BARE}|{_WRAPPED})(?:,(?:{_BARE}|{_WRAPPED}))*$"
# A field added after every line handed to polars: where it lands tells how many fields the
# line has, which polars (filling short rows with empty strings) does not say.
_END = "\x01"

# The csv module's default limit on one field's length.
_FIELD_LIMIT = csv.field_size_limit()

# Which columns of a header the import reads.
Wanted = Callable[[tuple[str, ...]], tuple[int, ...]]


def polars_min_rows() -> int:
    """From how many candidate lines polars parses them: `$OOMREC_POLARS_MIN_ROWS`, else the
    measured break-even."""
    given = os.environ.get(POLARS_MIN_ROWS_ENV, "").strip()
    if not given:
        return POLARS_MIN_ROWS
    if not (given.isascii() and given.isdigit()):
        raise OomrecError(
            f"${POLARS_MIN_ROWS_ENV}={given!r} is not a whole number >= 0; give a number of "
            "candidate rows (0: always polars) or unset it"
        )
    # More digits than any row count (int() refuses 4,300 of them): never polars.
    return int(given) if len(given) < 19 else 2**63 - 1


def parse_candidates(files: Sequence[ScannedFile], wanted: Wanted, min_polars_rows: int) -> str:
    """Fill in each read file's `oom_rows` and `bad_rows` from its candidate lines, in line order.

    Uses polars when there are at least `min_polars_rows` candidate lines (and any at all), else
    the csv module; returns which (CSV or POLARS).
    """
    read = [f for f in files if f.skipped is None and f.candidate_lines]
    total = sum(len(f.candidate_lines) for f in read)
    if total and total >= min_polars_rows:
        _with_polars(read, wanted)
        return POLARS
    for file in read:
        layout = _Layout.of(file.header, wanted)
        for lineno, raw in zip(file.candidate_linenos, file.candidate_lines, strict=True):
            _add(file, _parse_with_csv(lineno, raw, layout))
    return CSV


class _Layout:
    """A header's width and the columns to keep, with a fast getter for them."""

    __slots__ = ("columns", "take", "width")

    def __init__(self, width: int, columns: tuple[int, ...]) -> None:
        self.width = width
        self.columns = columns
        getter = itemgetter(*columns)
        # itemgetter of one index returns the item, not a 1-tuple.
        self.take: Callable[[Sequence[str]], tuple[str, ...]] = (
            getter if len(columns) > 1 else lambda fields: (getter(fields),)
        )

    @staticmethod
    def of(header: tuple[str, ...], wanted: Wanted) -> _Layout:
        return _layout(len(header), wanted(header))


@lru_cache(maxsize=256)
def _layout(width: int, columns: tuple[int, ...]) -> _Layout:
    return _Layout(width, columns)


def _parse_with_csv(lineno: int, raw: bytes, layout: _Layout) -> OomRow | UnreadRow | None:
    """One line's verdict, read with the csv module: the reference both parsers give."""
    try:
        text = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        return UnreadRow(lineno, csvscan.ROW_NOT_UTF8, "not UTF-8 text")
    try:
        fields = _split(text)
    except csv.Error as exc:
        return UnreadRow(lineno, csvscan.ROW_QUOTING, f"bad CSV quoting ({exc})")
    if not schema.is_true_oom(schema.trailing_token(fields)):
        if text.rstrip(' \t"').rsplit(",", 1)[-1].strip() == Token.TRUE_OOM:
            # The text ends in `,SKIP:oom`, but an open quote (the harness does not escape the
            # prompt) swallowed it into another field.
            return UnreadRow(
                lineno,
                csvscan.ROW_QUOTING,
                "CSV quoting makes its last field other than SKIP:oom",
            )
        return None
    # The token follows the named columns, sometimes after one stray empty field.
    extra = len(fields) - layout.width
    if extra == 1 or (extra == 2 and not fields[-2].strip()):
        return OomRow(lineno, layout.take(fields))
    return UnreadRow(
        lineno,
        csvscan.ROW_FIELDS,
        f"{len(fields)} fields where the header names {layout.width} and a token follows them; "
        "its columns cannot be matched",
    )


def _split(text: str) -> list[str]:
    if len(text) <= _FIELD_LIMIT:
        return next(csv.reader([text]))
    # The csv module refuses a field over its (process-wide) limit, which polars does not have:
    # lift it for this line only, which the line's own length bounds.
    csv.field_size_limit(len(text))
    try:
        return next(csv.reader([text]))
    finally:
        csv.field_size_limit(_FIELD_LIMIT)


def _add(file: ScannedFile, parsed: OomRow | UnreadRow | None) -> None:
    if isinstance(parsed, OomRow):
        file.oom_rows.append(parsed)
    elif parsed is not None:
        file.bad_rows.append(parsed)


def _with_polars(files: list[ScannedFile], wanted: Wanted) -> None:
    # polars costs 0.35-0.4 s to import: only an import with many candidate lines pays it.
    import polars as pl

    # All candidate lines in one frame, in file order; `pos` is a line's place in it.
    layouts: list[_Layout] = []
    layout_of: list[int] = []
    starts: list[int] = []
    raws: list[bytes] = []
    linenos: list[int] = []
    groups: list[int] = []
    ids: dict[tuple[str, ...], int] = {}
    for file in files:
        gid = ids.setdefault(file.header, len(layouts))
        if gid == len(layouts):
            layouts.append(_Layout.of(file.header, wanted))
        layout_of.append(gid)
        starts.append(len(raws))
        raws.extend(file.candidate_lines)
        linenos.extend(file.candidate_linenos)
        groups.extend([gid] * len(file.candidate_lines))

    frame = pl.DataFrame(
        {
            "raw": pl.Series(raws, dtype=pl.Binary),
            "group": pl.Series(groups, dtype=pl.UInt32),
            "pos": pl.Series(range(len(raws)), dtype=pl.UInt32),
            "lineno": pl.Series(linenos, dtype=pl.UInt64),
        }
    )
    # The lines only the csv module reads, in the end: not UTF-8, odd quoting, no clean OOM row.
    rest: list[int] = []
    try:
        frame = _with_text(frame)
    except pl.exceptions.ComputeError:
        # Some line is not UTF-8 text (rare): find which, one by one.
        rest = [pos for pos, raw in enumerate(raws) if not _is_utf8(raw)]
        frame = _with_text(frame.filter(~pl.col("pos").is_in(rest)))
    rest += frame.filter(~pl.col("regular")).get_column("pos").to_list()

    for key, part in frame.filter(pl.col("regular")).partition_by("group", as_dict=True).items():
        gid = int(key[0])
        positions, rows, odd = _clean_oom_rows(part, layouts[gid])
        rest += odd
        # Within a layout the rows come in file order: split them among its files.
        at = 0
        for i, file in enumerate(files):
            if layout_of[i] == gid:
                end = bisect_right(positions, starts[i] + len(file.candidate_lines) - 1, at)
                file.oom_rows.extend(rows[at:end])
                at = end

    mixed: set[int] = set()
    for pos in sorted(rest):
        owner = bisect_right(starts, pos) - 1
        _add(files[owner], _parse_with_csv(linenos[pos], raws[pos], layouts[groups[pos]]))
        mixed.add(owner)
    for owner in mixed:
        files[owner].oom_rows.sort(key=attrgetter("lineno"))


def _with_text(frame: pl.DataFrame) -> pl.DataFrame:
    """The lines as text, without their line break, and whether polars may read them."""
    import polars as pl

    text = pl.col("raw").cast(pl.String).str.strip_chars_end("\r\n")
    return frame.with_columns(text=text).with_columns(regular=pl.col("text").str.contains(_REGULAR))


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _clean_oom_rows(
    part: pl.DataFrame, layout: _Layout
) -> tuple[list[int], list[OomRow], list[int]]:
    """One polars read of the regular lines of one layout: the positions and rows of the clean
    OOM rows (token last, right after the named columns or after one empty field), and the
    positions of the other lines, for the csv module to judge."""
    import polars as pl

    width = layout.width
    # A line holds at most `width + 2` fields worth reading, so it is read as `width + 3`:
    # longer lines are cut, and their end marker is nowhere to be seen. The first line sets how
    # many fields polars reads, so one of that many empty fields goes first.
    names = [f"c{i}" for i in range(width + 3)]
    lines = part.get_column("text").str.join(f",{_END}\n").item()
    data = f"{',' * (width + 2)}\n{lines},{_END}".encode()
    cells = pl.read_csv(
        data,
        has_header=False,
        new_columns=names,
        columns=sorted({*layout.columns, width, width + 1, width + 2}),
        infer_schema=False,
        empty_string_is_null=False,
        truncate_ragged_lines=True,
        quote_char='"',
    ).slice(1)
    # One field after the named ones: the token, then the marker. Two: empty, token, marker.
    first, second, third = (pl.col(names[i]) for i in range(width, width + 3))
    clean = (
        pl.when(second == _END)
        .then(first.str.strip_chars() == Token.TRUE_OOM.value)
        .otherwise(
            (third == _END)
            & (second.str.strip_chars() == Token.TRUE_OOM.value)
            & (first.str.strip_chars() == "")
        )
        .fill_null(False)
    )
    judged = pl.concat([part.select("pos", "lineno"), cells], how="horizontal").with_columns(
        clean=clean
    )
    good = judged.filter(pl.col("clean"))
    rows = list(
        map(
            OomRow,
            good.get_column("lineno").to_list(),
            zip(*(good.get_column(names[i]).to_list() for i in layout.columns), strict=True),
        )
    )
    odd = judged.filter(~pl.col("clean")).get_column("pos").to_list()
    return good.get_column("pos").to_list(), rows, odd
