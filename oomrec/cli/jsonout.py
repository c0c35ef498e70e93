"""The one JSON line a command prints with `--json`."""

from __future__ import annotations

import errno
import json
import os
import sys
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

from oomrec.cli.ending import cannot_write
from oomrec.core.errors import OomrecError

if TYPE_CHECKING:
    from oomrec.commands import Result


def write_result(result: Result) -> None:
    """A verb's result as its one JSON object (`schema_version` first), on one line."""
    write_json(result.to_json())


def write_json(data: dict[str, Any]) -> None:
    """`data` as one line of ASCII JSON on stdout (any other character escaped, whatever the
    terminal's encoding), compact.

    orjson, not json: the report over 10,000 CSVs prints 7.6 MB, which json's C encoder makes
    in ~0.06 s and orjson in ~0.005 s (bench_report.py). json writes what orjson refuses or
    would not escape: a lone surrogate (a record line's undecodable byte), an integer beyond 64
    bits (a CSV's 30-digit length), any non-ASCII text.
    """
    try:
        line = orjson.dumps(data, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:
        line = b""
    if not line or not line.isascii():
        line = (json.dumps(data, separators=(",", ":")) + "\n").encode("ascii")
    out = sys.stdout
    buffer = getattr(out, "buffer", None)
    try:
        if buffer is None:
            out.write(line.decode("ascii"))
            return
        # What was written as text goes first.
        out.flush()
        _write_all(buffer, line)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OomrecError(cannot_write(exc)) from None


def _write_all(buffer: BinaryIO, data: bytes) -> None:
    """All of `data`, or OSError. Unbuffered (python -u, PYTHONUNBUFFERED) stdout's binary
    layer is the raw file, whose write may take only part (a file size limit, a disk filling
    up, a reader gone) and say so in its return value, not an error: the rest would be lost."""
    view = memoryview(data)
    while view:
        taken = buffer.write(view)
        if taken is None:
            # A non-blocking stdout that is full.
            raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN))
        view = view[taken:]
