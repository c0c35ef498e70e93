"""Every --json: one object with `schema_version`, one shape per verb, the same keys in a dry run
and a real run. The shapes are pinned here (and documented in docs/commands.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import CliResult
from tests.gitrepo import History, Repo
from tests.harness_rows import H15, csv_text, row
from tests.helpers import line, write

Cli = Callable[..., CliResult]
CELL_KEYS = [
    "model",
    "length",
    "model_path",
    "verdict",
    "reason",
    "launched",
    "seconds",
    "peak_rss_bytes",
    "record_line",
    "recorded",
    "already_recorded",
    "oom_evidence",
    "notes",
    "probe",
    "verified",
]
SWEEP_KEYS = [
    "schema_version",
    "hardware",
    "output",
    "record",
    "missing_models",
    "models_dir_missing",
    "guard",
    "dry_run",
    "interrupted",
    "killed_cell",
    "cells",
    "counts",
    "totals",
    "guard_stops",
    "new_records",
    "already_recorded",
    "refine",
    "frontier",
]


def as_json(result: CliResult) -> Any:
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("\n") == 1  # one line, for jq and grep
    return json.loads(result.stdout)


def test_sweep_dry_run_and_real_run_have_one_shape(cli: Cli, repo: Repo) -> None:
    (repo.path / "models" / "a").mkdir(parents=True)
    args = ("sweep", "--models", "a", "--lengths", "512 2048", "--runner", "true",
            "--fake-oom", "a:2048", "--output", "out.csv", "--json")  # fmt: skip
    dry = as_json(cli(*args, "--dry-run"))
    real = as_json(cli(*args))
    assert list(dry) == list(real) == SWEEP_KEYS
    assert (dry["schema_version"], dry["dry_run"], real["dry_run"]) == (2, True, False)
    for cell in real["cells"]:
        assert list(cell) == CELL_KEYS
    for cell in dry["cells"]:
        # `action` is the dry run's old name for `verdict`, kept for one release.
        assert list(cell) == [*CELL_KEYS, "action"]
        assert cell["action"] == cell["verdict"]
    assert [c["verdict"] for c in dry["cells"]] == ["run", "SKIP:oom"]
    assert [c["verdict"] for c in real["cells"]] == [
        "ok",
        "SKIP:oom",
    ]  # `true` writes no row: its exit is its result
    assert dry["totals"] == {"run": 1, "SKIP:oom": 1}


def test_record_list_is_an_object_with_its_records(cli: Cli, repo: Repo) -> None:
    cli("record", "add", "m", "512")
    data = as_json(cli("record", "list", "--json", "--no-git"))
    assert list(data) == ["schema_version", "record", "archived", "records"]
    assert (data["record"], data["archived"]) == ("benchmarks/.oom-record", False)
    assert [r["model"] for r in data["records"]] == ["m"]
    archived = as_json(cli("record", "list", "--json", "--archived"))
    assert (archived["record"], archived["archived"], archived["records"]) == (
        "benchmarks/.oom-record.archive",
        True,
        [],
    )


def test_record_stale_has_a_schema_version(cli: Cli, repo: Repo) -> None:
    data = as_json(cli("record", "stale", "--json"))
    assert list(data) == [
        "schema_version",
        "range",
        "no_longer_apply",
        "apply_again",
        "unknown",
        "shared_no_longer_apply",
        "warnings",
        "contradicted",
        "regressions",
    ]
    assert data["schema_version"] == 2


PRUNE_KEYS = ["schema_version", "record", "dry_run", "since", "would_archive", "archived",
              "records", "kept", "kept_unknown"]  # fmt: skip
RESTORE_KEYS = ["schema_version", "record", "dry_run", "would_restore", "restored", "records",
                "stay_archived"]  # fmt: skip
IMPORT_KEYS = ["schema_version", "hardware", "files_read", "files_skipped", "data_rows", "oom_rows",
               "added", "already_present", "retracted", "other_hardware", "other_hardware_tags",
               "records", "shortest_prompt", "rows_skipped", "bad_rows", "row_notes",
               "nested_rows", "blame_failed", "no_adding_commit", "uncommitted_rows",
               "parsed_with", "would_add", "dry_run", "record"]  # fmt: skip
ENTRY_KEYS = ["line", "record", "status", "fix", "subject", "globs", "reason"]


def test_prune_and_restore_dry_runs_and_real_runs_have_one_shape(
    cli: Cli, history: History, record: Path
) -> None:
    write(record, [line("gemma-4-31b", 1024, history.pre), line("llama-3", 512, history.pre)])
    dry = as_json(cli("record", "prune", "--dry-run", "--json"))
    real = as_json(cli("record", "prune", "--json"))
    assert list(dry) == list(real) == PRUNE_KEYS
    assert [dry[k] for k in ("dry_run", "would_archive", "archived")] == [True, 1, 0]
    assert [real[k] for k in ("dry_run", "would_archive", "archived")] == [False, 1, 1]
    assert list(real["records"][0]) == ENTRY_KEYS
    dry = as_json(cli("record", "restore", "--all", "--dry-run", "--json"))
    real = as_json(cli("record", "restore", "--all", "--json"))
    assert list(dry) == list(real) == RESTORE_KEYS
    assert [dry[k] for k in ("dry_run", "would_restore", "restored")] == [True, 1, 0]
    assert [real[k] for k in ("dry_run", "would_restore", "restored")] == [False, 1, 1]
    assert list(real["records"][0]) == [*ENTRY_KEYS, "archived_at", "archived_for", "retracted"]
    assert real["records"][0]["archived_for"] == history.fix
    both = cli("record", "prune", "--json", "--print-removed")
    assert (both.exit_code, both.stdout) == (2, "")


def test_import_dry_run_and_real_run_have_one_shape(cli: Cli, repo: Repo) -> None:
    repo.commit(
        "benchmarks",
        {"benchmarks/run.csv": csv_text(H15, row("m", "SKIP:oom", length="2048"))},
    )
    dry = as_json(cli("record", "import-csv", "--all-hardware", "--dry-run", "--json"))
    real = as_json(cli("record", "import-csv", "--all-hardware", "--json"))
    assert list(dry) == list(real) == IMPORT_KEYS
    assert [dry[k] for k in ("dry_run", "would_add", "added")] == [True, 1, 0]
    assert [real[k] for k in ("dry_run", "would_add", "added")] == [False, 1, 1]


def test_record_add_says_whether_it_added(cli: Cli, repo: Repo) -> None:
    first = as_json(cli("record", "add", "m", "512", "--json"))
    again = as_json(cli("record", "add", "m", "512", "--json"))
    assert list(first) == ["schema_version", "record", "added", "already_recorded", "line", "entry"]
    assert (first["added"], again["added"], again["already_recorded"]) == (True, False, True)
    assert first["line"] == again["line"]
    assert first["entry"]["model"] == "m"


def test_hook_install_and_uninstall(cli: Cli, repo: Repo) -> None:
    installed = as_json(cli("hook", "install", "--json"))
    removed = as_json(cli("hook", "uninstall", "--json"))
    assert list(installed) == list(removed) == ["schema_version", "hooks_dir", "hooks", "problems"]
    assert [h["action"] for h in installed["hooks"]] == ["installed"] * 5
    assert [h["action"] for h in removed["hooks"]] == ["removed"] * 5
    assert list(installed["hooks"][0]) == ["hook", "path", "action", "legacy", "legacy_change"]


def test_report_is_the_report_verbs_one_object(cli: Cli, repo: Repo) -> None:
    folder = repo.path / "benchmarks"
    folder.mkdir(exist_ok=True)
    (folder / "cuda_gb10_a.csv").write_text(
        csv_text(H15, row("m-4bit", "SKIP:oom", length="512")), encoding="utf-8"
    )
    data = as_json(cli("report", "--json"))
    assert list(data)[:2] == ["schema_version", "head"]
    assert [o["model"] for o in data["ooms"]] == ["m-4bit"]
    from oomrec.commands.report import report

    result = report([repo.path / "benchmarks"], record=None)
    assert result.to_json() == data | {"head": result.report.head}
