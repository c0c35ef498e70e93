"""The report's scan: its polars fold of every row equals a plain Python fold of the csv module's
reading of each line by the one rule (the reference, written here); both row engines fold the
same; and the report and import-csv say the same of every OOM row (machine class, commit,
length, date)."""

from __future__ import annotations

import gc
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from oomrec.core import rowfacts, schema
from oomrec.core.errors import OomrecError
from oomrec.core.machine import file_class, file_host
from oomrec.core.records import UNKNOWN_COMMIT, source_field, source_path
from oomrec.core.rowfacts import Outcome
from oomrec.core.schema import HEADER_14, HEADER_15
from oomrec.csvread import files as csvscan
from oomrec.csvread import rows as rowread
from oomrec.importer.backfill import import_csvs
from oomrec.report.folded import CellRows, Scan, Seen, record_machine, row_machine
from oomrec.report.frontier import build, csv_evidence
from oomrec.report.scan import scan_csvs
from tests.conftest import SHARED_CORPUS
from tests.profiles import examples

HEADER_17 = HEADER_15.replace("mlx_version", "mlxcel_version") + ",mlxcel_commit,mlx_commit"
HEADERS = [
    HEADER_14,
    HEADER_15,
    HEADER_17,
    HEADER_17 + ",mlx_rocm_overlay_commit,hip_version",
    "model,prompt_target_len,date,hardware,commit",
    "model, prompt_tokens ,model,date",
    "model",
]
VALUES = {
    "model": ["m-4bit", " m-4bit", "n-4bit", "", "caf\xe9", "SKIP:oom"],
    "hardware": ["NVIDIA_GB10_CUDA13.0_122GB", "Apple_M1_Ultra_128GB", "", " NVIDIA_GB10_122GB "],
    "date": ["2026-07-03", "2026-07-04", "2026-07-03T10:00", "", "bad", "9999-12-31", "9999-01-01"],
    "prompt_tokens": ["512", "2048", "", " 512", "\xb2", "7"],
    "prompt_target_len": ["512", "2048", "", "32768", "x", "SKIP:oom"],
    "prompt": [
        '"Hello, how are you?"',
        '"(faked via MLXCEL_BENCH_FAKE_OOM)"',
        '""',
        '"a, SKIP:oom"',
        '"SKIP:oom"',
        "plain",
        '"a""b"',
        '"x, y',
        '"1,\xa0\u2028é"',
    ],
    "commit": ["abc1234", "", " def5678 ", "c0ffee-dirty", " SKIP:oom", "FAIL:bench"],
}
OTHER = ["", "1.5", "0.7.0", "release", "x y", "9a795735", "SKIP:oom_guard"]
TAILS = [
    "",
    "",
    "",
    ",SKIP:oom",
    ",,SKIP:oom",
    ", ,FAIL:bench",
    ",SKIP:oom_estimate",
    ",SKIP:oom_guard",
    ",FAIL:timeout",
    ",junk",
    ",SKIP:oom extra",
    ",,,SKIP:oom",
    ",\xa0SKIP:oom ",
    ",SKIP:oom,",
]
JUNK = st.one_of(
    st.sampled_from(["", "   ", "#x", "short,row", "\ufeffmodel", "a\x0bb,c", "a\x85b", "a\rb"]),
    st.text(alphabet=',"ab \r\t\x0c\xa0\u2028é:SKIPoom', max_size=30),
)


@st.composite
def row(draw: st.DrawFn, names: list[str]) -> str:
    fields = []
    for name in names:
        key = "commit" if name.endswith("commit") else name.strip()
        fields.append(draw(st.sampled_from(VALUES.get(key, OTHER))))
    return ",".join(fields) + draw(st.sampled_from(TAILS))


@st.composite
def csv_file(draw: st.DrawFn) -> bytes:
    header = draw(st.sampled_from(HEADERS))
    names = header.split(",")
    lines = [header]
    if draw(st.integers(0, 5)) == 0:
        lines.insert(0, draw(st.sampled_from(["# a comment", "", "  "])))
    for _ in range(draw(st.integers(0, 12))):
        lines.append(draw(JUNK) if draw(st.integers(0, 15)) == 0 else draw(row(names)))
    eol = draw(st.sampled_from(["\n"] * 6 + ["\r\n"] * 2 + ["\r"]))
    text = eol.join(lines) + draw(st.sampled_from([eol, "", eol * 2]))
    data = text.encode("utf-8")
    if draw(st.integers(0, 8)) == 0:
        data = data.replace(b"\xc3\xa9", b"\xe9")  # not UTF-8
    bom = b"\xef\xbb\xbf" if draw(st.integers(0, 4)) == 0 else b""
    return bom + data


