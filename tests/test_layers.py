"""The layers stay layers: the library (everything outside oomrec/cli) never imports the CLI,
Typer or rich, and only the CLI imports the verbs of oomrec/commands, so every rule and every
verb is importable and testable without the CLI (docs/architecture.md)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import oomrec

PACKAGE = Path(oomrec.__file__).parent
# The console-script entry point dispatches to the CLI; it is the CLI's front door.
CLI_SIDE = {"entry.py", "__main__.py"}


def imported(path: Path) -> set[str]:
    """Every module `path` imports, at any depth (lazy imports inside functions too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def layer(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    if relative.parts[0] == "cli" or (relative.name in CLI_SIDE and len(relative.parts) == 1):
        return "cli"
    return "commands" if relative.parts[0] == "commands" else "library"


def test_the_library_and_the_verbs_never_import_the_cli_typer_or_rich() -> None:
    crossings = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if layer(path) == "cli":
            continue
        for name in imported(path):
            top = name.split(".")[0]
            if top in ("typer", "rich", "click") or name.startswith("oomrec.cli"):
                crossings.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert crossings == []


def test_only_the_cli_imports_the_verbs() -> None:
    crossings = [
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if layer(path) == "library"
        for name in imported(path)
        if name.startswith("oomrec.commands")
    ]
    assert crossings == []


def test_a_command_loads_only_its_own_modules_and_help_loads_all() -> None:
    """`record list` imports neither the sweep nor psutil (~60 ms of every record command);
    options before the command do not hide it; the root help and an unknown command see all
    the command modules (which import their library code only when they run)."""
    probe = (
        "import sys\n"
        "from oomrec import cli\n"
        "cli.load(sys.argv[1:])\n"
        "print(' '.join(m for m in ('oomrec.cli.sweep', 'oomrec.sweep.grid', 'psutil',"
        " 'oomrec.cli.record_list', 'oomrec.cli.report') if m in sys.modules))\n"
    )

    def loaded(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    assert loaded("record", "list") == "oomrec.cli.record_list"
    assert loaded("-q", "--color", "never", "record", "list") == "oomrec.cli.record_list"
    assert loaded("report", "--json") == "oomrec.cli.report"
    # Every command module, and still none of the sweep: each imports it when it runs.
    everything = "oomrec.cli.sweep oomrec.cli.record_list oomrec.cli.report"
    assert loaded("--help") == everything
    assert loaded("--help", "record") == everything
    assert loaded("swep") == everything
    # And the command line itself: the root help lists every command.
    shown = subprocess.run(
        [sys.executable, "-m", "oomrec", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for command in ("report", "sweep", "record", "hook", "remote", "fleet"):
        assert f"  {command} " in shown
