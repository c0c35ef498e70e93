"""`oomrec record stale` and the status column of `record list`, through the CLI, on real
repositories: what no longer applies at HEAD, what applies again, and trailer hygiene."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.gitrepo import History, Repo
from tests.helpers import line, write

Cli = Callable[..., CliResult]


def test_lists_records_that_no_longer_apply_with_the_fix(
    cli: Cli, history: History, record: Path
) -> None:
    h = history
    write(
        record,
        [
            line("gemma-4-31b", 1, h.pre),
            line("gemma-4-31b", 2, h.post),
            line("gemma-4-31b", 3, "zzz"),
            line("qwen3-8b", 4, h.pre),
        ],
    )
    result = cli("record", "stale", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert [(e["line"], e["fix"], e["subject"], e["globs"]) for e in data["no_longer_apply"]] == [
        (1, h.fix, "Chunk the prefill", ["gemma-4-*"])
    ]
    assert [(e["line"], e["reason"]) for e in data["unknown"]] == [(3, "'zzz' is not a commit SHA")]
    assert data["apply_again"] == []
    # Each says how a run under the guard decides it.
    assert data["no_longer_apply"][0]["verify_command"] == "oomrec run gemma-4-31b 1 -- CMD"
    assert data["unknown"][0]["verify_command"] == (
        "oomrec run gemma-4-31b 3 --probe-undecided -- CMD"
    )
    text = cli("record", "stale")
    assert "verify: oomrec sweep (probes each under the guard)" in text.stdout
    assert "verify: oomrec sweep --probe-undecided" in text.stdout
    assert text.stdout.splitlines()[-1] == (
        "1 record lifted, unverified, 0 archived records apply again, 1 applies because git "
        "cannot say (at HEAD)"
    )


def test_exit_code_only_on_request_and_only_when_something_changed(
    cli: Cli, history: History, record: Path
) -> None:
    write(record, [line("gemma-4-31b", 1, history.post)])
    assert cli("record", "stale", "--exit-code").exit_code == 0
    write(record, [line("gemma-4-31b", 1, history.pre)])
    assert cli("record", "stale").exit_code == 0
    assert cli("record", "stale", "--exit-code").exit_code == 1


def test_range_limits_which_fixes_count(cli: Cli, history: History, record: Path) -> None:
    h = history
    write(record, [line("gemma-4-31b", 1, h.pre)])
    inside = json.loads(cli("record", "stale", "--json", "--range", f"{h.pre}..HEAD").stdout)
    outside = json.loads(cli("record", "stale", "--json", "--range", f"{h.fix}..HEAD").stdout)
    assert len(inside["no_longer_apply"]) == 1
    assert outside["no_longer_apply"] == []


@pytest.mark.parametrize("bad", ["nope..HEAD", "--output=x"])
def test_a_bad_range_is_one_line(cli: Cli, history: History, record: Path, bad: str) -> None:
    write(record, [line("gemma-4-31b", 1, history.pre)])
    result = cli("record", "stale", "--range", bad)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "is not a revision range" in result.stderr


def test_trailer_key_comes_from_pyproject(cli: Cli, repo: Repo, record: Path) -> None:
    old = repo.head()
    (repo.path / "pyproject.toml").write_text('[tool.oomrec]\nfix_trailer = "Memory-Fix"\n')
    fix = repo.commit("Shrink the KV cache\n\nMemory-Fix: *\n")
    repo.commit("Not this key\n\nOOM-Fix: *\n")
    write(record, [line("any-model", 1, old)])
    data = json.loads(cli("record", "stale", "--json").stdout)
    assert [e["fix"] for e in data["no_longer_apply"]] == [fix]


def test_a_bad_trailer_key_is_one_line(cli: Cli, repo: Repo, record: Path) -> None:
    (repo.path / "pyproject.toml").write_text('[tool.oomrec]\nfix_trailer = "OOM Fix"\n')
    result = cli("record", "stale")
    assert result.exit_code == 2
    assert result.stderr == (
        f"oomrec: error: {repo.path / 'pyproject.toml'}: [tool.oomrec] fix_trailer 'OOM Fix' is "
        "not a trailer key; use letters, digits and '-', e.g. fix_trailer = \"OOM-Fix\"\n"
    )


def test_no_commits_yet_means_everything_applies(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = Repo(tmp_path / "empty")
    monkeypatch.chdir(empty.path)
    (empty.path / "benchmarks").mkdir()
    write(empty.path / "benchmarks" / ".oom-record", [line("m", 1, "abc1234")])
    result = cli("record", "stale")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[-1].startswith("0 records lifted, unverified")


def test_trailer_hygiene_warnings(cli: Cli, repo: Repo, record: Path) -> None:
    old = repo.head()
    spaced = repo.commit("Fix A\n\nOOM-Fix: gemma-4-* qwen3-*\n")
    cased = repo.commit("Fix B\n\nOOM-Fix: Llama-3*\n")
    loose = repo.commit("Fix C\n\nOOM-Fix: mistral-*\n\nsome closing words\n")
    write(record, [line("llama-3-8b", 1, old), line("mistral-7b", 2, old)])
    result = cli("record", "stale")
    warnings = result.stderr.splitlines()
    assert any(
        f"warning: commit {spaced[:7]}: OOM-Fix glob 'gemma-4-* qwen3-*' holds a space" in w
        for w in warnings
    )
    assert any(
        f"commit {cased[:7]}: OOM-Fix glob 'Llama-3*' matches no model, but would match "
        "'llama-3-8b' ignoring case" in w
        for w in warnings
    )
    assert any(
        f"commit {loose[:7]}: 'OOM-Fix: mistral-*' is not in the trailer block" in w
        for w in warnings
    )
    # None of them lifts anything.
    assert result.stdout.splitlines()[-1].startswith("0 records lifted, unverified")


def test_list_shows_each_records_status(cli: Cli, history: History, record: Path) -> None:
    h = history
    write(
        record,
        [
            line("gemma-4-31b", 1, h.pre),
            line("gemma-4-31b", 2, h.post),
            line("gemma-4-31b", 3, "deadbeef"),
            line("qwen3-8b", 4, h.pre),
        ],
    )
    statuses = [r["status"] for r in json.loads(cli("record", "list", "--json").stdout)["records"]]
    assert statuses == [
        f"lifted, unverified: fix {h.fix[:7]} (Chunk the prefill)",
        "applies",
        "applies (unknown: commit deadbeef not in this repository (rebased away or from "
        "another clone?))",
        "applies",
    ]


def test_list_without_git_has_no_status(
    cli: Cli, history: History, record: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(record, [line("gemma-4-31b", 1, history.pre)])
    assert "status" not in cli("record", "list", "--no-git").stdout
    assert (
        "status" not in json.loads(cli("record", "list", "--json", "--no-git").stdout)["records"][0]
    )
    monkeypatch.chdir(tmp_path)
    outside = json.loads(cli("record", "list", "--json", "--record", str(record)).stdout)["records"]
    assert "status" not in outside[0]
