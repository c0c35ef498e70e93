"""The import's library: which rows and files count, and what records they make, on real files
in real temp git repositories (no mocks)."""

from __future__ import annotations

import csv
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oomrec.core import schema
from oomrec.core.errors import OomrecError
from oomrec.core.records import OomRecord
from oomrec.csvread import files as csvscan
from oomrec.csvread import rows as rowread
from oomrec.importer import backfill
from oomrec.importer.backfill import ImportReport, find_csv_files, import_csvs
from oomrec.store import gitrepo as gitutil
from tests.gitrepo import Repo
from tests.harness_rows import (
    GB10,
    H14,
    H15,
    H17,
    PEAK_LAYOUT,
    ROCM,
    SPEC_LAYOUT,
    csv_text,
    ok_row,
    row,
)
from tests.profiles import examples


def run_import(
    repo: Repo,
    *paths: str,
    hardware: str | None = None,
    existing: list[OomRecord] | None = None,
    commit_columns: tuple[str, ...] = ("mlxcel_commit", "commit"),
) -> ImportReport:
    return import_csvs(
        [repo.path / p for p in (paths or ("benchmarks",))],
        root=repo.path,
        in_git=True,
        existing=existing or [],
        hardware=hardware,
        commit_columns=commit_columns,
    )


# The row reader's engines: polars, and the csv module, the reference.
PARSERS = (rowread.POLARS, rowread.CSV)
MODEL, TARGET = rowread.ROLES.index("model"), rowread.ROLES.index("target")


def scan(path: Path, parser: str) -> csvscan.ScannedFile:
    """One file scanned and its candidate rows read, as the import reads them."""
    scanned = csvscan.scan_file(str(path))
    backfill._read_candidates([scanned], backfill.DEFAULT_COMMIT_COLUMNS, parser)
    return scanned


@pytest.mark.parametrize("parser", PARSERS)
def test_only_rows_ending_in_exactly_skip_oom_count(tmp_path: Path, parser: str) -> None:
    text = csv_text(
        H15,
        ok_row("a", 512),
        row("a", "SKIP:oom", length="32768"),
        row("b", "SKIP:oom_estimate", length="32768"),
        row("c", "SKIP:oom_backstop", length="32768"),
        row("d", "SKIP:oom_record", length="32768"),
        row("e", "FAIL:bench", length="32768"),
        row("f", "FAIL:timeout", length="32768"),
        row("g", "SKIP:duplicate_of=gemma-3-1b-it-4bit", length="512"),
        row("h", "SKIP:not_a_checkpoint", length="512"),
        row("i", "SKIP:oom", length="8192", gap=True),
        # The token's text inside the quoted prompt, with commas: not a token.
        row("j", "FAIL:bench", length="512", prompt="say SKIP:oom, then stop"),
        row("k", "ok", length="512", prompt="x,SKIP:oom"),
        row("l", "SKIP:oom ", length="2048"),
        # Recorded by the sweep that stopped it, with the limit it ran under; not from a CSV.
        row("m", "SKIP:oom_guard", length="2048"),
    )
    path = tmp_path / "cuda_gb10_2026-07-03.csv"
    path.write_text(text, encoding="utf-8")
    scanned = scan(path, parser)
    assert scanned.skipped is None
    assert scanned.data_rows == 14
    assert [(r.lineno, r.cells[MODEL], r.cells[TARGET]) for r in scanned.oom_rows] == [
        (3, "a", "32768"),
        (11, "i", "8192"),
        (14, "l", "2048"),
    ]
    assert scanned.bad_rows == []


_CELLS = st.sampled_from(
    [
        "",
        " ",
        "m",
        "512",
        "SKIP:oom",
        "SKIP:oom ",
        "SKIP:oom_estimate",
        "FAIL:bench",
        '"SKIP:oom"',
        '"a, SKIP:oom"',
        '"Hello, how are you today?"',
        '"',
        "x SKIP:oom",
        "\t",
    ]
)
_LINES = st.lists(st.lists(_CELLS, max_size=5).map(",".join), max_size=12)


