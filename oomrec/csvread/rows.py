"""The one reader of CSV rows: lines of harness files to a polars frame of what each row says.

Every view that reads rows (`record import-csv`, `report`, `record stale`) reads them here, so a
row means the same to each: its trailing token and whether it is a row of its header at all
(`schema.judge_fields`, the one rule), and, per role (model, hardware, date, lengths, commit,
peak, prompt), the first non-empty cell of the columns that hold it, stripped.

polars splits the lines of all files of one header in one call. A marker field appended to each
line (`_END`) tells how many fields the line has, which polars does not say (it pads short rows
with empty strings). Where polars cannot be trusted to split a line as the csv module does, the
line is split by the csv module instead, and the same rule judges it:
- a line with a field count the fast rule does not cover (fewer than the header's columns, more
  than two after them, a blank line): a handful per corpus;
- a file polars refuses (a stray quote, text that is not UTF-8) or splits into another number of
  rows than it has lines (a quoted field across lines; the harness writes one row per line);
- input holding the marker itself.
tests/test_csvread.py holds the two engines equal on generated lines.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from oomrec.core import schema
from oomrec.core.schema import BLANKS, ROW_FIELDS, ROW_NOT_UTF8, ROW_QUOTING

if TYPE_CHECKING:
    import polars as pl

# The roles a view may ask for, in the frame's column order. `target` is prompt_target_len,
# `tokens` prompt_tokens (a row's length is the first, else the second: the views tell which).
ROLES = (
    "model",
    "model_path",
    "hardware",
    "date",
    "target",
    "tokens",
    "prompt",
    "commit",
    "peak_bytes",
    "peak_gib",
)
# The columns each role is read from (the first with a value wins); `commit`'s are the caller's.
ROLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "model": ("model",),
    "model_path": ("model_path",),
    "hardware": ("hardware",),
    "date": ("date",),
    "target": ("prompt_target_len",),
    "tokens": ("prompt_tokens",),
    "prompt": ("prompt",),
    "peak_bytes": ("peak_bytes",),
    "peak_gib": ("mlx_peak_gb",),
}
# The frame's other columns: the caller's file index, the line number, the token, the problem
# (None: a row of its header; else why not, as schema.ROW_*) and the token the last field holds
# wherever it stands (of a row with a problem, too).
FILE, LINE, TOKEN, PROBLEM, LAST_TOKEN = "file", "line", "token", "problem", "last_token"

_END = "\x01"
_END_B = b"\x01"
_MARKED_EOL = b",\x01\n"
_BLANK_CLASS = re.escape(BLANKS)
_TOKEN_RE = rf"^(?:SKIP|FAIL):[^{_BLANK_CLASS}]*$"
_SWALLOWED_RE = rf',[{_BLANK_CLASS}]*SKIP:oom[{_BLANK_CLASS}]*[ \t"]*$'
# The csv module's default limit on one field's length, lifted per line for a longer line.
_FIELD_LIMIT = csv.field_size_limit()


class Lines:
    """Lines of one file, to be read as rows of its header, each ending in `\\n` (a CR before it
    is dropped); numbered from `first_line` on, or by `linenos` (one number per line) when they
    are not consecutive. Held with the marker after each line (`marked`; None when the text
    holds the marker itself), made once, as the file is handed over."""

    __slots__ = ("count", "file", "first_line", "header", "linenos", "marked", "raw")

    def __init__(
        self,
        file: int,
        header: tuple[str, ...],
        data: bytes,
        first_line: int = 1,
        linenos: Sequence[int] | None = None,
    ) -> None:
        if data and not data.endswith(b"\n"):
            data += b"\n"
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n")
        self.file, self.header, self.first_line, self.linenos = file, header, first_line, linenos
        self.marked: bytes | None = None
        self.raw: bytes | None = None
        if _END_B in data:
            self.raw = data
            self.count = data.count(b"\n")
        else:
            self.marked = data.replace(b"\n", _MARKED_EOL)
            # Each line break grew by the marker's two bytes.
            self.count = (len(self.marked) - len(data)) // 2

    @property
    def data(self) -> bytes:
        """The lines as given (without the markers)."""
        if self.raw is not None:
            return self.raw
        return (self.marked or b"").replace(_MARKED_EOL, b"\n")


def role_indexes(
    header: tuple[str, ...], commit_columns: Sequence[str], wanted: Collection[str] = ROLES
) -> dict[str, list[int]]:
    """Per role, the header's columns that hold it, in the order they are tried (none for a
    role not `wanted`: its value is then ""). The first column of a name counts, as a reader
    going left to right takes it."""
    index: dict[str, int] = {}
    for i, name in enumerate(header):
        index.setdefault(name, i)
    names = {**ROLE_COLUMNS, "commit": tuple(commit_columns)}
    return {
        role: [index[n] for n in names[role] if n in index] if role in wanted else []
        for role in ROLES
    }


# The engines: polars (with the csv module for what polars cannot be trusted with), and the csv
# module alone, the reference tests hold the other to.
POLARS = "polars"
CSV = "csv"


def read(
    parts: Sequence[Lines],
    commit_columns: Sequence[str],
    engine: str = POLARS,
    wanted: Collection[str] = (*ROLES, LAST_TOKEN),
    *,
    ordered: bool = True,
) -> pl.DataFrame:
    """Every non-blank line of `parts` as one row of the frame: file, line, token, problem, the
    last field's token (if LAST_TOKEN is wanted) and each `wanted` role's value ("" where the
    header has no such column), in the order of `parts` (`ordered=False`: each file's rows in
    line order, the files grouped by header, for a caller that sorts what it keeps)."""
    import polars as pl

    groups: dict[tuple[str, ...], list[Lines]] = {}
    for part in parts:
        if part.count:
            groups.setdefault(part.header, []).append(part)
    if engine == CSV:
        frames = [
            _slow(part, role_indexes(header, commit_columns, wanted), wanted)
            for header, group in groups.items()
            for part in group
        ]
    else:
        frames = [_read_group(group, commit_columns, wanted) for group in groups.values()]
    if not frames:
        return _empty(wanted)
    if len(frames) == 1:
        return frames[0]
    frame = pl.concat(frames, how="vertical")
    # Each group's frame is in line order within each file, and a file is in one group: a
    # stable sort by file alone puts every row in file and line order.
    return frame.sort(FILE, maintain_order=True) if ordered else frame


def _schema(wanted: Collection[str]) -> dict[str, pl.DataType]:
    """The frame's columns: FILE, LINE, TOKEN, PROBLEM, LAST_TOKEN if wanted, the wanted roles."""
    import polars as pl

    return {
        FILE: pl.UInt32(),
        LINE: pl.UInt64(),
        TOKEN: pl.String(),
        PROBLEM: pl.String(),
        **({LAST_TOKEN: pl.String()} if LAST_TOKEN in wanted else {}),
        **{role: pl.String() for role in ROLES if role in wanted},
    }


