"""The one row reader: polars (with the csv module where polars refuses a file) reads every
well-formed line (RFC 4180: bare fields without quotes, quoted ones with quotes doubled) as the
csv module does, the reference; any line at all without an error, with the same line numbers;
and each line's verdict follows the one rule, schema.judge_fields.

A malformed line (a stray quote) has no right reading: the two may split it differently, and
polars' split is the one every view (import, report, stale) reads."""

from __future__ import annotations

import csv

import polars as pl
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from oomrec.core import schema
from oomrec.csvread import rows as rowread
from tests.profiles import examples

# Headers whose roles stand in different columns (a role in two columns, one in none, a last
# column that is a repeated role, free text or no role): the engine rules the cells of every
# header in one query, so a corpus mixes them.
HEADERS = (
    ("model", "prompt_target_len", "prompt"),
    ("model", "hardware", "date", "prompt", "prompt_target_len", "commit"),
    ("model",),
    ("mlxcel_commit", "model", "date", "commit"),
    ("model", "notes"),
)
COMMITS = ("mlxcel_commit", "commit")
# Cells built from the characters that make splitting hard: commas, quotes, blanks, CRs, the
# token's letters, a NUL, a non-ASCII blank (str.strip strips it, a naive strip does not).
_cell = st.text(alphabet=st.sampled_from('ab, "9:\t\x00\x1c\u3000SKIPom'), max_size=8)
_token = st.sampled_from(["SKIP:oom", "SKIP:oom_estimate", "FAIL:bench", " SKIP:oom ", "x"])


@st.composite
def _line(draw: st.DrawFn, width: int, well_formed: bool = True) -> bytes:
    n = width + draw(st.sampled_from([0, 0, 1, 2, -1, 3]))
    cells = draw(st.lists(_cell, min_size=max(n, 0), max_size=max(n, 0)))
    fields = []
    for c in cells:
        if '"' in c or "," in c or draw(st.booleans()):
            fields.append('"' + c.replace('"', '""') + '"' if well_formed else f'"{c}"')
        else:
            fields.append(c)
    if draw(st.booleans()):
        fields += ([""] if draw(st.booleans()) else []) + [draw(_token)]
    return ",".join(fields).encode()


@st.composite
def _files(draw: st.DrawFn, well_formed: bool = True) -> list[rowread.Lines]:
    parts = []
    for i in range(draw(st.integers(1, 4))):
        header = draw(st.sampled_from(HEADERS))
        lines = draw(st.lists(_line(len(header), well_formed), min_size=1, max_size=8))
        eol = draw(st.sampled_from([b"\n", b"\r\n"]))
        parts.append(rowread.Lines(i, header, eol.join(lines) + eol, first_line=2))
    return parts


def _read(parts: list[rowread.Lines], engine: str) -> list[tuple[object, ...]]:
    return rowread.read(parts, COMMITS, engine).rows()


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=_files())
@example(parts=[rowread.Lines(0, ("model",), b'""\n\n \na\n', 2)])
@example(parts=[rowread.Lines(0, HEADERS[0], b'a,1,"x, SKIP:oom"\na,"1,SKIP:oom\n', 2)])
def test_polars_reads_every_well_formed_line_as_the_csv_module(parts: list[rowread.Lines]) -> None:
    assert _read(parts, rowread.POLARS) == _read(parts, rowread.CSV)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=_files(well_formed=False))
@example(parts=[rowread.Lines(0, HEADERS[1], b',""9",",,,,\n', 2)])
@example(parts=[rowread.Lines(0, HEADERS[0], b'a,1,"say "hi" now",SKIP:oom\nb,"2\nc,3\n', 2)])
def test_any_line_is_read_once_at_its_own_line_number(parts: list[rowread.Lines]) -> None:
    """Malformed quoting: no error, every non-blank line one row at its own line number (a
    quote left open never swallows the lines after it)."""
    fast = rowread.read(parts, ("commit",)).select(rowread.FILE, rowread.LINE).rows()
    assert (
        fast
        == rowread.read(parts, ("commit",), rowread.CSV).select(rowread.FILE, rowread.LINE).rows()
    )


