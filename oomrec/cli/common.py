"""Small pieces several commands share: opening the record, printing its warnings."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from oomrec import config
from oomrec.cli.output import info
from oomrec.config import Settings, load_settings
from oomrec.records import Loaded, RecordFile

if TYPE_CHECKING:
    from oomrec.archive import ArchivedLine


def open_record(cli_value: Path | None, writing: bool = False) -> tuple[RecordFile, Settings]:
    """The record file the command works on (see config.open_record); a first write into a git
    worktree says on stderr that the record was added to info/exclude."""
    settings = load_settings()
    notify = (lambda said: info(said, err=True)) if writing else None
    return config.open_record(cli_value, settings, writing=writing, notify=notify), settings


def print_warnings(loaded: Loaded, record_file: RecordFile | None = None) -> list[ArchivedLine]:
    """The record's warnings, and with `record_file` those of its archive too; returns the
    archived records read for them, so the command need not read the archive again."""
    for warning in loaded.warnings:
        typer.echo(str(warning), err=True)
    if record_file is None:
        return []
    from oomrec import archive

    parked, warnings = archive.read(record_file, loaded)
    for text in warnings:
        typer.echo(text, err=True)
    return parked
