"""The one reader of CSV rows: lines of harness files to a polars frame of what each row says.

Every view that reads rows (`record import-csv`, `report`, `record stale`) reads them here, so a
row means the same to each: its trailing token and whether it is a row of its header at all
(`schema.judge_fields`, the one rule), and, per role (model, hardware, date, lengths, commit,
peak, prompt), the first non-empty cell of the columns that hold it, stripped.

polars splits the lines of all files of one header in one call, and the cells of every header
are ruled in one query (a corpus of many headers pays a query's fixed cost once, not once per
header). A marker field appended to each line (`_END`) tells how many fields the line has,
which polars does not say (it pads short rows with empty strings). Where polars cannot be
trusted to split a line as the csv module does, the line is split by the csv module instead,
and the same rule judges it:
- a line with a field count the fast rule does not cover (fewer than the header's columns, more
  than two after them, a blank line), or one it finds of the wrong field count: a handful per
  corpus;
- a file polars refuses (a stray quote, text that is not UTF-8) or splits into another number of
  rows than it has lines (a quoted field across lines; the harness writes one row per line);
- input holding the marker itself.
tests/test_csvread.py holds the two engines equal on generated lines.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, NamedTuple

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
# Roles whose cells are often distinct on every row (a commit, a peak): text columns of the
# frame. The other text columns are categoricals: their cells repeat (see _fast).
_FREE_TEXT = ("commit", "peak_bytes", "peak_gib")


def _role_type(role: str) -> pl.DataType:
    import polars as pl

    return pl.String() if role in _FREE_TEXT else pl.Categorical()


_END = "\x01"
_BLANK_CLASS = re.escape(BLANKS)
# schema.trailing_token's and schema.swallowed_oom's rules as polars regexes.
_TOKEN_RE = rf"^(?:SKIP|FAIL):[^{_BLANK_CLASS}]*$"
_FIELD = r'(?:[^",]*|"(?:[^"]|"")*")'
# A line of plain CSV fields (each unquoted without a quote, or quoted with its quotes
# doubled), then the comma before the marker.
_PLAIN_LINE = rf"^{_FIELD}(?:,{_FIELD})*,$"
_SWALLOWED_RE = rf',[{_BLANK_CLASS}]*SKIP:oom[{_BLANK_CLASS}]*[ \t"]*$'

_END_B = b"\x01"
_MARKED_EOL = b",\x01\n"
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
    line order, the files in no set order, for a caller that sorts what it keeps)."""
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
        frames = _read_groups(list(groups.values()), commit_columns, wanted)
    if not frames:
        return _empty(wanted)
    frame = frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical")
    if not ordered or (len(groups) == 1 and len(frames) == 1):
        return frame
    # Each file's rows are in line order, and a file is in one frame: a stable sort by file
    # alone puts every row in file and line order.
    return frame.sort(FILE, maintain_order=True)


def _schema(wanted: Collection[str]) -> dict[str, pl.DataType]:
    """The frame's columns: FILE, LINE, TOKEN, PROBLEM, LAST_TOKEN if wanted, the wanted roles."""
    import polars as pl

    return {
        FILE: pl.UInt32(),
        LINE: pl.UInt64(),
        TOKEN: pl.Categorical(),
        PROBLEM: pl.Categorical(),
        **({LAST_TOKEN: pl.Categorical()} if LAST_TOKEN in wanted else {}),
        **{role: _role_type(role) for role in ROLES if role in wanted},
    }


def _empty(wanted: Collection[str]) -> pl.DataFrame:
    import polars as pl

    return pl.DataFrame(schema=_schema(wanted))


