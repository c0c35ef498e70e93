"""`record import-csv` on hostile input, through the CLI and in real processes: one bad row or
file never stops the import, only regular files are read, and reruns add nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from oomrec.csvread import files as csvscan
from oomrec.csvread import rows as rowread
from oomrec.importer.backfill import import_csvs
from tests.conftest import CliResult
from tests.gitrepo import Repo

Cli = Callable[..., CliResult]
HEADER = b"model,prompt_target_len,date,hardware,commit,mlx_peak_gb,peak_bytes"
SHA = "9bef3f2334c4048d8540aa392ef030c97d4dad2c"
# A guard against a hang, never a timing claim: a normal run takes about a second.
HANG_GUARD_S = 120


def oom_row(
    model: str, length: str = "512", commit: str = SHA, gib: str = "", nbytes: str = ""
) -> bytes:
    return f"{model},{length},2026-07-03,gb10,{commit},{gib},{nbytes},SKIP:oom".encode(
        "utf-8", errors="surrogateescape"
    )


def csv_bytes(*rows: bytes, eol: bytes = b"\n") -> bytes:
    return eol.join([HEADER, *rows]) + eol


def run_json(cwd: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, object]:
    """`oomrec record import-csv --all-hardware --json ARGS` as a real process."""
    done = subprocess.run(
        [sys.executable, "-m", "oomrec", "record", "import-csv", "--all-hardware", "--json", *args],
        cwd=cwd,
        capture_output=True,
        check=False,
        timeout=HANG_GUARD_S,
        env={**os.environ, **(env or {})},
    )
    stderr = done.stderr.decode("utf-8", errors="replace")
    assert done.returncode == 0, stderr
    assert "Traceback" not in stderr
    report: dict[str, object] = json.loads(done.stdout)
    report["stderr"] = stderr
    return report


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A folder (no git) where every file but `good.csv` holds something hostile."""
    folder = tmp_path / "bench"
    folder.mkdir()
    (folder / "good.csv").write_bytes(csv_bytes(oom_row("good", "1024")))
    (folder / "ctrl_commit.csv").write_bytes(csv_bytes(oom_row("ctrl", commit="abc\x01de")))
    (folder / "tab\tname.csv").write_bytes(csv_bytes(oom_row("tabbed")))
    (folder / "new\nline.csv").write_bytes(csv_bytes(oom_row("newline")))
    (folder / "bad\udcffname.csv").write_bytes(csv_bytes(oom_row("latin")))
    (folder / "peaks.csv").write_bytes(
        csv_bytes(
            oom_row("p-1e300", "1", gib="1e300"),
            oom_row("p-inf", "2", gib="inf"),
            oom_row("p-nan", "3", gib="nan"),
            oom_row("p-neg", "4", gib="-1"),
            oom_row("p-long-gib", "5", gib="9" * 5000),
            oom_row("p-long-bytes", "6", nbytes="9" * 5000),
            oom_row("p-max", "7", nbytes=str(2**63 - 1)),
        )
    )
    (folder / "lengths.csv").write_bytes(
        csv_bytes(
            oom_row("l-long", "9" * 5000),
            oom_row("l-2-63", str(2**63)),
            oom_row("l-max", str(2**63 - 1)),
            oom_row("l-zeros", "0" * 5000 + "7"),
        )
    )
    (folder / "long_cells.csv").write_bytes(
        csv_bytes(oom_row("long-commit", commit="f" * 200_000), oom_row("m" * 256))
    )
    (folder / "latin1_row.csv").write_bytes(csv_bytes(oom_row("caf").replace(b"caf", b"caf\xe9")))
    return folder