@settings(max_examples=examples(200), deadline=None)
@given(
    lines=_LINES,
    crlf=st.booleans(),
    final_newline=st.booleans(),
    parser=st.sampled_from(sorted(PARSERS)),
)
def test_byte_scan_agrees_with_parsing_every_line(
    lines: list[str], crlf: bool, final_newline: bool, parser: str
) -> None:
    """The prefilter never loses a row a full parse would take, nor takes one it would not."""
    eol = "\r\n" if crlf else "\n"
    text = eol.join(["model,a,b", *lines]) + (eol if final_newline else "")

    def full_parse_says_oom(line: str) -> bool:
        try:
            fields = next(csv.reader([line]), [])
        except csv.Error:
            return False
        return schema.is_true_oom(schema.trailing_token(fields))

    expected = [n for n, line in enumerate(lines, start=2) if full_parse_says_oom(line)]
    non_blank = [n for n, line in enumerate(lines, start=2) if line.strip(" \t")]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.csv"
        path.write_bytes(text.encode())
        scanned = scan(path, parser)
    assert scanned.skipped is None
    # A SKIP:oom row of the wrong width is still one, reported as not fitting its header.
    misfits = [b.lineno for b in scanned.bad_rows if b.reason == schema.ROW_FIELDS]
    assert sorted([r.lineno for r in scanned.oom_rows] + misfits) == expected
    assert scanned.data_rows == (non_blank[-1] - 1 if non_blank else 0)


def test_row_fields_lengths_dates_and_hardware_by_layout(repo: Repo) -> None:
    repo.commit(
        "benchmarks",
        {
            "benchmarks/cuda_gb10_2026-07-03.csv": csv_text(
                H15,
                row("long", "SKIP:oom", length="32768", tokens="32736"),
                row("short-path", "SKIP:oom", length="", tokens="512"),
                row("shortest", "SKIP:oom"),
            ),
            "benchmarks/metal_m1ultra_2026-06-17.csv": csv_text(
                H14, row("old-layout", "SKIP:oom", layout=H14, hardware="Apple_M1_Ultra_128GB")
            ),
            "benchmarks/rocm_strixhalo-gfx1151_2026-09-30.csv": csv_text(
                ROCM,
                row(
                    "rocm-model",
                    "SKIP:oom",
                    layout=ROCM,
                    length="8192",
                    hardware="",
                    commit="1b6a5773-dirty",
                ),
            ),
        },
    )
    report = run_import(repo)
    by_model = {r.model: r for r in report.new}
    assert sorted(by_model) == ["long", "old-layout", "rocm-model", "short-path", "shortest"]
    assert by_model["long"].prompt_target_len == 32768
    assert by_model["short-path"].prompt_target_len == 512
    assert by_model["shortest"].prompt_target_len == 0
    assert by_model["old-layout"].prompt_target_len == 0
    assert by_model["long"].hardware == "gb10"
    assert by_model["old-layout"].hardware == "m1ultra"
    # No hardware cell: the file name's host token.
    assert by_model["rocm-model"].hardware == "strixhalo-gfx1151"
    assert by_model["rocm-model"].commit == "1b6a5773-dirty"
    assert by_model["rocm-model"].source_csv == "benchmarks/rocm_strixhalo-gfx1151_2026-09-30.csv"
    assert {r.date for r in report.new} == {"2026-07-03"}
    assert [(r.model, r.prompt_target_len) for r in report.shortest_prompt] == [
        ("shortest", 0),
        ("old-layout", 0),
    ]
    assert (report.files_read, report.data_rows, report.oom_rows) == (3, 5, 5)