def _read_groups(
    groups: Sequence[list[Lines]], commit_columns: Sequence[str], wanted: Collection[str]
) -> list[pl.DataFrame]:
    """The rows of every group of files that share a header. Each group's lines are split by
    polars in one call when it can be trusted with them, else file by file, and a file polars
    refuses line by line; the cells of every split are then ruled in one query (a corpus of
    many headers pays the rules' fixed cost once, not once a header)."""
    splits: list[_Split] = []
    frames: list[pl.DataFrame] = []
    checked = _plain_of_small(groups)
    for i, group in enumerate(groups):
        roles = role_indexes(group[0].header, commit_columns, wanted)
        split = _split(group, roles, checked.get(i))
        if split is not None:
            splits.append(split)
            continue
        for part in group:
            one = _split([part], roles) if len(group) > 1 else None
            if one is not None:
                splits.append(one)
            else:
                frames.append(_slow(part, roles, wanted))
    if splits:
        frames.insert(0, _rule(splits, wanted))
    return frames


# A group of lines under this size has its quoting checked with the other small groups' in one
# query, whose fixed cost is most of a small group's check; a larger one with its own split.
_SMALL_GROUP = 1 << 20


def _plain_of_small(groups: Sequence[list[Lines]]) -> dict[int, pl.Series]:
    """_plain_lines of each small group's lines (by index into `groups`), found in one query;
    none when the query cannot be trusted (each group is then checked with its own split)."""
    small = [
        i
        for i, group in enumerate(groups)
        if all(part.marked is not None for part in group)
        and sum(len(part.marked or b"") for part in group) < _SMALL_GROUP
    ]
    if len(small) < 2:
        return {}
    # The first line is dropped, as a split's padding line is.
    data = b"".join([b"-\n", *(part.marked or b"" for i in small for part in groups[i])])
    try:
        flags = _plain_lines(data)
    except Exception:
        return {}
    counts = [sum(part.count for part in groups[i]) for i in small]
    if len(flags) != sum(counts):
        return {}
    out: dict[int, pl.Series] = {}
    at = 0
    for i, n in zip(small, counts, strict=True):
        out[i] = flags.slice(at, n)
        at += n
    return out


class _Split(NamedTuple):
    """The cells of one group's lines as polars split them, in the slots every group shares:
    each role's columns (`_slot`), the last named column and the three after it."""

    cells: pl.DataFrame
    group: list[Lines]
    roles: dict[str, list[int]]


# The slots of a split: the last named column (text, or categorical where it holds a role that
# repeats), then the three after it, where the marker and the token stand.
_LAST_TEXT, _LAST_CAT, _AFTER = "_last_text", "_last_cat", ("_at0", "_at1", "_at2")
_PLAIN, _ONE_COLUMN = "_plain", "_one_column"


def _slot(role: str, j: int) -> str:
    return f"_{role}{j}"


def _split(
    group: list[Lines], roles: dict[str, list[int]], plain: pl.Series | None = None
) -> _Split | None:
    """The lines of these files split by polars in one call, or None when polars cannot be
    trusted with them (the caller then reads them otherwise). `plain`: _plain_lines of their
    lines, if already known."""
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
    # Lines whose quoting polars may split otherwise than the csv module: a quote inside an
    # unquoted field (polars opens a quoted stretch there, the csv module keeps it as text),
    # or a quote left open. Found on each line's raw text (split at the marker, no quoting)
    # by a grammar of plain CSV fields; such lines are few, and go to the csv module.
    if plain is None:
        try:
            plain = _plain_lines(data)
        except Exception:
            return None
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
    del data
    counts = [part.count for part in group]
    if cells.height != sum(counts) or len(plain) != cells.height:
        # A quoted field ran across lines: rows and lines no longer match one to one.
        return None
    free = {i for role in _FREE_TEXT for i in roles[role]}
    repeated = {i for role, at in roles.items() if role not in _FREE_TEXT for i in at} - free
    # Read as text, then made categorical: polars' CSV reader reads broken strings into a
    # categorical from some malformed input that it reads right as text.
    casts = [
        pl.col(names[i]).cast(pl.Categorical)
        for i in sorted(repeated | {width, width + 1, width + 2})
    ]
    # A column two roles read, one of them free text, is text and made categorical for the
    # other: every slot has its role's type.
    slots = [
        pl.col(names[i]).cast(_role_type(role)).alias(_slot(role, j))
        for role, at in roles.items()
        for j, i in enumerate(at)
    ]
    # A last column that is free text (a commit, a column no role reads) stays text: a
    # categorical of values distinct on every row costs more to build than it saves.
    last = pl.col(names[width - 1])
    text, cat = pl.lit(None, pl.String), pl.lit(None, pl.Categorical)
    last_text, last_cat = (text, last) if width - 1 in repeated else (last, cat)
    # One query per split (its fixed cost is most of a small group's), each cast made once.
    slotted = (
        cells.lazy()
        .with_columns(casts)
        .select(
            *slots,
            last_text.alias(_LAST_TEXT),
            last_cat.alias(_LAST_CAT),
            *(pl.col(names[width + k]).alias(name) for k, name in enumerate(_AFTER)),
            pl.lit(plain).alias(_PLAIN),
            pl.lit(width == 1).alias(_ONE_COLUMN),
        )
        .collect()
    )
    return _Split(slotted, group, roles)


