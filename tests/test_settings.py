"""Settings declared once (oomrec/core/settings.py): unknown keys, booleans, and the tables of
docs/configuration.md."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oomrec.core.errors import OomrecError
from oomrec.core.settings import ENV_VARS, TOOL_KEYS, Setting, markdown_tables, parse_bool
from oomrec.importer import backfill
from oomrec.staleness import fixlog as fixes
from oomrec.sweep import options as sweep_config
from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.profiles import examples

Cli = Callable[..., CliResult]
ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "oomrec").rglob("*.py"))


def declared(table: tuple[Setting, ...]) -> dict[str, str]:
    return {s.name: s.default for s in table}


def test_the_readme_holds_the_generated_tables() -> None:
    readme = (ROOT / "docs" / "configuration.md").read_text()
    inside = readme.split("<!-- settings:begin -->\n")[1].split("<!-- settings:end -->")[0]
    assert inside == markdown_tables()


def test_every_key_and_variable_the_code_reads_is_declared() -> None:
    text = "\n".join(path.read_text() for path in SOURCES)
    keys = set(re.findall(r'settings\.get\("(\w+)"', text))
    keys |= set(re.findall(r'tool\["(\w+)"\]', text)) | set(re.findall(r'"(\w+)" in tool\b', text))
    assert keys and keys <= set(declared(TOOL_KEYS))
    env = set(re.findall(r'"((?:OOMREC|MLXCEL_BENCH)_[A-Z_]+)"', text))
    assert env and env <= set(declared(ENV_VARS))


def test_declared_defaults_are_the_codes() -> None:
    tool = declared(TOOL_KEYS)
    assert tool["lengths"] == str(list(sweep_config.DEFAULT_LENGTHS))
    assert float(tool["timeout"]) == sweep_config.DEFAULT_TIMEOUT_S
    assert tool["fix_trailer"] == fixes.DEFAULT_TRAILER
    assert tool["commit_columns"] == str(list(backfill.DEFAULT_COMMIT_COLUMNS)).replace("'", '"')


def test_an_unknown_key_is_one_line_with_a_suggestion(cli: Cli, repo: Repo) -> None:
    (repo.path / "pyproject.toml").write_text("[tool.oomrec]\nlenghts = [512]\n")
    result = cli("record", "list")
    assert result.exit_code == 2
    assert result.stderr == (
        f"oomrec: error: {repo.path / 'pyproject.toml'}: unknown key 'lenghts' in "
        "[tool.oomrec]; did you mean 'lengths'?\n"
    )
    (repo.path / "pyproject.toml").write_text('[tool.oomrec]\nzzz = "x"\n')
    assert "known keys: runner, models," in cli("record", "list").stderr


@pytest.mark.parametrize(
    ("value", "ignored"),
    [("1", True), ("true", True), ("YES", True), ("on", True), ("0", False), ("off", False)],
)
def test_boolean_environment_variables_take_every_spelling(
    cli: Cli, repo: Repo, monkeypatch: pytest.MonkeyPatch, value: str, ignored: bool
) -> None:
    (repo.path / "models" / "a").mkdir(parents=True)
    (repo.path / "benchmarks").mkdir()
    (repo.path / "benchmarks" / ".oom-record").write_text("a,512,2026-07-03,unknown,,s,testhw\n")
    monkeypatch.setenv("OOMREC_IGNORE_RECORD", value)
    result = cli("sweep", "--models", "a", "--lengths", "512", "--runner", "true", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert ("  a @ 512: run" in result.stderr) is ignored
    assert (f"record pre-skip disabled by OOMREC_IGNORE_RECORD={value}" in result.stderr) is ignored


def test_a_boolean_that_is_not_one_is_an_error(
    cli: Cli, repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo.path / "models" / "a").mkdir(parents=True)
    monkeypatch.setenv("MLXCEL_BENCH_IGNORE_OOM_RECORD", "maybe")
    result = cli("sweep", "--models", "a", "--lengths", "512", "--runner", "true", "--dry-run")
    assert result.exit_code == 2
    assert result.stderr == (
        "oomrec: error: MLXCEL_BENCH_IGNORE_OOM_RECORD='maybe' is not a boolean; use 1/0, "
        "true/false, yes/no or on/off\n"
    )


@settings(max_examples=examples(50))
@given(st.text(max_size=8))
def test_parse_bool_is_total(text: str) -> None:
    try:
        value = parse_bool(text, "X")
    except OomrecError as exc:
        assert "\n" not in str(exc)
        return
    assert value is (text.strip().lower() in {"1", "true", "yes", "on"})
