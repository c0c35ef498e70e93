"""The shipped examples name real oomrec commands and options."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import typer.main

from oomrec.cli import app

ROOT = Path(__file__).resolve().parents[1]


def commands_in(workflow: dict) -> list[list[str]]:
    """Every `oomrec ...` command line in the workflow's run steps."""
    found = []
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            for line in str(step.get("run", "")).splitlines():
                line = line.split(">", 1)[0].strip()
                if line.startswith("oomrec "):
                    found.append(shlex.split(line))
    return found


def test_the_fleet_workflow_names_real_commands_and_flags() -> None:
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load((ROOT / "examples" / "github-actions-fleet.yml").read_text())
    job = workflow["jobs"]["sweep"]
    # A GPU never runs two sweeps: one concurrency group per machine class, never cancelled.
    assert "matrix.host" in job["concurrency"]["group"]
    assert job["concurrency"]["cancel-in-progress"] is False
    commands = commands_in(workflow)
    assert [c[1:3] for c in commands] == [
        ["remote", "setup"],
        ["record", "pull"],
        ["sweep", "--models"],
        ["record", "push"],
    ]
    root = typer.main.get_command(app)
    for argv in commands:
        command = root
        rest = argv[1:]
        while hasattr(command, "commands") and rest and rest[0] in command.commands:
            command, rest = command.commands[rest[0]], rest[1:]
        assert not hasattr(command, "commands"), argv
        options = {opt for param in command.params for opt in param.opts}
        used = {arg.split("=", 1)[0] for arg in rest if arg.startswith("-")}
        assert used <= options, (argv, used - options)
