"""The bench harness's CSV layout: its header, its trailing classification token, its skip rows.

A harness row is 14 or 15 named columns, then (on non-success rows) an unnamed trailing token
such as `SKIP:oom` or `FAIL:bench`. The quoted `prompt` field may hold commas and some rows carry
an extra empty field before the token, so the token is always read from the end of the row.
"""

from __future__ import annotations

import csv
import re
from enum import StrEnum

HEADER_14 = (
    "model,model_path,prompt_tokens,generated_tokens,prefill_ms,prefill_tok_s,decode_ms,"
    "decode_tok_s,date,hardware,mlx_version,build_type,max_tokens,prompt"
)
HEADER_15 = HEADER_14 + ",prompt_target_len"
HEADER = HEADER_15
# The columns that hold a row's commit, the first with a value wins ([tool.oomrec]
# commit_columns overrides them).
DEFAULT_COMMIT_COLUMNS = ("mlxcel_commit", "commit")
# Every format oomrec writes, and its version: one scheme (an integer, raised when the format
# changes so that a reader of the old one would misread it) and one home (here). The record and
# the notes are the harness's line format, which has none: they are read by what each line
# holds (core/records.py).
#
# Every `--json` shape (the verbs' and the report's), written as `schema_version`; raised when
# a key changes meaning or goes away (a key added is no change). 2: the report's `cells` are
# runs of one outcome, `never_tried` ranges.
JSON_SCHEMA_VERSION = 2
# The sweep's provenance file (`<csv>.oomrec.json`), written as `schema_version`. Keys added
# later (peak_bytes, limit_bytes) are read as absent from older files, and left out by a reader
# that does not know them.
PROVENANCE_FORMAT = 1
# The report's kept scan parts (pickled fold types), in each part's key with oomrec's version.
# 3: a machine class holds its memory in bytes, not whole GiB. 4: a row without hardware
# takes its file's class (core.machine.file_class).
REPORT_PARTS_FORMAT = 4
# The fix-trailer event cache in the git dir (staleness/eventcache.py), in its header line.
EVENT_CACHE_FORMAT = 1


class Token(StrEnum):
    """The verdicts oomrec writes (a row's trailing token; `ok` for success, which has none).

    A row may end in a token oomrec does not know (the harness's own `SKIP:oom_estimate`, a
    future one): it is read and kept as a plain string, never dropped or rewritten.
    """

    TRUE_OOM = "SKIP:oom"
    OOM_BACKSTOP = "SKIP:oom_backstop"
    OOM_RECORD = "SKIP:oom_record"
    # Stopped by the memory guard before it could run out of memory: the operator declared that
    # the cell does not fit, so it feeds the backstop and the record as SKIP:oom does.
    OOM_GUARD = "SKIP:oom_guard"
    FAIL_TIMEOUT = "FAIL:timeout"
    FAIL_BENCH = "FAIL:bench"
    FAIL_NO_OUTPUT = "FAIL:no_output"
    # Killed by SIGKILL from someone other than oomrec and not by the kernel's OOM killer.
    FAIL_KILLED = "FAIL:killed"
    SUCCESS = "ok"


# The verdicts that are OOM evidence: they feed the backstop and the record, and a resumed sweep
# never runs their cells again.
RECORDED_TOKENS = frozenset({Token.TRUE_OOM, Token.OOM_GUARD})

FAKE_OOM_PROMPT = "(faked via MLXCEL_BENCH_FAKE_OOM)"


def is_faked(prompt: str) -> bool:
    """Whether a row's prompt field (as the csv module reads it) marks a faked OOM: a cell the
    fake hook (MLXCEL_BENCH_FAKE_OOM, sweep --fake-oom) never launched, so no evidence."""
    return prompt.strip() == FAKE_OOM_PROMPT


_TOKEN = re.compile(r"(?:SKIP|FAIL):\S*")


def split_row(line: str) -> list[str]:
    """The fields of one CSV line (its prompt may be quoted and hold commas)."""
    try:
        return next(csv.reader([line]))
    except (csv.Error, StopIteration):
        return line.split(",")


def trailing_token(fields: list[str]) -> str | None:
    """The row's classification token: its last field when that is `SKIP:...`/`FAIL:...`."""
    if not fields:
        return None
    last = fields[-1].strip()
    return last if _TOKEN.fullmatch(last) else None


