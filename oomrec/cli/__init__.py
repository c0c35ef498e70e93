"""The command line. Each command lives in its own module and registers on the shared apps
(cli/apps.py).

A run imports only the modules of the command it names: `record list` need not import the
sweep, the runner and psutil (~60 ms of a 100,000-record listing's second). The root help,
an unknown command and shell completion load them all. `from oomrec.cli import app` is the app
with every command registered.

So that the help stays a few times Python's own start-up, a command module imports its library
code (and rich) inside the functions that run the command, and a module that declares commands
(or the root's options) has no `from __future__ import annotations`: Typer reads a command's
parameter annotations four times as it builds the command line, and strings it would compile
and evaluate each time (~15 ms of `oomrec --help`). tests/test_startup_imports.py checks both.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer

# Every command module, in the order their commands are listed in the help.
MODULES = (
    "check",
    "fleet",
    "hook",
    "record_add",
    "record_import",
    "record_list",
    "record_prune",
    "record_retract",
    "record_stale",
    "remote",
    "report",
    "run",
    "sweep",
)
# The modules that register each top-level command's subcommands (`record push` and `pull`
# live in remote.py).
BY_COMMAND = {
    "check": ("check",),
    "fleet": ("fleet",),
    "hook": ("hook",),
    "record": (*(m for m in MODULES if m.startswith("record_")), "remote"),
    "remote": ("remote",),
    "report": ("report",),
    "run": ("run",),
    "sweep": ("sweep",),
}
# Root options that take a value: the word after them is not a command.
_VALUED = ("--color",)


def load(args: Sequence[str] | None = None) -> typer.Typer:
    """The root app, with the commands `args` (a command line without the program name) can
    reach registered; every command when None or when `args` names no known command."""
    from oomrec.cli.apps import app

    for name in MODULES if args is None else BY_COMMAND.get(_command(args) or "", MODULES):
        importlib.import_module(f"oomrec.cli.{name}")
    return app


def _command(args: Sequence[str]) -> str | None:
    """The first word of `args` that is neither a root option nor its value."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _VALUED:
            skip = True
        elif arg in ("-h", "--help"):
            return None  # the root's help, whatever follows: it lists every command
        elif arg == "--" or not arg.startswith("-"):
            return None if arg == "--" else arg
    return None


def main() -> int:
    # Shell completion (Typer's _OOMREC_COMPLETE) must see every command.
    completing = any(name.endswith("_COMPLETE") for name in os.environ)
    app = load(None if completing else sys.argv[1:])
    return app(prog_name="oomrec")  # type: ignore[no-any-return]


def __getattr__(name: str) -> object:
    # `from oomrec.cli import app`: the whole app, for tests and for callers embedding it.
    if name == "app":
        return load()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