def test_hostile_rows_and_names_are_reported_and_the_rest_imported_once(
    hostile: Path, tmp_path: Path
) -> None:
    record = tmp_path / "record"
    first = run_json(tmp_path, "--record", str(record), str(hostile))
    added = {(r["model"], r["prompt_target_len"]): r for r in first["records"]}  # type: ignore[attr-defined]
    assert set(added) == {
        ("good", 1024),
        ("ctrl", 512),
        ("tabbed", 512),
        ("newline", 512),
        ("latin", 512),
        *((f"p-{name}", n) for n, name in enumerate(["1e300", "inf", "nan", "neg"], 1)),
        ("p-long-gib", 5),
        ("p-long-bytes", 6),
        ("p-max", 7),
        ("l-max", 2**63 - 1),
        ("l-zeros", 7),
        ("long-commit", 512),
    }
    # Evidence kept, cells it cannot hold escaped or left unknown; never a crash.
    assert added["ctrl", 512]["commit"] == "abc\\x01de"
    # Over the record reader's field limit, and no commit: the record would not read back.
    assert added["long-commit", 512]["commit"] == "unknown"
    assert added["tabbed", 512]["source_csv"] == "bench/tab\\x09name.csv"
    assert added["newline", 512]["source_csv"] == "bench/new\\x0aline.csv"
    assert added["latin", 512]["source_csv"] == "bench/bad\\xffname.csv"
    assert [added[f"p-{n}", i]["peak_bytes"] for i, n in enumerate(["1e300", "inf"], 1)] == [
        None,
        None,
    ]
    assert added["p-long-bytes", 6]["peak_bytes"] is None
    assert added["p-max", 7]["peak_bytes"] == 2**63 - 1
    assert first["rows_skipped"] == {
        "length over 64 bits": 2,
        "model not a directory name": 1,
        "not UTF-8 text": 1,
    }
    problems = {(b["source"], b["line"]): b["problem"] for b in first["bad_rows"]}  # type: ignore[attr-defined]
    assert problems["bench/lengths.csv", 2] == (
        f"length '{'9' * 40}'... (5000 characters) is over {2**63 - 1} (64 bits)"
    )
    stderr = str(first["stderr"])
    assert "bench/ctrl_commit.csv:2: SKIP:oom row imported, but its commit holds control" in stderr
    assert "bench/peaks.csv:2: SKIP:oom row imported, but its peak (GiB '1e300')" in stderr
    assert (
        "bench/lengths.csv:3: SKIP:oom row not imported (length '9223372036854775808' is over"
        in stderr
    )
    # The record reads back whole: every line a record, and a rerun adds nothing.
    lines = record.read_bytes().split(b"\n")
    assert len(lines) == len(added) + 1 and lines[-1] == b""
    again = run_json(tmp_path, "--record", str(record), str(hostile))
    assert (again["added"], again["already_present"]) == (0, len(added))
    assert "not a record" not in str(again["stderr"])
    listed = subprocess.run(
        [sys.executable, "-m", "oomrec", "record", "list", "--record", str(record), "--json"],
        capture_output=True,
        check=True,
        timeout=HANG_GUARD_S,
    )
    assert len(json.loads(listed.stdout)["records"]) == len(added)


