"""Running oomrec on a real terminal: a pseudo-terminal of a given width as its stdout."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run_on_tty(
    *args: str,
    cwd: Path,
    columns: int = 80,
    env: dict[str, str] | None = None,
    raw: bool = False,
    stderr_on_tty: bool = False,
) -> tuple[int, str, str]:
    """Run `python -m oomrec ARGS` with a `columns`-wide pty as stdout: (status, screen, stderr).

    The screen is what the terminal received, `\\r\\n` as `\\n`, colour codes removed unless
    `raw`. With `stderr_on_tty` stderr goes to the terminal too (as in an interactive shell) and
    the returned stderr is empty.
    """
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    full_env = {**os.environ, **(env or {}), "COLUMNS": str(columns), "TERM": "xterm"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "oomrec", *args],
        cwd=cwd,
        env=full_env,
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower if stderr_on_tty else subprocess.PIPE,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    status = proc.wait()
    screen = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return status, screen if raw else _ANSI.sub("", screen), stderr
