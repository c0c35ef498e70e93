"""Help a person reads: paragraphs rewrapped (no source line breaks mid-sentence), metavars such
as PATH, N, TAG (never Typer's `<bool>` or `<list[Path]>`), one example per command, 80 columns."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

import pytest

from tests.conftest import CliResult

Cli = Callable[..., CliResult]
TYPER_TYPES = re.compile(r"<(bool|str|int|float|path|list\[|Path|.* range)")


def commands(cli: Cli, *path: str) -> list[tuple[str, ...]]:
    """Every command under `path`, from the help's own Commands section."""
    text = cli(*path, "--help").stdout
    if "Commands:" not in text:
        return [path]
    names = [line.split()[0] for line in text.split("Commands:")[1].splitlines() if line.strip()]
    found = [path] if path else []
    for name in names:
        found += commands(cli, *path, name)
    return found


@pytest.fixture
def every_help(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> dict[tuple[str, ...], str]:
    monkeypatch.setenv("COLUMNS", "80")
    return {path: cli(*path, "--help").stdout for path in [(), *commands(cli)]}


def test_every_command_is_listed(every_help: dict[tuple[str, ...], str]) -> None:
    assert {("record", "list"), ("record", "add"), ("sweep",), ("hook", "install")} <= set(
        every_help
    )


def test_no_typer_type_labels_and_80_columns(every_help: dict[tuple[str, ...], str]) -> None:
    for path, text in every_help.items():
        assert not TYPER_TYPES.search(text), (path, TYPER_TYPES.search(text))
        # The example line is kept whole to copy; every other line fits.
        assert all(len(line) <= 80 for line in text.splitlines() if "Example:" not in line), path


def test_one_example_per_command(every_help: dict[tuple[str, ...], str]) -> None:
    for path, text in every_help.items():
        examples = [line for line in text.splitlines() if line.strip().startswith("Example:")]
        assert len(examples) == 1, path
        assert examples[0].strip().startswith(f"Example: oomrec {' '.join(path)}".rstrip()), path


def test_paragraphs_are_rewrapped_not_broken_where_the_source_was(
    every_help: dict[tuple[str, ...], str],
) -> None:
    for path, text in every_help.items():
        description = re.split(r"\n(?:Arguments|Options|Commands):\n", text)[0]
        for paragraph in description.split("\n\n")[1:]:
            lines = paragraph.splitlines()
            for line, after in itertools.pairwise(lines):
                # A greedy rewrap fills a line until the next word cannot fit.
                assert len(line) + 1 + len(after.split()[0]) > 72, (path, line)


def test_values_are_named_as_a_person_would(every_help: dict[tuple[str, ...], str]) -> None:
    add = every_help[("record", "add")]
    assert "Usage: oomrec record add [OPTIONS] MODEL LENGTH" in add
    assert "--mem SIZE" in add and "--hardware TAG" in add and "--record PATH" in add
    assert "--max-tokens N" in every_help[("sweep",)]
