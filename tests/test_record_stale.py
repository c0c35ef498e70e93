"""`oomrec record stale` and the status column of `oomrec record list`, on real repositories."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.gitrepo import History, Repo
from tests.helpers import line, write

Cli = Callable[..., CliResult]


def flat(text: str) -> str:
    return " ".join(text.split())


def test_lists_stale_records_with_fix_subject_glob_and_the_prune_command(
    cli: Cli, history: History, record: Path
) -> None:
    h = history
    write(
        record,
        [
            line("gemma-4-31b", 32768, h.pre),
            line("gemma-4-31b", 65536, h.post),
            line("qwen3-8b", 4096, h.pre),
            line("gemma-4-e4b", 8192, "unknown"),
        ],
    )
    result = cli("record", "stale")
    assert result.exit_code == 0
    out = flat(result.stdout)
    assert "benchmarks/.oom-record: stale records (fix commits in HEAD)" in out
    assert f"gemma-4-31b │ 32768 │ gb10 │ 2026-07-03 │ {h.pre[:8]} │" in out
    assert f"│ {h.fix[:7]} │ Chunk the prefill │ gemma-4-* │" in out
    assert "qwen3-8b" not in out and "65536" not in out
    assert "gemma-4-e4b │ 8192 │ gb10 │ 2026-07-03 │ unknown │" in out
    assert "no commit recorded" in out
    assert result.stdout.splitlines()[-2:] == [
        f"run: oomrec record prune --since {h.fix[:7]} --model 'gemma-4-*'",
        "1 stale record from 1 fix commit in HEAD",
    ]


def test_exit_code_only_on_request_and_only_when_stale(
    cli: Cli, history: History, record: Path
) -> None:
    write(record, [line("gemma-4-31b", 1, history.pre)])
    assert cli("record", "stale").exit_code == 0
    assert cli("record", "stale", "--exit-code").exit_code == 1
    write(record, [line("gemma-4-31b", 1, history.post)])
    result = cli("record", "stale", "--exit-code")
    assert result.exit_code == 0
    assert result.stdout == "no stale records (1 fix commit in HEAD)\n"


def test_range_limits_where_fixes_are_looked_for(cli: Cli, history: History, record: Path) -> None:
    write(record, [line("gemma-4-31b", 1, history.pre)])
    result = cli("record", "stale", "--range", f"{history.fix}..HEAD")
    assert result.stdout == f"no fix commits (trailer OOM-Fix:) in {history.fix}..HEAD\n"
    result = cli("record", "stale", "--range", f"{history.pre}..{history.post}", "--exit-code")
    assert result.exit_code == 1


@pytest.mark.parametrize("bad", ["nope..HEAD", "--all"])
def test_a_bad_range_is_one_line(cli: Cli, history: History, record: Path, bad: str) -> None:
    write(record, [line("gemma-4-31b", 1, history.pre)])
    result = cli("record", "stale", "--range", bad)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"oomrec: error: {bad!r} is not a revision range in ")
    assert result.stderr.endswith("; give one such as main..HEAD\n")
    assert result.stderr.count("\n") == 1


def test_json_lists_stale_and_unknown_with_the_commands(
    cli: Cli, history: History, record: Path, tmp_path: Path
) -> None:
    h = history
    elsewhere = tmp_path / "my record"
    write(elsewhere, [line("gemma-4-31b", 1, h.side), line("gemma-4-31b", 2, "zzz")])
    result = cli("record", "stale", "--json", "--record", str(elsewhere))
    assert json.loads(result.stdout) == {
        "range": "HEAD",
        "fixes": [{"commit": h.fix, "subject": "Chunk the prefill", "globs": ["gemma-4-*"]}],
        "stale": [
            {
                "line": 1,
                "record": {
                    "model": "gemma-4-31b",
                    "prompt_target_len": 1,
                    "date": "2026-07-03",
                    "commit": h.side,
                    "peak_bytes": None,
                    "source_csv": "benchmarks/cuda_gb10.csv",
                    "hardware": "gb10",
                    "mem_bytes": None,
                },
                "fix": h.fix,
                "subject": "Chunk the prefill",
                "glob": "gemma-4-*",
            }
        ],
        "unknown": [
            {
                "line": 2,
                "record": {
                    "model": "gemma-4-31b",
                    "prompt_target_len": 2,
                    "date": "2026-07-03",
                    "commit": "zzz",
                    "peak_bytes": None,
                    "source_csv": "benchmarks/cuda_gb10.csv",
                    "hardware": "gb10",
                    "mem_bytes": None,
                },
                "fix": h.fix,
                "reason": "'zzz' is not a commit SHA",
            }
        ],
        "prune_commands": [
            f"oomrec record prune --since {h.fix[:7]} --model 'gemma-4-*' --record '{elsewhere}'"
        ],
    }


def test_trailer_key_comes_from_pyproject(cli: Cli, repo: Repo, record: Path) -> None:
    old = repo.head()
    (repo.path / "pyproject.toml").write_text('[tool.oomrec]\nfix_trailer = "Memory-Fix"\n')
    repo.commit("Shrink the KV cache\n\nMemory-Fix: *\n")
    repo.commit("Not this key\n\nOOM-Fix: *\n")
    write(record, [line("any-model", 1, old)])
    result = cli("record", "stale", "--json")
    assert [f["subject"] for f in json.loads(result.stdout)["fixes"]] == ["Shrink the KV cache"]
    # `*` covers every model: the prune command needs no --model.
    fix = repo.git("rev-parse", "HEAD~1")
    assert json.loads(result.stdout)["prune_commands"] == [f"oomrec record prune --since {fix[:7]}"]


def test_a_bad_trailer_key_is_one_line(cli: Cli, repo: Repo, record: Path) -> None:
    (repo.path / "pyproject.toml").write_text('[tool.oomrec]\nfix_trailer = "OOM Fix"\n')
    result = cli("record", "stale")
    assert result.exit_code == 2
    assert result.stderr == (
        f"oomrec: error: {repo.path / 'pyproject.toml'}: [tool.oomrec] fix_trailer 'OOM Fix' is "
        "not a trailer key; use letters, digits and '-', e.g. fix_trailer = \"OOM-Fix\"\n"
    )


def test_no_commits_yet_means_no_fixes(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = Repo(tmp_path / "empty")
    monkeypatch.chdir(empty.path)
    result = cli("record", "stale")
    assert result.exit_code == 0
    assert result.stdout == "no fix commits (trailer OOM-Fix:) in HEAD\n"


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
    result = cli("record", "list")
    assert result.exit_code == 0
    rows = [flat(row) for row in result.stdout.splitlines() if row.startswith("│")]
    assert [row.split("│")[-2].strip() for row in rows] == [
        f"stale: fix {h.fix[:7]}",
        "active",
        "unknown: commit deadbeef not in this repository (rebased away or from another clone?)",
        "active",
    ]
    statuses = [r["status"] for r in json.loads(cli("record", "list", "--json").stdout)]
    assert statuses == [
        f"stale: fix {h.fix[:7]}",
        "active",
        rows[2].split("│")[-2].strip(),
        "active",
    ]


def test_list_without_git_has_no_status(
    cli: Cli, history: History, record: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(record, [line("gemma-4-31b", 1, history.pre)])
    assert "status" not in cli("record", "list", "--no-git").stdout
    assert "status" not in json.loads(cli("record", "list", "--json", "--no-git").stdout)[0]
    monkeypatch.chdir(tmp_path)
    outside = json.loads(cli("record", "list", "--json", "--record", str(record)).stdout)
    assert "status" not in outside[0]