def _rule(splits: list[_Split], wanted: Collection[str]) -> pl.DataFrame:
    """The rows of these splits by the fast rule, in one query; the few lines it does not cover
    split again by the csv module.

    Cells a corpus repeats (models, dates, lengths, tokens) are ruled as categoricals, so a text
    rule runs once per distinct value; free text (commits, peaks, a last column that is no
    role) stays text, ruled row by row in polars."""
    import polars as pl

    # Each role takes as many slots as the header with the most columns of it has.
    count = {role: max(len(s.roles[role]) for s in splits) for role in ROLES}
    slots = [_slot(role, j) for role in ROLES for j in range(count[role])]
    repeated = [
        _slot(role, j) for role in ROLES if role not in _FREE_TEXT for j in range(count[role])
    ]
    repeated += [_LAST_CAT, *_AFTER]

    # Each line's file and number, made for every split at once, in the splits' order.
    parts = [part for s in splits for part in s.group]
    positions = _positions(parts)
    # A slot a split lacks (its header has fewer columns of that role) is null there: the
    # diagonal concat fills it with nulls of the type the other splits give it.
    cells = pl.concat([s.cells for s in splits], how="diagonal")
    cells = pl.concat([positions, cells], how="horizontal")
    # The distinct values of each categorical a rule reads, in one pass over the frame.
    ruled = [n for n in repeated if n != _AFTER[2]]
    lists = cells.select(pl.col(n).drop_nulls().unique().cast(pl.String).implode() for n in ruled)
    distinct = {
        n: pl.Series(values, dtype=pl.String) for n, values in zip(ruled, lists.row(0), strict=True)
    }

    def rules(name: str) -> _Rules:
        return _Rules(pl.col(name), distinct.get(name))

    at_w, at_w1, at_w2 = (pl.col(n) == _END for n in _AFTER)
    stripped = {n: rules(n).stripped() for n in slots}
    after = rules(_AFTER[0]).stripped()
    known = at_w | at_w1 | at_w2
    # A blank line reads as one empty field, a row of a one-column header: told apart by the
    # csv module (a quoted "" is a row, an empty line none).
    last_text, last_cat = rules(_LAST_TEXT), rules(_LAST_CAT)
    last_empty = (last_text.stripped() == "") & (last_cat.stripped() == "")
    known = known & (~pl.col(_ONE_COLUMN) | ~last_empty)
    # The last field: the named columns' last, or one or two after it.
    lasts = [rules(n) for n in _AFTER[:2]]

    def of_last(
        rule: Callable[[_Rules], pl.Expr], either: Callable[[pl.Expr, pl.Expr], pl.Expr]
    ) -> pl.Expr:
        """`rule` of the line's last field, wherever the marker says it stands (the named
        columns' last is in one of its two slots, the other null)."""
        return (
            pl.when(at_w)
            .then(either(rule(last_text), rule(last_cat)))
            .when(at_w1)
            .then(rule(lasts[0]))
            .otherwise(rule(lasts[1]))
        )

    token = of_last(_Rules.token, lambda a, b: pl.coalesce(a, b))
    swallowed = of_last(_Rules.swallowed, lambda a, b: a.fill_null(False) | b.fill_null(False))
    placed = at_w1 | (at_w2 & (after == ""))
    none = pl.lit(None, pl.Categorical)
    problem = (
        pl.when(token.is_not_null())
        .then(pl.when(placed).then(none).otherwise(pl.lit(ROW_FIELDS, pl.Categorical)))
        .when(swallowed)
        .then(pl.lit(ROW_QUOTING, pl.Categorical))
        .when(at_w)
        .then(none)
        .otherwise(pl.lit(ROW_FIELDS, pl.Categorical))
    )
    values = []
    for role in (r for r in ROLES if r in wanted):
        dtype = _role_type(role)
        if not count[role]:
            values.append(pl.lit("", dtype).alias(role))
            continue
        if count[role] == 1:
            values.append(stripped[_slot(role, 0)].cast(dtype).alias(role))
            continue
        firsts = [
            pl.when(stripped[_slot(role, j)] != "").then(stripped[_slot(role, j)])
            for j in range(count[role])
        ]
        values.append(pl.coalesce(*firsts, pl.lit("")).cast(dtype).alias(role))
    # A line of the wrong field count is one whose split the csv module must confirm: an
    # unquoted field holding a quote is split otherwise by polars (a handful per corpus).
    trusted = known.fill_null(False) & (problem.is_null() | (problem != ROW_FIELDS))
    # One pass: every line's values and whether the fast rule covers it, the rest then dropped
    # (the rules read each line once, not once to tell and once to take).
    rows = (
        cells.lazy()
        .select(
            FILE,
            LINE,
            pl.when(placed.fill_null(False)).then(token).otherwise(none).alias(TOKEN),
            problem.alias(PROBLEM),
            *([token.alias(LAST_TOKEN)] if LAST_TOKEN in wanted else []),
            *values,
            (trusted & pl.col(_PLAIN)).fill_null(False).alias("_known"),
        )
        .collect()
    )
    del cells
    known_rows = rows.get_column("_known")
    if known_rows.all():
        return rows.drop("_known")
    odd = rows.filter(~known_rows).select(FILE, LINE)
    fast_rows = rows.filter(known_rows).drop("_known")
    del rows
    # The few lines the fast rule does not cover, by the csv module: found by file and line.
    by_file = {part.file: (part, s.roles) for s in splits for part in s.group}
    wanted_lines: dict[int, set[int]] = {}
    for file, line in odd.iter_rows():
        wanted_lines.setdefault(file, set()).add(line)
    slow = [
        _slow(by_file[file][0], by_file[file][1], wanted, only=lines)
        for file, lines in wanted_lines.items()
    ]
    return pl.concat([fast_rows, *slow], how="vertical").sort([FILE, LINE])