def test_the_text_report_counts_skipped_rows_by_reason_and_caps_warnings(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    rows = [oom_row(f"m{i}", "x" * (i + 1)) for i in range(30)]
    (tmp_path / "many.csv").write_bytes(csv_bytes(*rows, oom_row("huge", "9" * 30)))
    result = cli("record", "import-csv", "--all-hardware", "--record", "rec", "many.csv")
    assert result.exit_code == 0, result.stderr
    assert (
        "SKIP:oom rows                     31\n"
        "SKIP:oom rows skipped             31\n"
        "  length not a number             30\n"
        "  length over 64 bits              1\n"
        "records added                      0\n"
    ) in result.stdout
    warnings = result.stderr.splitlines()
    assert len(warnings) == 21
    assert warnings[-1] == (
        "warning: ... and 11 more SKIP:oom rows not imported (--json lists them all)"
    )


def test_only_regular_files_are_read_and_nothing_hangs(tmp_path: Path) -> None:
    folder = tmp_path / "bench"
    folder.mkdir()
    (folder / "good.csv").write_bytes(csv_bytes(oom_row("good")))
    (folder / "zero.csv").symlink_to("/dev/zero")
    (folder / "null.csv").symlink_to("/dev/null")
    os.mkfifo(folder / "fifo.csv")
    (folder / "fifo_link.csv").symlink_to(folder / "fifo.csv")
    (folder / "loop.csv").symlink_to(folder / "loop.csv")
    (folder / "dangling.csv").symlink_to(folder / "gone.csv")
    (folder / "dir_link.csv").symlink_to(tmp_path)
    # A folder named *.csv is searched; a symlinked folder is not (no cycles).
    (folder / "old.csv").mkdir()
    (folder / "old.csv" / "inner.csv").write_bytes(csv_bytes(oom_row("inner")))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "outside.csv").write_bytes(csv_bytes(oom_row("outside")))
    (folder / "linked_folder").symlink_to(elsewhere)
    (folder / "cycle").symlink_to(folder)
    # A symlink to a regular file is read, under its own name; a file reached by two paths is
    # read once, under the path that is not a link.
    (folder / "link.csv").symlink_to(elsewhere / "outside.csv")
    (folder / "a_alias.csv").symlink_to(folder / "good.csv")
    os.link(folder / "good.csv", folder / "z_hard.csv")

    report = run_json(tmp_path, "--record", str(tmp_path / "rec"), "bench")
    assert sorted((r["model"], r["source_csv"]) for r in report["records"]) == [  # type: ignore[attr-defined]
        ("good", "bench/good.csv"),
        ("inner", "bench/old.csv/inner.csv"),
        ("outside", "bench/link.csv"),
    ]
    assert report["files_skipped"] == {
        csvscan.NOT_A_FILE: [
            "bench/dir_link.csv (a directory)",
            "bench/fifo.csv (a FIFO)",
            "bench/fifo_link.csv (a FIFO)",
            "bench/null.csv (a character device)",
            "bench/zero.csv (a character device)",
        ],
        csvscan.UNREADABLE: [
            "bench/dangling.csv (No such file or directory)",
            "bench/loop.csv (Too many levels of symbolic links)",
        ],
        csvscan.SAME_FILE: [
            "bench/a_alias.csv (read as bench/good.csv)",
            "bench/z_hard.csv (read as bench/good.csv)",
        ],
    }


def test_special_files_named_on_the_command_line_are_refused(tmp_path: Path) -> None:
    (tmp_path / "zero.csv").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo.csv")
    report = run_json(tmp_path, "--record", "rec", "zero.csv", "fifo.csv")
    assert report["files_skipped"] == {
        csvscan.NOT_A_FILE: [
            "/dev/zero (a character device)",
            "fifo.csv (a FIFO)",
        ]
    }


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_a_file_without_read_permission_is_skipped_and_the_rest_imported(tmp_path: Path) -> None:
    (tmp_path / "good.csv").write_bytes(csv_bytes(oom_row("good")))
    locked = tmp_path / "locked.csv"
    locked.write_bytes(csv_bytes(oom_row("locked")))
    locked.chmod(0)
    report = run_json(tmp_path, "--record", "rec", ".")
    assert [r["model"] for r in report["records"]] == ["good"]  # type: ignore[attr-defined]
    assert report["files_skipped"] == {csvscan.UNREADABLE: ["locked.csv (Permission denied)"]}


def test_a_tree_deeper_than_the_recursion_limit_is_searched(tmp_path: Path) -> None:
    """A real process whose recursion limit the tree exceeds (a tree deep enough for the default
    limit would be too deep for pytest's own clean-up)."""
    deep = tmp_path
    for _ in range(300):
        deep /= "d"
        deep.mkdir()
    (deep / "x.csv").write_bytes(csv_bytes(oom_row("deep")))
    walk = (
        "import sys; from pathlib import Path; "
        "from oomrec.importer.backfill import find_csv_files; "
        "sys.setrecursionlimit(150); print(len(find_csv_files([Path(sys.argv[1])])[0]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", walk, str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=HANG_GUARD_S,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "1\n", "")


