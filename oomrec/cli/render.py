"""How records look: one layout for every command that shows records.

On a terminal, a rich table fitted to its width: the model name and the commit are never cut
(the model folds onto more lines; less important columns are dropped first). Anywhere else
(a pipe, a file), one record per line, tab-separated, full values, so grep, cut and awk work.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from oomrec.cli.output import console, info, styled
from oomrec.core.shown import UNSAFE, visible

if TYPE_CHECKING:
    from rich.table import Table

    from oomrec.core.records import OomRecord

# Rich's tables and the library are imported where a listing is shown: every command module
# imports this one, and `--help` (or a listing off a terminal) needs neither.

# Long listings (import, stale, prune, restore) show a screenful; -v or --json shows all.
SCREENFUL = 20
TTY_MAX_ROWS = 500
MIN_TABLE_WIDTH = 40
# Columns in the order they go when a terminal is too narrow; model, length and commit stay.
_DROP_ORDER = ("source", "mem GiB", "date", "peak GiB", "hardware")


def peak_gib(peak_bytes: int | None) -> str:
    from oomrec.core.units import GIB

    return "-" if peak_bytes is None else f"{peak_bytes / GIB:.1f}"


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`1 record`, `2 records`, `0 records`."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


def verb(count: int, one: str, many: str) -> str:
    """The verb that agrees with `count`: `applies` for 1, `apply` otherwise."""
    return one if count == 1 else many


@dataclass(frozen=True)
class Listing:
    """Records to show, with optional extra columns after the record's own: (name, one value
    per record), column by column (no tuple per row: 100,000 records must stay fast)."""

    records: Sequence[OomRecord]
    title: str | None = None
    extra: Sequence[tuple[str, Sequence[str]]] = ()


def print_records(
    listing: Listing,
    *,
    limit: int | None = None,
    more_hint: str = "-v or --json for all",
    stream: TextIO | None = None,
) -> None:
    """Show `listing` on `stream` (stdout): a table on a terminal, plain lines elsewhere.

    With `limit`, only the first `limit` records, then `... and N more (<more_hint>)`.
    """
    stream = stream or sys.stdout
    total = len(listing.records)
    tty = styled(stream)
    if limit is None and tty:
        # Rich needs seconds for a few thousand rows, and nobody reads them on a screen.
        limit, more_hint = TTY_MAX_ROWS, "pipe it or use --json for all"
    shown = total if limit is None else min(limit, total)
    if tty:
        _print_table(listing, shown, stream)
    else:
        if listing.title:
            info(f"{listing.title}:", err=stream is sys.stderr)
        stream.write(plain_lines(listing, shown))
        stream.flush()
    if shown < total:
        info(f"... and {total - shown} more ({more_hint})", err=stream is sys.stderr)


def plain_lines(listing: Listing, count: int | None = None) -> str:
    """The first `count` records as tab-separated lines: full values, `-` for unknown."""
    records = listing.records if count is None else listing.records[:count]
    # One f-string per record and one per extra column: 100,000 records go to a pipe in ~0.1 s.
    # Every text field escaped where it must be: a record line (or a shared note from another
    # host) may hold a tab or a terminal's control sequence in any of them.
    texts = zip(
        _fields([r.model for r in records]),
        _fields([r.hardware or "" for r in records]),
        _fields([r.date or "" for r in records]),
        _fields([r.commit or "" for r in records]),
        _fields([r.source_csv for r in records]),
        strict=True,
    )
    out = [
        f"{model}\t{r.prompt_target_len}\t{hardware}\t{date}\t{commit}\t"
        f"{'-' if r.peak_bytes is None else r.peak_bytes}\t"
        f"{'-' if r.mem_bytes is None else r.mem_bytes}\t{source}"
        for r, (model, hardware, date, commit, source) in zip(records, texts, strict=True)
    ]
    if any(r.kind for r in records):
        # A guard stop is the operator's budget, not an OOM seen: said only when some line has it.
        kinds = _fields([r.kind or "oom" for r in records])
        out = [f"{line}\t{kind}" for line, kind in zip(out, kinds, strict=True)]
    for _, values in listing.extra:
        column = _fields(values[: len(out)])
        out = [f"{line}\t{value}" for line, value in zip(out, column, strict=True)]
    out.append("")
    return "\n".join(out)


def _fields(values: Sequence[str]) -> Sequence[str]:
    """A column's values as fields of a tab-separated line: `-` for an empty one, each control
    character escaped (`visible`). Checked once for the whole column: nearly every column needs
    nothing."""
    if all(values) and not UNSAFE.search("".join(values)):
        return values
    return [visible(value) or "-" for value in values]


def _print_table(listing: Listing, count: int, stream: TextIO) -> None:
    from rich.measure import Measurement

    out = console(stream)
    records = listing.records[:count]
    unused = set() if any(rec.mem_bytes is not None for rec in records) else {"mem GiB"}
    if not any(rec.kind for rec in records):
        unused.add("kind")
    narrow: list[str] = []
    table = _table(listing, records, unused)
    # Measured unbounded: Measurement.get clamps to the console's width.
    unbounded = out.options.update_width(1 << 20)
    for name in _DROP_ORDER:
        if Measurement.get(out, unbounded, table).maximum <= out.width:
            break
        if name not in unused:
            narrow.append(name)
            table = _table(listing, records, unused | set(narrow))
    if out.width < MIN_TABLE_WIDTH:
        # Too narrow for a table whose model column folds legibly next to the commit: rich
        # would squeeze the model column to nothing. The plain lines then.
        out.file.write(plain_lines(listing, count))
        return
    out.print(table)
    if narrow:
        info(f"(too narrow for: {', '.join(narrow)}; pipe the output or use --json for all fields)")


def _table(listing: Listing, records: Sequence[OomRecord], dropped: set[str]) -> Table:
    from rich.markup import escape
    from rich.table import Table

    from oomrec.core.records import short_commit

    table = Table(title=listing.title, title_justify="left")
    columns: list[tuple[str, Any]] = [
        ("model", lambda r: escape(visible(r.model))),
        ("length", lambda r: str(r.prompt_target_len)),
        ("hardware", lambda r: escape(visible(r.hardware or "-"))),
        ("date", lambda r: escape(visible(r.date or "-"))),
        ("commit", lambda r: escape(visible(short_commit(r.commit) or "-"))),
        ("peak GiB", lambda r: peak_gib(r.peak_bytes)),
        ("mem GiB", lambda r: peak_gib(r.mem_bytes)),
        ("source", lambda r: escape(visible(r.source_csv)) or "-"),
        # A guard stop is the operator's budget, not an OOM seen; "oom" says the latter.
        ("kind", lambda r: escape(visible(r.kind or "oom"))),
    ]
    kept = [(name, cell) for name, cell in columns if name not in dropped]
    for name, _ in kept:
        if name == "model":
            # Folds onto more lines rather than being cut: a model name is what people grep for.
            table.add_column(name, overflow="fold", min_width=12, ratio=None)
        elif name == "commit":
            table.add_column(name, no_wrap=True, min_width=8)
        elif name in ("length", "peak GiB", "mem GiB"):
            table.add_column(name, justify="right", no_wrap=True)
        else:
            table.add_column(name, overflow="fold")
    for name, _ in listing.extra:
        table.add_column(name, overflow="fold")
    for i, rec in enumerate(records):
        extra = [escape(visible(values[i])) for _, values in listing.extra]
        table.add_row(*(cell(rec) for _, cell in kept), *extra)
    return table


def print_json(data: dict[str, Any]) -> None:
    """One JSON object on one line (pipe it to `jq` to read it), with `schema_version` first."""
    from oomrec.cli.jsonout import write_json
    from oomrec.core.schema import JSON_SCHEMA_VERSION as SCHEMA_VERSION

    write_json({"schema_version": SCHEMA_VERSION, **data})
