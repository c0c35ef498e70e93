"""Ending oomrec's own process as soon as a command's output is written.

A command that ends holding millions of objects (the report over 1,000,000 rows) would have
Python free them one by one as its frames unwind and the interpreter exits (~0.05 s): os._exit
lets the OS take the memory back at once. Only the console entry point allows it (`allow`),
for its own process: a caller's process (a test's CliRunner, a library user) never ends here.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from typing import NoReturn

_allowed = False
# What a write to a full or failing device raises.
FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def allow() -> None:
    global _allowed
    _allowed = True


def output_done() -> None:
    """The command has written all it will: end the process here, status 0, if allowed."""
    if _allowed:
        leave(0)


def leave(code: object) -> NoReturn:
    """End the process with `code` (as SystemExit takes it) once stdout and stderr are written
    out. Output that cannot be written is said in one line, exit 2 (the interpreter's own exit
    would print "Exception ignored" and a traceback of the flush); a reader that went away
    (`| head`) ends it with status 1, as Typer does for the other commands."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        status = status or 1
    except OSError as exc:
        # A command that failed already said why (perhaps this very write failing).
        if status == 0:
            print(f"oomrec: error: {cannot_write(exc)}", file=sys.stderr)
            status = 2
    with contextlib.suppress(OSError, AttributeError):
        # None when started with stderr closed.
        sys.stderr.flush()
    os._exit(status)


def error_line(message: str, where: str = "oomrec") -> str:
    """The one line every error a user can cause ends in: one prefix, the message flattened."""
    return f"{where}: error: {' '.join(message.split())}"


def describe(exc: OSError) -> str:
    """What an I/O failure the code did not foresee says: it is still the user's environment
    (a full disk, a file gone), not a bug."""
    if exc.filename is None and exc.errno in FULL:
        # A write to no named file: stdout, on a full disk or /dev/full.
        return cannot_write(exc)
    where = f": {exc.filename}" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"


def cannot_write(exc: OSError) -> str:
    """What to say when stdout refuses what a command printed (a full disk, /dev/full)."""
    return f"cannot write the output: {exc.strerror or exc}; free space or send it elsewhere"
