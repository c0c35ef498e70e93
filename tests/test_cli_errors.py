"""Bad paths, bare commands and empty sweeps: one line, exit 2, the real cause (or help, exit 0)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.gitrepo import Repo

Cli = Callable[..., CliResult]


def one_error_line(result: CliResult, after_log: bool = False) -> str:
    """The one error line on stderr (with `after_log`, the last line, after a sweep's log)."""
    assert result.exit_code == 2, result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) >= 1 if after_log else len(lines) == 1, result.stderr
    assert not any(": error: " in line for line in lines[:-1]), result.stderr
    lines = lines[-1:]
    # One prefix for every error, usage errors of a group or command included.
    assert lines[0].startswith("oomrec: error: "), lines[0]
    return lines[0]


def test_a_directory_as_the_record_is_one_line(cli: Cli, repo: Repo) -> None:
    assert one_error_line(cli("record", "list", "--record", "/")) == (
        "oomrec: error: /: is a directory, not a regular file; point --record at a file"
    )


@pytest.mark.parametrize("verb", ["list", "restore", "prune", "stale"])
def test_an_empty_record_path_is_one_line_for_every_verb(cli: Cli, repo: Repo, verb: str) -> None:
    # `--record ''` has no file name: restore once died on the archive's name beside it.
    assert one_error_line(cli("record", verb, "--record", "")) == (
        "oomrec: error: .: is a directory, not a regular file; point --record at a file"
    )


def test_a_record_whose_lock_cannot_be_created_names_the_lock_file(cli: Cli, repo: Repo) -> None:
    # /proc/version is readable but nothing can be created beside it, even by root: the cause is
    # the lock file that cannot be created, said at once, not a lock held by someone else.
    line = one_error_line(cli("record", "add", "m", "1", "--record", "/proc/version"))
    assert "cannot create the record's lock file" in line
    assert "still locked" not in line


@pytest.mark.parametrize("command", [("record", "list"), ("record", "add", "m", "1")])
def test_an_explicit_record_in_a_missing_folder_is_an_error(
    cli: Cli, repo: Repo, tmp_path: Path, command: tuple[str, ...]
) -> None:
    path = tmp_path / "no" / "such" / "dir" / "x"
    line = one_error_line(cli(*command, "--record", str(path)))
    assert line == (
        f"oomrec: error: --record {path}: {path.parent} does not exist; create the folder or fix "
        "the path"
    )
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("command", [("record", "list"), ("record", "add", "m", "1")])
def test_a_record_linked_into_a_missing_folder_is_an_error(
    cli: Cli, repo: Repo, tmp_path: Path, command: tuple[str, ...]
) -> None:
    """A dangling symlink is written through: its target's folder would have been created by
    the first write. It must exist, as the link's own must; a link to a new file is fine."""
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "no" / "such" / "x")
    line = one_error_line(cli(*command, "--record", str(link)))
    assert line == (
        f"oomrec: error: --record {link}: {tmp_path / 'no' / 'such'} does not exist; create the "
        "folder or fix the path"
    )
    assert not (tmp_path / "no").exists()
    (tmp_path / "fine").symlink_to(tmp_path / "new-record")
    assert cli("record", "add", "m", "1", "--record", str(tmp_path / "fine")).exit_code == 0
    assert (tmp_path / "new-record").read_text().startswith("m,1,")


def test_a_file_as_the_records_folder_is_an_error(cli: Cli, repo: Repo) -> None:
    (repo.path / "afile").write_text("")
    line = one_error_line(cli("record", "add", "m", "1", "--record", "afile/x"))
    assert "afile is not a folder" in line


