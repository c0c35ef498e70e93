"""Every command's help as a person reads it on an 80-column terminal: no `%%` left from
printf-style escaping, no word or flag cut across lines, usage lines in the usual notation,
and the runner's placeholder list the runner's own."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import typer.main

from oomrec import cli as cli_module
from oomrec.sweep.cell.runner import PLACEHOLDERS
from tests.conftest import CliResult
from tests.test_startup_imports import COMMANDS

Cli = Callable[..., CliResult]


def _source_words(path: tuple[str, ...]) -> set[str]:
    """The whitespace-free words of the command's own help texts (its docstring and each
    option's help), as written."""
    command = typer.main.get_command(cli_module.load())
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    texts = [command.help or ""]
    texts += [getattr(p, "help", None) or "" for p in command.params]
    return {w for t in texts for w in t.split() if len(w) > 3 and "\b" not in w}


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(p) or "root" for p in COMMANDS])
def test_the_help_at_80_columns_reads_whole(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, path: tuple[str, ...]
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    result = cli(*path, "--help")
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert "%%" not in text
    usage = text.splitlines()[0]
    assert "{" not in usage, usage
    assert not re.search(r"\.\.\.\]?\.\.\.", usage), usage
    flat = " ".join(text.split())
    for word in _source_words(path):
        assert word in flat, f"{word!r} is cut across lines in `{' '.join(path)} --help`"


def test_the_runner_help_lists_the_runners_placeholders(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    text = " ".join(cli("sweep", "--help").stdout.split())
    listed = re.search(r"placeholders: ((?:\{\w+\} ?)+)", text)
    assert listed, text
    assert re.findall(r"\{(\w+)\}", listed.group(1)) == list(PLACEHOLDERS)


def test_every_error_has_one_prefix(cli: Cli) -> None:
    for args in (["record", "list", "--bogus"], ["record", "lst"], ["sweep", "--lengths"]):
        result = cli(*args)
        assert result.exit_code == 2
        assert result.stderr.startswith("oomrec: error: "), result.stderr
