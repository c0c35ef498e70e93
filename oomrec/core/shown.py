"""Text shown to a person (a terminal, a tab-separated line): each character that would act
rather than show escaped, so that a record line, a CSV cell or a notes ref name pushed by
another host cannot move the cursor, retitle the window, reorder the line or split a column."""

from __future__ import annotations

import re

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
