"""`oomrec record import-csv` through the CLI, in real git repos with real CSV files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import SHARED_CORPUS, CliResult
from tests.gitrepo import Repo
from tests.harness_rows import GB10, H15, H17, SPEC_LAYOUT, csv_text, ok_row, row

# The memory the GB10 rows' hardware text names: NVIDIA_GB10_122GB (the harness's GB are GiB).
MEM = 122 * 1024**3

Cli = Callable[..., CliResult]
CSV = "benchmarks/cuda_gb10_2026-07-03.csv"


@pytest.fixture
def bench(repo: Repo) -> str:
    """A committed harness CSV with two true OOMs of gb10 and one file without a model column.

    Returns the commit that added them.
    """
    return repo.commit(
        "benchmarks",
        {
            CSV: csv_text(
                H15,
                ok_row("llama-3.1-8b-4bit", 512),
                row("gemma-4-31b-it-4bit", "SKIP:oom", length="32768"),
                row("gemma-4-31b-it-4bit", "SKIP:oom_estimate", length="65536"),
                row("qwen3-30b-a3b-4bit", "SKIP:oom"),
                row("mixtral-8x7b-4bit", "FAIL:bench", length="32768"),
            ),
            "benchmarks/metal_m1ultra_spec_2026-09-04.csv": csv_text(SPEC_LAYOUT),
        },
    )


def records(repo: Repo) -> list[str]:
    path = repo.path / "benchmarks" / ".oom-record"
    return path.read_text().splitlines() if path.exists() else []


def test_dry_run_shows_what_it_would_add_and_writes_nothing(
    cli: Cli, repo: Repo, bench: str
) -> None:
    result = cli("record", "import-csv", "--hardware", "gb10", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[:11] == [
        "files read                         1",
        "files skipped                      1",
        "  no model column                  1",
        "data rows                          5",
        "SKIP:oom rows                      2",
        "SKIP:oom rows skipped              0",
        "would add                          2",
        "already in the record              0",
        "left out: other hardware           0",
        f"qwen3-30b-a3b-4bit ran out of memory at the shortest prompt on gb10 ({CSV}): "
        "every length of it will be skipped",
        "would add to benchmarks/.oom-record:",
    ]
    assert [line.split("\t")[:5] for line in lines[11:]] == [
        ["gemma-4-31b-it-4bit", "32768", "gb10", "2026-07-03", bench],
        ["qwen3-30b-a3b-4bit", "0", "gb10", "2026-07-03", bench],
    ]
    assert records(repo) == []
    assert not (repo.path / "benchmarks" / ".oom-record.lock").exists()


def test_import_appends_once_and_a_rerun_adds_nothing(cli: Cli, repo: Repo, bench: str) -> None:
    first = cli("record", "import-csv", "--all-hardware")
    assert first.exit_code == 0, first.stderr
    assert "records added                      2" in first.stdout
    assert records(repo) == [
        f"gemma-4-31b-it-4bit,32768,2026-07-03,{bench},,{CSV},gb10,{MEM}",
        f"qwen3-30b-a3b-4bit,0,2026-07-03,{bench},,{CSV},gb10,{MEM}",
    ]
    before = (repo.path / "benchmarks" / ".oom-record").stat()
    second = cli("record", "import-csv", "--all-hardware")
    assert second.exit_code == 0, second.stderr
    assert "records added                      0" in second.stdout
    assert "already in the record              2" in second.stdout
    assert second.stdout.endswith("nothing new; benchmarks/.oom-record is unchanged\n")
    after = (repo.path / "benchmarks" / ".oom-record").stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_json_report(cli: Cli, repo: Repo, bench: str) -> None:
    result = cli("record", "import-csv", "--json", "-v")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report == {
        "schema_version": 2,
        "hardware": "testhw",
        "files_read": 1,
        "files_skipped": {"no model column": ["benchmarks/metal_m1ultra_spec_2026-09-04.csv"]},
        "data_rows": 5,
        "oom_rows": 2,
        "would_add": 0,
        "added": 0,
        "already_present": 0,
        "retracted": 0,
        "other_hardware": 2,
        "other_hardware_tags": {"gb10": 2},
        "records": [],
        "shortest_prompt": [],
        "rows_skipped": {},
        "bad_rows": [],
        "row_notes": [],
        "nested_rows": [],
        "blame_failed": [],
        "no_adding_commit": [],
        "uncommitted_rows": [],
        "parsed_with": "polars",
        "dry_run": False,
        "record": "benchmarks/.oom-record",
    }
    assert records(repo) == []


def test_default_filter_is_this_host_and_the_report_says_what_was_left_out(
    cli: Cli, repo: Repo, bench: str
) -> None:
    result = cli("record", "import-csv")
    assert result.exit_code == 0, result.stderr
    assert "left out: other hardware           2" in result.stdout
    assert (
        "only rows of hardware testhw (and untagged rows) are imported; left out: gb10 2; "
        "pass --hardware TAG or --all-hardware to import them"
    ) in result.stdout
    assert result.stdout.endswith("nothing new; benchmarks/.oom-record is unchanged\n")
    assert records(repo) == []


def test_hardware_option_is_normalized_and_excludes_all_hardware(
    cli: Cli, repo: Repo, bench: str
) -> None:
    result = cli("record", "import-csv", "--hardware", "NVIDIA_GB10_CUDA13.0_122GB", "--json")
    assert json.loads(result.stdout)["added"] == 2
    both = cli("record", "import-csv", "--hardware", "gb10", "--all-hardware")
    assert both.exit_code == 2
    assert both.stderr == (
        "oomrec: error: --hardware and --all-hardware exclude each other; pick one\n"
    )


def test_verbose_lists_skipped_files_under_their_reason(cli: Cli, repo: Repo, bench: str) -> None:
    quiet = cli("record", "import-csv", "--dry-run")
    assert "metal_m1ultra_spec" not in quiet.stdout
    verbose = cli("record", "import-csv", "--dry-run", "-v")
    assert (
        "  no model column                  1\n    benchmarks/metal_m1ultra_spec_2026-09-04.csv\n"
    ) in verbose.stdout


def test_default_folder_is_benchmarks_under_the_top_level(
    cli: Cli, repo: Repo, bench: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo.path / "deep" / "er").mkdir(parents=True)
    monkeypatch.chdir(repo.path / "deep" / "er")
    result = cli("record", "import-csv", "--all-hardware")
    assert result.exit_code == 0, result.stderr
    assert len(records(repo)) == 2
    assert all(f",{CSV},gb10" in line for line in records(repo))


def test_missing_default_folder_is_a_one_line_error(cli: Cli, repo: Repo) -> None:
    result = cli("record", "import-csv")
    assert result.exit_code == 2
    assert result.stderr == (
        f"oomrec: error: no benchmarks/ folder in {repo.path.resolve()}; pass the CSV files "
        "or folders to import\n"
    )


def test_path_that_does_not_exist_is_exit_2_and_nothing_is_written(
    cli: Cli, repo: Repo, bench: str
) -> None:
    result = cli("record", "import-csv", "benchmarks", "nope/", "--all-hardware")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        "oomrec: error: nope: no such file or folder; pass CSV files or folders to import\n"
    )
    assert records(repo) == []


def test_files_and_folders_as_arguments_with_record_option(
    cli: Cli, repo: Repo, bench: str, tmp_path: Path
) -> None:
    other = repo.path / "elsewhere" / "metal_m5max_2026-09-09.csv"
    other.parent.mkdir()
    other.write_text(csv_text(H15, row("mistral-small", "SKIP:oom", length="8192", hardware="")))
    target = tmp_path / "my.rec"
    result = cli(
        "record", "import-csv", CSV, "elsewhere", "--all-hardware", "--record", str(target)
    )
    assert result.exit_code == 0, result.stderr
    lines = target.read_text().splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "gemma-4-31b-it-4bit",
        "qwen3-30b-a3b-4bit",
        "mistral-small",
    ]
    # Not committed: the commit is unknown, the date is the row's, and the user is told.
    assert lines[2] == (
        "mistral-small,8192,2026-07-03,unknown,,elsewhere/metal_m5max_2026-09-09.csv,m5max,"
    )
    assert result.stderr == (
        "warning: elsewhere/metal_m5max_2026-09-09.csv: git has no commit adding it; its rows "
        "without a commit column get commit 'unknown', which prune keeps; commit the file "
        "before importing it\n"
    )


def test_bad_rows_and_bad_files_warn_and_the_rest_is_imported(cli: Cli, repo: Repo) -> None:
    bench = repo.path / "benchmarks"
    bench.mkdir()
    (bench / "binary.csv").write_bytes(b"\x00\x01\x02SKIP:oom\n")
    (bench / "empty.csv").write_bytes(b"")
    (bench / "x.csv").mkdir()
    (bench / "cuda_gb10_rows.csv").write_text(
        csv_text(
            H15,
            row("fine", "SKIP:oom", length="512"),
            row("ragged", "SKIP:oom", length="512").replace(",SKIP:oom", ",a,b,SKIP:oom"),
        )
    )
    result = cli("record", "import-csv", "--all-hardware")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == (
        "warning: benchmarks/cuda_gb10_rows.csv:3: SKIP:oom row not imported (18 fields where "
        "the header names 15 and a token follows them; its columns cannot be matched)\n"
        "warning: benchmarks/cuda_gb10_rows.csv: git has no commit adding it; its rows without "
        "a commit column get commit 'unknown', which prune keeps; commit the file before "
        "importing it\n"
    )
    assert "  binary, not CSV text             1\n" in result.stdout
    assert "  empty (no header line)           1\n" in result.stdout
    assert [line.split(",")[0] for line in records(repo)] == ["fine"]


def test_commit_columns_come_from_pyproject(cli: Cli, repo: Repo) -> None:
    repo.commit(
        "csv",
        {
            "pyproject.toml": '[tool.oomrec]\ncommit_columns = ["mlx_commit"]\n',
            CSV: csv_text(H17, row("m", "SKIP:oom", layout=H17, length="512", commit="abc")),
        },
    )
    cli("record", "import-csv", "--all-hardware")
    assert records(repo) == [f"m,512,2026-07-03,9a795735,,{CSV},gb10,{MEM}"]
    (repo.path / "pyproject.toml").write_text('[tool.oomrec]\ncommit_columns = "mlx_commit"\n')
    result = cli("record", "import-csv", "--all-hardware")
    assert result.exit_code == 2
    assert result.stderr.startswith("oomrec: error: ")
    assert "[tool.oomrec] commit_columns must be a list of column names" in result.stderr


def test_unparsed_record_lines_are_kept_and_warned_about(cli: Cli, repo: Repo, bench: str) -> None:
    record = repo.path / "benchmarks" / ".oom-record"
    record.write_text("not a record\n")
    result = cli("record", "import-csv", "--all-hardware")
    assert result.exit_code == 0
    assert result.stderr == (
        "warning: benchmarks/.oom-record:1: not a record (1 fields, needs at least 6), kept as is\n"
    )
    assert records(repo)[0] == "not a record"
    assert len(records(repo)) == 3


def test_a_real_process_on_bad_input_never_prints_a_traceback(repo: Repo) -> None:
    bench = repo.path / "benchmarks"
    bench.mkdir()
    (bench / "binary.csv").write_bytes(bytes(range(256)))
    (bench / "cuda_gb10_latin1.csv").write_bytes(
        H15.encode() + b"\n" + row("caf\xe9", "SKIP:oom", length="1").encode("latin-1") + b"\n"
    )
    (bench / "dangling.csv").symlink_to(bench / "gone.csv")
    done = subprocess.run(
        [sys.executable, "-m", "oomrec", "record", "import-csv", "--all-hardware", "--json"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    assert report["bad_rows"] == [
        {
            "source": "benchmarks/cuda_gb10_latin1.csv",
            "line": 2,
            "reason": "not UTF-8 text",
            "problem": "not UTF-8 text",
        }
    ]
    assert report["rows_skipped"] == {"not UTF-8 text": 1}
    assert report["files_skipped"] == {
        "binary, not CSV text": ["benchmarks/binary.csv"],
        "cannot be read": ["benchmarks/dangling.csv (No such file or directory)"],
    }


@pytest.mark.skipif(not SHARED_CORPUS.is_dir(), reason=f"{SHARED_CORPUS} is not here")
def test_real_corpus_holds_exactly_one_true_oom(cli: Cli, repo: Repo) -> None:
    shutil.copytree(SHARED_CORPUS / "benchmarks", repo.path / "benchmarks")
    repo.git("add", "benchmarks")
    repo.git("commit", "-q", "-m", "the real corpus")
    added = repo.head()
    result = cli("record", "import-csv", "--all-hardware", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["records"] == [
        {
            "model": "gemma-4-31b-it-4bit",
            "prompt_target_len": 32768,
            "date": "2026-07-03",
            "commit": added,
            "peak_bytes": None,
            "source_csv": "benchmarks/cuda_gb10_longprompt_2026-07-03.csv",
            "hardware": "gb10",
            "mem_bytes": MEM,
        }
    ]
    assert (report["oom_rows"], report["bad_rows"], report["files_read"]) == (1, [], 144)
    assert {reason: len(paths) for reason, paths in report["files_skipped"].items()} == {
        "no model column": 6
    }
    assert records(repo) == [
        f"gemma-4-31b-it-4bit,32768,2026-07-03,{added},,"
        f"benchmarks/cuda_gb10_longprompt_2026-07-03.csv,gb10,{MEM}"
    ]


def test_a_git_log_that_fails_is_a_one_line_error_and_nothing_is_written(
    cli: Cli, repo: Repo
) -> None:
    repo.commit("csv", {CSV: csv_text(H15, row("m", "SKIP:oom", length="512"))})
    tree = repo.git("rev-parse", "HEAD^{tree}")
    (repo.path / ".git" / "objects" / tree[:2] / tree[2:]).unlink()
    result = cli("record", "import-csv", "--all-hardware")
    assert result.exit_code == 2
    assert result.stderr == (
        f"oomrec: error: git log in {repo.path.resolve()} failed (fatal: unable to read tree "
        f"{tree}); check the repository\n"
    )
    assert records(repo) == []


def test_a_repository_without_commits_gives_unknown_commits(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = Repo(tmp_path / "fresh")
    monkeypatch.chdir(fresh.path)
    (fresh.path / "benchmarks").mkdir()
    (fresh.path / CSV).write_text(csv_text(H15, row("m", "SKIP:oom", length="512")))
    result = cli("record", "import-csv", "--all-hardware", "--json")
    assert result.exit_code == 0
    assert [r["commit"] for r in json.loads(result.stdout)["records"]] == ["unknown"]
    # A fresh repository ignores nothing: the first write also keeps the record out of git.
    notice, warning = result.stderr.splitlines()
    assert notice.startswith("oomrec: added /benchmarks/.oom-record and /benchmarks/.oom-record.*")
    assert warning.startswith(f"warning: {CSV}: git has no commit adding it;")


def test_a_row_appended_after_the_file_was_added_gets_its_own_commit(
    cli: Cli, repo: Repo, bench: str
) -> None:
    with open(repo.path / CSV, "a", encoding="utf-8") as fh:
        fh.write(row("mistral-small", "SKIP:oom", length="8192") + "\n")
    repo.git("commit", "-q", "-am", "append a row")
    appended = repo.head()
    with open(repo.path / CSV, "a", encoding="utf-8") as fh:
        fh.write(row("phi-4", "SKIP:oom", length="8192") + "\n")
    result = cli("record", "import-csv", "--all-hardware")
    assert result.exit_code == 0, result.stderr
    assert records(repo) == [
        f"gemma-4-31b-it-4bit,32768,2026-07-03,{bench},,{CSV},gb10,{MEM}",
        f"qwen3-30b-a3b-4bit,0,2026-07-03,{bench},,{CSV},gb10,{MEM}",
        f"mistral-small,8192,2026-07-03,{appended},,{CSV},gb10,{MEM}",
        f"phi-4,8192,2026-07-03,unknown,,{CSV},gb10,{MEM}",
    ]
    assert result.stderr == (
        f"warning: {CSV}:8: SKIP:oom row not committed yet; without a commit column it gets "
        "commit 'unknown', which prune keeps; commit the file before importing it\n"
    )


def test_concurrent_imports_add_each_record_once(repo: Repo) -> None:
    def lines(day: int) -> list[str]:
        return [
            row(f"model-{day}-{i}", "SKIP:oom", length=str(512 * (1 + i % 4)), hardware=GB10)
            for i in range(400)
        ]

    repo.commit(
        "many rows",
        {
            f"benchmarks/cuda_gb10_2026-07-{day:02d}.csv": csv_text(H15, *lines(day))
            for day in (1, 2)
        },
    )
    argv = [sys.executable, "-m", "oomrec", "record", "import-csv", "--all-hardware", "--json"]
    procs = [
        subprocess.Popen(argv, cwd=repo.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(3)
    ]
    outputs = [proc.communicate() for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0], [err for _, err in outputs]
    reports = [json.loads(out) for out, _ in outputs]
    written = records(repo)
    # Two files of 400 distinct OOMs each: every record once, whoever wrote it.
    assert len(written) == len(set(written)) == 800
    # What each one says it added is what it wrote: together, every record once.
    assert sum(r["added"] for r in reports) == 800
    assert all(r["added"] + r["already_present"] == 800 for r in reports)
    assert sorted(line for r in reports for line in _lines(r["records"])) == sorted(written)


def _lines(records: list[dict[str, object]]) -> list[str]:
    return [
        ",".join("" if r[k] is None else str(r[k]) for k in ("model", "prompt_target_len", "date"))
        + f",{r['commit']},,{r['source_csv']},{r['hardware']},{r['mem_bytes']}"
        for r in records
    ]


def test_a_record_of_unknown_memory_covers_the_same_oom_found_with_its_memory(
    repo: Repo,
) -> None:
    """Records imported before memory was read from the hardware text are not added again."""
    oom = row("m", "SKIP:oom", layout=H17, length="512", commit="1b6a5773")
    repo.commit("rows", {CSV: csv_text(H17, oom)})
    record = repo.path / "benchmarks" / ".oom-record"
    record.write_text(f"m,512,2026-07-03,1b6a5773,,{CSV},gb10\n")
    done = subprocess.run(
        [sys.executable, "-m", "oomrec", "record", "import-csv", "--all-hardware", "--json"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(done.stdout)
    assert (report["added"], report["already_present"]) == (0, 1)
    assert records(repo) == [f"m,512,2026-07-03,1b6a5773,,{CSV},gb10"]


def test_a_long_import_shows_a_screenful_and_says_how_to_see_all(cli: Cli, repo: Repo) -> None:
    rows = [row(f"model-{i:02d}", "SKIP:oom", length="32768") for i in range(25)]
    repo.commit("benchmarks", {CSV: csv_text(H15, *rows)})
    short = cli("record", "import-csv", "--hardware", "gb10", "--dry-run")
    assert short.exit_code == 0, short.stderr
    listed = [line for line in short.stdout.splitlines() if line.startswith("model-")]
    assert len(listed) == 20
    assert short.stdout.splitlines()[-1] == "... and 5 more (-v or --json for all)"
    full = cli("record", "import-csv", "--hardware", "gb10", "--dry-run", "-v")
    assert len([line for line in full.stdout.splitlines() if line.startswith("model-")]) == 25
    assert "more (" not in full.stdout


def test_a_dry_run_and_a_real_import_have_one_json_shape(cli: Cli, repo: Repo, bench: str) -> None:
    dry = json.loads(
        cli("record", "import-csv", "--hardware", "gb10", "--json", "--dry-run").stdout
    )
    real = json.loads(cli("record", "import-csv", "--hardware", "gb10", "--json").stdout)
    assert list(dry) == list(real)
    assert (dry["schema_version"], dry["dry_run"], dry["would_add"], dry["added"]) == (
        2,
        True,
        2,
        0,
    )
    assert (real["dry_run"], real["would_add"], real["added"]) == (False, 2, 2)
    assert len(dry["records"]) == len(real["records"]) == 2
    again = json.loads(cli("record", "import-csv", "--hardware", "gb10", "--json").stdout)
    assert (again["would_add"], again["added"], again["already_present"]) == (0, 0, 2)


def test_a_faked_oom_row_is_no_evidence_and_is_not_imported(cli: Cli, repo: Repo) -> None:
    """The harness's MLXCEL_BENCH_FAKE_OOM (and sweep --fake-oom) writes a SKIP:oom row for a
    cell it never launched; imported, it would hide a working cell on every machine."""
    repo.commit(
        "benchmarks",
        {
            CSV: csv_text(
                H15,
                row("a-4bit", "SKIP:oom", length="512", prompt="(faked via MLXCEL_BENCH_FAKE_OOM)"),
                row("b-4bit", "SKIP:oom", length="512"),
            )
        },
    )
    result = cli("record", "import-csv", "--hardware", "gb10", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert [r["model"] for r in data["records"]] == ["b-4bit"]
    assert [line.split(",")[0] for line in records(repo)] == ["b-4bit"]
    assert "faked OOM (MLXCEL_BENCH_FAKE_OOM), no evidence" in json.dumps(data)