@pytest.mark.parametrize("engine", [rowread.POLARS, rowread.CSV])
def test_cr_only_files_are_many_rows_and_long_quoted_fields_are_read(
    tmp_path: Path, engine: str
) -> None:
    long_prompt = b'"' + b"x, " * 50_000 + b'"'
    header = HEADER + b",prompt"
    rows = [
        oom_row("cr-a", "1").replace(b",SKIP:oom", b"," + long_prompt + b",SKIP:oom"),
        oom_row("cr-b", "2").replace(b",SKIP:oom", b',"",SKIP:oom'),
    ]
    (tmp_path / "cr.csv").write_bytes(b"\r".join([header, *rows]) + b"\r")
    (tmp_path / "mixed.csv").write_bytes(
        header
        + b"\r\n"
        + rows[1].replace(b"cr-b", b"mix-a")
        + b"\r"
        + rows[1].replace(b"cr-b", b"mix-b")
        + b"\n"
    )
    report = import_csvs(
        [tmp_path],
        root=tmp_path,
        in_git=False,
        existing=[],
        hardware=None,
        engine=engine,
    )
    assert report.parsed_with == engine
    assert report.bad_rows == []
    assert report.data_rows == 4
    assert [(r.model, r.source_csv) for r in report.new] == [
        ("cr-a", "cr.csv"),
        ("cr-b", "cr.csv"),
        ("mix-a", "mixed.csv"),
        ("mix-b", "mixed.csv"),
    ]


def test_rows_of_a_cr_only_file_get_a_commit_at_or_after_their_own(
    repo: Repo, tmp_path: Path
) -> None:
    """git counts lines by `\\n`, so a CR-only file is one line to its blame: the rows of such a
    file, changed after it was added, take the commit of its last change, never an earlier one."""
    no_commit = b"model,prompt_target_len,date,hardware"
    first = b"\r".join([no_commit, b"a,1,2026-07-03,gb10,SKIP:oom"]) + b"\r"
    path = repo.path / "bench.csv"
    path.write_bytes(first)
    repo.git("add", "bench.csv")
    repo.git("commit", "-q", "-m", "first row")
    path.write_bytes(first + b"b,2,2026-07-03,gb10,SKIP:oom\r")
    repo.git("commit", "-q", "-am", "second row")
    second = repo.head()
    report = import_csvs(
        [path], root=repo.path, in_git=True, existing=[], hardware=None, engine=rowread.CSV
    )
    assert [(r.model, r.commit) for r in report.new] == [("a", second), ("b", second)]
    assert report.uncommitted_rows == []


def test_a_file_git_cannot_blame_gives_unknown_and_the_rest_is_imported(repo: Repo) -> None:
    """A repository missing an old blob (a damaged clone): the blame of the file that needs it
    fails, its rows get `unknown` (prune keeps them) with a warning, the other files import."""
    header = b"model,prompt_target_len,date,hardware"
    damaged = repo.path / "damaged.csv"
    damaged.write_bytes(header + b"\na,1,2026-07-03,gb10,SKIP:oom\n")
    (repo.path / "fine.csv").write_bytes(csv_bytes(oom_row("fine")))
    repo.git("add", ".")
    repo.git("commit", "-q", "-m", "first rows")
    old_blob = repo.git("rev-parse", "HEAD:damaged.csv")
    with damaged.open("ab") as out:
        out.write(b"b,2,2026-07-03,gb10,SKIP:oom\n")
    repo.git("commit", "-q", "-am", "a later row")
    (repo.path / ".git" / "objects" / old_blob[:2] / old_blob[2:]).unlink()

    report = run_json(repo.path, "--record", "rec", ".")
    assert sorted((r["model"], r["commit"]) for r in report["records"]) == [  # type: ignore[attr-defined]
        ("a", "unknown"),
        ("b", "unknown"),
        ("fine", SHA),
    ]
    assert [b["source"] for b in report["blame_failed"]] == ["damaged.csv"]  # type: ignore[attr-defined]
    assert "warning: damaged.csv: git blame failed (" in str(report["stderr"])