def _plain_lines(data: bytes) -> pl.Series:
    """Whether each line of `data` after the first is plain CSV (_PLAIN_LINE), its raw text read
    by polars (split at the marker, no quoting). The harness's lines hold no quote or one quoted
    field (the prompt), told plain by literal searches in one streaming query, which never holds
    the lines' text at once; the grammar, a regex (~0.4 s a million lines), runs on the rest."""
    import polars as pl

    lines = pl.scan_csv(
        data,
        has_header=False,
        separator=_END,
        quote_char=None,
        infer_schema=False,
        truncate_ragged_lines=True,
        new_columns=["t"],
    ).slice(1)
    text = pl.col("t")
    quotes = text.str.count_matches('"', literal=True)
    opens = (
        pl.when(text.str.starts_with('"')).then(0).otherwise(text.str.find(',"', literal=True) + 1)
    )
    closes = text.str.find('",', literal=True)
    simple = ((quotes == 0) | ((quotes == 2) & (opens < closes))).fill_null(False)
    flags = lines.select(simple.alias("simple")).collect(engine="streaming").to_series()
    if flags.all():
        return flags
    # A second read, of the few lines that need the grammar: only their text is kept.
    checked = (
        lines.with_row_index("i")
        .filter(~simple)
        .select("i", text.str.contains(_PLAIN_LINE).fill_null(True).alias("ok"))
        .collect(engine="streaming")
    )
    ok = checked.filter("ok").get_column("i")
    return flags.scatter(ok, True) if len(ok) else flags


