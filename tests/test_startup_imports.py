"""What a start-up of `oomrec` imports: `-V` nothing of the command line, the help of every
command none of the machinery the commands run (the sweep, psutil, GitPython, polars, rich's
progress bar and tables), `record list` on an empty record outside git no GitPython.

Each case is a real process, its imports read from `sys.modules` as it ends: the budgets of
benchmarks/perf/bench_cli.py (-V 3x, --help 5x Python's own start-up) depend on them. Nothing
here is timed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

import oomrec
from oomrec import cli
from oomrec.store.locations import find_repo_root

ROOT = Path(__file__).resolve().parents[1]

# Runs the console script's entry point as `oomrec ARGS` would, then says on stderr, after
# MARK, every module the process imported: also when the command ends it with os._exit
# (`report`, cli/ending.py).
MARK = "imported modules:"
PROBE = f"""
import atexit, os, sys

def said():
    sys.stderr.write({MARK!r} + " " + " ".join(sorted(sys.modules)) + "\\n")
    sys.stderr.flush()

exit_now = os._exit

def _exit(status):
    said()
    exit_now(status)

os._exit = _exit
atexit.register(said)
sys.argv = ["oomrec", *sys.argv[1:]]
from oomrec.entry import main
sys.exit(main())
"""

# What the help of any command must not import: what running it takes.
NOT_FOR_HELP = (
    "oomrec.sweep.cell",
    "oomrec.sweep.grid",
    "psutil",
    "git",
    "polars",
    "rich.progress",
    "rich.live",
    "rich.table",
    # Typer checks option values with it (cli/typer_patches.py builds its checks only for a value).
    "pydantic",
)
# The one module of the sweep the help reads: the defaults it shows, which import nothing (with
# the packages around it, which hold a docstring).
SWEEP_DEFAULTS = "oomrec.sweep.cell.defaults"
DEFAULTS_AND_PACKAGES = ["oomrec.sweep", "oomrec.sweep.cell", SWEEP_DEFAULTS]


def imported(
    args: list[str], cwd: Path, **env: str
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [line for line in done.stderr.splitlines() if line.startswith(MARK)]
    assert len(lines) == 1, done.stderr
    return done, set(lines[0].removeprefix(MARK).split())


def among(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """The modules that are one of `names` or inside one."""
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


def command_paths() -> list[tuple[str, ...]]:
    """Every command and group of the command line, as the words that name it."""
    paths: list[tuple[str, ...]] = []

    def walk(command: object, path: tuple[str, ...]) -> None:
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            paths.append((*path, name))
            walk(sub, (*path, name))

    walk(typer.main.get_command(cli.load()), ())
    return paths


COMMANDS = command_paths()


def test_every_command_is_asked_for_its_help() -> None:
    # The enumeration reaches the commands of every group, the ones named in the issue too.
    assert {("sweep",), ("report",), ("record",), ("record", "list"), ("hook", "install")} <= set(
        COMMANDS
    )
    assert {path[0] for path in COMMANDS} == set(cli.BY_COMMAND)


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_the_version_loads_neither_typer_nor_the_command_line(flag: str, tmp_path: Path) -> None:
    done, modules = imported([flag], tmp_path)
    assert (done.returncode, done.stdout) == (0, f"oomrec {oomrec.__version__}\n")
    assert among(modules, ("typer", "click", "rich", "oomrec.cli", *NOT_FOR_HELP)) == []


@pytest.mark.parametrize("args", [[], *map(list, COMMANDS)], ids=lambda a: " ".join(a) or "root")
def test_help_loads_none_of_what_the_commands_run(args: list[str], tmp_path: Path) -> None:
    done, modules = imported([*args, "--help"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Usage: oomrec {' '.join(args)}".rstrip() + " ")
    assert [m for m in among(modules, NOT_FOR_HELP) if m not in DEFAULTS_AND_PACKAGES] == []
    assert among(modules, ("oomrec.sweep",)) in ([], DEFAULTS_AND_PACKAGES)


def test_listing_an_empty_record_outside_git_loads_no_gitpython(tmp_path: Path) -> None:
    record = tmp_path / "oom-record"
    record.write_text("")
    assert find_repo_root(tmp_path) is None
    done, modules = imported(["record", "list"], tmp_path, OOMREC_RECORD=str(record))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "no OOM records in" in done.stderr
    assert among(modules, ("git",)) == []


def test_the_command_modules_keep_their_annotations_evaluated() -> None:
    # Typer reads each command's annotations four times as it builds the command line; as
    # strings (`from __future__ import annotations`) each read compiles and evaluates them
    # again, ~15 ms of the root's help (oomrec/cli/__init__.py).
    package = ROOT / "oomrec" / "cli"
    declaring = [package / "apps.py", *(package / f"{name}.py" for name in cli.MODULES)]
    postponed = [
        path.name
        for path in declaring
        if "from __future__ import annotations" in path.read_text(encoding="utf-8")
    ]
    assert postponed == []