# What `str.strip()` strips: the reader's polars expressions strip exactly these, so a cell reads
# the same whichever engine split its row.
# Spelled out: computing it (a loop over every code point) cost each start-up 60 ms.
# tests/test_csvread.py holds it to str.isspace.
BLANKS = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004"
    "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)

# Why a line of a CSV is not read as a row of its header, as the import and the report group them.
ROW_NOT_UTF8 = "not UTF-8 text"
ROW_QUOTING = "bad CSV quoting"
ROW_FIELDS = "wrong number of fields"


def judge_fields(fields: list[str], width: int) -> tuple[str | None, str | None]:
    """The one rule for what a row of a `width`-column header says: (its trailing token, why it
    is not a row of the header), each None when there is none.

    A token follows the named columns, right after them or after empty fields (the harness
    writes one; a runner may write more, and the harness reads the last field as the token all
    the same, as the sweep does); a row without one has exactly the named columns. A last
    field that is not a token but ends in `,SKIP:oom` is a true OOM's token swallowed by an
    open quote (the harness does not escape its prompt): unreadable, never a row that ran.
    """
    n = len(fields)
    token = trailing_token(fields)
    if token is not None:
        if n == width + 1 or (n > width + 1 and not any(f.strip() for f in fields[width:-1])):
            return token, None
        return None, ROW_FIELDS
    if fields and swallowed_oom(fields[-1]):
        return None, ROW_QUOTING
    return None, None if n == width else ROW_FIELDS


# A field whose text ends in `,SKIP:oom` (then blanks or quotes): see judge_fields.
SWALLOWED_OOM = re.compile(rf',[{re.escape(BLANKS)}]*SKIP:oom[{re.escape(BLANKS)}]*[ \t"]*\Z')


def swallowed_oom(field: str) -> bool:
    return SWALLOWED_OOM.search(field) is not None


def is_true_oom(token: str | None) -> bool:
    """Only `SKIP:oom` itself is OOM evidence; `SKIP:oom_estimate` and the rest are not."""
    return token == Token.TRUE_OOM


def skip_row(
    model: str,
    model_path: str,
    date: str,
    max_tokens: int | str,
    length: int | str,
    token: str,
    prompt: str = "",
) -> str:
    """A metric-less row exactly as the harness writes it (no line ending).

    `{model},{model_path},,,,,,,{date},,,,{max_tokens},"{prompt}",{length},{token}`: the prompt is
    wrapped in literal quotes without escaping, as the harness's `\\"$prompt\\"` does.
    """
    return f'{model},{model_path},,,,,,,{date},,,,{max_tokens},"{prompt}",{length},{token}'


# The prompt of the row a runner that writes no row of its own gets for a clean exit.
NO_ROW_PROMPT = "(ran; the command writes no row)"


def ran_row(model: str, model_path: str, date: str, max_tokens: int | str, length: int) -> str:
    """A metric-less row of a cell that ran and exited 0 without writing a row (a hand runner
    given no {cell_csv}): the 15 named columns, no token, so every reader reads it as a run."""
    return f'{model},{model_path},,,,,,,{date},,,,{max_tokens},"{NO_ROW_PROMPT}",{length}'


def harness_token(line: str) -> str | None:
    """The trailing token as bench_longprompt.sh's cell_classification reads it: awk's `$NF`,
    kept as written (a `\\r`, a blank) when it starts `SKIP:` or `FAIL:`; None for success."""
    last = line.rsplit(",", 1)[-1]
    return last if last.startswith(("SKIP:", "FAIL:")) else None


def line_token(line: str) -> str | None:
    """The trailing token of one raw row, read as the harness reads it (awk's `$NF`).

    Only the text after the last comma counts, as in the harness, so a prompt whose inner quotes
    the harness left unescaped cannot move the token, as it can for a CSV parser. Blanks around
    it (a `\\r` of a CRLF row, a trailing space) do not hide it, where the harness compares it
    as written: a `SKIP:oom\\r` the harness misses is still an OOM here, the safe side.
    """
    last = line.rsplit(",", 1)[-1].strip()
    # Tokens hold no quote: `"..., SKIP:oom"` is the end of a quoted prompt, not a token.
    return last if _TOKEN.fullmatch(last) and '"' not in last else None


# The harness's testing hook: `MODEL:LEN[,...]` cells treated as true OOMs without a launch.
FAKE_OOM_ENV = "MLXCEL_BENCH_FAKE_OOM"
