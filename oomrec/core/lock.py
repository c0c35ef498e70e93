"""The one lock oomrec takes: an exclusive `flock` on a lock file.

The kernel drops an flock when its holder's last descriptor closes, however the process ends
(a SIGKILL, an OOM kill too), so a lock file left behind never blocks anyone and is left in
place (waiters share its inode). Every lock goes through here: the record's and its
archive's, the notes refs' writer, one sweep per output CSV, a sweep's scratch folder
(tests/test_one_home.py keeps it so). Builtin modules only: a writer pays ~1 ms to import it.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# How often a wait with a deadline tries again.
POLL_S = 0.05


class LockTimeout(TimeoutError):
    """The lock was still held by another when the wait's deadline passed."""


def open_lock(path: Path, mode: int = 0o644, *, create: bool = True, nonblock: bool = False) -> int:
    """A descriptor of the lock file at `path` (made with `mode` when `create`), never through
    a symlink (ELOOP). `nonblock`: the open itself cannot hang (a FIFO put there)."""
    flags = os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW
    if create:
        flags |= os.O_CREAT
    if nonblock:
        flags |= os.O_NONBLOCK
    return os.open(path, flags, mode)


def try_lock(fd: int) -> bool:
    """Take the lock on `fd` if no one holds it; False when another does. OSError otherwise."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def wait_lock(fd: int) -> None:
    """Take the lock on `fd`, waiting as long as another holds it."""
    fcntl.flock(fd, fcntl.LOCK_EX)


def acquire(path: Path, timeout_s: float) -> int:
    """Take the lock on the file at `path` (created if missing): the descriptor that holds it,
    for release(). LockTimeout when another still holds it after `timeout_s`, OSError when it
    cannot be opened or locked. A lock file deleted while this waited is not held: the one now
    at `path` is taken instead."""
    deadline = time.monotonic() + timeout_s
    while True:
        fd = open_lock(path, nonblock=True)
        try:
            while not try_lock(fd):
                if time.monotonic() >= deadline:
                    raise LockTimeout(f"{path}: still locked after {timeout_s:.0f} s")
                time.sleep(POLL_S)
            if os.fstat(fd).st_nlink:
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def release(fd: int) -> None:
    """Drop the lock acquire() took (closing its last descriptor drops the flock)."""
    os.close(fd)


@contextmanager
def holding(path: Path, timeout_s: float) -> Iterator[None]:
    """Hold the lock on the file at `path` for the block (see acquire)."""
    fd = acquire(path, timeout_s)
    try:
        yield
    finally:
        release(fd)
