"""Text shown to a person (a terminal, a tab-separated line): each character that would act
rather than show escaped, so that a record line, a CSV cell or a notes ref name pushed by
another host cannot move the cursor, retitle the window, reorder the line or split a column."""

from __future__ import annotations

import re

from oomrec.core.units import GIB

# C0 and C1 controls (ESC, CSI), DEL, the Unicode line breaks, the bidirectional overrides and
# isolates (they reorder what follows), and undecodable bytes (surrogateescape).
UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def visible(value: str) -> str:
    """`value` with each character of UNSAFE escaped: `\\t`, `\\xNN` (a surrogate as the byte it
    stands for), `\\uNNNN`."""
    return UNSAFE.sub(_escape, value) if UNSAFE.search(value) else value


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


# What a record field may not hold as is: C0 controls, DEL and undecodable bytes.
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")


def printable(text: str) -> str:
    """Control characters and undecodable bytes (surrogateescape) as `\\xNN`: text a record
    field can hold, one line, as UTF-8."""
    if text.isprintable() or not _UNPRINTABLE.search(text):
        return text
    return _UNPRINTABLE.sub(_escape_one, text)


def _escape_one(match: re.Match[str]) -> str:
    code = ord(match.group())
    # A surrogate from surrogateescape stands for the byte `code - 0xDC00`.
    return f"\\x{code - 0xDC00 if code >= 0xDC00 else code:02x}"


def show_bytes(n: int) -> str:
    """A memory size for people: `96 GiB`, `7.5 GiB`; MiB under 1 GiB (`512 MiB`), where the
    cell budgets of tests and demos live."""
    if n < GIB:
        return f"{n / 2**20:.0f} MiB"
    gib = n / GIB
    return f"{gib:.0f} GiB" if gib >= 10 or gib == int(gib) else f"{gib:.1f} GiB"


def show_apart(a: int, b: int) -> tuple[str, str]:
    """Two sizes compared in one message (`21.96 GiB fell under 22 GiB`): as show_bytes, with
    as many more digits as it takes for two different sizes not to read the same."""
    shown = show_bytes(a), show_bytes(b)
    if a == b or shown[0] != shown[1]:
        return shown
    unit, scale = ("MiB", 2**20) if max(a, b) < GIB else ("GiB", GIB)
    for digits in (1, 2, 3):
        # Trailing zeros dropped, so a round limit reads as typed (`512.5 MiB passed 512 MiB`).
        pair = _trimmed(a / scale, digits, unit), _trimmed(b / scale, digits, unit)
        if pair[0] != pair[1]:
            return pair
    return f"{a:,} bytes", f"{b:,} bytes"


def _trimmed(value: float, digits: int, unit: str) -> str:
    text = f"{value:.{digits}f}".rstrip("0").rstrip(".")
    return f"{text} {unit}"


def shorten(value: str) -> str:
    """`repr(value)`, cut short: a 5,000-digit field must not make a 5,000-character message."""
    if len(value) <= 40:
        return repr(value)
    return f"{value[:20]!r}... ({len(value)} characters)"
