"""Amounts as people type them: prompt lengths (`512,2048`, `2k`, `32K`) and durations (`30m`,
`1h30m`, `90s`, `1800`). Each parser says in one line what it could not read and the form
that works; none shows a validation library's text."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from oomrec.core.errors import OomrecError
from oomrec.core.records import typed_length
from oomrec.core.shown import shorten

# `2k` is 2048: the harness's ladder (512, 2048, 8192, 32768) is in powers of two.
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(ms|h|m|s)?", re.IGNORECASE)
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, None: 1.0}


def parse_lengths(value: str | Sequence[Any], where: str) -> tuple[tuple[int, ...], list[str]]:
    """Prompt lengths from a string (space- or comma-separated) or a list, each a positive
    token count (`2k` = 2048); a length given twice runs once. Returns the lengths in the order
    given and a warning for each one repeated."""
    if isinstance(value, str):
        items: list[Any] = value.replace(",", " ").split()
    elif isinstance(value, list | tuple):
        items = [x for item in value for x in (str(item).replace(",", " ").split() or [item])]
    else:
        raise OomrecError(f"{where}: lengths must be a space-separated string or a list")
    if not items:
        raise OomrecError(f"{where}: no lengths; give at least one prompt length, e.g. 512 2048")
    lengths: list[int] = []
    warnings: list[str] = []
    for item in items:
        length = None if isinstance(item, bool) else parse_length(str(item).strip())
        if length is None:
            shown = shorten(item) if isinstance(item, str) else repr(item)
            raise OomrecError(
                f"{where}: {shown} is not a prompt length; give token counts, e.g. "
                '"512 2048 8192" or "512,2k,8k" (k = 1024)'
            )
        if length in lengths:
            warnings.append(f"warning: {where}: {length} is given twice; it runs once")
            continue
        lengths.append(length)
    return tuple(lengths), warnings


def parse_length(text: str) -> int | None:
    """One prompt length: digits, or digits and `k`/`K` (x1024); None when it is none or not a
    positive count below 2**63."""
    return typed_length(text) or None


def one_length(value: str | int) -> int:
    """The prompt length of one cell as typed (`32768`, `32k`); a one-line OomrecError else."""
    length = parse_length(str(value).strip())
    if length is None:
        raise OomrecError(
            f"length {shorten(str(value))} is not a prompt length; give a token count, e.g. "
            "32768 or 32k (k = 1024)"
        )
    return length


def parse_duration(value: object, where: str, *, allow_zero: bool = False) -> float:
    """Seconds from a number or a duration (`30m`, `1h30m`, `90s`, `500ms`, `1.5h`; a bare
    number is seconds): finite, positive (or zero with `allow_zero`)."""
    if isinstance(value, bool):
        seconds = None
    elif isinstance(value, int | float):
        seconds = float(value)
    else:
        seconds = _duration_text(str(value))
    low = ">= 0" if allow_zero else "> 0"
    if (
        seconds is None
        or not math.isfinite(seconds)
        or seconds < 0
        or (seconds == 0 and not allow_zero)
    ):
        raise OomrecError(
            f"{where} {shorten(str(value))} is not a duration {low}; give seconds or a "
            "duration, e.g. 1800, 30m, 1h30m, 90s"
        )
    return seconds


def _duration_text(text: str) -> float | None:
    text = text.strip()
    if not text:
        return None
    if text.lstrip("+-").isalpha():
        return None  # `inf`, `nan`: no duration (float() would take them)
    try:
        # A bare number is seconds, as the harness's flags take them (1800, 0.5, 1e300).
        return float(text)
    except ValueError:
        pass
    total, at = 0.0, 0
    units: list[str | None] = []
    while at < len(text):
        match = _DURATION_PART.match(text, at)
        if match is None:
            return None
        unit = match.group(2).lower() if match.group(2) else None
        # A bare number is seconds only alone: `1h30` (minutes? seconds?) is refused.
        if unit in units or (unit is None and (units or match.end() < len(text.rstrip()))):
            return None
        units.append(unit)
        total += float(match.group(1)) * _UNIT_S[unit]
        at = match.end()
        while at < len(text) and text[at] == " ":
            at += 1
    return total
