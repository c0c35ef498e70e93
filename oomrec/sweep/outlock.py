"""One running sweep per output CSV: an exclusive lock on `<csv>.oomrec.lock` for the whole run.

Two sweeps writing one CSV lose rows (each rewrites the file from what it read). The lock is a
`flock` on a file beside the CSV, so the kernel releases it however the sweep ends (a SIGKILL
too) and a stale lock file never blocks anyone; the file holds the holder's pid, host and start
time, for the message of the sweep that finds it taken.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from oomrec.core import lock
from oomrec.core.errors import OomrecError

SUFFIX = ".oomrec.lock"
# The holder line is a pid, a host name and a time: far under this.
_MAX_HOLDER = 512


@dataclass
class OutputLock:
    path: Path
    fd: int

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def lock_path(csv_path: Path) -> Path:
    return csv_path.with_name(csv_path.name + SUFFIX)


def acquire(
    csv_path: Path,
    *,
    wait: bool = False,
    on_wait: Callable[[str], None] | None = None,
    notices: list[str] | None = None,
) -> OutputLock | None:
    """Hold the output's lock for this process. Taken by another sweep: with `wait` (a
    `--resume`, which continues what the other one wrote), say so through `on_wait` and wait
    for it; else raise an OomrecError naming the holder. None where no lock file can be made
    beside the CSV (no such folder, read-only): the write of the CSV itself then says why.
    A lock made in a git worktree goes to its info/exclude (said in `notices`)."""
    path = lock_path(csv_path)
    from oomrec.store.exclude import exclude_sweep_files

    said = exclude_sweep_files(csv_path)
    if said and notices is not None:
        notices.append(said)
    # The CSV's folder made now, not at the first row: else the first oomrec into a new folder
    # would hold no lock, and a second one writing the same CSV would not see it.
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = lock.open_lock(path, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OomrecError(
                f"{path}: is a symlink; the sweep's lock beside --output must be a plain file "
                "(remove it)"
            ) from None
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OomrecError(f"{path}: is not a regular file; remove it (the sweep's lock)")
        if not lock.try_lock(fd):
            holder = _holder(fd)
            if not wait:
                raise OomrecError(
                    f"{csv_path}: another sweep is writing it ({holder}); wait for it to end, "
                    "continue it afterwards with --resume (which waits for it), or pass another "
                    "--output"
                ) from None
            if on_wait is not None:
                on_wait(f"waiting for the oomrec writing {csv_path} to end ({holder})")
            lock.wait_lock(fd)
        os.ftruncate(fd, 0)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()} since {stamp}\n".encode(), 0)
    except BaseException:
        os.close(fd)
        raise
    return OutputLock(path, fd)


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, _MAX_HOLDER, 0).decode("utf-8", errors="replace").strip()
    except OSError:
        text = ""
    # One line of printable text, whatever the file holds (nothing yet: the holder has its
    # lock and has not written its name).
    first = text.splitlines()[0] if text else ""
    return "".join(c if c.isprintable() else "?" for c in first) or "its holder is not named"
