"""`oomrec record list` and `oomrec record add`, through the CLI, in real git repos."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.helpers import TODAY
from tests.tty import run_on_tty

Cli = Callable[..., CliResult]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_add_defaults_to_head_and_this_host_under_the_repo_root(cli: Cli, repo: Repo) -> None:
    (repo.path / "sub").mkdir()
    result = cli("record", "add", "gemma-4-31b-it-4bit", "32768")
    assert result.exit_code == 0, result.stderr
    line = f"gemma-4-31b-it-4bit,32768,{TODAY},{repo.head()},,manual,testhw,"
    assert result.stdout == f"added to benchmarks/.oom-record: {line}\n"
    assert (repo.path / "benchmarks" / ".oom-record").read_text() == line + "\n"


def test_add_resolves_commit_hardware_and_source(cli: Cli, repo: Repo) -> None:
    first = repo.head()
    repo.commit("second")
    result = cli(
        "record", "add", "m", "512", "--commit", "HEAD~1", "--hardware",
        "NVIDIA_GB10_122GB", "--source", "runs/a,b.csv",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    text = (repo.path / "benchmarks" / ".oom-record").read_text()
    assert text == f'm,512,{TODAY},{first},,"runs/a,b.csv",gb10,\n'


def test_add_any_hardware_writes_six_fields(cli: Cli, repo: Repo) -> None:
    assert cli("record", "add", "m", "0", "--any-hardware").exit_code == 0
    text = (repo.path / "benchmarks" / ".oom-record").read_text()
    assert text == f"m,0,{TODAY},{repo.head()},,manual\n"


def test_add_outside_git_records_unknown_commit(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli("record", "add", "m", "7").exit_code == 0
    text = (tmp_path / "benchmarks" / ".oom-record").read_text()
    assert text == f"m,7,{TODAY},unknown,,manual,testhw,\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["", "512"], "model name is empty"),
        (["/a/b", "512"], "model name '/a/b' contains a leading '/'"),
        (["a,b", "512"], "model name 'a,b' contains ','"),
        (["a\nb", "512"], "model name 'a\\nb' contains a line break"),
        (["..", "512"], "model name '..' contains a '..' path part"),
        (["x/../y", "512"], "model name 'x/../y' contains a '..' path part"),
        (["m", "1.5"], "length '1.5' is not a whole number >= 0"),
        (["m", "abc"], "length 'abc' is not a whole number >= 0"),
        (["m", "--", "-5"], "length '-5' is not a whole number >= 0"),
        (["m", "512", "--commit", "no-such-rev"], "'no-such-rev' is not a commit in"),
        (["m", "512", "--hardware", "gb10", "--any-hardware"], "exclude each other"),
        (["m", "512", "--source", "x\ngemma,1,2026-01-01,unknown,,y"], "holds a line break"),
    ],
)
def test_add_rejects_bad_input_in_one_line(
    cli: Cli, repo: Repo, args: list[str], message: str
) -> None:
    result = cli("record", "add", *args)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("oomrec: error: ")
    assert message in result.stderr
    assert not (repo.path / "benchmarks" / ".oom-record").exists()


def test_add_negative_length_without_separator_is_a_one_line_usage_error(
    cli: Cli, repo: Repo
) -> None:
    result = cli("record", "add", "m", "-5")
    assert result.exit_code == 2
    assert result.stderr == ("oomrec: error: No such option: -5 (see 'oomrec record add --help')\n")


RECORDS = (
    "zeta,8192,2026-07-03,9bef3f2334c4048d8540aa392ef030c97d4dad2c,2147483648,z.csv,gb10\n"
    "alpha,32768,2026-07-04,unknown,,a.csv\n"
    'alpha,2048,2026-07-05,1b6a5773-dirty,,"x,y.csv",m1ultra\n'
    "broken,abc,2026-07-05,unknown,,s\n"
)


def test_list_json_is_sorted_and_typed(cli: Cli, repo: Repo) -> None:
    _write(repo.path / "benchmarks" / ".oom-record", RECORDS)
    # --no-git: the git status key is tested with record maintenance (tests/test_record_stale.py).
    result = cli("record", "list", "--json", "--no-git")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["records"] == [
        {
            "model": "alpha",
            "prompt_target_len": 2048,
            "date": "2026-07-05",
            "commit": "1b6a5773-dirty",
            "peak_bytes": None,
            "source_csv": "x,y.csv",
            "hardware": "m1ultra",
            "mem_bytes": None,
            "from": "local",
        },
        {
            "model": "alpha",
            "prompt_target_len": 32768,
            "date": "2026-07-04",
            "commit": "unknown",
            "peak_bytes": None,
            "source_csv": "a.csv",
            "hardware": None,
            "mem_bytes": None,
            "from": "local",
        },
        {
            "model": "zeta",
            "prompt_target_len": 8192,
            "date": "2026-07-03",
            "commit": "9bef3f2334c4048d8540aa392ef030c97d4dad2c",
            "peak_bytes": 2147483648,
            "source_csv": "z.csv",
            "hardware": "gb10",
            "mem_bytes": None,
            "from": "local",
        },
    ]
    assert result.stderr == (
        "warning: benchmarks/.oom-record:4: not a record (length 'abc' is not a number), "
        "kept as is\n"
    )


def test_list_filters_by_model_glob_and_hardware(cli: Cli, repo: Repo) -> None:
    _write(repo.path / "benchmarks" / ".oom-record", RECORDS)
    by_model = json.loads(cli("record", "list", "--json", "--model", "al*").stdout)["records"]
    assert [(r["model"], r["prompt_target_len"]) for r in by_model] == [
        ("alpha", 2048),
        ("alpha", 32768),
    ]
    by_hw = json.loads(cli("record", "list", "--json", "--hardware", "NVIDIA_GB10_122GB").stdout)[
        "records"
    ]
    assert [r["model"] for r in by_hw] == ["zeta"]


def test_list_table_shows_short_commit_and_gib(repo: Repo) -> None:
    _write(repo.path / "benchmarks" / ".oom-record", RECORDS)
    status, screen, stderr = run_on_tty("record", "list", "--no-git", cwd=repo.path, columns=120)
    assert status == 0, stderr
    rows = [line for line in screen.splitlines() if "zeta" in line]
    assert len(rows) == 1
    cells = [c.strip() for c in rows[0].strip("│ ").split("│")]
    assert cells[:7] == ["zeta", "8192", "gb10", "2026-07-03", "9bef3f2", "2.0", "z.csv"]
    assert "1b6a577-dirty" in screen


def test_list_off_a_terminal_is_one_full_line_per_record(cli: Cli, repo: Repo) -> None:
    _write(repo.path / "benchmarks" / ".oom-record", RECORDS)
    result = cli("record", "list", "--no-git")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        "alpha\t2048\tm1ultra\t2026-07-05\t1b6a5773-dirty\t-\t-\tx,y.csv",
        "alpha\t32768\t-\t2026-07-04\tunknown\t-\t-\ta.csv",
        "zeta\t8192\tgb10\t2026-07-03\t9bef3f2334c4048d8540aa392ef030c97d4dad2c\t2147483648\t-\tz.csv",
    ]
    # The count is information, on stderr: stdout holds records alone.
    assert "benchmarks/.oom-record: 3 records" in result.stderr


def test_list_at_80_columns_never_cuts_a_model_or_a_commit(repo: Repo) -> None:
    model = "gemma-4-31b-it-qat-q4_0-unquantized-4bit-extra-long-name"
    sha = "9bef3f2334c4048d8540aa392ef030c97d4dad2c"
    _write(
        repo.path / "benchmarks" / ".oom-record",
        f"{model},32768,2026-07-03,{sha},1,benchmarks/cuda_gb10_longprompt_2026-07-03.csv,gb10\n"
        * 3,
    )
    for columns in (80, 40):
        status, screen, stderr = run_on_tty(
            "record", "list", "--no-git", cwd=repo.path, columns=columns
        )
        assert status == 0, stderr
        assert "…" not in screen
        assert max(len(line) for line in screen.splitlines() if "│" in line) <= columns
        # A folded model reads whole again from its cells, top to bottom.
        cells = [line.split("│")[1].strip() for line in screen.splitlines() if line.startswith("│")]
        assert "".join(cells) == model * 3
        assert screen.count(sha[:7]) == 3
        assert sha[:8] not in screen
        assert "too narrow for: source" in screen


def test_list_through_a_pipe_counts_with_grep(repo: Repo) -> None:
    lines = [
        f"model-{i % 7}-with-a-long-name-4bit,{512 * (i + 1)},2026-07-03,unknown,,s.csv"
        for i in range(50)
    ]
    _write(repo.path / "benchmarks" / ".oom-record", "".join(f"{x}\n" for x in lines))
    shell = f"{sys.executable} -m oomrec record list --no-git | grep -c model-3-with-a-long-name"
    out = subprocess.run(
        shell,
        shell=True,
        cwd=repo.path,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert out.stdout.strip() == "7"


def test_list_on_an_empty_record(cli: Cli, repo: Repo) -> None:
    result = cli("record", "list")
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr == "no OOM records in benchmarks/.oom-record\n"
    assert json.loads(cli("record", "list", "--json").stdout)["records"] == []


def test_record_path_precedence(
    cli: Cli, repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def listed() -> list[str]:
        return [r["model"] for r in json.loads(cli("record", "list", "--json").stdout)["records"]]

    _write(repo.path / "benchmarks" / ".oom-record", "default,1,2026-01-01,u,,s\n")
    (repo.path / "deep" / "er").mkdir(parents=True)
    monkeypatch.chdir(repo.path / "deep" / "er")
    assert listed() == ["default"]

    _write(repo.path / "conf.rec", "configured,1,2026-01-01,u,,s\n")
    _write(repo.path / "pyproject.toml", '[tool.oomrec]\nrecord = "conf.rec"\n')
    assert listed() == ["configured"]

    env_file = _write(tmp_path / "env.rec", "from-env,1,2026-01-01,u,,s\n")
    monkeypatch.setenv("OOMREC_RECORD", str(env_file))
    assert listed() == ["from-env"]

    flag_file = _write(tmp_path / "flag.rec", "from-flag,1,2026-01-01,u,,s\n")
    result = cli("record", "list", "--json", "--record", str(flag_file))
    assert [r["model"] for r in json.loads(result.stdout)["records"]] == ["from-flag"]


def test_broken_pyproject_is_a_one_line_error(cli: Cli, repo: Repo) -> None:
    _write(repo.path / "pyproject.toml", "[tool.oomrec\nrecord = 1\n")
    result = cli("record", "list")
    assert result.exit_code == 2
    assert result.stderr.startswith("oomrec: error: ")
    assert "pyproject.toml: cannot read [tool.oomrec]" in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("text", ["tool = 1\n", "[tool]\noomrec = 'x'\n"])
def test_a_pyproject_whose_tool_oomrec_is_no_table_is_a_one_line_error(
    cli: Cli, repo: Repo, text: str
) -> None:
    _write(repo.path / "pyproject.toml", text)
    result = cli("record", "list")
    assert result.exit_code == 2
    assert result.stderr.endswith("pyproject.toml: [tool.oomrec] must be a table; fix the file\n")


def test_record_that_is_a_directory_is_a_one_line_error(cli: Cli, repo: Repo) -> None:
    result = cli("record", "list", "--record", str(repo.path))
    assert result.exit_code == 2
    assert result.stderr == (
        f"oomrec: error: {repo.path}: is a directory, not a regular file; "
        "point --record at a file\n"
    )


def _command_paths() -> list[list[str]]:
    """Every command and group of the app, as argv prefixes."""
    import typer.main

    from oomrec.cli import app

    paths: list[list[str]] = []

    def walk(command: object, prefix: list[str]) -> None:
        paths.append(prefix)
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*prefix, name])

    walk(typer.main.get_command(app), [])
    return paths


@pytest.mark.parametrize("argv", _command_paths(), ids=lambda argv: " ".join(argv) or "oomrec")
def test_every_help_shows_an_example(cli: Cli, argv: list[str]) -> None:
    result = cli(*argv, "--help")
    assert result.exit_code == 0
    assert "Example: oomrec " + " ".join(argv) in " ".join(result.stdout.split())


def test_help_imports_neither_polars_nor_gitpython() -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "oomrec", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "typer" in imported
    assert "polars" not in imported
    assert "git" not in imported


def test_version_and_unknown_command(cli: Cli) -> None:
    from oomrec import __version__

    assert cli("--version").stdout == f"oomrec {__version__}\n"
    result = cli("nope")
    assert result.exit_code == 2
    assert result.stderr == "oomrec: error: No such command 'nope'. (see 'oomrec --help')\n"


def test_list_rejects_a_hardware_filter_that_names_nothing(cli: Cli, repo: Repo) -> None:
    result = cli("record", "list", "--hardware", "unknown")
    assert result.exit_code == 2
    assert result.stderr == (
        "oomrec: error: --hardware 'unknown' names no hardware; give a tag such as gb10\n"
    )


def test_repeated_model_globs_list_records_of_any(cli: Cli, repo: Repo) -> None:
    _write(repo.path / "benchmarks" / ".oom-record", RECORDS)
    result = cli("record", "list", "--no-git", "--json", "--model", "zeta", "--model", "alp*")
    assert sorted(r["model"] for r in json.loads(result.stdout)["records"]) == [
        "alpha",
        "alpha",
        "zeta",
    ]
    one = cli("record", "list", "--no-git", "--json", "--model", "zeta")
    assert [r["model"] for r in json.loads(one.stdout)["records"]] == ["zeta"]


def test_a_terminal_too_narrow_for_a_table_gets_whole_lines_and_markup_stays_text(
    repo: Repo,
) -> None:
    _write(repo.path / "benchmarks" / ".oom-record", "a[bold]x,1,2026-01-01,u,,s\n")
    status, screen, stderr = run_on_tty("record", "list", "--no-git", cwd=repo.path, columns=100)
    assert status == 0, stderr
    assert "a[bold]x" in screen
    status, screen, stderr = run_on_tty("record", "list", "--no-git", cwd=repo.path, columns=20)
    assert status == 0, stderr
    assert "a[bold]x\t1\t-\t2026-01-01\tu\t-\t-\ts" in screen


def test_a_length_is_typed_as_check_and_sweep_take_it(cli: Cli, repo: Repo) -> None:
    """`32k` is 32768 to `record add` and `record retract` as to `check` and `sweep`: one
    reading of a typed length (0 too, for a record: the shortest prompt)."""
    assert cli("record", "add", "m", "32k").exit_code == 0
    assert cli("record", "add", "m", "0").exit_code == 0
    record = repo.path / "benchmarks" / ".oom-record"
    assert [line.split(",")[1] for line in record.read_text().splitlines()] == ["32768", "0"]
    (repo.path / "models" / "m").mkdir(parents=True)  # `check` names a model under ./models
    checked = cli("check", "m", "32k")
    assert checked.exit_code == 1, checked.stderr
    gone = cli("record", "retract", "m", "32K", "--reason", "typo")
    assert gone.exit_code == 0, gone.stderr
    assert [line.split(",")[1] for line in record.read_text().splitlines()] == ["0"]


def test_a_filter_that_matches_nothing_says_it_is_the_filter(cli: Cli, repo: Repo) -> None:
    assert cli("record", "add", "m", "512").exit_code == 0
    listed = cli("record", "list", "--model", "nomatch", "--hardware", "gb10")
    assert listed.exit_code == 0 and listed.stdout == ""
    assert listed.stderr == (
        "no OOM records matching --model nomatch --hardware gb10 in benchmarks/.oom-record\n"
    )
