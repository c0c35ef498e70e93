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
from oomrec.core.settings import (
    DEFAULT_LENGTHS,
    DEFAULT_REFINE_STEP,
    DEFAULT_TIMEOUT_S,
    ENV_VARS,
    TOOL_KEYS,
    Chosen,
    Setting,
    choose,
    markdown_tables,
    parse_bool,
)
from oomrec.importer import backfill
from oomrec.staleness import fixlog as fixes
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
    # What choose() is asked for: a key, or an option a variable stands in for.
    chosen = set(re.findall(r'choose\(\s*"(\w+)"', text))
    assert chosen and chosen <= set(declared(TOOL_KEYS)) | {s.option for s in ENV_VARS}
    env = set(re.findall(r'"((?:OOMREC|MLXCEL_BENCH)_[A-Z_]+)"', text))
    assert env and env <= set(declared(ENV_VARS))


def test_declared_defaults_are_the_codes() -> None:
    tool = declared(TOOL_KEYS)
    assert tool["fix_trailer"] == fixes.DEFAULT_TRAILER
    assert tool["commit_columns"] == str(list(backfill.DEFAULT_COMMIT_COLUMNS)).replace("'", '"')


WHERE = "/x/pyproject.toml [tool.oomrec]"


def test_one_precedence_for_every_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    # The flag, then [tool.oomrec], then the variable that stands in, then the default: for
    # every key alike, named as an error about its value must name it.
    for key in TOOL_KEYS:
        flag = "--" + key.name.replace("_", "-")
        assert choose(key.name, "f", {key.name: "t"}, WHERE) == Chosen("f", flag, "flag")
        assert choose(key.name, None, {key.name: "t"}, WHERE) == Chosen(
            "t", f"{WHERE} {key.name}", "tool"
        )
        assert choose(key.name, None, {}, WHERE) == Chosen(key.value, "the default", "default")
    assert choose("runner", "r", {}, WHERE, flag_name="the command").named == "the command"
    # A flag given as a falsy value is given all the same.
    assert choose("refine_step", 0, {"refine_step": 5}, WHERE).source == "flag"
    monkeypatch.setenv("MLXCEL_BENCH_FAKE_OOM", "a:512")
    assert choose("fake_oom", "b:1", {}, WHERE) == Chosen("b:1", "--fake-oom", "flag")
    assert choose("fake_oom", None, {}, WHERE) == Chosen("a:512", "MLXCEL_BENCH_FAKE_OOM", "env")
    monkeypatch.delenv("MLXCEL_BENCH_FAKE_OOM")
    assert choose("fake_oom", None, {}, WHERE) == Chosen(None, "the default", "default")


def test_choose_knows_only_declared_settings() -> None:
    with pytest.raises(KeyError, match="lenghts"):
        choose("lenghts", None, {}, WHERE)


def test_the_defaults_the_sweep_uses_and_shows_are_declared_once(cli: Cli, repo: Repo) -> None:
    declared_here = declared(TOOL_KEYS)
    assert declared_here["lengths"] == str(list(DEFAULT_LENGTHS))
    assert float(declared_here["timeout"]) == DEFAULT_TIMEOUT_S
    assert int(declared_here["refine_step"]) == DEFAULT_REFINE_STEP
    shown = " ".join(cli("sweep", "--help").stdout.split())
    assert f'Default: "{" ".join(map(str, DEFAULT_LENGTHS))}".' in shown
    assert f"Default: {DEFAULT_TIMEOUT_S:g}." in shown
    assert f"Default: {DEFAULT_REFINE_STEP}." in shown
    for key in ("runner", "output"):
        assert f"Default: {declared_here[key]}." in shown
    assert f"Default: ./{declared_here['models_dir']}." in shown
    assert f"Default: {DEFAULT_TIMEOUT_S:g}." in " ".join(cli("run", "--help").stdout.split())
    # A sweep given no lengths (flag or key) sweeps the declared ones.
    (repo.path / "models" / "a").mkdir(parents=True)
    result = cli("sweep", "--models", "a", "--runner", "true", "--dry-run")
    assert result.exit_code == 0, result.stderr
    planned = [line for line in result.stderr.splitlines() if line.startswith("  a @ ")]
    assert planned == [f"  a @ {n}: run" for n in DEFAULT_LENGTHS]


def test_a_value_is_named_where_it_was_read_and_the_flag_wins(cli: Cli, repo: Repo) -> None:
    (repo.path / "models" / "a").mkdir(parents=True)
    args = ("sweep", "--models", "a", "--runner", "true", "--dry-run")
    for key, bad, flag, good in (
        ("timeout", '"soon"', "--timeout", "30m"),
        ("refine_step", '"none"', "--refine-step", "1k"),
        ("max_cell_memory", '"lots"', "--max-cell-memory", "off"),
        ("lengths", '"x"', "--lengths", "512"),
    ):
        (repo.path / "pyproject.toml").write_text(f"[tool.oomrec]\n{key} = {bad}\n")
        refused = cli(*args)
        assert refused.exit_code == 2, (key, refused.stderr)
        assert refused.stderr.startswith(
            f"oomrec: error: {repo.path / 'pyproject.toml'} [tool.oomrec] {key}"
        ), refused.stderr
        taken = cli(*args, flag, good)
        assert taken.exit_code == 0, (key, taken.stderr)


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