def _empty(wanted: Collection[str]) -> pl.DataFrame:
    import polars as pl

    return pl.DataFrame(schema=_schema(wanted))


def _read_group(
    group: list[Lines], commit_columns: Sequence[str], wanted: Collection[str]
) -> pl.DataFrame:
    """The rows of files that share one header: in one polars call when it can be trusted, else
    file by file, and any file polars refuses line by line."""
    import polars as pl

    header = group[0].header
    roles = role_indexes(header, commit_columns, wanted)
    fast = _fast(group, roles, wanted)
    if fast is not None:
        return fast
    frames = []
    for part in group:
        one = _fast([part], roles, wanted) if len(group) > 1 else None
        frames.append(one if one is not None else _slow(part, roles, wanted))
    return pl.concat(frames, how="vertical")


def _fast(
    group: list[Lines], roles: dict[str, list[int]], wanted: Collection[str]
) -> pl.DataFrame | None:
    """The rows of these files in one polars call, or None when polars cannot be trusted with
    them (the caller then reads them otherwise)."""
    import polars as pl

    if any(part.marked is None for part in group):
        return None
    width = len(group[0].header)
    names = [f"c{i}" for i in range(width + 3)]
    needed = {0, width - 1, width, width + 1, width + 2}
    for at in roles.values():
        needed.update(at)
    # The first line sets how many fields polars reads: width + 3 empty ones. A line with more
    # is cut, and its marker then nowhere to be seen.
    data = b"".join([b"," * (width + 2) + b"\n", *(part.marked or b"" for part in group)])
    try:
        cells = pl.read_csv(
            data,
            has_header=False,
            new_columns=names,
            columns=sorted(needed),
            infer_schema=False,
            empty_string_is_null=False,
            truncate_ragged_lines=True,
            quote_char='"',
        ).slice(1)
    except Exception:
        return None
    counts = [part.count for part in group]
    if cells.height != sum(counts):
        # A quoted field ran across lines: rows and lines no longer match one to one.
        return None

    def col(i: int) -> pl.Expr:
        return pl.col(names[i])

    def strip(e: pl.Expr) -> pl.Expr:
        return e.str.strip_chars(BLANKS)

    at_w, at_w1, at_w2 = (col(i) == _END for i in (width, width + 1, width + 2))
    known = at_w | at_w1 | at_w2
    if width == 1:
        # A blank line reads as one empty field, a row of a one-column header: told apart by
        # the csv module (a quoted "" is a row, an empty line none).
        known = known & (strip(col(0)) != "")
    last = pl.when(at_w).then(col(width - 1)).when(at_w1).then(col(width)).otherwise(col(width + 1))
    last_text = strip(last)
    token = pl.when(last_text.str.contains(_TOKEN_RE)).then(last_text)
    placed = at_w1 | (at_w2 & (strip(col(width)) == ""))
    problem = (
        pl.when(token.is_not_null())
        .then(pl.when(placed).then(pl.lit(None, pl.String)).otherwise(pl.lit(ROW_FIELDS)))
        .when(last.str.contains(_SWALLOWED_RE))
        .then(pl.lit(ROW_QUOTING))
        .when(at_w)
        .then(pl.lit(None, pl.String))
        .otherwise(pl.lit(ROW_FIELDS))
    )
    values = []
    for role in (r for r in ROLES if r in wanted):
        at = roles[role]
        if not at:
            values.append(pl.lit("").alias(role))
            continue
        if len(at) == 1:
            values.append(strip(col(at[0])).alias(role))
            continue
        firsts = [pl.when(strip(col(i)) != "").then(strip(col(i))) for i in at]
        values.append(pl.coalesce(*firsts, pl.lit("")).alias(role))
    frame = pl.concat([_positions(group, counts), cells], how="horizontal").with_columns(
        known.fill_null(False).alias("_known")
    )
    odd = frame.filter(~pl.col("_known")).select(FILE, LINE)
    query = frame.lazy()
    if odd.height:
        query = query.filter(pl.col("_known"))
    fast_rows = query.select(
        FILE,
        LINE,
        pl.when(placed.fill_null(False)).then(token).alias(TOKEN),
        problem.alias(PROBLEM),
        *([token.alias(LAST_TOKEN)] if LAST_TOKEN in wanted else []),
        *values,
    ).collect()
    del frame, cells
    if odd.height == 0:
        return fast_rows
    # The few lines the fast rule does not cover, by the csv module: found by file and line.
    by_file = {part.file: part for part in group}
    wanted_lines: dict[int, set[int]] = {}
    for file, line in odd.iter_rows():
        wanted_lines.setdefault(file, set()).add(line)
    slow = [_slow(by_file[file], roles, wanted, only=lines) for file, lines in wanted_lines.items()]
    return pl.concat([fast_rows, *slow], how="vertical").sort([FILE, LINE])


