"""Small pieces several commands share: opening the record, printing its warnings."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from oomrec.cli.output import info, tell

if TYPE_CHECKING:
    from oomrec.commands import Result
    from oomrec.core.records import Loaded, RecordFile
    from oomrec.store.archive import ArchivedLine
    from oomrec.store.locations import Settings


# The library is imported in the functions that call it: every command module imports this
# one, and `--help` must not pay for the record's parser.


def open_record(cli_value: Path | None, writing: bool = False) -> tuple[RecordFile, Settings]:
    """The record file the command works on (config.open_record), its notices on stderr."""
    from oomrec.store import locations as config

    return config.open_record(cli_value, writing=writing, on_notice=_notice)


def _notice(text: str) -> None:
    info(text, err=True)


def print_warnings(loaded: Loaded, record_file: RecordFile | None = None) -> list[ArchivedLine]:
    """The record's warnings, and with `record_file` those of its archive too; returns the
    archived records read for them, so the command need not read the archive again."""
    from oomrec.commands.common import record_warnings

    parked, warnings = record_warnings(loaded, record_file)
    for warning in warnings:
        tell(warning)
    return parked


def print_messages(result: Result) -> None:
    """A verb's notices (informational, silenced by -q), then its warnings, on stderr."""
    for notice in result.notices:
        info(notice, err=True)
    for warning in result.warnings:
        tell(warning)
