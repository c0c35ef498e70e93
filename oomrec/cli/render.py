"""How records look on a terminal: one table layout for every command that shows records."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from oomrec.records import OomRecord

GIB = 1024**3
# Rich needs seconds for a few thousand table rows (more than linearly), and nobody reads them.
MAX_TABLE_ROWS = 100


def short_commit(commit: str) -> str:
    """`abcdef12`, `abcdef12-dirty`, or the text as written when it is not hex."""
    base, dirty, _ = commit.partition("-dirty")
    if base and all(c in "0123456789abcdefABCDEF" for c in base):
        return base[:8] + ("-dirty" if dirty else "")
    return commit or "-"


def peak_gib(peak_bytes: int | None) -> str:
    return "-" if peak_bytes is None else f"{peak_bytes / GIB:.1f}"


def record_table(
    records: Iterable[OomRecord],
    title: str | None = None,
    extra: Sequence[str] = (),
    extra_values: Sequence[Sequence[str]] = (),
) -> Table:
    """A table of records; `extra` names columns appended after the standard ones.

    The memory column shows only when some record has a memory size, the kind column only when
    some record has a kind (`guard`).
    """
    rows = list(records)
    with_mem = any(rec.mem_bytes is not None for rec in rows)
    with_kind = any(rec.kind for rec in rows)
    table = Table(title=title, title_justify="left")
    columns = [
        ("model", "left"),
        ("length", "right"),
        ("hardware", "left"),
        ("date", "left"),
        ("commit", "left"),
        ("peak GiB", "right"),
        ("mem GiB", "right"),
        ("source", "left"),
        ("kind", "left"),
    ]
    for name, justify in columns:
        if (name != "mem GiB" or with_mem) and (name != "kind" or with_kind):
            table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for name in extra:
        table.add_column(name)
    for i, rec in enumerate(rows):
        mem = (peak_gib(rec.mem_bytes),) if with_mem else ()
        # A guard stop is the operator's budget, not an OOM seen; "oom" says the latter.
        kind = (escape(rec.kind or "oom"),) if with_kind else ()
        table.add_row(
            escape(rec.model),
            str(rec.prompt_target_len),
            rec.hardware or "-",
            rec.date or "-",
            short_commit(rec.commit),
            peak_gib(rec.peak_bytes),
            *mem,
            escape(rec.source_csv) or "-",
            *kind,
            *(extra_values[i] if extra_values else ()),
        )
    return table


def more_rows(total: int, where: str) -> str | None:
    """The line under a table cut at MAX_TABLE_ROWS: how many rows it left out, where they are."""
    hidden = total - MAX_TABLE_ROWS
    return f"... and {hidden} more ({where} lists them all)" if hidden > 0 else None


def stdout_console() -> Console:
    # Data goes to stdout; soft_wrap keeps long cells whole when piped.
    return Console(file=sys.stdout, soft_wrap=not sys.stdout.isatty())


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2) + "\n")