def test_commit_from_column_else_adding_commit_else_unknown(repo: Repo) -> None:
    added = repo.commit(
        "add csvs",
        {
            "benchmarks/cuda_gb10_2026-07-03.csv": csv_text(
                H17,
                row("with-commit", "SKIP:oom", layout=H17, length="512", commit="abc123de"),
                row("empty-commit", "SKIP:oom", layout=H17, length="1024"),
            ),
            "benchmarks/cuda_gb10_2026-07-04.csv": csv_text(
                "model,prompt_target_len,date,hardware,commit",
                f"older-layout,2048,2026-07-04,{GB10},0123abcd,SKIP:oom",
            ),
            "benchmarks/cuda_gb10_2026-07-05.csv": csv_text(
                H15, row("no-commit-column", "SKIP:oom", length="4096")
            ),
        },
    )
    # A later change to a file does not move its adding commit.
    with open(repo.path / "benchmarks/cuda_gb10_2026-07-05.csv", "a", encoding="utf-8") as fh:
        fh.write(ok_row("other", 512) + "\n")
    repo.git("commit", "-q", "-am", "append a row")
    (repo.path / "benchmarks/cuda_gb10_2026-07-06.csv").write_text(
        csv_text(H15, row("untracked", "SKIP:oom", length="8192")), encoding="utf-8"
    )
    report = run_import(repo)
    assert {r.model: r.commit for r in report.new} == {
        "with-commit": "abc123de",
        "empty-commit": added,
        "older-layout": "0123abcd",
        "no-commit-column": added,
        "untracked": "unknown",
    }
    assert report.no_adding_commit == ["benchmarks/cuda_gb10_2026-07-06.csv"]


def test_configured_commit_columns_replace_the_default(repo: Repo) -> None:
    repo.commit(
        "csv",
        {
            "benchmarks/cuda_gb10_2026-07-03.csv": csv_text(
                H17 + ",build_sha",
                row("m", "SKIP:oom", layout=H17, length="512", commit="aaaa1111").replace(
                    ",SKIP:oom", ",bbbb2222,SKIP:oom"
                ),
            )
        },
    )
    report = run_import(repo, commit_columns=("build_sha",))
    assert [r.commit for r in report.new] == ["bbbb2222"]


def test_first_added_is_one_pass_oldest_add_wins_and_renames_count_as_adds(repo: Repo) -> None:
    first = repo.commit("add x", {"benchmarks/x.csv": "a\n", "benchmarks/sub/y.csv": "b\n"})
    repo.git("rm", "-q", "benchmarks/x.csv")
    repo.git("commit", "-q", "-m", "remove x")
    repo.commit("add x again", {"benchmarks/x.csv": "c\n"})
    repo.git("mv", "benchmarks/sub/y.csv", "benchmarks/sub/z.csv")
    repo.git("commit", "-q", "-m", "rename y to z")
    renamed = repo.head()
    found = gitutil.first_added(
        repo.path, ["benchmarks/x.csv", "benchmarks/sub/z.csv", "benchmarks/never.csv"]
    )
    assert {path: added.sha for path, added in found.items()} == {
        "benchmarks/x.csv": first,
        "benchmarks/sub/z.csv": renamed,
    }


