"""The flags every command has: -V/--version, -q/--quiet, --color (and NO_COLOR), completion."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from oomrec import __version__
from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.tty import run_on_tty

Cli = Callable[..., CliResult]
RECORD = "gemma-4-31b-it-4bit,32768,2026-07-03,unknown,,s.csv,gb10\n"


def test_version_short_and_long(cli: Cli) -> None:
    for flag in ("-V", "--version"):
        result = cli(flag)
        assert (result.exit_code, result.stdout) == (0, f"oomrec {__version__}\n")


def test_quiet_silences_information_never_data_or_errors(cli: Cli, repo: Repo) -> None:
    added = cli("record", "add", "m", "512", "-q")
    assert (added.exit_code, added.stdout, added.stderr) == (0, "", "")
    assert (repo.path / "benchmarks" / ".oom-record").read_text().startswith("m,512,")
    # Before the command or after it, the same.
    listed = cli("-q", "record", "list", "--no-git")
    assert listed.stdout.startswith("m\t512\t") and listed.stderr == ""
    assert cli("record", "list", "--no-git").stderr != ""
    bad = cli("record", "add", "a,b", "512", "--quiet")
    assert bad.exit_code == 2 and bad.stderr.startswith("oomrec: error: model name 'a,b'")
    stale = cli("record", "stale", "-q")
    assert (stale.exit_code, stale.stdout) == (0, "")


def test_a_bad_color_is_one_line(cli: Cli) -> None:
    result = cli("record", "list", "--color", "purple")
    assert result.exit_code == 2
    assert result.stderr == (
        "oomrec: error: --color 'purple' is not one of auto, always, never; e.g. --color never\n"
    )


def test_color_follows_the_flag_and_no_color(tmp_path: Path) -> None:
    record = tmp_path / "rec"
    record.write_text(RECORD)
    args = ("record", "list", "--no-git", "--record", str(record))

    def colored(*extra: str, env: dict[str, str] | None = None) -> bool:
        status, screen, stderr = run_on_tty(*args, *extra, cwd=tmp_path, env=env, raw=True)
        assert status == 0, stderr
        assert "gemma-4-31b-it-4bit" in screen
        return "\x1b[" in screen

    assert colored(env={"NO_COLOR": ""})
    assert not colored(env={"NO_COLOR": "1"})
    assert not colored("--color", "never")
    assert colored("--color=always", env={"NO_COLOR": "1"})


def test_shell_completion_is_offered(cli: Cli) -> None:
    assert "--install-completion" in cli("--help").stdout


def test_color_without_a_value_is_one_line(cli: Cli) -> None:
    result = cli("record", "list", "--color")
    assert (result.exit_code, result.stderr) == (
        2,
        "oomrec: error: --color needs a value: auto, always or never\n",
    )


def test_color_always_renders_for_a_pipe_as_for_a_terminal(cli: Cli, repo: Repo) -> None:
    """`--color always` is for `| less -R`: the pipe gets the terminal's table and colour, as
    git, uv, pytest and ruff give it; without it a pipe gets plain lines."""
    assert cli("record", "add", "m", "512").exit_code == 0
    coloured = cli("record", "list", "--no-git", "--color", "always")
    assert coloured.exit_code == 0, coloured.stderr
    assert "\x1b[" in coloured.stdout and "│" in coloured.stdout
    plain = cli("record", "list", "--no-git")
    assert "\x1b[" not in plain.stdout and "│" not in plain.stdout
    assert plain.stdout.split("\t")[:2] == ["m", "512"]