@st.composite
def alike_files(draw: st.DrawFn) -> list[bytes]:
    """Files of rows that differ only in date, length and token: one cell's rows spread over
    files, as a corpus's are, so runs of files fold the same cells."""
    header = draw(st.sampled_from(HEADERS[:-1]))
    names = header.split(",")
    base = {name: draw(row([name])) for name in names if name.strip() not in VARIED}
    files = []
    for _ in range(draw(st.integers(2, 6))):
        lines = [header]
        for _ in range(draw(st.integers(1, 5))):
            fields = [
                draw(st.sampled_from(VARIED[n.strip()])) if n.strip() in VARIED else base[n]
                for n in names
            ]
            lines.append(",".join(fields) + draw(st.sampled_from(TAILS[:5])))
        files.append(("\n".join(lines) + "\n").encode())
    return files


VARIED = {
    "date": ["2026-07-03", "2026-07-04", "", "9999-12-31", "9999-01-01"],
    "prompt_target_len": ["512", "2048"],
    "prompt_tokens": ["512", "2048"],
    "commit": ["abc1234", "def5678", ""],
}
# Undated rows and the year 9999: an outcome's undated first row stays first against a dated row
# of that year (as CellRows.add keeps it), but such a row of a later run can be the earliest.
EDGE = "model,prompt_target_len,date,hardware,commit\n" + "m,512,{},NVIDIA_GB10_122GB,{}\n" * 3
EARLIEST_FROM_A_LATER_RUN = [
    b"model,prompt_target_len,date,hardware,commit\nm,512,9999-12-31,NVIDIA_GB10_122GB,a\n",
    EDGE.format("", "b", "9999-01-01", "c", "9999-12-31", "d").encode(),
]
UNDATED_FIRST_OF_A_LATER_RUN = [
    b"model,prompt_target_len,date,hardware,commit\nn,512,2026-07-03,NVIDIA_GB10_122GB,a\n",
    EDGE.format("", "b", "9999-01-01", "c", "2026-07-03", "d").encode(),
]
NAMES = ["cuda_gb10_a.csv", "metal_m1ultra_b.csv", "plain.csv", "rocm_strixhalo_c.csv"]
FILES = st.lists(st.tuples(st.sampled_from(NAMES), csv_file()), min_size=1, max_size=5)


def facts(scan: Scan) -> dict:
    """Everything a Scan holds, orders included (the report's JSON follows them)."""
    return {
        "cells": [(k, c.first, c.latest) for k, c in scan.cells.items()],
        "fits": list(scan.fits.items()),
        "targets": scan.targets,
        "counts": (
            scan.files_read,
            scan.files_skipped,
            scan.rows,
            scan.unreadable_rows,
            scan.oom_rows_left_out,
        ),
    }


def oracle(folder: Path, commit_columns: tuple[str, ...]) -> Scan:
    """The scan as its docstrings define it, one row at a time: the reader's rows (csvread.rows,
    whose split tests/test_csvread.py holds to the csv module's), their facts from rowfacts,
    folded in file order in plain Python."""
    out = Scan()
    files, refused = csvscan.find_csv_files([folder])
    scanned = csvscan.scan_files(files, keep_body=True)
    for bad in (*refused, *scanned):
        if bad.skipped is not None:
            out.files_skipped[bad.skipped] = out.files_skipped.get(bad.skipped, 0) + 1
    read = [f for f in scanned if f.skipped is None]
    out.files_read = len(read)
    root = str(folder.resolve())
    parts = [rowread.Lines(i, f.header, f.body, f.body_line) for i, f in enumerate(read)]
    rows = list(rowread.read(parts, commit_columns).iter_rows(named=True))
    named: dict[int, list[str]] = {}
    for row in rows:
        if row[rowread.PROBLEM] is None:
            named.setdefault(row[rowread.FILE], []).append(row["hardware"])
    unnamed = [file_class(file_host(f.path), named.get(i, ())) for i, f in enumerate(read)]
    for row in rows:
        out.rows += 1
        if row[rowread.PROBLEM] is not None:
            out.unreadable_rows += 1
            continue
        f = read[row[rowread.FILE]]
        outcome = rowfacts.outcome_of(row[rowread.TOKEN])
        model = rowfacts.model_of(row["model"])
        length = rowfacts.length_of(row["target"], row["tokens"])
        if rowfacts.model_problem(model) or length.value is None:
            if row[rowread.TOKEN] == schema.Token.TRUE_OOM and not schema.is_faked(row["prompt"]):
                out.oom_rows_left_out += 1
            continue
        if not length.stated and outcome is not Outcome.OOM:
            continue
        if outcome is Outcome.OOM and schema.is_faked(row["prompt"]):
            continue
        machine = row_machine(row["hardware"], file_host(f.path), unnamed[row[rowread.FILE]])
        day = rowfacts.date_of(row["date"])
        commit = rowfacts.commit_of(row["commit"])[0] or UNKNOWN_COMMIT
        source = source_field(source_path(f.path, root, resolved=True))
        seen = Seen(f"{source}:{row[rowread.LINE]}", day, commit)
        rows = out.cells.setdefault((model, machine, length.value), CellRows())
        if outcome not in rows.latest:
            rows.first[outcome] = rows.latest[outcome] = seen
        elif day is not None:
            if (rows.latest[outcome].date or "") < day:
                rows.latest[outcome] = seen
            if rows.first[outcome].date is None or day < rows.first[outcome].date:
                rows.first[outcome] = seen
        if length.aimed:
            out.targets.setdefault(machine, set()).add(length.value)
        if outcome is Outcome.RAN and day is not None:
            best = out.fits.get((model, machine, day))
            if best is None or best[0] < length.value:
                out.fits[(model, machine, day)] = (length.value, commit, seen.where)
    return out


