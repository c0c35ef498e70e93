"""Running oomrec on a real terminal: a pseudo-terminal of a given width as its stdout."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
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


# What rich and oomrec send to a terminal: text, CR, LF, backspace, CSI sequences (colour,
# cursor up/down, erase line or screen, cursor visibility). Nothing else is needed to see what a
# person is left looking at.
_CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")


class Screen:
    """A minimal terminal of `columns` width that keeps every line it was given (its
    scrollback too): feed it what a program wrote, then read the lines a person sees."""

    def __init__(self, columns: int = 80) -> None:
        self.columns = columns
        self.lines: list[list[str]] = [[]]
        self.row = 0
        self.col = 0
        # Where the terminal had to wrap text sent wider than the screen: (the first row of
        # the line as sent, the row it cut).
        self.wrapped: list[tuple[str, str]] = []
        self._sent_from = 0

    def _line(self) -> list[str]:
        while len(self.lines) <= self.row:
            self.lines.append([])
        return self.lines[self.row]

    def feed(self, text: str) -> Screen:
        at = 0
        while at < len(text):
            csi = _CSI.match(text, at)
            if csi:
                self._control(csi.group(1), csi.group(2))
                at = csi.end()
                continue
            char = text[at]
            at += 1
            if char == "\r":
                self.col = 0
            elif char == "\n":
                self.row += 1
                self._sent_from = self.row
                self._line()
            elif char == "\b":
                self.col = max(0, self.col - 1)
            elif char == "\x1b" or char < " ":
                continue  # another escape or control: no visible effect here
            else:
                if self.col >= self.columns:  # autowrap, as xterm does
                    first = "".join(self.lines[min(self._sent_from, self.row)])
                    self.wrapped.append((first, "".join(self._line())))
                    self.row += 1
                    self.col = 0
                line = self._line()
                line.extend(" " * (self.col - len(line)))
                if self.col < len(line):
                    line[self.col] = char
                else:
                    line.append(char)
                self.col += 1
        return self

    def _control(self, params: str, final: str) -> None:
        count = int(params) if params.isdigit() else 1
        if final == "A":
            self.row = max(0, self.row - count)
        elif final == "B":
            self.row += count
        elif final == "K":
            line = self._line()
            if params == "2":
                line.clear()
            elif params in ("", "0"):
                del line[self.col :]
        elif final == "J" and params == "2":
            self.lines, self.row, self.col = [[]], 0, 0
        elif final == "G":
            self.col = count - 1
        # m (colour), h/l (modes such as cursor visibility): nothing to draw

    def text(self) -> list[str]:
        """The lines as shown, trailing blanks and empty trailing lines dropped."""
        shown = ["".join(line).rstrip() for line in self.lines]
        while shown and not shown[-1]:
            shown.pop()
        return shown


def run_in_terminal(
    *args: str,
    cwd: Path,
    columns: int = 80,
    rows: int = 24,
    env: dict[str, str] | None = None,
    interrupt_when: Callable[[], bool] | None = None,
    deadline_s: float = 300.0,
) -> tuple[int, Screen, str]:
    """Run `python -m oomrec ARGS` as a shell runs it in a `columns` x `rows` terminal: stdin,
    stdout and stderr the terminal, which is its controlling terminal. When `interrupt_when()`
    first holds, the terminal gets a Ctrl-C keystroke (the line discipline sends SIGINT to the
    foreground group and echoes `^C`, as for a person). Returns (status, screen, raw output).

    The deadline only turns a hang into a failure; nothing waits on a timer.
    """
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    full_env = {**os.environ, **(env or {}), "COLUMNS": str(columns), "LINES": str(rows)}
    full_env["TERM"] = "xterm"

    def take_the_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        [sys.executable, "-m", "oomrec", *args],
        cwd=cwd,
        env=full_env,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        preexec_fn=take_the_terminal,
    )
    os.close(follower)
    chunks: list[bytes] = []
    interrupted = interrupt_when is None
    end = time.monotonic() + deadline_s
    try:
        while time.monotonic() < end:
            ready, _, _ = select.select([leader], [], [], 0.05)
            if ready:
                try:
                    data = os.read(leader, 65536)
                except OSError:  # EIO: every holder of the terminal closed it
                    break
                if not data:
                    break
                chunks.append(data)
            if not interrupted and interrupt_when is not None and interrupt_when():
                os.write(leader, b"\x03")
                interrupted = True
        else:
            proc.kill()
            raise AssertionError(f"oomrec {' '.join(args)} still running after {deadline_s} s")
    finally:
        os.close(leader)
    status = proc.wait()
    raw = b"".join(chunks).decode("utf-8", "replace")
    return status, Screen(columns).feed(raw), raw
