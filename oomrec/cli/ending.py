"""Ending oomrec's own process as soon as a command's output is written.

A command that ends holding millions of objects (the report over 1,000,000 rows) would have
Python free them one by one as its frames unwind and the interpreter exits (~0.05 s): os._exit
lets the OS take the memory back at once. Only the console entry point allows it (`allow`),
for its own process: a caller's process (a test's CliRunner, a library user) never ends here.
"""

from __future__ import annotations

import os
import sys

_allowed = False


def allow() -> None:
    global _allowed
    _allowed = True


def output_done() -> None:
    """The command has written all it will: end the process here, status 0, if allowed."""
    if _allowed:
        leave(0)


def leave(code: object) -> int:
    """End the process with `code` (as SystemExit takes it) once stdout and stderr are written
    out; if writing them fails (a closed pipe), return the status for the interpreter's own
    exit to report it, as it does for every command."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:
        return status
    os._exit(status)