def _mapped(column: pl.Expr, values: pl.Series, to: pl.Series) -> pl.Expr:
    """`to` where `column` holds one of `values`, else null."""
    import polars as pl

    if values.is_empty():
        return pl.lit(None, pl.Categorical)
    return column.replace_strict(values, to, default=None, return_dtype=pl.Categorical)


class _Rules:
    """The text rules of one column of cells: per distinct value for a categorical (only the
    values a rule changes are mapped onto the rows), row by row for text."""

    def __init__(self, column: pl.Expr, distinct: pl.Series | None) -> None:
        """`distinct`: the distinct values of a categorical column; None for a text column."""
        self.column = column
        self.distinct = distinct

    def stripped(self) -> pl.Expr:
        """The cell stripped of blanks, "" where empty (polars reads an empty field into a
        categorical as null)."""
        import polars as pl

        if self.distinct is None:
            return self.column.fill_null("").str.strip_chars(BLANKS)
        text = self.distinct.str.strip_chars(BLANKS)
        changed = text != self.distinct
        kept = self.column.fill_null(pl.lit("", pl.Categorical))
        if not changed.any():
            return kept
        return (
            pl.when(self.column.is_in(self.distinct.filter(changed).implode()))
            .then(_mapped(self.column, self.distinct.filter(changed), text.filter(changed)))
            .otherwise(kept)
        )

    def token(self) -> pl.Expr:
        """The cell as a token (schema.trailing_token), else null."""
        import polars as pl

        if self.distinct is None:
            text = self.column.str.strip_chars(BLANKS)
            return pl.when(text.str.contains(_TOKEN_RE)).then(text).cast(pl.Categorical)
        values = self.distinct.str.strip_chars(BLANKS)
        is_token = values.str.contains(_TOKEN_RE)
        return _mapped(self.column, self.distinct.filter(is_token), values.filter(is_token))

    def swallowed(self) -> pl.Expr:
        """Whether the cell ends in a swallowed `,SKIP:oom` (schema.swallowed_oom)."""
        if self.distinct is None:
            return self.column.str.contains(_SWALLOWED_RE).fill_null(False)
        held = self.distinct.filter(self.distinct.str.contains(_SWALLOWED_RE))
        return self.column.is_in(held.implode())


def _positions(parts: list[Lines]) -> pl.DataFrame:
    """Each line's file and line number, in order: a column pair as long as the lines."""
    import polars as pl

    if any(part.linenos is not None for part in parts):
        # The import's candidates: a few lines, numbered one by one.
        files: list[int] = []
        lines: list[int] = []
        for part in parts:
            files.extend([part.file] * part.count)
            lines.extend(
                part.linenos
                if part.linenos is not None
                else range(part.first_line, part.first_line + part.count)
            )
        return pl.DataFrame(
            {FILE: pl.Series(files, dtype=pl.UInt32), LINE: pl.Series(lines, dtype=pl.UInt64)}
        )
    runs = pl.DataFrame(
        {
            FILE: pl.Series([p.file for p in parts], dtype=pl.UInt32),
            "n": pl.Series([p.count for p in parts], dtype=pl.UInt64),
            "at": pl.Series([p.first_line for p in parts], dtype=pl.UInt64),
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