def report_json(scan: Scan) -> str:
    return json.dumps(build(scan, []).to_json())


def _write(folder: Path, files: list[tuple[str, bytes]]) -> None:
    for i, (name, data) in enumerate(files):
        (folder / f"{i:02d}{name}").write_bytes(data)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    files=FILES,
    commit_columns=st.sampled_from([("mlxcel_commit", "commit"), ("date",), ()]),
)
def test_the_scan_folds_what_the_rule_says_row_by_row(
    files: list[tuple[str, bytes]], commit_columns: tuple[str, ...]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _write(folder, files)
        fast = scan_csvs([folder], folder, commit_columns)
        expected = oracle(folder, commit_columns)
    # The oracle keeps cells in the order rows first make them; the fold in the order of the
    # first row of each outcome: the same cells, the same facts.
    assert {k: (c.first, c.latest) for k, c in fast.cells.items()} == {
        k: (c.first, c.latest) for k, c in expected.cells.items()
    }
    assert facts(fast)["fits"] == facts(expected)["fits"]
    assert fast.targets == expected.targets
    assert facts(fast)["counts"] == facts(expected)["counts"]
    assert report_json(fast) == report_json(expected)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.one_of(FILES, alike_files().map(lambda fs: [("cuda_gb10_.csv", f) for f in fs])))
@example(files=[("cuda_gb10_.csv", f) for f in EARLIEST_FROM_A_LATER_RUN])
@example(files=[("cuda_gb10_.csv", f) for f in UNDATED_FIRST_OF_A_LATER_RUN])
def test_the_report_and_the_import_say_the_same_of_every_oom_row(
    files: list[tuple[str, bytes]],
) -> None:
    """Every OOM cell the report shows is one import-csv records, with the same machine class,
    commit and length; every record the import makes is an OOM cell of the report."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _write(folder, files)
        scan = scan_csvs([folder], folder, ("commit",))
        imported = import_csvs(
            [folder],
            root=folder,
            in_git=False,
            existing=[],
            hardware=None,
            commit_columns=("commit",),
        )
    shown = {(e.model, e.machine, e.length): e for e in csv_evidence(scan)}
    records = {(r.model, record_machine(r), r.prompt_target_len): r for r in imported.new}
    assert set(records) <= set(shown)
    by_key = {}
    for r in imported.new:
        by_key.setdefault((r.model, record_machine(r), r.prompt_target_len), set()).add(
            (r.commit, r.source_csv)
        )
    for key, e in shown.items():
        if key not in by_key:
            # Only a record the import left out as the same evidence of unknown memory.
            assert any(k[0] == key[0] and k[2] == key[2] and k[1].tag == key[1].tag for k in by_key)
            continue
        # The same evidence seen in several files is one record, named by its first file.
        assert e.seen.commit in {commit for commit, _ in by_key[key]}


def test_the_real_corpus_reads_alike_by_both_engines_and_agrees_with_the_import() -> None:
    if not SHARED_CORPUS.is_dir():
        pytest.skip(f"the real harness corpus is not at {SHARED_CORPUS}")
    folder = SHARED_CORPUS / "benchmarks"
    columns = ("mlxcel_commit", "commit")
    fast = scan_csvs([folder], folder, columns)
    assert facts(fast) == facts(scan_csvs([folder], folder, columns, engine=rowread.CSV))
    assert {k: (c.first, c.latest) for k, c in fast.cells.items()} == {
        k: (c.first, c.latest) for k, c in oracle(folder, columns).cells.items()
    }
    imported = import_csvs([folder], root=folder, in_git=False, existing=[], hardware=None)
    shown = {(e.model, e.machine, e.length) for e in csv_evidence(fast)}
    assert {(r.model, record_machine(r), r.prompt_target_len) for r in imported.new} <= shown
    assert fast.rows == imported.data_rows


def test_the_scan_and_the_build_leave_the_interpreter_as_they_found_it(tmp_path: Path) -> None:
    """The scan and the build run without the cyclic collector, restored after, also when the
    judge fails, whose error reaches the caller as it is."""
    row = 'm-4bit,./m,,,,,,,2026-07-03,GB10,0.4.0,release,32,"Hi, you",2048,,SKIP:oom'
    (tmp_path / "cuda_gb10_a.csv").write_text(f"{HEADER_15}\n{row}\n")
    assert gc.isenabled()
    scan = scan_csvs([tmp_path], tmp_path)
    judged: list[list[tuple[str, int]]] = []

    def judge(records: list) -> list:
        judged.append([(r.model, r.prompt_target_len) for r in records])
        assert not gc.isenabled()
        raise OomrecError("git failed; check the repository")

    with pytest.raises(OomrecError, match="git failed"):
        build(scan, [], judge)
    assert judged == [[("m-4bit", 2048)]]
    assert gc.isenabled()
