"""Where output goes and how it looks: the global `--quiet` and `--color`, and the consoles.

Data (records, JSON, the lines a command was asked for) always goes to stdout; informational
lines (titles, summaries, hints) can be silenced with `-q`; errors always go to stderr.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from oomrec.core.errors import OomrecError

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


class Whole(str):
    """A line to paste whole (a command, a record line): never folded, so a copy of it from
    the terminal is the one line (the terminal's own wrap keeps it one line)."""


def fold(line: str, stream: TextIO) -> str:
    """`line` as a terminal `stream` shows it best: folded at spaces to the terminal's width,
    continuation lines indented under the text, never cut inside a word (a path longer than
    the width stays whole and the terminal wraps it). Off a terminal, and for a `Whole`
    line, unchanged: a log or a pipe keeps one line per message."""
    if isinstance(line, Whole) or "\n" in line or not is_tty(stream):
        return line
    width = _columns(stream)
    if width is None or len(line) <= width or width < 20:
        return line
    import textwrap

    body = line.lstrip(" ")
    indent = " " * (len(line) - len(body) + 2)
    return textwrap.fill(
        line,
        width,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def _columns(stream: TextIO) -> int | None:
    """The terminal's width as rich takes it: $COLUMNS when set, else the terminal's own."""
    given = os.environ.get("COLUMNS", "")
    if given.isdigit() and int(given) > 0:
        return int(given)
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return None


def tell(line: str, stream: TextIO | None = None) -> None:
    """A line said even with --quiet (an error, a warning), on stderr by default, folded to
    a terminal's width. Started with stderr closed (`2>&-`) there is nowhere to say it."""
    stream = stream or sys.stderr
    if stream is None:
        return
    stream.write(fold(line, stream) + "\n")
    stream.flush()


def info(*lines: str, err: bool = False, stream: TextIO | None = None) -> None:
    """Informational lines (titles, summaries, hints) on stdout, stderr with `err`, or `stream`,
    folded to a terminal's width: silenced by --quiet."""
    if STATE.quiet:
        return
    stream = stream or (sys.stderr if err else sys.stdout)
    for line in lines:
        stream.write(fold(line, stream) + "\n")
    stream.flush()


class _ClosedStdout(io.TextIOBase):
    """sys.stdout when the process was started with stdout closed (`>&-`), where Python leaves
    None: writing to it is a one-line error, not an AttributeError traceback."""

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        raise OomrecError(
            "stdout is closed, so there is nowhere to print to; redirect it instead (e.g. "
            "> /dev/null)"
        )


def escape_unshowable() -> None:
    """Set up stdout and stderr for any command (cli/apps.py, and the plain paths of
    entry.py): a closed stdout is a one-line error, and what a stream cannot encode prints
    escaped."""
    if sys.stdout is None:
        sys.stdout = _ClosedStdout()
    # A record may hold bytes that are not UTF-8 (kept as surrogates) or characters the
    # terminal's encoding lacks (LC_ALL=C, PYTHONIOENCODING=ascii): print them escaped rather
    # than crash half way through a table.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(OSError, ValueError):
                reconfigure(errors="backslashreplace")
