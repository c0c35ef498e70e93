"""Input as people type it: model paths in the harness's `./models/x/` form, lengths with
commas and `k`, a repeated length, durations, typos that get a suggestion."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

from tests.conftest import CliResult
from tests.gitrepo import Repo

Cli = Callable[..., CliResult]


def dry(cli: Cli, *args: str) -> CliResult:
    return cli("sweep", "--runner", f"{sys.executable} -c pass", "--dry-run", "--json", *args)


def cells(result: CliResult) -> list[tuple[str, int]]:
    assert result.exit_code == 0, result.stderr
    return [(c["model"], c["length"]) for c in json.loads(result.stdout)["cells"]]


def test_model_paths_as_the_harness_writes_them_are_the_model(
    cli: Cli, repo: Repo, models: Callable[..., None]
) -> None:
    models("llama", "qwen")
    result = dry(cli, "--models", "./models/llama/ models/qwen", "--lengths", "512")
    assert cells(result) == [("llama", 512), ("qwen", 512)]
    assert "note: model './models/llama/' read as 'llama' (under ./models)" in result.stderr
    assert "note: model 'models/qwen' read as 'qwen' (under ./models)" in result.stderr


def test_a_nested_model_named_like_the_folder_stays_nested(
    cli: Cli, repo: Repo, models: Callable[..., None]
) -> None:
    models("models/x", "x")
    result = dry(cli, "--models", "models/x", "--lengths", "512")
    assert cells(result) == [("models/x", 512)]
    assert "read as" not in result.stderr


def test_lengths_with_commas_and_k_and_a_repeat(
    cli: Cli, repo: Repo, models: Callable[..., None]
) -> None:
    models("a")
    result = dry(cli, "--models", "a", "--lengths", "512,2k 8K, 512")
    assert cells(result) == [("a", 512), ("a", 2048), ("a", 8192)]
    assert "warning: --lengths: 512 is given twice; it runs once" in result.stderr


def test_durations_are_read_and_refused_in_one_line(
    cli: Cli, repo: Repo, models: Callable[..., None]
) -> None:
    models("a")
    assert dry(cli, "--models", "a", "--lengths", "512", "--timeout", "30m").exit_code == 0
    assert dry(cli, "--models", "a", "--lengths", "512", "--cooldown", "2m").exit_code == 0
    bad = dry(cli, "--models", "a", "--lengths", "512", "--timeout", "30 minutes")
    assert bad.exit_code == 2
    assert bad.stderr.count("\n") == 1
    assert "pydantic" not in bad.stderr.lower() and "is not a valid" not in bad.stderr


def test_a_typo_in_a_model_name_gets_a_suggestion(
    cli: Cli, repo: Repo, models: Callable[..., None]
) -> None:
    models("llama-3.1-8b-4bit", "qwen2.5-7b-4bit")
    result = dry(cli, "--models", "llama-3.1-8b-4bt", "--lengths", "512")
    assert result.exit_code == 2
    assert "did you mean llama-3.1-8b-4bit?" in result.stderr
    mixed = cli(
        "sweep", "--runner", f"{sys.executable} -c pass", "--dry-run",
        "--models", "qwen2.5-7b-4bit lama-3.1-8b-4bit", "--lengths", "512",
    )  # fmt: skip
    assert mixed.exit_code == 0, mixed.stderr
    assert "skipping; did you mean llama-3.1-8b-4bit?)" in mixed.stdout + mixed.stderr


def test_record_add_warns_about_a_model_that_is_not_there(
    cli: Cli, repo: Repo, models: Callable[..., None]
) -> None:
    models("llama")
    result = cli("record", "add", "lama", "512")
    assert result.exit_code == 0
    assert "warning: no model 'lama' under" in result.stderr
    assert "did you mean llama?" in result.stderr
    quiet = cli("record", "add", "llama", "512")
    assert "warning" not in quiet.stderr
