"""Fuzzing the import's row paths: random CSV bytes under harness headers, SKIP:oom rows with
hostile fields and file names. No input may raise; the csv module and polars must agree; what
is appended must read back as records, and a rerun must add nothing."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from oomrec.core.records import RecordFile, evidence_key
from oomrec.csvread import rows as rowread
from oomrec.importer.backfill import ImportReport, import_csvs
from tests.harness_rows import GB10, H15, H17, PEAK_LAYOUT
from tests.profiles import examples

LAYOUTS = [
    H15,
    H17,
    PEAK_LAYOUT,
    "model,prompt_target_len,date,hardware,commit,mlx_peak_gb,peak_bytes",
    "model,prompt_tokens",
]
# Over the csv module's default field limit (131,072 characters).
LONG = b'"' + b"a, b " * 26_300 + b'"'
HOSTILE_FIELDS = [
    b"",
    b" ",
    b"gemma-4-31b-it-4bit",
    b"512",
    b"0",
    b"9" * 5000,
    b"0" * 30 + b"7",
    str(2**63).encode(),
    str(2**63 - 1).encode(),
    b"-1",
    b"1e300",
    b"inf",
    b"nan",
    b"-0.5",
    b"18.25",
    b"2026-07-03",
    b"2026-13-45",
    GB10.encode(),
    b"nvidia rtx " + b"9" * 3000,
    b"unknown",
    b"abc123de-dirty",
    b"abc\x01de",
    b"a\tb",
    b"\x7f",
    b"caf\xe9",
    b"\xff\xfe",
    "\ufeffbom".encode(),
    "\u2028sep".encode(),
    "\xa0nbsp\xa0".encode(),
    b'"Hello, how are you today?"',
    b'""',
    b'"a""b"',
    b'x"y',
    b'"unclosed, quote',
    b"a,b",
    b"bad/name",
    b"../up",
    b"a\x00b",
    b"a\rb",
    LONG,
]
FIELD = st.one_of(
    st.sampled_from(HOSTILE_FIELDS),
    st.text(alphabet='ab1.,"\r\t \x00\x01\xa0\ufeff\u2028é', max_size=6).map(
        lambda t: t.encode("utf-8")
    ),
    st.binary(max_size=6),
)
# Fields the polars path reads itself (no quote inside, no CR or NUL): rows of these are where a
# divergence between the parsers would show, not in rows it hands to the csv module anyway.
CLEAN_FIELD = st.sampled_from(
    [f for f in HOSTILE_FIELDS if b"\r" not in f and b"\x00" not in f and b'"' not in f.strip(b'"')]
)
TOKEN = st.sampled_from(
    [b"SKIP:oom"] * 8 + [b"SKIP:oom ", b'"SKIP:oom"', b"SKIP:oom\r", b"SKIP:oom_estimate", b""]
)
NAMES = [
    "plain.csv",
    "cuda_gb10_x.csv",
    "metal_m1ultra_x.csv",
    "tab\tx.csv",
    "new\nline.csv",
    "cr\rx.csv",
    "bad\udcffx.csv",
    " lead.csv",
    "comma,x.csv",
    'quote"x.csv',
    "ü.csv",
]
# A NUL in the first 8,000 bytes makes a file binary: this row pushes later NULs past that.
PADDING = b"pad," + b"p" * 8100 + b",SKIP:oom_estimate"


@st.composite
def harness_file(draw: st.DrawFn) -> bytes:
    header = draw(st.sampled_from(LAYOUTS))
    width = len(header.split(","))
    lines = [header.encode()]
    if draw(st.booleans()):
        lines.append(PADDING)
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.binary(max_size=40)))
            continue
        n = max(width + draw(st.sampled_from([0, 0, 0, 1, -1, 2])), 0)
        clean = draw(st.booleans())
        cells = draw(st.lists(CLEAN_FIELD if clean else FIELD, min_size=n, max_size=n))
        if clean and cells and draw(st.booleans()):
            cells[draw(st.integers(0, n - 1))] = LONG
        gap = [b""] if draw(st.booleans()) else []
        lines.append(b",".join([*cells, *gap, draw(TOKEN)]))
    eol = draw(st.sampled_from([b"\n", b"\r\n", b"\r"]))
    bom = b"\xef\xbb\xbf" if draw(st.booleans()) else b""
    return bom + eol.join(lines) + draw(st.sampled_from([eol, b""]))


FILES = st.lists(st.tuples(st.sampled_from(NAMES), harness_file()), min_size=1, max_size=3)


def write_files(folder: Path, files: list[tuple[str, bytes]]) -> None:
    for i, (name, data) in enumerate(files):
        (folder / f"{i}{name}").write_bytes(data)


def run(folder: Path, existing: list | None = None, engine: str = rowread.CSV) -> ImportReport:
    return import_csvs(
        [folder],
        root=folder,
        in_git=False,
        existing=existing or [],
        hardware=None,
        engine=engine,
    )


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=FILES)
def test_no_input_raises_both_parsers_agree_and_a_rerun_adds_nothing(
    files: list[tuple[str, bytes]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "csv"
        folder.mkdir()
        write_files(folder, files)
        with_csv = run(folder)
        with_polars = run(folder, engine=rowread.POLARS)
        as_csv, as_polars = with_csv.to_dict(), with_polars.to_dict()
        assert as_csv.pop("parsed_with") == rowread.CSV
        as_polars.pop("parsed_with")
        assert as_polars == as_csv

        record = RecordFile(Path(tmp) / "record")
        written = record.append_new(with_csv.new, unless_present=evidence_key)
        assert len(written) == len(with_csv.new)
        loaded = record.load()
        assert loaded.warnings == []
        assert [evidence_key(r) for r in loaded.records] == [evidence_key(r) for r in written]
        again = run(folder, existing=loaded.records)
        assert again.new == []
        assert again.already_present == with_csv.already_present + len(written)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=FILES, json_output=st.booleans())
def test_the_cli_prints_any_import_without_a_traceback(
    files: list[tuple[str, bytes]], json_output: bool
) -> None:
    from oomrec.cli import app

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "csv"
        folder.mkdir()
        write_files(folder, files)
        args = ["record", "import-csv", "--all-hardware", "--record", f"{tmp}/record", str(folder)]
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            result = CliRunner().invoke(app, [*args, *(["--json"] if json_output else [])])
        finally:
            os.chdir(cwd)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_a_long_quoted_field_a_nul_and_any_line_ending_read_alike(
    tmp_path: Path, eol: bytes
) -> None:
    """The cases the two parsers once disagreed on, each pinned down."""
    header = b"model,prompt_target_len,prompt"
    rows = [PADDING, b"long,1," + LONG + b",SKIP:oom", b"nul,2,a\x00b,SKIP:oom", b"ok,3,,SKIP:oom"]
    (tmp_path / "a.csv").write_bytes(eol.join([header, *rows]) + eol)
    reports = {n: run(tmp_path, engine=n) for n in (rowread.POLARS, rowread.CSV)}
    assert reports[rowread.POLARS].to_dict() | {"parsed_with": "-"} == reports[
        rowread.CSV
    ].to_dict() | {"parsed_with": "-"}
    assert [(r.model, r.prompt_target_len) for r in reports[rowread.POLARS].new] == [
        ("long", 1),
        ("nul", 2),
        ("ok", 3),
    ]
