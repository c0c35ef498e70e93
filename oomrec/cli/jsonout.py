"""The one JSON line a command prints with `--json`."""

from __future__ import annotations

import json
import sys
from typing import Any

import orjson

from oomrec.cli.ending import cannot_write
from oomrec.errors import OomrecError


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
    out = sys.stdout
    buffer = getattr(out, "buffer", None)
    try:
        if not line or not line.isascii() or buffer is None:
            out.write(json.dumps(data, separators=(",", ":")) + "\n")
            return
        # What was written as text goes first.
        out.flush()
        buffer.write(line)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OomrecError(cannot_write(exc)) from None