def _positions(group: list[Lines], counts: list[int]) -> pl.DataFrame:
    """Each line's file and line number, in order: a column pair as long as the lines."""
    import polars as pl

    if any(part.linenos is not None for part in group):
        # The import's candidates: a few lines, numbered one by one.
        files: list[int] = []
        lines: list[int] = []
        for part, n in zip(group, counts, strict=True):
            files.extend([part.file] * n)
            lines.extend(
                part.linenos
                if part.linenos is not None
                else range(part.first_line, part.first_line + n)
            )
        return pl.DataFrame(
            {FILE: pl.Series(files, dtype=pl.UInt32), LINE: pl.Series(lines, dtype=pl.UInt64)}
        )
    runs = pl.DataFrame(
        {
            FILE: pl.Series([p.file for p in group], dtype=pl.UInt32),
            "n": pl.Series(counts, dtype=pl.UInt64),
            "at": pl.Series([p.first_line for p in group], dtype=pl.UInt64),
        }
    )
    return runs.select(
        pl.col(FILE).repeat_by("n").explode(),
        pl.int_ranges("at", pl.col("at") + pl.col("n"), dtype=pl.UInt64).explode().alias(LINE),
    ).drop_nulls()


def _slow(
    part: Lines,
    roles: dict[str, list[int]],
    wanted: Collection[str],
    only: set[int] | None = None,
) -> pl.DataFrame:
    """The rows of one file split by the csv module (the reference the fast path equals), all
    or `only` those lines."""
    import polars as pl

    width = len(part.header)
    raws = part.data.split(b"\n")[:-1]
    numbers = (
        part.linenos
        if part.linenos is not None
        else range(part.first_line, part.first_line + len(raws))
    )
    shape = _schema(wanted)
    columns: dict[str, list[object]] = {name: [] for name in shape}
    for lineno, raw in zip(numbers, raws, strict=True):
        if only is not None and lineno not in only:
            continue
        row = judge_line(raw, width)
        if row is None:
            continue
        token, problem, fields = row
        columns[FILE].append(part.file)
        columns[LINE].append(lineno)
        columns[TOKEN].append(token)
        columns[PROBLEM].append(problem)
        if LAST_TOKEN in columns:
            columns[LAST_TOKEN].append(schema.trailing_token(fields))
        for role in (r for r in ROLES if r in columns):
            value = ""
            for i in roles[role]:
                if i < len(fields) and (text := fields[i].strip()):
                    value = text
                    break
            columns[role].append(value)
    return pl.DataFrame(columns, schema=shape)


def judge_line(raw: bytes, width: int) -> tuple[str | None, str | None, list[str]] | None:
    """One line by the csv module: (token, problem, fields) as judge_fields says, or None for a
    blank line (no row)."""
    try:
        text = raw.decode("utf-8").removesuffix("\r")
    except UnicodeDecodeError:
        return None, ROW_NOT_UTF8, []
    if not text.strip():
        return None
    try:
        fields = split(text)
    except csv.Error:
        return None, ROW_QUOTING, []
    token, problem = schema.judge_fields(fields, width)
    return token, problem, fields


def split(text: str) -> list[str]:
    """The fields of one line, as the csv module reads it (csv.Error when it cannot)."""
    if len(text) <= _FIELD_LIMIT:
        return next(csv.reader([text]))
    # The csv module refuses a field over its (process-wide) limit: lifted for this line only,
    # which the line's own length bounds.
    csv.field_size_limit(len(text))
    try:
        return next(csv.reader([text]))
    finally:
        csv.field_size_limit(_FIELD_LIMIT)
