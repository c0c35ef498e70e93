"""Where output goes and how it looks: the global `--quiet` and `--color`, and the consoles.

Data (records, JSON, the lines a command was asked for) always goes to stdout; informational
lines (titles, summaries, hints) can be silenced with `-q`; errors always go to stderr.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console

COLOR_CHOICES = ("auto", "always", "never")


@dataclass
class OutputState:
    quiet: bool = False
    color: str = "auto"


# One invocation's flags; reset at the start of each command (tests run many in one process).
STATE = OutputState()


def reset() -> None:
    STATE.quiet = False
    STATE.color = "auto"


def is_tty(stream: TextIO | None = None) -> bool:
    stream = stream or sys.stdout
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def styled(stream: TextIO | None = None) -> bool:
    """Whether `stream` gets the terminal's rendering (tables, colour): a terminal, or any
    stream with --color always (`oomrec record list --color always | less -R`, as git does)."""
    return STATE.color == "always" or is_tty(stream)


def console(stream: TextIO | None = None) -> Console:
    """A rich console on `stream` (stdout by default) honouring --color and NO_COLOR."""
    # Imported here: a command that prints JSON or plain lines never loads rich (~13 ms).
    from rich.console import Console

    stream = stream or sys.stdout
    tty = is_tty(stream)
    # https://no-color.org: any non-empty NO_COLOR turns colour off unless --color always.
    no_color = STATE.color == "never" or (
        STATE.color == "auto" and bool(os.environ.get("NO_COLOR"))
    )
    return Console(
        file=stream,
        force_terminal=True if STATE.color == "always" else None,
        no_color=no_color,
        color_system=None if no_color else "auto",
        # Off a terminal, long cells stay whole on one line rather than wrapped at 80 columns.
        soft_wrap=not tty,
        highlight=False,
    )


def info(*lines: str, err: bool = False, stream: TextIO | None = None) -> None:
    """Informational lines (titles, summaries, hints) on stdout, stderr with `err`, or `stream`:
    silenced by --quiet."""
    if STATE.quiet:
        return
    stream = stream or (sys.stderr if err else sys.stdout)
    for line in lines:
        stream.write(line + "\n")
    stream.flush()