def test_a_sparse_file_larger_than_1_gib_is_skipped_unread(tmp_path: Path) -> None:
    (tmp_path / "good.csv").write_bytes(csv_bytes(oom_row("good")))
    huge = tmp_path / "huge.csv"
    huge.write_bytes(csv_bytes(oom_row("huge")))
    os.truncate(huge, csvscan.MAX_FILE_BYTES + 1)
    report = run_json(tmp_path, "--record", "rec", ".")
    assert [r["model"] for r in report["records"]] == ["good"]  # type: ignore[attr-defined]
    assert report["files_skipped"] == {csvscan.TOO_LARGE: ["huge.csv (1,073,741,825 bytes)"]}


def test_the_same_oom_in_a_copied_csv_is_not_recorded_twice(tmp_path: Path) -> None:
    """One evidence key (model, length, hardware, commit), whichever CSV holds the row."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "run.csv").write_bytes(csv_bytes(oom_row("m"), oom_row("n", "1024")))
    first = run_json(tmp_path, "--record", "rec", "a")
    assert first["added"] == 2
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "copy.csv").write_bytes(csv_bytes(oom_row("m"), oom_row("m", "4096")))
    second = run_json(tmp_path, "--record", "rec", "b")
    assert (second["added"], second["already_present"]) == (1, 1)
    assert len((tmp_path / "rec").read_text().splitlines()) == 3


@pytest.mark.parametrize("cell", ["9bef3f2, how are you", 'ab"cd', '"9bef3f2"'])
def test_a_commit_cell_with_a_comma_or_quote_is_recorded_unknown_and_reads_back(
    tmp_path: Path, cell: str
) -> None:
    """The harness splits a record line at every comma: a commit written quoted would shift
    the peak and the source. The cell names no commit (unknown, the record applies), the line
    reads back as written, and the report shows the OOM with the same commit."""
    quoted = '"' + cell.replace('"', '""') + '"'
    (tmp_path / "run.csv").write_bytes(csv_bytes(oom_row("m", commit=quoted)))
    first = run_json(tmp_path, "--record", "rec", "run.csv")
    assert first["added"] == 1
    assert "holds a comma or quote" in first["stderr"]
    line = (tmp_path / "rec").read_text().splitlines()[0]
    assert line.split(",")[3] == "unknown"
    assert '"' not in line

    def oomrec(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "oomrec", *args, "--record", "rec", "--json"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
            timeout=HANG_GUARD_S,
        )

    assert "warning" not in oomrec("record", "list").stderr
    again = run_json(tmp_path, "--record", "rec", "run.csv")
    assert (again["added"], again["already_present"]) == (0, 1)
    report = oomrec("report", "run.csv")
    (oom,) = json.loads(report.stdout)["ooms"]
    assert oom["commit"] == "unknown"


def test_odd_file_names_in_git_get_their_adding_commit(repo: Repo) -> None:
    """Names git would quote in its output (tab, newline, a byte that is not UTF-8) still find
    the commit that added them; the record names them escaped."""
    header = b"model,prompt_target_len,date,hardware"
    names = {"tab\tname.csv": "a", "new\nline.csv": "b", "caf\udce9.csv": "c", "ü.csv": "d"}
    for name, model in names.items():
        (repo.path / name).write_bytes(header + f"\n{model},1,2026-07-03,gb10,SKIP:oom\n".encode())
    repo.git("add", ".")
    repo.git("commit", "-q", "-m", "odd names")
    report = run_json(repo.path, "--record", "rec", ".")
    assert sorted((r["model"], r["commit"], r["source_csv"]) for r in report["records"]) == [  # type: ignore[attr-defined]
        ("a", repo.head(), "tab\\x09name.csv"),
        ("b", repo.head(), "new\\x0aline.csv"),
        ("c", repo.head(), "caf\\xe9.csv"),
        ("d", repo.head(), "ü.csv"),
    ]
    assert report["no_adding_commit"] == []


_H15 = (
    "model,model_path,prompt_tokens,generated_tokens,prefill_ms,prefill_tok_s,decode_ms,"
    "decode_tok_s,date,hardware,mlxcel_version,build_type,max_tokens,prompt,prompt_target_len"
)
_ENTRY = {"model": "m", "length": 512, "token": "SKIP:oom", "row": "m,./models/m", "runner": "r"}


@pytest.mark.parametrize(
    ("provenance", "commit"),
    [
        ({"schema_version": 1, "cells": [{**_ENTRY, "commit": "abc1234"}]}, "abc1234"),
        ({"schema_version": 1, "cells": [{**_ENTRY, "row": 5, "commit": "abc1234"}]}, "unknown"),
        ({"schema_version": 1, "cells": [{**_ENTRY, "token": ["x"], "commit": "a"}]}, "unknown"),
        ({"schema_version": 1, "cells": [{**_ENTRY, "length": True, "commit": "a"}]}, "unknown"),
        ({"schema_version": 1, "cells": [{**_ENTRY, "commit": None, "mem_bytes": "x"}]}, "unknown"),
        ({"schema_version": 1, "cells": {"a": 1}}, "unknown"),
        ({"schema_version": 1, "cells": 5}, "unknown"),
        ([1, 2], "unknown"),
        ("fifo", "unknown"),
        ("/dev/zero", "unknown"),
    ],
)
def test_a_hostile_provenance_file_beside_a_csv_is_no_provenance(
    repo: Repo, provenance: object, commit: str
) -> None:
    folder = repo.path / "benchmarks"
    folder.mkdir()
    csv = folder / "cuda_gb10_2026-12-01.csv"
    csv.write_text(_H15 + '\nm,./models/m,,,,,,,2026-12-01,,,,32,"",512,SKIP:oom\n')
    beside = folder / "cuda_gb10_2026-12-01.csv.oomrec.json"
    if provenance == "fifo":
        os.mkfifo(beside)
    elif provenance == "/dev/zero":
        beside.symlink_to("/dev/zero")
    else:
        beside.write_text(json.dumps(provenance))
    # A sweep's own rows take their commit from it; a file of any other shape is ignored.
    data = run_json(repo.path, "--dry-run")
    assert [r["commit"] for r in data["records"]] == [commit]  # type: ignore[union-attr]


def test_a_csv_of_a_million_columns_is_skipped_by_the_import_and_the_report(
    tmp_path: Path,
) -> None:
    """A 10 MB header of a million columns (and rows as wide): skipped, with why, not read
    field by field (it took the report minutes and a gigabyte)."""
    from oomrec.report.scan import scan_csvs

    names = ",".join(f"c{i}" for i in range(1_000_000))
    wide = tmp_path / "wide.csv"
    wide.write_text(f"model,{names}\nm,{',' * 999_999},SKIP:oom\n")
    report = import_csvs([tmp_path], root=tmp_path, in_git=False, existing=[], hardware=None)
    assert report.files_skipped == {csvscan.TOO_WIDE: ["wide.csv (1,000,001 columns)"]}
    assert report.new == []
    scan = scan_csvs([tmp_path], tmp_path)
    assert scan.files_skipped == {csvscan.TOO_WIDE: 1} and scan.rows == 0
