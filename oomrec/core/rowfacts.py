"""What one CSV row says, decided once for every view: its outcome, model, length, date and peak.

The row reader (csvread.rows) gives each role's cell as text; the import and the report turn the
cells into facts only through these functions, so the two never tell a user different things
about the same row. Each is cached: a corpus repeats a few values over thousands of rows.
"""

from __future__ import annotations

import math
from enum import StrEnum
from functools import lru_cache
from typing import NamedTuple

from oomrec.core.errors import OomrecError
from oomrec.core.modelnames import check_model_name, model_name
from oomrec.core.records import UNKNOWN_COMMIT, bounded_int, is_date
from oomrec.core.schema import Token
from oomrec.core.shown import printable
from oomrec.core.units import GIB, MAX_INT

# Why an OOM row is not evidence, as the import groups them (with schema.ROW_*).
ROW_MODEL = "model not a directory name"
ROW_LENGTH = "length not a number"
ROW_LENGTH_RANGE = "length over 64 bits"
# The harness's MLXCEL_BENCH_FAKE_OOM (and `oomrec sweep --fake-oom`) writes this prompt on the
# SKIP:oom row of a cell it never launched: no OOM was seen, so the row is no evidence.
ROW_FAKE = "faked OOM (MLXCEL_BENCH_FAKE_OOM), no evidence"

# A model is a directory name (NAME_MAX); a longer cell is no such thing.
_MAX_MODEL_CHARS = 255
# float() reads any length; no real peak in GiB needs more characters than this.
_MAX_GIB_CHARS = 27
# A commit is at most 64 hex digits and `-dirty`; longer cells are no such thing, and the record
# reader refuses fields over 131,072 characters.
MAX_COMMIT_CHARS = 128
# Characters a commit cell cannot keep: the record line would have to quote them.
COMMIT_REFUSED = ',"'


class Outcome(StrEnum):
    RAN = "ran"
    OOM = "oom"
    # An OOM measured before a fix that is in effect at HEAD: out of play, kept as evidence.
    LIFTED = "oom, fixed since"
    BACKSTOP = "backstop"
    RECORD = "record"
    # Stopped by the memory guard: the record the sweep wrote (with the limit it ran under) is
    # its evidence; its CSV row alone, which names no limit, is none (import-csv takes only
    # SKIP:oom rows).
    GUARD = "guard"
    TIMEOUT = "timeout"
    FAILED = "failed"
    SKIPPED = "skipped"
    NOT_TRIED = "not tried"


def outcome_of(token: str | None) -> Outcome:
    """A row's outcome from its trailing token (None: it ran)."""
    if token is None:
        return Outcome.RAN
    if token == Token.TRUE_OOM:
        return Outcome.OOM
    if token == Token.OOM_GUARD:
        return Outcome.GUARD
    if token == Token.OOM_BACKSTOP:
        return Outcome.BACKSTOP
    if token == Token.OOM_RECORD:
        return Outcome.RECORD
    if token == Token.FAIL_TIMEOUT:
        return Outcome.TIMEOUT
    return Outcome.FAILED if token.startswith("FAIL:") else Outcome.SKIPPED


def clip(text: str, limit: int = 40) -> str:
    """A cell as a warning shows it: quoted, escaped, at most `limit` characters of it."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def model_of(cell: str) -> str:
    """The model a `model` cell names (stripped; a BOM is no name's first character, and the
    record file would drop it on reading)."""
    model = cell.strip()
    model = model.lstrip("\ufeff").strip() if model.startswith("\ufeff") else model
    # The harness's skip rows name `--models "plain-8b/"` so: model `plain-8b`, one identity.
    return model_name(model)


@lru_cache(maxsize=4096)
def model_problem(model: str) -> str | None:
    """Why `model` cannot be a model (no directory name), or None."""
    if len(model) > _MAX_MODEL_CHARS:
        return f"model name {clip(model)} is longer than a file name can be"
    try:
        check_model_name(model)
    except OomrecError as exc:
        # The model shown clipped: a hostile cell can be megabytes long.
        # Cut at the advice, not at the first ';': the name itself may hold one.
        return str(exc).replace(repr(model), clip(model)).split("; give ")[0]
    return None


class Length(NamedTuple):
    """A row's length: the number (None: not one), whether it names the run's target
    (`prompt_target_len`, not a measured `prompt_tokens`), whether the row states one at all,
    and why it is not one."""

    value: int | None
    aimed: bool
    stated: bool = True
    reason: str | None = None
    problem: str | None = None


@lru_cache(maxsize=4096)
def length_of(target: str, tokens: str) -> Length:
    """The length a row stands at: `prompt_target_len`, else `prompt_tokens`; none at all is
    the shortest prompt, 0 (an OOM there stands in every cell: when in doubt, an OOM applies)."""
    text = target or tokens
    if not text:
        return Length(0, False, False)
    if not (text.isascii() and text.isdigit()):
        problem = f"length {clip(text)} is not a number"
        return Length(None, bool(target), True, ROW_LENGTH, problem)
    value = bounded_int(text)
    if value is None:
        problem = f"length {clip(text)} is over {MAX_INT} (64 bits)"
        return Length(None, bool(target), True, ROW_LENGTH_RANGE, problem)
    return Length(value, bool(target))


@lru_cache(maxsize=4096)
def date_of(cell: str) -> str | None:
    """The YYYY-MM-DD a date cell starts with (`2026-07-03`, `2026-07-03T12:00`), a real day
    (no 2026-02-30), else None."""
    day = cell.strip()[:10]
    return day if is_date(day) else None


def peak_of(bytes_text: str, gib_text: str) -> int | None:
    """A row's peak in bytes: `peak_bytes`, else `mlx_peak_gb` read as GiB (1024**3 bytes, the
    unit `record list` shows): were the harness's "GB" 10**9 bytes, the record would be 7% high,
    and a peak that errs large never makes a cell look safer than it is."""
    if bytes_text.isascii() and bytes_text.isdigit():
        return bounded_int(bytes_text)
    if len(gib_text) > _MAX_GIB_CHARS:
        return None
    try:
        size = float(gib_text) * GIB
    except ValueError:
        return None
    return round(size) if math.isfinite(size) and 0 <= size <= MAX_INT else None


@lru_cache(maxsize=4096)
def commit_of(cell: str) -> tuple[str | None, str | None]:
    """The commit a row's commit cell names (None: it names none, git may know), and what the
    record could not keep as written. An escaped commit is no SHA, so every verdict on it is
    `unknown` and prune keeps it."""
    if len(cell) > MAX_COMMIT_CHARS:
        return UNKNOWN_COMMIT, f"its commit {clip(cell)} is not one; recorded as {UNKNOWN_COMMIT!r}"
    if any(c in cell for c in COMMIT_REFUSED):
        # Record lines are read as the harness writes them (echo, no quoting), split at every
        # comma: a quoted commit would be read as two fields, shifting the peak and the source.
        # No commit holds either character.
        return UNKNOWN_COMMIT, (
            f"its commit {clip(cell)} holds a comma or quote, which no commit does and no "
            f"record line can; recorded as {UNKNOWN_COMMIT!r}"
        )
    shown = printable(cell)
    if shown != cell:
        return shown, f"its commit holds control characters; recorded as {shown!r} (unknown)"
    return cell or None, None
