"""Every --json: one object with `schema_version`, one shape per verb, the same keys in a dry run
and a real run. The shapes are pinned here (and documented in the README)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.conftest import CliResult
from tests.gitrepo import Repo

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
    assert (dry["schema_version"], dry["dry_run"], real["dry_run"]) == (1, True, False)
    for cell in real["cells"]:
        assert list(cell) == CELL_KEYS
    for cell in dry["cells"]:
        # `action` is the dry run's old name for `verdict`, kept for one release.
        assert list(cell) == [*CELL_KEYS, "action"]
        assert cell["action"] == cell["verdict"]
    assert [c["verdict"] for c in dry["cells"]] == ["run", "SKIP:oom"]
    assert [c["verdict"] for c in real["cells"]] == ["FAIL:no_output", "SKIP:oom"]
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
    ]
    assert data["schema_version"] == 1
