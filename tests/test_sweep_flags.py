"""The sweep's flags declared once (oomrec/cli/celloptions.py): each parameter of `sweep` and
`run` is named as the options field it fills (sweep.options.from_given makes the options from
them by name), the flags both commands share read alike, and every flag reaches the sweep."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import fields
from typing import Any

import typer.main

from oomrec import cli as cli_module
from oomrec.cli.run import run_command
from oomrec.cli.sweep import sweep_command
from oomrec.commands.run import RunOptions
from oomrec.sweep.options import SweepOptions, from_given
from tests.conftest import CliResult
from tests.gitrepo import Repo

Cli = Callable[..., CliResult]
# How `sweep` runs, not what it sweeps; --resume-keep is given as resume="keep".
SWEEP_ONLY = {"dry_run", "as_json", "resume_keep"}
# What `oomrec run` sets on the one-cell sweep it makes (commands/run.py), never a sweep flag.
RUN_SETS = {"models_need_dirs", "append", "runner_named"}
# What a run has of its own: its cell, as arguments.
RUN_CELL = {"model", "length", "command"}


def names(cls: type) -> set[str]:
    return {f.name for f in fields(cls)}


def test_every_sweep_parameter_is_named_as_the_field_it_fills() -> None:
    params = set(inspect.signature(sweep_command).parameters)
    assert params - SWEEP_ONLY == names(SweepOptions) - RUN_SETS


def test_every_run_parameter_is_named_as_the_field_it_fills() -> None:
    params = set(inspect.signature(run_command).parameters)
    assert params - {"as_json"} == names(RunOptions)
    # And what a run shares with a sweep passes to it by name (commands/run.py).
    assert names(RunOptions) - RUN_CELL <= names(SweepOptions)


def test_the_options_are_the_parameters_by_name() -> None:
    given: dict[str, Any] = {"timeout": "1h", "dry_run": True, "resume": True, "models": ["a"]}
    made = from_given(SweepOptions, given, resume="keep")
    assert (made.timeout, made.resume, made.models) == ("1h", "keep", ["a"])
    assert made == SweepOptions(timeout="1h", resume="keep", models=["a"])


def _helps(path: str) -> dict[str, str]:
    command = typer.main.get_command(cli_module.load()).commands[path]  # type: ignore[attr-defined]
    return {p.opts[0]: p.help for p in command.params if p.opts[0].startswith("--")}


def test_the_flags_sweep_and_run_share_read_alike() -> None:
    sweep, run = _helps("sweep"), _helps("run")
    shared = set(sweep) & set(run)
    # A run's own words for what is its own: its CSV is a log, its models dir its command's.
    worded_for_run = {"--output", "--models-dir", "--probe-undecided", "--json"}
    assert {flag for flag in shared if sweep[flag] != run[flag]} == worded_for_run
    assert shared - worded_for_run >= {"--timeout", "--record", "--ignore-record"}


def test_each_flag_reaches_the_sweep(cli: Cli, repo: Repo) -> None:
    (repo.path / "models" / "a").mkdir(parents=True)
    result = cli(
        "sweep",
        *("--models", "a", "--lengths", "512 2k", "--runner", "true", "--dry-run", "--json"),
        *("--refine", "3", "--refine-step", "1k", "--shard", "1/1", "--min-available", "1M"),
        *("--fake-oom", "a:2048", "--output", "sweep.csv", "--timeout", "1h"),
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["refine"] == {"probes": 3, "step": 1024}
    assert data["guard"]["min_available_bytes"] == 1024 * 1024
    assert data["output"] == "sweep.csv"
    assert [(c["length"], c["verdict"]) for c in data["cells"]] == [
        (512, "run"),
        (2048, "SKIP:oom"),
    ]
    assert "shard 1/1: a (of 1 models)" in result.stderr