def test_the_environment_variable_names_itself(
    cli: Cli, repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OOMREC_RECORD", str(tmp_path / "nope" / "rec"))
    assert "$OOMREC_RECORD" in one_error_line(cli("record", "add", "m", "1"))
    assert not (tmp_path / "nope").exists()


def test_the_default_records_folder_is_created(cli: Cli, repo: Repo) -> None:
    assert cli("record", "add", "m", "1").exit_code == 0
    assert (repo.path / "benchmarks" / ".oom-record").is_file()


@pytest.mark.parametrize("args", [[], ["record"], ["hook"], ["remote"]])
def test_bare_commands_print_help_and_exit_0(tmp_path: Path, args: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "oomrec", *args], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 0
    assert "Usage: oomrec" in result.stdout
    assert result.stderr == ""


def test_an_unknown_subcommand_is_still_a_usage_error(cli: Cli) -> None:
    assert "No such command 'bogus'" in one_error_line(cli("record", "bogus"))


def test_a_sweep_with_every_model_missing_is_exit_2_unless_allowed(cli: Cli, repo: Repo) -> None:
    (repo.path / "models").mkdir()
    args = ("sweep", "--models", "ghost spectre", "--lengths", "512", "--runner", "true")
    assert one_error_line(cli(*args), after_log=True) == (
        "oomrec: error: no cell to run: every model is missing under ./models (ghost, spectre); "
        "check --models and --models-dir, or pass --allow-empty"
    )
    assert one_error_line(cli(*args, "--dry-run"), after_log=True).startswith(
        "oomrec: error: no cell to run"
    )
    allowed = cli(*args, "--allow-empty")
    assert allowed.exit_code == 0, allowed.stderr
    assert "[miss] ghost (not found under ./models, skipping)" in allowed.stderr


_CTRL_C_WHILE_IMPORTING = """
import builtins, sys
real = builtins.__import__

def ctrl_c_at_records(name, *args, **kwargs):
    # What SIGINT raises, at the moment the command line's modules are being imported.
    if name == "oomrec.core.records":
        raise KeyboardInterrupt
    return real(name, *args, **kwargs)

builtins.__import__ = ctrl_c_at_records
sys.argv = ["oomrec", *sys.argv[1:]]
from oomrec.entry import main
sys.exit(main())
"""


@pytest.mark.parametrize("command", [["record", "list"], ["report"]])
def test_ctrl_c_while_starting_exits_130_without_a_traceback(
    tmp_path: Path, command: list[str]
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CTRL_C_WHILE_IMPORTING, *command],
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 130
    assert done.stderr == b"" and done.stdout == b""


@pytest.mark.parametrize("command", [["report", "--json"], ["report"], ["--version"]])
def test_a_closed_stdout_is_one_line_not_a_traceback(repo: Repo, command: list[str]) -> None:
    """Started with stdout closed (`>&-`), Python's sys.stdout is None."""
    (repo.path / "benchmarks").mkdir()
    (repo.path / "benchmarks" / "cuda_gb10_x.csv").write_text("model,prompt_target_len\nm,512\n")
    done = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", "oomrec", *command],
        capture_output=False,
        stderr=subprocess.PIPE,
        cwd=repo.path,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == (
        b"oomrec: error: stdout is closed, so there is nowhere to print to; redirect it instead "
        b"(e.g. > /dev/null)\n"
    )


def test_a_closed_stderr_keeps_the_exit_status(repo: Repo) -> None:
    """Started with stderr closed (`2>&-`): the error has nowhere to go, its status still does."""
    (repo.path / "benchmarks").mkdir()
    (repo.path / "benchmarks" / "cuda_gb10_x.csv").write_text("model,prompt_target_len\nm,512\n")
    argv = ["sh", "-c", 'exec "$@" 2>&-', "sh", sys.executable, "-m", "oomrec", "report"]
    wrong = subprocess.run([*argv, "--machine", "nope"], capture_output=True, cwd=repo.path)
    assert (wrong.returncode, wrong.stdout) == (2, b"")
    right = subprocess.run([*argv, "--json"], capture_output=True, cwd=repo.path)
    assert right.returncode == 0 and right.stdout.startswith(b'{"schema_version":2,')


@pytest.mark.parametrize("char", ["\x1b", "\x7f", "\x9b", "\x85", "\u2028", "\u2029"])
def test_a_model_name_with_a_control_character_is_refused_everywhere(
    cli: Cli, repo: Repo, char: str
) -> None:
    """C0, DEL, C1 (an 8-bit CSI is a terminal's escape too) and the Unicode line breaks: no
    model directory is named so. `record add` refuses it; `import-csv` leaves such a row out
    with a warning, and the report does not show it as a model (they agree)."""
    model = f"a{char}b-4bit"
    line = one_error_line(cli("record", "add", model, "512"))
    assert "contains a line break or control character" in line
    folder = repo.path / "benchmarks"
    folder.mkdir(exist_ok=True)
    header = "model,prompt_target_len,hardware"
    (folder / "cuda_gb10_a.csv").write_text(
        f"{header}\n{model},512,NVIDIA_GB10_122GB,SKIP:oom\nok-4bit,512,NVIDIA_GB10_122GB\n",
        encoding="utf-8",
    )
    imported = cli("record", "import-csv", "--dry-run", "--json")
    assert imported.exit_code == 0, imported.stderr
    body = json.loads(imported.stdout)
    assert (body["would_add"], body["rows_skipped"]) == (0, {"model not a directory name": 1})
    assert "contains a line break or control character" in imported.stderr
    shown = cli("report", "--json")
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["models"] == ["ok-4bit"]