@settings(max_examples=examples(200), deadline=None)
@given(fields=st.lists(_cell, max_size=6), width=st.integers(1, 5))
def test_the_reference_is_the_one_rule(fields: list[str], width: int) -> None:
    """What the csv engine says of a line is judge_fields of the csv module's fields."""
    line = ",".join(f'"{f}"' if '"' in f or "," in f else f for f in fields)
    if not line.strip() or "\r" in line or "\n" in line:
        return
    header = tuple(f"c{i}" for i in range(width))
    (row,) = rowread.read([rowread.Lines(0, header, line.encode() + b"\n")], (), rowread.CSV).rows(
        named=True
    )
    parsed = next(csv.reader([line]))
    token, problem = schema.judge_fields(parsed, width)
    assert (row[rowread.TOKEN], row[rowread.PROBLEM]) == (token, problem)


def test_line_numbers_files_and_roles_survive_a_mixed_corpus() -> None:
    harness = ("model", "date", "prompt", "prompt_target_len", "mlxcel_commit", "commit")
    parts = [
        rowread.Lines(
            0, harness, b'a,2026-07-01,"x, y",512,,c1\n\nb,2026-07-02,"p",1024,m1,c2\n', 2
        ),
        rowread.Lines(1, ("model",), b"z\n", 5),
        rowread.Lines(2, harness, b'c,2026-07-03,"q",2048,,,SKIP:oom\nd,"open\n', 2),
    ]
    got = rowread.read(parts, ("mlxcel_commit", "commit")).select(
        rowread.FILE, rowread.LINE, "model", "target", "commit", rowread.TOKEN, rowread.PROBLEM
    )
    assert got.rows() == [
        (0, 2, "a", "512", "c1", None, None),
        (0, 4, "b", "1024", "m1", None, None),
        (1, 5, "z", "", "", None, None),
        (2, 2, "c", "2048", "", "SKIP:oom", None),
        (2, 3, "d", "", "", None, schema.ROW_FIELDS),
    ]
    assert got.schema[rowread.LINE] == pl.UInt64


def test_a_corpus_of_many_headers_reads_as_the_csv_module() -> None:
    """Forty headers, the roles at other columns in each (one with two commit columns, one
    with none), lines with a token one or two fields after the named ones, and one whose
    quoting polars would split otherwise: the quoting of every small header's lines is checked
    in one query, and their cells ruled in one, each file's rows as the csv module reads them."""
    parts = []
    for i in range(40):
        names = ["model", "prompt_target_len", "date", "hardware", *(f"x{j}" for j in range(i % 7))]
        names += ["mlxcel_commit", "commit"][: i % 3]
        names = names[i % len(names) :] + names[: i % len(names)]
        values = {"model": f"m{i}", "prompt_target_len": str(512 * (i + 1)), "date": "2026-07-01"}
        values |= {"hardware": "gb10", "mlxcel_commit": "", "commit": f"c{i}"}
        row = ",".join(values.get(n, "") for n in names)
        # A quote inside an unquoted field: polars would open a quoted stretch there, the csv
        # module keeps it as text (the line's quoting check sends it to the csv module).
        odd = row.replace(f"m{i}", f'm"{i}', 1)
        lines = [row, f"{row},SKIP:oom", odd, f"{row},,SKIP:oom", f'"{row}"', ""]
        parts.append(rowread.Lines(i, tuple(names), "\n".join(lines).encode() + b"\n", 2))
    fast = rowread.read(parts, COMMITS)
    assert fast.rows() == rowread.read(parts, COMMITS, rowread.CSV).rows()
    assert fast.height == 40 * 5
    # The one quoting check of all small headers says of each line what its own would.
    groups = [[part] for part in parts]
    batched = rowread._plain_of_small(groups)
    assert sorted(batched) == list(range(40))
    for i, part in enumerate(parts):
        alone = rowread._plain_lines(b"-\n" + (part.marked or b""))
        assert batched[i].to_list() == alone.to_list()
        assert alone.to_list() == [True, True, False, True, True, True]
    assert fast.filter(pl.col(rowread.TOKEN) == "SKIP:oom").height == 80


def test_blanks_are_exactly_what_str_strip_strips() -> None:
    """schema.BLANKS is spelled out (computing it slowed every start-up): it must stay the set
    of characters str.isspace() holds for, or the polars engine would strip another set."""
    computed = "".join(chr(c) for c in range(0x110000) if chr(c).isspace())
    assert computed == schema.BLANKS
