"""What a path that is not a regular file is, in words: for the one-line errors of every reader
that refuses FIFOs, devices and folders (the record, its archive, cell CSVs, imported CSVs)."""

from __future__ import annotations

import stat

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind(mode: int) -> str:
    """`a FIFO`, `a directory`, ... for an `st_mode` that is not a regular file's."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"