def test_dates_from_row_else_adding_commit_else_file_time(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = "model,prompt_target_len,hardware"
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2025-01-02T03:04:05+00:00")
    repo.commit(
        "csv",
        {
            "benchmarks/cuda_gb10_a.csv": csv_text(layout, f"no-date,512,{GB10},SKIP:oom"),
            "benchmarks/cuda_gb10_b.csv": csv_text(
                H15,
                row("bad-date", "SKIP:oom", length="512", date="yesterday"),
                row("timestamp", "SKIP:oom", length="512", date="2026-07-03T23:59:00"),
            ),
        },
    )
    untracked = repo.path / "benchmarks/cuda_gb10_c.csv"
    untracked.write_text(csv_text(layout, f"untracked,512,{GB10},SKIP:oom"), encoding="utf-8")
    stamp = 1_699_963_200  # 2023-11-14 12:00 UTC: the same day from UTC-11 to UTC+11
    os.utime(untracked, (stamp, stamp))
    report = run_import(repo)
    assert {r.model: r.date for r in report.new} == {
        "no-date": "2025-01-02",
        "bad-date": "2025-01-02",
        "timestamp": "2026-07-03",
        "untracked": "2023-11-14",
    }


def test_peak_from_gib_or_bytes_column(repo: Repo) -> None:
    repo.commit(
        "csv",
        {
            "benchmarks/cuda_gb10_gemma_decode_680_2026-07-07.csv": csv_text(
                PEAK_LAYOUT,
                f"gemma-4-12b-it-4bit,8192,64,0,,,,,18.25,,2026-07-06,{GB10},0.3.3,release,"
                "single-pass prefill,SKIP:oom",
                f"gemma-4-12b-it-4bit,16384,64,0,,,,,,,2026-07-06,{GB10},0.3.3,release,x,SKIP:oom",
            ),
            "benchmarks/cuda_gb10_bytes.csv": csv_text(
                "model,prompt_target_len,peak_bytes,date", "m,512,123456789,2026-07-01,SKIP:oom"
            ),
        },
    )
    report = run_import(repo)
    assert [(r.prompt_target_len, r.peak_bytes) for r in report.new] == [
        (512, 123456789),
        (8192, round(18.25 * 1024**3)),
        (16384, None),
    ]
    assert all(r.hardware == "gb10" for r in report.new)


def test_hardware_from_column_filename_or_none_and_the_filter(repo: Repo) -> None:
    repo.commit(
        "csv",
        {
            "benchmarks/cuda_gb10_2026-07-03.csv": csv_text(
                H15,
                row("gb10-row", "SKIP:oom", length="512"),
                row(
                    "v100-row",
                    "SKIP:oom",
                    length="512",
                    hardware="NVIDIA_Tesla_V100-PCIE-32GB_CUDA12.9_755GB",
                ),
                row("named-by-file", "SKIP:oom", length="512", hardware=""),
            ),
            "benchmarks/turbo_kv/2026-06-19_Apple_M1_Ultra_qwen.csv": csv_text(
                H15, row("untagged", "SKIP:oom", length="512", hardware="unknown")
            ),
        },
    )
    everything = run_import(repo)
    assert {r.model: r.hardware for r in everything.new} == {
        "gb10-row": "gb10",
        "v100-row": "v100",
        "named-by-file": "gb10",
        "untagged": None,
    }
    only_v100 = run_import(repo, hardware="v100")
    # An untagged record applies to every machine, so it is kept under any filter.
    assert sorted(r.model for r in only_v100.new) == ["untagged", "v100-row"]
    assert dict(only_v100.other_hardware) == {"gb10": 2}
    nothing_here = run_import(repo, hardware="testhw")
    assert [r.model for r in nothing_here.new] == ["untagged"]
    assert dict(nothing_here.other_hardware) == {"gb10": 2, "v100": 1}


def test_rows_already_recorded_or_repeated_are_not_added_again(repo: Repo) -> None:
    repo.commit(
        "csv",
        {
            "benchmarks/cuda_gb10_2026-07-03.csv": csv_text(
                H17,
                row("m", "SKIP:oom", layout=H17, length="512", commit="aaaa1111"),
                row("m", "SKIP:oom", layout=H17, length="512", commit="aaaa1111"),
                row("m", "SKIP:oom", layout=H17, length="512", commit="bbbb2222"),
            )
        },
    )
    first = run_import(repo)
    assert [(r.commit, r.prompt_target_len) for r in first.new] == [
        ("aaaa1111", 512),
        ("bbbb2222", 512),
    ]
    assert first.already_present == 1
    second = run_import(repo, existing=first.new)
    assert second.new == []
    assert second.already_present == 3
    # The same OOM named from another CSV is the same evidence (records.evidence_key); one seen
    # on other hardware, or on a host with another memory size, is not.
    moved = [
        OomRecord(r.model, r.prompt_target_len, r.date, r.commit, None, "elsewhere.csv", "gb10")
        for r in first.new
    ]
    assert run_import(repo, existing=moved).new == []
    other = [
        OomRecord(r.model, r.prompt_target_len, r.date, r.commit, None, r.source_csv, "v100")
        for r in first.new
    ]
    assert len(run_import(repo, existing=other).new) == 2
    sized = [
        OomRecord(r.model, r.prompt_target_len, r.date, r.commit, None, r.source_csv, "gb10", 1)
        for r in first.new
    ]
    assert len(run_import(repo, existing=sized).new) == 2


def test_files_without_a_model_column_or_not_csv_are_skipped_with_a_reason(
    repo: Repo,
) -> None:
    bench = repo.path / "benchmarks"
    bench.mkdir()
    (bench / "spec.csv").write_text(csv_text(SPEC_LAYOUT, "a,b,1,2,3,4,5,6,ok,2026-09-04"))
    (bench / "kernel_stats.csv").write_text('"Name","Calls","TotalDurationNs"\n"k",1,2\n')
    (bench / "empty.csv").write_bytes(b"")
    (bench / "blank.csv").write_bytes(b"\n \r\n")
    (bench / "comments_only.csv").write_text("# nothing measured\n# yet\n")
    (bench / "binary.csv").write_bytes(bytes(range(256)) * 4)
    (bench / "latin1.csv").write_bytes("mod\xe8le,x\n".encode("latin-1"))
    os.mkfifo(bench / "pipe.csv")
    (bench / "dangling.csv").symlink_to(bench / "gone.csv")
    (bench / "notes.txt").write_text("not a csv name: ignored\n")
    report = run_import(repo)
    assert report.files_read == 0
    assert report.files_skipped == {
        csvscan.NO_MODEL: ["benchmarks/kernel_stats.csv", "benchmarks/spec.csv"],
        csvscan.EMPTY: [
            "benchmarks/blank.csv",
            "benchmarks/comments_only.csv",
            "benchmarks/empty.csv",
        ],
        csvscan.BINARY: ["benchmarks/binary.csv"],
        csvscan.NOT_UTF8: ["benchmarks/latin1.csv"],
        csvscan.NOT_A_FILE: ["benchmarks/pipe.csv (a FIFO)"],
        csvscan.UNREADABLE: ["benchmarks/dangling.csv (No such file or directory)"],
    }


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads chmod-000 files; see dangling link")
def test_a_file_without_read_permission_is_skipped(repo: Repo) -> None:
    bench = repo.path / "benchmarks"
    bench.mkdir()
    locked = bench / "cuda_gb10_locked.csv"
    locked.write_text(csv_text(H15, row("m", "SKIP:oom", length="512")))
    locked.chmod(0)
    (bench / "cuda_gb10_open.csv").write_text(csv_text(H15, row("n", "SKIP:oom", length="512")))
    report = run_import(repo)
    assert report.files_skipped == {
        csvscan.UNREADABLE: ["benchmarks/cuda_gb10_locked.csv (Permission denied)"]
    }
    assert [r.model for r in report.new] == ["n"]


def test_odd_but_valid_files_are_read(repo: Repo) -> None:
    bench = repo.path / "benchmarks"
    (bench / "old.csv").mkdir(parents=True)
    crlf = csv_text(H15, ok_row("a", 512), row("crlf", "SKIP:oom", length="512"))
    (bench / "cuda_gb10_crlf.csv").write_bytes(crlf.replace("\n", "\r\n").encode())
    (bench / "cuda_gb10_bom.csv").write_bytes(
        b"\xef\xbb\xbf" + csv_text(H15, row("bom", "SKIP:oom", length="512")).encode()
    )
    (bench / "cuda_gb10_comment.csv").write_text(
        '# Host: GB10, prompt "Hello, how are you today?"\n#\n'
        + csv_text(H15, row("comment", "SKIP:oom", length="512"))
    )
    (bench / "cuda_gb10_header_only.csv").write_text(H15 + "\n")
    (bench / "cuda_gb10_no_final_newline.csv").write_text(
        H15 + "\n" + ok_row("x", 512) + "\n" + row("last", "SKIP:oom", length="512")
    )
    (bench / "cuda_gb10_trailing_blank_lines.csv").write_text(
        csv_text(H15, ok_row("x", 512)) + "\n\n  \n"
    )
    # A folder named like a CSV is searched like any folder.
    (bench / "old.csv" / "cuda_gb10_inner.csv").write_text(
        csv_text(H15, row("inner", "SKIP:oom", length="512"))
    )
    # Bytes that are not UTF-8 on a row that is not OOM evidence do not matter.
    (bench / "cuda_gb10_latin1_prompt.csv").write_bytes(
        csv_text(H15, row("latin1", "SKIP:oom", length="512")).encode()
        + ok_row("caf\xe9", 512).encode("latin-1")
        + b"\n"
    )
    report = run_import(repo)
    assert report.files_skipped == {}
    assert report.files_read == 8
    assert sorted(r.model for r in report.new) == [
        "bom",
        "comment",
        "crlf",
        "inner",
        "last",
        "latin1",
    ]
    assert report.data_rows == 2 + 1 + 1 + 0 + 2 + 1 + 1 + 2
    sources = {r.model: r.source_csv for r in report.new}
    assert sources["inner"] == "benchmarks/old.csv/cuda_gb10_inner.csv"


def test_unreadable_rows_are_reported_and_the_rest_imported(repo: Repo) -> None:
    good = row("good", "SKIP:oom", length="512")
    text = csv_text(
        H15,
        good,
        # One field missing: the length would be read from the prompt's place.
        row("short", "SKIP:oom", length="512").replace(",32,", ","),
        row("long", "SKIP:oom", length="512").replace(",SKIP:oom", ",x,y,SKIP:oom"),
        row("stray", "SKIP:oom", length="512").replace(",SKIP:oom", ",x,SKIP:oom"),
        row("../up", "SKIP:oom", length="512"),
        row("", "SKIP:oom", length="512"),
        row("nan-length", "SKIP:oom", length="lots"),
        'unbalanced,./m,,,,,,,2026-07-03,x,0.3.3,release,32,"Hello, world,512,SKIP:oom',
    )
    data = text.encode() + "caf\xe9,SKIP:oom\n".encode("latin-1")
    path = repo.path / "benchmarks" / "cuda_gb10_2026-07-03.csv"
    path.parent.mkdir()
    path.write_bytes(data)
    report = run_import(repo)
    assert [r.model for r in report.new] == ["good"]
    source = "benchmarks/cuda_gb10_2026-07-03.csv"
    assert [str(b) for b in report.bad_rows] == [
        f"{source}:3: SKIP:oom row not imported (15 fields where the header names 15 and a "
        "token follows them; its columns cannot be matched)",
        f"{source}:4: SKIP:oom row not imported (18 fields where the header names 15 and a "
        "token follows them; its columns cannot be matched)",
        f"{source}:5: SKIP:oom row not imported (17 fields where the header names 15 and a "
        "token follows them; its columns cannot be matched)",
        f"{source}:6: SKIP:oom row not imported (model name '../up' contains a '..' path part)",
        f"{source}:7: SKIP:oom row not imported (model name is empty)",
        f"{source}:8: SKIP:oom row not imported (length 'lots' is not a number)",
        f"{source}:9: SKIP:oom row not imported (CSV quoting makes its last field other than "
        "SKIP:oom)",
        f"{source}:10: SKIP:oom row not imported (not UTF-8 text)",
    ]
    assert report.oom_rows == 9


def test_a_path_that_does_not_exist_is_an_error_before_anything_is_read(tmp_path: Path) -> None:
    (tmp_path / "real.csv").write_text(H15 + "\n")
    with pytest.raises(OomrecError, match=r"nope\.csv: no such file or folder"):
        find_csv_files([tmp_path / "real.csv", tmp_path / "nope.csv"])


def test_files_named_twice_are_read_once(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text(H15 + "\n")
    files, refused = find_csv_files([tmp_path, tmp_path / "a.csv"])
    assert files == [str((tmp_path / "a.csv").resolve())]
    assert refused == []


def test_outside_git_commits_are_unknown(tmp_path: Path) -> None:
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    (bench / "cuda_gb10_x.csv").write_text(csv_text(H15, row("m", "SKIP:oom", length="512")))
    report = import_csvs([bench], root=tmp_path, in_git=False, existing=[], hardware=None)
    assert [(r.commit, r.source_csv) for r in report.new] == [
        ("unknown", "benchmarks/cuda_gb10_x.csv")
    ]
    assert report.no_adding_commit == ["benchmarks/cuda_gb10_x.csv"]


# Cells as the harness writes them and as hand edits and other tools leave them: quoted prompts
# with commas, empty fields, stray and doubled quotes, CR, BOM, bytes that are not UTF-8. (A NUL
# makes the file binary.)
_FIELD = st.one_of(
    st.sampled_from(
        [
            b"",
            b" ",
            b"gemma-4-31b-it-4bit",
            b"512",
            b"32768",
            b"2026-07-03",
            b"2026-07-03T12:00",
            GB10.encode(),
            b"abc123de-dirty",
            b"18.25",
            b'"Hello, how are you today?"',
            b'""',
            b'"a,b,,c"',
            b'x"y',
            b'"unclosed, quote',
            b'"a""b"',
            b' "spaced"',
            b'"tail" ',
            b"caf\xe9",
            "\ufeffbom".encode(),
            b"a\rb",
            b"bad/name",
        ]
    ),
    st.text(alphabet='ab1,"\r \t\x1f\xa0\ufeffé', max_size=5).map(str.encode),
)
_TOKENS = st.sampled_from(
    [b"SKIP:oom"] * 6 + [b"SKIP:oom ", b'"SKIP:oom"', b"SKIP:oom\r", b"SKIP:oom_estimate"]
)
_LAYOUTS = [H14, H15, H17, "model,prompt_target_len,date,hardware,commit", PEAK_LAYOUT]


@st.composite
def _harness_file(draw: st.DrawFn) -> bytes:
    header = draw(st.sampled_from(_LAYOUTS))
    width = len(header.split(","))
    lines = [header.encode()]
    for _ in range(draw(st.integers(1, 8))):
        # Mostly the width the header names, sometimes one or two off, before the token.
        n = width + draw(st.sampled_from([0, 0, 0, 1, -1, 2]))
        cells = draw(st.lists(_FIELD, min_size=max(n, 0), max_size=max(n, 0)))
        gap = [b""] if draw(st.booleans()) else []
        lines.append(b",".join([*cells, *gap, draw(_TOKENS)]))
    eol = b"\r\n" if draw(st.booleans()) else b"\n"
    bom = b"\xef\xbb\xbf" if draw(st.booleans()) else b""
    return bom + eol.join(lines) + eol


@settings(max_examples=examples(150), deadline=None)
@given(files=st.lists(_harness_file(), min_size=1, max_size=3))
def test_polars_and_the_csv_module_make_the_same_import(files: list[bytes]) -> None:
    """Whichever parser reads the candidate rows, the records and bad rows are the same."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for i, data in enumerate(files):
            (folder / f"cuda_gb10_{i}.csv").write_bytes(data)
        reports = {
            parser: import_csvs(
                [folder],
                root=folder,
                in_git=False,
                existing=[],
                hardware=None,
                engine=parser,
            ).to_dict()
            for parser in PARSERS
        }
    assert reports[rowread.CSV].pop("parsed_with") == rowread.CSV
    assert reports[rowread.POLARS].pop("parsed_with") == rowread.POLARS
    assert reports[rowread.POLARS] == reports[rowread.CSV]


def test_the_polars_path_reads_harness_rows_and_hands_odd_ones_to_the_csv_module(
    tmp_path: Path,
) -> None:
    """A known corpus through the polars path: fields, widths, quoting and bytes it cannot take."""
    (tmp_path / "cuda_gb10_a.csv").write_bytes(
        b"\xef\xbb\xbf"
        + csv_text(
            H17,
            row("plain", "SKIP:oom", layout=H17, length="512", commit="abc123de"),
            row("gap", "SKIP:oom", layout=H17, length="1024", gap=True),
            row("commas", "SKIP:oom", layout=H17, length="2048", prompt="a, b, c"),
            # The harness does not escape inner quotes: only the csv module reads this one.
            row("inner-quote", "SKIP:oom", layout=H17, length="4096", prompt='say "hi" now'),
            row("one-short", "SKIP:oom", layout=H17, length="8192").replace(",32,", ","),
        )
        .replace("\n", "\r\n")
        .encode()
    )
    (tmp_path / "cuda_gb10_b.csv").write_bytes(
        csv_text(H15, row("caf\xe9", "SKIP:oom", length="1")).encode("latin-1")
    )
    report = import_csvs([tmp_path], root=tmp_path, in_git=False, existing=[], hardware=None)
    assert report.parsed_with == rowread.POLARS
    assert [(r.model, r.prompt_target_len, r.commit) for r in report.new] == [
        ("plain", 512, "abc123de"),
        ("gap", 1024, "unknown"),
        ("commas", 2048, "unknown"),
        ("inner-quote", 4096, "unknown"),
    ]
    assert [(b.source, b.lineno, b.problem) for b in report.bad_rows] == [
        (
            "cuda_gb10_a.csv",
            6,
            "17 fields where the header names 17 and a token follows them; its columns cannot "
            "be matched",
        ),
        ("cuda_gb10_b.csv", 2, "not UTF-8 text"),
    ]


def test_a_row_appended_by_a_later_commit_gets_that_commit(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = "model,prompt_target_len,hardware"
    appended = "benchmarks/cuda_gb10_appended.csv"
    once = "benchmarks/cuda_gb10_once.csv"
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2025-01-02T12:00:00+00:00")
    first = repo.commit(
        "first sweep",
        {
            appended: csv_text(layout, f"early-oom,512,{GB10},SKIP:oom", f"fits,512,{GB10}"),
            once: csv_text(layout, f"once,512,{GB10},SKIP:oom"),
        },
    )
    # Late in the evening west of UTC: already the next day in UTC, not where it was committed.
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2025-03-04T23:30:00-05:00")
    with open(repo.path / appended, "a", encoding="utf-8") as fh:
        fh.write(f"late-oom,1024,{GB10},SKIP:oom\n")
    repo.git("commit", "-q", "-am", "second sweep")
    second = repo.head()
    found = gitutil.first_added(repo.path, [appended, once])
    assert found[appended] == gitutil.AddedBy(first, "2025-01-02", changed_later=True)
    # Never changed after it was added: its adding commit is the commit of every row, no blame.
    assert found[once] == gitutil.AddedBy(first, "2025-01-02", changed_later=False)
    report = run_import(repo)
    assert {r.model: (r.commit, r.date) for r in report.new} == {
        "early-oom": (first, "2025-01-02"),
        "late-oom": (second, "2025-03-04"),
        "once": (first, "2025-01-02"),
    }
    assert report.uncommitted_rows == []


def test_a_blame_ignore_revs_file_in_config_changes_no_rows_commit(repo: Repo) -> None:
    """`blame.ignoreRevsFile` naming a missing file (a common global setting, made for another
    checkout): it failed every blame, and the rows of a file changed after it was added got
    `unknown` and a warning that they were not committed."""
    layout = "model,prompt_target_len,hardware"
    source = "benchmarks/cuda_gb10_appended.csv"
    first = repo.commit("first sweep", {source: csv_text(layout, f"early-oom,512,{GB10},SKIP:oom")})
    with open(repo.path / source, "a", encoding="utf-8") as fh:
        fh.write(f"late-oom,1024,{GB10},SKIP:oom\n")
    repo.git("commit", "-q", "-am", "second sweep")
    second = repo.head()
    repo.git("config", "blame.ignoreRevsFile", str(repo.path.parent / "no-such-file"))
    report = run_import(repo)
    assert {r.model: r.commit for r in report.new} == {"early-oom": first, "late-oom": second}
    assert report.uncommitted_rows == []


def test_a_row_not_committed_yet_gets_unknown_and_a_warning(repo: Repo) -> None:
    source = "benchmarks/cuda_gb10_2026-07-03.csv"
    added = repo.commit(
        "csv",
        {
            source: csv_text(
                H17,
                row("committed", "SKIP:oom", layout=H17, length="512"),
                row("own-commit", "SKIP:oom", layout=H17, length="512", commit="abc123de"),
            )
        },
    )
    with open(repo.path / source, "a", encoding="utf-8") as fh:
        fh.write(row("uncommitted", "SKIP:oom", layout=H17, length="1024") + "\n")
        fh.write(row("own-commit-too", "SKIP:oom", layout=H17, length="1024", commit="1234abcd"))
    report = run_import(repo)
    assert {r.model: r.commit for r in report.new} == {
        "committed": added,
        "own-commit": "abc123de",
        "uncommitted": "unknown",
        "own-commit-too": "1234abcd",
    }
    assert report.uncommitted_rows == [(source, 4)]
    assert report.no_adding_commit == []
    assert gitutil.uncommitted(repo.path, [source, "benchmarks/other.csv"]) == {source}


def test_line_commits_blames_only_the_lines_asked_for(repo: Repo) -> None:
    first = repo.commit("one", {"b/x.csv": "h\na\nb\nc\n"})
    (repo.path / "b/x.csv").write_text("h\na\nB\nc\nd\ne\n")
    repo.git("commit", "-q", "-am", "two")
    second = repo.head()
    (repo.path / "b/x.csv").write_text("h\na\nB\nc\nd\ne\nf\n")
    lines = gitutil.line_commits(repo.path, "b/x.csv", [2, 3, 5, 6, 7])
    assert {n: c.sha if c else None for n, c in lines.items()} == {
        2: first,
        3: second,
        5: second,
        6: second,
        7: None,
    }
