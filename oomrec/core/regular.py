"""Reading a file that someone else may have put there: a regular file only, opened without
blocking (a FIFO cannot hang the open), judged by fstat on the open descriptor (a symlink by
its target, with no race between the check and the read), and read to at most a limit (a
device, or a file growing meanwhile, cannot make the read unbounded). Every reader of a CSV or
a state file uses it and words the refusal its own way."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from oomrec.core.pathkind import kind as file_kind

# Reads of at most this size at a time: a file of a gigabyte is not one allocation twice.
_CHUNK = 1 << 24


class NotRead(Exception):
    """Why a file was not read: `kind` (not a regular file: what it is), `size` (over the
    limit: how large), else `error` (the OS's words) at `stage` ("open" or "read")."""

    def __init__(
        self, *, kind: str = "", size: int = 0, error: str = "", stage: str = "read"
    ) -> None:
        super().__init__(kind or error or f"{size} bytes")
        self.kind, self.size, self.error, self.stage = kind, size, error, stage


def read_regular(path: str | Path, limit: int) -> tuple[bytes, os.stat_result]:
    """The bytes of a regular file of at most `limit` bytes, and its fstat. FileNotFoundError
    when there is none; NotRead for anything else that keeps it from being read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise NotRead(error=exc.strerror or str(exc), stage="open") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRead(kind=file_kind(info.st_mode))
        if info.st_size > limit:
            raise NotRead(size=info.st_size)
        chunks: list[bytes] = []
        got = 0
        # One byte past the limit: a file that grew over it since fstat is refused too.
        while got <= limit and (chunk := os.read(fd, min(limit + 1 - got, _CHUNK))):
            chunks.append(chunk)
            got += len(chunk)
        if got > limit:
            raise NotRead(size=got)
    except OSError as exc:
        raise NotRead(error=exc.strerror or str(exc)) from None
    finally:
        os.close(fd)
    return (chunks[0] if len(chunks) == 1 else b"".join(chunks)), info
